package kernels

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack"
)

// spd returns an n×n symmetric positive definite matrix M·Mᵀ + n·I.
func spd(rng *rand.Rand, n int) mat {
	m := newMat(rng, n, n)
	p := mul(m.dense(), transpose(m.dense()))
	a := newMat(rng, n, n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			a.set(i, j, p[i][j])
		}
		a.set(i, i, a.at(i, i)+float64(n))
	}
	return a
}

func TestPotrf(t *testing.T) {
	for name, be := range backendsUnderTest(t) {
		k := New(be)
		rng := rand.New(rand.NewPCG(9, 10))
		for _, n := range []int{1, 7, 40, 130} {
			for _, ul := range []blas.Uplo{blas.Upper, blas.Lower} {
				t.Run(fmt.Sprintf("%s/%c/n=%d", name, ul, n), func(t *testing.T) {
					a := spd(rng, n)
					a0 := a.dense()
					if err := k.Potrf(ul, n, a.d, a.ld); err != nil {
						t.Fatal(err)
					}
					f := triangle(a, ul, blas.NonUnit)
					var rec [][]float64
					if ul == blas.Lower {
						rec = mul(f, transpose(f)) // L·Lᵀ
					} else {
						rec = mul(transpose(f), f) // Uᵀ·U
					}
					if r := relDiff(rec, a0); r > tol {
						t.Errorf("||A − factor product|| / ||A|| = %g", r)
					}
					// The other triangle is not referenced.
					for i := 0; i < n; i++ {
						for j := 0; j < n; j++ {
							other := (ul == blas.Lower && j > i) || (ul == blas.Upper && j < i)
							if other && a.at(i, j) != a0[i][j] {
								t.Fatalf("(%d,%d) outside the triangle modified", i, j)
							}
						}
					}
					checkPadding(t, "a", a)
				})
			}
		}
		t.Run(name+"/notPD", func(t *testing.T) {
			n := 6
			a := spd(rng, n)
			a.set(3, 3, -1)
			err := k.Potrf(blas.Lower, n, a.d, a.ld)
			if !errors.Is(err, ErrNotPositiveDefinite) {
				t.Fatalf("err = %v, want ErrNotPositiveDefinite", err)
			}
			if !strings.Contains(err.Error(), "6×6") {
				t.Errorf("error %q does not name n", err)
			}
		})
	}
}

func TestTrtri(t *testing.T) {
	for name, be := range backendsUnderTest(t) {
		k := New(be)
		rng := rand.New(rand.NewPCG(11, 12))
		for _, n := range []int{1, 9, 70} {
			for _, ul := range []blas.Uplo{blas.Upper, blas.Lower} {
				for _, d := range []blas.Diag{blas.NonUnit, blas.Unit} {
					t.Run(fmt.Sprintf("%s/%c%c/n=%d", name, ul, d, n), func(t *testing.T) {
						a := triangularA(rng, n, d)
						a0 := triangle(a, ul, d)
						if err := k.Trtri(ul, d, n, a.d, a.ld); err != nil {
							t.Fatal(err)
						}
						inv := triangle(a, ul, d)
						if r := relDiff(mul(a0, inv), identity(n)); r > tol {
							t.Errorf("||A·inv(A) − I|| / ||I|| = %g", r)
						}
						if d == blas.Unit && a.at(0, 0) != 1e6 {
							t.Errorf("unit diagonal was written: %v", a.at(0, 0))
						}
						checkPadding(t, "a", a)
					})
				}
			}
		}
		t.Run(name+"/singular", func(t *testing.T) {
			n := 5
			a := triangularA(rng, n, blas.NonUnit)
			a.set(2, 2, 0)
			err := k.Trtri(blas.Upper, blas.NonUnit, n, a.d, a.ld)
			if !errors.Is(err, ErrSingular) {
				t.Fatalf("err = %v, want ErrSingular", err)
			}
			if !strings.Contains(err.Error(), "5×5") {
				t.Errorf("error %q does not name n", err)
			}
		})
	}
}

