// The v-collectives, whose members move different amounts, for the preload
// library: ITER steps on every rank of the world, each making 6 modelled
// calls:
//   a dgemm of order N on every rank, and a second on rank s % size (the
//   ranks take turns at the heavier work);
//   MPI_Allgatherv: rank i contributes (i+1)*M doubles;
//   MPI_Gatherv to rank 0 and MPI_Scatterv from rank 0, the same shares;
//   MPI_Alltoallv: rank i sends (i+j+1)*M/2 doubles to rank j;
//   MPI_Allgatherv with MPI_IN_PLACE.
// Every received double is checked against what its sender wrote (a run
// that skips nothing; the v-collectives are never skipped, so at any
// tolerance). Rank 0 prints "v-collectives ok" or "... FAILED" and a
// checksum of the dgemm results, which a run that skips nothing reproduces.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

void dgemm_(const char *, const char *, const int *, const int *, const int *, const double *, const double *,
	const int *, const double *, const int *, const double *, double *, const int *);

// val is what rank r writes at index i of its share in step s.
static double val(int s, int r, int i) { return s * 1000.0 + r * 100.0 + (i % 97); }

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int iter = argc > 1 ? atoi(argv[1]) : 10, n = argc > 2 ? atoi(argv[2]) : 64, m = argc > 3 ? atoi(argv[3]) : 512;
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int nn = n * n, total = 0, bad = 0;
	int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
	int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size);
	int *rc = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
	for (int r = 0; r < size; r++) {
		counts[r] = (r + 1) * m;
		displs[r] = total;
		total += counts[r];
	}
	int st = 0, rt = 0;
	for (int j = 0; j < size; j++) {
		sc[j] = (rank + j + 1) * m / 2;
		sd[j] = st;
		st += sc[j];
		rc[j] = (j + rank + 1) * m / 2;
		rd[j] = rt;
		rt += rc[j];
	}
	double *mine = malloc(sizeof(double) * counts[rank]), *all = malloc(sizeof(double) * total);
	double *got = malloc(sizeof(double) * counts[rank]), *out = malloc(sizeof(double) * st);
	double *in = malloc(sizeof(double) * rt);
	double *a = malloc(sizeof(double) * nn), *b = malloc(sizeof(double) * nn), *c = calloc(nn, sizeof(double));
	for (int i = 0; i < nn; i++) {
		a[i] = ((i * 7 + rank) % 11) / 110.0;
		b[i] = ((i * 3) % 13) / 130.0;
	}
	double one = 1, half = 0.5;
	for (int s = 0; s < iter; s++) {
		dgemm_("N", "N", &n, &n, &n, &one, a, &n, b, &n, &half, c, &n);
		if (s % size == rank) dgemm_("N", "N", &n, &n, &n, &one, a, &n, b, &n, &half, c, &n);
		for (int i = 0; i < counts[rank]; i++) mine[i] = val(s, rank, i);
		MPI_Allgatherv(mine, counts[rank], MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
		for (int r = 0; r < size; r++) {
			for (int i = 0; i < counts[r]; i++) bad += all[displs[r] + i] != val(s, r, i);
		}
		MPI_Gatherv(mine, counts[rank], MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, MPI_COMM_WORLD);
		if (rank == 0) {
			for (int r = 0; r < size; r++) {
				for (int i = 0; i < counts[r]; i++) bad += all[displs[r] + i] != val(s, r, i);
			}
			for (int r = 0; r < size; r++) {
				for (int i = 0; i < counts[r]; i++) all[displs[r] + i] = val(s, r, i) + 0.5;
			}
		}
		MPI_Scatterv(all, counts, displs, MPI_DOUBLE, got, counts[rank], MPI_DOUBLE, 0, MPI_COMM_WORLD);
		for (int i = 0; i < counts[rank]; i++) bad += got[i] != val(s, rank, i) + 0.5;
		for (int j = 0; j < size; j++) {
			for (int i = 0; i < sc[j]; i++) out[sd[j] + i] = val(s, rank, i) + j;
		}
		MPI_Alltoallv(out, sc, sd, MPI_DOUBLE, in, rc, rd, MPI_DOUBLE, MPI_COMM_WORLD);
		for (int j = 0; j < size; j++) {
			for (int i = 0; i < rc[j]; i++) bad += in[rd[j] + i] != val(s, j, i) + rank;
		}
		for (int r = 0; r < size; r++) {
			for (int i = 0; i < counts[r]; i++) all[displs[r] + i] = r == rank ? val(s, r, i) - 1 : -1;
		}
		MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, counts, displs, MPI_DOUBLE, MPI_COMM_WORLD);
		for (int r = 0; r < size; r++) {
			for (int i = 0; i < counts[r]; i++) bad += all[displs[r] + i] != val(s, r, i) - 1;
		}
	}
	double sum = 0, checksum = 0;
	for (int i = 0; i < nn; i++) sum += c[i];
	int badAll = 0;
	MPI_Reduce(&sum, &checksum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(&bad, &badAll, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("v-collectives %s\nchecksum %.12e\n", badAll == 0 ? "ok" : "FAILED", checksum);
		if (badAll) fprintf(stderr, "%d values wrong\n", badAll);
	}
	MPI_Finalize();
	return badAll != 0;
}
