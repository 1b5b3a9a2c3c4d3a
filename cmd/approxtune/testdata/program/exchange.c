// An MPI + BLAS program whose point-to-point messages take every form the
// preload library models, for its selective runs. ITER steps; in each, every
// rank of a ring makes 16 modelled calls:
//   2 dgemm_ of order N;
//   Isend to the right, Irecv from the left, Waitall, N*N/8 doubles (2);
//   Send and Recv of N*N/4 doubles, a rendezvous message (2);
//   Sendrecv of N*N/8 doubles (2);
//   an int (the step and the sender) by Isend, received from MPI_ANY_SOURCE
//   with MPI_ANY_TAG and checked: integers are never skipped (2);
//   a column (MPI_Type_vector) by Issend, received contiguous, completed
//   with MPI_Test loops (2);
//   persistent requests: Startall and Waitall (2);
//   Allgather of one double and Reduce of N doubles (2).
// The messages of N*N/8 doubles and more are over the eager limit, so a
// selective run may skip them. It prints a checksum, which a run that
// executes everything reproduces exactly, how many of the large messages'
// receives MPI_Get_count gave their sent count (the Waitall's, the Recv's,
// the Sendrecv's), and how many of the integers arrived intact.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

void dgemm_(const char *, const char *, const int *, const int *, const int *, const double *, const double *,
	const int *, const double *, const int *, const double *, double *, const int *);

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	int iter = argc > 1 ? atoi(argv[1]) : 10, n = argc > 2 ? atoi(argv[2]) : 64;
	int rank, size;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	int left = (rank + size - 1) % size, right = (rank + 1) % size;
	int nn = n * n, quarter = n * n / 4, eighth = n * n / 8;
	double *a = malloc(sizeof(double) * nn), *b = malloc(sizeof(double) * nn), *c = calloc(nn, sizeof(double));
	double *in = malloc(sizeof(double) * nn), *col = malloc(sizeof(double) * n), *all = malloc(sizeof(double) * size);
	double *red = malloc(sizeof(double) * n), *pin = malloc(sizeof(double) * n), *pout = malloc(sizeof(double) * n);
	for (int i = 0; i < nn; i++) {
		a[i] = ((i * 7 + rank) % 11) / 110.0;
		b[i] = ((i * 3) % 13) / 130.0;
	}
	MPI_Datatype column;
	MPI_Type_vector(n, 1, n, MPI_DOUBLE, &column);
	MPI_Type_commit(&column);
	MPI_Request pers[2];
	MPI_Send_init(pout, n, MPI_DOUBLE, right, 7, MPI_COMM_WORLD, &pers[0]);
	MPI_Recv_init(pin, n, MPI_DOUBLE, left, 7, MPI_COMM_WORLD, &pers[1]);
	double one = 1, half = 0.5, sum = 0;
	int intact = 0, counted = 0, got_n;
	for (int s = 0; s < iter; s++) {
		for (int j = 0; j < 2; j++) dgemm_("N", "N", &n, &n, &n, &one, a, &n, b, &n, &half, c, &n);
		MPI_Request q[2];
		MPI_Isend(c, eighth, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &q[0]);
		MPI_Irecv(in, eighth, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &q[1]);
		MPI_Status qst[2], rst;
		MPI_Waitall(2, q, qst);
		MPI_Get_count(&qst[1], MPI_DOUBLE, &got_n);
		counted += got_n == eighth;
		for (int i = 0; i < n; i++) a[i] += in[i] * 1e-3;
		if (rank % 2 == 0) {
			MPI_Send(c, quarter, MPI_DOUBLE, right, 2, MPI_COMM_WORLD);
			MPI_Recv(in, quarter, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &rst);
		} else {
			MPI_Recv(in, quarter, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &rst);
			MPI_Send(c, quarter, MPI_DOUBLE, right, 2, MPI_COMM_WORLD);
		}
		MPI_Get_count(&rst, MPI_DOUBLE, &got_n);
		counted += got_n == quarter;
		for (int i = 0; i < n; i++) b[i] += in[i] * 1e-3;
		MPI_Sendrecv(a, eighth, MPI_DOUBLE, right, 3, in, eighth, MPI_DOUBLE, left, 3, MPI_COMM_WORLD, &rst);
		MPI_Get_count(&rst, MPI_DOUBLE, &got_n);
		counted += got_n == eighth;
		int mine[2] = {s, rank}, got[2] = {-1, -1};
		MPI_Request iq;
		MPI_Isend(mine, 2, MPI_INT, right, 4, MPI_COMM_WORLD, &iq);
		MPI_Status st;
		MPI_Recv(got, 2, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
		MPI_Wait(&iq, MPI_STATUS_IGNORE);
		if (got[0] == s && got[1] == left && st.MPI_SOURCE == left && st.MPI_TAG == 4) intact++;
		MPI_Request cq[2];
		int done[2] = {0, 0};
		MPI_Issend(c, 1, column, right, 5, MPI_COMM_WORLD, &cq[0]);
		MPI_Irecv(col, n, MPI_DOUBLE, left, 5, MPI_COMM_WORLD, &cq[1]);
		while (!done[0] || !done[1]) {
			for (int k = 0; k < 2; k++) {
				if (!done[k]) MPI_Test(&cq[k], &done[k], MPI_STATUS_IGNORE);
			}
		}
		for (int i = 0; i < n; i++) pout[i] = c[i] + col[i];
		MPI_Startall(2, pers);
		MPI_Waitall(2, pers, MPI_STATUSES_IGNORE);
		MPI_Allgather(&pin[s % n], 1, MPI_DOUBLE, all, 1, MPI_DOUBLE, MPI_COMM_WORLD);
		MPI_Reduce(c, red, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
		for (int k = 0; k < size; k++) sum += all[k];
		if (rank == 0) sum += red[s % n];
	}
	double total = 0;
	MPI_Reduce(&sum, &total, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
	int intactAll = 0, countedAll = 0;
	MPI_Reduce(&intact, &intactAll, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	MPI_Reduce(&counted, &countedAll, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("checksum %.12e\ncounts right %d of %d\nintegers intact %d of %d\n", total, countedAll, 3 * iter * size,
			intactAll, iter * size);
	}
	MPI_Request_free(&pers[0]);
	MPI_Request_free(&pers[1]);
	MPI_Type_free(&column);
	free(a); free(b); free(c); free(in); free(col); free(all); free(red); free(pin); free(pout);
	MPI_Finalize();
	return 0;
}
