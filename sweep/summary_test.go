package sweep

import (
	"math"
	"testing"
)

// sameFigures compares figures exactly, NaN equal to NaN.
func sameFigures(a, b Figures) bool {
	same := func(x, y float64) bool { return x == y || math.IsNaN(x) && math.IsNaN(y) }
	return a.Runs == b.Runs && a.Judged == b.Judged && a.Chosen == b.Chosen && a.Best == b.Best &&
		same(a.SelectiveTotalS, b.SelectiveTotalS) && same(a.ReferenceTotalS, b.ReferenceTotalS) &&
		same(a.Speedup, b.Speedup) && same(a.MeanError, b.MeanError) && same(a.MaxError, b.MaxError) &&
		same(a.Quality, b.Quality)
}

func TestSummarize(t *testing.T) {
	nan := math.NaN()
	for _, c := range []struct {
		name string
		runs []Measured
		want Figures
	}{
		{
			// Run 1 is chosen (the first of two equal predictions), run 2 is
			// best (the first of two equal reference means).
			name: "evaluate",
			runs: []Measured{
				{Config: 0, PredictedS: 3, SelectiveS: 1, ReferenceS: 4},      // error 0.25
				{Config: 1, PredictedS: 1, SelectiveS: 0.5, ReferenceS: 2},    // error 0.5
				{Config: 2, PredictedS: 1.5, SelectiveS: 0.25, ReferenceS: 1}, // error 0.5
				{Config: 3, PredictedS: 1, SelectiveS: 0.25, ReferenceS: 1},   // error 0
			},
			want: Figures{Runs: 4, Judged: 4, SelectiveTotalS: 2, ReferenceTotalS: 8, Speedup: 4,
				MeanError: 0.3125, MaxError: 0.5, Chosen: 1, Best: 2, Quality: 0.5},
		},
		{
			name: "errors not exact in binary",
			runs: []Measured{
				{Config: 0, PredictedS: 0.9, SelectiveS: 0.1, ReferenceS: 1},
				{Config: 1, PredictedS: 2.2, SelectiveS: 0.2, ReferenceS: 2},
				{Config: 2, PredictedS: 2.7, SelectiveS: 0.3, ReferenceS: 3},
			},
			// Errors 0.09999999999999998, 0.10000000000000009 and
			// 0.09999999999999994, summed in order.
			want: Figures{Runs: 3, Judged: 3, SelectiveTotalS: 0.6000000000000001, ReferenceTotalS: 6,
				Speedup: 9.999999999999998, MeanError: 0.09999999999999999, MaxError: 0.10000000000000009,
				Chosen: 0, Best: 0, Quality: 1},
		},
		{
			name: "tune",
			runs: []Measured{
				{Config: 0, PredictedS: 2, SelectiveS: 0.5, ReferenceS: nan},
				{Config: 1, PredictedS: 1, SelectiveS: 0.25, ReferenceS: nan},
			},
			want: Figures{Runs: 2, SelectiveTotalS: 0.75, Speedup: nan, MeanError: nan, MaxError: nan,
				Chosen: 1, Best: -1, Quality: nan},
		},
		{
			// The speed-up counts every run's wall time; the chosen run has
			// no reference, so the quality is unknown.
			name: "some runs without references",
			runs: []Measured{
				{Config: 0, PredictedS: 3, SelectiveS: 1, ReferenceS: 4},
				{Config: 1, PredictedS: 1, SelectiveS: 1, ReferenceS: nan},
			},
			want: Figures{Runs: 2, Judged: 1, SelectiveTotalS: 2, ReferenceTotalS: 4, Speedup: 2,
				MeanError: 0.25, MaxError: 0.25, Chosen: 1, Best: 0, Quality: nan},
		},
		{
			name: "none",
			want: Figures{Speedup: nan, MeanError: nan, MaxError: nan, Chosen: -1, Best: -1, Quality: nan},
		},
	} {
		if got := Summarize(c.runs); !sameFigures(got, c.want) {
			t.Errorf("%s: Summarize = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestResultMeasured(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	if _, ok := (Result{Index: 1, ReferenceS: []float64{1, 2}}).Measured(); ok {
		t.Errorf("a reference result measured as a selective run")
	}
	m, ok := Result{Index: 2, PredictedS: f(1.5), SelectiveS: f(0.5), ReferenceS: []float64{1, 2, 3}}.Measured()
	if want := (Measured{Config: 2, PredictedS: 1.5, SelectiveS: 0.5, ReferenceS: 2}); !ok || m != want {
		t.Errorf("Measured = %+v, %v; want %+v, true", m, ok, want)
	}
	if e := m.Error(); e != 0.25 {
		t.Errorf("Error = %v, want 0.25", e)
	}
	m, ok = Result{Index: 0, PredictedS: f(1), SelectiveS: f(0.5)}.Measured()
	if !ok || !math.IsNaN(m.ReferenceS) || !math.IsNaN(m.Error()) {
		t.Errorf("a run without references: Measured = %+v, %v; want a NaN reference and error", m, ok)
	}
}

func TestLeast(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		xs   []float64
		want int
	}{
		{[]float64{nan, 2, 1, 1, inf}, 2},
		{[]float64{3, -1}, 1},
		{[]float64{nan, inf}, -1},
		{nil, -1},
	} {
		if got := Least(c.xs); got != c.want {
			t.Errorf("Least(%v) = %d, want %d", c.xs, got, c.want)
		}
	}
}

// Summaries: a reference sweep's one summary sums the configurations run
// and names the fastest; with tallies, one summary each that has runs,
// with the references' noise floor where it has errors.
func TestSummaries(t *testing.T) {
	configs := make([]Config, 3)
	nan := math.NaN()
	refRuns := [][]float64{{1, 1.2}, nil, {0.8, 0.8}}
	got := Summaries("w", ModeReference, configs, nil, []float64{1.1, nan, 0.8}, refRuns, 5)
	if len(got) != 1 || math.Abs(got[0].ReferenceTotalS-1.9) > 1e-12 || got[0].Best != &configs[2] || got[0].ReferenceError == nil {
		t.Fatalf("reference sweep: %+v", got)
	}
	tallies := []Tally{
		{Policy: "a", Tolerance: 0.5, Runs: []Measured{{Config: 0, PredictedS: 1, SelectiveS: 0.5, ReferenceS: 1.1}}},
		{Policy: "b", Tolerance: 0.5},
		{Policy: "c", Tolerance: 0.5, Runs: []Measured{{Config: 0, PredictedS: 1, SelectiveS: 0.5, ReferenceS: nan}}},
	}
	got = Summaries("w", ModeEvaluate, configs, tallies, []float64{1.1, nan, nan}, refRuns, 5)
	if len(got) != 2 || got[0].Policy != "a" || got[0].ReferenceError == nil || got[1].Policy != "c" || got[1].ReferenceError != nil {
		t.Fatalf("tallies: %+v", got)
	}
}
