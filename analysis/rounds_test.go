package analysis

import (
	"math"
	"slices"
	"testing"
)

// A round never drops an earlier round's leader, however slow it now
// looks, and keeps its survivors fastest first.
func TestHalvingKeepsLeaders(t *testing.T) {
	h := &Halving{Confidence: 0.95, Least: 3, Leaders: []int{2}}
	ests := []Estimate{{Index: 0, Time: 1}, {Index: 1, Time: 1.01}, {Index: 2, Time: 3}, {Index: 3, Time: 2.5}, {Index: 4, Time: 1.02}}
	cut, err := h.Decide(ests, 0.03125, len(ests), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cut.Kept, 2) || slices.Contains(cut.Dropped, 2) {
		t.Errorf("leader 2 dropped: %+v", cut)
	}
	if !slices.Contains(cut.Dropped, 3) {
		t.Errorf("configuration 3, 2.5 times the best, kept: %+v", cut)
	}
	if cut.Kept[len(cut.Kept)-1] != 2 || cut.Kept[0] != 0 {
		t.Errorf("kept %v: want fastest first, the slow leader last", cut.Kept)
	}
	h.Leaders = nil
	if cut, _ = h.Decide(ests, 0.03125, len(ests), nil); slices.Contains(cut.Kept, 2) {
		t.Errorf("without leaders, 2 (3 times the best) kept: %+v", cut)
	}
	// A configuration cut short is dropped, however it ranks, and the
	// threshold comes down to where it was cut: every configuration
	// dropped is predicted at it or above (the round line says so; it
	// had read "each predicted above 2.17 s" of one cut at 1.05 s).
	if cut, _ = h.Decide(ests, 0.5, len(ests), map[int]bool{4: true}); slices.Contains(cut.Kept, 4) || !slices.Contains(cut.Dropped, 4) || cut.Threshold != 1.02 {
		t.Errorf("4 cut short at 1.02: %+v", cut)
	}
}

// A round's cutoff is the keep-th fastest prediction so far (with the tie
// margin), once it has keep of them; an earlier round's leader has none.
func TestHalvingCutoff(t *testing.T) {
	h := &Halving{Confidence: 0.95, Least: 3, Leaders: []int{7}}
	ests := []Estimate{{Index: 0, Time: 3}, {Index: 1, Time: 1}, {Index: 2, Time: 2}}
	if c := h.Cutoff(ests[:2], 3, 5); c != 0 {
		t.Errorf("2 estimates, keep 3: cutoff %g, want none", c)
	}
	if c, want := h.Cutoff(ests, 3, 5), 3*(1+Tie); math.Abs(c-want) > 1e-12 {
		t.Errorf("keep 3 of times 3, 1, 2: cutoff %g, want %g", c, want)
	}
	if c, want := h.Cutoff(ests, 2, 5), 2*(1+Tie); math.Abs(c-want) > 1e-12 {
		t.Errorf("keep 2 of times 3, 1, 2: cutoff %g, want %g", c, want)
	}
	if c := h.Cutoff(ests, 2, 7); c != 0 {
		t.Errorf("a leader's cutoff %g, want none", c)
	}
}

// A round keeps the fastest quarter of what it ran, never fewer than
// Least; a leader is recorded once, in order.
func TestHalvingKeepAndLead(t *testing.T) {
	h := &Halving{Confidence: 0.95, Least: 3}
	for ran, want := range map[int]int{1: 3, 8: 3, 12: 3, 13: 4, 120: 30} {
		if got := h.Keep(ran); got != want {
			t.Errorf("Keep(%d) = %d, want %d", ran, got, want)
		}
	}
	for _, b := range []int{4, 2, 4, 7} {
		h.Lead(b)
	}
	if !slices.Equal(h.Leaders, []int{4, 2, 7}) {
		t.Errorf("leaders %v, want [4 2 7]", h.Leaders)
	}
}
