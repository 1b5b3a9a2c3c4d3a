// A program whose set-up, before its timed region, broadcasts a matrix
// five times (the last is what the region works on), then marks the region:
// STEPS broadcasts of it. It prints, per rank, whether the set-up's last
// broadcast arrived: what comes before the region runs in full in every
// launch, as in the reference launch (selective launches had skipped it
// from MPI_Init, and the region had started without the set-up's data).
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "approxtune.h"

#define N 8192

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, steps = argc > 1 ? atoi(argv[1]) : 20;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  double *buf = calloc(N, sizeof(double));
  for (int k = 1; k <= 5; k++) {
    if (r == 0)
      for (int i = 0; i < N; i++)
        buf[i] = k;
    MPI_Bcast(buf, N, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  }
  int arrived = buf[N - 1] == 5.0;
  APPROXTUNE_BEGIN();
  for (int s = 0; s < steps; s++)
    MPI_Bcast(buf, N, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  APPROXTUNE_END();
  printf("rank %d set-up %s\n", r, arrived ? "arrived" : "lost");
  free(buf);
  MPI_Finalize();
  return 0;
}
