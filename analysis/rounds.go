package analysis

import (
	"cmp"
	"slices"
)

// Eta is successive halving's reduction: a round keeps at most the fastest
// 1/Eta of the configurations it ran (besides dropping the slower with
// confidence), never fewer than Halving.Least.
const Eta = 4

// Tie is how close (relative) two predictions are for a round to keep or
// drop them together at its budget's edge (Cap).
const Tie = 0.01

// Halving is successive halving's rule across a search's rounds: which
// configurations a round keeps, and the leaders (each round's fastest
// prediction) that no later round drops. A built-in workload's search
// (one MPI job) and a program's (a launch per run) decide by it alike.
type Halving struct {
	// Confidence is Eliminate's: how sure a round is that what it drops
	// is slower than its best.
	Confidence float64
	// Least is the fewest survivors a round's budget leaves (the search's
	// finalists), however many it ran.
	Least int
	// Leaders are each round's fastest prediction so far, in order: a
	// tighter round predicts the configurations it runs first from their
	// own cold executions, and on the cholesky3d n=4096 space the second
	// round put the truly fastest (b=512, strategy 1), which the first had
	// ranked first in 5 sweeps of 5, 38-49% above its reference in 3 of
	// them and dropped it. So no later round drops a leader, and the
	// finals measure each in full.
	Leaders []int
}

// Keep is how many configurations a round of ran keeps at most: the
// fastest 1/Eta, never fewer than Least.
func (h *Halving) Keep(ran int) int { return max(h.Least, (ran+Eta-1)/Eta) }

// Lead records a round's best as a leader (once).
func (h *Halving) Lead(best int) {
	if !slices.Contains(h.Leaders, best) {
		h.Leaders = append(h.Leaders, best)
	}
}

// Cutoff is the time past which configuration i's run in a round may be
// cut short, given the round's estimates so far (0: none): once the round
// has keep predictions, a run whose prediction passes the keep-th fastest
// of them (by more than Tie) is cut short and dropped (Decide). It is the
// budget's rule (Cap) applied early, to predictions alone: Cap counts the
// fastest keep among those the confidence rule kept, so where that rule
// drops some of the faster ones (certain, and slower than the best by
// more than the allowance) and this run's prediction is uncertain enough
// to stay, Decide would have kept it. The run's remaining time is what
// that rare loss buys. An earlier round's leader runs whole: no round
// drops it.
func (h *Halving) Cutoff(ests []Estimate, keep, i int) float64 {
	if len(ests) < keep || slices.Contains(h.Leaders, i) {
		return 0
	}
	t := make([]float64, len(ests))
	for k, e := range ests {
		t[k] = e.Time
	}
	slices.Sort(t)
	return t[keep-1] * (1 + Tie)
}

// Decide is a round's cut at tolerance tol over the estimates of the ran
// configurations: those cut short (short) are dropped, and the
// confidence rule (Eliminate with Allowance(tol)), then the budget (Cap to
// Keep(ran)), decide on the rest; an earlier round's leader stays. Kept
// comes fastest first.
func (h *Halving) Decide(ests []Estimate, tol float64, ran int, short map[int]bool) (Cut, error) {
	var whole []Estimate
	var dropped []int
	for _, e := range ests {
		if short[e.Index] {
			dropped = append(dropped, e.Index)
		} else {
			whole = append(whole, e)
		}
	}
	cut, err := Eliminate(whole, Allowance(tol), h.Confidence)
	if err != nil {
		return cut, err
	}
	cut = Cap(cut, whole, h.Keep(ran), Tie)
	cut.Dropped = append(cut.Dropped, dropped...)
	for _, e := range ests {
		if short[e.Index] {
			// Its time is where it was cut, a lower bound: the threshold
			// comes down to it, every configuration dropped predicted at
			// it or above (the line had said "each predicted above
			// 2.17 s" of one cut short at 1.05 s).
			cut.Threshold = min(cut.Threshold, e.Time)
		}
	}
	for _, l := range h.Leaders {
		if k := slices.Index(cut.Dropped, l); k >= 0 {
			cut.Dropped = slices.Delete(cut.Dropped, k, k+1)
			cut.Kept = append(cut.Kept, l)
		}
		if k := slices.Index(cut.Capped, l); k >= 0 {
			cut.Capped = slices.Delete(cut.Capped, k, k+1)
		}
	}
	t := times(ests)
	slices.SortStableFunc(cut.Kept, func(a, b int) int { return cmp.Compare(t[a], t[b]) })
	return cut, nil
}
