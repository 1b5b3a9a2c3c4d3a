package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
)

var transposes = []blas.Transpose{blas.NoTrans, blas.Trans}

const tol = 1e-12

func TestGemm(t *testing.T) {
	for name, be := range backendsUnderTest(t) {
		k := New(be)
		rng := rand.New(rand.NewPCG(1, 2))
		for _, dims := range [][3]int{{5, 7, 3}, {17, 9, 13}, {1, 1, 1}, {33, 65, 40}} {
			m, n, kk := dims[0], dims[1], dims[2]
			for _, tA := range transposes {
				for _, tB := range transposes {
					t.Run(fmt.Sprintf("%s/%c%c/%dx%dx%d", name, tA, tB, m, n, kk), func(t *testing.T) {
						ra, ca := m, kk
						if tA == blas.Trans {
							ra, ca = kk, m
						}
						rb, cb := kk, n
						if tB == blas.Trans {
							rb, cb = n, kk
						}
						a, b, c := newMat(rng, ra, ca), newMat(rng, rb, cb), newMat(rng, m, n)
						alpha, beta := 1.5, -0.5
						want := mul(op(tA, a.dense()), op(tB, b.dense()))
						c0 := c.dense()
						for i := range want {
							for j := range want[i] {
								want[i][j] = alpha*want[i][j] + beta*c0[i][j]
							}
						}
						k.Gemm(tA, tB, m, n, kk, alpha, a.d, a.ld, b.d, b.ld, beta, c.d, c.ld)
						if d := relDiff(c.dense(), want); d > tol {
							t.Errorf("relative error %g", d)
						}
						checkPadding(t, "c", c)
					})
				}
			}
		}
	}
}

func TestSyrk(t *testing.T) {
	for name, be := range backendsUnderTest(t) {
		k := New(be)
		rng := rand.New(rand.NewPCG(3, 4))
		n, kk := 11, 6
		for _, ul := range []blas.Uplo{blas.Upper, blas.Lower} {
			for _, tr := range transposes {
				t.Run(fmt.Sprintf("%s/%c%c", name, ul, tr), func(t *testing.T) {
					ra, ca := n, kk
					if tr == blas.Trans {
						ra, ca = kk, n
					}
					a, c := newMat(rng, ra, ca), newMat(rng, n, n)
					c0 := c.dense()
					alpha, beta := 0.75, 2.0
					ad := a.dense()
					prod := mul(op(tr, ad), transpose(op(tr, ad)))
					k.Syrk(ul, tr, n, kk, alpha, a.d, a.ld, beta, c.d, c.ld)
					got := c.dense()
					for i := 0; i < n; i++ {
						for j := 0; j < n; j++ {
							inTri := (ul == blas.Upper && j >= i) || (ul == blas.Lower && j <= i)
							want := c0[i][j]
							if inTri {
								want = alpha*prod[i][j] + beta*c0[i][j]
							}
							if d := got[i][j] - want; d > tol || d < -tol {
								t.Fatalf("c(%d,%d) = %v, want %v (in triangle: %v)", i, j, got[i][j], want, inTri)
							}
						}
					}
					checkPadding(t, "c", c)
				})
			}
		}
	}
}

// triangularCase enumerates all side/uplo/trans/diag combinations.
func triangularCases(f func(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag)) {
	for _, s := range []blas.Side{blas.Left, blas.Right} {
		for _, ul := range []blas.Uplo{blas.Upper, blas.Lower} {
			for _, tA := range transposes {
				for _, d := range []blas.Diag{blas.NonUnit, blas.Unit} {
					f(s, ul, tA, d)
				}
			}
		}
	}
}

// triangularA returns an na×na matrix whose diagonal is dominant (or, for a
// unit diagonal, holds a huge value that must be ignored, with small
// off-diagonal entries).
func triangularA(rng *rand.Rand, na int, d blas.Diag) mat {
	a := newMat(rng, na, na)
	for i := 0; i < na; i++ {
		if d == blas.Unit {
			// Keep the unit triangular matrix well conditioned.
			for j := 0; j < na; j++ {
				a.set(i, j, a.at(i, j)/float64(na))
			}
			a.set(i, i, 1e6) // must not be referenced
		} else {
			a.set(i, i, float64(na)+a.at(i, i))
		}
	}
	return a
}

