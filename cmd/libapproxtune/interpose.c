// The interposers: each defines a BLAS, LAPACK or MPI entry point, counts the
// call and forwards it to the real routine (PMPI_* for MPI, the next
// definition in the link order, dlsym(RTLD_NEXT), for BLAS and LAPACK). A
// call made while another interposed call is running (a LAPACK routine
// calling BLAS, MPI calls made by the library itself) is forwarded without
// being counted: it is part of the outer call. Nothing here enters Go on
// the per-call path; MPI_Finalize hands the counts to Go (report.go).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <mpi.h>
#include "interpose.h"
#include "_cgo_export.h"

#define AT_NAME(idx, sym, engine) #sym,
static const char *at_names[] = { AT_ROUTINES(AT_NAME) };
#define AT_ENGINE(idx, sym, engine) engine,
static const char at_engine[] = { AT_ROUTINES(AT_ENGINE) };

const char *at_routine_name(int i) { return at_names[i]; }
int at_routine_engine(int i) { return at_engine[i]; }

static long long at_counts[AT_NROUTINES];
static __thread int at_depth;
static int at_initialized;

// at_run is the selective run in progress (a handle to Go's state), 0 when
// the launch is not one ($APPROXTUNE_RUN unset): then every call is only
// counted and forwarded.
static uintptr_t at_run;
static int at_skips; // the launch may skip kernels (approxtune_skipping)
static pthread_t at_main; // the thread that initialized MPI

// In a check (no run), what a launch would fail at, for the report: the
// calls of approxtune_begin and approxtune_end this rank made, and the
// first MPI routine a thread other than MPI's called (-1: none).
static long long at_marks[2];
static int at_foreign = -1;

// at_other_thread ends a selective run whose program called MPI routine idx
// from a thread other than the one that initialized MPI: the engine runs
// on that one thread, and a message another thread sends or receives
// behind its back unmatches the records every message travels with (a
// program with two threads calling MPI under MPI_THREAD_MULTIPLE was
// predicted 93-97% short, or crashed).
static void at_other_thread(int idx) {
	fprintf(stderr, "libapproxtune: %s was called from a thread other than the one that initialized MPI: "
		"approxtune tunes programs that make their MPI calls from one thread (BLAS and LAPACK calls from other "
		"threads, as in OpenMP regions, run as they are); a program calling MPI from several threads "
		"(MPI_THREAD_MULTIPLE) cannot be tuned\n", at_names[idx]);
	fflush(stderr);
	PMPI_Abort(MPI_COMM_WORLD, 70);
}

// at_count counts a call of routine idx: in a run, the thread that
// initialized MPI's only (OpenMP threads' BLAS calls had been counted too,
// racing, by different amounts in each launch: the counts then differed
// between launches, and the sweep warned that the program's control flow
// depends on what it computes); outside a run (a check), every thread's,
// atomically.
static void at_count(int idx) {
	if (at_run) {
		if (pthread_equal(pthread_self(), at_main)) at_counts[idx]++;
		return;
	}
	__atomic_fetch_add(&at_counts[idx], 1, __ATOMIC_RELAXED);
}

// at_enter says whether a call is the program's own (not made inside
// another interposed call), counts it and marks the library busy; at_leave
// ends what at_enter began. In a selective run, a call from a thread other
// than MPI's is not the engine's: a BLAS or LAPACK call runs as it is
// (uncounted: the counts are the main thread's), an MPI call ends the run.
static int at_enter(int idx) {
	if (at_depth++ > 0) return 0;
	if (at_run && !pthread_equal(pthread_self(), at_main)) {
		if (idx >= AT_MPI_SEND) at_other_thread(idx);
		return 0;
	}
	if (at_initialized && idx >= AT_MPI_SEND && at_foreign < 0 && !pthread_equal(pthread_self(), at_main)) {
		at_foreign = idx; // a check: reported, as a run would end here
	}
	at_count(idx);
	return 1;
}

static void at_leave(void) { at_depth--; }

// For p2p.c.
int at_busy_enter(int idx) { return at_enter(idx); }
void at_busy_leave(void) { at_leave(); }
uintptr_t at_current_run(void) { return at_run; }