// qrResult is what TestQR computes with one backend.
type qrResult struct {
	factored mat // output of Geqrf
	tau      []float64
	t        mat // T from Larft
	q        [][]float64
}

// qr factors a copy of a0 and forms Q by applying the block reflector to the
// identity.
func qr(t *testing.T, k *Kernels, a0 mat) qrResult {
	t.Helper()
	m, n := a0.r, a0.c
	nr := min(m, n)
	a := a0.clone()
	tau := make([]float64, nr+2) // longer than needed is allowed
	for i := range tau {
		tau[i] = pad
	}
	k.Geqrf(m, n, a.d, a.ld, tau)
	if tau[nr] != pad || tau[nr+1] != pad {
		t.Fatal("tau written beyond min(m, n)")
	}
	checkPadding(t, "a", a)
	// The factored A is used directly as V: Larft and Larfb only reference
	// its strictly lower part.
	tt := newMat(rand.New(rand.NewPCG(0, 0)), nr, nr)
	k.Larft(lapack.Forward, lapack.ColumnWise, m, nr, a.d, a.ld, tau, tt.d, tt.ld)
	checkPadding(t, "t", tt)
	q := newMat(rand.New(rand.NewPCG(0, 0)), m, m)
	for i := 0; i < m; i++ {
		for j := 0; j < m; j++ {
			q.set(i, j, 0)
		}
		q.set(i, i, 1)
	}
	k.Larfb(blas.Left, blas.NoTrans, lapack.Forward, lapack.ColumnWise, m, m, nr, a.d, a.ld, tt.d, tt.ld, q.d, q.ld)
	checkPadding(t, "q", q)
	return qrResult{factored: a, tau: tau[:nr], t: tt, q: q.dense()}
}

func TestQR(t *testing.T) {
	for _, dims := range [][2]int{{12, 8}, {8, 8}, {70, 45}, {6, 10}} {
		m, n := dims[0], dims[1]
		rng := rand.New(rand.NewPCG(13, uint64(m*100+n)))
		a0 := newMat(rng, m, n)
		results := make(map[string]qrResult)
		for name, be := range backendsUnderTest(t) {
			k := New(be)
			t.Run(fmt.Sprintf("%s/%dx%d", name, m, n), func(t *testing.T) {
				res := qr(t, k, a0)
				results[name] = res
				q := res.q
				if r := relDiff(mul(transpose(q), q), identity(m)); r > tol {
					t.Errorf("||QᵀQ − I|| / ||I|| = %g", r)
				}
				r := triangle(res.factored, blas.Upper, blas.NonUnit) // m×n upper trapezoid
				if d := relDiff(mul(q, r), a0.dense()); d > tol {
					t.Errorf("||Q·R − A|| / ||A|| = %g", d)
				}
				// Qᵀ·A = R through Larfb with Trans.
				c := a0.clone()
				nr := min(m, n)
				k.Larfb(blas.Left, blas.Trans, lapack.Forward, lapack.ColumnWise, m, n, nr,
					res.factored.d, res.factored.ld, res.t.d, res.t.ld, c.d, c.ld)
				if d := relDiff(c.dense(), r); d > tol {
					t.Errorf("||Qᵀ·A − R|| / ||R|| = %g", d)
				}
				// C·Q and C·Qᵀ through Larfb with side Right.
				for _, tr := range transposes {
					c := newMat(rng, 5, m)
					want := mul(c.dense(), op(tr, q))
					k.Larfb(blas.Right, tr, lapack.Forward, lapack.ColumnWise, 5, m, nr,
						res.factored.d, res.factored.ld, res.t.d, res.t.ld, c.d, c.ld)
					if d := relDiff(c.dense(), want); d > tol {
						t.Errorf("side Right %c: relative error %g", tr, d)
					}
				}
			})
		}
		if len(results) == 2 {
			ob, gn := results[OpenBLAS], results[Gonum]
			if d := relDiff(ob.factored.dense(), gn.factored.dense()); d > 1e-12 {
				t.Errorf("%dx%d: backends' geqrf outputs differ: %g", m, n, d)
			}
			if d := relDiff([][]float64{ob.tau}, [][]float64{gn.tau}); d > 1e-12 {
				t.Errorf("%dx%d: backends' tau differ: %g", m, n, d)
			}
			if d := relDiff(triangle(ob.t, blas.Upper, blas.NonUnit), triangle(gn.t, blas.Upper, blas.NonUnit)); d > 1e-12 {
				t.Errorf("%dx%d: backends' T differ: %g", m, n, d)
			}
			if d := relDiff(ob.q, gn.q); d > 1e-12 {
				t.Errorf("%dx%d: backends' Q differ: %g", m, n, d)
			}
		}
	}
}

