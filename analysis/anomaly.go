package analysis

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Execution is one timed execution of a routine (a kernel call, a task).
type Execution struct {
	Routine string
	// Rank is the MPI rank (or worker) that ran it; it is carried along,
	// not used by the fit.
	Rank int
	// Size is the work the execution did, in flops or bytes; > 0.
	Size float64
	// Duration is its time in seconds; > 0.
	Duration float64
}

// RoutineFit is one routine's regression of log duration on log size,
//
//	log(d) = Intercept + Slope·log(size) + ε,  ε ~ N(0, S²)
//
// (natural logarithms), fitted by least squares over its executions.
type RoutineFit struct {
	Routine string
	// N is the number of executions fitted.
	N                int
	Intercept, Slope float64
	// S is the residual standard deviation of log duration, with n-2
	// degrees of freedom (n-1 when Constant).
	S float64
	// Constant is true when all the routine's executions had one size: the
	// fit is then the mean log duration alone and Slope is 0.
	Constant bool

	meanX, sxx float64 // mean and spread Σ(xᵢ - x̄)² of log size
}

// Expected is the fitted duration at size, exp(Intercept + Slope·log(size)):
// the median duration under the model.
func (f RoutineFit) Expected(size float64) float64 {
	return math.Exp(f.Intercept + f.Slope*math.Log(size))
}

// Upper is the upper bound of the two-sided prediction interval at the
// given level for a new execution of the given size:
//
//	exp(ŷ₀ + t_{n-2, (1+level)/2} · S · sqrt(1 + 1/n + (x₀ - x̄)²/Σ(xᵢ - x̄)²))
//
// with x = log(size), ŷ₀ = Intercept + Slope·x₀. For a Constant fit it is
// exp(ȳ + t_{n-1, (1+level)/2} · S · sqrt(1 + 1/n)).
//
// A RoutineFit comes from DetectAnomalies; a zero one has no interval.
func (f RoutineFit) Upper(size float64, level float64) float64 {
	fit, margin := f.logBound(size, level)
	return math.Exp(fit + margin)
}

// logBound is the fitted log duration ŷ₀ at size and the half-width of
// the prediction interval around it, on the log scale.
func (f RoutineFit) logBound(size float64, level float64) (fit, margin float64) {
	x0 := math.Log(size)
	n := float64(f.N)
	dof, lev := n-2, 1/n
	if f.Constant {
		dof = n - 1
	} else {
		lev += (x0 - f.meanX) * (x0 - f.meanX) / f.sxx
	}
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: dof}.Quantile((1 + level) / 2)
	return f.Intercept + f.Slope*x0, t * f.S * math.Sqrt(1+lev)
}

// logSlack is how far above its bound, on the log scale, an execution
// must lie to be flagged: a relative 1e-9, far below any clock's
// resolution, so that the rounding of exp and log never flags one. A
// routine whose durations are all one value (a small kernel timed at the
// clock's resolution) has S = 0 and its bound at that value: compared
// as durations, exp(log d) one ulp below d had flagged every execution.
const logSlack = 1e-9

// Anomaly is an execution whose duration lies above the upper bound of its
// routine's prediction interval.
type Anomaly struct {
	// Index is the execution's position in the slice given to
	// DetectAnomalies.
	Index int
	Execution
	// Expected is the routine fit's duration at the execution's size.
	Expected float64
	// Upper is the upper bound of the prediction interval at its size.
	Upper float64
	// Ratio is Duration/Expected: how many times slower than expected.
	Ratio float64
}

// AnomalyReport is the result of DetectAnomalies.
type AnomalyReport struct {
	// Fits are the routines' regressions, by routine name.
	Fits []RoutineFit
	// Anomalies are the flagged executions, slowest relative to expectation
	// (largest Ratio) first.
	Anomalies []Anomaly
	// Skipped are the routines with fewer than 3 executions, not fitted.
	Skipped []string
}

// DetectAnomalies flags anomalous executions as paper 002 does (Section
// 4.1, "classical linear regression"): per routine, log(duration) is
// regressed on log(size) by least squares over all its executions, and an
// execution is anomalous when its duration lies above the upper bound of
// the two-sided prediction interval at the given level (0.95 in the paper's
// figures) for its size; see RoutineFit.Upper. Routines with fewer than 3
// executions are skipped. A routine whose executions all have one size is
// fitted by its mean log duration.
//
// The fit includes the anomalies themselves, as in the paper: a few slow
// executions widen the interval a little, while anomalies that are a large
// share of a routine's executions (beyond about 15% at 3x) hide themselves.
func DetectAnomalies(execs []Execution, level float64) (AnomalyReport, error) {
	if !(level > 0 && level < 1) {
		return AnomalyReport{}, fmt.Errorf("analysis: detect anomalies: level %g, want a value in (0, 1)", level)
	}
	byRoutine := make(map[string][]int)
	for i, e := range execs {
		if !(e.Size > 0) || math.IsInf(e.Size, 1) {
			return AnomalyReport{}, fmt.Errorf("analysis: detect anomalies: execution %d (%s): size %g, want a positive finite value", i, e.Routine, e.Size)
		}
		if !(e.Duration > 0) || math.IsInf(e.Duration, 1) {
			return AnomalyReport{}, fmt.Errorf("analysis: detect anomalies: execution %d (%s): duration %g, want a positive finite value", i, e.Routine, e.Duration)
		}
		byRoutine[e.Routine] = append(byRoutine[e.Routine], i)
	}
	var rep AnomalyReport
	for _, name := range slices.Sorted(maps.Keys(byRoutine)) {
		idx := byRoutine[name]
		if len(idx) < 3 {
			rep.Skipped = append(rep.Skipped, name)
			continue
		}
		x := make([]float64, len(idx))
		y := make([]float64, len(idx))
		for k, i := range idx {
			x[k] = math.Log(execs[i].Size)
			y[k] = math.Log(execs[i].Duration)
		}
		f := fitLogLog(name, x, y)
		rep.Fits = append(rep.Fits, f)
		for _, i := range idx {
			e := execs[i]
			fit, margin := f.logBound(e.Size, level)
			if math.Log(e.Duration)-fit > margin+logSlack {
				exp := math.Exp(fit)
				rep.Anomalies = append(rep.Anomalies, Anomaly{Index: i, Execution: e, Expected: exp, Upper: math.Exp(fit + margin), Ratio: e.Duration / exp})
			}
		}
	}
	slices.SortStableFunc(rep.Anomalies, func(a, b Anomaly) int { return cmp.Compare(b.Ratio, a.Ratio) })
	return rep, nil
}

// fitLogLog is the least-squares line y = a + b·x of one routine (x, y the
// logs of size and duration), or the mean of y when x is constant.
func fitLogLog(name string, x, y []float64) RoutineFit {
	n := len(x)
	f := RoutineFit{Routine: name, N: n, meanX: stat.Mean(x, nil)}
	if n > 1 {
		f.sxx = stat.Variance(x, nil) * float64(n-1)
	}
	if f.sxx <= 1e-12*float64(n)*max(1, f.meanX*f.meanX) {
		f.Constant = true
		f.Intercept, f.S = stat.MeanStdDev(y, nil)
		return f
	}
	f.Intercept, f.Slope = stat.LinearRegression(x, y, nil, false)
	rss := 0.0
	for i := range x {
		e := y[i] - f.Intercept - f.Slope*x[i]
		rss += e * e
	}
	f.S = math.Sqrt(rss / float64(n-2))
	return f
}
