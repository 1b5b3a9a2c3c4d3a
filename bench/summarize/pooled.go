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

// pooledMain pools the evaluate sweeps in files: per policy and tolerance,
// the mean over the sweeps of the speed-up, of the speed-up with every
// launch's cost counted (programs), and of the mean error, each with its
// 95% interval (Student's t over the sweeps), the quality of each sweep and
// each sweep's noise floor.
func pooledMain(files []string, w io.Writer) error {
	sweeps, err := readSweeps(files)
	if err != nil {
		return err
	}
	rows := map[string]*pooledRow{}
	var floors []string
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
			r.quals = append(r.quals, *e.Quality)
			if s, ok := launch[k]; ok {
				r.withLaunch = append(r.withLaunch, s)
			}
		}
		if floor, n := runError(evs); n > 0 {
			floors = append(floors, fmt.Sprintf("%.1f%%", 100*floor))
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
	fmt.Fprintf(w, "| policy | tolerance | speed-up | with launches | mean error | quality (per sweep) |\n| --- | --- | ---: | ---: | ---: | --- |\n")
	for _, r := range keys {
		q := make([]string, len(r.quals))
		for i, v := range r.quals {
			q[i] = fmt.Sprintf("%.3f", v)
		}
		wl := "-"
		if len(r.withLaunch) > 0 {
			wl = interval(r.withLaunch, "%.2fx ± %.2f", 1)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", r.policy, format.Tolerance(r.tol), interval(r.speedup, "%.2fx ± %.2f", 1), wl,
			interval(r.err, "%.1f%% ± %.1f", 100), strings.Join(q, ", "))
	}
	fmt.Fprintf(w, "\n%d sweeps; mean ± half-width of the 95%% interval over them; noise floors %s.\n", len(sweeps), strings.Join(floors, ", "))
	return nil
}

// interval formats the mean of xs (scaled) and the half-width of its 95%
// interval, Student's t with len(xs)-1 degrees of freedom.
func interval(xs []float64, layout string, scale float64) string {
	m, sd := stat.MeanStdDev(xs, nil)
	h := math.NaN()
	if n := float64(len(xs)); n > 1 {
		h = distuv.StudentsT{Mu: 0, Sigma: 1, Nu: n - 1}.Quantile(0.975) * sd / math.Sqrt(n)
	}
	return fmt.Sprintf(layout, scale*m, scale*h)
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
