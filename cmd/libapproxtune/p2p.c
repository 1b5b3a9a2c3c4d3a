// Point-to-point and the collectives beside Bcast, Allreduce and Barrier.
// In a selective run, a call on a communicator the engine knows goes to Go
// (p2p.go), which puts it through the engine; otherwise it is counted and
// forwarded to PMPI_*. Every form of send is covered, because the engine
// sends a record ahead of each message and every receive waits for it: a
// send that left it out would hang its receive. A receive the library does
// not see (MPI_Mrecv, say) only leaves a record unread.
#include <stdlib.h>
#include <mpi.h>
#include "interpose.h"
#include "_cgo_export.h"

// at_busy_enter is at_enter of interpose.c: whether the call is the
// program's own, counting it.
int at_busy_enter(int idx);
void at_busy_leave(void);
uintptr_t at_current_run(void);

// at_pending is how many of the program's requests the engine has started
// and not yet completed: while none, waits and tests never enter Go.
static long at_pending;
void at_pending_add(int d) { at_pending += d; }

uintptr_t at_request_key(MPI_Request q) { return (uintptr_t)q; }
int at_request_is_null(MPI_Request q) { return q == MPI_REQUEST_NULL; }
// Statuses reach Go as integers (p2p.go's setStatus says why).
uintptr_t atp_status_ignore(void) { return (uintptr_t)MPI_STATUS_IGNORE; }
void at_set_status(uintptr_t st, const MPI_Status *mine) {
	if ((MPI_Status *)st != MPI_STATUS_IGNORE && st != 0) *(MPI_Status *)st = *mine;
}
// at_set_bytes gives the status st a message of n bytes (MPI_Get_count
// divides by its datatype's size), unless st is ignored.
void at_set_bytes(uintptr_t st, long long n) {
	if ((MPI_Status *)st != MPI_STATUS_IGNORE && st != 0) PMPI_Status_set_elements_x((MPI_Status *)st, MPI_BYTE, (MPI_Count)n);
}
int at_wait_into(MPI_Request *q, uintptr_t st) { return PMPI_Wait(q, (MPI_Status *)st); }
int at_recv_into(void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, uintptr_t st) {
	return PMPI_Recv(b, n, t, s, tag, c, (MPI_Status *)st);
}
// at_status_at is the i-th of the statuses sts, or MPI_STATUS_IGNORE.
uintptr_t at_status_at(uintptr_t sts, int i) {
	if ((MPI_Status *)sts == MPI_STATUSES_IGNORE) return (uintptr_t)MPI_STATUS_IGNORE;
	return (uintptr_t)((MPI_Status *)sts + i);
}
int at_proc_null(void) { return MPI_PROC_NULL; }

int at_start_send(int mode, const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *q) {
	switch (mode) {
	case AT_MODE_READY:
		return PMPI_Irsend(b, n, t, d, tag, c, q);
	case AT_MODE_SYNC:
		return PMPI_Issend(b, n, t, d, tag, c, q);
	case AT_MODE_BUFFERED:
		return PMPI_Ibsend(b, n, t, d, tag, c, q);
	}
	return PMPI_Isend(b, n, t, d, tag, c, q);
}

// at_float_named says whether a predefined datatype holds floating-point
// numbers only.
static int at_float_named(MPI_Datatype t) {
	return t == MPI_DOUBLE || t == MPI_FLOAT || t == MPI_LONG_DOUBLE || t == MPI_C_DOUBLE_COMPLEX ||
		t == MPI_C_FLOAT_COMPLEX || t == MPI_C_LONG_DOUBLE_COMPLEX || t == MPI_DOUBLE_PRECISION || t == MPI_REAL ||
		t == MPI_COMPLEX || t == MPI_DOUBLE_COMPLEX || t == MPI_REAL4 || t == MPI_REAL8;
}

