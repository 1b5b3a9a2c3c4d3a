package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/sweep"
	"gonum.org/v1/gonum/stat"
)

// rankFilter keeps the results of some policies and tolerances (empty: all).
type rankFilter struct {
	policies   []string
	tolerances []float64
}

func (f rankFilter) keeps(e event) bool {
	if len(f.policies) > 0 && !slices.Contains(f.policies, e.Policy) {
		return false
	}
	return len(f.tolerances) == 0 || slices.Contains(f.tolerances, *e.Tolerance)
}

// parseRankFilter reads -policies and -tolerances (comma-separated lists).
func parseRankFilter(policies, tolerances string) (rankFilter, error) {
	var f rankFilter
	for p := range strings.SplitSeq(policies, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if !slices.Contains(sweep.Policies(), p) {
			return f, fmt.Errorf("-policies: unknown policy %q: want some of %s", p, strings.Join(sweep.Policies(), ", "))
		}
		f.policies = append(f.policies, p)
	}
	for t := range strings.SplitSeq(tolerances, ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		v, err := sweep.ParseTolerance(t)
		if err != nil {
			return f, fmt.Errorf("-tolerances: %w", err)
		}
		f.tolerances = append(f.tolerances, v)
	}
	return f, nil
}

// rankRow is one policy and tolerance: how many pairs of configurations that
// differ only in the compared parameter its predictions order as their
// references do.
type rankRow struct {
	Policy      string
	Tolerance   float64
	Pairs, Same int
}

// valueRow is the prediction error of the runs at one value of the compared
// parameter.
type valueRow struct {
	Value                 string
	Runs, Under           int
	MeanAbs, MedianSigned float64
}

// splitConfig reads a configuration's value of param and the rest of the
// configuration (JSON, keys sorted).
func splitConfig(config json.RawMessage, param string) (val, rest string, err error) {
	var cfg map[string]any
	if err := json.Unmarshal(config, &cfg); err != nil {
		return "", "", fmt.Errorf("configuration %s: %w", config, err)
	}
	v, ok := cfg[param]
	if !ok {
		return "", "", fmt.Errorf("the configurations have no parameter %q: they have %s", param, strings.Join(slices.Sorted(maps.Keys(cfg)), ", "))
	}
	delete(cfg, param)
	r, _ := json.Marshal(cfg) // map keys come out sorted
	return fmt.Sprint(v), string(r), nil
}

// rankValues pools evaluate sweeps (one slice of events per sweep) and
// compares the configurations that differ only in parameter param: for each
// sweep, policy and tolerance, every two such configurations are ordered by
// their predictions and by their mean references, and the two orders are
// compared. It also gathers each value's signed errors.
func rankValues(sweeps [][]event, param string, f rankFilter) ([]rankRow, []valueRow, error) {
	type groupKey struct {
		sweep     int
		policy    string
		tolerance float64
		rest      string // the configuration without param
	}
	type point struct{ pred, ref float64 }
	groups := map[groupKey]map[string]point{}
	var gorder []groupKey
	signed := map[string][]float64{}
	var values []string
	for s, evs := range sweeps {
		for _, e := range evs {
			if e.Type != "result" || e.Error == nil || e.Tolerance == nil || len(e.ReferenceS) == 0 || !f.keeps(e) {
				continue
			}
			val, rest, err := splitConfig(e.Config, param)
			if err != nil {
				return nil, nil, err
			}
			k := groupKey{s, e.Policy, *e.Tolerance, rest}
			if groups[k] == nil {
				groups[k] = map[string]point{}
				gorder = append(gorder, k)
			}
			ref := stat.Mean(e.ReferenceS, nil)
			groups[k][val] = point{e.PredictedS, ref}
			if !slices.Contains(values, val) {
				values = append(values, val)
			}
			signed[val] = append(signed[val], e.PredictedS/ref-1)
		}
	}
	if len(values) < 2 {
		return nil, nil, fmt.Errorf("parameter %q takes %d value(s) in the evaluate results kept: want at least two to compare", param, len(values))
	}
	type rowKey struct {
		policy    string
		tolerance float64
	}
	rowOf := map[rowKey]int{} // index in rows
	var rows []rankRow
	for _, k := range gorder {
		g := groups[k]
		rk := rowKey{k.policy, k.tolerance}
		i, ok := rowOf[rk]
		if !ok {
			i = len(rows)
			rowOf[rk] = i
			rows = append(rows, rankRow{Policy: k.policy, Tolerance: k.tolerance})
		}
		r := &rows[i]
		for i, a := range values {
			for _, b := range values[i+1:] {
				pa, oka := g[a]
				pb, okb := g[b]
				if !oka || !okb {
					continue
				}
				r.Pairs++
				if (pa.pred < pb.pred) == (pa.ref < pb.ref) {
					r.Same++
				}
			}
		}
	}
	var vals []valueRow
	for _, v := range values {
		s := signed[v]
		vr := valueRow{Value: v, Runs: len(s), MedianSigned: sweep.Median(s)}
		for _, x := range s {
			vr.MeanAbs += math.Abs(x) / float64(len(s))
			if x < 0 {
				vr.Under++
			}
		}
		vals = append(vals, vr)
	}
	return rows, vals, nil
}

// rankingMain reads the sweeps in files and prints the comparison of the
// values of param as two markdown tables.
func rankingMain(files []string, param string, f rankFilter, w io.Writer) error {
	sweeps, err := readSweeps(files)
	if err != nil {
		return fmt.Errorf("-ranking: %w", err)
	}
	rows, vals, err := rankValues(sweeps, param, f)
	if err != nil {
		return fmt.Errorf("-ranking: %w", err)
	}
	fmt.Fprintf(w, "| policy | tolerance | pairs differing only in %s | ordered as their references |\n", param)
	fmt.Fprintln(w, "| --- | --- | ---: | ---: |")
	pairs, same := 0, 0
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s | %d | %d |\n", r.Policy, format.Tolerance(r.Tolerance), r.Pairs, r.Same)
		pairs, same = pairs+r.Pairs, same+r.Same
	}
	fmt.Fprintf(w, "| **all** | | **%d** | **%d** |\n\n", pairs, same)
	fmt.Fprintf(w, "| %s | runs | mean absolute error | median signed error | predictions under their references |\n", param)
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: |")
	for _, v := range vals {
		fmt.Fprintf(w, "| %s | %d | %.1f%% | %+.1f%% | %d |\n", v.Value, v.Runs, 100*v.MeanAbs, 100*v.MedianSigned, v.Under)
	}
	return nil
}
