// A program that exits with status 3 in selective runs (APPROXTUNE_RUN
// names a policy), as a program may that checks data the skipped kernels
// left meaningless; full runs end well.
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	MPI_Barrier(MPI_COMM_WORLD);
	const char *run = getenv("APPROXTUNE_RUN");
	int selective = run != NULL && strstr(run, "\"policy\"") != NULL;
	MPI_Finalize();
	return selective ? 3 : 0;
}
