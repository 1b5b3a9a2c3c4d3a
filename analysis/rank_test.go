package analysis

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"
)

// timings draws n run times with a hard floor at base and a right-skewed
// tail (base·(1 + noise·Exp(1))), the shape of repeated kernel timings.
func timings(rng *rand.Rand, n int, base, noise float64) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = base * (1 + noise*rng.ExpFloat64())
	}
	return x
}

func TestCompareOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		opt  CompareOptions
		want string
	}{
		{CompareOptions{M: 0, KMin: 5, KMax: 10, Threshold: 0.9}, "M >= 1"},
		{CompareOptions{M: 30, KMin: 0, KMax: 10, Threshold: 0.9}, "1 <= KMin <= KMax"},
		{CompareOptions{M: 30, KMin: 6, KMax: 5, Threshold: 0.9}, "1 <= KMin <= KMax"},
		{CompareOptions{M: 30, KMin: 5, KMax: 10, Threshold: 0.4}, "[0.5, 1)"},
		{CompareOptions{M: 30, KMin: 5, KMax: 10, Threshold: 1}, "[0.5, 1)"},
		{CompareOptions{M: 30, KMin: 5, KMax: 10, Threshold: 1.1}, "[0.5, 1)"},
		{CompareOptions{M: 30, KMin: 5, KMax: 10, Threshold: math.NaN()}, "[0.5, 1)"},
	} {
		err := c.opt.Validate()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %q", c.opt, err, c.want)
		}
	}
	if err := DefaultCompareOptions().Validate(); err != nil {
		t.Errorf("defaults: %v", err)
	}
	bad := DefaultRankOptions()
	bad.Rep = 0
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "Rep >= 1") {
		t.Errorf("Rep = 0: error %v", err)
	}
	d := DefaultRankOptions()
	if d.M != 30 || d.KMin != 5 || d.KMax != 10 || d.Threshold != 0.9 || d.Rep != 100 {
		t.Errorf("defaults %+v, want the paper's M=30 K in [5,10] threshold 0.9 Rep=100", d)
	}
}

// Compare's verdict on a share of wins is the reverse of its verdict on
// the other side's share, and a share of exactly 1 - t is Slower at every
// threshold: judged as c/M < 1 - t, 9 wins of 30 had been Slower at 0.7
// (1 - 0.7 rounds up) and 3 of 30 Equivalent at 0.9 (1 - 0.9 rounds down).
func TestCompareOutcomeSymmetric(t *testing.T) {
	reverse := map[Outcome]Outcome{Faster: Slower, Slower: Faster, Equivalent: Equivalent}
	for _, th := range []float64{0.5, 0.6, 0.7, 0.8, 0.9, 0.95} {
		for _, m := range []int{1, 10, 30} {
			for c := 0; c <= 2*m; c++ {
				if got, other := outcome(c, m, th), outcome(2*m-c, m, th); got != reverse[other] {
					t.Errorf("threshold %v, %d draws: %v half-wins %v, the other side's %v", th, m, c, got, other)
				}
			}
		}
	}
	for th, wins := range map[float64]int{0.7: 9, 0.9: 3} {
		if got := outcome(2*wins, 30, th); got != Slower {
			t.Errorf("threshold %v: %d wins of 30 (1 - t): %v, want %v", th, wins, got, Slower)
		}
	}
	if got := outcome(1, 1, 0.5); got != Equivalent {
		t.Errorf("one draw, a tie, threshold 0.5: %v, want %v", got, Equivalent)
	}
}

func TestCompare(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	opt := DefaultCompareOptions()
	fast := timings(rng, 30, 1.0, 0.03)
	slow := timings(rng, 30, 1.2, 0.03)
	same := timings(rng, 30, 1.0, 0.03)
	for _, c := range []struct {
		a, b []float64
		want Outcome
	}{
		{fast, slow, Faster},
		{slow, fast, Slower},
		{fast, same, Equivalent},
	} {
		got, err := Compare(c.a, c.b, opt, rng)
		if err != nil || got != c.want {
			t.Errorf("Compare = %v, %v; want %v", got, err, c.want)
		}
	}
	// A tie counts half a win: equal timings on both sides are
	// equivalent. Procedure 2 counts e_a <= e_b, which made each of two
	// identical samples faster than the other (a tune sweep's predictions
	// with no standard error: 50 copies of the mean).
	if got, _ := Compare([]float64{1}, []float64{1}, opt, rng); got != Equivalent {
		t.Errorf("Compare(tie) = %v, want %v", got, Equivalent)
	}
	// At threshold 0.5 too, where any other share is a win one way.
	half := opt
	half.Threshold = 0.5
	if got, _ := Compare([]float64{1}, []float64{1}, half, rng); got != Equivalent {
		t.Errorf("Compare(tie) at threshold 0.5 = %v, want %v", got, Equivalent)
	}
	five := []float64{1.00, 1.01, 1.02, 1.03, 1.04}
	faster := 0
	for range 1000 {
		if o, _ := Compare(five, slices.Clone(five), opt, rng); o != Equivalent {
			faster++
		}
	}
	if faster > 10 {
		t.Errorf("two identical samples of 5 compared other than equivalent in %d of 1000 comparisons", faster)
	}
	if _, err := Compare(nil, slow, opt, rng); err == nil {
		t.Error("Compare(empty) succeeded")
	}
	if _, err := Compare([]float64{math.NaN()}, slow, opt, rng); err == nil {
		t.Error("Compare(NaN) succeeded")
	}
	if _, err := Compare(fast, slow, CompareOptions{}, rng); err == nil {
		t.Error("Compare(zero options) succeeded")
	}
}

