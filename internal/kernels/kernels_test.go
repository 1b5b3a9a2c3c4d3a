package kernels

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack"
)

// countingInterceptor records every signature and runs every call except
// those whose routine is in skip.
type countingInterceptor struct {
	skip  map[Routine]bool
	sigs  []Signature
	count map[Signature]int
	ran   int
}

func (ci *countingInterceptor) Kernel(c *Call) {
	ci.sigs = append(ci.sigs, c.Sig)
	if ci.count == nil {
		ci.count = make(map[Signature]int)
	}
	ci.count[c.Sig]++
	if ci.skip[c.Sig.Routine] {
		return
	}
	ci.ran++
	c.Run()
}

func TestInterceptorSignatures(t *testing.T) {
	for name, be := range backendsUnderTest(t) {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, 22))
			k := New(be)
			ci := &countingInterceptor{}
			k.SetInterceptor(ci)

			a, b, c := newMat(rng, 4, 6), newMat(rng, 5, 6), newMat(rng, 4, 5)
			k.Gemm(blas.NoTrans, blas.Trans, 4, 5, 6, 1, a.d, a.ld, b.d, b.ld, 0, c.d, c.ld)
			k.Gemm(blas.NoTrans, blas.Trans, 4, 5, 6, 1, a.d, a.ld, b.d, b.ld, 0, c.d, c.ld)
			sq, sy := newMat(rng, 6, 6), newMat(rng, 4, 4)
			k.Syrk(blas.Lower, blas.NoTrans, 4, 6, 1, a.d, a.ld, 0, sy.d, sy.ld)
			tri := triangularA(rng, 6, blas.Unit)
			bb := newMat(rng, 4, 6)
			k.Trsm(blas.Right, blas.Lower, blas.Trans, blas.Unit, 4, 6, 1, tri.d, tri.ld, bb.d, bb.ld)
			k.Trmm(blas.Left, blas.Upper, blas.NoTrans, blas.NonUnit, 6, 6, 1, sq.d, sq.ld, sq.d, sq.ld)
			p := spd(rng, 5)
			if err := k.Potrf(blas.Upper, 5, p.d, p.ld); err != nil {
				t.Fatal(err)
			}
			tr := triangularA(rng, 3, blas.NonUnit)
			if err := k.Trtri(blas.Lower, blas.NonUnit, 3, tr.d, tr.ld); err != nil {
				t.Fatal(err)
			}
			q := newMat(rng, 7, 3)
			tau := make([]float64, 3)
			k.Geqrf(7, 3, q.d, q.ld, tau)
			tt := newMat(rng, 3, 3)
			k.Larft(lapack.Forward, lapack.ColumnWise, 7, 3, q.d, q.ld, tau, tt.d, tt.ld)
			cc := newMat(rng, 2, 7)
			k.Larfb(blas.Right, blas.Trans, lapack.Forward, lapack.ColumnWise, 2, 7, 3, q.d, q.ld, tt.d, tt.ld, cc.d, cc.ld)

			want := []struct {
				sig Signature
				str string
			}{
				{Signature{Gemm, FlagTransB, 4, 5, 6}, "gemm[NT] 4x5x6"},
				{Signature{Gemm, FlagTransB, 4, 5, 6}, "gemm[NT] 4x5x6"},
				{Signature{Syrk, FlagLower, 0, 4, 6}, "syrk[LN] 4x6"},
				{Signature{Trsm, FlagRight | FlagLower | FlagTransA | FlagUnit, 4, 6, 0}, "trsm[RLTU] 4x6"},
				{Signature{Trmm, 0, 6, 6, 0}, "trmm[LUNN] 6x6"},
				{Signature{Potrf, 0, 0, 5, 0}, "potrf[U] 5"},
				{Signature{Trtri, FlagLower, 0, 3, 0}, "trtri[LN] 3"},
				{Signature{Geqrf, 0, 7, 3, 0}, "geqrf 7x3"},
				{Signature{Larft, 0, 0, 7, 3}, "larft[FC] 7x3"},
				{Signature{Larfb, FlagRight | FlagTransA, 2, 7, 3}, "larfb[RTFC] 2x7x3"},
			}
			if len(ci.sigs) != len(want) {
				t.Fatalf("got %d calls, want %d: %v", len(ci.sigs), len(want), ci.sigs)
			}
			for i, w := range want {
				if ci.sigs[i] != w.sig {
					t.Errorf("call %d: Sig = %+v, want %+v", i, ci.sigs[i], w.sig)
				}
				if s := ci.sigs[i].String(); s != w.str {
					t.Errorf("call %d: Sig.String() = %q, want %q", i, s, w.str)
				}
			}
			if got := ci.count[Signature{Gemm, FlagTransB, 4, 5, 6}]; got != 2 {
				t.Errorf("gemm signature counted %d times, want 2", got)
			}
			if ci.ran != len(want) {
				t.Errorf("ran %d calls, want %d", ci.ran, len(want))
			}
		})
	}
}