static int at_float_type(MPI_Datatype t, int depth) {
	int ni, na, nd, comb;
	if (depth > 8 || PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS) return 0;
	if (comb == MPI_COMBINER_NAMED) return at_float_named(t);
	if (comb == MPI_COMBINER_F90_REAL || comb == MPI_COMBINER_F90_COMPLEX) return 1;
	if (comb == MPI_COMBINER_F90_INTEGER) return 0;
	int *ints = malloc(sizeof(int) * (ni + 1));
	MPI_Aint *addrs = malloc(sizeof(MPI_Aint) * (na + 1));
	MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (nd + 1));
	int ok = ints && addrs && types && PMPI_Type_get_contents(t, ni, na, nd, ints, addrs, types) == MPI_SUCCESS;
	if (ok) {
		for (int i = 0; i < nd; i++) {
			ok = ok && at_float_type(types[i], depth + 1);
			int tni, tna, tnd, tcomb;
			// Predefined types (named, and the F90 parameterized ones)
			// must not be freed.
			if (PMPI_Type_get_envelope(types[i], &tni, &tna, &tnd, &tcomb) == MPI_SUCCESS && tcomb != MPI_COMBINER_NAMED &&
				tcomb != MPI_COMBINER_F90_REAL && tcomb != MPI_COMBINER_F90_COMPLEX && tcomb != MPI_COMBINER_F90_INTEGER) {
				PMPI_Type_free(&types[i]);
			}
		}
	}
	free(ints);
	free(addrs);
	free(types);
	return ok;
}

// at_skippable_type says whether a message of type t may be skipped: only
// floating-point data (a derived type built from floating-point types
// only). Integers, characters and bytes may be sizes, indices or pivots
// the program computes with, so they always travel.
int at_skippable_type(MPI_Datatype t) { return at_float_type(t, 0); }

#define AT_RUN_IF(idx) (at_busy_enter(idx) && at_current_run())

static int at_send(int idx, int mode, const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c) {
	int r;
	if (AT_RUN_IF(idx)) {
		r = atSend(at_current_run(), (void *)b, n, t, d, tag, c, mode, NULL);
	} else {
		switch (mode) {
		case AT_MODE_READY: r = PMPI_Rsend(b, n, t, d, tag, c); break;
		case AT_MODE_SYNC: r = PMPI_Ssend(b, n, t, d, tag, c); break;
		case AT_MODE_BUFFERED: r = PMPI_Bsend(b, n, t, d, tag, c); break;
		default: r = PMPI_Send(b, n, t, d, tag, c);
		}
	}
	at_busy_leave();
	return r;
}

int MPI_Send(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c) {
	return at_send(AT_MPI_SEND, AT_MODE_STANDARD, b, n, t, d, tag, c);
}
int MPI_Rsend(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c) {
	return at_send(AT_MPI_RSEND, AT_MODE_READY, b, n, t, d, tag, c);
}
int MPI_Ssend(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c) {
	return at_send(AT_MPI_SSEND, AT_MODE_SYNC, b, n, t, d, tag, c);
}
int MPI_Bsend(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c) {
	return at_send(AT_MPI_BSEND, AT_MODE_BUFFERED, b, n, t, d, tag, c);
}

static int at_isend(int idx, int mode, const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c,
	MPI_Request *q) {
	int r = AT_RUN_IF(idx) ? atSend(at_current_run(), (void *)b, n, t, d, tag, c, mode, q)
		: at_start_send(mode, b, n, t, d, tag, c, q);
	at_busy_leave();
	return r;
}

int MPI_Isend(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *q) {
	return at_isend(AT_MPI_ISEND, AT_MODE_STANDARD, b, n, t, d, tag, c, q);
}
int MPI_Irsend(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *q) {
	return at_isend(AT_MPI_IRSEND, AT_MODE_READY, b, n, t, d, tag, c, q);
}
int MPI_Issend(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *q) {
	return at_isend(AT_MPI_ISSEND, AT_MODE_SYNC, b, n, t, d, tag, c, q);
}
int MPI_Ibsend(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *q) {
	return at_isend(AT_MPI_IBSEND, AT_MODE_BUFFERED, b, n, t, d, tag, c, q);
}

int MPI_Recv(void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Status *st) {
	int r = AT_RUN_IF(AT_MPI_RECV) ? atRecv(at_current_run(), b, n, t, s, tag, c, (uintptr_t)st, NULL)
		: PMPI_Recv(b, n, t, s, tag, c, st);
	at_busy_leave();
	return r;
}

int MPI_Irecv(void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Request *q) {
	int r = AT_RUN_IF(AT_MPI_IRECV) ? atRecv(at_current_run(), b, n, t, s, tag, c, (uintptr_t)MPI_STATUS_IGNORE, q)
		: PMPI_Irecv(b, n, t, s, tag, c, q);
	at_busy_leave();
	return r;
}

