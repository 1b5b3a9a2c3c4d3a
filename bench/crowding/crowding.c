/* crowding.c: how a kernel's CPU time grows when every core is crowded.
 *
 * The engine times computation in CPU time where processes share cores,
 * from samples that selective runs mostly take with the other processes
 * idle. This measures, for one-thread dgemm of order n through OpenBLAS,
 * the CPU time and wall time per product of each process computing
 *   alone        rank 0, the others waiting in a barrier;
 *   one a core   ranks 0..cores-1 (one per core, as --map-by core places them);
 *   all          every rank,
 * three trials each, and prints the median CPU time of each set over
 * alone's (docs/benchmarks.md, halving-cholesky2d).
 *
 *   mpicc -O2 bench/crowding/crowding.c -o /tmp/crowding -lopenblas
 *   OMPI_MCA_mpi_yield_when_idle=1 OPENBLAS_NUM_THREADS=1 \
 *     mpirun -np 4 --map-by core:OVERSUBSCRIBE --bind-to core:overload-allowed \
 *     /tmp/crowding 256 150 2
 *
 * arguments: n, products per trial, cores. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <cblas.h>

static double clock_s(clockid_t c) {
	struct timespec t;
	clock_gettime(c, &t);
	return t.tv_sec + 1e-9 * t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc != 4) {
		if (rank == 0)
			fprintf(stderr, "usage: crowding N PRODUCTS CORES\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	int n = atoi(argv[1]), reps = atoi(argv[2]), cores = atoi(argv[3]);
	double *a = malloc(sizeof(double) * n * n), *b = malloc(sizeof(double) * n * n),
	       *c = malloc(sizeof(double) * n * n);
	double *cpu = malloc(sizeof(double) * size), *wall = malloc(sizeof(double) * size);
	if (!a || !b || !c || !cpu || !wall || n < 1 || reps < 1 || cores < 1)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (int i = 0; i < n * n; i++) {
		a[i] = 1.0 / (i + 1);
		b[i] = 1.0;
		c[i] = 0.0;
	}
	const char *names[] = {"alone", "one a core", "all"};
	int members[] = {1, cores < size ? cores : size, size};
	double med[3][3];
	for (int trial = 0; trial < 3; trial++) {
		for (int s = 0; s < 3; s++) {
			MPI_Barrier(MPI_COMM_WORLD);
			double mc = 0, mw = 0;
			if (rank < members[s]) {
				cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 1, c, n);
				double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
				for (int k = 0; k < reps; k++)
					cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1, a, n, b, n, 1, c, n);
				mc = (clock_s(CLOCK_THREAD_CPUTIME_ID) - c0) / reps;
				mw = (clock_s(CLOCK_MONOTONIC) - w0) / reps;
			}
			MPI_Gather(&mc, 1, MPI_DOUBLE, cpu, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
			MPI_Gather(&mw, 1, MPI_DOUBLE, wall, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
			if (rank == 0) {
				double sc = 0, sw = 0;
				for (int i = 0; i < members[s]; i++)
					sc += cpu[i], sw += wall[i];
				med[s][trial] = sc / members[s];
				printf("n=%d trial %d %-11s %2d computing: cpu %.4f ms, wall %.4f ms a product (mean over them)\n",
				       n, trial + 1, names[s], members[s], 1e3 * sc / members[s], 1e3 * sw / members[s]);
			}
		}
	}
	if (rank == 0) {
		for (int s = 0; s < 3; s++)
			qsort(med[s], 3, sizeof(double), cmp);
		printf("n=%d median cpu over alone's: one a core %.3f, all %.3f\n", n, med[1][1] / med[0][1], med[2][1] / med[0][1]);
	}
	MPI_Finalize();
	return 0;
}
