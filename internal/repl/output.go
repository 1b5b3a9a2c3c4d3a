package repl

import (
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/session"
	"github.com/approxtune/approxtune/sweep"
	"gonum.org/v1/gonum/stat"
)

// termOutput prints command answers and, on a terminal, redraws a live area
// (progress line and chart) in place while a sweep runs.
type termOutput struct {
	mu    sync.Mutex
	w     io.Writer
	live  bool
	color bool
	drawn int // lines of the live area now on screen
	// width is the terminal's width in columns (<= 0: unknown): a live
	// area's line wider than it would wrap, and the redraw, which goes
	// up by lines, would leave its wrapped part behind each time.
	width func() int
	last  time.Time
	seen  int // results already reported (script mode)
	// headed is the sweep whose header script mode printed: a state
	// reported again before any result (the clock's) prints none.
	headed  *session.Sweep
	label   func(sweep.Config) string // labelOf's (Sweep.Labeler)
	labelOf *session.Sweep
}

func (o *termOutput) clearLive() {
	if o.drawn > 0 {
		fmt.Fprintf(o.w, "\r\033[%dA\033[J", o.drawn)
		o.drawn = 0
	}
}

// endLive leaves the live area on screen as it is.
func (o *termOutput) endLive() {
	o.mu.Lock()
	o.drawn = 0
	o.mu.Unlock()
}

func (o *termOutput) Print(text string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.clearLive()
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	io.WriteString(o.w, text)
}

// Clocked says that a live area shows the elapsed time going on between
// events (session.ClockedOutput).
func (o *termOutput) Clocked() bool { return o.live }

func (o *termOutput) Error(text string) {
	if o.color {
		o.Print("\033[31merror:\033[0m " + text)
		return
	}
	o.Print("error: " + text)
}

func (o *termOutput) Update(p session.Progress) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.live {
		o.scriptUpdate(p)
		return
	}
	if !p.Final && p.Note == "" && time.Since(o.last) < 200*time.Millisecond {
		return
	}
	o.last = time.Now()
	lines := []string{p.Line()}
	if c := session.TextChart(p.Sweep.ChartRows(), o.color); c != "" {
		lines = append(lines, strings.Split(strings.TrimSuffix(c, "\n"), "\n")...)
	}
	if o.width != nil {
		if w := o.width(); w > 1 {
			for i, l := range lines {
				lines[i] = fitWidth(l, w-1)
			}
		}
	}
	o.clearLive()
	if p.Note != "" {
		fmt.Fprintln(o.w, p.Note) // notes stay on screen above the live area
	}
	for _, l := range lines {
		fmt.Fprintln(o.w, l)
	}
	o.drawn = len(lines)
	if p.Final {
		o.drawn = 0
	}
}

// scriptUpdate prints one line per new result, and notes.
func (o *termOutput) scriptUpdate(p session.Progress) {
	sw := p.Sweep
	if p.Done == 0 && !p.Final && p.Note == "" && o.headed != sw {
		o.headed = sw
		o.seen = len(sw.Results)
		if sw.Spec.Search != sweep.SearchNone {
			// A search's runs are known only as its rounds end.
			fmt.Fprintf(o.w, "sweep %d: %s search=%s %s, policy %s\n", sw.ID, sw.Spec.Mode, sw.Spec.Search, sw.Workload, strings.Join(sw.Spec.Policies, ","))
		} else {
			runs := "runs"
			if p.Total == 1 {
				runs = "run"
			}
			fmt.Fprintf(o.w, "sweep %d: %s %s, %d %s\n", sw.ID, sw.Spec.Mode, sw.Workload, p.Total, runs)
		}
	}
	if o.labelOf != sw {
		o.labelOf, o.label = sw, sw.Labeler()
	}
	for ; o.seen < len(sw.Results); o.seen++ {
		r := sw.Results[o.seen]
		desc := "full runs " + fmtSecs(stat.Mean(r.ReferenceS, nil))
		if r.PredictedS != nil {
			tl := "-"
			if r.Tolerance != nil {
				tl = format.Tolerance(*r.Tolerance)
			}
			desc = fmt.Sprintf("%s at %s: predicted %s", r.Policy, tl, fmtSecs(*r.PredictedS))
			if r.CutShort {
				desc = fmt.Sprintf("%s at %s: cut short, predicted over %s", r.Policy, tl, fmtSecs(*r.PredictedS))
			}
			if r.Error != nil {
				desc += fmt.Sprintf(", reference %s, error %.1f%%", fmtSecs(stat.Mean(r.ReferenceS, nil)), 100**r.Error)
			}
		}
		fmt.Fprintf(o.w, "  [%d/%d] %s  %s: %s\n", o.seen+1, p.Total, session.FormatDuration(p.Elapsed), o.label(r.Config), desc)
	}
	if p.Note != "" {
		fmt.Fprintln(o.w, "  "+p.Note)
	}
}

func fmtSecs(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return format.Seconds(x) + "s"
}

// fitWidth cuts line to its first n visible characters, keeping its ANSI
// escape sequences (ESC [ ... letter), which take no column, and ending
// the colours of a cut line.
func fitWidth(line string, n int) string {
	var b strings.Builder
	visible, escaped := 0, false
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		if rs[i] == '\033' && i+1 < len(rs) && rs[i+1] == '[' {
			j := i + 2
			for j < len(rs) && !(rs[j] >= '@' && rs[j] <= '~') {
				j++
			}
			if j < len(rs) {
				b.WriteString(string(rs[i : j+1]))
				i, escaped = j, true
				continue
			}
		}
		if visible == n {
			if escaped {
				b.WriteString("\033[0m")
			}
			return b.String()
		}
		b.WriteRune(rs[i])
		visible++
	}
	return b.String()
}
