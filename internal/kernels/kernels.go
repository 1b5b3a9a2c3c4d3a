package kernels

import (
	"errors"
	"fmt"
	"math"
	"time"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack"
)

// ErrNotPositiveDefinite is wrapped by the error Kernels.Potrf returns when
// the matrix is not positive definite.
var ErrNotPositiveDefinite = errors.New("matrix is not positive definite")

// ErrSingular is wrapped by the error Kernels.Trtri returns when the matrix
// is singular.
var ErrSingular = errors.New("matrix is singular")

// Call is one kernel invocation as an Interceptor sees it: its Signature plus
// (unexported) the backend, arguments and result needed to run it and, for
// factorizations, to reset its input.
//
// A *Call handed to Interceptor.Kernel is only valid until Kernel returns:
// Kernels reuses Call values, so an interceptor must not retain the pointer
// (copy the Signature if it needs it later). Sig is informational; changing
// it does not change what Run executes.
type Call struct {
	// Sig identifies the routine, its dimensions and flags.
	Sig Signature

	be     Backend
	rt     Routine
	tA, tB blas.Transpose // tA is also syrk's and larfb's trans
	ul     blas.Uplo
	side   blas.Side
	diag   blas.Diag
	direct lapack.Direct
	store  lapack.StoreV
	m, n   int
	k      int
	alpha  float64
	beta   float64
	a      []float64 // A; V for larft and larfb
	lda    int
	b      []float64 // B; T for larfb
	ldb    int
	c      []float64 // C; T for larft
	ldc    int
	tau    []float64
	ok     bool // result of potrf and trtri
}

// Run executes the kernel on the backend. It may be called more than once
// (for example to time repetitions); a factorization then operates on its
// own output unless Reset is called in between, and an accumulating update
// (beta != 0) accumulates again.
func (c *Call) Run() {
	switch c.rt {
	case Gemm:
		c.be.Dgemm(c.tA, c.tB, c.m, c.n, c.k, c.alpha, c.a, c.lda, c.b, c.ldb, c.beta, c.c, c.ldc)
	case Syrk:
		c.be.Dsyrk(c.ul, c.tA, c.n, c.k, c.alpha, c.a, c.lda, c.beta, c.c, c.ldc)
	case Trsm:
		c.be.Dtrsm(c.side, c.ul, c.tA, c.diag, c.m, c.n, c.alpha, c.a, c.lda, c.b, c.ldb)
	case Trmm:
		c.be.Dtrmm(c.side, c.ul, c.tA, c.diag, c.m, c.n, c.alpha, c.a, c.lda, c.b, c.ldb)
	case Potrf:
		c.ok = c.be.Dpotrf(c.ul, c.n, c.a, c.lda)
	case Trtri:
		c.ok = c.be.Dtrtri(c.ul, c.diag, c.n, c.a, c.lda)
	case Geqrf:
		c.be.Dgeqrf(c.m, c.n, c.a, c.lda, c.tau)
	case Larft:
		c.be.Dlarft(c.direct, c.store, c.n, c.k, c.a, c.lda, c.tau, c.c, c.ldc)
	case Larfb:
		c.be.Dlarfb(c.side, c.tA, c.direct, c.store, c.m, c.n, c.k, c.a, c.lda, c.b, c.ldb, c.c, c.ldc)
	case Spin:
		spin(time.Duration(c.alpha * float64(time.Second)))
	default:
		panic("kernels: Run on an empty Call (an Interceptor must not retain a *Call after Kernel returns)")
	}
}

// Seconds is a Spin call's duration; 0 for the other routines, whose cost
// follows from their Signature (Signature.Flops).
func (c *Call) Seconds() float64 {
	if c.rt == Spin {
		return c.alpha
	}
	return 0
}

// Resettable reports whether the call is a factorization whose input Reset
// can regenerate: Potrf, Trtri and Geqrf.
func (c *Call) Resettable() bool {
	switch c.rt {
	case Potrf, Trtri, Geqrf:
		return true
	}
	return false
}

// Reset overwrites the call's input block with a deterministic,
// well-conditioned matrix of the same shape, so that Run cannot fail or
// produce NaN or Inf whatever the block held before (including the output
// of a previous Run):
//
//   - Potrf: the referenced triangle of a symmetric, strictly diagonally
//     dominant (hence positive definite) matrix with off-diagonal entries
//     1/(1+|i−j|) and diagonal n+1.
//   - Trtri: the referenced triangle of a triangular matrix with diagonal
//     n+1 and off-diagonal entries 1/(1+|i−j|); with a unit diagonal the
//     off-diagonal entries are divided by n+1 so that the strictly
//     triangular part has ∞-norm below 1 (the diagonal is not written).
//   - Geqrf: the m×n matrix I + E with E(i,j) = 1/((2+i+j)·max(m,n)), whose
//     norm is at most 1/2, so all singular values lie in [1/2, 3/2].
//
// Entries outside the referenced part (the other triangle, the padding
// beyond the columns in each row) are not touched. Reset is a no-op for the
// other routines.
func (c *Call) Reset() {
	switch c.rt {
	case Potrf:
		resetTriangle(c.ul, false, c.n, c.a, c.lda)
	case Trtri:
		resetTriangle(c.ul, c.diag == blas.Unit, c.n, c.a, c.lda)
	case Geqrf:
		resetGeneral(c.m, c.n, c.a, c.lda)
	}
}