static void *at_next(const char *sym) {
	void *f = dlsym(RTLD_NEXT, sym);
	if (f == NULL) {
		fprintf(stderr, "libapproxtune: %s is interposed but no library after it defines it\n", sym);
		abort();
	}
	return f;
}

// AT_VOID interposes a routine that returns nothing; AT_RET one that
// returns type ret.
#define AT_VOID(idx, sym, params, args) \
	void sym params { \
		static void (*real) params; \
		if (real == NULL) real = at_next(#sym); \
		if (at_depth++ == 0) at_count(idx); \
		real args; \
		at_depth--; \
	}
#define AT_RET(idx, ret, sym, params, args) \
	ret sym params { \
		static ret (*real) params; \
		if (real == NULL) real = at_next(#sym); \
		if (at_depth++ == 0) at_count(idx); \
		ret r = real args; \
		at_depth--; \
		return r; \
	}

// Fortran BLAS and LAPACK: character arguments carry hidden lengths after
// the others (gfortran's convention), passed on as they came.
typedef size_t fl;
AT_VOID(AT_DSYMM_F, dsymm_, (const char *side, const char *uplo, const int *m, const int *n, const double *alpha,
	const double *a, const int *lda, const double *b, const int *ldb, const double *beta, double *c,
	const int *ldc, fl l1, fl l2), (side, uplo, m, n, alpha, a, lda, b, ldb, beta, c, ldc, l1, l2))
AT_VOID(AT_DGETRF_F, dgetrf_, (const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info),
	(m, n, a, lda, ipiv, info))
AT_VOID(AT_DGEQRF_F, dgeqrf_, (const int *m, const int *n, double *a, const int *lda, double *tau, double *work,
	const int *lwork, int *info), (m, n, a, lda, tau, work, lwork, info))

// CBLAS and LAPACKE: enumerations travel as int.
AT_VOID(AT_CBLAS_DSYRK, cblas_dsyrk, (int order, int uplo, int tr, int n, int k, double alpha, const double *a,
	int lda, double beta, double *c, int ldc), (order, uplo, tr, n, k, alpha, a, lda, beta, c, ldc))
AT_VOID(AT_CBLAS_DTRSM, cblas_dtrsm, (int order, int side, int uplo, int ta, int diag, int m, int n,
	double alpha, const double *a, int lda, double *b, int ldb), (order, side, uplo, ta, diag, m, n, alpha, a, lda, b, ldb))
AT_RET(AT_LAPACKE_DPOTRF, int, LAPACKE_dpotrf, (int order, char uplo, int n, double *a, int lda),
	(order, uplo, n, a, lda))

// AT_MPI interposes an MPI routine: counted, then PMPI_*.
#define AT_MPI(idx, sym, params, args) \
	int MPI_##sym params { \
		if (at_depth++ == 0) at_count(idx); \
		int r = PMPI_##sym args; \
		at_depth--; \
		return r; \
	}



// at_started begins the selective run, if the launch is one, once MPI is up
// (once: a Fortran MPI_INIT may reach MPI_Init too).
static void at_started(void) {
	if (at_initialized) return;
	at_initialized = 1;
	at_main = pthread_self();
	if (getenv("APPROXTUNE_RUN") != NULL) {
		at_run = atBegin();
		at_skips = atSkipping(at_run);
	}
}

// at_finishing ends the selective run and reports the counts, before MPI
// ends (once).
static void at_finishing(void) {
	static int finished;
	if (finished || !at_initialized) return;
	finished = 1;
	if (at_run) {
		atEnd(at_run);
		at_run = 0;
	}
	int rank = 0, size = 1;
	long long sums[AT_NROUTINES];
	PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
	PMPI_Comm_size(MPI_COMM_WORLD, &size);
	// The ranks that marked the region's start and end, and those that
	// marked one more than once; the first foreign MPI routine's index.
	long long mine[4] = {at_marks[0] > 0, at_marks[0] > 1, at_marks[1] > 0, at_marks[1] > 1}, marks[4];
	int foreign = at_foreign, first = -1;
	if (PMPI_Reduce(at_counts, sums, AT_NROUTINES, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD) == MPI_SUCCESS &&
		PMPI_Reduce(mine, marks, 4, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD) == MPI_SUCCESS &&
		PMPI_Reduce(&foreign, &first, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD) == MPI_SUCCESS && rank == 0) {
		atReport(sums, AT_NROUTINES, size, marks, first);
	}
}

int MPI_Init(int *argc, char ***argv) {
	at_depth++;
	int r = PMPI_Init(argc, argv);
	if (r == MPI_SUCCESS) at_started();
	at_depth--;
	return r;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
	at_depth++;
	int r = PMPI_Init_thread(argc, argv, required, provided);
	if (r == MPI_SUCCESS) at_started();
	at_depth--;
	return r;
}

// MPI_Finalize sums every rank's counts on rank 0, which hands them to Go
// (atReport) before MPI ends.
int MPI_Finalize(void) {
	at_depth++;
	at_finishing();
	int r = PMPI_Finalize();
	at_depth--;
	return r;
}

// The routines the engine models. In a selective run the program's own call
// goes to Go (engine.go), which executes it through the engine or skips it;
// otherwise it is forwarded like the others.

typedef void (*dgemm_fn)(const char *, const char *, const int *, const int *, const int *, const double *,
	const double *, const int *, const double *, const int *, const double *, double *, const int *, fl, fl);
typedef void (*dpotrf_fn)(const char *, const int *, double *, const int *, int *, fl);
static dgemm_fn real_dgemm;
static dpotrf_fn real_dpotrf;

void at_real_dgemm(char ta, char tb, int m, int n, int k, double alpha, const double *a, int lda, const double *b,
	int ldb, double beta, double *c, int ldc) {
	if (real_dgemm == NULL) real_dgemm = (dgemm_fn)at_next("dgemm_");
	real_dgemm(&ta, &tb, &m, &n, &k, &alpha, a, &lda, b, &ldb, &beta, c, &ldc, 1, 1);
}

int at_real_dpotrf(char uplo, int n, double *a, int lda) {
	int info = 0;
	if (real_dpotrf == NULL) real_dpotrf = (dpotrf_fn)at_next("dpotrf_");
	real_dpotrf(&uplo, &n, a, &lda, &info, 1);
	return info;
}

void dgemm_(const char *ta, const char *tb, const int *m, const int *n, const int *k, const double *alpha,
	const double *a, const int *lda, const double *b, const int *ldb, const double *beta, double *c, const int *ldc,
	fl l1, fl l2) {
	if (real_dgemm == NULL) real_dgemm = (dgemm_fn)at_next("dgemm_");
	if (at_enter(AT_DGEMM_F) && at_run) {
		atGemm(at_run, 1, *ta, *tb, *m, *n, *k, *alpha, (double *)a, *lda, (double *)b, *ldb, *beta, c, *ldc);
	} else {
		real_dgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, l1, l2);
	}
	at_leave();
}

