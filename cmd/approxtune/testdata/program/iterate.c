// An iterative MPI + BLAS program for the preload library's selective runs:
// ITER steps, each 4 dgemm_ and 2 cblas_dgemm of order N on every rank, a
// broadcast of N doubles along a row communicator (MPI_Comm_split into rows
// of 2 ranks) and an allreduce over the world. It prints a checksum of its
// result, which a run that executes everything reproduces exactly. ITER
// and N come from its arguments or, when its working directory holds one,
// from the input deck iterate.dat ("ITER N"); a third argument, NAP, makes
// each step sleep NAP microseconds (time no skipped kernel takes off); a
// fourth, FLAG, makes an eager selective run exit with status 3 (after
// MPI_Finalize) while the file FLAG exists; a fifth, ONCE, makes an eager
// selective run exit with status 3 when the file ONCE exists and creates
// it otherwise (its second launch fails). A search's round may cut its
// selective launches short at a step's end (APPROXTUNE_CUT_SHORT). The
// steps are the region approxtune times (approxtune.h): the 3 dgemm_ of the
// set-up before it are left out.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cblas.h>
#include "approxtune.h"

void dgemm_(const char *, const char *, const int *, const int *, const int *, const double *, const double *,
	const int *, const double *, const int *, const double *, double *, const int *);

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int iter = argc > 1 ? atoi(argv[1]) : 20, n = argc > 2 ? atoi(argv[2]) : 96, nap = argc > 3 ? atoi(argv[3]) : 0;
	FILE *deck = fopen("iterate.dat", "r");
	if (deck != NULL) {
		if (fscanf(deck, "%d %d", &iter, &n) != 2) {
			fprintf(stderr, "iterate.dat: want ITER N\n");
			return 1;
		}
		fclose(deck);
	}
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Comm row;
	MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &row);
	double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n), *c = calloc(n * n, sizeof(double));
	for (int i = 0; i < n * n; i++) {
		a[i] = ((i * 7 + rank) % 11) / 110.0;
		b[i] = ((i * 3) % 13) / 130.0;
	}
	double one = 1, half = 0.5, sum = 0, total = 0;
	for (int j = 0; j < 3; j++) dgemm_("T", "N", &n, &n, &n, &one, b, &n, a, &n, &half, c, &n);
	APPROXTUNE_BEGIN();
	for (int s = 0; s < iter; s++) {
		for (int j = 0; j < 4; j++) dgemm_("N", "N", &n, &n, &n, &one, a, &n, b, &n, &half, c, &n);
		for (int j = 0; j < 2; j++) cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, n, n, 1, a, n, b, n, 0.5, c, n);
		MPI_Bcast(c, n, MPI_DOUBLE, 0, row);
		sum = c[s % (n * n)];
		MPI_Allreduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		if (nap > 0) usleep(nap);
		if (APPROXTUNE_CUT_SHORT()) break;
	}
	APPROXTUNE_END();
	if (rank == 0) printf("checksum %.12e\n", total);
	MPI_Comm_free(&row);
	free(a); free(b); free(c);
	MPI_Finalize();
	const char *run = getenv("APPROXTUNE_RUN");
	if (argc > 4 && run != NULL && strstr(run, "\"eager\"") != NULL && access(argv[4], F_OK) == 0) return 3;
	if (argc > 5 && run != NULL && strstr(run, "\"eager\"") != NULL && rank == 0) {
		if (access(argv[5], F_OK) == 0) return 3;
		FILE *once = fopen(argv[5], "w");
		if (once != NULL) fclose(once);
	}
	return 0;
}