// Suspect reports whether a resettable call's input block holds a value that
// no full run of a well-scaled factorization produces: NaN, ±Inf, or a
// nonzero magnitude outside [2^-500, 2^500]. A process that skipped nothing
// itself can still receive such data from one that did, and LAPACK's
// factorizations take a different time on it (OpenBLAS's dnrm2, for one,
// works in x87 arithmetic on some CPUs, many times slower on NaN).
// Only the referenced part is read, as Reset writes it; Suspect is false
// for the other routines.
func (c *Call) Suspect() bool {
	switch c.rt {
	case Potrf:
		return suspectTriangle(c.ul, false, c.n, c.a, c.lda)
	case Trtri:
		return suspectTriangle(c.ul, c.diag == blas.Unit, c.n, c.a, c.lda)
	case Geqrf:
		if c.n == 0 {
			return false
		}
		for i := 0; i < c.m; i++ {
			if suspectRow(c.a[i*c.lda : i*c.lda+c.n]) {
				return true
			}
		}
	}
	return false
}

// triangleCols returns the columns [lo, hi) of row i that the ul triangle
// of an n×n matrix references: the diagonal included, unless unit.
func triangleCols(ul blas.Uplo, unit bool, i, n int) (lo, hi int) {
	lo, hi = 0, i+1
	if ul == blas.Upper {
		lo, hi = i, n
	}
	if unit {
		if ul == blas.Upper {
			lo++
		} else {
			hi--
		}
	}
	return lo, hi
}

// suspectTriangle is Suspect on the ul triangle of the n×n a (the diagonal
// left out when unit).
func suspectTriangle(ul blas.Uplo, unit bool, n int, a []float64, lda int) bool {
	for i := 0; i < n; i++ {
		lo, hi := triangleCols(ul, unit, i, n)
		if suspectRow(a[i*lda+lo : i*lda+hi]) {
			return true
		}
	}
	return false
}

// suspectRow reports whether x holds NaN, ±Inf or a nonzero magnitude
// outside [2^-500, 2^500]. The comparisons are false for NaN, so it fails
// the range test.
func suspectRow(x []float64) bool {
	const lo, hi = 0x1p-500, 0x1p500
	for _, v := range x {
		if a := math.Abs(v); !(a <= hi) || (a < lo && a != 0) {
			return true
		}
	}
	return false
}

// resetTriangle fills the ul triangle of the n×n a as described in Reset.
func resetTriangle(ul blas.Uplo, unit bool, n int, a []float64, lda int) {
	if n == 0 {
		return
	}
	_ = a[(n-1)*lda+n-1] // bounds check once
	diag := float64(n + 1)
	scale := 1.0
	if unit {
		scale = 1 / diag
	}
	for i := 0; i < n; i++ {
		lo, hi := triangleCols(ul, unit, i, n)
		row := a[i*lda : i*lda+n]
		for j := lo; j < hi; j++ {
			if j == i {
				row[j] = diag
				continue
			}
			d := i - j
			if d < 0 {
				d = -d
			}
			row[j] = scale / float64(1+d)
		}
	}
}

// resetGeneral fills the m×n a with I + E as described in Reset.
func resetGeneral(m, n int, a []float64, lda int) {
	if m == 0 || n == 0 {
		return
	}
	_ = a[(m-1)*lda+n-1] // bounds check once
	s := 1 / float64(max(m, n))
	for i := 0; i < m; i++ {
		row := a[i*lda : i*lda+n]
		for j := range row {
			row[j] = s / float64(2+i+j)
		}
		if i < n {
			row[i]++
		}
	}
}

// Interceptor decides what happens to each kernel call. Kernel may run the
// call (c.Run(), typically timing it), reset and run it, or skip it; it must
// not retain c after returning. A skipped call leaves its outputs untouched,
// and a skipped Potrf or Trtri reports success.
type Interceptor interface {
	Kernel(c *Call)
}

// Kernels is the entry point workloads call: each method describes its
// invocation as a Call and passes it to the installed Interceptor, or runs it
// directly on the backend when there is none. Arguments have the semantics of
// the corresponding Backend method.
//
// A Kernels is not safe for concurrent use. Its methods may be re-entered
// from an Interceptor (for example to run a calibration kernel), each nested
// invocation getting its own Call.
type Kernels struct {
	be    Backend
	ic    Interceptor
	calls []*Call // reusable Calls, one per nesting depth
	depth int     // number of calls in flight
}

