package analysis

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

func TestPredictSkippedBasics(t *testing.T) {
	p, err := PredictSkipped(nil)
	if err != nil || p.Skipped != 0 || p.SE != 0 || p.HalfWidth(0.95) != 0 {
		t.Errorf("nothing skipped: %+v, %v; want zeros", p, err)
	}
	// 10 calls of 2±0.1 and 4 calls of 1±0.3: 24 ± sqrt(100·0.01 + 16·0.09) = sqrt(2.44).
	p, err = PredictSkipped([]KernelEstimate{{10, 2, 0.1}, {4, 1, 0.3}})
	if err != nil || math.Abs(p.Skipped-24) > 1e-12 || math.Abs(p.SE-math.Sqrt(2.44)) > 1e-12 {
		t.Errorf("got %+v, %v; want 24 ± %g", p, err, math.Sqrt(2.44))
	}
	if hw := p.HalfWidth(0.95); math.Abs(hw-1.959964*p.SE) > 1e-5 {
		t.Errorf("95%% half-width %g, want 1.96·SE", hw)
	}
	if !math.IsNaN(p.HalfWidth(1)) {
		t.Error("level 1 gave a half-width")
	}
	for _, c := range []struct {
		k    KernelEstimate
		want string
	}{
		{KernelEstimate{-1, 1, 1}, "count -1"},
		{KernelEstimate{1, math.NaN(), 1}, "mean NaN"},
		{KernelEstimate{1, 1, -0.5}, "standard error -0.5"},
	} {
		if _, err := PredictSkipped([]KernelEstimate{c.k}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %q", c.k, err, c.want)
		}
	}
}

// TestPredictSkippedCoverage simulates paths of five skipped kernels with
// known time distributions (exponential, log-normal, uniform, gamma,
// normal): each kernel is sampled 10 to 30 times, its mean and standard
// error estimated from the sample, and the path total predicted. The 95%
// interval covers the true expected total in at least 90% of 2000 trials
// (a little under 95%: the standard errors come from small samples) and
// not in nearly all (an interval that wide would be adding errors
// linearly).
func TestPredictSkippedCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 27))
	dists := []distuv.Rander{
		distuv.Exponential{Rate: 1 / 2e-3, Src: rng},
		distuv.LogNormal{Mu: math.Log(5e-4), Sigma: 0.5, Src: rng},
		distuv.Uniform{Min: 1e-3, Max: 3e-3, Src: rng},
		distuv.Gamma{Alpha: 4, Beta: 4 / 8e-3, Src: rng},
		distuv.Normal{Mu: 1e-2, Sigma: 1e-3, Src: rng},
	}
	means := []float64{2e-3, math.Exp(math.Log(5e-4) + 0.125), 2e-3, 8e-3, 1e-2}
	counts := []float64{500, 2000, 50, 300, 20}
	truth := 0.0
	for k := range dists {
		truth += counts[k] * means[k]
	}
	covered := 0
	const trials = 2000
	for range trials {
		ks := make([]KernelEstimate, len(dists))
		for k, d := range dists {
			x := make([]float64, 10+rng.IntN(21))
			for i := range x {
				x[i] = d.Rand()
			}
			m, s := stat.MeanStdDev(x, nil)
			ks[k] = KernelEstimate{Count: counts[k], Mean: m, SE: s / math.Sqrt(float64(len(x)))}
		}
		p, err := PredictSkipped(ks)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(p.Skipped-truth) <= p.HalfWidth(0.95) {
			covered++
		}
	}
	share := float64(covered) / trials
	t.Logf("95%% interval covers the true total in %.3f of %d trials", share, trials)
	if share < 0.9 || share > 0.97 {
		t.Errorf("coverage %.3f, want in [0.9, 0.97]", share)
	}
}