void cblas_dgemm(int order, int ta, int tb, int m, int n, int k, double alpha, const double *a, int lda,
	const double *b, int ldb, double beta, double *c, int ldc) {
	static void (*real)(int, int, int, int, int, int, double, const double *, int, const double *, int, double,
		double *, int);
	if (real == NULL) real = at_next("cblas_dgemm");
	if (at_enter(AT_CBLAS_DGEMM) && at_run) {
		// CBLAS: 101 row-major, 111 no transpose.
		atGemm(at_run, order != 101, ta == 111 ? 'N' : 'T', tb == 111 ? 'N' : 'T', m, n, k, alpha, (double *)a, lda,
			(double *)b, ldb, beta, c, ldc);
	} else {
		real(order, ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
	}
	at_leave();
}

void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info, fl l1) {
	if (real_dpotrf == NULL) real_dpotrf = (dpotrf_fn)at_next("dpotrf_");
	if (at_enter(AT_DPOTRF_F) && at_run) {
		*info = atPotrf(at_run, *uplo, *n, a, *lda);
	} else {
		real_dpotrf(uplo, n, a, lda, info, l1);
	}
	at_leave();
}

int MPI_Bcast(void *b, int n, MPI_Datatype t, int root, MPI_Comm c) {
	int r = at_enter(AT_MPI_BCAST) && at_run ? atBcast(at_run, b, n, t, root, c) : PMPI_Bcast(b, n, t, root, c);
	at_leave();
	return r;
}

