// refails.c: an MPI program whose full (reference) runs exit with status 3
// when its argument is 2, as a program may crash at one size; every other
// run ends well.
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	MPI_Barrier(MPI_COMM_WORLD);
	const char *run = getenv("APPROXTUNE_RUN");
	int reference = run != NULL && strstr(run, "\"reference\"") != NULL;
	int fail = reference && argc > 1 && strcmp(argv[1], "2") == 0;
	MPI_Finalize();
	return fail ? 3 : 0;
}
