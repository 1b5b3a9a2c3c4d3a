// A program with a second thread: with argument "mpi" the thread makes an
// MPI call (a broadcast on a communicator of its own, under
// MPI_THREAD_MULTIPLE), else only a dgemm. The main thread makes the
// program's other calls.
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

void dgemm_(const char *, const char *, const int *, const int *, const int *, const double *, const double *,
	const int *, const double *, const int *, const double *, double *, const int *);

static MPI_Comm comm;
static int use_mpi;

static void *worker(void *arg) {
	(void)arg;
	double v[16] = {1}, w[16] = {2}, c[16] = {0}, one = 1, zero = 0;
	int n = 4;
	if (use_mpi) {
		MPI_Bcast(v, 16, MPI_DOUBLE, 0, comm);
	} else {
		dgemm_("N", "N", &n, &n, &n, &one, v, &n, w, &n, &zero, c, &n);
	}
	return NULL;
}

int main(int argc, char **argv) {
	int provided;
	MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
	use_mpi = argc > 1 && strcmp(argv[1], "mpi") == 0;
	MPI_Comm_dup(MPI_COMM_WORLD, &comm);
	pthread_t t;
	pthread_create(&t, NULL, worker, NULL);
	pthread_join(t, NULL);
	MPI_Barrier(MPI_COMM_WORLD);
	MPI_Comm_free(&comm);
	MPI_Finalize();
	printf("threads done\n");
	return 0;
}
