// Fortran MPI under Open MPI (mpif.h and `use mpi`, as gfortran names the
// routines): Open MPI's Fortran layer calls PMPI_* and never reaches the C
// interposers, so a Fortran program's messages, collectives and
// communicators would go unseen. A Fortran program tuned that way was
// predicted a third short: with its messages unseen, a rank's path never
// waited for another's skipped kernels. Here each routine the C
// interposers cover converts its arguments as Open MPI's Fortran layer
// does (handles with *_f2c and *_c2f, Fortran's MPI_BOTTOM, MPI_IN_PLACE,
// MPI_STATUS_IGNORE and MPI_STATUSES_IGNORE, 1-based indices, LOGICAL
// flags) and calls the C interposer, which counts the call and models it.
// MPICH's Fortran layer calls the C MPI_* routines itself, so under MPICH
// none of this is built.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <mpi.h>

#if defined(OPEN_MPI)

typedef MPI_Fint fi;

// gfortran's .TRUE., as Open MPI's Fortran layer writes it.
#define AT_F_TRUE 1

// A Fortran status is MPI_STATUS_SIZE integers: the C status's (Open
// MPI's Fortran MPI_STATUS_SIZE is computed so).
#define AT_F_STATUS_SIZE (sizeof(MPI_Status) / sizeof(MPI_Fint))

// Fortran's sentinels are the addresses of common blocks the MPI library
// defines (mpif-sentinels.h).
static void *at_f_bottom, *at_f_in_place, *at_f_status_ignore, *at_f_statuses_ignore;

static void at_f_sentinels(void) {
	static int found;
	if (found) return;
	found = 1;
	at_f_bottom = dlsym(RTLD_DEFAULT, "mpi_fortran_bottom_");
	at_f_in_place = dlsym(RTLD_DEFAULT, "mpi_fortran_in_place_");
	at_f_status_ignore = dlsym(RTLD_DEFAULT, "mpi_fortran_status_ignore_");
	at_f_statuses_ignore = dlsym(RTLD_DEFAULT, "mpi_fortran_statuses_ignore_");
}

// at_f_buf is a Fortran buffer as C sees it: MPI_BOTTOM and MPI_IN_PLACE
// translated.
static void *at_f_buf(void *b) {
	at_f_sentinels();
	if (b != NULL && b == at_f_bottom) return MPI_BOTTOM;
	if (b != NULL && b == at_f_in_place) return MPI_IN_PLACE;
	return b;
}

// at_f_status is the C status to hand a routine for the Fortran status f:
// mine, or MPI_STATUS_IGNORE. at_f_status_out copies mine into f.
static MPI_Status *at_f_status(fi *f, MPI_Status *mine) {
	at_f_sentinels();
	return (void *)f == at_f_status_ignore ? MPI_STATUS_IGNORE : mine;
}

static void at_f_status_out(fi *f, MPI_Status *mine) {
	if ((void *)f != at_f_status_ignore) PMPI_Status_c2f(mine, f);
}

// at_f_statuses is the C array to hand a routine for n Fortran statuses
// (MPI_STATUSES_IGNORE, or one to free); at_f_statuses_out copies the
// first n of them (or those at idx, when idx is not NULL) and frees it.
static MPI_Status *at_f_statuses(fi *f, int n) {
	at_f_sentinels();
	if ((void *)f == at_f_statuses_ignore) return MPI_STATUSES_IGNORE;
	return malloc(sizeof(MPI_Status) * (n > 0 ? n : 1));
}

static void at_f_statuses_out(fi *f, MPI_Status *mine, int n, int copy) {
	if (mine == MPI_STATUSES_IGNORE) return;
	for (int i = 0; copy && i < n; i++) PMPI_Status_c2f(&mine[i], f + i * AT_F_STATUS_SIZE);
	free(mine);
}

