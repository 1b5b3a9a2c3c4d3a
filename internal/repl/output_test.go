package repl

import (
	"strings"
	"testing"

	"github.com/approxtune/approxtune/session"
	"github.com/approxtune/approxtune/sweep"
)

// A script's line per result says when a search cut a run short: its time
// is then a lower bound, not a prediction of the whole run.
func TestScriptLineCutShort(t *testing.T) {
	var b strings.Builder
	o := &termOutput{w: &b}
	tol, p1, p2 := 0.5, 0.0385, 0.0104
	sw := &session.Sweep{ID: 1, Spec: &sweep.Spec{Mode: sweep.ModeTune}, Workload: "cholesky2d", Results: []sweep.Result{
		{Index: 0, Policy: "eager", Tolerance: &tol, PredictedS: &p1, CutShort: true},
		{Index: 1, Policy: "eager", Tolerance: &tol, PredictedS: &p2},
	}}
	o.scriptUpdate(session.Progress{Sweep: sw, Done: 2, Total: 2})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "eager at 2^-1: cut short, predicted over 0.0385s") ||
		!strings.Contains(lines[1], "eager at 2^-1: predicted 0.0104s") || strings.Contains(lines[1], "cut short") {
		t.Errorf("script lines:\n%s", b.String())
	}
}
