// A program that cancels a receive: rank 0 posts two receives of one
// source and tag and cancels the first before anything is sent; the one
// message rank 1 then sends goes to the second. Rank 0 waits for the
// second, then for the cancelled first, and checks both.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, steps = argc > 1 ? atoi(argv[1]) : 10;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  static double a[16], b[16];
  for (int s = 0; s < steps; s++) {
    if (r == 0) {
      MPI_Request q[2];
      MPI_Status st;
      int cancelled = 0;
      MPI_Irecv(a, 16, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, &q[0]);
      MPI_Irecv(b, 16, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, &q[1]);
      MPI_Cancel(&q[0]);
      MPI_Barrier(MPI_COMM_WORLD);
      MPI_Wait(&q[1], MPI_STATUS_IGNORE);
      MPI_Wait(&q[0], &st);
      MPI_Test_cancelled(&st, &cancelled);
      if (!cancelled || b[3] != s + 3) {
        fprintf(stderr, "step %d: cancelled %d, b[3] %g\n", s, cancelled, b[3]);
        return 1;
      }
    } else {
      for (int i = 0; i < 16; i++) b[i] = s + i;
      MPI_Barrier(MPI_COMM_WORLD);
      if (r == 1) MPI_Send(b, 16, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
    }
  }
  if (r == 0) printf("ok %d steps\n", steps);
  MPI_Finalize();
  return 0;
}