// at_f_requests converts n Fortran requests; at_f_requests_out writes them
// back (completed ones become MPI_REQUEST_NULL) and frees the array.
static MPI_Request *at_f_requests(const fi *f, int n) {
	MPI_Request *q = malloc(sizeof(MPI_Request) * (n > 0 ? n : 1));
	for (int i = 0; i < n; i++) q[i] = PMPI_Request_f2c(f[i]);
	return q;
}

static void at_f_requests_out(fi *f, MPI_Request *q, int n) {
	for (int i = 0; i < n; i++) f[i] = PMPI_Request_c2f(q[i]);
	free(q);
}

#define AT_TYPE(t) PMPI_Type_f2c(*(t))
#define AT_COMM(c) PMPI_Comm_f2c(*(c))

// Sends and receives.

void mpi_send_(void *b, fi *n, fi *t, fi *d, fi *tag, fi *c, fi *ierr) {
	*ierr = MPI_Send(at_f_buf(b), *n, AT_TYPE(t), *d, *tag, AT_COMM(c));
}
void mpi_rsend_(void *b, fi *n, fi *t, fi *d, fi *tag, fi *c, fi *ierr) {
	*ierr = MPI_Rsend(at_f_buf(b), *n, AT_TYPE(t), *d, *tag, AT_COMM(c));
}
void mpi_ssend_(void *b, fi *n, fi *t, fi *d, fi *tag, fi *c, fi *ierr) {
	*ierr = MPI_Ssend(at_f_buf(b), *n, AT_TYPE(t), *d, *tag, AT_COMM(c));
}
void mpi_bsend_(void *b, fi *n, fi *t, fi *d, fi *tag, fi *c, fi *ierr) {
	*ierr = MPI_Bsend(at_f_buf(b), *n, AT_TYPE(t), *d, *tag, AT_COMM(c));
}

// AT_F_START defines a routine that starts a request: the C routine call
// with its arguments, the new request then given to Fortran.
#define AT_F_START(sym, params, call) \
	void sym params { \
		MPI_Request q; \
		*ierr = call; \
		if (*ierr == MPI_SUCCESS) *req = PMPI_Request_c2f(q); \
	}

AT_F_START(mpi_isend_, (void *b, fi *n, fi *t, fi *d, fi *tag, fi *c, fi *req, fi *ierr),
	MPI_Isend(at_f_buf(b), *n, AT_TYPE(t), *d, *tag, AT_COMM(c), &q))
AT_F_START(mpi_irsend_, (void *b, fi *n, fi *t, fi *d, fi *tag, fi *c, fi *req, fi *ierr),
	MPI_Irsend(at_f_buf(b), *n, AT_TYPE(t), *d, *tag, AT_COMM(c), &q))
AT_F_START(mpi_issend_, (void *b, fi *n, fi *t, fi *d, fi *tag, fi *c, fi *req, fi *ierr),
	MPI_Issend(at_f_buf(b), *n, AT_TYPE(t), *d, *tag, AT_COMM(c), &q))
AT_F_START(mpi_ibsend_, (void *b, fi *n, fi *t, fi *d, fi *tag, fi *c, fi *req, fi *ierr),
	MPI_Ibsend(at_f_buf(b), *n, AT_TYPE(t), *d, *tag, AT_COMM(c), &q))
AT_F_START(mpi_irecv_, (void *b, fi *n, fi *t, fi *s, fi *tag, fi *c, fi *req, fi *ierr),
	MPI_Irecv(at_f_buf(b), *n, AT_TYPE(t), *s, *tag, AT_COMM(c), &q))
AT_F_START(mpi_send_init_, (void *b, fi *n, fi *t, fi *d, fi *tag, fi *c, fi *req, fi *ierr),
	MPI_Send_init(at_f_buf(b), *n, AT_TYPE(t), *d, *tag, AT_COMM(c), &q))
AT_F_START(mpi_rsend_init_, (void *b, fi *n, fi *t, fi *d, fi *tag, fi *c, fi *req, fi *ierr),
	MPI_Rsend_init(at_f_buf(b), *n, AT_TYPE(t), *d, *tag, AT_COMM(c), &q))
