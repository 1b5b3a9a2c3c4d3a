package sweep

import (
	"slices"
	"testing"
)

// The finals are every survivor when they are six or fewer; else every
// round's leader, then the fastest survivors, three in all unless the
// leaders are more.
func TestFinalists(t *testing.T) {
	many := []int{5, 3, 9, 1, 8, 2, 6}
	for _, c := range []struct{ alive, leaders, want []int }{
		{many, nil, []int{5, 3, 9}},
		{many, []int{1}, []int{1, 5, 3}},
		{many, []int{9, 1}, []int{9, 1, 5}},
		{many, []int{1, 3, 9, 5}, []int{5, 3, 9, 1}},
		{[]int{5, 3, 9, 1, 8, 2}, nil, []int{5, 3, 9, 1, 8, 2}},
		{[]int{5, 3, 9, 1}, []int{1}, []int{5, 3, 9, 1}},
		{[]int{7}, []int{4, 7}, []int{7}},
	} {
		if got := Finalists(c.alive, c.leaders); !slices.Equal(got, c.want) {
			t.Errorf("Finalists(%v, leaders %v) = %v, want %v", c.alive, c.leaders, got, c.want)
		}
	}
}
