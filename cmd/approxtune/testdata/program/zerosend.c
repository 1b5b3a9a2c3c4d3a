// Zero-count sends, several in flight at once, waited for only later:
// Open MPI gives each the same static, already completed request, a handle
// several of the program's requests then share (a skipped message, sent
// empty, can get it too). STEPS steps of 3 such sends to every other rank
// and a 2048-double exchange; prints "zerosend ok".
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int steps = argc > 1 ? atoi(argv[1]) : 50, rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	double *out = calloc(2048, sizeof(double)), *in = calloc(2048, sizeof(double)), z = 0;
	MPI_Request *q = malloc(sizeof(MPI_Request) * 3 * size);
	for (int s = 0; s < steps; s++) {
		int n = 0;
		for (int p = 0; p < size; p++) {
			if (p == rank) continue;
			for (int k = 0; k < 3; k++) MPI_Isend(&z, 0, MPI_DOUBLE, p, 10 + k, MPI_COMM_WORLD, &q[n++]);
		}
		for (int p = 0; p < size; p++) {
			if (p == rank) continue;
			for (int k = 0; k < 3; k++) MPI_Recv(&z, 0, MPI_DOUBLE, p, 10 + k, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		}
		MPI_Waitall(n, q, MPI_STATUSES_IGNORE);
		MPI_Sendrecv(out, 2048, MPI_DOUBLE, (rank + 1) % size, 1, in, 2048, MPI_DOUBLE, (rank + size - 1) % size, 1,
			MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	if (rank == 0) printf("zerosend ok\n");
	free(out);
	free(in);
	free(q);
	MPI_Finalize();
	return 0;
}