func TestTrsm(t *testing.T) {
	for name, be := range backendsUnderTest(t) {
		k := New(be)
		rng := rand.New(rand.NewPCG(5, 6))
		m, n := 9, 6
		triangularCases(func(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag) {
			t.Run(fmt.Sprintf("%s/%c%c%c%c", name, s, ul, tA, d), func(t *testing.T) {
				na := m
				if s == blas.Right {
					na = n
				}
				a, b := triangularA(rng, na, d), newMat(rng, m, n)
				a0 := a.clone()
				alpha := -1.25
				b0 := b.dense()
				k.Trsm(s, ul, tA, d, m, n, alpha, a.d, a.ld, b.d, b.ld)
				x := b.dense()
				opA := op(tA, triangle(a, ul, d))
				var lhs [][]float64
				if s == blas.Left {
					lhs = mul(opA, x)
				} else {
					lhs = mul(x, opA)
				}
				for i := range b0 {
					for j := range b0[i] {
						b0[i][j] *= alpha
					}
				}
				if r := relDiff(lhs, b0); r > tol {
					t.Errorf("||op(A)·X − alpha·B|| / ||alpha·B|| = %g", r)
				}
				if relDiff(a.dense(), a0.dense()) != 0 {
					t.Error("A modified")
				}
				checkPadding(t, "b", b)
			})
		})
	}
}

func TestTrmm(t *testing.T) {
	for name, be := range backendsUnderTest(t) {
		k := New(be)
		rng := rand.New(rand.NewPCG(7, 8))
		m, n := 8, 5
		triangularCases(func(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag) {
			t.Run(fmt.Sprintf("%s/%c%c%c%c", name, s, ul, tA, d), func(t *testing.T) {
				na := m
				if s == blas.Right {
					na = n
				}
				a, b := triangularA(rng, na, d), newMat(rng, m, n)
				alpha := 0.5
				opA := op(tA, triangle(a, ul, d))
				var want [][]float64
				if s == blas.Left {
					want = mul(opA, b.dense())
				} else {
					want = mul(b.dense(), opA)
				}
				for i := range want {
					for j := range want[i] {
						want[i][j] *= alpha
					}
				}
				k.Trmm(s, ul, tA, d, m, n, alpha, a.d, a.ld, b.d, b.ld)
				if r := relDiff(b.dense(), want); r > tol {
					t.Errorf("relative error %g", r)
				}
				checkPadding(t, "b", b)
			})
		})
	}
}

// TestBackendPanics checks that invalid sizes are caught before any memory
// is touched out of bounds.
func TestBackendPanics(t *testing.T) {
	for name, be := range backendsUnderTest(t) {
		t.Run(name, func(t *testing.T) {
			a := make([]float64, 16)
			short := make([]float64, 15)
			expectPanic(t, "", func() { be.Dgemm(blas.NoTrans, blas.NoTrans, 4, 4, 4, 1, a, 4, a, 4, 0, short, 4) })
			expectPanic(t, "", func() { be.Dgemm(blas.NoTrans, blas.NoTrans, 4, 4, 4, 1, a, 3, a, 4, 0, a, 4) })
			expectPanic(t, "", func() { be.Dgemm('X', blas.NoTrans, 4, 4, 4, 1, a, 4, a, 4, 0, a, 4) })
			expectPanic(t, "", func() { be.Dsyrk(blas.Upper, blas.NoTrans, 4, 4, 1, short, 4, 0, a, 4) })
			expectPanic(t, "", func() { be.Dtrsm(blas.Left, blas.Upper, blas.NoTrans, blas.NonUnit, 4, 4, 1, a, 4, short, 4) })
			expectPanic(t, "", func() { be.Dtrmm(blas.Right, blas.Lower, blas.NoTrans, blas.Unit, 4, 4, 1, short, 4, a, 4) })
			expectPanic(t, "", func() { be.Dpotrf(blas.Lower, 4, short, 4) })
			expectPanic(t, "", func() { be.Dtrtri(blas.Lower, blas.NonUnit, 4, short, 4) })
			expectPanic(t, "", func() { be.Dgeqrf(4, 4, short, 4, make([]float64, 4)) })
			expectPanic(t, "", func() { be.Dgeqrf(4, 4, a, 4, make([]float64, 3)) })
			expectPanic(t, "", func() { be.Dlarft('F', 'C', 4, 2, make([]float64, 7), 2, a, a, 2) })
			expectPanic(t, "", func() { be.Dlarfb(blas.Left, blas.NoTrans, 'F', 'C', 4, 4, 2, a, 2, a, 2, short, 4) })
		})
	}
}