int MPI_Sendrecv(const void *sb, int sn, MPI_Datatype stype, int d, int stag, void *rb, int rn, MPI_Datatype rtype,
	int s, int rtag, MPI_Comm c, MPI_Status *st) {
	int r = AT_RUN_IF(AT_MPI_SENDRECV)
		? atSendrecv(at_current_run(), (void *)sb, sn, stype, d, stag, rb, rn, rtype, s, rtag, c, (uintptr_t)st, 0)
		: PMPI_Sendrecv(sb, sn, stype, d, stag, rb, rn, rtype, s, rtag, c, st);
	at_busy_leave();
	return r;
}

int MPI_Sendrecv_replace(void *b, int n, MPI_Datatype t, int d, int stag, int s, int rtag, MPI_Comm c,
	MPI_Status *st) {
	int r = AT_RUN_IF(AT_MPI_SENDRECV_REPLACE)
		? atSendrecv(at_current_run(), b, n, t, d, stag, b, n, t, s, rtag, c, (uintptr_t)st, 1)
		: PMPI_Sendrecv_replace(b, n, t, d, stag, s, rtag, c, st);
	at_busy_leave();
	return r;
}

// Persistent requests: the engine learns each one's message at its
// creation and sends or takes its record at each MPI_Start.

static int at_send_init(int idx, int mode, const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c,
	MPI_Request *q) {
	int r;
	switch (mode) {
	case AT_MODE_READY: r = PMPI_Rsend_init(b, n, t, d, tag, c, q); break;
	case AT_MODE_SYNC: r = PMPI_Ssend_init(b, n, t, d, tag, c, q); break;
	case AT_MODE_BUFFERED: r = PMPI_Bsend_init(b, n, t, d, tag, c, q); break;
	default: r = PMPI_Send_init(b, n, t, d, tag, c, q);
	}
	if (AT_RUN_IF(idx) && r == MPI_SUCCESS) atPersistent(at_current_run(), *q, 1, n, t, d, tag, c);
	at_busy_leave();
	return r;
}

int MPI_Send_init(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *q) {
	return at_send_init(AT_MPI_SEND_INIT, AT_MODE_STANDARD, b, n, t, d, tag, c, q);
}
int MPI_Rsend_init(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *q) {
	return at_send_init(AT_MPI_RSEND_INIT, AT_MODE_READY, b, n, t, d, tag, c, q);
}
int MPI_Ssend_init(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *q) {
	return at_send_init(AT_MPI_SSEND_INIT, AT_MODE_SYNC, b, n, t, d, tag, c, q);
}
int MPI_Bsend_init(const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *q) {
	return at_send_init(AT_MPI_BSEND_INIT, AT_MODE_BUFFERED, b, n, t, d, tag, c, q);
}

int MPI_Recv_init(void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Request *q) {
	int r = PMPI_Recv_init(b, n, t, s, tag, c, q);
	if (AT_RUN_IF(AT_MPI_RECV_INIT) && r == MPI_SUCCESS) atPersistent(at_current_run(), *q, 0, n, t, s, tag, c);
	at_busy_leave();
	return r;
}

int MPI_Start(MPI_Request *q) {
	int r = AT_RUN_IF(AT_MPI_START) ? atStart(at_current_run(), q) : PMPI_Start(q);
	at_busy_leave();
	return r;
}

int MPI_Startall(int n, MPI_Request *qs) {
	int r = MPI_SUCCESS;
	if (AT_RUN_IF(AT_MPI_STARTALL)) {
		for (int i = 0; i < n && r == MPI_SUCCESS; i++) r = atStart(at_current_run(), &qs[i]);
	} else {
		r = PMPI_Startall(n, qs);
	}
	at_busy_leave();
	return r;
}

int MPI_Request_free(MPI_Request *q) {
	int r = AT_RUN_IF(AT_MPI_REQUEST_FREE) ? atRequestFree(at_current_run(), q) : PMPI_Request_free(q);
	at_busy_leave();
	return r;
}

int MPI_Cancel(MPI_Request *q) {
	int r = AT_RUN_IF(AT_MPI_CANCEL) ? atCancel(at_current_run(), q) : PMPI_Cancel(q);
	at_busy_leave();
	return r;
}

// Waits and tests: Go only while the engine has requests of the program's
// in flight.
#define AT_PENDING(idx) (at_busy_enter(idx) && at_current_run() && at_pending > 0)

