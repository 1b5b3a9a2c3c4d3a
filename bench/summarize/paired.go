package main

import (
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/approxtune/approxtune/internal/format"
	"gonum.org/v1/gonum/stat"
)

// pairKey names one configuration of one policy in one sweep.
type pairKey struct {
	sweep  int
	policy string
	index  int
}

// pairedRow is one policy's pooled comparison of its loosest and tightest
// tolerance.
type pairedRow struct {
	Policy       string
	Pairs        int
	Loose, Tight float64 // mean errors
	Diff, SE     float64 // mean of tight minus loose, and its standard error
}

// pairErrors pools the result events of several sweeps (one slice per
// sweep) and pairs, per policy, each configuration's error at the tightest
// tolerance of its sweep with its error at the loosest. Policies come in
// the order they first appear.
func pairErrors(sweeps [][]event) ([]pairedRow, float64, float64, error) {
	errs := map[pairKey]map[float64]float64{}
	var policies []string
	loose, tight := math.Inf(-1), math.Inf(1)
	for s, evs := range sweeps {
		for _, e := range evs {
			if e.Type != "result" || e.Error == nil || e.Tolerance == nil || *e.Tolerance <= 0 {
				continue
			}
			t := *e.Tolerance
			loose, tight = math.Max(loose, t), math.Min(tight, t)
			k := pairKey{s, e.Policy, e.Index}
			if errs[k] == nil {
				errs[k] = map[float64]float64{}
			}
			errs[k][t] = *e.Error
			if !slices.Contains(policies, e.Policy) {
				policies = append(policies, e.Policy)
			}
		}
	}
	if len(errs) == 0 {
		return nil, 0, 0, fmt.Errorf("no evaluate results with an error and a tolerance above 0")
	}
	if loose == tight {
		return nil, 0, 0, fmt.Errorf("every result has tolerance %g: want at least two tolerances to compare", loose)
	}
	var rows []pairedRow
	for _, p := range policies {
		var l, t, d []float64
		for k, m := range errs {
			el, okl := m[loose]
			et, okt := m[tight]
			if k.policy != p || !okl || !okt {
				continue
			}
			l, t, d = append(l, el), append(t, et), append(d, et-el)
		}
		r := pairedRow{Policy: p, Pairs: len(d), SE: math.NaN()}
		if len(d) > 0 {
			r.Loose, r.Tight, r.Diff = stat.Mean(l, nil), stat.Mean(t, nil), stat.Mean(d, nil)
		}
		if len(d) > 1 {
			r.SE = stat.StdErr(stat.StdDev(d, nil), float64(len(d)))
		}
		rows = append(rows, r)
	}
	return rows, loose, tight, nil
}

// pairedMain reads the sweeps in files and prints the pooled comparison as
// a markdown table.
func pairedMain(files []string, w io.Writer) error {
	sweeps, err := readSweeps(files)
	if err != nil {
		return fmt.Errorf("-paired: %w", err)
	}
	if _, err := pairedTable(w, sweeps); err != nil {
		return fmt.Errorf("-paired: %w", err)
	}
	return nil
}

// pairedTable prints the pooled comparison of the sweeps' loosest and
// tightest tolerance as a markdown table and returns its rows.
func pairedTable(w io.Writer, sweeps [][]event) ([]pairedRow, error) {
	rows, loose, tight, err := pairErrors(sweeps)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(w, "| policy | pairs | mean error %s | mean error %s | %s minus %s | standard error | |\n", format.Tolerance(loose), format.Tolerance(tight), format.Tolerance(tight), format.Tolerance(loose))
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: | ---: | ---: | --- |")
	for _, r := range rows {
		verdict := "no larger"
		switch {
		case r.Pairs == 0:
			verdict = "no pairs"
		case r.Pairs == 1 && r.Diff > 0:
			verdict = "larger in its one pair (no standard error)"
		case r.Diff-tQuantile(r.Pairs)*r.SE > 0:
			// As the targets read it: its 95% interval clears 0.
			verdict = "larger beyond its 95% interval"
		case r.Diff > 0:
			verdict = "larger, within its 95% interval"
		}
		se := "- (one pair)"
		if !math.IsNaN(r.SE) {
			se = fmt.Sprintf("%.2f points", 100*r.SE)
		}
		fmt.Fprintf(w, "| %s | %d | %.2f%% | %.2f%% | %+.2f points | %s | %s |\n", r.Policy, r.Pairs, 100*r.Loose, 100*r.Tight, 100*r.Diff, se, verdict)
	}
	return rows, nil
}

// readSweeps reads the events of the sweeps in files, one slice per file.
// It refuses a file named twice (the same path, or the same content under
// another name: one sweep pooled as two would narrow every interval) and
// a sweep that did not finish (complete).
func readSweeps(files []string) ([][]event, error) {
	if len(files) == 0 {
		return nil, fmt.Errorf("name the sweeps' output files (one evaluate sweep each)")
	}
	if err := distinct(files); err != nil {
		return nil, err
	}
	var sweeps [][]event
	for _, f := range files {
		evs, err := readFile(f)
		if err != nil {
			return nil, err
		}
		if err := complete(evs); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		sweeps = append(sweeps, evs)
	}
	return sweeps, nil
}

// distinct says which file is named twice among files: by its absolute,
// cleaned path, or by its content (a copy, or a link, under another name).
// Each file is one sweep; the same sweep twice is not two.
func distinct(files []string) error {
	paths := map[string]string{}
	sums := map[[sha256.Size]byte]string{}
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return err
		}
		if first, ok := paths[abs]; ok {
			return fmt.Errorf("%s is named twice (as %s and %s): want each sweep's file once", abs, first, f)
		}
		paths[abs] = f
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		if first, ok := sums[sum]; ok {
			return fmt.Errorf("%s holds the same events as %s: want each sweep's file once", f, first)
		}
		sums[sum] = f
	}
	return nil
}

// complete says why a sweep's events are not those of a finished sweep:
// an agent's sweep (and a session's journal of one) ends with its summary
// events after its last result, a search with its search event (the
// choice). A file cut short (the agent killed, the
// file copied while the sweep ran, the head of a file) has none there,
// and its partial references would move the pooled noise floor.
func complete(evs []event) error {
	last, summary := -1, false
	for i, e := range evs {
		switch e.Type {
		case "result":
			last, summary = i, false
		case "summary", "search":
			summary = true
		}
	}
	if last < 0 {
		return fmt.Errorf("no result events: want a finished sweep's events (approxtune agent --sweep, or a session's results.jsonl)")
	}
	if !summary {
		return fmt.Errorf("cut short: no summary or search event after its last result (result %d of the file's %d events): want a finished sweep's file; rerun the sweep, or leave the file out", last+1, len(evs))
	}
	return nil
}

// readFile reads one sweep's events from a file, gunzipping it if its name
// ends in .gz.
func readFile(name string) ([]event, error) {
	fh, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var r io.Reader = fh
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(fh)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		defer zr.Close()
		r = zr
	}
	evs, err := read(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return evs, nil
}
