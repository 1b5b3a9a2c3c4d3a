package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/approxtune/approxtune/internal/format"
)

// pooledRow is one policy and tolerance over several sweeps: each sweep's
// speed-up, speed-up with the launches counted, mean error and quality.
type pooledRow struct {
	policy                          string
	tol                             float64
	speedup, withLaunch, err, quals []float64
}

// pooledRows pools the policy summaries of sweeps per policy and
// tolerance, ordered by policy and loosest tolerance first.
func pooledRows(sweeps [][]event) []*pooledRow {
	rows := map[string]*pooledRow{}
	for _, evs := range sweeps {
		launch := launchSpeedups(evs)
		for _, e := range evs {
			if e.Type != "summary" || e.Policy == "" || e.MeanError == nil || e.Tolerance == nil {
				continue
			}
			k := fmt.Sprintf("%s %g", e.Policy, *e.Tolerance)
			r := rows[k]
			if r == nil {
				r = &pooledRow{policy: e.Policy, tol: *e.Tolerance}
				rows[k] = r
			}
			r.speedup = append(r.speedup, e.Speedup)
			r.err = append(r.err, *e.MeanError)
			if e.Quality != nil {
				r.quals = append(r.quals, *e.Quality)
			}
			if s, ok := launch[k]; ok {
				r.withLaunch = append(r.withLaunch, s)
			}
		}
	}
	keys := make([]*pooledRow, 0, len(rows))
	for _, r := range rows {
		keys = append(keys, r)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].policy != keys[j].policy {
			return keys[i].policy < keys[j].policy
		}
		return keys[i].tol > keys[j].tol
	})
	return keys
}

// findRow is the pooled row of a policy at a tolerance, or nil.
func findRow(rows []*pooledRow, policy string, tol float64) *pooledRow {
	for _, r := range rows {
		if r.policy == policy && r.tol == tol {
			return r
		}
	}
	return nil
}

// pooledTable prints the pooled rows as a markdown table.
func pooledTable(w io.Writer, rows []*pooledRow) {
	fmt.Fprintf(w, "| policy | tolerance | speed-up | with launches | mean error | quality | quality (per sweep) |\n| --- | --- | ---: | ---: | ---: | ---: | --- |\n")
	for _, r := range rows {
		q := make([]string, len(r.quals))
		for i, v := range r.quals {
			q[i] = fmt.Sprintf("%.3f", v)
		}
		wl := "-"
		if len(r.withLaunch) > 0 {
			wl = interval(r.withLaunch, "%.2fx ± %.2f", 1)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n", r.policy, format.Tolerance(r.tol), interval(r.speedup, "%.2fx ± %.2f", 1), wl,
			interval(r.err, "%.1f%% ± %.1f", 100), interval(r.quals, "%.3f ± %.3f", 1), strings.Join(q, ", "))
	}
}

// pooledMain pools the evaluate sweeps in files: per policy and tolerance,
// the mean over the sweeps of the speed-up, of the speed-up with every
// launch's cost counted (programs), of the mean error and of the quality,
// each with its 95% interval (Student's t over the sweeps), the quality of
// each sweep, and the sweeps' noise floors.
func pooledMain(files []string, w io.Writer) error {
	sweeps, err := readSweeps(files)
	if err != nil {
		return err
	}
	pooledTable(w, pooledRows(sweeps))
	fmt.Fprintf(w, "\n%s; mean ± half-width of the 95%% interval over them. %s\n", plural(len(sweeps), "sweep"), floorLine(noiseFloors(sweeps)))
	return nil
}

// estimate is a mean over sweeps and the half-width of its 95% interval
// (Student's t with n-1 degrees of freedom; NaN for one sweep).
type estimate struct {
	mean, half float64
	n          int
}

// lo and hi are the ends of the interval.
func (e estimate) lo() float64 { return e.mean - e.half }
func (e estimate) hi() float64 { return e.mean + e.half }

// pool is the mean of xs with its 95% interval.
func pool(xs []float64) estimate {
	m, sd := stat.MeanStdDev(xs, nil)
	return estimate{mean: m, half: tQuantile(len(xs)) * sd / math.Sqrt(float64(len(xs))), n: len(xs)}
}

// tQuantile is the 97.5% quantile of Student's t for a mean of n values
// (n-1 degrees of freedom): the factor of a 95% interval's half-width over
// the standard error. NaN for fewer than two values.
func tQuantile(n int) float64 {
	if n < 2 {
		return math.NaN()
	}
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(n - 1)}.Quantile(0.975)
}

// interval formats the mean of xs (scaled) and the half-width of its 95%
// interval, Student's t with len(xs)-1 degrees of freedom.
func interval(xs []float64, layout string, scale float64) string {
	if len(xs) == 0 {
		return "-"
	}
	e := pool(xs)
	if len(xs) == 1 {
		// One sweep has no interval: its figure alone, not "± NaN".
		return strings.SplitN(fmt.Sprintf(layout, scale*e.mean, 0.0), " ±", 2)[0] + " (1 sweep)"
	}
	return fmt.Sprintf(layout, scale*e.mean, scale*e.half)
}

// launchSpeedups is, per policy and tolerance ("policy tol"), the speed-up
// of a program sweep with every launch's cost counted: each configuration's
// full run costs its reference mean plus a launch, its selective run its
// selective time plus its launch. A result's launch_s holds its own
// launches' time beyond the timed regions and a share of the references'
// (internal/programs), so a launch's cost is taken as the configuration's
// launch_s summed over its results, over its launches. Sweeps without
// launch_s (the agent's) give none.
func launchSpeedups(evs []event) map[string]float64 {
	type cfg struct {
		ref             float64
		launchSum       float64
		runs, refs      int
		sel             map[string]float64
		selLaunchShares map[string]int
	}
	cfgs := map[int]*cfg{}
	for _, e := range evs {
		if e.Type != "result" || e.LaunchS == nil || e.Tolerance == nil || len(e.ReferenceS) == 0 || e.Policy == "" {
			continue
		}
		c := cfgs[e.Index]
		if c == nil {
			c = &cfg{ref: stat.Mean(e.ReferenceS, nil), refs: len(e.ReferenceS), sel: map[string]float64{}, selLaunchShares: map[string]int{}}
			cfgs[e.Index] = c
		}
		c.launchSum += *e.LaunchS
		c.runs++
		c.sel[fmt.Sprintf("%s %g", e.Policy, *e.Tolerance)] += e.SelectiveS
	}
	if len(cfgs) == 0 {
		return nil
	}
	full, approx := 0.0, map[string]float64{}
	for _, c := range cfgs {
		launch := c.launchSum / float64(c.runs+c.refs)
		full += c.ref + launch
		for k, s := range c.sel {
			approx[k] += s + launch
		}
	}
	out := map[string]float64{}
	for k, s := range approx {
		out[k] = full / s
	}
	return out
}
