// A program that waits for its second receive of a source and tag before
// its first: MPI matched the first message to the first receive, whatever
// order they complete in, and each status must say its own message's size
// (the first's skipped in selective runs, and sent empty).
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, steps = argc > 1 ? atoi(argv[1]) : 10;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  static double a[8192], b[16];
  for (int s = 0; s < steps; s++) {
    if (r == 1) {
      for (int i = 0; i < 16; i++) b[i] = s + i;
      MPI_Send(a, 8192, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
      MPI_Send(b, 16, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
    } else if (r == 0) {
      MPI_Request q[2];
      MPI_Status sa, sb;
      int na, nb;
      MPI_Irecv(a, 8192, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, &q[0]);
      MPI_Irecv(b, 16, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, &q[1]);
      MPI_Wait(&q[1], &sb);
      MPI_Wait(&q[0], &sa);
      MPI_Get_count(&sa, MPI_DOUBLE, &na);
      MPI_Get_count(&sb, MPI_DOUBLE, &nb);
      if (na != 8192 || nb != 16 || b[3] != s + 3) {
        fprintf(stderr, "step %d: counts %d and %d, want 8192 and 16; b[3] %g\n", s, na, nb, b[3]);
        return 1;
      }
    }
  }
  if (r == 0) printf("ok %d steps\n", steps);
  MPI_Finalize();
  return 0;
}
