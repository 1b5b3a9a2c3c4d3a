package kernels

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas"
)

// pad is the value stored in the padding columns (j >= cols) of test
// matrices; kernels must never write there.
const pad = -777.25

// mat is a row-major test matrix with padding.
type mat struct {
	r, c, ld int
	d        []float64
}

// newMat returns an r×c matrix with ld = c+3 whose entries are uniform in
// [-1, 1] and whose padding holds pad.
func newMat(rng *rand.Rand, r, c int) mat {
	m := mat{r: r, c: c, ld: c + 3}
	m.d = make([]float64, max(r*m.ld, 1))
	for i := range m.d {
		m.d[i] = pad
	}
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			m.d[i*m.ld+j] = 2*rng.Float64() - 1
		}
	}
	return m
}

func (m mat) at(i, j int) float64     { return m.d[i*m.ld+j] }
func (m mat) set(i, j int, v float64) { m.d[i*m.ld+j] = v }

func (m mat) clone() mat {
	m.d = append([]float64(nil), m.d...)
	return m
}

// dense returns the entries as [][]float64 (rows of length c).
func (m mat) dense() [][]float64 {
	out := make([][]float64, m.r)
	for i := range out {
		out[i] = append([]float64(nil), m.d[i*m.ld:i*m.ld+m.c]...)
	}
	return out
}

// checkPadding fails the test if a padding entry of m was modified.
func checkPadding(t *testing.T, what string, m mat) {
	t.Helper()
	for i := 0; i < m.r; i++ {
		for j := m.c; j < m.ld; j++ {
			if i*m.ld+j < len(m.d) && m.d[i*m.ld+j] != pad {
				t.Fatalf("%s: padding (%d,%d) modified: %v", what, i, j, m.d[i*m.ld+j])
			}
		}
	}
}

func zeros(r, c int) [][]float64 {
	out := make([][]float64, r)
	for i := range out {
		out[i] = make([]float64, c)
	}
	return out
}

func identity(n int) [][]float64 {
	out := zeros(n, n)
	for i := range out {
		out[i][i] = 1
	}
	return out
}

func transpose(a [][]float64) [][]float64 {
	if len(a) == 0 {
		return nil
	}
	out := zeros(len(a[0]), len(a))
	for i := range a {
		for j := range a[i] {
			out[j][i] = a[i][j]
		}
	}
	return out
}

func mul(a, b [][]float64) [][]float64 {
	out := zeros(len(a), len(b[0]))
	for i := range a {
		for l := range b {
			for j := range b[0] {
				out[i][j] += a[i][l] * b[l][j]
			}
		}
	}
	return out
}

func op(t blas.Transpose, a [][]float64) [][]float64 {
	if t == blas.NoTrans {
		return a
	}
	return transpose(a)
}

func frob(a [][]float64) float64 {
	var s float64
	for i := range a {
		for _, x := range a[i] {
			s += x * x
		}
	}
	return math.Sqrt(s)
}

// relDiff returns ||a-b||_F / max(||b||_F, 1e-300).
func relDiff(a, b [][]float64) float64 {
	var s float64
	for i := range a {
		for j := range a[i] {
			d := a[i][j] - b[i][j]
			s += d * d
		}
	}
	return math.Sqrt(s) / max(frob(b), 1e-300)
}

// triangle returns the effective triangular matrix of the ul triangle of the
// n×n m (zeros in the other triangle, ones on the diagonal if unit).
func triangle(m mat, ul blas.Uplo, d blas.Diag) [][]float64 {
	out := zeros(m.r, m.c)
	for i := 0; i < m.r; i++ {
		for j := 0; j < m.c; j++ {
			if (ul == blas.Upper && j >= i) || (ul == blas.Lower && j <= i) {
				out[i][j] = m.at(i, j)
			}
		}
		if d == blas.Unit {
			out[i][i] = 1
		}
	}
	return out
}

// backendsUnderTest returns one fresh backend per compiled-in backend.
func backendsUnderTest(t *testing.T) map[string]Backend {
	t.Helper()
	out := make(map[string]Backend)
	for _, name := range Backends() {
		b, err := NewBackend(name)
		if err != nil {
			t.Fatalf("NewBackend(%q): %v", name, err)
		}
		out[name] = b
	}
	return out
}

// expectPanic fails the test unless f panics with a message containing
// want.
func expectPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		r := recover()
		if r == nil {
			t.Fatalf("no panic, want one containing %q", want)
		}
		msg, _ := r.(string)
		if err, ok := r.(error); ok {
			msg = err.Error()
		}
		if !containsFold(msg, want) {
			t.Fatalf("panic %q does not contain %q", msg, want)
		}
	}()
	f()
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}
