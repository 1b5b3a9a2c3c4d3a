//go:build cgo && !noopenblas

package kernels

/*
#cgo pkg-config: openblas lapacke
#include <cblas.h>
#include <lapacke.h>

// The wrappers take the BLAS/LAPACK character flags (already validated on
// the Go side) and plain ints (range-checked on the Go side).

// kern_simd says which of the vector extensions OpenBLAS's x86-64 kernel
// sets are written for this CPU and its OS support: 2 for AVX-512 (F, BW, DQ
// and VL, SkylakeX's kernels), 1 for AVX2 with FMA (Haswell's), 0 for
// neither or another architecture.
static int kern_simd(void) {
#if defined(__x86_64__) && defined(__GNUC__)
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
			__builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
		return 2;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		return 1;
#endif
	return 0;
}

static CBLAS_TRANSPOSE kern_trans(char t) { return t == 'N' ? CblasNoTrans : CblasTrans; }
static CBLAS_UPLO kern_uplo(char u) { return u == 'U' ? CblasUpper : CblasLower; }
static CBLAS_SIDE kern_side(char s) { return s == 'L' ? CblasLeft : CblasRight; }
static CBLAS_DIAG kern_diag(char d) { return d == 'N' ? CblasNonUnit : CblasUnit; }

static void kern_dgemm(char ta, char tb, int m, int n, int k, double alpha,
		const double *a, int lda, const double *b, int ldb, double beta, double *c, int ldc) {
	cblas_dgemm(CblasRowMajor, kern_trans(ta), kern_trans(tb), m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static void kern_dsyrk(char ul, char t, int n, int k, double alpha, const double *a, int lda,
		double beta, double *c, int ldc) {
	cblas_dsyrk(CblasRowMajor, kern_uplo(ul), kern_trans(t), n, k, alpha, a, lda, beta, c, ldc);
}

static void kern_dtrsm(char s, char ul, char ta, char d, int m, int n, double alpha,
		const double *a, int lda, double *b, int ldb) {
	cblas_dtrsm(CblasRowMajor, kern_side(s), kern_uplo(ul), kern_trans(ta), kern_diag(d), m, n, alpha, a, lda, b, ldb);
}

static void kern_dtrmm(char s, char ul, char ta, char d, int m, int n, double alpha,
		const double *a, int lda, double *b, int ldb) {
	cblas_dtrmm(CblasRowMajor, kern_side(s), kern_uplo(ul), kern_trans(ta), kern_diag(d), m, n, alpha, a, lda, b, ldb);
}

// The LAPACK wrappers use the column-major (pass-through, no copy, no
// allocation) LAPACKE _work entry points on the transposed view of the
// row-major data; the Go side maps the flags accordingly.

static int kern_dpotrf_cm(char ul, int n, double *a, int lda) {
	return (int)LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, ul, n, a, lda);
}

static int kern_dtrtri_cm(char ul, char d, int n, double *a, int lda) {
	return (int)LAPACKE_dtrtri_work(LAPACK_COL_MAJOR, ul, d, n, a, lda);
}

static int kern_dgelqf_cm(int m, int n, double *a, int lda, double *tau, double *work, int lwork) {
	return (int)LAPACKE_dgelqf_work(LAPACK_COL_MAJOR, m, n, a, lda, tau, work, lwork);
}

static int kern_dlarft_cm(char direct, char store, int n, int k, const double *v, int ldv,
		const double *tau, double *t, int ldt) {
	return (int)LAPACKE_dlarft_work(LAPACK_COL_MAJOR, direct, store, n, k, v, ldv, tau, t, ldt);
}

static int kern_dlarfb_cm(char side, char trans, char direct, char store, int m, int n, int k,
		const double *v, int ldv, const double *t, int ldt, double *c, int ldc, double *work, int ldwork) {
	return (int)LAPACKE_dlarfb_work(LAPACK_COL_MAJOR, side, trans, direct, store, m, n, k,
		v, ldv, t, ldt, c, ldc, work, ldwork);
}
*/
import "C"

import (
	"fmt"
	"math"
	"strings"
	"unsafe"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack"
)

