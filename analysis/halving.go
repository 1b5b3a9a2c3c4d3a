package analysis

import (
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/stat/distuv"
)

// Estimate is one configuration's predicted time in a round of a search:
// the prediction and its standard error (what the skipped kernels leave
// unknown).
type Estimate struct {
	Index int     // the configuration's index
	Time  float64 // predicted seconds
	SE    float64 // the prediction's standard error, seconds
}

// Cut is a round of successive halving decided: the survivors, fastest
// first, the configurations dropped, and the time below which none was.
type Cut struct {
	Kept    []int
	Dropped []int
	// Capped are the configurations of Dropped that the round's budget
	// dropped (Cap), not the confidence rule.
	Capped []int
	Best   int
	// Threshold is the least prediction the round drops: the confidence
	// rule's boundary for a configuration without sampling error of its
	// own (one with a standard error must lie further above the best), or
	// the budget's edge where that is lower. Every configuration dropped
	// was predicted above it; one kept may be too, its prediction less
	// certain. +Inf where the rule drops none however slow (z·rel >= 1)
	// and no budget capped the round.
	Threshold float64
}

// Allowance is the relative error to grant a prediction made at tolerance
// tol beyond its standard error (Eliminate's rel): what sampling does not
// cover, the run-to-run noise of the executed part and the bias of
// predicting a skipped kernel by its mean elsewhere. It is half the
// tolerance, and never under 5%, the noise floor of a quiet machine: at
// 2^-1 and confidence 0.95, a configuration is dropped when its
// prediction is about 2.2 times the best's; at 2^-5, when about 15% above
// it (neither prediction with a standard error: see Eliminate).
func Allowance(tol float64) float64 { return max(tol/2, 0.05) }

// Eliminate decides a round of successive halving (Jamieson and Talwalkar's
// non-stochastic best-arm identification, with the prediction's uncertainty
// in place of a fixed halving): a configuration is dropped when it is slower
// than the fastest with the given confidence,
//
//	T_c - T_b > z * sqrt(u_c² + u_b²),   u_i² = SE_i² + (rel * T_i)²,
//
// where b is the fastest prediction, z the two-sided normal quantile of
// confidence, SE_i the prediction's standard error (sampling: the skipped
// kernels' means) and rel a relative allowance for what the standard error
// does not cover: the run-to-run noise of the executed part and the
// model's own bias (a skipped kernel predicted by its mean in another
// context). Everything not dropped survives, equivalent configurations
// together, so the true best is dropped only when its prediction is off by
// more than its uncertainty allows. The threshold reported (Cut.Threshold)
// is the least T_c that the rule drops with SE_c = 0, the larger root of
//
//	(1 - z²rel²) T² - 2 T_b T + T_b² - z² u_b² = 0,
//
// below which no configuration is dropped, since the rule's margin only
// grows with SE_c.
func Eliminate(est []Estimate, rel, confidence float64) (Cut, error) {
	if len(est) == 0 {
		return Cut{}, fmt.Errorf("analysis: eliminate: no estimates")
	}
	if rel < 0 || math.IsNaN(rel) {
		return Cut{}, fmt.Errorf("analysis: eliminate: relative allowance %v: want a number >= 0", rel)
	}
	if !(confidence > 0 && confidence < 1) {
		return Cut{}, fmt.Errorf("analysis: eliminate: confidence %v: want a number strictly between 0 and 1", confidence)
	}
	for _, e := range est {
		if !(e.Time >= 0) || math.IsInf(e.Time, 0) || !(e.SE >= 0) || math.IsInf(e.SE, 0) {
			return Cut{}, fmt.Errorf("analysis: eliminate: configuration %d: time %v, standard error %v: want finite numbers >= 0", e.Index, e.Time, e.SE)
		}
	}
	sorted := append([]Estimate(nil), est...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Time < sorted[j].Time })
	z := distuv.UnitNormal.Quantile((1 + confidence) / 2)
	b := sorted[0]
	ub := b.SE*b.SE + rel*b.Time*rel*b.Time
	cut := Cut{Best: b.Index, Threshold: dropBoundary(b.Time, ub, rel, z)}
	for _, e := range sorted {
		uc := e.SE*e.SE + rel*e.Time*rel*e.Time
		if e.Time-b.Time > z*math.Sqrt(uc+ub) {
			cut.Dropped = append(cut.Dropped, e.Index)
		} else {
			cut.Kept = append(cut.Kept, e.Index)
		}
	}
	return cut, nil
}

// dropBoundary is the least time T > tb with T - tb = z·sqrt(ub + (rel·T)²),
// ub the best's u², or +Inf where none (z·rel >= 1: the allowance grows as
// fast as the difference).
func dropBoundary(tb, ub, rel, z float64) float64 {
	a := 1 - z*z*rel*rel
	if a <= 0 {
		return math.Inf(1)
	}
	return (tb + math.Sqrt(tb*tb-a*(tb*tb-z*z*ub))) / a
}

// Cap bounds a round's survivors to its budget, as successive halving
// proper does (Jamieson and Talwalkar keep the best 1/eta of each round):
// of cut.Kept (fastest first, as Eliminate orders it) at most keep remain,
// and past them every survivor whose prediction is within tie (relative)
// of the last one kept, so that configurations the round cannot tell
// apart are kept or dropped together. The rest join cut.Dropped and
// cut.Capped, and cut.Threshold comes down to the budget's edge where it
// was above it: every configuration predicted above it was dropped. est
// are the round's estimates, by which ties are judged. keep < 1 keeps
// one.
func Cap(cut Cut, est []Estimate, keep int, tie float64) Cut {
	keep = max(keep, 1)
	if len(cut.Kept) <= keep {
		return cut
	}
	t := times(est)
	edge := t[cut.Kept[keep-1]] * (1 + tie)
	n := keep
	for n < len(cut.Kept) && t[cut.Kept[n]] <= edge {
		n++
	}
	out := Cut{Best: cut.Best, Threshold: cut.Threshold}
	out.Kept = append([]int(nil), cut.Kept[:n]...)
	out.Dropped = append(append([]int(nil), cut.Dropped...), cut.Kept[n:]...)
	out.Capped = append(append([]int(nil), cut.Capped...), cut.Kept[n:]...)
	if n < len(cut.Kept) {
		out.Threshold = min(out.Threshold, edge)
	}
	return out
}

// times maps each estimate's configuration to its predicted time.
func times(est []Estimate) map[int]float64 {
	t := make(map[int]float64, len(est))
	for _, e := range est {
		t[e.Index] = e.Time
	}
	return t
}
