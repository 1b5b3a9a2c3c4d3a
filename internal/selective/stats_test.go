package selective

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

func sample(n int, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, 7))
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = 1e-3 + 1e-4*r.NormFloat64() + 1e6 // a large offset stresses cancellation
	}
	return xs
}

func TestStatAgainstTwoPass(t *testing.T) {
	xs := sample(1000, 1)
	var s Stat
	for _, x := range xs {
		s.Add(x)
	}
	mean, v := stat.MeanVariance(xs, nil)
	if s.N != 1000 || math.Abs(s.Mean-mean) > 1e-9*math.Abs(mean) || math.Abs(s.Var()-v) > 1e-6*v {
		t.Fatalf("Welford n=%d mean=%v var=%v; two-pass mean=%v var=%v", s.N, s.Mean, s.Var(), mean, v)
	}
}

func TestStatMergeHalves(t *testing.T) {
	xs := sample(777, 2)
	var all, a, b Stat
	for i, x := range xs {
		all.Add(x)
		if i < 300 {
			a.Add(x)
		} else {
			b.Add(x)
		}
	}
	a.Merge(b)
	if a.N != all.N || math.Abs(a.Mean-all.Mean) > 1e-9*all.Mean || math.Abs(a.Var()-all.Var()) > 1e-6*all.Var() {
		t.Fatalf("merged %+v (var %v), whole %+v (var %v)", a, a.Var(), all, all.Var())
	}
	var empty Stat
	empty.Merge(all)
	if empty != all {
		t.Fatalf("merge into empty: %+v", empty)
	}
	all.Merge(Stat{})
	if all.N != 777 {
		t.Fatalf("merge of empty changed the sample: %+v", all)
	}
}

func TestHalfWidthStudentT(t *testing.T) {
	qs := newQuantiles(0.95)
	s := Stat{}
	for _, x := range []float64{1, 2, 3, 4} {
		s.Add(x)
	}
	// t_{0.975, 3} = 3.182446; s = 1.290994; h = t s / 2.
	want := 3.182446305284263 * math.Sqrt(5.0/3) / 2
	if h := qs.HalfWidth(s); math.Abs(h-want) > 1e-9 {
		t.Fatalf("half-width %v, want %v", h, want)
	}
	if !math.IsInf(qs.HalfWidth(Stat{N: 1, Mean: 1}), 1) {
		t.Fatal("one observation must have an infinite half-width")
	}
	big := Stat{N: 100000, Mean: 1, M2: 99999}
	if h, z := qs.HalfWidth(big), distuv.UnitNormal.Quantile(0.975)*math.Sqrt(1.0/100000); math.Abs(h-z) > 1e-9 {
		t.Fatalf("large-n half-width %v, want normal %v", h, z)
	}
}

// The rule h/(mean·sqrt(alpha)) <= eps at its boundary, and n_min.
func TestPredictableBoundary(t *testing.T) {
	qs := newQuantiles(0.95)
	s := Stat{}
	for _, x := range []float64{9, 10, 11, 10} {
		s.Add(x)
	}
	ratio := qs.HalfWidth(s) / s.Mean
	for _, alpha := range []float64{1, 4, 9} {
		edge := ratio / math.Sqrt(alpha)
		if !qs.Predictable(s, edge*(1+1e-12), alpha, 2) {
			t.Errorf("alpha=%v: not predictable just above the boundary %v", alpha, edge)
		}
		if qs.Predictable(s, edge*(1-1e-9), alpha, 2) {
			t.Errorf("alpha=%v: predictable just below the boundary %v", alpha, edge)
		}
	}
	if qs.Predictable(s, 1e9, 1, 5) {
		t.Error("predictable with n=4 < n_min=5")
	}
	if qs.Predictable(s, 0, 1, 2) {
		t.Error("epsilon 0 must never be predictable with spread")
	}
}