func TestInterceptorSkip(t *testing.T) {
	for name, be := range backendsUnderTest(t) {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(23, 24))
			k := New(be)
			ci := &countingInterceptor{skip: map[Routine]bool{Gemm: true, Potrf: true, Trtri: true}}
			k.SetInterceptor(ci)

			a, b, c := newMat(rng, 8, 8), newMat(rng, 8, 8), newMat(rng, 8, 8)
			c0 := c.clone()
			k.Gemm(blas.Trans, blas.NoTrans, 8, 8, 8, 1, a.d, a.ld, b.d, b.ld, 1, c.d, c.ld)
			if relDiff(c.dense(), c0.dense()) != 0 {
				t.Error("skipped gemm modified C")
			}

			// A skipped factorization reports success even for a matrix
			// it would reject, and leaves it unchanged.
			bad := newMat(rng, 4, 4)
			for i := 0; i < 4; i++ {
				bad.set(i, i, -1)
			}
			bad0 := bad.clone()
			if err := k.Potrf(blas.Lower, 4, bad.d, bad.ld); err != nil {
				t.Errorf("skipped potrf: %v", err)
			}
			zero := mat{r: 3, c: 3, ld: 3, d: make([]float64, 9)}
			if err := k.Trtri(blas.Upper, blas.NonUnit, 3, zero.d, zero.ld); err != nil {
				t.Errorf("skipped trtri: %v", err)
			}
			if relDiff(bad.dense(), bad0.dense()) != 0 {
				t.Error("skipped potrf modified A")
			}

			// Calls not skipped run; a failing factorization still fails.
			s := newMat(rng, 5, 5)
			k.Syrk(blas.Upper, blas.Trans, 5, 8, 1, a.d, a.ld, 0, s.d, s.ld)
			if s.at(0, 0) <= 0 {
				t.Errorf("syrk did not run: c(0,0) = %v", s.at(0, 0))
			}
			delete(ci.skip, Potrf)
			if err := k.Potrf(blas.Lower, 4, bad.d, bad.ld); !errors.Is(err, ErrNotPositiveDefinite) {
				t.Errorf("potrf run through interceptor: err = %v", err)
			}
			if ci.ran != 2 || len(ci.sigs) != 5 {
				t.Errorf("ran %d of %d calls, want 2 of 5", ci.ran, len(ci.sigs))
			}

			// Without an interceptor calls go straight to the backend.
			k.SetInterceptor(nil)
			k.Gemm(blas.Trans, blas.NoTrans, 8, 8, 8, 1, a.d, a.ld, b.d, b.ld, 1, c.d, c.ld)
			if relDiff(c.dense(), c0.dense()) == 0 {
				t.Error("gemm without interceptor did not run")
			}
			if len(ci.sigs) != 5 {
				t.Error("removed interceptor still called")
			}
		})
	}
}

// nestingInterceptor runs a nested kernel through the same Kernels before
// running the intercepted call.
type nestingInterceptor struct {
	k     *Kernels
	inner []float64
	outer []Signature
}

func (ni *nestingInterceptor) Kernel(c *Call) {
	if c.Sig.Routine == Gemm && c.Sig.M == 1 {
		c.Run() // the nested calibration call itself
		return
	}
	sig := c.Sig
	ni.k.Gemm(blas.NoTrans, blas.NoTrans, 1, 1, 1, 1, []float64{2}, 1, []float64{3}, 1, 1, ni.inner, 1)
	if c.Sig != sig {
		panic("nested call clobbered the outer Call")
	}
	ni.outer = append(ni.outer, sig)
	c.Run()
}

func TestInterceptorReentrant(t *testing.T) {
	k := New(newGonumBackend())
	ni := &nestingInterceptor{k: k, inner: []float64{0}}
	k.SetInterceptor(ni)
	p := spd(rand.New(rand.NewPCG(1, 1)), 6)
	for range 3 {
		c := []float64{1, 2, 3, 4}
		k.Gemm(blas.NoTrans, blas.NoTrans, 2, 2, 2, 1, []float64{1, 0, 0, 1}, 2, []float64{5, 6, 7, 8}, 2, 0, c, 2)
		if c[0] != 5 || c[3] != 8 {
			t.Fatalf("outer gemm result %v", c)
		}
	}
	if err := k.Potrf(blas.Lower, 6, p.d, p.ld); err != nil {
		t.Fatal(err)
	}
	if ni.inner[0] != 24 || len(ni.outer) != 4 || k.depth != 0 {
		t.Errorf("inner = %v, outer calls = %d, depth = %d", ni.inner[0], len(ni.outer), k.depth)
	}
}