// New returns Kernels that run on backend b, without an interceptor.
func New(b Backend) *Kernels {
	if b == nil {
		panic("kernels: New with a nil Backend")
	}
	return &Kernels{be: b, calls: []*Call{new(Call)}}
}

// Backend returns the backend the kernels run on.
func (k *Kernels) Backend() Backend { return k.be }

// SetInterceptor installs i; nil removes the interceptor, so that calls go
// straight to the backend.
func (k *Kernels) SetInterceptor(i Interceptor) { k.ic = i }

// call returns the Call for the next invocation: cleared, with its backend
// set and its result preset to success (so that a skipped call succeeds).
func (k *Kernels) call() *Call {
	if k.depth == len(k.calls) {
		k.calls = append(k.calls, new(Call))
	}
	c := k.calls[k.depth]
	k.depth++
	c.be, c.ok = k.be, true
	return c
}

// do runs c directly or through the interceptor, then releases it (so that
// it keeps no references to the caller's matrices, even if the kernel
// panics). It returns the call's result: false if a Potrf or Trtri ran and
// failed.
func (k *Kernels) do(c *Call) bool {
	defer k.release(c)
	if k.ic == nil {
		c.Run()
	} else {
		k.ic.Kernel(c)
	}
	return c.ok
}

// release clears c and returns it for reuse.
func (k *Kernels) release(c *Call) {
	*c = Call{}
	k.depth--
}

// transFlag returns FlagTransA if t transposes.
func transFlag(t blas.Transpose) uint8 {
	if t == blas.NoTrans {
		return 0
	}
	return FlagTransA
}

func uploFlag(ul blas.Uplo) uint8 {
	if ul == blas.Lower {
		return FlagLower
	}
	return 0
}

func sideFlag(s blas.Side) uint8 {
	if s == blas.Right {
		return FlagRight
	}
	return 0
}

func diagFlag(d blas.Diag) uint8 {
	if d == blas.Unit {
		return FlagUnit
	}
	return 0
}

