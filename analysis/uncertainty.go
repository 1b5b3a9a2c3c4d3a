package analysis

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// KernelEstimate is one skipped kernel on a path: it would have run Count
// times, and its time per call is estimated by the sample mean Mean with
// standard error SE (sample standard deviation over sqrt of the sample
// size).
type KernelEstimate struct {
	Count float64
	Mean  float64
	SE    float64
}

// PathPrediction is the predicted time of a path's skipped kernels.
type PathPrediction struct {
	// Skipped is Σ Count·Mean: the time the skipped kernels are predicted
	// to add to the path.
	Skipped float64
	// SE is its standard error, sqrt(Σ Count²·SE²).
	SE float64
}

// HalfWidth is the half-width of the normal confidence interval at the
// given level (e.g. 0.95) for the predicted total: z_{(1+level)/2}·SE.
// Measured time on the path adds no uncertainty, so the interval of the
// path's total is measured + Skipped ± HalfWidth. NaN for a level outside
// (0, 1).
func (p PathPrediction) HalfWidth(level float64) float64 {
	if !(level > 0 && level < 1) {
		return math.NaN()
	}
	return distuv.UnitNormal.Quantile((1+level)/2) * p.SE
}

// PredictSkipped propagates the uncertainty of skipped kernels' estimated
// means to a path's predicted total:
//
//	Skipped = Σ_k Count_k·Mean_k,  SE = sqrt(Σ_k Count_k²·SE_k²)
//
// Counts are exact; the kernels' mean estimates are taken as independent
// (each from its own sample), so their variances add. A kernel whose one
// estimate stands for several places on the path must be given once with
// the summed count: the same estimate's errors add linearly, which the
// summed count does. Nothing skipped gives zeros. It is a pure function.
func PredictSkipped(skipped []KernelEstimate) (PathPrediction, error) {
	var p PathPrediction
	v := 0.0
	for i, k := range skipped {
		switch {
		case !(k.Count >= 0) || math.IsInf(k.Count, 1):
			return PathPrediction{}, fmt.Errorf("analysis: predict skipped: kernel %d: count %g, want a finite value >= 0", i, k.Count)
		case math.IsNaN(k.Mean) || math.IsInf(k.Mean, 0):
			return PathPrediction{}, fmt.Errorf("analysis: predict skipped: kernel %d: mean %g, want a finite value", i, k.Mean)
		case !(k.SE >= 0) || math.IsInf(k.SE, 1):
			return PathPrediction{}, fmt.Errorf("analysis: predict skipped: kernel %d: standard error %g, want a finite value >= 0", i, k.SE)
		}
		p.Skipped += k.Count * k.Mean
		v += k.Count * k.Count * k.SE * k.SE
	}
	p.SE = math.Sqrt(v)
	return p, nil
}
