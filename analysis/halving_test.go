package analysis

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// With every prediction within the allowance of its true time, the truly
// fastest configuration and every one as fast are never dropped, whatever
// the errors' signs; configurations slower by more than the noise allows
// are dropped.
func TestEliminateNeverDropsTheTrueBest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const noise = 0.1
	for trial := 0; trial < 2000; trial++ {
		n := 2 + rng.IntN(30)
		truth := make([]float64, n)
		for i := range truth {
			truth[i] = 0.5 + 3*rng.Float64()
		}
		best := slices.Min(truth)
		// Some configurations are equivalent to the best: the same time.
		for i := range truth {
			if rng.IntN(4) == 0 {
				truth[i] = best
			}
		}
		est := make([]Estimate, n)
		for i, tt := range truth {
			// Errors anywhere within the noise, the worst case included:
			// the best over-predicted and the others under-predicted.
			e := noise * (2*rng.Float64() - 1)
			switch rng.IntN(4) {
			case 0:
				e = noise
			case 1:
				e = -noise
			}
			est[i] = Estimate{Index: i, Time: tt * (1 + e), SE: 0}
		}
		cut, err := Eliminate(est, noise, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		if len(cut.Kept)+len(cut.Dropped) != n {
			t.Fatalf("trial %d: %d kept + %d dropped of %d", trial, len(cut.Kept), len(cut.Dropped), n)
		}
		for i, tt := range truth {
			if tt == best && slices.Contains(cut.Dropped, i) {
				t.Fatalf("trial %d: configuration %d, as fast as the best (%.3f), dropped: estimates %v, cut %+v", trial, i, tt, est, cut)
			}
			// Slower than the noise could hide: kept means
			// tt(1-noise) - best(1+noise) <= z*noise*(1+noise)*(tt+best).
			m := 1.96 * noise * (1 + noise)
			if tt > best*(1+noise+m)/(1-noise-m) && slices.Contains(cut.Kept, i) {
				t.Fatalf("trial %d: configuration %d (%.3f, best %.3f) kept", trial, i, tt, best)
			}
		}
		if !slices.IsSortedFunc(cut.Kept, func(a, b int) int {
			switch {
			case est[a].Time < est[b].Time:
				return -1
			case est[a].Time > est[b].Time:
				return 1
			}
			return 0
		}) {
			t.Fatalf("kept not fastest first: %v", cut.Kept)
		}
	}
}

// The standard error widens the margin: a configuration 20% slower than
// the best is dropped when both are known precisely, kept when their
// predictions are uncertain.
func TestEliminateWeighsTheStandardError(t *testing.T) {
	sure := []Estimate{{0, 1.0, 0.01}, {1, 1.2, 0.01}}
	cut, err := Eliminate(sure, 0, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cut.Kept, []int{0}) || !slices.Equal(cut.Dropped, []int{1}) || cut.Best != 0 {
		t.Errorf("precise predictions: %+v, want 1 dropped", cut)
	}
	unsure := []Estimate{{0, 1.0, 0.1}, {1, 1.2, 0.1}}
	if cut, _ = Eliminate(unsure, 0, 0.95); len(cut.Dropped) != 0 {
		t.Errorf("uncertain predictions: %+v, want both kept", cut)
	}
	// With a relative allowance of 10%, 1.2 against 1.0 is within
	// 1.96*sqrt(0.1^2+0.12^2) = 0.31: kept.
	if cut, _ = Eliminate(sure, 0.1, 0.95); len(cut.Dropped) != 0 {
		t.Errorf("allowance 0.1: %+v, want both kept", cut)
	}
	for _, bad := range [][]Estimate{nil, {{0, -1, 0}}, {{0, 1, -0.1}}} {
		if _, err := Eliminate(bad, 0.1, 0.95); err == nil {
			t.Errorf("Eliminate(%v) accepted", bad)
		}
	}
	if _, err := Eliminate(sure, 0.1, 1); err == nil {
		t.Error("confidence 1 accepted")
	}
}
