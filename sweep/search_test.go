package sweep

import (
	"slices"
	"testing"
)

// The finals are every survivor when a round before the tightest left six
// or fewer; else every round's leader, then the fastest survivors, three in
// all unless the leaders are more; and, where configurations run on
// different process counts, the fastest survivor of each count none of
// those runs.
func TestFinalists(t *testing.T) {
	many := []int{5, 3, 9, 1, 8, 2, 6}
	for _, c := range []struct {
		alive, leaders []int
		tightest       bool
		want           []int
	}{
		{many, nil, false, []int{5, 3, 9}},
		{many, []int{1}, false, []int{1, 5, 3}},
		{many, []int{9, 1}, true, []int{9, 1, 5}},
		{many, []int{1, 3, 9, 5}, false, []int{5, 3, 9, 1}},
		{[]int{5, 3, 9, 1, 8, 2}, nil, false, []int{5, 3, 9, 1, 8, 2}},
		{[]int{5, 3, 9, 1, 8, 2}, nil, true, []int{5, 3, 9}},
		{[]int{5, 3, 9, 1, 8, 2}, []int{8, 2}, true, []int{8, 2, 5}},
		{[]int{5, 3, 9, 1}, []int{1}, false, []int{5, 3, 9, 1}},
		{[]int{5, 3, 9, 1}, []int{1}, true, []int{1, 5, 3}},
		{[]int{7}, []int{4, 7}, true, []int{7}},
	} {
		if got := Finalists(c.alive, c.leaders, c.tightest, nil); !slices.Equal(got, c.want) {
			t.Errorf("Finalists(%v, leaders %v, tightest %v) = %v, want %v", c.alive, c.leaders, c.tightest, got, c.want)
		}
	}
}

// Grouped by process count, the finals add the fastest survivor of each
// count the leaders and the fastest do not run, in prediction order; a
// count they already run adds nothing, and so do all survivors when a
// round before the tightest left few.
func TestFinalistsByProcessCount(t *testing.T) {
	// Configuration i runs on procs[i] processes.
	procs := map[int]int{5: 4, 3: 4, 9: 4, 1: 2, 8: 1, 2: 2, 6: 4}
	count := func(i int) int { return procs[i] }
	many := []int{5, 3, 9, 1, 8, 2, 6}
	for _, c := range []struct {
		alive, leaders []int
		tightest       bool
		want           []int
	}{
		{many, nil, true, []int{5, 3, 9, 1, 8}},
		{many, []int{2}, true, []int{2, 5, 3, 8}},
		{[]int{5, 1, 3, 9, 8}, nil, true, []int{5, 1, 3, 8}},
		{[]int{5, 3, 9, 6}, nil, true, []int{5, 3, 9}},
		{[]int{5, 3, 9, 1}, nil, false, []int{5, 3, 9, 1}},
	} {
		if got := Finalists(c.alive, c.leaders, c.tightest, count); !slices.Equal(got, c.want) {
			t.Errorf("Finalists(%v, leaders %v, tightest %v, by process count) = %v, want %v", c.alive, c.leaders, c.tightest, got, c.want)
		}
	}
}