// TestBubbleRankFigure2 replays the worked example of paper 004 (Fig. 2):
// alg2 beats alg1, alg1 ~ alg3, alg4 beats alg3, alg4 beats alg1,
// alg2 ~ alg4. The final sequence is alg2, alg4, alg1, alg3 with ranks
// 1, 1, 2, 2.
func TestBubbleRankFigure2(t *testing.T) {
	// configurations 0..3 are alg1..alg4
	out := map[[2]int]Outcome{
		{0, 1}: Slower, {0, 2}: Equivalent, {2, 3}: Slower,
		{0, 3}: Slower, {1, 3}: Equivalent,
	}
	var calls [][2]int
	three := func(x, y int) Outcome {
		calls = append(calls, [2]int{x, y})
		if o, ok := out[[2]int{x, y}]; ok {
			return o
		}
		if o, ok := out[[2]int{y, x}]; ok {
			return -o
		}
		t.Fatalf("unexpected comparison alg%d vs alg%d", x+1, y+1)
		return 0
	}
	order := []int{0, 1, 2, 3}
	ranks := bubbleRank(order, three)
	if want := []int{1, 3, 0, 2}; !slices.Equal(order, want) {
		t.Errorf("sequence %v, want %v (alg2, alg4, alg1, alg3)", order, want)
	}
	if want := []int{2, 1, 2, 1}; !slices.Equal(ranks, want) {
		t.Errorf("ranks of alg1..alg4 %v, want %v", ranks, want)
	}
	wantCalls := [][2]int{{0, 1}, {0, 2}, {2, 3}, {1, 0}, {0, 3}, {1, 3}}
	if !slices.Equal(calls, wantCalls) {
		t.Errorf("comparisons %v, want %v", calls, wantCalls)
	}
}

// TestRankTableII plants the situation of paper 004's Table II: two
// equivalent fastest configurations (A, B), one noticeably slower (C) and
// one much slower (D). With the paper's settings the equivalent pair shares
// class 1 with relative scores near 1 (Table II, M=30, thr=0.9: 0.95-0.99),
// and the slower ones score 0. Without bootstrapping (M=1) equivalence is
// impossible and the pair splits the first place between them (Table II:
// 0.45/0.44 at M=1): their scores sum to 1. At threshold 0.5 (Table II:
// 0.53/0.47 and 0.76/0.24) it is possible only at an exactly even share
// of the draws, which is no win either way here (the paper's count made
// each side the winner): the scores sum to 1 or a little more.
func TestRankTableII(t *testing.T) {
	rng := rand.New(rand.NewPCG(2004, 4))
	samples := []Sample{
		{"A", timings(rng, 50, 1.00, 0.10)},
		{"B", timings(rng, 50, 1.00, 0.10)},
		{"C", timings(rng, 50, 1.10, 0.10)},
		{"D", timings(rng, 50, 1.50, 0.10)},
	}
	r, err := Rank(samples, DefaultRankOptions(), rng)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Classes) != 3 {
		t.Fatalf("%d classes %+v, want 3", len(r.Classes), r.Classes)
	}
	for name, class := range map[string]int{"A": 1, "B": 1, "C": 2, "D": 3} {
		if got := r.ClassOf(name); got != class {
			t.Errorf("%s in class %d, want %d", name, got, class)
		}
	}
	sc := r.Scores()
	t.Logf("defaults: scores %v, support %.2f", sc, r.Support)
	if sc["A"] < 0.9 || sc["B"] < 0.9 || sc["C"] != 0 || sc["D"] != 0 {
		t.Errorf("scores %v, want A, B >= 0.9 and C = D = 0", sc)
	}
	if r.Support < 0.9 {
		t.Errorf("support %.2f, want >= 0.9", r.Support)
	}
	for _, m := range r.Classes[0].Members {
		s := samples[slices.IndexFunc(samples, func(s Sample) bool { return s.Name == m.Name })]
		if m.N != 50 || m.Mean != stat.Mean(s.Times, nil) || m.Min != slices.Min(s.Times) {
			t.Errorf("member %+v: summary does not match its timings", m)
		}
	}

	for _, opt := range []RankOptions{
		{CompareOptions: CompareOptions{M: 1, KMin: 5, KMax: 10, Threshold: 0.9}, Rep: 100},
		{CompareOptions: CompareOptions{M: 30, KMin: 5, KMax: 10, Threshold: 0.5}, Rep: 100},
	} {
		r, err := Rank(samples, opt, rng)
		if err != nil {
			t.Fatal(err)
		}
		sc := r.Scores()
		t.Logf("M=%d thr=%.1f: scores %v", opt.M, opt.Threshold, sc)
		// No equivalence: every sort has exactly one configuration at rank 1.
		if sum := sc["A"] + sc["B"]; sum < 1-1e-12 || opt.M == 1 && sum > 1+1e-12 || sum > 1.15 || sc["C"] != 0 || sc["D"] != 0 {
			t.Errorf("M=%d thr=%.1f: scores %v, want A and B to share first place (sum 1), C = D = 0",
				opt.M, opt.Threshold, sc)
		}
		if opt.M == 1 && (sc["A"] < 0.15 || sc["B"] < 0.15) {
			t.Errorf("M=1: scores %v, want first place split between A and B (each >= 0.15)", sc)
		}
	}
}

func TestRankIdenticalRarelySplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	split := 0
	for range 100 {
		r, err := Rank([]Sample{
			{"x", timings(rng, 30, 1.0, 0.05)},
			{"y", timings(rng, 30, 1.0, 0.05)},
		}, DefaultRankOptions(), rng)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Classes) != 1 {
			split++
		}
	}
	t.Logf("identical distributions split in %d of 100 trials", split)
	if split > 5 {
		t.Errorf("identical distributions split in %d of 100 trials, want <= 5", split)
	}
}

// TestRankSeparatedAlwaysSeparated: means 20% apart with 3% noise are
// always two classes, the faster first with score 1.
func TestRankSeparatedAlwaysSeparated(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	for trial := range 100 {
		slow := timings(rng, 20, 1.2, 0.03)
		fast := timings(rng, 20, 1.0, 0.03)
		r, err := Rank([]Sample{{"slow", slow}, {"fast", fast}}, DefaultRankOptions(), rng)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Classes) != 2 || r.ClassOf("fast") != 1 || r.Scores()["fast"] != 1 || r.Scores()["slow"] != 0 {
			t.Fatalf("trial %d: %+v, want fast alone in class 1 with score 1", trial, r)
		}
	}
}

// Configurations with identical times (predictions with no standard
// error, drawn as copies of their mean) are one class: they had been
// ranked 1, 2, 3, each tie a win for the configuration compared first.
func TestRankIdenticalConstantsOneClass(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	c := []float64{0.0072, 0.0072, 0.0072}
	r, err := Rank([]Sample{{"a", c}, {"b", slices.Clone(c)}, {"c", slices.Clone(c)}}, DefaultRankOptions(), rng)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Classes) != 1 || r.Support != 1 {
		t.Errorf("identical constants: %+v, want one class in every sort", r)
	}
}

// RankContext stops with the context's error.
func TestRankContextCancelled(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := RankContext(ctx, []Sample{{"a", []float64{1, 2}}, {"b", []float64{1, 2}}}, DefaultRankOptions(), rng)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}

func TestRankErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	if _, err := Rank(nil, DefaultRankOptions(), rng); err == nil {
		t.Error("Rank(nil) succeeded")
	}
	dup := []Sample{{"a", []float64{1}}, {"a", []float64{2}}}
	if _, err := Rank(dup, DefaultRankOptions(), rng); err == nil || !strings.Contains(err.Error(), `"a"`) {
		t.Errorf("duplicate names: %v", err)
	}
	empty := []Sample{{"a", []float64{1}}, {"b", nil}}
	if _, err := Rank(empty, DefaultRankOptions(), rng); err == nil || !strings.Contains(err.Error(), "b") {
		t.Errorf("empty sample: %v", err)
	}
}

func TestSampleNormal(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	x, err := SampleNormal(2.0, 0.1, 4000, rng)
	if err != nil {
		t.Fatal(err)
	}
	m, s := stat.MeanStdDev(x, nil)
	if math.Abs(m-2) > 0.01 || math.Abs(s-0.1) > 0.01 {
		t.Errorf("mean %g sd %g, want 2 and 0.1", m, s)
	}
	x, _ = SampleNormal(3, 0, 5, rng)
	if !slices.Equal(x, []float64{3, 3, 3, 3, 3}) {
		t.Errorf("se 0: %v", x)
	}
	// A predicted configuration can be ranked against measured ones.
	pred, _ := SampleNormal(0.8, 0.01, 20, rng)
	r, err := Rank([]Sample{{"measured", timings(rng, 20, 1.0, 0.03)}, {"predicted", pred}}, DefaultRankOptions(), rng)
	if err != nil || r.ClassOf("predicted") != 1 || r.ClassOf("measured") != 2 {
		t.Errorf("ranking with a prediction: %+v, %v", r, err)
	}
	for _, bad := range []struct {
		mean, se float64
		n        int
	}{{math.NaN(), 1, 1}, {1, -1, 1}, {1, math.Inf(1), 1}, {1, 1, 0}} {
		if _, err := SampleNormal(bad.mean, bad.se, bad.n, rng); err == nil {
			t.Errorf("SampleNormal(%v) succeeded", bad)
		}
	}
}
