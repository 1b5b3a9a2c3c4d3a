// A program that receives messages of two sizes into one buffer of an
// upper bound, and reads each message's size from its status, as
// programs that exchange variable data do.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, steps = argc > 1 ? atoi(argv[1]) : 10;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  static double buf[16384];
  for (int s = 0; s < steps; s++) {
    int n = s % 2 ? 2048 : 8192;
    if (r == 1) {
      for (int i = 0; i < n; i++) buf[i] = s + i;
      MPI_Send(buf, n, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
    } else if (r == 0) {
      MPI_Status st;
      int got;
      MPI_Recv(buf, 16384, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, &st);
      MPI_Get_count(&st, MPI_DOUBLE, &got);
      if (got != n) {
        fprintf(stderr, "step %d: received %d doubles, sent %d\n", s, got, n);
        return 1;
      }
    }
  }
  if (r == 0) printf("received %d messages\n", steps);
  MPI_Finalize();
  return 0;
}