AT_F_START(mpi_ssend_init_, (void *b, fi *n, fi *t, fi *d, fi *tag, fi *c, fi *req, fi *ierr),
	MPI_Ssend_init(at_f_buf(b), *n, AT_TYPE(t), *d, *tag, AT_COMM(c), &q))
AT_F_START(mpi_bsend_init_, (void *b, fi *n, fi *t, fi *d, fi *tag, fi *c, fi *req, fi *ierr),
	MPI_Bsend_init(at_f_buf(b), *n, AT_TYPE(t), *d, *tag, AT_COMM(c), &q))
AT_F_START(mpi_recv_init_, (void *b, fi *n, fi *t, fi *s, fi *tag, fi *c, fi *req, fi *ierr),
	MPI_Recv_init(at_f_buf(b), *n, AT_TYPE(t), *s, *tag, AT_COMM(c), &q))

void mpi_recv_(void *b, fi *n, fi *t, fi *s, fi *tag, fi *c, fi *st, fi *ierr) {
	MPI_Status mine;
	*ierr = MPI_Recv(at_f_buf(b), *n, AT_TYPE(t), *s, *tag, AT_COMM(c), at_f_status(st, &mine));
	if (*ierr == MPI_SUCCESS) at_f_status_out(st, &mine);
}

void mpi_sendrecv_(void *sb, fi *sn, fi *stype, fi *d, fi *stag, void *rb, fi *rn, fi *rtype, fi *s, fi *rtag, fi *c,
	fi *st, fi *ierr) {
	MPI_Status mine;
	*ierr = MPI_Sendrecv(at_f_buf(sb), *sn, AT_TYPE(stype), *d, *stag, at_f_buf(rb), *rn, AT_TYPE(rtype), *s, *rtag, AT_COMM(c),
		at_f_status(st, &mine));
	if (*ierr == MPI_SUCCESS) at_f_status_out(st, &mine);
}

void mpi_sendrecv_replace_(void *b, fi *n, fi *t, fi *d, fi *stag, fi *s, fi *rtag, fi *c, fi *st, fi *ierr) {
	MPI_Status mine;
	*ierr = MPI_Sendrecv_replace(at_f_buf(b), *n, AT_TYPE(t), *d, *stag, *s, *rtag, AT_COMM(c), at_f_status(st, &mine));
	if (*ierr == MPI_SUCCESS) at_f_status_out(st, &mine);
}

// Requests: started, freed, cancelled, waited for and tested. A request
// the C routine completes comes back as MPI_REQUEST_NULL.

void mpi_start_(fi *req, fi *ierr) {
	MPI_Request q = PMPI_Request_f2c(*req);
	*ierr = MPI_Start(&q);
}

void mpi_startall_(fi *n, fi *reqs, fi *ierr) {
	MPI_Request *q = at_f_requests(reqs, *n);
	*ierr = MPI_Startall(*n, q);
	free(q); // persistent requests keep their handles
}

void mpi_request_free_(fi *req, fi *ierr) {
	MPI_Request q = PMPI_Request_f2c(*req);
	*ierr = MPI_Request_free(&q);
	if (*ierr == MPI_SUCCESS) *req = PMPI_Request_c2f(MPI_REQUEST_NULL);
}

void mpi_cancel_(fi *req, fi *ierr) {
	MPI_Request q = PMPI_Request_f2c(*req);
	*ierr = MPI_Cancel(&q);
}

void mpi_wait_(fi *req, fi *st, fi *ierr) {
	MPI_Request q = PMPI_Request_f2c(*req);
	MPI_Status mine;
	*ierr = MPI_Wait(&q, at_f_status(st, &mine));
	if (*ierr == MPI_SUCCESS) {
		*req = PMPI_Request_c2f(q);
		at_f_status_out(st, &mine);
	}
}

