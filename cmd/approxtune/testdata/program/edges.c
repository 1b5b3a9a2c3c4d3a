// Edge cases of point-to-point messaging that the preload library once
// hung on, run in sequence on 4 ranks (2 at least; cases of 2 ranks use
// ranks 0 and 1 while the others go on to the next case's reduction). Each
// case checks its own results and rank 0 prints "<case> ok" or
// "<case> FAILED" (details on the failing rank's stderr); the program exits
// 1 if any case failed. The region approxtune times (approxtune.h) begins
// while a message is in flight (region-begin) and ends while a receive is
// posted whose message is sent after it (region-end); the cases between are
// inside it:
//   shift   MPI_Sendrecv along a non-periodic shift (MPI_PROC_NULL at the ends)
//   shiftr  the same with MPI_Sendrecv_replace
//   wild    a wildcard MPI_Irecv posted before a specific one, same tag
//   cancel  MPI_Cancel of a receive never matched, then messages as before
//   rfree   MPI_Request_free of an active rendezvous-size send, then a receive
//   f90     a derived type over MPI_Type_create_f90_real (predefined)
//   sendc   MPI_Send_c, an MPI-4 large-count form (MPI 4 only)
// Integers arrive intact always (the library never skips them). Doubles are
// checked exactly with the argument "exact" (a run that skips nothing);
// without it a double message may have been skipped, and its receive buffer
// must then hold what it held before.
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "approxtune.h"

static int rank, size, exact, failed;

// report agrees on every rank whether the case passed and prints it on rank 0.
static void report(const char *name, int ok) {
	int all = 0;
	MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!all) failed = 1;
	if (rank == 0) {
		printf("%s %s\n", name, all ? "ok" : "FAILED");
		fflush(stdout);
	}
}

// bad tells of a failed check on this rank and returns 0.
static int bad(const char *name, const char *what, double got, double want) {
	fprintf(stderr, "rank %d: %s: %s is %g, want %g\n", rank, name, what, got, want);
	return 0;
}

// arrived checks a received double: exact, or in a run that may skip
// doubles the value sent or the one the buffer held before.
static int arrived(const char *name, double got, double sent, double before) {
	if (got == sent || (!exact && got == before)) return 1;
	return bad(name, "a double", got, sent);
}

// shift sends 4 values of type t (MPI_INT or MPI_DOUBLE) to the next rank
// and receives the previous rank's, MPI_PROC_NULL at the ends, with
// MPI_Sendrecv or (replace) MPI_Sendrecv_replace. Rank r sends r*10+i
// (+0.5 for doubles). A receive from MPI_PROC_NULL (at rank 0) leaves its
// buffer as it was and has a status of MPI_PROC_NULL and count 0.
static int shift(const char *name, MPI_Datatype t, int replace, int tag) {
	enum { n = 4 };
	int right = rank + 1 < size ? rank + 1 : MPI_PROC_NULL, left = rank > 0 ? rank - 1 : MPI_PROC_NULL;
	double add = t == MPI_INT ? 0 : 0.5;
	int iout[n], iin[n];
	double dout[n], din[n];
	for (int i = 0; i < n; i++) {
		iout[i] = rank * 10 + i;
		dout[i] = rank * 10 + i + add;
		iin[i] = -1;
		din[i] = -1;
	}
	void *out = t == MPI_INT ? (void *)iout : (void *)dout, *in = t == MPI_INT ? (void *)iin : (void *)din;
	MPI_Status st;
	if (replace) MPI_Sendrecv_replace(out, n, t, right, tag, left, tag, MPI_COMM_WORLD, &st);
	else MPI_Sendrecv(out, n, t, right, tag, in, n, t, left, tag, MPI_COMM_WORLD, &st);
	int ok = 1, count = -1;
	MPI_Get_count(&st, t, &count);
	if (st.MPI_SOURCE != left) ok = bad(name, "the status's source", st.MPI_SOURCE, left);
	for (int i = 0; i < n; i++) {
		double got = replace ? (t == MPI_INT ? iout[i] : dout[i]) : (t == MPI_INT ? iin[i] : din[i]);
		double before = replace ? rank * 10 + i + add : -1;
		if (left == MPI_PROC_NULL) {
			if (got != before) ok = bad(name, "the buffer at the MPI_PROC_NULL end", got, before);
		} else if (t == MPI_INT) {
			if (got != left * 10 + i) ok = bad(name, "an integer", got, left * 10 + i);
		} else if (!arrived(name, got, left * 10 + i + add, before)) {
			ok = 0;
		}
	}
	if (left == MPI_PROC_NULL && count != 0) ok = bad(name, "the count at the MPI_PROC_NULL end", count, 0);
	if (left != MPI_PROC_NULL && count != n && (exact || t == MPI_INT || count != 0)) ok = bad(name, "the count", count, n);
	if (left != MPI_PROC_NULL && st.MPI_TAG != tag) ok = bad(name, "the status's tag", st.MPI_TAG, tag);
	return ok;
}

