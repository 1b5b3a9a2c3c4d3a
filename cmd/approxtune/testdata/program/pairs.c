// A chain of pair communicators: rank i is in {i-1, i} and {i, i+1}
// (MPI_Comm_split twice), and each of STEPS steps reduces one double over
// both of its pairs. Every pair communicator has the same shape, and the
// middle ranks are in two of them, the ends in one: a program whose
// selective runs had hung (the engine counted a collective's samples over
// every communicator of its shape, so the middle ranks stopped exchanging
// records before the ends did). It prints the sum of what it reduced.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "approxtune.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r, n, steps = argc > 1 ? atoi(argv[1]) : 20;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm pair[2];
  for (int parity = 0; parity < 2; parity++) {
    int k = r % 2 == parity ? r : r - 1; // the pair's first rank
    int color = k >= 0 && k + 1 < n ? k : MPI_UNDEFINED;
    MPI_Comm_split(MPI_COMM_WORLD, color, r, &pair[parity]);
  }
  APPROXTUNE_BEGIN();
  double x = r, y = 0, sum = 0;
  for (int s = 0; s < steps; s++) {
    for (int p = 0; p < 2; p++) {
      if (pair[p] == MPI_COMM_NULL)
        continue;
      MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, pair[p]);
      sum += y;
    }
  }
  APPROXTUNE_END();
  printf("rank %d sum %g\n", r, sum);
  MPI_Finalize();
  return 0;
}
