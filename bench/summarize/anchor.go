package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/approxtune/approxtune/internal/format"
)

// anchorResult is one policy x tolerance of the paper's tool (Critter with
// Capital's 3D Cholesky tuner), as its anchor's analyze.py writes it in
// results.json: the tool's speed-up, mean error and the quality of its
// choice against its own references of the same job.
type anchorResult struct {
	Policy   string   `json:"policy"`
	Epsilon  float64  `json:"epsilon"`
	Complete bool     `json:"complete"`
	Speedup  *float64 `json:"speedup"`
	Error    *float64 `json:"mean_rel_error"`
	Quality  *float64 `json:"quality_same_job"`
}

// readAnchor reads an anchor's results.json.
func readAnchor(path string) ([]anchorResult, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Results []anchorResult `json:"results"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f.Results, nil
}

// find returns the complete result of policy at tolerance tol.
func findAnchor(rs []anchorResult, policy string, tol float64) (anchorResult, bool) {
	for _, r := range rs {
		if r.Policy == policy && math.Abs(r.Epsilon-tol) < 1e-9 && r.Complete && r.Quality != nil && r.Speedup != nil && r.Error != nil {
			return r, true
		}
	}
	return anchorResult{}, false
}

// anchorTable compares approxtune's sweeps with the paper's tool run
// beside each of them (anchors[i] was run just before or after sweeps[i]):
// per policy and tolerance both tools' speed-up, mean error and quality,
// and the pooled paired difference of quality, with the target that
// approxtune's quality is at least the tool's in the same sweeps.
func anchorTable(w io.Writer, sweeps [][]event, anchors []string) error {
	if len(anchors) != len(sweeps) {
		return fmt.Errorf("%d anchor results for %d sweeps: want one per sweep", len(anchors), len(sweeps))
	}
	tools := make([][]anchorResult, len(anchors))
	for i, a := range anchors {
		rs, err := readAnchor(a)
		if err != nil {
			return err
		}
		tools[i] = rs
	}
	fmt.Fprintln(w, "\nThe paper's tool (Critter with Capital's tuner) run beside each sweep, on its own references:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| policy | tolerance | speed-up approxtune / tool | mean error approxtune / tool | quality approxtune (per sweep) | quality tool (per sweep) | quality difference |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- | --- | ---: |")
	var targets []string
	for _, pol := range policiesOf(sweeps) {
		for _, tol := range []float64{tol1, tol3, tol5} {
			var su, st, eu, et, qu, qt, d []float64
			for i, evs := range sweeps {
				s, ok := policySummary(evs, pol, tol)
				a, ok2 := findAnchor(tools[i], pol, tol)
				if !ok || !ok2 || math.IsNaN(qualityOf(s)) {
					continue
				}
				su, st = append(su, s.Speedup), append(st, *a.Speedup)
				eu, et = append(eu, *s.MeanError), append(et, *a.Error)
				qu, qt = append(qu, qualityOf(s)), append(qt, *a.Quality)
				d = append(d, qualityOf(s)-*a.Quality)
			}
			if len(d) == 0 {
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s / %s | %s / %s | %s | %s | %s |\n", pol, format.Tolerance(tol),
				interval(su, "%.2fx ± %.2f", 1), interval(st, "%.2fx ± %.2f", 1),
				interval(eu, "%.1f%% ± %.1f", 100), interval(et, "%.1f%% ± %.1f", 100),
				list(qu, "%.3f"), list(qt, "%.3f"), interval(d, "%+.3f ± %.3f", 1))
			var b strings.Builder
			target(&b, fmt.Sprintf("%s %s: quality approxtune minus tool >= 0 (%s)", pol, format.Tolerance(tol), plural(len(d), "sweep")), pool(d), 1, "%+.3f (%+.3f to %+.3f)", 0, true)
			targets = append(targets, b.String())
		}
	}
	if len(targets) == 0 {
		return fmt.Errorf("no policy and tolerance both in the sweeps and in the anchor results (complete)")
	}
	fmt.Fprintln(w, "\nTargets:")
	fmt.Fprintln(w)
	for _, t := range targets {
		fmt.Fprint(w, t)
	}
	return nil
}

// policiesOf lists the policies of the sweeps' summaries, in order of
// first appearance.
func policiesOf(sweeps [][]event) []string {
	var out []string
	seen := map[string]bool{}
	for _, evs := range sweeps {
		for _, e := range evs {
			if e.Type == "summary" && e.Policy != "" && !seen[e.Policy] {
				seen[e.Policy] = true
				out = append(out, e.Policy)
			}
		}
	}
	return out
}

// list writes each value in layout, comma separated.
func list(xs []float64, layout string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf(layout, x)
	}
	return strings.Join(s, ", ")
}
