// A program whose control flow depends on what it computes, which approxtune
// cannot tune (docs/programs.md): a power iteration on every rank,
// y = A x by dgemm_ and the Rayleigh quotient summed over the ranks by
// MPI_Allreduce, until the quotient changes by less than 1e-10 of itself
// or MAX steps (argument 1, default 1000). A is diagonal, 1, 0.95, 0.9, ...
// (order N, argument 2, default 200), so a full run converges in a few
// hundred steps; a run that skips dgemm_ leaves y as it was, the quotient
// stops changing, and the loop ends early. It prints the steps it made.
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

void dgemm_(const char *, const char *, const int *, const int *, const int *, const double *, const double *,
	const int *, const double *, const int *, const double *, double *, const int *);

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int max = argc > 1 ? atoi(argv[1]) : 1000, n = argc > 2 ? atoi(argv[2]) : 200, one = 1;
	double *a = calloc((size_t)n * n, sizeof(double)), *x = malloc(sizeof(double) * n), *y = calloc(n, sizeof(double));
	for (int i = 0; i < n; i++) {
		a[i * n + i] = pow(0.95, i);
		x[i] = 1;
	}
	double done = 1, zero = 0, prev = 0;
	int steps = 0;
	while (steps < max) {
		steps++;
		dgemm_("N", "N", &n, &one, &n, &done, a, &n, x, &n, &zero, y, &n);
		double local[2] = {0, 0}, sum[2];
		for (int i = 0; i < n; i++) {
			local[0] += x[i] * y[i];
			local[1] += y[i] * y[i];
		}
		MPI_Allreduce(local, sum, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		double q = sum[0];
		if (fabs(q - prev) < 1e-10 * fabs(q)) break;
		prev = q;
		for (int i = 0; i < n; i++) x[i] = y[i] / sqrt(sum[1]);
	}
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (rank == 0) printf("steps %d\n", steps);
	free(a); free(x); free(y);
	MPI_Finalize();
	return 0;
}
