package analysis

import (
	"cmp"
	"math"
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

// Cap keeps the round's budget of fastest predictions and never splits
// configurations predicted alike: the true best survives whenever fewer
// than the budget can be predicted faster than it (configurations that
// differ by more than the noise), and those predicted within the tie of
// the last kept stay with it.
func TestCapKeepsTheBestAndTies(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const noise = 0.05
	for trial := 0; trial < 2000; trial++ {
		n := 4 + rng.IntN(100)
		keep := (n + 3) / 4
		truth := make([]float64, n)
		est := make([]Estimate, n)
		// The best is 1; the others are slower than the noise can hide
		// (1+noise)/(1-noise) ~ 1.105, except that up to keep-1 of them
		// may be anywhere.
		close := rng.IntN(keep)
		for i := range truth {
			switch {
			case i == 0:
				truth[i] = 1
			case i <= close:
				truth[i] = 1 + 0.2*rng.Float64()
			default:
				truth[i] = 1.11 + 2*rng.Float64()
			}
			est[i] = Estimate{Index: i, Time: truth[i] * (1 + noise*(2*rng.Float64()-1))}
		}
		// A round that could drop nothing by confidence: all kept,
		// fastest first.
		sorted := slices.Clone(est)
		slices.SortFunc(sorted, func(a, b Estimate) int { return cmp.Compare(a.Time, b.Time) })
		var cut Cut
		for _, e := range sorted {
			cut.Kept = append(cut.Kept, e.Index)
		}
		capped := Cap(cut, est, keep, 0.01)
		if len(capped.Kept)+len(capped.Dropped) != n {
			t.Fatalf("trial %d: %d kept + %d dropped of %d", trial, len(capped.Kept), len(capped.Dropped), n)
		}
		if slices.Contains(capped.Dropped, 0) {
			t.Fatalf("trial %d: the best dropped: %d close, keep %d, kept %v", trial, close, keep, capped.Kept)
		}
		if len(capped.Kept) < min(keep, len(cut.Kept)) {
			t.Fatalf("trial %d: kept %d, budget %d", trial, len(capped.Kept), keep)
		}
		edge := est[cut.Kept[keep-1]].Time * 1.01
		for _, d := range capped.Dropped {
			if est[d].Time <= edge {
				t.Fatalf("trial %d: %d dropped within the tie of the last kept", trial, d)
			}
		}
	}
	// Ties at the edge stay together: four alike, a budget of two.
	est := []Estimate{{0, 1, 0}, {1, 2, 0}, {2, 2.001, 0}, {3, 2.002, 0}, {4, 3, 0}}
	cut := Cut{Kept: []int{0, 1, 2, 3, 4}}
	got := Cap(cut, est, 2, 0.01)
	if !slices.Equal(got.Kept, []int{0, 1, 2, 3}) || !slices.Equal(got.Dropped, []int{4}) {
		t.Errorf("Cap with ties at the edge: kept %v dropped %v, want [0 1 2 3] and [4]", got.Kept, got.Dropped)
	}
	// What the budget drops is told apart from what confidence dropped,
	// and the threshold comes down to the budget's edge (2 * 1.01), so
	// that every configuration predicted above it was dropped.
	conf := Cut{Kept: []int{0, 1, 2, 3, 4}, Dropped: []int{5}, Threshold: 3.5}
	got = Cap(conf, append(est, Estimate{5, 4, 0}), 2, 0.01)
	if !slices.Equal(got.Capped, []int{4}) || !slices.Equal(got.Dropped, []int{5, 4}) || math.Abs(got.Threshold-2.02) > 1e-12 {
		t.Errorf("Cap after a confidence drop: dropped %v, capped %v, threshold %v; want [5 4], [4], 2.02", got.Dropped, got.Capped, got.Threshold)
	}
	if got := Cap(conf, est, 9, 0.01); got.Capped != nil || got.Threshold != 3.5 {
		t.Errorf("Cap within budget: capped %v, threshold %v; want none and the confidence's 3.5", got.Capped, got.Threshold)
	}
	if got := Cap(cut, est, 9, 0.01); len(got.Kept) != 5 {
		t.Errorf("Cap within budget changed the cut: %+v", got)
	}
}

// The threshold a round reports is its true boundary: every configuration
// dropped was predicted above it, and one without a standard error of its
// own just above it is dropped, just below it kept, whatever the best's
// standard error. It had been the boundary for a configuration with the
// best's uncertainty: 3.77 s beside one dropped at 3 s, 1.69 s beside two
// kept at 1.8 and 2 s.
func TestThresholdIsTheBoundary(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 500 {
		n := 2 + rng.IntN(10)
		est := make([]Estimate, n)
		for i := range est {
			est[i] = Estimate{Index: i, Time: 1 + 3*rng.Float64(), SE: 0.3 * rng.Float64()}
		}
		rel := []float64{0.05, 0.125, 0.25}[trial%3]
		cut, err := Eliminate(est, rel, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range cut.Dropped {
			if est[i].Time <= cut.Threshold {
				t.Fatalf("trial %d: configuration %d dropped at %v, under the threshold %v", trial, i, est[i].Time, cut.Threshold)
			}
		}
		for f, want := range map[float64]bool{1 + 1e-9: true, 1 - 1e-9: false} {
			probe := append(slices.Clone(est), Estimate{Index: n, Time: cut.Threshold * f})
			c, err := Eliminate(probe, rel, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			if got := slices.Contains(c.Dropped, n); got != want || c.Threshold != cut.Threshold {
				t.Fatalf("trial %d: a prediction without error at %v x the threshold %v: dropped %v, want %v", trial, f, cut.Threshold, got, want)
			}
		}
	}
	// The allowance's own figures (Allowance's comment): with no standard
	// errors, 2.17 times the best at 2^-1, 1.15 at 2^-5.
	for tol, want := range map[float64]float64{0.5: 2.1715, 1.0 / 32: 1.1493} {
		cut, _ := Eliminate([]Estimate{{Index: 0, Time: 1}}, Allowance(tol), 0.95)
		if math.Abs(cut.Threshold-want) > 1e-3 {
			t.Errorf("tolerance %v: threshold %.4f x the best, want %.4f", tol, cut.Threshold, want)
		}
	}
	// An allowance the confidence's z outgrows drops nothing.
	if cut, _ := Eliminate([]Estimate{{Index: 0, Time: 1}, {Index: 1, Time: 100}}, 0.6, 0.95); !math.IsInf(cut.Threshold, 1) || len(cut.Dropped) != 0 {
		t.Errorf("rel 0.6: threshold %v, dropped %v; want +Inf and none", cut.Threshold, cut.Dropped)
	}
}