int MPI_Wait(MPI_Request *q, MPI_Status *st) {
	int r = AT_PENDING(AT_MPI_WAIT) ? atWait(at_current_run(), q, (uintptr_t)st) : PMPI_Wait(q, st);
	at_busy_leave();
	return r;
}

int MPI_Waitall(int n, MPI_Request *qs, MPI_Status *sts) {
	int r = AT_PENDING(AT_MPI_WAITALL) ? atWaitall(at_current_run(), n, qs, (uintptr_t)sts) : PMPI_Waitall(n, qs, sts);
	at_busy_leave();
	return r;
}

// The tests and the other waits complete the program's requests with the
// MPI library's own routine, then the engine's side of those it started
// (atCompleted, with the handles as they were before the call).
static uintptr_t *at_keys(int n, MPI_Request *qs) {
	uintptr_t *k = malloc(sizeof(uintptr_t) * (n > 0 ? n : 1));
	for (int i = 0; i < n; i++) k[i] = (uintptr_t)qs[i];
	return k;
}

static MPI_Status *at_statuses(int n, MPI_Status *sts) {
	return sts == MPI_STATUSES_IGNORE ? malloc(sizeof(MPI_Status) * (n > 0 ? n : 1)) : sts;
}

static void at_done_statuses(MPI_Status *mine, MPI_Status *sts) {
	if (mine != sts) free(mine);
}

int MPI_Test(MPI_Request *q, int *flag, MPI_Status *st) {
	if (!AT_PENDING(AT_MPI_TEST)) {
		int r = PMPI_Test(q, flag, st);
		at_busy_leave();
		return r;
	}
	uintptr_t key = (uintptr_t)*q;
	MPI_Status mine;
	int r = PMPI_Test(q, flag, &mine);
	if (r == MPI_SUCCESS && *flag) atCompleted(at_current_run(), key, &mine);
	if (st != MPI_STATUS_IGNORE) *st = mine;
	at_busy_leave();
	return r;
}

int MPI_Testall(int n, MPI_Request *qs, int *flag, MPI_Status *sts) {
	if (!AT_PENDING(AT_MPI_TESTALL)) {
		int r = PMPI_Testall(n, qs, flag, sts);
		at_busy_leave();
		return r;
	}
	uintptr_t *keys = at_keys(n, qs);
	MPI_Status *mine = at_statuses(n, sts);
	int r = PMPI_Testall(n, qs, flag, mine);
	if (r == MPI_SUCCESS && *flag) {
		for (int i = 0; i < n; i++) atCompleted(at_current_run(), keys[i], &mine[i]);
	}
	at_done_statuses(mine, sts);
	free(keys);
	at_busy_leave();
	return r;
}

int MPI_Waitany(int n, MPI_Request *qs, int *index, MPI_Status *st) {
	if (!AT_PENDING(AT_MPI_WAITANY)) {
		int r = PMPI_Waitany(n, qs, index, st);
		at_busy_leave();
		return r;
	}
	uintptr_t *keys = at_keys(n, qs);
	MPI_Status mine;
	int r = PMPI_Waitany(n, qs, index, &mine);
	if (r == MPI_SUCCESS && *index != MPI_UNDEFINED) atCompleted(at_current_run(), keys[*index], &mine);
	if (st != MPI_STATUS_IGNORE) *st = mine;
	free(keys);
	at_busy_leave();
	return r;
}

int MPI_Testany(int n, MPI_Request *qs, int *index, int *flag, MPI_Status *st) {
	if (!AT_PENDING(AT_MPI_TESTANY)) {
		int r = PMPI_Testany(n, qs, index, flag, st);
		at_busy_leave();
		return r;
	}
	uintptr_t *keys = at_keys(n, qs);
	MPI_Status mine;
	int r = PMPI_Testany(n, qs, index, flag, &mine);
	if (r == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED) atCompleted(at_current_run(), keys[*index], &mine);
	if (st != MPI_STATUS_IGNORE) *st = mine;
	free(keys);
	at_busy_leave();
	return r;
}

static int at_some(int idx, int test, int n, MPI_Request *qs, int *outcount, int *indices, MPI_Status *sts) {
	if (!AT_PENDING(idx)) {
		int r = test ? PMPI_Testsome(n, qs, outcount, indices, sts) : PMPI_Waitsome(n, qs, outcount, indices, sts);
		at_busy_leave();
		return r;
	}
	uintptr_t *keys = at_keys(n, qs);
	MPI_Status *mine = at_statuses(n, sts);
	int r = test ? PMPI_Testsome(n, qs, outcount, indices, mine) : PMPI_Waitsome(n, qs, outcount, indices, mine);
	if (r == MPI_SUCCESS && *outcount != MPI_UNDEFINED) {
		for (int i = 0; i < *outcount; i++) atCompleted(at_current_run(), keys[indices[i]], &mine[i]);
	}
	at_done_statuses(mine, sts);
	free(keys);
	at_busy_leave();
	return r;
}

