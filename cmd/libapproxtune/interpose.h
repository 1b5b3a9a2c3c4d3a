#ifndef AT_INTERPOSE_H
#define AT_INTERPOSE_H

// The routines the preload library interposes, as an X-macro list:
// X(index name, symbol, engine): engine is 1 for a routine a selective run
// takes through the engine, 0 for one only counted and forwarded.
// interpose.c defines each symbol; main.go names them in the check report.
#define AT_ROUTINES(X) \
	X(AT_DGEMM_F, dgemm_, 1) \
	X(AT_DSYRK_F, dsyrk_, 1) \
	X(AT_DTRSM_F, dtrsm_, 1) \
	X(AT_DTRMM_F, dtrmm_, 1) \
	X(AT_DSYMM_F, dsymm_, 0) \
	X(AT_DPOTRF_F, dpotrf_, 1) \
	X(AT_DTRTRI_F, dtrtri_, 1) \
	X(AT_DGETRF_F, dgetrf_, 0) \
	X(AT_DGEQRF_F, dgeqrf_, 0) \
	X(AT_CBLAS_DGEMM, cblas_dgemm, 1) \
	X(AT_CBLAS_DSYRK, cblas_dsyrk, 0) \
	X(AT_CBLAS_DTRSM, cblas_dtrsm, 0) \
	X(AT_LAPACKE_DPOTRF, LAPACKE_dpotrf, 0) \
	X(AT_MPI_SEND, MPI_Send, 1) \
	X(AT_MPI_RSEND, MPI_Rsend, 1) \
	X(AT_MPI_SSEND, MPI_Ssend, 1) \
	X(AT_MPI_BSEND, MPI_Bsend, 1) \
	X(AT_MPI_RECV, MPI_Recv, 1) \
	X(AT_MPI_ISEND, MPI_Isend, 1) \
	X(AT_MPI_IRSEND, MPI_Irsend, 1) \
	X(AT_MPI_ISSEND, MPI_Issend, 1) \
	X(AT_MPI_IBSEND, MPI_Ibsend, 1) \
	X(AT_MPI_IRECV, MPI_Irecv, 1) \
	X(AT_MPI_SENDRECV, MPI_Sendrecv, 1) \
	X(AT_MPI_SENDRECV_REPLACE, MPI_Sendrecv_replace, 1) \
	X(AT_MPI_SEND_INIT, MPI_Send_init, 1) \
	X(AT_MPI_RSEND_INIT, MPI_Rsend_init, 1) \
	X(AT_MPI_SSEND_INIT, MPI_Ssend_init, 1) \
	X(AT_MPI_BSEND_INIT, MPI_Bsend_init, 1) \
	X(AT_MPI_RECV_INIT, MPI_Recv_init, 1) \
	X(AT_MPI_START, MPI_Start, 1) \
	X(AT_MPI_STARTALL, MPI_Startall, 1) \
	X(AT_MPI_REQUEST_FREE, MPI_Request_free, 1) \
	X(AT_MPI_CANCEL, MPI_Cancel, 1) \
	X(AT_MPI_WAIT, MPI_Wait, 1) \
	X(AT_MPI_WAITALL, MPI_Waitall, 1) \
	X(AT_MPI_WAITANY, MPI_Waitany, 1) \
	X(AT_MPI_WAITSOME, MPI_Waitsome, 1) \
	X(AT_MPI_TEST, MPI_Test, 1) \
	X(AT_MPI_TESTALL, MPI_Testall, 1) \
	X(AT_MPI_TESTANY, MPI_Testany, 1) \
	X(AT_MPI_TESTSOME, MPI_Testsome, 1) \
	X(AT_MPI_BCAST, MPI_Bcast, 1) \
	X(AT_MPI_REDUCE, MPI_Reduce, 1) \
	X(AT_MPI_ALLREDUCE, MPI_Allreduce, 1) \
	X(AT_MPI_GATHER, MPI_Gather, 1) \
	X(AT_MPI_ALLGATHER, MPI_Allgather, 1) \
	X(AT_MPI_SCATTER, MPI_Scatter, 1) \
	X(AT_MPI_ALLTOALL, MPI_Alltoall, 1) \
	X(AT_MPI_ALLGATHERV, MPI_Allgatherv, 1) \
	X(AT_MPI_ALLTOALLV, MPI_Alltoallv, 1) \
	X(AT_MPI_GATHERV, MPI_Gatherv, 1) \
	X(AT_MPI_SCATTERV, MPI_Scatterv, 1) \
	X(AT_MPI_BARRIER, MPI_Barrier, 1) \
	X(AT_MPI_COMM_SPLIT, MPI_Comm_split, 1) \
	X(AT_MPI_COMM_DUP, MPI_Comm_dup, 1) \
	X(AT_MPI_COMM_CREATE, MPI_Comm_create, 1) \
	X(AT_MPI_COMM_CREATE_GROUP, MPI_Comm_create_group, 1) \
	X(AT_MPI_COMM_SPLIT_TYPE, MPI_Comm_split_type, 1) \
	X(AT_MPI_CART_CREATE, MPI_Cart_create, 1) \
	X(AT_MPI_CART_SUB, MPI_Cart_sub, 1) \
	X(AT_MPI_COMM_FREE, MPI_Comm_free, 1)