// haveOpenBLAS reports whether the OpenBLAS backend is compiled in.
const haveOpenBLAS = true

// openblasBackend is the Backend that calls OpenBLAS through CBLAS (row-major
// natively) and LAPACKE.
//
// LAPACK routines are column-major. Rather than LAPACKE's row-major mode,
// which copies (transposes) every matrix argument into freshly allocated
// buffers, the backend calls the column-major LAPACKE _work routines on the
// transposed view of the row-major data, which needs neither copies nor
// allocations:
//
//   - potrf/trtri: a row-major upper (lower) triangle is a column-major
//     lower (upper) triangle of the transpose, and the Cholesky factor /
//     inverse of the transpose is the transpose of the factor / inverse.
//   - geqrf: the row-major m×n A is the column-major n×m Aᵀ, and the LQ
//     factorization (dgelqf) of Aᵀ = L·Q yields A = Qᵀ·Lᵀ with exactly
//     dgeqrf's storage: R = Lᵀ in the upper triangle of A, the Householder
//     vectors below the diagonal (columns of A) and the same tau.
//   - larft/larfb: column-wise stored reflectors in row-major order are
//     row-wise stored reflectors of the column-major view (and vice versa);
//     C·H = (Hᵀ·Cᵀ)ᵀ swaps side and transposition. Only the small k×k T is
//     transposed, into a workspace of the backend.
//
// Workspace (for dgelqf, dlarfb and the transposed T) is kept between calls;
// the backend is not safe for concurrent use.
type openblasBackend struct {
	config string
	core   string    // openblas_get_corename: the kernel set in use
	work   []float64 // dgelqf / dlarfb workspace
	tbuf   []float64 // k×k column-major copy of T

	// Cached dgelqf workspace query.
	lqM, lqN, lqWork int
}

// newOpenBLASBackend returns an OpenBLAS backend and sets OpenBLAS's
// (process-wide) number of threads to 1.
func newOpenBLASBackend() (Backend, error) {
	C.openblas_set_num_threads(1)
	if n := int(C.openblas_get_num_threads()); n != 1 {
		return nil, fmt.Errorf("kernels: openblas_set_num_threads(1) left %d threads", n)
	}
	return &openblasBackend{config: strings.TrimSpace(C.GoString(C.openblas_get_config())),
		core: strings.TrimSpace(C.GoString(C.openblas_get_corename()))}, nil
}

// coreChoice returns the name of the kernel set OpenBLAS uses, what the CPU
// could run, and whether OpenBLAS is a DYNAMIC_ARCH build (coreChooser).
func (o *openblasBackend) coreChoice() (string, simd, bool) {
	return o.core, simd(C.kern_simd()), strings.Contains(o.config, "DYNAMIC_ARCH")
}

// openblasThreads returns OpenBLAS's current thread count.
func openblasThreads() int { return int(C.openblas_get_num_threads()) }

func (o *openblasBackend) Name() string {
	threads := openblasThreads()
	plural := "s"
	if threads == 1 {
		plural = ""
	}
	return fmt.Sprintf("%s (cblas/lapacke, %d thread%s)", o.config, threads, plural)
}

// ptr returns a C pointer to the first element of s, or nil when s is empty.
func ptr(s []float64) *C.double {
	if len(s) == 0 {
		return nil
	}
	return (*C.double)(unsafe.Pointer(unsafe.SliceData(s)))
}

// grow returns a slice of length max(n, 1), reusing buf's backing array
// when its capacity suffices.
func grow(buf []float64, n int) []float64 {
	n = max(n, 1)
	if cap(buf) < n {
		return make([]float64, n)
	}
	return buf[:n]
}

