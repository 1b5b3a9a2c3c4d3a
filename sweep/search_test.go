package sweep

import (
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
