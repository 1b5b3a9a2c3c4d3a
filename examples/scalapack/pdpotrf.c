// pdpotrf: a driver for ScaLAPACK's Cholesky factorization, to tune with
// approxtune as an unmodified program (its block size and process grid).
//
//   mpirun -n 4 ./pdpotrf -n 2048 -nb 64 -p 2 -q 2
//
// It factors a symmetric positive definite matrix generated from its
// global indices, A(i,j) = 1/(1+|i-j|) + n·[i=j], distributed block-cyclically
// on a p×q grid, then solves A·x = b for the b that makes x all ones and
// prints the largest error of x: the residual check of a full run. (A
// selective run skips kernels, so its x is meaningless.)
//
// The factorization is the region approxtune times (approxtune.h): the
// generation and the check are left out.
//
// Build: mpicc -O2 -I../../include -o pdpotrf pdpotrf.c -lscalapack-openmpi -lopenblas -lm
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "approxtune.h"

void Cblacs_pinfo(int *rank, int *size);
void Cblacs_get(int ctx, int what, int *val);
void Cblacs_gridinit(int *ctx, const char *order, int p, int q);
void Cblacs_gridinfo(int ctx, int *p, int *q, int *myrow, int *mycol);
void Cblacs_gridexit(int ctx);
int numroc_(const int *n, const int *nb, const int *iproc, const int *isrc, const int *nprocs);
void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb, const int *irsrc, const int *icsrc,
	const int *ctx, const int *lld, int *info);
void pdpotrf_(const char *uplo, const int *n, double *a, const int *ia, const int *ja, const int *desc, int *info);
void pdpotrs_(const char *uplo, const int *n, const int *nrhs, const double *a, const int *ia, const int *ja,
	const int *desca, double *b, const int *ib, const int *jb, const int *descb, int *info);

static double entry(int i, int j, int n) { return 1.0 / (1.0 + abs(i - j)) + (i == j ? n : 0); }

// global is the global index of local index l on process p of np, blocks nb.
static int global(int l, int nb, int p, int np) { return (l / nb * np + p) * nb + l % nb; }

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int n = 1024, nb = 64, p = 0, q = 0;
	for (int k = 1; k + 1 < argc; k += 2) {
		if (!strcmp(argv[k], "-n")) n = atoi(argv[k + 1]);
		else if (!strcmp(argv[k], "-nb")) nb = atoi(argv[k + 1]);
		else if (!strcmp(argv[k], "-p")) p = atoi(argv[k + 1]);
		else if (!strcmp(argv[k], "-q")) q = atoi(argv[k + 1]);
		else {
			fprintf(stderr, "usage: pdpotrf [-n N] [-nb NB] [-p P -q Q]\n");
			return 2;
		}
	}
	int rank, size;
	Cblacs_pinfo(&rank, &size);
	if (p == 0 || q == 0) {
		p = 1;
		q = size;
	}
	if (p * q != size) {
		if (rank == 0) fprintf(stderr, "pdpotrf: grid %dx%d needs %d processes, not %d\n", p, q, p * q, size);
		MPI_Finalize();
		return 2;
	}
	int ctx, myrow, mycol, zero = 0, one = 1, info;
	Cblacs_get(-1, 0, &ctx);
	Cblacs_gridinit(&ctx, "Row", p, q);
	Cblacs_gridinfo(ctx, &p, &q, &myrow, &mycol);
	int mloc = numroc_(&n, &nb, &myrow, &zero, &p), nloc = numroc_(&n, &nb, &mycol, &zero, &q);
	int lld = mloc > 1 ? mloc : 1, desca[9], descb[9];
	descinit_(desca, &n, &n, &nb, &nb, &zero, &zero, &ctx, &lld, &info);
	descinit_(descb, &n, &one, &nb, &nb, &zero, &zero, &ctx, &lld, &info);
	double *a = malloc(sizeof(double) * (size_t)lld * (nloc > 0 ? nloc : 1));
	double *b = malloc(sizeof(double) * (size_t)lld);
	for (int jl = 0; jl < nloc; jl++)
		for (int il = 0; il < mloc; il++)
			a[il + (size_t)jl * lld] = entry(global(il, nb, myrow, p), global(jl, nb, mycol, q), n);
	// b = A·1 on the first process column.
	for (int il = 0; il < mloc; il++) {
		int i = global(il, nb, myrow, p);
		double s = 0;
		for (int j = 0; j < n; j++) s += entry(i, j, n);
		b[il] = s;
	}
	APPROXTUNE_BEGIN();
	double t0 = MPI_Wtime();
	pdpotrf_("L", &n, a, &one, &one, desca, &info);
	double t1 = MPI_Wtime();
	APPROXTUNE_END();
	int sinfo = 0;
	pdpotrs_("L", &n, &one, a, &one, &one, desca, b, &one, &one, descb, &sinfo);
	double err = 0;
	if (mycol == 0)
		for (int il = 0; il < mloc; il++) err = fmax(err, fabs(b[il] - 1));
	double maxerr;
	MPI_Allreduce(&err, &maxerr, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	if (rank == 0)
		printf("pdpotrf n=%d nb=%d grid=%dx%d info=%d factor %.4f s, max |x-1| = %.2e %s\n", n, nb, p, q, info, t1 - t0,
			maxerr, info == 0 && maxerr < 1e-8 ? "PASSED" : "FAILED");
	free(a);
	free(b);
	Cblacs_gridexit(ctx);
	MPI_Finalize();
	return 0;
}