func (o *openblasBackend) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	const fn = "dgemm"
	checkTrans(fn, tA)
	checkTrans(fn, tB)
	checkDim(fn, "m", m)
	checkDim(fn, "n", n)
	checkDim(fn, "k", k)
	ra, ca := m, k
	if tA != blas.NoTrans {
		ra, ca = k, m
	}
	rb, cb := k, n
	if tB != blas.NoTrans {
		rb, cb = n, k
	}
	checkMatrix(fn, "a", ra, ca, a, lda)
	checkMatrix(fn, "b", rb, cb, b, ldb)
	checkMatrix(fn, "c", m, n, c, ldc)
	if m == 0 || n == 0 {
		return
	}
	C.kern_dgemm(C.char(tA), C.char(tB), C.int(m), C.int(n), C.int(k), C.double(alpha),
		ptr(a), C.int(lda), ptr(b), C.int(ldb), C.double(beta), ptr(c), C.int(ldc))
}

func (o *openblasBackend) Dsyrk(ul blas.Uplo, t blas.Transpose, n, k int, alpha float64, a []float64, lda int, beta float64, c []float64, ldc int) {
	const fn = "dsyrk"
	checkUplo(fn, ul)
	checkTrans(fn, t)
	checkDim(fn, "n", n)
	checkDim(fn, "k", k)
	ra, ca := n, k
	if t != blas.NoTrans {
		ra, ca = k, n
	}
	checkMatrix(fn, "a", ra, ca, a, lda)
	checkMatrix(fn, "c", n, n, c, ldc)
	if n == 0 {
		return
	}
	C.kern_dsyrk(C.char(ul), C.char(t), C.int(n), C.int(k), C.double(alpha),
		ptr(a), C.int(lda), C.double(beta), ptr(c), C.int(ldc))
}

// checkTriangular validates the arguments shared by Dtrsm and Dtrmm.
func checkTriangular(fn string, s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, a []float64, lda int, b []float64, ldb int) {
	checkSide(fn, s)
	checkUplo(fn, ul)
	checkTrans(fn, tA)
	checkDiag(fn, d)
	checkDim(fn, "m", m)
	checkDim(fn, "n", n)
	k := m
	if s == blas.Right {
		k = n
	}
	checkMatrix(fn, "a", k, k, a, lda)
	checkMatrix(fn, "b", m, n, b, ldb)
}

func (o *openblasBackend) Dtrsm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	checkTriangular("dtrsm", s, ul, tA, d, m, n, a, lda, b, ldb)
	if m == 0 || n == 0 {
		return
	}
	C.kern_dtrsm(C.char(s), C.char(ul), C.char(tA), C.char(d), C.int(m), C.int(n), C.double(alpha),
		ptr(a), C.int(lda), ptr(b), C.int(ldb))
}

func (o *openblasBackend) Dtrmm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	checkTriangular("dtrmm", s, ul, tA, d, m, n, a, lda, b, ldb)
	if m == 0 || n == 0 {
		return
	}
	C.kern_dtrmm(C.char(s), C.char(ul), C.char(tA), C.char(d), C.int(m), C.int(n), C.double(alpha),
		ptr(a), C.int(lda), ptr(b), C.int(ldb))
}

// flipUplo returns the triangle of the transposed view.
func flipUplo(ul blas.Uplo) C.char {
	if ul == blas.Upper {
		return 'L'
	}
	return 'U'
}

func (o *openblasBackend) Dpotrf(ul blas.Uplo, n int, a []float64, lda int) bool {
	const fn = "dpotrf"
	checkUplo(fn, ul)
	checkDim(fn, "n", n)
	checkMatrix(fn, "a", n, n, a, lda)
	if n == 0 {
		return true
	}
	info := C.kern_dpotrf_cm(flipUplo(ul), C.int(n), ptr(a), C.int(lda))
	checkInfo(fn, info)
	return info == 0
}

func (o *openblasBackend) Dtrtri(ul blas.Uplo, d blas.Diag, n int, a []float64, lda int) bool {
	const fn = "dtrtri"
	checkUplo(fn, ul)
	checkDiag(fn, d)
	checkDim(fn, "n", n)
	checkMatrix(fn, "a", n, n, a, lda)
	if n == 0 {
		return true
	}
	info := C.kern_dtrtri_cm(flipUplo(ul), C.char(d), C.int(n), ptr(a), C.int(lda))
	checkInfo(fn, info)
	return info == 0
}