// TestReflectorVariants compares the backends on every direct/store/side/
// trans combination of Larft and Larfb, with random reflectors (only
// meaningful when both backends are compiled in).
func TestReflectorVariants(t *testing.T) {
	bes := backendsUnderTest(t)
	if len(bes) < 2 {
		t.Skip("needs both backends")
	}
	ob, gn := New(bes[OpenBLAS]), New(bes[Gonum])
	rng := rand.New(rand.NewPCG(15, 16))
	for _, direct := range []lapack.Direct{lapack.Forward, lapack.Backward} {
		for _, store := range []lapack.StoreV{lapack.ColumnWise, lapack.RowWise} {
			nv, kk := 11, 4
			rv, cv := nv, kk
			if store == lapack.RowWise {
				rv, cv = kk, nv
			}
			v := newMat(rng, rv, cv)
			tau := make([]float64, kk)
			for i := range tau {
				tau[i] = 1 + rng.Float64()*0.5
			}
			tau[1] = 0 // exercises the tau == 0 path
			tri := blas.Upper
			if direct == lapack.Backward {
				tri = blas.Lower
			}
			t1, t2 := newMat(rng, kk, kk), newMat(rng, kk, kk)
			t2.d = append([]float64(nil), t1.d...)
			ob.Larft(direct, store, nv, kk, v.d, v.ld, tau, t1.d, t1.ld)
			gn.Larft(direct, store, nv, kk, v.d, v.ld, tau, t2.d, t2.ld)
			if d := relDiff(t1.dense(), t2.dense()); d > 1e-13 {
				t.Errorf("larft %c%c: T differs between backends by %g (triangle %c)", direct, store, d, tri)
			}
			for _, side := range []blas.Side{blas.Left, blas.Right} {
				for _, tr := range transposes {
					m, n := nv, 7
					if side == blas.Right {
						m, n = 6, nv
					}
					c1 := newMat(rng, m, n)
					c2 := c1.clone()
					ob.Larfb(side, tr, direct, store, m, n, kk, v.d, v.ld, t1.d, t1.ld, c1.d, c1.ld)
					gn.Larfb(side, tr, direct, store, m, n, kk, v.d, v.ld, t2.d, t2.ld, c2.d, c2.ld)
					if d := relDiff(c1.dense(), c2.dense()); d > 1e-13 {
						t.Errorf("larfb %c%c%c%c: backends differ by %g", side, tr, direct, store, d)
					}
					checkPadding(t, "c", c1)
				}
			}
		}
	}
}

// nanMat returns an r×c matrix whose entries are all NaN (padding
// included).
func nanMat(r, c int) mat {
	m := mat{r: r, c: c, ld: c + 2, d: make([]float64, r*(c+2))}
	for i := range m.d {
		m.d[i] = math.NaN()
	}
	return m
}

// resetRunner resets and runs every call.
type resetRunner struct{ resettable []bool }

func (r *resetRunner) Kernel(c *Call) {
	r.resettable = append(r.resettable, c.Resettable())
	c.Reset()
	c.Run()
}

