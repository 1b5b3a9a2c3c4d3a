package repl

import (
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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

// On a terminal narrower than the live area, each line is cut to the
// width (less one column): a wrapped line took two rows, and the redraw,
// which goes up one row per line, left a stale copy behind at each update
// (a reviewer's 60 columns kept 13 frames in the scrollback). Colour
// codes take no column and a cut coloured line ends its colour.
func TestLiveAreaFitsTheTerminal(t *testing.T) {
	var b strings.Builder
	o := &termOutput{w: &b, live: true, color: true, width: func() int { return 30 }}
	tol, p := 0.5, 0.01
	sw := &session.Sweep{ID: 1, Spec: &sweep.Spec{Mode: sweep.ModeEvaluate, Policies: []string{"eager"}, Tolerances: []sweep.Tolerance{0.5}},
		Workload: "synthetic", Results: []sweep.Result{{Index: 0, Policy: "eager", Tolerance: &tol, PredictedS: &p, SelectiveS: &p, ReferenceS: []float64{0.05}}}}
	o.Update(session.Progress{Sweep: sw, Done: 1, Total: 3})
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) < 2 {
		t.Fatalf("live area: %q", b.String())
	}
	esc := regexp.MustCompile("\033\\[[0-9;]*[A-Za-z]")
	for _, l := range lines {
		if n := utf8.RuneCountInString(esc.ReplaceAllString(l, "")); n > 29 {
			t.Errorf("a line of %d columns on a terminal of 30: %q", n, l)
		}
		if strings.Contains(l, "\033[") && !strings.HasSuffix(l, "\033[0m") {
			t.Errorf("a coloured line that does not end its colour: %q", l)
		}
	}
	if got := fitWidth("\033[32m████\033[0m 12.5x", 3); got != "\033[32m███\033[0m" {
		t.Errorf("fitWidth: %q", got)
	}
}

// A narrow terminal keeps the progress line's counts and time left, not
// its head cut mid-word ("..., about 3" at 60 columns); a live area taller
// than the window holds what fits, saying how many rows it leaves out (a
// taller one had left a whole frame in the scrollback at each redraw);
// and a window narrowed since the last frame, whose lines the terminal
// has wrapped, is cleared over all their rows (about 9 stale rows had
// stayed above the next frame).
func TestLiveAreaNarrowAndShort(t *testing.T) {
	var results []sweep.Result
	var tols []sweep.Tolerance
	for k := 0; k < 12; k++ {
		tk := math.Exp2(-float64(k))
		tols = append(tols, sweep.Tolerance(tk))
		p := 0.01
		results = append(results, sweep.Result{Index: 0, Policy: "eager", Tolerance: &tk, PredictedS: &p, SelectiveS: &p, ReferenceS: []float64{0.05}})
	}
	sw := &session.Sweep{ID: 1, Spec: &sweep.Spec{Mode: sweep.ModeEvaluate, Policies: []string{"eager"}, Tolerances: tols},
		Workload: "synthetic", Results: results}
	p := session.Progress{Sweep: sw, Done: 14, Total: 24, Elapsed: 4 * time.Second, Running: "steps=40 count=4 mean_us=2000: eager at 2^-3"}
	if got := p.LineWithin(59); !strings.HasSuffix(got, "3s left") || utf8.RuneCountInString(got) > 59 {
		t.Errorf("progress line in 59 columns: %q", got)
	}
	var b strings.Builder
	width, height := 100, 10
	o := &termOutput{w: &b, live: true, width: func() int { return width }, height: func() int { return height }}
	o.Update(p)
	if o.drawn > height-1 || !strings.Contains(b.String(), "more rows (the window is 10 rows high)") {
		t.Errorf("a live area of %d rows in a window of %d:\n%s", o.drawn, height, b.String())
	}
	drawn := o.drawn
	width = 20 // the window narrowed: the lines drawn wrap
	if rows := o.rowsNow(); rows <= drawn {
		t.Errorf("after narrowing to 20 columns the %d lines take %d rows", drawn, rows)
	}
	width = 100
	if rows := o.rowsNow(); rows != drawn {
		t.Errorf("at the width they were drawn at, %d lines take %d rows", drawn, rows)
	}
	// At 60 columns the bars shrink and every row keeps its error figure.
	b.Reset()
	width, height = 60, 40
	o = &termOutput{w: &b, live: true, width: func() int { return width }, height: func() int { return height }}
	o.Update(p)
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n")[2:] {
		if !strings.HasSuffix(strings.TrimSpace(l), "%") || utf8.RuneCountInString(l) > 59 {
			t.Errorf("a chart row at 60 columns: %q", l)
		}
	}
}
