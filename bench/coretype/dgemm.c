/* dgemm.c: one-thread dgemm n=512 through OpenBLAS, with the kernel set it
 * chose (OPENBLAS_CORETYPE selects one in a DYNAMIC_ARCH build).
 *
 *   gcc -O2 bench/coretype/dgemm.c -o /tmp/dgemm -lopenblas
 *   for c in "" Prescott Nehalem Sandybridge Haswell SkylakeX; do
 *     OPENBLAS_CORETYPE=$c /tmp/dgemm; done
 *
 * prints the kernel set (openblas_get_corename) and the best rate of three
 * rounds of ten products, in GFLOP/s (docs/benchmarks.md, "Settings the
 * agent warns of"). */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cblas.h>

static double now(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + 1e-9 * t.tv_nsec;
}

int main(void) {
	const int n = 512, reps = 10;
	double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n),
	       *c = malloc(sizeof(double) * n * n);
	if (!a || !b || !c)
		return 1;
	for (int i = 0; i < n * n; i++) {
		a[i] = 1.0 / (i + 1);
		b[i] = 1.0;
		c[i] = 0;
	}
	openblas_set_num_threads(1);
	cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
	double best = 0;
	for (int round = 0; round < 3; round++) {
		double t0 = now();
		for (int r = 0; r < reps; r++)
			cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 0, c, n);
		double rate = reps * 2.0 * n * n * n / (now() - t0) / 1e9;
		if (rate > best)
			best = rate;
	}
	printf("%s %.1f GFLOP/s\n", openblas_get_corename(), best);
	free(a);
	free(b);
	free(c);
	return 0;
}
