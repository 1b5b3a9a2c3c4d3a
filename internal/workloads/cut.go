package workloads

import "math"

// cutPoints marks the steps of a factorization of nt panels at which its run
// may be cut short (selective.Comm.CutShort): the first step past each
// m-th of its work, with the work of step k taken as (nt-k)² (a right-looking
// factorization's trailing update), so that a run is checked about m times
// however many panels it has, and never at step 0. A check costs a small
// reduction over the grid when a search gives the run a cutoff.
func cutPoints(nt, m int) []bool {
	at := make([]bool, nt)
	for j := 1; j < m; j++ {
		// Work done before step k is about 1 - (1 - k/nt)³ of the whole.
		k := int(math.Ceil(float64(nt) * (1 - math.Cbrt(1-float64(j)/float64(m)))))
		if k > 0 && k < nt {
			at[k] = true
		}
	}
	return at
}
