package display

import (
	"strings"
	"sync"
	"time"

	"github.com/approxtune/approxtune/session"
)

// PrintDelay is how long the last command of a cell may hold what it
// printed before it goes out as a stream: a command that finishes sooner
// makes it the cell's execute_result; a slow one (waiting for an agent to
// dial in, say) shows it while it waits. A second keeps a scheduler stall
// on a loaded machine (ranks polling in MPI) from turning a quick command's
// result into a stream.
const PrintDelay = time.Second

// Publisher sends the messages of a cell's output (stream, display_data,
// update_display_data, execute_result, error) with their content: the live
// kernel's iopub, or a Collector that stores them as notebook outputs (the
// headless executor of 'approxtune run', Export).
type Publisher interface {
	Publish(typ string, content map[string]any)
}

// Env is what a cell's output needs from what runs the cell.
type Env struct {
	// Last is the session's most recent sweep; End calls it, on the
	// goroutine that runs the cell.
	Last func() *session.Sweep
	// DisplayID makes a fresh display_id (see DisplayIDs).
	DisplayID func() string
	// Interval is the least time between two updates of a live display;
	// 0 sends every update.
	Interval time.Duration
	// PrintDelay is how long the last command may hold what it printed
	// (see the constant); 0 holds it until the command ends or its sweep
	// starts (a replay, where no time passes).
	PrintDelay time.Duration
	// DrawInterval is the least time between two drawings of a live
	// display's figures; 0 is session.LiveInterval. The sweep's end is
	// always drawn.
	DrawInterval time.Duration
	// Now is the clock DrawInterval is measured with; nil is time.Now.
	Now func() time.Time
}

// CellOutput is the session.Output of one cell. What commands print goes
// out as stream stdout, except the last command's answer, which is the
// execute_result (text/plain, and text/html). A sweep's progress is a
// live display: display_data with a display_id at the start, then
// update_display_data at most every Env.Interval, and always the final one.
// The display shows the sweep's figures (session.LiveFigures: speed-up and
// error, the same as 'plot speedup' and 'plot error' draw; configs for a
// tune sweep), redrawn in Update as results arrive, at most every
// Env.DrawInterval, and always at the end (see progressBundle). It is a
// session.LiveOutput: for an agent on this machine the session then gates
// the runs, so that each drawing, made in Update, falls between two runs.
// Its methods may be called from several goroutines.
type CellOutput struct {
	pub    Publisher
	env    Env
	silent bool
	count  int

	upd     sync.Mutex // one Update at a time: it draws without holding mu
	mu      sync.Mutex
	draws   int         // drawings made, for tests
	last    bool        // the running command is the cell's last
	pending string      // what it printed that has not gone out yet
	flush   *time.Timer // sends pending as a stream after printDelay
	final   *session.Sweep
	disp    *liveDisplay
	result  *string // the execute_result's text, once sent
	closed  bool
}

// liveDisplay is one sweep's display.
type liveDisplay struct {
	id    string
	sweep *session.Sweep
	notes []string
	rows  []session.ChartRow // the chart as last computed
	figs  figures            // as last drawn
	drawn time.Time          // when, by Env.Now
	// drawnOf is how many results the figures were drawn of: an update
	// with no new result (the clock's, at a run's start, which the agent
	// does not wait on) draws nothing, so no drawing overlaps a timed run.
	drawnOf int
	sent    time.Time
	pending Bundle // rendered, waiting for the interval to pass
	timer   *time.Timer
	final   bool
	// held is the latest update not rendered (see Update), or nil.
	held *session.Progress
}

// figures are a sweep's live figures as drawn (session.LiveFigures).
type figures struct {
	figs []*session.Figure // each as 'plot NAME' draws it
	row  *session.Figure   // all of them on one canvas
	err  error             // why they could not be drawn
}

// NewCellOutput returns the output of a cell, sent through pub; a silent
// cell sends nothing; count is its execution count.
func NewCellOutput(pub Publisher, env Env, silent bool, count int) *CellOutput {
	return &CellOutput{pub: pub, env: env, silent: silent, count: count}
}

// Begin starts a command; last says whether it is the cell's last.
func (o *CellOutput) Begin(last bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.last, o.final = last, nil
}

