// A program that marks its timed region wrongly, as MODE says: "rank0"
// calls approxtune_begin and approxtune_end on rank 0 alone (as one times
// code by hand), "twice" calls each twice on every rank, "never" on no
// rank, "right" once on every rank. Between the marks, ten allreduces.
#include <mpi.h>
#include <string.h>
#include "approxtune.h"

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int r;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  const char *mode = argc > 1 ? argv[1] : "right";
  int marks = strcmp(mode, "never") != 0 && (strcmp(mode, "rank0") != 0 || r == 0);
  int times = strcmp(mode, "twice") == 0 ? 2 : 1;
  for (int i = 0; i < times && marks; i++)
    APPROXTUNE_BEGIN();
  double v[1024] = {0};
  for (int k = 0; k < 10; k++)
    MPI_Allreduce(MPI_IN_PLACE, v, 1024, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  for (int i = 0; i < times && marks; i++)
    APPROXTUNE_END();
  MPI_Finalize();
  return 0;
}
