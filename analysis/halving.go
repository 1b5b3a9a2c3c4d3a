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
// first, the configurations dropped, and the time above which a
// configuration was dropped.
type Cut struct {
	Kept      []int
	Dropped   []int
	Best      int
	Threshold float64
}

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
// more than its uncertainty allows. The threshold reported is the drop
// boundary for a configuration with the best's uncertainty.
func Eliminate(est []Estimate, rel, confidence float64) (Cut, error) {
	if len(est) == 0 {
		return Cut{}, fmt.Errorf("eliminate: no estimates")
	}
	if rel < 0 || math.IsNaN(rel) {
		return Cut{}, fmt.Errorf("eliminate: relative allowance %v: want a number >= 0", rel)
	}
	if !(confidence > 0 && confidence < 1) {
		return Cut{}, fmt.Errorf("eliminate: confidence %v: want a number strictly between 0 and 1", confidence)
	}
	for _, e := range est {
		if !(e.Time >= 0) || math.IsInf(e.Time, 0) || !(e.SE >= 0) || math.IsInf(e.SE, 0) {
			return Cut{}, fmt.Errorf("eliminate: configuration %d: time %v, standard error %v: want finite numbers >= 0", e.Index, e.Time, e.SE)
		}
	}
	sorted := append([]Estimate(nil), est...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Time < sorted[j].Time })
	z := distuv.UnitNormal.Quantile((1 + confidence) / 2)
	b := sorted[0]
	ub := b.SE*b.SE + rel*b.Time*rel*b.Time
	cut := Cut{Best: b.Index, Threshold: b.Time + z*math.Sqrt(2*ub)}
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
