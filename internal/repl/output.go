package repl

import (
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

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
	// widths are the visible widths of those lines, and drawnAt the
	// terminal's width they were drawn at: a terminal narrowed since
	// (a window resized) has wrapped them into more rows.
	widths  []int
	drawnAt int
	// width is the terminal's width in columns (<= 0: unknown): a live
	// area's line wider than it would wrap, and the redraw, which goes
	// up by lines, would leave its wrapped part behind each time.
	width func() int
	// height is the terminal's height in rows (<= 0: unknown): a live area
	// taller than the screen cannot be gone back over, and each redraw
	// had left a whole frame in the scrollback.
	height func() int
	last   time.Time
	seen   int // results already reported (script mode)
	// headed is the sweep whose header script mode printed: a state
	// reported again before any result (the clock's) prints none.
	headed  *session.Sweep
	label   func(sweep.Config) string // labelOf's (Sweep.Labeler)
	labelOf *session.Sweep
}

func (o *termOutput) clearLive() {
	if o.drawn > 0 {
		fmt.Fprintf(o.w, "\r\033[%dA\033[J", o.rowsNow())
		o.drawn = 0
	}
}

// rowsNow is how many rows the live area takes now: a line per line drawn,
// more where the terminal has narrowed since and wrapped them (terminals
// reflow their lines on a resize; a narrowed window had kept about 9 stale
// rows above the next frame).
func (o *termOutput) rowsNow() int {
	w := 0
	if o.width != nil {
		w = o.width()
	}
	if w <= 1 || o.drawnAt <= 0 || w >= o.drawnAt || len(o.widths) != o.drawn {
		return o.drawn
	}
	rows := 0
	for _, n := range o.widths {
		rows += max(1, (n+w-1)/w)
	}
	return rows
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
	w, h := 0, 0
	if o.width != nil {
		w = o.width()
	}
	if o.height != nil {
		h = o.height()
	}
	lines := []string{p.LineWithin(w - 1)}
	if c := session.TextChartIn(p.Sweep.ChartRows(), o.color, max(w-1, 0)); c != "" {
		chart := strings.Split(strings.TrimSuffix(c, "\n"), "\n")
		if room := h - 2 - len(lines); h > 0 && !p.Final && len(chart) > room && room >= 2 {
			// What the screen cannot hold is left out while the sweep
			// runs; its last frame, which stays, has every row.
			chart = append(chart[:room-1], fmt.Sprintf("... %d more rows (the window is %d rows high)", len(chart)-room+1, h))
		}
		lines = append(lines, chart...)
	}
	if w > 1 {
		for i, l := range lines {
			lines[i] = fitWidth(l, w-1)
		}
	}
	o.clearLive()
	if p.Note != "" {
		fmt.Fprintln(o.w, p.Note) // notes stay on screen above the live area
	}
	o.widths = o.widths[:0]
	for _, l := range lines {
		fmt.Fprintln(o.w, l)
		o.widths = append(o.widths, visibleWidth(l))
	}
	o.drawn, o.drawnAt = len(lines), w
	if p.Final {
		o.drawn = 0
	}
}

// visibleWidth is the columns line takes: its runes less its ANSI escape
// sequences.
func visibleWidth(line string) int {
	return utf8.RuneCountInString(line) - escapeRunes(line)
}

// escapeRunes counts the runes of line's ANSI escape sequences (ESC [ ...
// letter).
func escapeRunes(line string) int {
	n := 0
	rs := []rune(line)
	for i := 0; i < len(rs); i++ {
		if j := escapeEnd(rs, i); j > 0 {
			n += j - i + 1
			i = j
		}
	}
	return n
}

// escapeEnd is the index of the last rune of the ANSI escape sequence (ESC
// [ ... letter) that starts at rs[i], or -1 where none does.
func escapeEnd(rs []rune, i int) int {
	if rs[i] != '\033' || i+1 >= len(rs) || rs[i+1] != '[' {
		return -1
	}
	j := i + 2
	for j < len(rs) && !(rs[j] >= '@' && rs[j] <= '~') {
		j++
	}
	if j >= len(rs) {
		return -1
	}
	return j
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
		if j := escapeEnd(rs, i); j > 0 {
			b.WriteString(string(rs[i : j+1]))
			i, escaped = j, true
			continue
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