// End finishes a command: what it printed and still holds becomes the
// execute_result when the command was the cell's last and succeeded.
func (o *CellOutput) End(ok bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stopFlush()
	text := o.pending
	o.pending = ""
	if text == "" || o.silent || o.closed {
		return
	}
	sw := o.tableOf(text)
	switch {
	case ok && o.last:
		b := TextBundle(strings.TrimRight(text, "\n"))
		if sw != nil {
			b = tableBundle(sw, text)
		}
		o.pub.Publish("execute_result", map[string]any{"execution_count": o.count, "data": b, "metadata": map[string]any{}})
		o.result = &text
	case sw != nil:
		o.showTable(sw, text)
	default:
		o.stream(text)
	}
}

// tableOf returns the sweep whose best table ('table best', or what ends
// a sweep) text is, nil for other text. The table is also HTML wherever
// it comes: a cancelled sweep's, or one before the cell's last command,
// had been plain text beside the finished sweeps' HTML tables. It runs
// with the command, on the shell goroutine, where the session may be read.
func (o *CellOutput) tableOf(text string) *session.Sweep {
	sw := o.final
	if sw == nil {
		sw = o.env.Last()
	}
	if sw == nil || !isTableBest(sw, text) {
		return nil
	}
	return sw
}

// showTable shows sw's best table text as display data, text and HTML.
func (o *CellOutput) showTable(sw *session.Sweep, text string) {
	o.pub.Publish("display_data", map[string]any{"data": tableBundle(sw, text), "metadata": map[string]any{}, "transient": map[string]any{}})
}

// Close sends what is still held back and stops the timers; the output
// sends nothing more but the error (PublishError).
func (o *CellOutput) Close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stopFlush()
	if o.pending != "" && !o.silent {
		o.stream(o.pending)
		o.pending = ""
	}
	if d := o.disp; d != nil {
		if d.timer != nil {
			d.timer.Stop()
			d.timer = nil
		}
		if d.held != nil {
			// The cell's commands are over: its sweep no longer changes.
			d.rows = d.held.Sweep.ChartRows()
			d.pending, d.held = progressBundle(*d.held, d.notes, d.rows, d.figs), nil
		}
		if d.pending != nil {
			o.sendDisplay(d, "update_display_data", d.pending)
		}
	}
	o.closed = true
}

// ResultText is the execute_result's text (for history), or nil.
func (o *CellOutput) ResultText() any {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.result == nil {
		return nil
	}
	return strings.TrimRight(*o.result, "\n")
}

// Print shows a command's text.
func (o *CellOutput) Print(text string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.silent || o.closed {
		return
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	if !o.last {
		if sw := o.tableOf(text); sw != nil {
			o.showTable(sw, text)
		} else {
			o.stream(text)
		}
		return
	}
	o.pending += text
	if o.flush == nil && o.env.PrintDelay > 0 {
		o.flush = time.AfterFunc(o.env.PrintDelay, o.flushPending)
	}
}

func (o *CellOutput) flushPending() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.flush = nil
	if o.pending != "" && !o.closed {
		o.stream(o.pending)
		o.pending = ""
	}
}

func (o *CellOutput) stopFlush() {
	if o.flush != nil {
		o.flush.Stop()
		o.flush = nil
	}
}

// LiveFigures reports that the output draws a running sweep's figures
// (session.LiveOutput): every cell output does but a silent one.
func (o *CellOutput) LiveFigures() bool { return !o.silent }