func reflectorFlags(direct lapack.Direct, store lapack.StoreV) uint8 {
	var f uint8
	if direct == lapack.Backward {
		f |= FlagBackward
	}
	if store == lapack.RowWise {
		f |= FlagRowWise
	}
	return f
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C (see Backend.Dgemm).
func (k *Kernels) Gemm(tA, tB blas.Transpose, m, n, kk int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	cl := k.call()
	cl.Sig = Signature{Routine: Gemm, Flags: transFlag(tA) | transFlag(tB)<<1, M: int32(m), N: int32(n), K: int32(kk)}
	cl.rt, cl.tA, cl.tB = Gemm, tA, tB
	cl.m, cl.n, cl.k, cl.alpha, cl.beta = m, n, kk, alpha, beta
	cl.a, cl.lda, cl.b, cl.ldb, cl.c, cl.ldc = a, lda, b, ldb, c, ldc
	k.do(cl)
}

// Syrk computes the ul triangle of C = alpha·A·Aᵀ + beta·C or
// alpha·Aᵀ·A + beta·C (see Backend.Dsyrk).
func (k *Kernels) Syrk(ul blas.Uplo, t blas.Transpose, n, kk int, alpha float64, a []float64, lda int, beta float64, c []float64, ldc int) {
	cl := k.call()
	cl.Sig = Signature{Routine: Syrk, Flags: uploFlag(ul) | transFlag(t), N: int32(n), K: int32(kk)}
	cl.rt, cl.ul, cl.tA = Syrk, ul, t
	cl.n, cl.k, cl.alpha, cl.beta = n, kk, alpha, beta
	cl.a, cl.lda, cl.c, cl.ldc = a, lda, c, ldc
	k.do(cl)
}

// triangular fills the fields shared by Trsm and Trmm.
func (k *Kernels) triangular(r Routine, s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	cl := k.call()
	cl.Sig = Signature{Routine: r, Flags: sideFlag(s) | uploFlag(ul) | transFlag(tA) | diagFlag(d), M: int32(m), N: int32(n)}
	cl.rt, cl.side, cl.ul, cl.tA, cl.diag = r, s, ul, tA, d
	cl.m, cl.n, cl.alpha = m, n, alpha
	cl.a, cl.lda, cl.b, cl.ldb = a, lda, b, ldb
	k.do(cl)
}

// Trsm solves op(A)·X = alpha·B or X·op(A) = alpha·B, X overwriting B (see
// Backend.Dtrsm).
func (k *Kernels) Trsm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	k.triangular(Trsm, s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
}

// Trmm computes B = alpha·op(A)·B or B = alpha·B·op(A) (see Backend.Dtrmm).
func (k *Kernels) Trmm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	k.triangular(Trmm, s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
}

// Potrf computes the Cholesky factorization of the n×n symmetric matrix
// stored in the ul triangle of a, in place. It returns an error wrapping
// ErrNotPositiveDefinite if the matrix is not positive definite, and nil if
// the interceptor skipped the call.
func (k *Kernels) Potrf(ul blas.Uplo, n int, a []float64, lda int) error {
	cl := k.call()
	cl.Sig = Signature{Routine: Potrf, Flags: uploFlag(ul), N: int32(n)}
	cl.rt, cl.ul, cl.n, cl.a, cl.lda = Potrf, ul, n, a, lda
	if !k.do(cl) {
		return fmt.Errorf("kernels: potrf (uplo %c) of %d×%d matrix: %w", byte(ul), n, n, ErrNotPositiveDefinite)
	}
	return nil
}

// Trtri computes the inverse of the n×n triangular matrix a in place. It
// returns an error wrapping ErrSingular if the matrix is singular, and nil if
// the interceptor skipped the call.
func (k *Kernels) Trtri(ul blas.Uplo, d blas.Diag, n int, a []float64, lda int) error {
	cl := k.call()
	cl.Sig = Signature{Routine: Trtri, Flags: uploFlag(ul) | diagFlag(d), N: int32(n)}
	cl.rt, cl.ul, cl.diag, cl.n, cl.a, cl.lda = Trtri, ul, d, n, a, lda
	if !k.do(cl) {
		return fmt.Errorf("kernels: trtri (uplo %c, diag %c) of %d×%d matrix: %w", byte(ul), byte(d), n, n, ErrSingular)
	}
	return nil
}

// Geqrf computes the QR factorization of the m×n matrix a in place (see
// Backend.Dgeqrf); len(tau) must be at least min(m, n).
func (k *Kernels) Geqrf(m, n int, a []float64, lda int, tau []float64) {
	cl := k.call()
	cl.Sig = Signature{Routine: Geqrf, M: int32(m), N: int32(n)}
	cl.rt, cl.m, cl.n, cl.a, cl.lda, cl.tau = Geqrf, m, n, a, lda, tau
	k.do(cl)
}

// Larft forms the triangular factor T of a block reflector (see
// Backend.Dlarft).
func (k *Kernels) Larft(direct lapack.Direct, store lapack.StoreV, n, kk int, v []float64, ldv int, tau, t []float64, ldt int) {
	cl := k.call()
	cl.Sig = Signature{Routine: Larft, Flags: reflectorFlags(direct, store), N: int32(n), K: int32(kk)}
	cl.rt, cl.direct, cl.store = Larft, direct, store
	cl.n, cl.k, cl.a, cl.lda, cl.tau, cl.c, cl.ldc = n, kk, v, ldv, tau, t, ldt
	k.do(cl)
}

// Larfb applies a block reflector to the m×n matrix c (see Backend.Dlarfb).
func (k *Kernels) Larfb(s blas.Side, trans blas.Transpose, direct lapack.Direct, store lapack.StoreV, m, n, kk int, v []float64, ldv int, t []float64, ldt int, c []float64, ldc int) {
	cl := k.call()
	cl.Sig = Signature{Routine: Larfb, Flags: sideFlag(s) | transFlag(trans) | reflectorFlags(direct, store), M: int32(m), N: int32(n), K: int32(kk)}
	cl.rt, cl.side, cl.tA, cl.direct, cl.store = Larfb, s, trans, direct, store
	cl.m, cl.n, cl.k = m, n, kk
	cl.a, cl.lda, cl.b, cl.ldb, cl.c, cl.ldc = v, ldv, t, ldt, c, ldc
	k.do(cl)
}

// spinTail is how long before its end a Spin stops sleeping and busy-waits.
const spinTail = 200 * time.Microsecond

// spin waits for d: it sleeps until spinTail before the end, then busy-waits.
// Sleeping keeps ranks that share a core (an oversubscribed node) from
// stealing each other's time slices, which would stretch every duration;
// the busy tail makes the end precise.
func spin(d time.Duration) {
	end := time.Now().Add(d)
	if d > spinTail {
		time.Sleep(d - spinTail)
	}
	for time.Now().Before(end) {
	}
}

// Spin waits for the given number of seconds (see spin). It is the kernel of
// the synthetic workload: its signature is (spin, id), so calls with the same
// id share statistics whatever their durations, which lets tests give a
// kernel a known time distribution.
func (k *Kernels) Spin(id int, seconds float64) {
	cl := k.call()
	cl.Sig = Signature{Routine: Spin, M: int32(id)}
	cl.rt, cl.alpha = Spin, seconds
	k.do(cl)
}
