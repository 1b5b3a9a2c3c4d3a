package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// anchorFile writes a results.json as the anchor's analyze.py does, with
// eager's quality at each tolerance.
func anchorFile(t *testing.T, dir, name string, quality map[float64]float64) string {
	t.Helper()
	var rs []string
	for tol, q := range quality {
		rs = append(rs, fmt.Sprintf(`{"policy":"eager","epsilon":%g,"complete":true,"speedup":3.5,"mean_rel_error":0.06,"quality_same_job":%g}`, tol, q))
	}
	// An incomplete job is left out.
	rs = append(rs, `{"policy":"conditional","epsilon":0.5,"complete":false,"speedup":1.0,"mean_rel_error":0.01,"quality_same_job":1}`)
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(`{"machine":{},"results":[`+strings.Join(rs, ",")+`]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// With the paper tool's results after the word anchor, cholesky3d-eager
// sets both tools side by side per tolerance and judges approxtune's
// quality minus the tool's in the same sweeps: at 2^-1 approxtune chose
// better in every sweep (holds), at 2^-3 worse in every sweep (fails), at
// 2^-5 better or worse by turns (undecided).
func TestAnchorComparison(t *testing.T) {
	dir := t.TempDir()
	ours := [][3]float64{{1, 0.95, 0.97}, {0.99, 0.9, 1}, {1, 0.92, 0.95}}
	theirs := [][3]float64{{0.9, 1, 1}, {0.89, 1, 0.9}, {0.91, 0.98, 1}}
	var args, anchors []string
	for i := range ours {
		var sums []sum
		for j, tol := range []float64{tol1, tol3, tol5} {
			sums = append(sums, sum{"eager", tol, 4, 0.03, ours[i][j], 0})
		}
		args = append(args, sweepFile(t, dir, fmt.Sprintf("s%d.jsonl", i), eagerSpec, sums))
		anchors = append(anchors, anchorFile(t, dir, fmt.Sprintf("a%d.json", i), map[float64]float64{tol1: theirs[i][0], tol3: theirs[i][1], tol5: theirs[i][2]}))
	}
	got := bench(t, "cholesky3d-eager", append(append(args, "anchor"), anchors...))
	wantLines(t, got,
		"| eager | 2^-1 | 4.00x ± 0.00 / 3.50x ± 0.00 | 3.0% ± 0.0 / 6.0% ± 0.0 | 1.000, 0.990, 1.000 | 0.900, 0.890, 0.910 |",
		"- eager 2^-1: quality approxtune minus tool >= 0 (3 sweeps): +0.097 (+0.082 to +0.111): **holds**",
		"- eager 2^-3: quality approxtune minus tool >= 0 (3 sweeps): -0.070 (-0.136 to -0.004): **fails**",
		"- eager 2^-5: quality approxtune minus tool >= 0 (3 sweeps): +0.007 (-0.196 to +0.209): **undecided (the interval spans the target)**",
		"Eager's mean signed error",
	)
	if strings.Contains(got, "conditional") {
		t.Errorf("an incomplete job of the tool was compared:\n%s", got)
	}
	var out strings.Builder
	if err := benchMain("cholesky3d-eager", append(append(args, "anchor"), anchors[:2]...), &out); err == nil || !strings.Contains(err.Error(), "2 anchor results for 3 sweeps") {
		t.Errorf("2 anchors for 3 sweeps: %v, want an error saying so", err)
	}
}
