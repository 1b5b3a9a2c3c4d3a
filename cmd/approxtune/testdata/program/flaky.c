// flaky.c: an MPI program whose eager selective runs exit with status 3
// while the file named by its argument exists; its other runs end well.
// A sweep's eager runs then fail and 'resume' runs them once the file is
// gone.
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	MPI_Barrier(MPI_COMM_WORLD);
	const char *run = getenv("APPROXTUNE_RUN");
	int eager = run != NULL && strstr(run, "\"eager\"") != NULL;
	int fail = eager && argc > 1 && access(argv[1], F_OK) == 0;
	MPI_Finalize();
	return fail ? 3 : 0;
}