// wild: rank 0 posts a receive from any source, then one from rank 1, both
// tag 5; rank 1 sends 10, waits for rank 0's answer to it, then sends 11.
// MPI matches the first message to the wildcard receive.
static int wild(void) {
	int ok = 1, x[2] = {-1, -1}, ack = 1;
	if (rank == 0) {
		MPI_Request w, s;
		MPI_Status st;
		MPI_Irecv(&x[0], 1, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &w);
		MPI_Irecv(&x[1], 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &s);
		MPI_Wait(&w, &st);
		if (st.MPI_SOURCE != 1) ok = bad("wild", "the wildcard's source", st.MPI_SOURCE, 1);
		MPI_Send(&ack, 1, MPI_INT, 1, 6, MPI_COMM_WORLD);
		MPI_Wait(&s, MPI_STATUS_IGNORE);
		if (x[0] != 10) ok = bad("wild", "the wildcard's message", x[0], 10);
		if (x[1] != 11) ok = bad("wild", "the specific receive's message", x[1], 11);
	} else if (rank == 1) {
		int m0 = 10, m1 = 11;
		MPI_Send(&m0, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
		MPI_Recv(&ack, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		MPI_Send(&m1, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
	}
	return ok;
}

// cancel: every rank posts a receive from the next rank that no message
// matches and cancels it; then each rank gets the next rank's message on
// the same source and tag.
static int cancel(void) {
	int ok = 1, flag = 0, x = -1, next = (rank + 1) % size, prev = (rank + size - 1) % size;
	MPI_Request q;
	MPI_Status st;
	MPI_Irecv(&x, 1, MPI_INT, next, 9, MPI_COMM_WORLD, &q);
	MPI_Cancel(&q);
	MPI_Wait(&q, &st);
	MPI_Test_cancelled(&st, &flag);
	if (!flag) ok = bad("cancel", "MPI_Test_cancelled's flag", flag, 1);
	if (x != -1) ok = bad("cancel", "the cancelled receive's buffer", x, -1);
	MPI_Barrier(MPI_COMM_WORLD); // no message before every receive is cancelled
	MPI_Request s;
	MPI_Isend(&rank, 1, MPI_INT, prev, 9, MPI_COMM_WORLD, &s);
	MPI_Recv(&x, 1, MPI_INT, next, 9, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	MPI_Wait(&s, MPI_STATUS_IGNORE);
	if (x != next) ok = bad("cancel", "the message after", x, next);
	return ok;
}

// rfree: rank 0 sends rank 1 N integers (over any eager limit), frees the
// active request and receives rank 1's N integers, which rank 1 sends
// before it receives.
static int rfree(void) {
	enum { N = 100000 };
	int ok = 1;
	int *out = malloc(N * sizeof(int)), *in = malloc(N * sizeof(int));
	for (int i = 0; i < N; i++) {
		out[i] = rank * N + i;
		in[i] = -1;
	}
	if (rank == 0) {
		MPI_Request q;
		MPI_Isend(out, N, MPI_INT, 1, 20, MPI_COMM_WORLD, &q);
		MPI_Request_free(&q);
		MPI_Recv(in, N, MPI_INT, 1, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	} else if (rank == 1) {
		MPI_Send(out, N, MPI_INT, 0, 21, MPI_COMM_WORLD);
		MPI_Recv(in, N, MPI_INT, 0, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
	}
	MPI_Barrier(MPI_COMM_WORLD); // the freed send has completed once its receive has
	if (rank < 2) {
		int peer = 1 - rank;
		for (int i = 0; i < N; i++) {
			if (in[i] != peer * N + i) {
				ok = bad("rfree", "an integer", in[i], peer * N + i);
				break;
			}
		}
	}
	free(out);
	free(in);
	return ok;
}

// f90: three messages from rank 0 to rank 1 of a contiguous type of 2
// MPI_Type_create_f90_real(15) values, a handle MPI calls predefined.
static int f90(void) {
	int ok = 1;
	MPI_Datatype r8, v;
	MPI_Type_create_f90_real(15, MPI_UNDEFINED, &r8);
	MPI_Type_contiguous(2, r8, &v);
	MPI_Type_commit(&v);
	for (int k = 0; k < 3; k++) {
		double x[2] = {-1, -1};
		if (rank == 0) {
			x[0] = k + 0.25;
			x[1] = k + 0.75;
			MPI_Send(x, 1, v, 1, 40, MPI_COMM_WORLD);
		} else if (rank == 1) {
			MPI_Recv(x, 1, v, 0, 40, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			if (!arrived("f90", x[0], k + 0.25, -1) || !arrived("f90", x[1], k + 0.75, -1)) ok = 0;
		}
	}
	int ni, na, nd, comb;
	MPI_Type_get_envelope(r8, &ni, &na, &nd, &comb);
	if (comb != MPI_COMBINER_F90_REAL) ok = bad("f90", "the combiner", comb, MPI_COMBINER_F90_REAL);
	MPI_Type_free(&v);
	return ok;
}

#if MPI_VERSION >= 4
// sendc: rank 0 sends rank 1 an integer with MPI_Send_c, received by MPI_Recv.
static int sendc(void) {
	int x = -1;
	if (rank == 0) {
		x = 123;
		MPI_Send_c(&x, 1, MPI_INT, 1, 50, MPI_COMM_WORLD);
	} else if (rank == 1) {
		MPI_Recv(&x, 1, MPI_INT, 0, 50, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (x != 123) return bad("sendc", "the integer", x, 123);
	}
	return 1;
}
#endif

int main(int argc, char **argv) {
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	exact = argc > 1 && strcmp(argv[1], "exact") == 0;
	if (size < 2) {
		if (rank == 0) fprintf(stderr, "edges: run on 2 ranks at least\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}

	// region-begin: a message sent before approxtune_begin, received after.
	int x = -1, ok = 1;
	MPI_Request q = MPI_REQUEST_NULL;
	if (rank == 0) MPI_Irecv(&x, 1, MPI_INT, 1, 100, MPI_COMM_WORLD, &q);
	if (rank == 1) {
		x = 42;
		MPI_Send(&x, 1, MPI_INT, 0, 100, MPI_COMM_WORLD);
	}
	APPROXTUNE_BEGIN();
	MPI_Wait(&q, MPI_STATUS_IGNORE);
	if (rank == 0 && x != 42) ok = bad("region-begin", "the integer", x, 42);
	report("region-begin", ok);

	report("shift", shift("shift", MPI_INT, 0, 1) & shift("shift", MPI_DOUBLE, 0, 2));
	report("shiftr", shift("shiftr", MPI_INT, 1, 3) & shift("shiftr", MPI_DOUBLE, 1, 4));
	report("wild", wild());
	report("cancel", cancel());
	report("rfree", rfree());
	report("f90", f90());
#if MPI_VERSION >= 4
	report("sendc", sendc());
#endif

	// region-end: a receive posted before approxtune_end, its message sent after.
	x = -1;
	ok = 1;
	q = MPI_REQUEST_NULL;
	if (rank == 0) MPI_Irecv(&x, 1, MPI_INT, 1, 30, MPI_COMM_WORLD, &q);
	APPROXTUNE_END();
	if (rank == 1) {
		x = 77;
		MPI_Send(&x, 1, MPI_INT, 0, 30, MPI_COMM_WORLD);
	}
	MPI_Wait(&q, MPI_STATUS_IGNORE);
	if (rank == 0 && x != 77) ok = bad("region-end", "the integer", x, 77);
	report("region-end", ok);

	MPI_Finalize();
	return failed;
}