int MPI_Waitsome(int n, MPI_Request *qs, int *outcount, int *indices, MPI_Status *sts) {
	return at_some(AT_MPI_WAITSOME, 0, n, qs, outcount, indices, sts);
}

int MPI_Testsome(int n, MPI_Request *qs, int *outcount, int *indices, MPI_Status *sts) {
	return at_some(AT_MPI_TESTSOME, 1, n, qs, outcount, indices, sts);
}

// Collectives: the bytes each process contributes key the call.

int MPI_Reduce(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c) {
	int r = AT_RUN_IF(AT_MPI_REDUCE) ? atReduce(at_current_run(), (uintptr_t)sb, (uintptr_t)rb, n, t, op, root, c)
		: PMPI_Reduce(sb, rb, n, t, op, root, c);
	at_busy_leave();
	return r;
}

int MPI_Gather(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, int root, MPI_Comm c) {
	int r = AT_RUN_IF(AT_MPI_GATHER)
		? atGathers(at_current_run(), AT_OP_GATHER, (uintptr_t)sb, sn, st, (uintptr_t)rb, rn, rt, root, c)
		: PMPI_Gather(sb, sn, st, rb, rn, rt, root, c);
	at_busy_leave();
	return r;
}

int MPI_Allgather(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, MPI_Comm c) {
	int r = AT_RUN_IF(AT_MPI_ALLGATHER)
		? atGathers(at_current_run(), AT_OP_ALLGATHER, (uintptr_t)sb, sn, st, (uintptr_t)rb, rn, rt, 0, c)
		: PMPI_Allgather(sb, sn, st, rb, rn, rt, c);
	at_busy_leave();
	return r;
}

int MPI_Scatter(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, int root, MPI_Comm c) {
	int r = AT_RUN_IF(AT_MPI_SCATTER)
		? atGathers(at_current_run(), AT_OP_SCATTER, (uintptr_t)sb, sn, st, (uintptr_t)rb, rn, rt, root, c)
		: PMPI_Scatter(sb, sn, st, rb, rn, rt, root, c);
	at_busy_leave();
	return r;
}

int MPI_Alltoall(const void *sb, int sn, MPI_Datatype st, void *rb, int rn, MPI_Datatype rt, MPI_Comm c) {
	int r = AT_RUN_IF(AT_MPI_ALLTOALL)
		? atGathers(at_current_run(), AT_OP_ALLTOALL, (uintptr_t)sb, sn, st, (uintptr_t)rb, rn, rt, 0, c)
		: PMPI_Alltoall(sb, sn, st, rb, rn, rt, c);
	at_busy_leave();
	return r;
}

// The v-collectives, whose members may each move a different amount: the
// engine always executes them, keyed by the bytes this process moves
// (atCollectiveV), and the path goes through them as through the others.

// at_vcall performs the v-collective a (for Go).
int at_vcall(struct at_vargs *a) {
	switch (a->op) {
	case AT_OP_ALLGATHERV:
		return PMPI_Allgatherv(a->sb, a->sn, a->st, a->rb, a->rcounts, a->rdispls, a->rt, a->c);
	case AT_OP_GATHERV:
		return PMPI_Gatherv(a->sb, a->sn, a->st, a->rb, a->rcounts, a->rdispls, a->rt, a->root, a->c);
	case AT_OP_SCATTERV:
		return PMPI_Scatterv(a->sb, a->scounts, a->sdispls, a->st, a->rb, a->rn, a->rt, a->root, a->c);
	}
	return PMPI_Alltoallv(a->sb, a->scounts, a->sdispls, a->st, a->rb, a->rcounts, a->rdispls, a->rt, a->c);
}

static long long at_type_bytes(MPI_Datatype t, long long n) {
	int size = 0;
	if (n == 0 || PMPI_Type_size(t, &size) != MPI_SUCCESS) return 0;
	return n * size;
}