#define AT_ENUM(idx, sym, engine) idx,
enum { AT_ROUTINES(AT_ENUM) AT_NROUTINES };

// at_routine_name returns the symbol of routine i.
const char *at_routine_name(int i);

// at_routine_engine reports whether a selective run takes routine i
// through the engine (1) or only counts it (0).
int at_routine_engine(int i);

#include <stdint.h>
#include <mpi.h>

// The real routines, for Go (engine.go).
void at_real_dgemm(char ta, char tb, int m, int n, int k, double alpha, const double *a, int lda, const double *b,
	int ldb, double beta, double *c, int ldc);
int at_real_dpotrf(char uplo, int n, double *a, int lda);
void at_real_dsyrk(char uplo, char tr, int n, int k, double alpha, const double *a, int lda, double beta, double *c,
	int ldc);
void at_real_dtrxm(int solve, char side, char uplo, char ta, char diag, int m, int n, double alpha, const double *a,
	int lda, double *b, int ldb);
int at_real_dtrtri(char uplo, char diag, int n, double *a, int lda);
uintptr_t at_handle(MPI_Comm c);
MPI_Comm at_comm(uintptr_t h);
MPI_Comm at_null_comm(void);

// Point-to-point, for Go (p2p.go).
enum { AT_MODE_STANDARD, AT_MODE_READY, AT_MODE_SYNC, AT_MODE_BUFFERED };
int at_start_send(int mode, const void *b, int n, MPI_Datatype t, int d, int tag, MPI_Comm c, MPI_Request *q);
int at_skippable_type(MPI_Datatype t);
uintptr_t at_request_key(MPI_Request q);
int at_request_is_null(MPI_Request q);
uintptr_t atp_status_ignore(void);
void at_set_status(uintptr_t st, const MPI_Status *mine);
void at_set_bytes(uintptr_t st, long long n);
int at_wait_into(MPI_Request *q, uintptr_t st);
int at_recv_into(void *b, int n, MPI_Datatype t, int s, int tag, MPI_Comm c, uintptr_t st);
uintptr_t at_status_at(uintptr_t sts, int i);
int at_proc_null(void);
void at_pending_add(int d);
enum { AT_OP_GATHER, AT_OP_ALLGATHER, AT_OP_SCATTER, AT_OP_ALLTOALL };
// The v-collectives' arguments (p2p.c): counts and displacements of the
// side that has them, the other side's single count.
enum { AT_OP_ALLGATHERV, AT_OP_ALLTOALLV, AT_OP_GATHERV, AT_OP_SCATTERV };
struct at_vargs {
	int op;
	const void *sb;
	int sn;
	const int *scounts, *sdispls;
	MPI_Datatype st;
	void *rb;
	int rn;
	const int *rcounts, *rdispls;
	MPI_Datatype rt;
	int root;
	MPI_Comm c;
};
int at_vcall(struct at_vargs *a);
long long at_v_bytes(struct at_vargs *a);
int at_gathers(int op, uintptr_t sb, int sn, MPI_Datatype st, uintptr_t rb, int rn, MPI_Datatype rt, int root,
	MPI_Comm c);
uintptr_t atp_in_place(void);
int at_allreduce(uintptr_t sb, uintptr_t rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c);
int at_reduce(uintptr_t sb, uintptr_t rb, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c);

#endif