void mpi_waitall_(fi *n, fi *reqs, fi *sts, fi *ierr) {
	MPI_Request *q = at_f_requests(reqs, *n);
	MPI_Status *mine = at_f_statuses(sts, *n);
	*ierr = MPI_Waitall(*n, q, mine);
	int ok = *ierr == MPI_SUCCESS || *ierr == MPI_ERR_IN_STATUS;
	at_f_statuses_out(sts, mine, *n, ok);
	if (ok) {
		at_f_requests_out(reqs, q, *n);
	} else {
		free(q);
	}
}

// mpi_waitany_ and mpi_testany_ give Fortran's 1-based index.
void mpi_waitany_(fi *n, fi *reqs, fi *index, fi *st, fi *ierr) {
	MPI_Request *q = at_f_requests(reqs, *n);
	MPI_Status mine;
	int i;
	*ierr = MPI_Waitany(*n, q, &i, at_f_status(st, &mine));
	if (*ierr == MPI_SUCCESS) {
		if (i != MPI_UNDEFINED) {
			reqs[i] = PMPI_Request_c2f(q[i]);
			i++;
		}
		*index = i;
		at_f_status_out(st, &mine);
	}
	free(q);
}

void mpi_test_(fi *req, fi *flag, fi *st, fi *ierr) {
	MPI_Request q = PMPI_Request_f2c(*req);
	MPI_Status mine;
	int f = 0;
	*ierr = MPI_Test(&q, &f, at_f_status(st, &mine));
	if (*ierr == MPI_SUCCESS) {
		*req = PMPI_Request_c2f(q);
		*flag = f ? AT_F_TRUE : 0;
		if (f) at_f_status_out(st, &mine);
	}
}

void mpi_testall_(fi *n, fi *reqs, fi *flag, fi *sts, fi *ierr) {
	MPI_Request *q = at_f_requests(reqs, *n);
	MPI_Status *mine = at_f_statuses(sts, *n);
	int f = 0;
	*ierr = MPI_Testall(*n, q, &f, mine);
	int ok = (*ierr == MPI_SUCCESS || *ierr == MPI_ERR_IN_STATUS) && f;
	if (*ierr == MPI_SUCCESS || *ierr == MPI_ERR_IN_STATUS) *flag = f ? AT_F_TRUE : 0;
	at_f_statuses_out(sts, mine, *n, ok);
	if (ok) {
		at_f_requests_out(reqs, q, *n);
	} else {
		free(q);
	}
}

void mpi_testany_(fi *n, fi *reqs, fi *index, fi *flag, fi *st, fi *ierr) {
	MPI_Request *q = at_f_requests(reqs, *n);
	MPI_Status mine;
	int i, f = 0;
	*ierr = MPI_Testany(*n, q, &i, &f, at_f_status(st, &mine));
	if (*ierr == MPI_SUCCESS) {
		if (f && i != MPI_UNDEFINED) {
			reqs[i] = PMPI_Request_c2f(q[i]);
			i++;
		}
		*index = i;
		*flag = f ? AT_F_TRUE : 0;
		if (f) at_f_status_out(st, &mine);
	}
	free(q);
}

// at_f_some is mpi_waitsome_ and mpi_testsome_.
static void at_f_some(int test, fi *n, fi *reqs, fi *outcount, fi *indices, fi *sts, fi *ierr) {
	MPI_Request *q = at_f_requests(reqs, *n);
	MPI_Status *mine = at_f_statuses(sts, *n);
	int out = 0, *idx = malloc(sizeof(int) * (*n > 0 ? *n : 1));
	*ierr = test ? MPI_Testsome(*n, q, &out, idx, mine) : MPI_Waitsome(*n, q, &out, idx, mine);
	int ok = *ierr == MPI_SUCCESS || *ierr == MPI_ERR_IN_STATUS;
	if (ok) {
		*outcount = out;
		for (int i = 0; out != MPI_UNDEFINED && i < out; i++) {
			reqs[idx[i]] = PMPI_Request_c2f(q[idx[i]]);
			indices[i] = idx[i] + 1;
		}
	}
	at_f_statuses_out(sts, mine, out == MPI_UNDEFINED ? 0 : out, ok);
	free(idx);
	free(q);
}

