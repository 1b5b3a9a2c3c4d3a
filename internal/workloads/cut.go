package workloads

import "math"

// cutPoints marks the steps of a factorization of nt panels at which its
// run may be cut short (selective.Comm.CutShort): the first step past
// each of a set of fractions of its work (densely at first, where a
// configuration far slower than a round's fastest passes its cutoff, then
// every eighth), with the work of step k taken as (nt-k)² (a right-looking
// factorization's trailing update), so that a run is checked at most
// 9 times however many panels it has, and never at step 0.
// A check costs a small reduction over the grid when a search gives the
// run a cutoff, and nothing otherwise.
func cutPoints(nt int) []bool {
	at := make([]bool, nt)
	for _, f := range []float64{1.0 / 32, 1.0 / 16, 1.0 / 8, 2.0 / 8, 3.0 / 8, 4.0 / 8, 5.0 / 8, 6.0 / 8, 7.0 / 8} {
		// Work done before step k is about 1 - (1 - k/nt)³ of the whole.
		k := int(math.Ceil(float64(nt) * (1 - math.Cbrt(1-f))))
		if k > 0 && k < nt {
			at[k] = true
		}
	}
	return at
}

// cutEvery marks every (nt/m)-th of nt steps (at least every step, never
// step 0) at which a run may be cut short: for a recursive factorization,
// whose base cases of equal size come between updates of every size, so
// that no step count tracks its work more closely than evenly.
func cutEvery(nt, m int) []bool {
	at := make([]bool, nt)
	step := max(nt/m, 1)
	for k := step; k < nt; k += step {
		at[k] = true
	}
	return at
}
