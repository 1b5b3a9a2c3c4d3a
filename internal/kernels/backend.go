package kernels

import (
	"fmt"
	"os"
	"strings"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack"
)

// Backend is a BLAS/LAPACK implementation.
//
// Every method has the semantics of the method of the same name of gonum's
// blas.Float64 / lapack.Float64 implementations (gonum.org/v1/gonum/blas/gonum
// and gonum.org/v1/gonum/lapack/gonum), on row-major matrices, except that the
// backend manages workspace itself (Dgeqrf, Dlarfb) and Dgeqrf accepts
// len(tau) >= min(m, n). Invalid arguments (bad flags, negative dimensions, a
// leading dimension smaller than the number of columns, slices too short for
// the matrices they hold) cause a panic.
//
// A Backend keeps workspace between calls and is not safe for concurrent use:
// use one Backend per goroutine.
type Backend interface {
	// Name describes the implementation, for example
	// "OpenBLAS 0.3.21 DYNAMIC_ARCH ... (cblas/lapacke, 1 thread)" or
	// "gonum v0.17.0 (pure Go)" (the gonum version appears when the binary's
	// build information records it).
	Name() string

	// Dgemm computes C = alpha·op(A)·op(B) + beta·C where op(A) is m×k and
	// op(B) is k×n.
	Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int)
	// Dsyrk computes the ul triangle of C = alpha·A·Aᵀ + beta·C (t ==
	// NoTrans, A is n×k) or C = alpha·Aᵀ·A + beta·C (t == Trans, A is k×n).
	Dsyrk(ul blas.Uplo, t blas.Transpose, n, k int, alpha float64, a []float64, lda int, beta float64, c []float64, ldc int)
	// Dtrsm solves op(A)·X = alpha·B (side Left) or X·op(A) = alpha·B (side
	// Right) for the m×n matrix X, which overwrites B.
	Dtrsm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int)
	// Dtrmm computes B = alpha·op(A)·B (side Left) or B = alpha·B·op(A)
	// (side Right) for triangular A and m×n B.
	Dtrmm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int)
	// Dpotrf computes the Cholesky factorization of the n×n symmetric
	// positive definite A stored in its ul triangle, in place (A = Uᵀ·U or
	// A = L·Lᵀ). It returns false if A is not positive definite.
	Dpotrf(ul blas.Uplo, n int, a []float64, lda int) (ok bool)
	// Dtrtri computes the inverse of the n×n triangular A in place. It
	// returns false if A is singular.
	Dtrtri(ul blas.Uplo, d blas.Diag, n int, a []float64, lda int) (ok bool)
	// Dgeqrf computes the QR factorization A = Q·R of the m×n A in place: R
	// in the upper triangle, the Householder vectors below the diagonal and
	// their scalar factors in tau. len(tau) must be at least min(m, n).
	Dgeqrf(m, n int, a []float64, lda int, tau []float64)
	// Dlarft forms the k×k triangular factor T of the block reflector
	// defined by the k reflectors in v and tau.
	Dlarft(direct lapack.Direct, store lapack.StoreV, n, k int, v []float64, ldv int, tau []float64, t []float64, ldt int)
	// Dlarfb applies the block reflector H (or Hᵀ) defined by v and t to the
	// m×n matrix C from the left or the right.
	Dlarfb(s blas.Side, trans blas.Transpose, direct lapack.Direct, store lapack.StoreV, m, n, k int, v []float64, ldv int, t []float64, ldt int, c []float64, ldc int)
}

// Backend names accepted by NewBackend and the BlasEnv variable.
const (
	OpenBLAS = "openblas"
	Gonum    = "gonum"
)

// BlasEnv is the environment variable read by DefaultBackend: "openblas" or
// "gonum" selects that backend; unset or empty selects the default.
const BlasEnv = "APPROXTUNE_BLAS"

// Backends returns the names of the backends compiled into this binary, the
// default first ("openblas" when compiled in, then "gonum").
func Backends() []string {
	if haveOpenBLAS {
		return []string{OpenBLAS, Gonum}
	}
	return []string{Gonum}
}

// NewBackend returns a new backend by name ("openblas" or "gonum").
//
// Creating an OpenBLAS backend sets OpenBLAS's (process-wide) thread count
// to 1.
func NewBackend(name string) (Backend, error) {
	switch name {
	case Gonum:
		return newGonumBackend(), nil
	case OpenBLAS:
		if !haveOpenBLAS {
			return nil, fmt.Errorf("kernels: backend %q is not compiled into this binary (it needs cgo and no noopenblas build tag); valid backends: %s",
				name, strings.Join(Backends(), ", "))
		}
		return newOpenBLASBackend()
	}
	return nil, fmt.Errorf("kernels: unknown backend %q; valid backends: %s, %s", name, OpenBLAS, Gonum)
}

// DefaultBackend returns the backend selected by the APPROXTUNE_BLAS
// environment variable: "openblas" or "gonum" select that backend; when it is
// unset or empty, OpenBLAS is used if compiled in and gonum otherwise. Any
// other value, or "openblas" in a binary built without it, is an error naming
// the valid values.
func DefaultBackend() (Backend, error) {
	name := os.Getenv(BlasEnv)
	switch name {
	case "":
		name = Backends()[0]
	case OpenBLAS, Gonum:
	default:
		return nil, fmt.Errorf("kernels: %s=%q: valid values are %q and %q", BlasEnv, name, OpenBLAS, Gonum)
	}
	b, err := NewBackend(name)
	if err != nil {
		return nil, fmt.Errorf("kernels: %s=%q: %w", BlasEnv, name, err)
	}
	return b, nil
}