func (o *openblasBackend) Dgeqrf(m, n int, a []float64, lda int, tau []float64) {
	const fn = "dgeqrf"
	checkGeqrf(m, n, tau)
	checkDim(fn, "m", m)
	checkDim(fn, "n", n)
	checkMatrix(fn, "a", m, n, a, lda)
	if m == 0 || n == 0 {
		return
	}
	// Column-major view: Aᵀ is n×m with leading dimension lda.
	if o.lqM != n || o.lqN != m {
		o.work = grow(o.work, 1)
		info := C.kern_dgelqf_cm(C.int(n), C.int(m), ptr(a), C.int(lda), ptr(tau), ptr(o.work), -1)
		checkInfo(fn, info)
		o.lqM, o.lqN, o.lqWork = n, m, max(int(o.work[0]), n, 1)
	}
	lwork := o.lqWork
	o.work = grow(o.work, lwork)
	info := C.kern_dgelqf_cm(C.int(n), C.int(m), ptr(a), C.int(lda), ptr(tau), ptr(o.work), C.int(lwork))
	checkInfo(fn, info)
}

// flipStore returns the reflector storage of the transposed view.
func flipStore(s lapack.StoreV) C.char {
	if s == lapack.ColumnWise {
		return 'R'
	}
	return 'C'
}

func (o *openblasBackend) Dlarft(direct lapack.Direct, store lapack.StoreV, n, k int, v []float64, ldv int, tau []float64, t []float64, ldt int) {
	const fn = "dlarft"
	checkDirect(fn, direct)
	checkStore(fn, store)
	checkDim(fn, "n", n)
	checkDim(fn, "k", k)
	if k < 1 {
		panic("kernels: dlarft: k < 1")
	}
	rv, cv := n, k
	if store == lapack.RowWise {
		rv, cv = k, n
	}
	checkLd(fn, "v", cv, ldv)
	if len(tau) < k {
		panic(fmt.Sprintf("kernels: dlarft: len(tau) = %d < k = %d", len(tau), k))
	}
	checkLd(fn, "t", k, ldt)
	if n == 0 {
		return
	}
	checkMatrix(fn, "v", rv, cv, v, ldv)
	checkMatrix(fn, "t", k, k, t, ldt)

	o.tbuf = grow(o.tbuf, k*k)
	tb := o.tbuf
	info := C.kern_dlarft_cm(C.char(direct), flipStore(store), C.int(n), C.int(k), ptr(v), C.int(ldv),
		ptr(tau), ptr(tb), C.int(k))
	checkInfo(fn, info)
	// tb holds T column-major; copy the triangle of T into row-major t.
	for i := 0; i < k; i++ {
		lo, hi := i, k // upper triangle (Forward)
		if direct == lapack.Backward {
			lo, hi = 0, i+1 // lower triangle
		}
		row := t[i*ldt : i*ldt+k]
		for j := lo; j < hi; j++ {
			row[j] = tb[j*k+i]
		}
	}
}

