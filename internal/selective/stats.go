package selective

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Stat is a running sample of kernel times: count, mean and the sum of squared
// deviations M2 (Welford), mergeable with Chan's formula.
type Stat struct {
	N    int64
	Mean float64
	M2   float64
}

// Add includes one observation.
func (s *Stat) Add(x float64) {
	s.N++
	d := x - s.Mean
	s.Mean += d / float64(s.N)
	s.M2 += d * (x - s.Mean)
}

// Merge includes another sample (Chan et al.'s parallel update).
func (s *Stat) Merge(o Stat) {
	if o.N == 0 {
		return
	}
	if s.N == 0 {
		*s = o
		return
	}
	n := s.N + o.N
	d := o.Mean - s.Mean
	s.Mean += d * float64(o.N) / float64(n)
	s.M2 += o.M2 + d*d*float64(s.N)*float64(o.N)/float64(n)
	s.N = n
}

// Var is the unbiased sample variance (NaN below two observations).
func (s Stat) Var() float64 {
	if s.N < 2 {
		return math.NaN()
	}
	return s.M2 / float64(s.N-1)
}

// quantiles caches two-sided Student t quantiles for one confidence level:
// q[df] for df = 1..len-1; past the table the normal quantile is used.
type quantiles struct {
	conf float64
	q    []float64
	z    float64
}

const maxDF = 512

func newQuantiles(conf float64) *quantiles {
	p := 1 - (1-conf)/2
	qs := &quantiles{conf: conf, q: make([]float64, maxDF+1), z: distuv.UnitNormal.Quantile(p)}
	qs.q[0] = math.Inf(1)
	for df := 1; df <= maxDF; df++ {
		qs.q[df] = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(df)}.Quantile(p)
	}
	return qs
}

func (qs *quantiles) t(df int64) float64 {
	if df <= maxDF {
		return qs.q[df]
	}
	return qs.z
}

// HalfWidth is the half-width of the confidence interval of the mean at the
// table's confidence level: t(n-1) · s / sqrt(n). It is +Inf below two
// observations.
func (qs *quantiles) HalfWidth(s Stat) float64 {
	if s.N < 2 {
		return math.Inf(1)
	}
	return qs.t(s.N-1) * math.Sqrt(s.Var()/float64(s.N))
}

// Predictable applies the rule h / (mean · sqrt(alpha)) <= epsilon with
// n >= nmin. Epsilon 0 never predicts (it means: skip nothing, even a kernel
// whose samples happen to be identical); a zero mean with zero spread is
// predictable; alpha below 1 counts as 1.
func (qs *quantiles) Predictable(s Stat, eps, alpha float64, nmin int64) bool {
	if eps <= 0 || s.N < nmin || s.N < 1 {
		return false
	}
	if alpha < 1 {
		alpha = 1
	}
	h := qs.HalfWidth(s)
	if math.IsInf(h, 1) {
		// One sample has no spread estimate; with nmin == 1 accept it.
		return nmin <= 1
	}
	if s.Mean <= 0 {
		return h == 0
	}
	return h/(s.Mean*math.Sqrt(alpha)) <= eps
}