func TestReset(t *testing.T) {
	for name, be := range backendsUnderTest(t) {
		k := New(be)
		rr := &resetRunner{}
		k.SetInterceptor(rr)
		finite := func(t *testing.T, what string, m mat, in func(i, j int) bool) {
			t.Helper()
			for i := 0; i < m.r; i++ {
				for j := 0; j < m.c; j++ {
					x := m.at(i, j)
					if in(i, j) && (math.IsNaN(x) || math.IsInf(x, 0)) {
						t.Fatalf("%s: (%d,%d) = %v", what, i, j, x)
					}
				}
			}
		}
		for _, n := range []int{1, 5, 100} {
			t.Run(fmt.Sprintf("%s/n=%d", name, n), func(t *testing.T) {
				for _, ul := range []blas.Uplo{blas.Upper, blas.Lower} {
					inTri := func(i, j int) bool { return (ul == blas.Upper && j >= i) || (ul == blas.Lower && j <= i) }
					a := nanMat(n, n)
					if err := k.Potrf(ul, n, a.d, a.ld); err != nil {
						t.Fatalf("potrf %c after Reset: %v", ul, err)
					}
					finite(t, "potrf", a, inTri)
					// Reset touches only the referenced triangle.
					if n > 1 && !math.IsNaN(a.d[len(a.d)-1]) {
						t.Error("potrf: Reset wrote padding")
					}
					for _, d := range []blas.Diag{blas.NonUnit, blas.Unit} {
						a := nanMat(n, n)
						if err := k.Trtri(ul, d, n, a.d, a.ld); err != nil {
							t.Fatalf("trtri %c%c after Reset: %v", ul, d, err)
						}
						finite(t, "trtri", a, func(i, j int) bool { return inTri(i, j) && (i != j || d == blas.NonUnit) })
					}
				}
				for _, mm := range []int{n, 2 * n, max(n/2, 1)} {
					a := nanMat(mm, n)
					tau := make([]float64, min(mm, n))
					k.Geqrf(mm, n, a.d, a.ld, tau)
					finite(t, "geqrf", a, func(i, j int) bool { return true })
					finite(t, "tau", mat{r: 1, c: len(tau), ld: len(tau), d: tau}, func(i, j int) bool { return true })
				}
			})
		}
		// Reset is a no-op for non-factorizations and Resettable says so.
		rr.resettable = nil
		c := []float64{7}
		k.Gemm(blas.NoTrans, blas.NoTrans, 1, 1, 1, 1, []float64{2}, 1, []float64{3}, 1, 1, c, 1)
		if c[0] != 13 || len(rr.resettable) != 1 || rr.resettable[0] {
			t.Errorf("%s: gemm through resetRunner: c = %v, resettable = %v", name, c[0], rr.resettable)
		}
	}
}

// TestResetWellConditioned checks the properties Reset documents on the
// factorizations' results.
func TestResetWellConditioned(t *testing.T) {
	be := newGonumBackend()
	k := New(be)
	k.SetInterceptor(&resetRunner{})
	n := 64
	a := nanMat(n, n)
	if err := k.Potrf(blas.Lower, n, a.d, a.ld); err != nil {
		t.Fatal(err)
	}
	// The Cholesky factor's diagonal is bounded away from 0.
	for i := 0; i < n; i++ {
		if x := a.at(i, i); x < 1 {
			t.Fatalf("L(%d,%d) = %v", i, i, x)
		}
	}
	a = nanMat(n, n)
	if err := k.Trtri(blas.Upper, blas.Unit, n, a.d, a.ld); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		for j := i + 1; j < n; j++ {
			if x := math.Abs(a.at(i, j)); x > 1 {
				t.Fatalf("unit trtri inverse (%d,%d) = %v, want |x| <= 1", i, j, x)
			}
		}
	}
}

// suspectRecorder records Suspect for every call and runs none.
type suspectRecorder struct{ got []bool }

func (s *suspectRecorder) Kernel(c *Call) { s.got = append(s.got, c.Suspect()) }

