package main

import (
	"fmt"
	"io"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// timedTotals are one sweep's timed runs: the full runs (each
// configuration's mean reference time, summed), the selective runs (every
// result's selective time, summed) and the sweep's noise floor.
type timedTotals struct {
	ref, sel, floor float64
}

// sweepTotals sums the timed runs of one sweep's events.
func sweepTotals(evs []event) (timedTotals, error) {
	var t timedTotals
	refs := map[int]bool{}
	for _, e := range evs {
		if e.Type != "result" {
			continue
		}
		t.sel += e.SelectiveS
		if len(e.ReferenceS) > 0 && !refs[e.Index] {
			refs[e.Index] = true
			t.ref += stat.Mean(e.ReferenceS, nil)
		}
	}
	if len(refs) == 0 {
		return t, fmt.Errorf("no reference times: compare takes evaluate sweeps")
	}
	t.floor, _ = runError(evs)
	return t, nil
}

// ratioInterval is the mean of b[i]/a[i] over paired sweeps (the
// geometric mean, from the mean log ratio) and its 95% interval from
// Student's t over the pairs.
func ratioInterval(a, b []float64) (mean, lo, hi float64) {
	logs := make([]float64, len(a))
	for i := range a {
		logs[i] = math.Log(b[i] / a[i])
	}
	e := pool(logs)
	return math.Exp(e.mean), math.Exp(e.lo()), math.Exp(e.hi())
}

// compareMain compares two groups of evaluate sweeps of one spec, run in
// alternation (a[i] just before or after b[i]): how much longer the timed
// runs of group b took than those of group a, full runs and selective runs
// apart, paired by position, with 95% intervals, against the noise floors
// of the same sweeps.
func compareMain(a, b []string, w io.Writer) error {
	if len(a) != len(b) || len(a) < 2 {
		return fmt.Errorf("compare takes as many sweeps on each side of 'vs', at least two (got %d and %d)", len(a), len(b))
	}
	if err := distinct(append(slices.Clone(a), b...)); err != nil {
		return err
	}
	read := func(files []string) ([]timedTotals, error) {
		sweeps, err := readSweeps(files)
		if err != nil {
			return nil, err
		}
		out := make([]timedTotals, len(sweeps))
		for i, evs := range sweeps {
			if out[i], err = sweepTotals(evs); err != nil {
				return nil, fmt.Errorf("%s: %w", files[i], err)
			}
		}
		return out, nil
	}
	ta, err := read(a)
	if err != nil {
		return err
	}
	tb, err := read(b)
	if err != nil {
		return err
	}
	col := func(ts []timedTotals, f func(timedTotals) float64) []float64 {
		xs := make([]float64, len(ts))
		for i, t := range ts {
			xs[i] = f(t)
		}
		return xs
	}
	fmt.Fprintf(w, "| timed runs | first group, s | second group, s | second / first (95%% interval) |\n| --- | ---: | ---: | ---: |\n")
	for _, k := range []struct {
		name string
		f    func(timedTotals) float64
	}{{"full runs", func(t timedTotals) float64 { return t.ref }}, {"selective runs", func(t timedTotals) float64 { return t.sel }}} {
		xa, xb := col(ta, k.f), col(tb, k.f)
		m, lo, hi := ratioInterval(xa, xb)
		fmt.Fprintf(w, "| %s | %s | %s | %+.1f%% (%+.1f%% to %+.1f%%) |\n", k.name, interval(xa, "%.2f ± %.2f", 1), interval(xb, "%.2f ± %.2f", 1),
			100*(m-1), 100*(lo-1), 100*(hi-1))
	}
	floors := append(col(ta, func(t timedTotals) float64 { return t.floor }), col(tb, func(t timedTotals) float64 { return t.floor })...)
	lo, hi := floors[0], floors[0]
	for _, f := range floors {
		lo, hi = math.Min(lo, f), math.Max(hi, f)
	}
	fmt.Fprintf(w, "\n%d pairs of sweeps; noise floors %.1f%% to %.1f%% (mean %.1f%%).\n", len(a), 100*lo, 100*hi, 100*stat.Mean(floors, nil))
	return nil
}
