// A program whose runs first sleep 50 ms (so that every configuration's
// predicts alike, within a search's allowance), and whose selective runs
// of x=1 and of x >= 10 deadlock
// (APPROXTUNE_RUN names a policy): rank 0 waits for a message rank 1 never
// sends. Selective runs of x=5 sleep 30 s after MPI_Finalize (a slow
// exit, once their result is written). Full runs of x=6 and x=7 exit with
// status 4, and full runs of x=8 deadlock (a search's finalists). Every
// other run ends well.
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int rank, x = argc > 1 ? atoi(argv[1]) : 0;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	const char *run = getenv("APPROXTUNE_RUN");
	int selective = run != NULL && strstr(run, "\"policy\"") != NULL;
	double v = 0;
	usleep(50000);
	if ((selective && (x == 1 || x >= 10) || !selective && x == 8) && rank == 0)
		MPI_Recv(&v, 1, MPI_DOUBLE, 1, 99, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Finalize();
	if (selective && x == 5) sleep(30);
	return !selective && (x == 6 || x == 7) ? 4 : 0;
}