static long long at_sum(const int *counts, int n) {
	long long s = 0;
	for (int i = 0; i < n; i++) s += counts[i];
	return s;
}

// at_v_bytes is the bytes this process moves in the v-collective a on an
// intracommunicator: what it sends, or what it receives where it sends in
// place or is a process of MPI_Scatterv's other than the root; a root of
// MPI_Gatherv everything it gathers, of MPI_Scatterv everything it
// scatters (keyed by a share of its own, a root that keeps none of the
// data had been charged a latency for its transfer). The counts arrays are
// read only where MPI gives them.
long long at_v_bytes(struct at_vargs *a) {
	int rank = 0, size = 1;
	PMPI_Comm_rank(a->c, &rank);
	PMPI_Comm_size(a->c, &size);
	switch (a->op) {
	case AT_OP_ALLGATHERV:
		return a->sb == MPI_IN_PLACE ? at_type_bytes(a->rt, a->rcounts[rank]) : at_type_bytes(a->st, a->sn);
	case AT_OP_GATHERV:
		return rank == a->root ? at_type_bytes(a->rt, at_sum(a->rcounts, size)) : at_type_bytes(a->st, a->sn);
	case AT_OP_SCATTERV:
		return rank == a->root ? at_type_bytes(a->st, at_sum(a->scounts, size)) : at_type_bytes(a->rt, a->rn);
	}
	return a->sb == MPI_IN_PLACE ? at_type_bytes(a->rt, at_sum(a->rcounts, size)) : at_type_bytes(a->st, at_sum(a->scounts, size));
}

static int at_v(int idx, struct at_vargs *a) {
	int r = AT_RUN_IF(idx) ? atCollectiveV(at_current_run(), a) : at_vcall(a);
	at_busy_leave();
	return r;
}

int MPI_Allgatherv(const void *sb, int sn, MPI_Datatype st, void *rb, const int *rcounts, const int *displs,
	MPI_Datatype rt, MPI_Comm c) {
	struct at_vargs a = {.op = AT_OP_ALLGATHERV, .sb = sb, .sn = sn, .st = st, .rb = rb, .rcounts = rcounts,
		.rdispls = displs, .rt = rt, .c = c};
	return at_v(AT_MPI_ALLGATHERV, &a);
}

int MPI_Gatherv(const void *sb, int sn, MPI_Datatype st, void *rb, const int *rcounts, const int *displs,
	MPI_Datatype rt, int root, MPI_Comm c) {
	struct at_vargs a = {.op = AT_OP_GATHERV, .sb = sb, .sn = sn, .st = st, .rb = rb, .rcounts = rcounts,
		.rdispls = displs, .rt = rt, .root = root, .c = c};
	return at_v(AT_MPI_GATHERV, &a);
}

int MPI_Scatterv(const void *sb, const int *scounts, const int *displs, MPI_Datatype st, void *rb, int rn,
	MPI_Datatype rt, int root, MPI_Comm c) {
	struct at_vargs a = {.op = AT_OP_SCATTERV, .sb = sb, .scounts = scounts, .sdispls = displs, .st = st, .rb = rb,
		.rn = rn, .rt = rt, .root = root, .c = c};
	return at_v(AT_MPI_SCATTERV, &a);
}

int MPI_Alltoallv(const void *sb, const int *scounts, const int *sdispls, MPI_Datatype st, void *rb,
	const int *rcounts, const int *rdispls, MPI_Datatype rt, MPI_Comm c) {
	struct at_vargs a = {.op = AT_OP_ALLTOALLV, .sb = sb, .scounts = scounts, .sdispls = sdispls, .st = st, .rb = rb,
		.rcounts = rcounts, .rdispls = rdispls, .rt = rt, .c = c};
	return at_v(AT_MPI_ALLTOALLV, &a);
}

// at_gathers performs one of the gathering collectives (for Go).
int at_gathers(int op, uintptr_t s, int sn, MPI_Datatype st, uintptr_t r, int rn, MPI_Datatype rt, int root,
	MPI_Comm c) {
	void *sb = (void *)s, *rb = (void *)r;
	switch (op) {
	case AT_OP_GATHER: return PMPI_Gather(sb, sn, st, rb, rn, rt, root, c);
	case AT_OP_ALLGATHER: return PMPI_Allgather(sb, sn, st, rb, rn, rt, c);
	case AT_OP_SCATTER: return PMPI_Scatter(sb, sn, st, rb, rn, rt, root, c);
	}
	return PMPI_Alltoall(sb, sn, st, rb, rn, rt, c);
}