// TestSuspect checks which values make a factorization's input suspect, and
// that only the part Reset would write is read.
func TestSuspect(t *testing.T) {
	be, err := NewBackend(Gonum)
	if err != nil {
		t.Fatal(err)
	}
	k := New(be)
	rec := &suspectRecorder{}
	k.SetInterceptor(rec)
	const n = 6
	clean := func(r, c int) mat { // well-scaled entries, padding 0
		m := mat{r: r, c: c, ld: c + 2, d: make([]float64, r*(c+2))}
		for i := 0; i < r; i++ {
			for j := 0; j < c; j++ {
				m.d[i*m.ld+j] = 1 / float64(1+i+j)
			}
		}
		return m
	}
	values := []struct {
		v       float64
		suspect bool
	}{
		{0, false}, {1e100, false}, {-1e-100, false}, {0x1p500, false}, {0x1p-500, false},
		{math.NaN(), true}, {math.Inf(1), true}, {math.Inf(-1), true}, {1e200, true}, {-1e200, true}, {1e-200, true},
	}
	for _, tc := range values {
		cases := []struct {
			name    string
			i, j    int // where the value goes (j may be in the padding)
			run     func(m mat)
			suspect bool
		}{
			{"potrf L below the diagonal", 4, 1, func(m mat) { k.Potrf(blas.Lower, n, m.d, m.ld) }, tc.suspect},
			{"potrf L above the diagonal", 1, 4, func(m mat) { k.Potrf(blas.Lower, n, m.d, m.ld) }, false},
			{"potrf U above the diagonal", 1, 4, func(m mat) { k.Potrf(blas.Upper, n, m.d, m.ld) }, tc.suspect},
			{"potrf L padding", 2, n + 1, func(m mat) { k.Potrf(blas.Lower, n, m.d, m.ld) }, false},
			{"trtri LU diagonal", 3, 3, func(m mat) { k.Trtri(blas.Lower, blas.Unit, n, m.d, m.ld) }, false},
			{"trtri LN diagonal", 3, 3, func(m mat) { k.Trtri(blas.Lower, blas.NonUnit, n, m.d, m.ld) }, tc.suspect},
			{"trtri UU above", 2, 5, func(m mat) { k.Trtri(blas.Upper, blas.Unit, n, m.d, m.ld) }, tc.suspect},
			{"geqrf last entry", n - 1, n - 1, func(m mat) { k.Geqrf(n, n, m.d, m.ld, make([]float64, n)) }, tc.suspect},
			{"geqrf padding", 0, n, func(m mat) { k.Geqrf(n, n, m.d, m.ld, make([]float64, n)) }, false},
			{"geqrf 6x4 last entry", n - 1, 3, func(m mat) { k.Geqrf(n, 4, m.d, m.ld, make([]float64, 4)) }, tc.suspect},
			{"geqrf 6x4 column 4", 0, 4, func(m mat) { k.Geqrf(n, 4, m.d, m.ld, make([]float64, 4)) }, false},
			{"potrf U below the diagonal", 4, 1, func(m mat) { k.Potrf(blas.Upper, n, m.d, m.ld) }, false},
			{"trtri UU diagonal", 3, 3, func(m mat) { k.Trtri(blas.Upper, blas.Unit, n, m.d, m.ld) }, false},
			{"trtri LU below", 4, 2, func(m mat) { k.Trtri(blas.Lower, blas.Unit, n, m.d, m.ld) }, tc.suspect},
			{"gemm (not resettable)", 0, 0, func(m mat) {
				k.Gemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, m.d, m.ld, m.d, m.ld, 0, make([]float64, n*n), n)
			}, false},
		}
		for _, c := range cases {
			m := clean(n, n)
			m.d[c.i*m.ld+c.j] = tc.v
			rec.got = rec.got[:0]
			c.run(m)
			if len(rec.got) != 1 || rec.got[0] != c.suspect {
				t.Errorf("%s holding %v: Suspect = %v, want %v", c.name, tc.v, rec.got, c.suspect)
			}
		}
	}
}
