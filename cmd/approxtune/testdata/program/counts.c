// A small MPI + BLAS program with known calls per rank, for the preload
// library's tests: 5 dgemm_ (Fortran), 3 cblas_dgemm, 1 dpotrf_ (whose own
// BLAS calls are part of it), 4 MPI_Bcast, 2 MPI_Allreduce, 1 MPI_Barrier,
// 2 cblas_dtrsm (only counted), and cblas_dgemv and MPI_Iprobe, which the
// library does not intercept.
#include <mpi.h>
#include <stdio.h>
#include <cblas.h>
void dgemm_(const char*, const char*, const int*, const int*, const int*, const double*, const double*, const int*,
	const double*, const int*, const double*, double*, const int*);
void dpotrf_(const char*, const int*, double*, const int*, int*);
int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int n = 64, info; double one = 1, zero = 0;
	static double a[64*64], b[64*64], c[64*64];
	for (int i = 0; i < n*n; i++) { a[i] = (i % 7) * 0.01; b[i] = (i % 5) * 0.02; }
	for (int k = 0; k < 5; k++) dgemm_("N", "T", &n, &n, &n, &one, a, &n, b, &n, &zero, c, &n);
	for (int k = 0; k < 3; k++) cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
	for (int i = 0; i < n*n; i++) c[i] = (i / n == i % n) ? n : 0.5 / (1 + i % 3);
	dpotrf_("L", &n, c, &n, &info);
	static double t[64*64], x[64], y[64];
	for (int i = 0; i < n*n; i++) t[i] = (i / n == i % n) ? 2 : 0;
	for (int k = 0; k < 2; k++) cblas_dtrsm(CblasRowMajor, CblasLeft, CblasLower, CblasNoTrans, CblasNonUnit, n, n, 1, t, n, b, n);
	cblas_dgemv(CblasRowMajor, CblasNoTrans, n, n, 1, a, n, x, 1, 0, y, 1);
	int flag;
	MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
	double v = 1, s;
	for (int k = 0; k < 4; k++) MPI_Bcast(&v, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
	for (int k = 0; k < 2; k++) MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	MPI_Barrier(MPI_COMM_WORLD);
	int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (rank == 0) printf("info %d sum %g c00 %g\n", info, s, c[0]);
	MPI_Finalize();
	return 0;
}