void mpi_waitsome_(fi *n, fi *reqs, fi *outcount, fi *indices, fi *sts, fi *ierr) {
	at_f_some(0, n, reqs, outcount, indices, sts, ierr);
}

void mpi_testsome_(fi *n, fi *reqs, fi *outcount, fi *indices, fi *sts, fi *ierr) {
	at_f_some(1, n, reqs, outcount, indices, sts, ierr);
}

// Collectives. A broadcast's MPI_BOTTOM is converted like the others':
// passed on as an address, a broadcast of a datatype of absolute addresses
// had crashed every launch, its full runs too (a review; under MPICH too,
// whose own Fortran layer now converts it).

void mpi_bcast_(void *b, fi *n, fi *t, fi *root, fi *c, fi *ierr) {
	*ierr = MPI_Bcast(at_f_buf(b), *n, AT_TYPE(t), *root, AT_COMM(c));
}

void mpi_barrier_(fi *c, fi *ierr) {
	*ierr = MPI_Barrier(AT_COMM(c));
}

void mpi_allreduce_(void *sb, void *rb, fi *n, fi *t, fi *op, fi *c, fi *ierr) {
	*ierr = MPI_Allreduce(at_f_buf(sb), at_f_buf(rb), *n, AT_TYPE(t), PMPI_Op_f2c(*op), AT_COMM(c));
}

void mpi_reduce_(void *sb, void *rb, fi *n, fi *t, fi *op, fi *root, fi *c, fi *ierr) {
	*ierr = MPI_Reduce(at_f_buf(sb), at_f_buf(rb), *n, AT_TYPE(t), PMPI_Op_f2c(*op), *root, AT_COMM(c));
}

void mpi_gather_(void *sb, fi *sn, fi *st, void *rb, fi *rn, fi *rt, fi *root, fi *c, fi *ierr) {
	*ierr = MPI_Gather(at_f_buf(sb), *sn, AT_TYPE(st), at_f_buf(rb), *rn, AT_TYPE(rt), *root, AT_COMM(c));
}

void mpi_allgather_(void *sb, fi *sn, fi *st, void *rb, fi *rn, fi *rt, fi *c, fi *ierr) {
	*ierr = MPI_Allgather(at_f_buf(sb), *sn, AT_TYPE(st), at_f_buf(rb), *rn, AT_TYPE(rt), AT_COMM(c));
}

void mpi_scatter_(void *sb, fi *sn, fi *st, void *rb, fi *rn, fi *rt, fi *root, fi *c, fi *ierr) {
	*ierr = MPI_Scatter(at_f_buf(sb), *sn, AT_TYPE(st), at_f_buf(rb), *rn, AT_TYPE(rt), *root, AT_COMM(c));
}

void mpi_alltoall_(void *sb, fi *sn, fi *st, void *rb, fi *rn, fi *rt, fi *c, fi *ierr) {
	*ierr = MPI_Alltoall(at_f_buf(sb), *sn, AT_TYPE(st), at_f_buf(rb), *rn, AT_TYPE(rt), AT_COMM(c));
}

void mpi_allgatherv_(void *sb, fi *sn, fi *st, void *rb, fi *rcounts, fi *displs, fi *rt, fi *c, fi *ierr) {
	*ierr = MPI_Allgatherv(at_f_buf(sb), *sn, AT_TYPE(st), at_f_buf(rb), rcounts, displs, AT_TYPE(rt), AT_COMM(c));
}

void mpi_gatherv_(void *sb, fi *sn, fi *st, void *rb, fi *rcounts, fi *displs, fi *rt, fi *root, fi *c, fi *ierr) {
	*ierr = MPI_Gatherv(at_f_buf(sb), *sn, AT_TYPE(st), at_f_buf(rb), rcounts, displs, AT_TYPE(rt), *root, AT_COMM(c));
}

