package selective

import (
	"math"
	"slices"
	"testing"

	"github.com/approxtune/approxtune/internal/mpitest"
)

// staleInput: a process that skipped nothing itself resets a factorization's
// input only where the input holds what skipped kernels elsewhere leave (a
// NaN here, broadcast by rank 0), and only in a selective run.
func staleInput(r *mpitest.R) {
	e := newEngine(r)
	k := e.Kernels()
	const m, n = 64, 16
	tr := NewTrack(Conditional, 0) // tolerance 0: nothing is ever skipped
	for _, c := range []struct {
		mode      RunMode
		bad       bool
		wantReset bool
	}{
		{Selective, false, false},
		{Selective, true, true},
		{Counting, true, false},
	} {
		a := make([]float64, m*n)
		for i := range a {
			a[i] = 1 / float64(1+i%97)
		}
		if c.bad && r.Rank == 0 {
			a[5*n+3] = math.NaN()
		}
		e.Begin(tr, c.mode)
		e.World().Bcast(a, 0)
		in := slices.Clone(a)
		tau := make([]float64, n)
		k.Geqrf(m, n, a, n, tau)
		rs, err := e.End()
		if err != nil {
			r.Fatalf("end: %v", err)
		}
		if rs.Skipped != 0 || rs.Executed != 2 {
			r.Fatalf("mode %d: executed %d, skipped %d; want both kernels executed", c.mode, rs.Executed, rs.Skipped)
		}
		direct := slices.Clone(in)
		k.Backend().Dgeqrf(m, n, direct, n, make([]float64, n))
		hasNaN := slices.ContainsFunc(a, math.IsNaN)
		switch {
		case c.wantReset && (hasNaN || slices.Equal(a, direct)):
			r.Errorf("mode %d, NaN in the input: geqrf's result has NaN %v (equal to the unreset result: %v); want the input reset", c.mode, hasNaN, slices.Equal(a, direct))
		case !c.wantReset && !c.bad && !slices.Equal(a, direct):
			r.Errorf("mode %d, clean input: geqrf's result differs from geqrf of the same data; want it left alone", c.mode)
		case !c.wantReset && c.bad && !hasNaN:
			r.Errorf("mode %d, NaN in the input: the input was reset; want a full run left alone", c.mode)
		}
	}
}

func TestStaleInputReset(t *testing.T) { mpitest.Run(t, "stale-input", 4) }
