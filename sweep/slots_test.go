package sweep

import "testing"

// The references of a configuration sit among its selective runs, at the
// middles of equal parts, in order, never past the last run.
func TestReferenceSlots(t *testing.T) {
	for _, c := range []struct {
		reps, runs int
		want       []int
	}{
		{3, 15, []int{2, 7, 12}},
		{2, 15, []int{3, 11}},
		{1, 15, []int{7}},
		{3, 1, []int{0, 0, 0}},
		{2, 0, []int{0, 0}},
		{4, 4, []int{0, 1, 2, 3}},
	} {
		got := ReferenceSlots(c.reps, c.runs)
		if len(got) != len(c.want) {
			t.Fatalf("ReferenceSlots(%d, %d) = %v, want %v", c.reps, c.runs, got, c.want)
		}
		for k := range got {
			if got[k] != c.want[k] {
				t.Errorf("ReferenceSlots(%d, %d) = %v, want %v", c.reps, c.runs, got, c.want)
				break
			}
		}
	}
	for reps := 1; reps <= 7; reps++ {
		for runs := 0; runs <= 40; runs++ {
			got := ReferenceSlots(reps, runs)
			sum := 0
			for k, s := range got {
				if s < 0 || s > runs || (k > 0 && s < got[k-1]) {
					t.Fatalf("ReferenceSlots(%d, %d) = %v: out of order or range", reps, runs, got)
				}
				sum += s
			}
			// Centred: the slots' mean is within a run of the middle.
			if mid := float64(sum) / float64(reps); runs > 0 && (mid < float64(runs)/2-1 || mid > float64(runs)/2+0.5) {
				t.Errorf("ReferenceSlots(%d, %d) = %v: mean slot %.2f, middle %.1f", reps, runs, got, mid, float64(runs)/2)
			}
		}
	}
}