// retainingInterceptor keeps the *Call, which it must not do.
type retainingInterceptor struct{ c *Call }

func (ri *retainingInterceptor) Kernel(c *Call) { ri.c = c; c.Run() }

func TestRetainedCallPanics(t *testing.T) {
	k := New(newGonumBackend())
	ri := &retainingInterceptor{}
	k.SetInterceptor(ri)
	c := []float64{0}
	k.Gemm(blas.NoTrans, blas.NoTrans, 1, 1, 1, 1, []float64{2}, 1, []float64{3}, 1, 0, c, 1)
	if ri.c.Sig != (Signature{}) {
		t.Errorf("released Call still holds %v", ri.c.Sig)
	}
	expectPanic(t, "must not retain", ri.c.Run)
}

func TestKernelPanicReleasesCall(t *testing.T) {
	k := New(newGonumBackend())
	func() {
		defer func() { _ = recover() }()
		k.Gemm(blas.NoTrans, blas.NoTrans, 2, 2, 2, 1, nil, 2, nil, 2, 0, nil, 2)
	}()
	if c := k.calls[0]; k.depth != 0 || c.rt != 0 || c.be != nil || c.a != nil {
		t.Errorf("after a panicking kernel: depth %d, call %+v", k.depth, *c)
	}
}

func TestSignatureString(t *testing.T) {
	for _, tc := range []struct {
		sig  Signature
		want string
	}{
		{Signature{Gemm, FlagTransB, 128, 128, 64}, "gemm[NT] 128x128x64"},
		{Signature{Gemm, FlagTransA | FlagTransB, 1, 2, 3}, "gemm[TT] 1x2x3"},
		{Signature{Potrf, FlagLower, 0, 128, 0}, "potrf[L] 128"},
		{Signature{Trsm, FlagRight | FlagLower | FlagTransA, 128, 64, 0}, "trsm[RLTN] 128x64"},
		{Signature{Geqrf, 0, 256, 128, 0}, "geqrf 256x128"},
		{Signature{Larfb, FlagTransA | FlagBackward | FlagRowWise, 256, 192, 64}, "larfb[LTBR] 256x192x64"},
		{Signature{Larft, FlagRowWise, 0, 256, 32}, "larft[FR] 256x32"},
		{Signature{0, 1, 2, 3, 4}, "Routine(0) flags=0x1 2x3x4"},
	} {
		if got := tc.sig.String(); got != tc.want {
			t.Errorf("%+v.String() = %q, want %q", tc.sig, got, tc.want)
		}
	}
}

func TestSignatureFlops(t *testing.T) {
	for _, tc := range []struct {
		sig  Signature
		want float64
	}{
		{Signature{Gemm, 0, 128, 128, 64}, 2 * 128 * 128 * 64},
		{Signature{Syrk, 0, 0, 100, 10}, 100 * 101 * 10},
		{Signature{Trsm, 0, 10, 20, 0}, 20 * 10 * 10},         // left: n·m²
		{Signature{Trsm, FlagRight, 10, 20, 0}, 10 * 20 * 20}, // right: m·n²
		{Signature{Trmm, FlagRight, 3, 4, 0}, 3 * 4 * 4},
		{Signature{Potrf, FlagLower, 0, 300, 0}, 300 * 300 * 300 / 3.0},
		{Signature{Trtri, 0, 0, 30, 0}, 30 * 30 * 30 / 3.0},
		{Signature{Geqrf, 0, 200, 100, 0}, 2*200*100*100 - 2*100*100*100/3.0},
		{Signature{Geqrf, 0, 100, 200, 0}, 2*200*100*100 - 2*100*100*100/3.0},
		{Signature{Larft, 0, 0, 100, 8}, 100 * 8 * 8},
		{Signature{Larfb, 0, 100, 50, 8}, 4 * 100 * 50 * 8},
		{Signature{}, 0},
	} {
		if got := tc.sig.Flops(); math.Abs(got-tc.want) > 1e-9*tc.want {
			t.Errorf("%v.Flops() = %v, want %v", tc.sig, got, tc.want)
		}
	}
}

func TestParseRoutine(t *testing.T) {
	for r := Gemm; r <= lastRoutine; r++ {
		got, err := ParseRoutine(r.String())
		if err != nil || got != r {
			t.Errorf("ParseRoutine(%q) = %v, %v", r.String(), got, err)
		}
	}
	if r, err := ParseRoutine(" POTRF "); err != nil || r != Potrf {
		t.Errorf(`ParseRoutine(" POTRF ") = %v, %v`, r, err)
	}
	_, err := ParseRoutine("getrf")
	if err == nil {
		t.Fatal("ParseRoutine(getrf) succeeded")
	}
	for r := Gemm; r <= lastRoutine; r++ {
		if !strings.Contains(err.Error(), r.String()) {
			t.Errorf("error %q does not name %s", err, r)
		}
	}
	if !strings.Contains(err.Error(), `"getrf"`) {
		t.Errorf("error %q does not quote the input", err)
	}
	if Routine(0).Valid() || Routine(42).String() != "Routine(42)" {
		t.Error("invalid routines")
	}
}

