package sweep

import (
	"math"
	"slices"
	"testing"
)

// The finals are every round's leader, then the fastest survivors, three
// in all unless the leaders are more; and, where configurations run on
// different process counts, the fastest survivor of each count none of
// those runs.
func TestFinalists(t *testing.T) {
	many := []int{5, 3, 9, 1, 8, 2, 6}
	for _, c := range []struct {
		alive, leaders []int
		want           []int
	}{
		{many, nil, []int{5, 3, 9}},
		{many, []int{1}, []int{1, 5, 3}},
		{many, []int{9, 1}, []int{9, 1, 5}},
		{many, []int{1, 3, 9, 5}, []int{5, 3, 9, 1}},
		{[]int{5, 3, 9, 1, 8, 2}, nil, []int{5, 3, 9}},
		{[]int{5, 3, 9, 1, 8, 2}, []int{8, 2}, []int{8, 2, 5}},
		{[]int{5, 3, 9, 1}, []int{1}, []int{1, 5, 3}},
		{[]int{5, 3}, nil, []int{5, 3}},
		{[]int{7}, []int{4, 7}, []int{7}},
	} {
		if got := Finalists(c.alive, c.leaders, nil); !slices.Equal(got, c.want) {
			t.Errorf("Finalists(%v, leaders %v) = %v, want %v", c.alive, c.leaders, got, c.want)
		}
	}
}

// Grouped by process count, the finals add the fastest survivor of each
// count the leaders and the fastest do not run, in prediction order; a
// count they already run adds nothing.
func TestFinalistsByProcessCount(t *testing.T) {
	// Configuration i runs on procs[i] processes.
	procs := map[int]int{5: 4, 3: 4, 9: 4, 1: 2, 8: 1, 2: 2, 6: 4}
	count := func(i int) int { return procs[i] }
	many := []int{5, 3, 9, 1, 8, 2, 6}
	for _, c := range []struct {
		alive, leaders []int
		want           []int
	}{
		{many, nil, []int{5, 3, 9, 1, 8}},
		{many, []int{2}, []int{2, 5, 3, 8}},
		{[]int{5, 1, 3, 9, 8}, nil, []int{5, 1, 3, 8}},
		{[]int{5, 3, 9, 6}, nil, []int{5, 3, 9}},
		{[]int{5, 3, 1}, nil, []int{5, 3, 1}},
	} {
		if got := Finalists(c.alive, c.leaders, count); !slices.Equal(got, c.want) {
			t.Errorf("Finalists(%v, leaders %v, by process count) = %v, want %v", c.alive, c.leaders, got, c.want)
		}
	}
}

// The judge reads a configuration by the median of its references, so one
// slow run of three does not move it out of the best class, while the cost
// of running everything in full counts every run.
func TestJudgeMedianReference(t *testing.T) {
	refs := map[int][]float64{
		0: {1.01, 1.02, 1.00},
		1: {0.99, 1.00, 1.19}, // one run 19% slow
		2: {1.20, 1.21, 1.19},
	}
	j, ok := Judge(refs, SearchEvent{Chosen: 1, SearchS: 0.5})
	if !ok {
		t.Fatal("no judgement")
	}
	if j.Best != 1 || j.BestS != 1.00 {
		t.Errorf("best %d (%g s), want 1 at its median 1.00 s", j.Best, j.BestS)
	}
	if !j.InBestClass || !slices.Equal(j.BestClass, []int{0, 1}) {
		t.Errorf("best class %v, chosen in it %v: want [0 1], true", j.BestClass, j.InBestClass)
	}
	if want := 1.01 + (0.99+1.00+1.19)/3 + 1.2; math.Abs(j.FullS-want) > 1e-12 {
		t.Errorf("full runs %g s, want the sum of means %g", j.FullS, want)
	}
	if math.Abs(j.Ratio-j.FullS/0.5) > 1e-12 || j.Quality != 1 {
		t.Errorf("ratio %g, quality %g", j.Ratio, j.Quality)
	}
	// Chosen 2: outside the class, quality best/chosen.
	j, _ = Judge(refs, SearchEvent{Chosen: 2})
	if j.InBestClass || math.Abs(j.Quality-1/1.2) > 1e-12 {
		t.Errorf("chosen 2: in best class %v, quality %g", j.InBestClass, j.Quality)
	}
	// Two references: their mean, as before.
	j, _ = Judge(map[int][]float64{0: {1, 1.2}, 1: {1.05, 1.07}}, SearchEvent{Chosen: 0})
	if j.BestS != 1.06 || j.Best != 1 {
		t.Errorf("two references: best %d at %g, want 1 at 1.06", j.Best, j.BestS)
	}
	if _, ok := Judge(refs, SearchEvent{Chosen: 7}); ok {
		t.Error("judged a configuration without references")
	}
}

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		x    []float64
		want float64
	}{{[]float64{3, 1, 2}, 2}, {[]float64{4, 1}, 2.5}, {[]float64{5}, 5}} {
		x := slices.Clone(c.x)
		if got := Median(x); got != c.want || !slices.Equal(x, c.x) {
			t.Errorf("Median(%v) = %g (input now %v), want %g", c.x, got, x, c.want)
		}
	}
	if !math.IsNaN(Median(nil)) {
		t.Error("Median(nil) is not NaN")
	}
}