// Update shows a sweep's progress in its live display. When a drawing of
// the figures is due (drawDue) it draws them first, holding only the lock
// that orders Updates: Print and Close go on meanwhile.
func (o *CellOutput) Update(p session.Progress) {
	o.upd.Lock()
	defer o.upd.Unlock()
	o.mu.Lock()
	if o.silent || o.closed || p.Sweep == nil {
		o.mu.Unlock()
		return
	}
	// What the command printed before its sweep started goes out first.
	o.stopFlush()
	if o.pending != "" {
		o.stream(o.pending)
		o.pending = ""
	}
	d := o.disp
	fresh := d == nil || d.sweep != p.Sweep || d.final
	if fresh {
		d = &liveDisplay{id: o.env.DisplayID(), sweep: p.Sweep}
		o.disp = d
	}
	if p.Note != "" {
		d.notes = append(d.notes, p.Note)
	}
	due := fresh || p.Final || p.Note != "" || time.Since(d.sent) >= o.env.Interval
	if !due && len(d.figs.figs) > 0 {
		// Not sent now, and it would wait for the next Update anyway
		// (below): rendering it, which summarizes every result so far,
		// waits too. Rendering each update made a sweep of 10,000 runs
		// quadratic in its results.
		d.held, d.pending = &p, nil
		o.mu.Unlock()
		return
	}
	d.held = nil
	// A note may come from the session's cancel goroutine while results
	// are being applied: keep the chart as it was and show the note.
	if fresh || p.Note == "" || p.Final {
		d.rows = p.Sweep.ChartRows()
	}
	now := o.now()
	draw := o.drawDue(d, p, now)
	o.mu.Unlock()

	var figs figures
	if draw {
		figs.figs, figs.row, figs.err = session.LiveFigures(p.Sweep, p.Final)
	}

	o.mu.Lock()
	defer o.mu.Unlock()
	if draw {
		d.figs, d.drawn, d.drawnOf = figs, now, len(p.Sweep.Results)
		o.draws++
	}
	if p.Final {
		d.final, o.final = true, p.Sweep
	}
	if o.closed {
		return
	}
	b := progressBundle(p, d.notes, d.rows, d.figs)
	switch {
	case fresh:
		o.sendDisplay(d, "display_data", b)
	case due:
		if d.timer != nil {
			d.timer.Stop()
			d.timer = nil
		}
		d.pending = nil
		o.sendDisplay(d, "update_display_data", b)
	default:
		d.pending = b
		// An update that carries figures is large (tens of kilobytes to
		// encode and send): it waits for the next Update, which comes
		// between two runs like this one, or Close, rather than for a
		// timer that would send it while a run is timed.
		if d.timer == nil && len(d.figs.figs) == 0 {
			d.timer = time.AfterFunc(o.env.Interval-time.Since(d.sent), func() { o.flushDisplay(d) })
		}
	}
}

// drawDue says whether Update draws d's figures now: when p brings the
// sweep's results (not a note, which may come while a run is timed) and
// DrawInterval has passed since the last drawing, or the sweep ended. An
// update that comes sooner shows the figures as last drawn; the next due
// one, or the final one, draws them again. o.mu is held.
func (o *CellOutput) drawDue(d *liveDisplay, p session.Progress, now time.Time) bool {
	if p.Note != "" || len(p.Sweep.Results) == 0 || (!p.Final && !d.drawn.IsZero() && len(p.Sweep.Results) == d.drawnOf) {
		return false
	}
	every := o.env.DrawInterval
	if every == 0 {
		every = session.LiveInterval
	}
	return p.Final || d.drawn.IsZero() || now.Sub(d.drawn) >= every
}

func (o *CellOutput) now() time.Time {
	if o.env.Now != nil {
		return o.env.Now()
	}
	return time.Now()
}

// flushDisplay sends an update held back by the interval.
func (o *CellOutput) flushDisplay(d *liveDisplay) {
	o.mu.Lock()
	defer o.mu.Unlock()
	d.timer = nil
	if d.pending != nil && !o.closed {
		o.sendDisplay(d, "update_display_data", d.pending)
		d.pending = nil
	}
}

func (o *CellOutput) sendDisplay(d *liveDisplay, typ string, b Bundle) {
	o.pub.Publish(typ, map[string]any{"data": b, "metadata": map[string]any{}, "transient": map[string]any{"display_id": d.id}})
	d.sent = time.Now()
}

func (o *CellOutput) stream(text string) {
	o.pub.Publish("stream", map[string]any{"name": "stdout", "text": text})
}

// PublishError publishes a failed cell's error output (unless the cell is
// silent): its ename, evalue and traceback.
func (o *CellOutput) PublishError(ename, evalue string, traceback []string) {
	if !o.silent {
		o.pub.Publish("error", map[string]any{"ename": ename, "evalue": evalue, "traceback": traceback})
	}
}

// Figure shows a figure (session.FigureOutput): PNG, SVG and its text summary.
func (o *CellOutput) Figure(f *session.Figure) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.silent || o.closed {
		return
	}
	o.pub.Publish("display_data", map[string]any{"data": figureBundle(f), "metadata": map[string]any{
		"image/png": map[string]any{"width": 800, "height": 450}}, "transient": map[string]any{}})
}
