// Every column-major BLAS and LAPACK routine the preload library runs
// through the engine, with flags that exercise its row-major mapping; it
// prints checksums of the results, which a run that executes everything
// reproduces exactly.
#include <mpi.h>
#include <stdio.h>
#include <string.h>

void dgemm_(const char *, const char *, const int *, const int *, const int *, const double *, const double *,
	const int *, const double *, const int *, const double *, double *, const int *);
void dsyrk_(const char *, const char *, const int *, const int *, const double *, const double *, const int *,
	const double *, double *, const int *);
void dtrsm_(const char *, const char *, const char *, const char *, const int *, const int *, const double *,
	const double *, const int *, double *, const int *);
void dtrmm_(const char *, const char *, const char *, const char *, const int *, const int *, const double *,
	const double *, const int *, double *, const int *);
void dpotrf_(const char *, const int *, double *, const int *, int *);
void dtrtri_(const char *, const char *, const int *, double *, const int *, int *);

#define N 48
#define M 40
#define LD 50

static double sum(const double *x, int rows, int cols, int ld) {
	double s = 0;
	for (int j = 0; j < cols; j++)
		for (int i = 0; i < rows; i++) s += x[i + j * ld] * (1 + 0.001 * (i + 3 * j));
	return s;
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	static double a[LD * LD], b[LD * LD], c[LD * LD], s[LD * LD];
	int n = N, m = M, ld = LD, info;
	double one = 1, two = 2, half = 0.5;
	for (int i = 0; i < LD * LD; i++) {
		a[i] = ((i * 7) % 11) / 11.0 - 0.4;
		b[i] = ((i * 5) % 13) / 13.0 - 0.3;
	}
	// s = aᵀa + N·I, symmetric positive definite, in both triangles.
	memset(s, 0, sizeof s);
	dsyrk_("U", "T", &n, &n, &one, a, &ld, &half, s, &ld);
	dsyrk_("L", "N", &n, &m, &one, b, &ld, &half, s, &ld);
	for (int i = 0; i < N; i++) s[i + i * LD] += N;
	for (int j = 0; j < N; j++)
		for (int i = j + 1; i < N; i++) s[j + i * LD] = s[i + j * LD];
	printf("syrk %.12e\n", sum(s, N, N, LD));
	memcpy(c, s, sizeof c);
	dpotrf_("L", &n, c, &ld, &info);
	printf("potrf L %d %.12e\n", info, sum(c, N, N, LD));
	memcpy(c, s, sizeof c);
	dpotrf_("U", &n, c, &ld, &info);
	printf("potrf U %d %.12e\n", info, sum(c, N, N, LD));
	dtrtri_("U", "N", &n, c, &ld, &info);
	printf("trtri %d %.12e\n", info, sum(c, N, N, LD));
	memcpy(c, b, sizeof c);
	dtrsm_("L", "L", "N", "N", &n, &m, &two, s, &ld, c, &ld);
	printf("trsm LLNN %.12e\n", sum(c, N, M, LD));
	dtrsm_("R", "U", "T", "U", &n, &m, &one, s, &ld, c, &ld);
	printf("trsm RUTU %.12e\n", sum(c, N, M, LD));
	dtrmm_("L", "U", "T", "N", &n, &m, &half, s, &ld, c, &ld);
	printf("trmm LUTN %.12e\n", sum(c, N, M, LD));
	dtrmm_("R", "L", "N", "U", &n, &m, &one, s, &ld, c, &ld);
	printf("trmm RLNU %.12e\n", sum(c, N, M, LD));
	dgemm_("T", "N", &m, &n, &n, &one, b, &ld, a, &ld, &half, c, &ld);
	printf("gemm TN %.12e\n", sum(c, M, N, LD));
	MPI_Finalize();
	return 0;
}
