// factor: a driver for ScaLAPACK's Cholesky (pdpotrf) and QR (pdgeqrf)
// factorizations, to tune with approxtune as an unmodified program (its
// block size and process grid).
//
//   mpirun -n 4 ./factor -f potrf -n 2048 -nb 64 -p 2 -q 2
//   mpirun -n 4 ./factor -f geqrf -n 2048 -nb 64 -p 2 -q 2
//
// It factors the n×n matrix A(i,j) = 1/(1+|i-j|) + n·[i=j] (symmetric,
// positive definite, well conditioned), generated from its global indices
// and distributed block-cyclically on a p×q grid, then solves A·x = b for
// the b that makes x all ones (pdpotrs; or Qᵀ·b with pdormqr and R·x = Qᵀ·b
// with pdtrsm) and checks the largest error of x: the residual check of a
// full run. It exits 1 when the check fails, except in an approxtune run
// that skips kernels (APPROXTUNE_SKIPPING), whose x is meaningless.
//
// The factorization is the region approxtune times (approxtune.h): the
// generation and the check are left out.
//
// Build: mpicc -O2 -I../../include -o factor factor.c -lscalapack-openmpi -lopenblas -lm
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
void pdgeqrf_(const int *m, const int *n, double *a, const int *ia, const int *ja, const int *desca, double *tau,
	double *work, const int *lwork, int *info);
void pdormqr_(const char *side, const char *trans, const int *m, const int *n, const int *k, const double *a,
	const int *ia, const int *ja, const int *desca, const double *tau, double *c, const int *ic, const int *jc,
	const int *descc, double *work, const int *lwork, int *info);
void pdtrsm_(const char *side, const char *uplo, const char *trans, const char *diag, const int *m, const int *n,
	const double *alpha, const double *a, const int *ia, const int *ja, const int *desca, double *b, const int *ib,
	const int *jb, const int *descb);

static double entry(int i, int j, int n) { return 1.0 / (1.0 + abs(i - j)) + (i == j ? n : 0); }

// global is the global index of local index l on process p of np, blocks nb.
static int global(int l, int nb, int p, int np) { return (l / nb * np + p) * nb + l % nb; }

// workspace returns a work array of the size a query (lwork -1) reported.
static double *workspace(double query, int *lwork) {
	*lwork = (int)query + 1;
	return malloc(sizeof(double) * (size_t)*lwork);
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int n = 1024, nb = 64, p = 0, q = 0;
	const char *f = "potrf";
	for (int k = 1; k + 1 < argc; k += 2) {
		if (!strcmp(argv[k], "-n")) n = atoi(argv[k + 1]);
		else if (!strcmp(argv[k], "-nb")) nb = atoi(argv[k + 1]);
		else if (!strcmp(argv[k], "-p")) p = atoi(argv[k + 1]);
		else if (!strcmp(argv[k], "-q")) q = atoi(argv[k + 1]);
		else if (!strcmp(argv[k], "-f")) f = argv[k + 1];
		else {
			fprintf(stderr, "usage: factor [-f potrf|geqrf] [-n N] [-nb NB] [-p P -q Q]\n");
			return 2;
		}
	}
	int qr = !strcmp(f, "geqrf");
	if (!qr && strcmp(f, "potrf")) {
		fprintf(stderr, "factor: -f %s: want potrf or geqrf\n", f);
		return 2;
	}
	int rank, size;
	Cblacs_pinfo(&rank, &size);
	if (p == 0 || q == 0) {
		p = 1;
		q = size;
	}
	if (p * q != size) {
		if (rank == 0) fprintf(stderr, "factor: grid %dx%d needs %d processes, not %d\n", p, q, p * q, size);
		MPI_Finalize();
		return 2;
	}
	int ctx, myrow, mycol, zero = 0, one = 1, info, lwork, minus = -1;
	Cblacs_get(-1, 0, &ctx);
	Cblacs_gridinit(&ctx, "Row", p, q);
	Cblacs_gridinfo(ctx, &p, &q, &myrow, &mycol);
	int mloc = numroc_(&n, &nb, &myrow, &zero, &p), nloc = numroc_(&n, &nb, &mycol, &zero, &q);
	int lld = mloc > 1 ? mloc : 1, desca[9], descb[9];
	descinit_(desca, &n, &n, &nb, &nb, &zero, &zero, &ctx, &lld, &info);
	descinit_(descb, &n, &one, &nb, &nb, &zero, &zero, &ctx, &lld, &info);
	double *a = malloc(sizeof(double) * (size_t)lld * (nloc > 0 ? nloc : 1));
	double *b = malloc(sizeof(double) * (size_t)lld);
	double *tau = malloc(sizeof(double) * (size_t)(nloc > 0 ? nloc : 1));
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
	double query, *work = NULL;
	if (qr) {
		pdgeqrf_(&n, &n, a, &one, &one, desca, tau, &query, &minus, &info);
		work = workspace(query, &lwork);
	}
	APPROXTUNE_BEGIN();
	double t0 = MPI_Wtime();
	if (qr) pdgeqrf_(&n, &n, a, &one, &one, desca, tau, work, &lwork, &info);
	else pdpotrf_("L", &n, a, &one, &one, desca, &info);
	double t1 = MPI_Wtime();
	APPROXTUNE_END();
	if (qr) {
		double alpha = 1;
		free(work);
		pdormqr_("L", "T", &n, &one, &n, a, &one, &one, desca, tau, b, &one, &one, descb, &query, &minus, &info);
		work = workspace(query, &lwork);
		pdormqr_("L", "T", &n, &one, &n, a, &one, &one, desca, tau, b, &one, &one, descb, work, &lwork, &info);
		pdtrsm_("L", "U", "N", "N", &n, &one, &alpha, a, &one, &one, desca, b, &one, &one, descb);
		free(work);
	} else {
		int sinfo = 0;
		pdpotrs_("L", &n, &one, a, &one, &one, desca, b, &one, &one, descb, &sinfo);
	}
	double err = 0;
	if (mycol == 0)
		for (int il = 0; il < mloc; il++) err = fmax(err, fabs(b[il] - 1));
	double maxerr;
	MPI_Allreduce(&err, &maxerr, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	int ok = info == 0 && maxerr < 1e-8;
	if (rank == 0)
		printf("pd%s n=%d nb=%d grid=%dx%d info=%d factor %.4f s, max |x-1| = %.2e %s\n", f, n, nb, p, q, info, t1 - t0,
			maxerr, ok ? "PASSED" : "FAILED");
	free(a);
	free(b);
	free(tau);
	Cblacs_gridexit(ctx);
	MPI_Finalize();
	return ok || APPROXTUNE_SKIPPING() ? 0 : 1;
}
