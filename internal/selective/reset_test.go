package selective

import (
	"math"
	"slices"
	"testing"

	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/mpitest"
	"github.com/approxtune/approxtune/internal/selective/policy"
)

// staleInput: a process that skipped nothing itself resets a factorization's
// input only where the input holds what skipped kernels elsewhere leave (a
// NaN here, broadcast by rank 0), and only in a selective run that can skip
// (tolerance above 0).
func staleInput(r *mpitest.R) {
	e := newEngine(r)
	k := e.Kernels()
	const m, n = 64, 16
	geqrf := func(in []float64) []float64 { // the backend's result, no engine
		out := slices.Clone(in)
		k.Backend().Dgeqrf(m, n, out, n, make([]float64, n))
		return out
	}
	// What geqrf gives on the reset input (kernels.Call.Reset).
	rk := kernels.New(k.Backend())
	rk.SetInterceptor(resetAndRun{})
	afterReset := make([]float64, m*n)
	rk.Geqrf(m, n, afterReset, n, make([]float64, n))
	for _, c := range []struct {
		mode      RunMode
		eps       float64
		bad       bool
		wantReset bool
	}{
		{Selective, 0.5, false, false},
		{Selective, 0.5, true, true},
		{Selective, 0, true, false}, // tolerance 0 skips nothing: a full run through the engine
		{CountingFull, 0.5, true, false},
	} {
		tr := NewTrack(policy.Conditional{}, c.eps) // fresh: nothing is predictable yet
		a := make([]float64, m*n)
		for i := range a {
			a[i] = 1 / float64(1+i%97)
		}
		if c.bad && r.Rank == 0 {
			a[5*n+3] = math.NaN()
		}
		e.Begin(tr, c.mode)
		e.World().Bcast(a, 0)
		unreset := geqrf(a)
		k.Geqrf(m, n, a, n, make([]float64, n))
		rs, err := e.End()
		if err != nil {
			r.Fatalf("end: %v", err)
		}
		if rs.Skipped != 0 || rs.Executed != 2 {
			r.Fatalf("mode %d tolerance %v: executed %d, skipped %d; want both kernels executed", c.mode, c.eps, rs.Executed, rs.Skipped)
		}
		want, what := unreset, "geqrf of the data as received"
		if c.wantReset {
			want, what = afterReset, "geqrf of the reset input"
		}
		same := slices.EqualFunc(a, want, func(x, y float64) bool { return x == y || (math.IsNaN(x) && math.IsNaN(y)) })
		if !same {
			r.Errorf("mode %d tolerance %v, NaN in the input %v: geqrf's result is not %s", c.mode, c.eps, c.bad, what)
		}
	}
}

// resetAndRun resets every call's input and runs it.
type resetAndRun struct{}

func (resetAndRun) Kernel(c *kernels.Call) {
	c.Reset()
	c.Run()
}

func TestStaleInputReset(t *testing.T) { mpitest.Run(t, "stale-input", 4) }
