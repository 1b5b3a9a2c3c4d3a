// A program that frees an active receive request (MPI allows it: the
// message still arrives), then synchronizes before using the buffer.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, steps = argc > 1 ? atoi(argv[1]) : 10;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  double buf[1024] = {0}, sum = 0;
  for (int s = 0; s < steps; s++) {
    if (r == 1) {
      MPI_Request q;
      MPI_Irecv(buf, 1024, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, &q);
      MPI_Request_free(&q);
    } else if (r == 0) {
      for (int i = 0; i < 1024; i++) buf[i] = s + i;
      MPI_Send(buf, 1024, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    sum += buf[1];
  }
  printf("rank %d sum %g\n", r, sum);
  MPI_Finalize();
  return 0;
}
