package sweep

import (
	"maps"
	"math"
	"slices"

	"gonum.org/v1/gonum/floats"
)

// RunError is the machine's noise as a prediction error: how far one full
// run of a configuration is from the mean of that configuration's other full
// runs, relative to that mean, averaged over every reference run of every
// configuration that has at least two. It is what the mean error of a
// prediction as good as one more full run would come to, so a sweep's mean
// errors cannot be read below it. refs holds each configuration's reference
// times; n is the number of runs averaged (0 when no configuration has two).
func RunError(refs [][]float64) (mean float64, n int) {
	var sum float64
	for _, rs := range refs {
		k := len(rs)
		if k < 2 {
			continue
		}
		total := floats.Sum(rs)
		for _, r := range rs {
			others := (total - r) / float64(k-1)
			if others <= 0 {
				continue
			}
			sum += math.Abs(r-others) / others
			n++
		}
	}
	if n == 0 {
		return math.NaN(), 0
	}
	return sum / float64(n), n
}

// RunErrorByIndex is RunError over each configuration's references keyed by
// its index, taken in index order (so the sum, and its last digits, are the
// same every time).
func RunErrorByIndex(refs map[int][]float64) (mean float64, n int) {
	all := make([][]float64, 0, len(refs))
	for _, i := range slices.Sorted(maps.Keys(refs)) {
		all = append(all, refs[i])
	}
	return RunError(all)
}
