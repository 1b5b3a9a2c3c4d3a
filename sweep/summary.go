package sweep

import (
	"math"

	"gonum.org/v1/gonum/stat"
)

// Measured is one selective run of a configuration as the summary figures
// see it.
type Measured struct {
	Config     int     // configuration index in the sweep
	PredictedS float64 // the engine's prediction of the full run's time
	SelectiveS float64 // the selective run's wall time
	ReferenceS float64 // the mean of the configuration's reference runs; NaN when it has none
}

// Error is the run's prediction error relative to its configuration's
// reference mean (NaN when it has none).
func (m Measured) Error() float64 {
	return math.Abs(m.PredictedS-m.ReferenceS) / m.ReferenceS
}

// Measured returns a selective run's result for Summarize; ok is false for a
// result with no prediction (a reference mode's full runs).
func (r Result) Measured() (m Measured, ok bool) {
	if r.PredictedS == nil {
		return Measured{}, false
	}
	m = Measured{Config: r.Index, PredictedS: *r.PredictedS, ReferenceS: math.NaN()}
	if r.SelectiveS != nil {
		m.SelectiveS = *r.SelectiveS
	}
	if len(r.ReferenceS) > 0 {
		m.ReferenceS = stat.Mean(r.ReferenceS, nil)
	}
	return m, true
}

// Figures summarize one policy at one tolerance over a sweep's selective
// runs. A run is judged when its configuration has references; the figures
// that compare with references are NaN when no run is.
type Figures struct {
	Runs            int     // selective runs
	Judged          int     // of which with references
	SelectiveTotalS float64 // sum of every run's wall time
	ReferenceTotalS float64 // sum of the judged runs' reference means
	// Speedup is ReferenceTotalS / SelectiveTotalS: how much faster the
	// selective runs were than full runs of the same configurations.
	Speedup float64
	// MeanError and MaxError are the mean and the largest of the judged
	// runs' prediction errors (Measured.Error).
	MeanError, MaxError float64
	// Chosen is the index in the runs of the least predicted time, the
	// configuration the policy would pick (-1 when there is none); Best, of
	// the least reference mean (-1 when no run is judged).
	Chosen, Best int
	// Quality is Best's reference mean over Chosen's: 1 when the policy
	// picked the configuration the full runs would have.
	Quality float64
}

// Summarize computes the figures of runs, taken in order.
func Summarize(runs []Measured) Figures {
	nan := math.NaN()
	f := Figures{Runs: len(runs), Speedup: nan, MeanError: nan, MaxError: nan, Quality: nan}
	predicted := make([]float64, len(runs))
	reference := make([]float64, len(runs))
	sumError, maxError := 0.0, math.Inf(-1)
	for i, r := range runs {
		predicted[i], reference[i] = r.PredictedS, r.ReferenceS
		f.SelectiveTotalS += r.SelectiveS
		if math.IsNaN(r.ReferenceS) {
			continue
		}
		f.Judged++
		f.ReferenceTotalS += r.ReferenceS
		e := r.Error()
		sumError += e
		maxError = math.Max(maxError, e)
	}
	f.Chosen, f.Best = Least(predicted), Least(reference)
	if f.Judged == 0 {
		return f
	}
	f.MeanError, f.MaxError = sumError/float64(f.Judged), maxError
	f.Speedup = f.ReferenceTotalS / f.SelectiveTotalS
	if f.Chosen >= 0 {
		f.Quality = reference[f.Best] / reference[f.Chosen]
	}
	return f
}

// Least returns the index of the least of xs, the first of equals, leaving
// NaNs and +Inf out; -1 when there is none.
func Least(xs []float64) int {
	least, at := math.Inf(1), -1
	for i, x := range xs {
		if x < least {
			least, at = x, i
		}
	}
	return at
}

// PolicySummary is the summary event of one policy at one tolerance over a
// sweep's selective runs of configs (runs index them).
func PolicySummary(workload string, mode Mode, policy string, tol float64, configs []Config, runs []Measured, elapsed float64) Summary {
	f := Summarize(runs)
	s := Summary{Type: TypeSummary, V: ProtocolVersion, Workload: workload, Mode: mode, Policy: policy, Tolerance: &tol,
		Configs: len(configs), SelectiveTotalS: f.SelectiveTotalS, ElapsedS: elapsed}
	if f.Chosen >= 0 {
		s.Chosen = &configs[runs[f.Chosen].Config]
	}
	if f.Judged > 0 {
		meanErr, maxErr, quality := f.MeanError, f.MaxError, f.Quality
		s.ReferenceTotalS, s.Speedup = f.ReferenceTotalS, f.Speedup
		s.MeanError, s.MaxError, s.Quality = &meanErr, &maxErr, &quality
		s.Best = &configs[runs[f.Best].Config]
	}
	return s
}

// ReferenceSlots says where the reps reference runs of a configuration go
// among its runs selective runs: reference k runs just before selective run
// slots[k] (runs: after the last). They sit at the middles of reps equal
// parts of the selective runs, so the references' mean is taken over the
// same stretch of time as the runs it judges.
func ReferenceSlots(reps, runs int) []int {
	slots := make([]int, reps)
	for k := range slots {
		slots[k] = (2*k + 1) * runs / (2 * reps)
	}
	return slots
}

// Tally is one policy at one tolerance over a sweep's selective runs.
type Tally struct {
	Policy    string
	Tolerance float64
	Runs      []Measured
}

// Summaries are a sweep's summary events: one for each tally with runs,
// carrying the references' noise floor where it has errors, or, for a
// sweep of references only (no tallies), one for its references. refMeans
// is each configuration's mean reference time (NaN for none), refRuns its
// reference times.
func Summaries(workload string, mode Mode, configs []Config, tallies []Tally, refMeans []float64, refRuns [][]float64, elapsed float64) []Summary {
	var runErr *float64
	if e, n := RunError(refRuns); n > 0 {
		runErr = &e
	}
	if len(tallies) == 0 {
		s := Summary{Type: TypeSummary, V: ProtocolVersion, Workload: workload, Mode: mode, Configs: len(configs),
			ReferenceError: runErr, ElapsedS: elapsed}
		for _, m := range refMeans {
			if !math.IsNaN(m) {
				s.ReferenceTotalS += m
			}
		}
		if b := Least(refMeans); b >= 0 {
			s.Best = &configs[b]
		}
		return []Summary{s}
	}
	var out []Summary
	for _, t := range tallies {
		if len(t.Runs) == 0 {
			continue
		}
		s := PolicySummary(workload, mode, t.Policy, t.Tolerance, configs, t.Runs, elapsed)
		if s.MeanError != nil {
			s.ReferenceError = runErr
		}
		out = append(out, s)
	}
	return out
}
