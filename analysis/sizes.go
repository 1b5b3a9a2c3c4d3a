package analysis

import "slices"

// ModelParams chooses the parameters of a model of a routine measured at
// several sizes, each a list of n parameter values: those that vary over
// the sizes (the first parameter alone when none does), by index. constant
// are the others: fixed at every size, they are no parameter of the model.
//
// When two or more vary but not along lines (sizes where the others stay
// fixed), as the m, n and k of a tile algorithm's b x b x b gemm, which
// all follow b, FitModel fails with ErrNoLines, and a model of one derived
// size (a kernel's flops, a message's bytes) is what is left to fit.
func ModelParams(sizes [][]float64, n int) (use, constant []int) {
	for l := range n {
		var vals []float64
		for _, z := range sizes {
			if !slices.Contains(vals, z[l]) {
				vals = append(vals, z[l])
			}
		}
		if len(vals) > 1 {
			use = append(use, l)
		} else {
			constant = append(constant, l)
		}
	}
	if len(use) == 0 && n > 0 {
		use, constant = []int{0}, constant[1:]
	}
	return use, constant
}
