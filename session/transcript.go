package session

import (
	"strings"
	"sync"
)

// Step is one entry of a session's transcript: a command that succeeded,
// with what it sent to its Output, or a comment line. Exec records them;
// 'export notebook' writes them as a notebook (through Options.Notebook).
//
// Recorded: every command that succeeded (help and status too), a command
// that made a sweep and then failed (an interrupt, a cancel, a sweep that
// failed: Failed), or a resume that ran some of one before it failed, at
// its place, and the comment lines given to Exec (the
// REPL passes its '#' lines). Not recorded: other failed commands (a
// failed command changes nothing), blank lines, and 'export notebook'
// itself.
type Step struct {
	// Line is the command line as given to Exec, or the comment line
	// (trimmed, '#' included).
	Line string
	// Comment marks a comment line: no command ran and Events is empty.
	Comment bool
	// Events are what the command sent to its Output, in order. Of a
	// sweep's progress updates only those with a note and the latest one
	// are kept (the final one, once the sweep ended).
	Events []OutputEvent
	// Last is the session's most recent sweep when the command ended, as it
	// was then, or nil.
	Last *Sweep
	// Failed is, for a command that made a sweep and failed, its error:
	// an exported notebook marks its cell as one that may fail (Jupyter's
	// raises-exception tag), so that running the notebook again goes on
	// past it as the session did. Such a command had been recorded only
	// when a resume of its sweep succeeded, just before the resume and
	// after whatever was typed between: the settings typed after it came
	// first ('reps 1' before an evaluate that ran with reps 3), and an
	// interrupted sweep never resumed was missing (a review).
	Failed string
}

// OutputEvent is one thing a command sent to its Output: a figure when
// Figure is set, a sweep's progress when Progress is set, else printed Text.
// Sweeps in events are copies as they were when the command ended, so a
// later resume does not change what a step shows.
type OutputEvent struct {
	Text     string
	Progress *Progress
	Figure   *Figure
}

// Replay sends the step's events to out in order: what Exec sent when the
// command ran (figures only when out is a FigureOutput).
func (st Step) Replay(out Output) {
	for _, e := range st.Events {
		switch {
		case e.Figure != nil:
			if fo, ok := out.(FigureOutput); ok {
				fo.Figure(e.Figure)
			}
		case e.Progress != nil:
			out.Update(*e.Progress)
		default:
			out.Print(e.Text)
		}
	}
}

// CommentText is the text of a comment line: the line without its '#' and
// the one space after it.
func CommentText(line string) string {
	t := strings.TrimPrefix(strings.TrimSpace(line), "#")
	return strings.TrimPrefix(t, " ")
}

// NotebookFunc writes steps (a session's transcript) to path as a notebook.
// approxtune's own (package internal/display, which renders the outputs as
// the Jupyter kernel shows them) is set by the REPL, the kernel and
// 'approxtune run'; the session cannot hold it, as those renderings build
// on the session.
type NotebookFunc func(steps []Step, path string) error

// Transcript returns the steps recorded so far, oldest first.
func (s *Session) Transcript() []Step {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Step(nil), s.transcript...)
}

// SetDefaultNotebook sets the hook 'export notebook' writes through, unless
// Options.Notebook gave one: the REPL, the kernel and 'approxtune run' call
// it with approxtune's.
func (s *Session) SetDefaultNotebook(f NotebookFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opts.Notebook == nil {
		s.opts.Notebook = f
	}
}

func (s *Session) notebookFunc() NotebookFunc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts.Notebook
}

func (s *Session) record(st Step) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.transcript = append(s.transcript, st)
}

// recorder is the Output a command runs with: it passes everything on to
// the caller's Output and keeps it for the transcript. Its methods may be
// called from several goroutines, as Output's are.
type recorder struct {
	out    Output
	mu     sync.Mutex
	events []OutputEvent
	snaps  map[*Sweep]*Sweep // each sweep seen, and its copy
}

// figureRecorder is a recorder over a FigureOutput, so that commands still
// find a FigureOutput.
type figureRecorder struct {
	*recorder
	fo FigureOutput
}

// newRecorder returns the recorder and the Output to run the command with.
func newRecorder(out Output) (*recorder, Output) {
	r := &recorder{out: out, snaps: map[*Sweep]*Sweep{}}
	if fo, ok := out.(FigureOutput); ok {
		return r, figureRecorder{r, fo}
	}
	return r, r
}

// snapshot copies sw into its copy for this command (made on first sight);
// r.mu is held. The copy shares the slices, which only ever grow, at their
// present length.
func (r *recorder) snapshot(sw *Sweep) *Sweep {
	c, ok := r.snaps[sw]
	if !ok {
		c = &Sweep{}
		r.snaps[sw] = c
	}
	*c = *sw
	return c
}

// LiveFigures passes on whether the caller's Output draws live figures
// (LiveOutput).
func (r *recorder) LiveFigures() bool { return drawsLive(r.out) }

// Clocked passes on whether the caller's Output wants the clock's reports
// (ClockedOutput).
func (r *recorder) Clocked() bool {
	c, ok := r.out.(ClockedOutput)
	return ok && c.Clocked()
}

func (r *recorder) Print(text string) {
	r.mu.Lock()
	r.events = append(r.events, OutputEvent{Text: text})
	r.mu.Unlock()
	r.out.Print(text)
}

func (r *recorder) Update(p Progress) {
	if p.Sweep != nil {
		r.mu.Lock()
		q := p
		q.Sweep = r.snapshot(p.Sweep)
		n := len(r.events)
		if n > 0 {
			if prev := r.events[n-1].Progress; prev != nil && prev.Sweep == q.Sweep && prev.Note == "" && !prev.Final {
				n-- // the update it supersedes goes
			}
		}
		r.events = append(r.events[:n], OutputEvent{Progress: &q})
		r.mu.Unlock()
	}
	r.out.Update(p)
}

// recordFigure keeps a figure a command showed, or wrote to a file where a
// FigureOutput would have shown it.
func (r *recorder) recordFigure(f *Figure) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, OutputEvent{Figure: f})
}

func (r figureRecorder) Figure(f *Figure) {
	r.recordFigure(f)
	r.fo.Figure(f)
}

// step is the command's transcript entry; last is the session's last sweep.
func (r *recorder) step(line string, last *Sweep) Step {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := Step{Line: line, Events: append([]OutputEvent(nil), r.events...)}
	if last != nil {
		st.Last = r.snapshot(last)
	}
	return st
}

// printAside prints text to the caller's output but not into the
// transcript: the REPL's word on the file it wrote a figure to, where a
// notebook shows the figure, which the transcript keeps (recordFigure), and
// says nothing of a file.
func printAside(out Output, text string) {
	switch r := out.(type) {
	case *recorder:
		r.out.Print(text)
	case figureRecorder:
		r.out.Print(text)
	default:
		out.Print(text)
	}
}

// recordFigure tells out's recorder about a figure plot wrote to a file
// where a notebook would have shown it.
func recordFigure(out Output, f *Figure) {
	switch r := out.(type) {
	case *recorder:
		r.recordFigure(f)
	case figureRecorder:
		r.recordFigure(f)
	}
}
