package kernels

import (
	"runtime/debug"

	"gonum.org/v1/gonum/blas"
	gblas "gonum.org/v1/gonum/blas/gonum"
	"gonum.org/v1/gonum/lapack"
	glapack "gonum.org/v1/gonum/lapack/gonum"
)

// gonumBackend is the pure-Go Backend built on gonum's BLAS and LAPACK
// implementations. It keeps a workspace slice that grows as needed, so it is
// not safe for concurrent use.
//
// Note that gonum's Dgemm (and the BLAS-3 routines built on it) distributes
// large products over up to GOMAXPROCS goroutines.
type gonumBackend struct {
	blas   gblas.Implementation
	lapack glapack.Implementation
	name   string
	work   []float64
}

func newGonumBackend() *gonumBackend {
	return &gonumBackend{name: gonumName()}
}

// gonumName returns "gonum <version> (pure Go)" with the version of the
// gonum module linked into the binary, or "gonum (pure Go)" when the build
// information does not record it (as in test binaries).
func gonumName() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path != "gonum.org/v1/gonum" {
				continue
			}
			if dep.Replace != nil {
				dep = dep.Replace
			}
			if dep.Version != "" && dep.Version != "(devel)" {
				return "gonum " + dep.Version + " (pure Go)"
			}
		}
	}
	return "gonum (pure Go)"
}

// workspace returns a scratch slice of length at least n.
func (g *gonumBackend) workspace(n int) []float64 {
	n = max(n, 1)
	if cap(g.work) < n {
		g.work = make([]float64, n)
	}
	g.work = g.work[:n]
	return g.work
}

func (g *gonumBackend) Name() string { return g.name }

func (g *gonumBackend) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	g.blas.Dgemm(tA, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func (g *gonumBackend) Dsyrk(ul blas.Uplo, t blas.Transpose, n, k int, alpha float64, a []float64, lda int, beta float64, c []float64, ldc int) {
	g.blas.Dsyrk(ul, t, n, k, alpha, a, lda, beta, c, ldc)
}

func (g *gonumBackend) Dtrsm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	g.blas.Dtrsm(s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
}

func (g *gonumBackend) Dtrmm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	g.blas.Dtrmm(s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
}

func (g *gonumBackend) Dpotrf(ul blas.Uplo, n int, a []float64, lda int) bool {
	return g.lapack.Dpotrf(ul, n, a, lda)
}

func (g *gonumBackend) Dtrtri(ul blas.Uplo, d blas.Diag, n int, a []float64, lda int) bool {
	return g.lapack.Dtrtri(ul, d, n, a, lda)
}

func (g *gonumBackend) Dgeqrf(m, n int, a []float64, lda int, tau []float64) {
	checkGeqrf(m, n, tau)
	tau = tau[:min(m, n)] // gonum requires len(tau) == min(m, n)
	query := g.workspace(1)
	g.lapack.Dgeqrf(m, n, a, lda, tau, query, -1)
	lwork := max(int(query[0]), n, 1)
	g.lapack.Dgeqrf(m, n, a, lda, tau, g.workspace(lwork), lwork)
}

func (g *gonumBackend) Dlarft(direct lapack.Direct, store lapack.StoreV, n, k int, v []float64, ldv int, tau []float64, t []float64, ldt int) {
	g.lapack.Dlarft(direct, store, n, k, v, ldv, tau, t, ldt)
}

func (g *gonumBackend) Dlarfb(s blas.Side, t blas.Transpose, direct lapack.Direct, store lapack.StoreV, m, n, k int, v []float64, ldv int, tt []float64, ldt int, c []float64, ldc int) {
	// work is n×k (side Left) or m×k (side Right) with stride k.
	nw := n
	if s == blas.Right {
		nw = m
	}
	ldwork := max(k, 1)
	g.lapack.Dlarfb(s, t, direct, store, m, n, k, v, ldv, tt, ldt, c, ldc, g.workspace(max(nw, 1)*ldwork), ldwork)
}

// checkGeqrf validates the arguments of Dgeqrf that a backend uses before the
// underlying implementation checks the rest.
func checkGeqrf(m, n int, tau []float64) {
	switch {
	case m < 0:
		panic("kernels: dgeqrf: m < 0")
	case n < 0:
		panic("kernels: dgeqrf: n < 0")
	case len(tau) < min(m, n):
		panic("kernels: dgeqrf: len(tau) < min(m, n)")
	}
}