// at_f_allreduce is set while mpi_allreduce_ runs and cleared by
// MPI_Allreduce: still set when the Fortran call returns, the Fortran
// layer went past the C interposer (PMPI_Allreduce: Open MPI's), and the
// Fortran interposer counts the call.
static __thread int at_f_allreduce;

int MPI_Allreduce(const void *sb, void *rb, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c) {
	at_f_allreduce = 0;
	int r = at_enter(AT_MPI_ALLREDUCE) && at_run ? atAllreduce(at_run, (uintptr_t)sb, (uintptr_t)rb, n, t, op, c)
		: PMPI_Allreduce(sb, rb, n, t, op, c);
	at_leave();
	return r;
}

int MPI_Barrier(MPI_Comm c) {
	int r = at_enter(AT_MPI_BARRIER) && at_run ? atBarrier(at_run, c) : PMPI_Barrier(c);
	at_leave();
	return r;
}

int MPI_Comm_split(MPI_Comm c, int color, int key, MPI_Comm *out) {
	int r = at_enter(AT_MPI_COMM_SPLIT) && at_run ? atSplit(at_run, c, color, key, out)
		: PMPI_Comm_split(c, color, key, out);
	at_leave();
	return r;
}

int MPI_Comm_dup(MPI_Comm c, MPI_Comm *out) {
	int r = at_enter(AT_MPI_COMM_DUP) && at_run ? atDup(at_run, c, out) : PMPI_Comm_dup(c, out);
	at_leave();
	return r;
}

// Communicators made by the other constructors: the engine adopts the new
// communicator when the engine knows its parent (atAdopt), so that its
// messages are modelled on every member alike. A freed communicator is
// forgotten first (its handle may come back for another).

int MPI_Comm_create(MPI_Comm c, MPI_Group g, MPI_Comm *out) {
	int r = PMPI_Comm_create(c, g, out);
	if (at_enter(AT_MPI_COMM_CREATE) && at_run && r == MPI_SUCCESS) atAdopt(at_run, c, *out);
	at_leave();
	return r;
}

int MPI_Comm_create_group(MPI_Comm c, MPI_Group g, int tag, MPI_Comm *out) {
	int r = PMPI_Comm_create_group(c, g, tag, out);
	if (at_enter(AT_MPI_COMM_CREATE_GROUP) && at_run && r == MPI_SUCCESS) atAdopt(at_run, c, *out);
	at_leave();
	return r;
}

int MPI_Comm_split_type(MPI_Comm c, int type, int key, MPI_Info info, MPI_Comm *out) {
	int r = PMPI_Comm_split_type(c, type, key, info, out);
	if (at_enter(AT_MPI_COMM_SPLIT_TYPE) && at_run && r == MPI_SUCCESS) atAdopt(at_run, c, *out);
	at_leave();
	return r;
}

int MPI_Cart_create(MPI_Comm c, int nd, const int *dims, const int *periods, int reorder, MPI_Comm *out) {
	int r = PMPI_Cart_create(c, nd, dims, periods, reorder, out);
	if (at_enter(AT_MPI_CART_CREATE) && at_run && r == MPI_SUCCESS) atAdopt(at_run, c, *out);
	at_leave();
	return r;
}

int MPI_Cart_sub(MPI_Comm c, const int *remain, MPI_Comm *out) {
	int r = PMPI_Cart_sub(c, remain, out);
	if (at_enter(AT_MPI_CART_SUB) && at_run && r == MPI_SUCCESS) atAdopt(at_run, c, *out);
	at_leave();
	return r;
}

int MPI_Comm_free(MPI_Comm *c) {
	if (at_enter(AT_MPI_COMM_FREE) && at_run) atForget(at_run, *c);
	int r = PMPI_Comm_free(c);
	at_leave();
	return r;
}

uintptr_t at_handle(MPI_Comm c) { return (uintptr_t)c; }
MPI_Comm at_comm(uintptr_t h) { return (MPI_Comm)h; }
MPI_Comm at_null_comm(void) { return MPI_COMM_NULL; }

typedef void (*dsyrk_fn)(const char *, const char *, const int *, const int *, const double *, const double *,
	const int *, const double *, double *, const int *, fl, fl);
typedef void (*dtrxm_fn)(const char *, const char *, const char *, const char *, const int *, const int *,
	const double *, const double *, const int *, double *, const int *, fl, fl, fl, fl);
