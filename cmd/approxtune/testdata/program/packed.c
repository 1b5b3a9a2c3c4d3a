// A program that sends what it computes with inside floating-point data,
// as HPL does: each message carries in its first element the index its
// receiver uses (HPL's row swaps send each row's destination index with
// the row). Two ranks take turns: a dgemm, then an exchange of n doubles
// whose first is the step. A receiver that reads another step's index
// (a skipped message leaves the buffer as it was) stops with status 3,
// where HPL would write through the stale index.
//
// Usage: packed STEPS N
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

void dgemm_(const char *, const char *, const int *, const int *, const int *, const double *, const double *,
	const int *, const double *, const int *, const double *, double *, const int *);

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	int steps = argc > 1 ? atoi(argv[1]) : 40, n = argc > 2 ? atoi(argv[2]) : 1024;
	const int k = 96;
	double *a = malloc(sizeof(double) * k * k), *c = calloc(k * k, sizeof(double));
	double *out = malloc(sizeof(double) * n), *in = malloc(sizeof(double) * n);
	for (int i = 0; i < k * k; i++) a[i] = 1.0 / (1 + i % 7);
	const double one = 1, zero = 0;
	int peer = 1 - rank;
	for (int s = 0; s < steps; s++) {
		dgemm_("N", "N", &k, &k, &k, &one, a, &k, a, &k, &zero, c, &k);
		out[0] = s; // the index the receiver computes with
		for (int i = 1; i < n; i++) out[i] = c[i % (k * k)];
		MPI_Sendrecv(out, n, MPI_DOUBLE, peer, 7, in, n, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if ((int)in[0] != s) {
			fprintf(stderr, "packed: rank %d, step %d: the message's index is %g\n", rank, s, in[0]);
			MPI_Abort(MPI_COMM_WORLD, 3);
		}
	}
	if (rank == 0) printf("packed ok\n");
	free(a), free(c), free(out), free(in);
	MPI_Finalize();
	return 0;
}