func (o *openblasBackend) Dlarfb(s blas.Side, trans blas.Transpose, direct lapack.Direct, store lapack.StoreV, m, n, k int, v []float64, ldv int, t []float64, ldt int, c []float64, ldc int) {
	const fn = "dlarfb"
	checkSide(fn, s)
	if trans != blas.NoTrans && trans != blas.Trans {
		panic(fmt.Sprintf("kernels: %s: bad trans %q", fn, byte(trans)))
	}
	checkDirect(fn, direct)
	checkStore(fn, store)
	checkDim(fn, "m", m)
	checkDim(fn, "n", n)
	checkDim(fn, "k", k)
	nv := m // order of the reflectors
	if s == blas.Right {
		nv = n
	}
	rv, cv := nv, k
	if store == lapack.RowWise {
		rv, cv = k, nv
	}
	checkLd(fn, "v", cv, ldv)
	checkLd(fn, "t", k, ldt)
	checkLd(fn, "c", n, ldc)
	if m == 0 || n == 0 || k == 0 {
		return
	}
	checkMatrix(fn, "v", rv, cv, v, ldv)
	checkMatrix(fn, "t", k, k, t, ldt)
	checkMatrix(fn, "c", m, n, c, ldc)

	// Column-major view: Cᵀ (n×m). H·C = (Cᵀ·Hᵀ)ᵀ and C·H = (Hᵀ·Cᵀ)ᵀ, so
	// side and transposition swap; T is needed in column-major order.
	sideCM, transCM := C.char('R'), C.char('T')
	ldwork := n // LDWORK >= M' = n for SIDE' = 'R'
	if s == blas.Right {
		sideCM, ldwork = 'L', m // LDWORK >= N' = m for SIDE' = 'L'
	}
	if trans == blas.Trans {
		transCM = 'N'
	}
	o.tbuf = grow(o.tbuf, k*k)
	tb := o.tbuf
	for i := 0; i < k; i++ {
		row := t[i*ldt : i*ldt+k]
		for j, x := range row {
			tb[j*k+i] = x
		}
	}
	o.work = grow(o.work, ldwork*k)
	info := C.kern_dlarfb_cm(sideCM, transCM, C.char(direct), flipStore(store), C.int(n), C.int(m), C.int(k),
		ptr(v), C.int(ldv), ptr(tb), C.int(k), ptr(c), C.int(ldc), ptr(o.work), C.int(ldwork))
	checkInfo(fn, info)
}

// checkInfo panics if LAPACK reported an illegal argument (info < 0), which
// the Go-side checks should have excluded.
func checkInfo(fn string, info C.int) {
	if info < 0 {
		panic(fmt.Sprintf("kernels: %s: LAPACK rejected argument %d", fn, -int(info)))
	}
}

// checkDim panics unless 0 <= x <= MaxInt32 (the range of a C int).
func checkDim(fn, name string, x int) {
	if x < 0 || x > math.MaxInt32 {
		panic(fmt.Sprintf("kernels: %s: %s = %d out of range [0, MaxInt32]", fn, name, x))
	}
}

// checkLd panics unless max(1, cols) <= ld <= MaxInt32.
func checkLd(fn, name string, cols, ld int) {
	if ld < max(1, cols) || ld > math.MaxInt32 {
		panic(fmt.Sprintf("kernels: %s: ld%s = %d < max(1, %d columns) or > MaxInt32", fn, name, ld, cols))
	}
}

// checkMatrix panics unless s, with leading dimension ld, can hold a
// row-major rows×cols matrix.
func checkMatrix(fn, name string, rows, cols int, s []float64, ld int) {
	checkLd(fn, name, cols, ld)
	if rows > 0 && cols > 0 && len(s) < (rows-1)*ld+cols {
		panic(fmt.Sprintf("kernels: %s: %s too short: len %d < %d for %d×%d with ld %d",
			fn, name, len(s), (rows-1)*ld+cols, rows, cols, ld))
	}
}

func checkTrans(fn string, t blas.Transpose) {
	if t != blas.NoTrans && t != blas.Trans && t != blas.ConjTrans {
		panic(fmt.Sprintf("kernels: %s: bad transpose %q", fn, byte(t)))
	}
}

func checkUplo(fn string, ul blas.Uplo) {
	if ul != blas.Upper && ul != blas.Lower {
		panic(fmt.Sprintf("kernels: %s: bad uplo %q", fn, byte(ul)))
	}
}

func checkSide(fn string, s blas.Side) {
	if s != blas.Left && s != blas.Right {
		panic(fmt.Sprintf("kernels: %s: bad side %q", fn, byte(s)))
	}
}

func checkDiag(fn string, d blas.Diag) {
	if d != blas.NonUnit && d != blas.Unit {
		panic(fmt.Sprintf("kernels: %s: bad diag %q", fn, byte(d)))
	}
}

func checkDirect(fn string, d lapack.Direct) {
	if d != lapack.Forward && d != lapack.Backward {
		panic(fmt.Sprintf("kernels: %s: bad direct %q", fn, byte(d)))
	}
}

func checkStore(fn string, s lapack.StoreV) {
	if s != lapack.ColumnWise && s != lapack.RowWise {
		panic(fmt.Sprintf("kernels: %s: bad store %q", fn, byte(s)))
	}
}