typedef void (*dtrtri_fn)(const char *, const char *, const int *, double *, const int *, int *, fl, fl);
static dsyrk_fn real_dsyrk;
static dtrxm_fn real_dtrsm, real_dtrmm;
static dtrtri_fn real_dtrtri;

void at_real_dsyrk(char uplo, char tr, int n, int k, double alpha, const double *a, int lda, double beta, double *c,
	int ldc) {
	if (real_dsyrk == NULL) real_dsyrk = (dsyrk_fn)at_next("dsyrk_");
	real_dsyrk(&uplo, &tr, &n, &k, &alpha, a, &lda, &beta, c, &ldc, 1, 1);
}

void at_real_dtrxm(int solve, char side, char uplo, char ta, char diag, int m, int n, double alpha, const double *a,
	int lda, double *b, int ldb) {
	dtrxm_fn *real = solve ? &real_dtrsm : &real_dtrmm;
	if (*real == NULL) *real = (dtrxm_fn)at_next(solve ? "dtrsm_" : "dtrmm_");
	(*real)(&side, &uplo, &ta, &diag, &m, &n, &alpha, a, &lda, b, &ldb, 1, 1, 1, 1);
}

int at_real_dtrtri(char uplo, char diag, int n, double *a, int lda) {
	int info = 0;
	if (real_dtrtri == NULL) real_dtrtri = (dtrtri_fn)at_next("dtrtri_");
	real_dtrtri(&uplo, &diag, &n, a, &lda, &info, 1, 1);
	return info;
}

void dsyrk_(const char *uplo, const char *tr, const int *n, const int *k, const double *alpha, const double *a,
	const int *lda, const double *beta, double *c, const int *ldc, fl l1, fl l2) {
	if (real_dsyrk == NULL) real_dsyrk = (dsyrk_fn)at_next("dsyrk_");
	if (at_enter(AT_DSYRK_F) && at_run) {
		atSyrk(at_run, *uplo, *tr, *n, *k, *alpha, (double *)a, *lda, *beta, c, *ldc);
	} else {
		real_dsyrk(uplo, tr, n, k, alpha, a, lda, beta, c, ldc, l1, l2);
	}
	at_leave();
}

static void at_dtrxm(int solve, int idx, const char *side, const char *uplo, const char *ta, const char *diag,
	const int *m, const int *n, const double *alpha, const double *a, const int *lda, double *b, const int *ldb,
	fl l1, fl l2, fl l3, fl l4) {
	dtrxm_fn *real = solve ? &real_dtrsm : &real_dtrmm;
	if (*real == NULL) *real = (dtrxm_fn)at_next(solve ? "dtrsm_" : "dtrmm_");
	if (at_enter(idx) && at_run) {
		atTrxm(at_run, solve, *side, *uplo, *ta, *diag, *m, *n, *alpha, (double *)a, *lda, b, *ldb);
	} else {
		(*real)(side, uplo, ta, diag, m, n, alpha, a, lda, b, ldb, l1, l2, l3, l4);
	}
	at_leave();
}

void dtrsm_(const char *side, const char *uplo, const char *ta, const char *diag, const int *m, const int *n,
	const double *alpha, const double *a, const int *lda, double *b, const int *ldb, fl l1, fl l2, fl l3, fl l4) {
	at_dtrxm(1, AT_DTRSM_F, side, uplo, ta, diag, m, n, alpha, a, lda, b, ldb, l1, l2, l3, l4);
}

void dtrmm_(const char *side, const char *uplo, const char *ta, const char *diag, const int *m, const int *n,
	const double *alpha, const double *a, const int *lda, double *b, const int *ldb, fl l1, fl l2, fl l3, fl l4) {
	at_dtrxm(0, AT_DTRMM_F, side, uplo, ta, diag, m, n, alpha, a, lda, b, ldb, l1, l2, l3, l4);
}

void dtrtri_(const char *uplo, const char *diag, const int *n, double *a, const int *lda, int *info, fl l1, fl l2) {
	if (real_dtrtri == NULL) real_dtrtri = (dtrtri_fn)at_next("dtrtri_");
	if (at_enter(AT_DTRTRI_F) && at_run) {
		*info = atTrtri(at_run, *uplo, *diag, *n, a, *lda);
	} else {
		real_dtrtri(uplo, diag, n, a, lda, info, l1, l2);
	}
	at_leave();
}

