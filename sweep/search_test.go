package sweep

import (
	"slices"
	"testing"
)

// The finals are every survivor when a round before the tightest left six
// or fewer; else every round's leader, then the fastest survivors, three in
// all unless the leaders are more.
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
		if got := Finalists(c.alive, c.leaders, c.tightest); !slices.Equal(got, c.want) {
			t.Errorf("Finalists(%v, leaders %v, tightest %v) = %v, want %v", c.alive, c.leaders, c.tightest, got, c.want)
		}
	}
}