func TestDefaultBackend(t *testing.T) {
	t.Setenv(BlasEnv, "bogus")
	if _, err := DefaultBackend(); err == nil {
		t.Error("APPROXTUNE_BLAS=bogus accepted")
	} else if msg := err.Error(); !strings.Contains(msg, "openblas") || !strings.Contains(msg, "gonum") || !strings.Contains(msg, "bogus") {
		t.Errorf("error %q does not name the value and the valid values", msg)
	}

	t.Setenv(BlasEnv, "gonum")
	b, err := DefaultBackend()
	t.Logf("gonum backend: %s", b.Name())
	if err != nil || !strings.HasPrefix(b.Name(), "gonum ") || !strings.HasSuffix(b.Name(), "(pure Go)") {
		t.Errorf("APPROXTUNE_BLAS=gonum: %v, %v", b, err)
	}

	t.Setenv(BlasEnv, "")
	b, err = DefaultBackend()
	if err != nil {
		t.Fatal(err)
	}
	wantPrefix := "gonum"
	if haveOpenBLAS {
		wantPrefix = "OpenBLAS"
	}
	t.Logf("default backend: %s", b.Name())
	if !strings.HasPrefix(b.Name(), wantPrefix) {
		t.Errorf("default backend %q, want %s", b.Name(), wantPrefix)
	}

	t.Setenv(BlasEnv, "openblas")
	b, err = DefaultBackend()
	if haveOpenBLAS {
		if err != nil || !strings.Contains(b.Name(), "1 thread)") {
			t.Errorf("APPROXTUNE_BLAS=openblas: %v, %v", b, err)
		}
	} else if err == nil || !strings.Contains(err.Error(), "not compiled") || !strings.Contains(err.Error(), "gonum") {
		t.Errorf("APPROXTUNE_BLAS=openblas without OpenBLAS: err = %v", err)
	}

	if _, err := NewBackend("mkl"); err == nil || !strings.Contains(err.Error(), "openblas, gonum") {
		t.Errorf(`NewBackend("mkl"): %v`, err)
	}
	names := Backends()
	if names[len(names)-1] != Gonum || (haveOpenBLAS && names[0] != OpenBLAS) || len(names) != map[bool]int{true: 2, false: 1}[haveOpenBLAS] {
		t.Errorf("Backends() = %v", names)
	}
}

// passThrough runs every call; it is the minimum an engine costs.
type passThrough struct{}

func (passThrough) Kernel(c *Call) { c.Run() }

func TestEntryAllocations(t *testing.T) {
	for name, be := range backendsUnderTest(t) {
		t.Run(name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(31, 32))
			k := New(be)
			k.SetInterceptor(passThrough{})
			n := 32 // small enough for gonum's serial Dgemm, which does not allocate
			a, b, c := newMat(rng, n, n), newMat(rng, n, n), newMat(rng, n, n)
			p := spd(rng, n)
			tau := make([]float64, n)
			for _, tc := range []struct {
				name string
				f    func()
			}{
				{"gemm", func() { k.Gemm(blas.NoTrans, blas.Trans, n, n, n, 1, a.d, a.ld, b.d, b.ld, 0, c.d, c.ld) }},
				{"syrk", func() { k.Syrk(blas.Lower, blas.NoTrans, n, n, 1, a.d, a.ld, 0, c.d, c.ld) }},
				{"trsm", func() { k.Trsm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, n, n, 1, p.d, p.ld, c.d, c.ld) }},
				{"potrf", func() {
					copy(a.d, p.d)
					_ = k.Potrf(blas.Lower, n, a.d, a.ld)
				}},
				{"geqrf", func() { k.Geqrf(n, n, b.d, b.ld, tau) }},
				{"geqrf-alternating", func() {
					k.Geqrf(n, n, b.d, b.ld, tau)
					k.Geqrf(n, n/2, b.d, b.ld, tau)
				}},
			} {
				if tc.name == "potrf" && name == Gonum {
					continue // gonum's Dpotrf may allocate internally
				}
				for _, ic := range []Interceptor{nil, passThrough{}} {
					k.SetInterceptor(ic)
					tc.f() // grow workspaces
					if allocs := testing.AllocsPerRun(20, tc.f); allocs != 0 {
						t.Errorf("%s (interceptor %v): %v allocations per call", tc.name, ic, allocs)
					}
				}
			}
		})
	}
}