// Fortran MPI (mpif.h and the mpi module, as gfortran names them): MPI_Init
// and MPI_Finalize, which start and end the selective run whichever layer
// the MPI library's Fortran MPI_INIT goes through. Open MPI's Fortran layer
// calls PMPI_* and never reaches the C interposers above: fortran.c
// interposes the rest of its routines. MPICH's calls the C MPI_* routines.

void mpi_init_(MPI_Fint *ierr) {
	static void (*real)(MPI_Fint *);
	if (real == NULL) real = at_next("mpi_init_");
	at_depth++;
	real(ierr);
	if (*ierr == MPI_SUCCESS) at_started();
	at_depth--;
}

void mpi_init_thread_(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr) {
	static void (*real)(MPI_Fint *, MPI_Fint *, MPI_Fint *);
	if (real == NULL) real = at_next("mpi_init_thread_");
	at_depth++;
	real(required, provided, ierr);
	if (*ierr == MPI_SUCCESS) at_started();
	at_depth--;
}

void mpi_finalize_(MPI_Fint *ierr) {
	static void (*real)(MPI_Fint *);
	if (real == NULL) real = at_next("mpi_finalize_");
	at_depth++;
	at_finishing();
	real(ierr);
	at_depth--;
}

#if !defined(OPEN_MPI)
// mpi_allreduce_ is forwarded (Open MPI's is fortran.c's): its send buffer
// may be Fortran's MPI_IN_PLACE, which only the Fortran layer translates.
// A Fortran layer that calls MPI_Allreduce (MPICH's) reaches the C
// interposer, which counts and models the call; one that calls
// PMPI_Allreduce does not, and the call is counted here, after it ran
// (at_f_allreduce). Entered before forwarding, the library had been busy
// for the C interposer, and under MPICH a Fortran program's allreduces
// always ran.
void mpi_allreduce_(void *sb, void *rb, MPI_Fint *n, MPI_Fint *t, MPI_Fint *op, MPI_Fint *c, MPI_Fint *ierr) {
	static void (*real)(void *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *);
	if (real == NULL) real = at_next("mpi_allreduce_");
	at_f_allreduce = at_depth == 0;
	real(sb, rb, n, t, op, c, ierr);
	if (at_f_allreduce) {
		at_f_allreduce = 0;
		at_enter(AT_MPI_ALLREDUCE);
		at_leave();
	}
}
#endif

// The timed region, when the program marks it (approxtune.h): every rank
// calls approxtune_begin, then approxtune_end. Outside a selective or
// reference launch they do nothing.
void approxtune_begin(void) {
	if (!at_run && at_initialized) __atomic_fetch_add(&at_marks[0], 1, __ATOMIC_RELAXED);
	if (at_run && at_depth == 0) {
		at_depth++;
		atRegionBegin(at_run);
		at_depth--;
	}
}

// approxtune_skipping says whether this launch may skip kernels (a
// selective one): its results are meaningless. It holds after MPI_Finalize
// too, where a program may decide its exit status.
int approxtune_skipping(void) { return at_skips; }

// approxtune_cut_short says whether a search's round has cut this
// selective launch short: its prediction has passed the configurations the
// round keeps, and the program may stop its work. A collective over
// MPI_COMM_WORLD: every rank calls it at the same point of its work (an
// iteration's end) and, on 1, stops it there on every rank. 0 outside a
// search's selective launch, where it costs nothing.
int approxtune_cut_short(void) {
	int cut = 0;
	// MPI's thread alone: the engine's reduction from another thread
	// would run beside the main thread's calls.
	if (at_run && at_depth == 0 && pthread_equal(pthread_self(), at_main)) {
		at_depth++;
		cut = atCutShort(at_run);
		at_depth--;
	}
	return cut;
}

void approxtune_end(void) {
	if (!at_run && at_initialized) __atomic_fetch_add(&at_marks[1], 1, __ATOMIC_RELAXED);
	if (at_run && at_depth == 0) {
		at_depth++;
		atRegionEnd(at_run);
		at_depth--;
	}
}