uintptr_t atp_in_place(void) { return (uintptr_t)MPI_IN_PLACE; }

// at_allreduce and at_reduce are the MPI routines with their buffers as
// integers (Go never holds MPI_IN_PLACE as a pointer).
int at_allreduce(uintptr_t sb, uintptr_t rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
	return PMPI_Allreduce((const void *)sb, (void *)rb, n, t, op, c);
}
int at_reduce(uintptr_t sb, uintptr_t rb, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c) {
	return PMPI_Reduce((const void *)sb, (void *)rb, n, t, op, root, c);
}

#if MPI_VERSION >= 4
#include <limits.h>
// MPI-4's large-count forms (MPICH 4): a message whose count fits an int
// goes the same way as the int form's (the same message), and is counted
// as it; a larger one is forwarded, and a receive the engine models would
// wait for its record (more than 2^31 elements in one message).
#define AT_FITS(n) ((n) <= INT_MAX)
int MPI_Send_c(const void *b, MPI_Count n, MPI_Datatype t, int d, int tag, MPI_Comm c) {
	return AT_FITS(n) ? MPI_Send(b, (int)n, t, d, tag, c) : PMPI_Send_c(b, n, t, d, tag, c);
}
int MPI_Rsend_c(const void *b, MPI_Count n, MPI_Datatype t, int d, int tag, MPI_Comm c) {
	return AT_FITS(n) ? MPI_Rsend(b, (int)n, t, d, tag, c) : PMPI_Rsend_c(b, n, t, d, tag, c);
}
int MPI_Ssend_c(const void *b, MPI_Count n, MPI_Datatype t, int d, int tag, MPI_Comm c) {
	return AT_FITS(n) ? MPI_Ssend(b, (int)n, t, d, tag, c) : PMPI_Ssend_c(b, n, t, d, tag, c);
}
int MPI_Bsend_c(const void *b, MPI_Count n, MPI_Datatype t, int d, int tag, MPI_Comm c) {
	return AT_FITS(n) ? MPI_Bsend(b, (int)n, t, d, tag, c) : PMPI_Bsend_c(b, n, t, d, tag, c);
}
int MPI_Isend_c(const void *b, MPI_Count n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *q) {
	return AT_FITS(n) ? MPI_Isend(b, (int)n, t, d, tag, c, q) : PMPI_Isend_c(b, n, t, d, tag, c, q);
}
int MPI_Irsend_c(const void *b, MPI_Count n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *q) {
	return AT_FITS(n) ? MPI_Irsend(b, (int)n, t, d, tag, c, q) : PMPI_Irsend_c(b, n, t, d, tag, c, q);
}
int MPI_Issend_c(const void *b, MPI_Count n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *q) {
	return AT_FITS(n) ? MPI_Issend(b, (int)n, t, d, tag, c, q) : PMPI_Issend_c(b, n, t, d, tag, c, q);
}
int MPI_Ibsend_c(const void *b, MPI_Count n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *q) {
	return AT_FITS(n) ? MPI_Ibsend(b, (int)n, t, d, tag, c, q) : PMPI_Ibsend_c(b, n, t, d, tag, c, q);
}
int MPI_Recv_c(void *b, MPI_Count n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Status *st) {
	return AT_FITS(n) ? MPI_Recv(b, (int)n, t, s, tag, c, st) : PMPI_Recv_c(b, n, t, s, tag, c, st);
}
int MPI_Irecv_c(void *b, MPI_Count n, MPI_Datatype t, int s, int tag, MPI_Comm c, MPI_Request *q) {
	return AT_FITS(n) ? MPI_Irecv(b, (int)n, t, s, tag, c, q) : PMPI_Irecv_c(b, n, t, s, tag, c, q);
}
int MPI_Sendrecv_c(const void *sb, MPI_Count sn, MPI_Datatype stype, int d, int stag, void *rb, MPI_Count rn,
	MPI_Datatype rtype, int s, int rtag, MPI_Comm c, MPI_Status *st) {
	return AT_FITS(sn) && AT_FITS(rn) ? MPI_Sendrecv(sb, (int)sn, stype, d, stag, rb, (int)rn, rtype, s, rtag, c, st)
		: PMPI_Sendrecv_c(sb, sn, stype, d, stag, rb, rn, rtype, s, rtag, c, st);
}
#endif