void mpi_scatterv_(void *sb, fi *scounts, fi *displs, fi *st, void *rb, fi *rn, fi *rt, fi *root, fi *c, fi *ierr) {
	*ierr = MPI_Scatterv(at_f_buf(sb), scounts, displs, AT_TYPE(st), at_f_buf(rb), *rn, AT_TYPE(rt), *root, AT_COMM(c));
}

void mpi_alltoallv_(void *sb, fi *scounts, fi *sdispls, fi *st, void *rb, fi *rcounts, fi *rdispls, fi *rt, fi *c,
	fi *ierr) {
	*ierr = MPI_Alltoallv(at_f_buf(sb), scounts, sdispls, AT_TYPE(st), at_f_buf(rb), rcounts, rdispls, AT_TYPE(rt),
		AT_COMM(c));
}

// Communicators: the engine learns each new one's shape.

// AT_F_COMM defines a constructor: the C routine's call, the new
// communicator then given to Fortran.
#define AT_F_COMM(sym, params, call) \
	void sym params { \
		MPI_Comm out; \
		*ierr = call; \
		if (*ierr == MPI_SUCCESS) *newcomm = PMPI_Comm_c2f(out); \
	}

AT_F_COMM(mpi_comm_split_, (fi *c, fi *color, fi *key, fi *newcomm, fi *ierr), MPI_Comm_split(AT_COMM(c), *color, *key, &out))
AT_F_COMM(mpi_comm_dup_, (fi *c, fi *newcomm, fi *ierr), MPI_Comm_dup(AT_COMM(c), &out))
AT_F_COMM(mpi_comm_create_, (fi *c, fi *g, fi *newcomm, fi *ierr), MPI_Comm_create(AT_COMM(c), PMPI_Group_f2c(*g), &out))
AT_F_COMM(mpi_comm_create_group_, (fi *c, fi *g, fi *tag, fi *newcomm, fi *ierr),
	MPI_Comm_create_group(AT_COMM(c), PMPI_Group_f2c(*g), *tag, &out))
AT_F_COMM(mpi_comm_split_type_, (fi *c, fi *type, fi *key, fi *info, fi *newcomm, fi *ierr),
	MPI_Comm_split_type(AT_COMM(c), *type, *key, PMPI_Info_f2c(*info), &out))

// A Fortran LOGICAL is true when it is not zero.
void mpi_cart_create_(fi *c, fi *nd, fi *dims, fi *periods, fi *reorder, fi *newcomm, fi *ierr) {
	int *p = malloc(sizeof(int) * (*nd > 0 ? *nd : 1));
	for (int i = 0; i < *nd; i++) p[i] = periods[i] != 0;
	MPI_Comm out;
	*ierr = MPI_Cart_create(AT_COMM(c), *nd, dims, p, *reorder != 0, &out);
	if (*ierr == MPI_SUCCESS) *newcomm = PMPI_Comm_c2f(out);
	free(p);
}

void mpi_cart_sub_(fi *c, fi *remain, fi *newcomm, fi *ierr) {
	int nd = 0;
	MPI_Comm cc = AT_COMM(c), out;
	*ierr = PMPI_Cartdim_get(cc, &nd);
	if (*ierr != MPI_SUCCESS) return;
	int *r = malloc(sizeof(int) * (nd > 0 ? nd : 1));
	for (int i = 0; i < nd; i++) r[i] = remain[i] != 0;
	*ierr = MPI_Cart_sub(cc, r, &out);
	if (*ierr == MPI_SUCCESS) *newcomm = PMPI_Comm_c2f(out);
	free(r);
}

void mpi_comm_free_(fi *c, fi *ierr) {
	MPI_Comm cc = AT_COMM(c);
	*ierr = MPI_Comm_free(&cc);
	if (*ierr == MPI_SUCCESS) *c = PMPI_Comm_c2f(MPI_COMM_NULL);
}

#endif
