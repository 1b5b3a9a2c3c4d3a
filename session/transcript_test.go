package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/approxtune/approxtune/sweep"
)

// figOut is an Output that shows figures.
type figOut struct {
	textOut
	figs int
}

func (o *figOut) Figure(*Figure) { o.figs++ }

// The recorder passes everything on, keeps a sweep's latest progress and
// its notes, copies the sweep as it was, and stays a FigureOutput only over one.
func TestRecorder(t *testing.T) {
	inner := &figOut{}
	rec, out := newRecorder(inner)
	if _, ok := out.(FigureOutput); !ok {
		t.Fatal("over a FigureOutput, the recorder is none")
	}
	if _, plain := newRecorder(&textOut{}); isFigureOutput(plain) {
		t.Fatal("over a plain Output, the recorder is a FigureOutput")
	}
	sw := &Sweep{ID: 1, Spec: &sweep.Spec{Mode: sweep.ModeEvaluate}, Status: "running"}
	out.Print("starting")
	for i, p := range []Progress{{Done: 0}, {Done: 1}, {Note: "cancelling"}, {Done: 2}, {Done: 2, Final: true}} {
		p.Sweep = sw
		if i == 1 {
			sw.Results = append(sw.Results, sweep.Result{Index: 0})
		}
		if p.Final {
			sw.Status = "cancelled"
		}
		out.Update(p)
	}
	out.(FigureOutput).Figure(&Figure{Name: "speedup"})
	out.Print("table")
	st := rec.step("evaluate", sw)
	var got []string
	for _, e := range st.Events {
		switch {
		case e.Figure != nil:
			got = append(got, "figure "+e.Figure.Name)
		case e.Progress != nil:
			got = append(got, "progress "+e.Progress.Note+map[bool]string{true: "final"}[e.Progress.Final])
			if e.Progress.Sweep == sw || e.Progress.Sweep != st.Last {
				t.Error("progress holds the live sweep, not the step's copy")
			}
		default:
			got = append(got, "print "+e.Text)
		}
	}
	if want := "print starting|progress cancelling|progress final|figure speedup|print table"; strings.Join(got, "|") != want {
		t.Errorf("events %q, want %q", strings.Join(got, "|"), want)
	}
	if inner.figs != 1 || !strings.Contains(inner.b.String(), "starting") || !strings.Contains(inner.b.String(), "table") {
		t.Errorf("not passed on: %d figures, %q", inner.figs, inner.b.String())
	}
	// A later change of the sweep (a resume) does not reach the step.
	sw.Results = append(sw.Results, sweep.Result{Index: 1})
	sw.Status = "ok"
	if len(st.Last.Results) != 1 || st.Last.Status != "cancelled" {
		t.Errorf("the step's sweep changed: %d results, %s", len(st.Last.Results), st.Last.Status)
	}
	// Replay sends the same, figures only to a FigureOutput.
	again := &figOut{}
	st.Replay(again)
	plain := &textOut{}
	st.Replay(plain)
	if again.figs != 1 || again.b.String() != plain.b.String() || !strings.Contains(plain.b.String(), "starting") {
		t.Errorf("replay: %d figures, %q / %q", again.figs, again.b.String(), plain.b.String())
	}
}

// Exec keeps comments and commands that succeeded, not failures nor
// 'export notebook'; export notebook without a writer says so.
func TestTranscript(t *testing.T) {
	s, err := New(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	out := &textOut{}
	for _, l := range []string{"  # a comment", "", "workload summa n=512", "reps 0", "reps 2", "export csv"} {
		s.Exec(ctx, l, out)
	}
	if err := s.Exec(ctx, "export notebook x.ipynb", out); err == nil || !strings.Contains(err.Error(), "column 8: export notebook: this session has no notebook writer") {
		t.Errorf("export notebook without a writer: %v", err)
	}
	var paths []string
	s.SetDefaultNotebook(func(steps []Step, path string) error {
		paths = append(paths, path)
		return nil
	})
	s.SetDefaultNotebook(nil) // the first one stays
	if err := s.Exec(ctx, "export notebook x.ipynb", out); err != nil || len(paths) != 1 || !strings.HasSuffix(paths[0], "/x.ipynb") {
		t.Fatalf("export notebook: %v %v", err, paths)
	}
	// It replaces a notebook it wrote, and no other file.
	mine, theirs := filepath.Join(t.TempDir(), "mine.ipynb"), filepath.Join(t.TempDir(), "theirs.ipynb")
	os.WriteFile(theirs, []byte("{}"), 0o644)
	if err := s.Exec(ctx, "export notebook "+theirs, out); err == nil || !strings.Contains(err.Error(), "exists and this session did not write it") {
		t.Errorf("export over another file: %v", err)
	}
	if err := s.Exec(ctx, "export notebook "+mine, out); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(mine, []byte("{}"), 0o644) // as the writer would have
	if err := s.Exec(ctx, "export notebook "+mine, out); err != nil {
		t.Errorf("export again over its own: %v", err)
	}
	var got []string
	for _, st := range s.Transcript() {
		got = append(got, st.Line)
		if st.Comment != strings.HasPrefix(st.Line, "#") {
			t.Errorf("%q: comment %v", st.Line, st.Comment)
		}
	}
	if want := "# a comment|workload summa n=512|reps 2"; strings.Join(got, "|") != want {
		t.Errorf("transcript %q, want %q", strings.Join(got, "|"), want)
	}
	if CommentText("  #  two spaces") != " two spaces" || CommentText("#none") != "none" || CommentText("#") != "" {
		t.Error("CommentText")
	}
	if !strings.Contains(out.b.String(), "wrote 2 commands to ") {
		t.Errorf("export printed %q", out.b.String())
	}
}

func isFigureOutput(o Output) bool {
	_, ok := o.(FigureOutput)
	return ok
}

// A reopened session's notebook begins by loading the session's journal:
// its transcript holds only the commands since the reopen, and a
// reviewer's export failed on its first cell, a plot of a sweep from
// before.
func TestExportAfterReopenLoadsTheJournal(t *testing.T) {
	dir := t.TempDir()
	writeJournal(t, dir, []*Sweep{tracedSweep(t)})
	var steps []Step
	s, err := New(Options{Dir: dir, Notebook: func(st []Step, path string) error { steps = st; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := &textOut{}
	for _, l := range []string{"table best", "export notebook " + filepath.Join(t.TempDir(), "again.ipynb")} {
		if err := s.Exec(context.Background(), l, out); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	var lines []string
	for _, st := range steps {
		lines = append(lines, st.Line)
	}
	if len(lines) != 3 || !steps[0].Comment || lines[1] != "load "+dir || lines[2] != "table best" {
		t.Errorf("exported %q; want a comment, load %s, then table best", lines, dir)
	}
	// The comment says the notebook needs the directory and runs nothing
	// again (a review's colleague could not reproduce from it).
	if len(lines) > 0 && !strings.Contains(lines[0], "journal in "+dir+", which the next cell loads; this notebook needs that directory, and does not run those sweeps again") {
		t.Errorf("the comment does not say the notebook depends on %s: %q", dir, lines[0])
	}
}

// A figure the REPL writes to a file where a notebook would show it goes
// into the transcript as the figure alone: an exported notebook's plot
// cell had the REPL's "wrote FILE" besides (a reviewer), which the kernel
// never prints.
func TestTranscriptFigureWithoutFileLine(t *testing.T) {
	s := sessionWith(t, knownSweep(t))
	t.Chdir(t.TempDir()) // the figure's default file goes there
	out := &textOut{}
	if err := s.Exec(context.Background(), "plot speedup", out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.b.String(), "wrote ") {
		t.Errorf("the REPL's output does not say where the figure went: %q", out.b.String())
	}
	steps := s.Transcript()
	st := steps[len(steps)-1]
	figures, texts := 0, 0
	for _, e := range st.Events {
		if e.Figure != nil {
			figures++
		}
		if strings.Contains(e.Text, "wrote ") {
			texts++
		}
	}
	if figures != 1 || texts != 0 {
		t.Errorf("transcript of 'plot speedup': %d figures and %d 'wrote' lines, want the figure alone", figures, texts)
	}
	// With a file, as a notebook does: the figure, and where it went (the
	// figure had been left out, its summary in its place).
	out.b.Reset()
	if err := s.Exec(context.Background(), "plot speedup s.png", out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.b.String(), "wrote ") || !strings.Contains(out.b.String(), "s.png") {
		t.Errorf("the REPL's output does not say where the figure went: %q", out.b.String())
	}
	steps = s.Transcript()
	st = steps[len(steps)-1]
	figures, texts = 0, 0
	for _, e := range st.Events {
		if e.Figure != nil {
			figures++
		}
		if strings.Contains(e.Text, "wrote ") && strings.HasSuffix(strings.TrimSpace(e.Text), "/s.png") {
			texts++
		}
	}
	if figures != 1 || texts != 1 {
		t.Errorf("transcript of 'plot speedup s.png': %d figures and %d 'wrote' lines, want one of each", figures, texts)
	}
}

// export notebook into a folder that does not exist says so, once, without
// the writer's temporary file (it had said "export notebook: export
// notebook: notebook: write ...: open .../.x.ipynb.914480279.tmp").
func TestExportNotebookMissingFolder(t *testing.T) {
	called := false
	s, err := New(Options{Dir: t.TempDir(), Notebook: func([]Step, string) error { called = true; return nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	dir := filepath.Join(t.TempDir(), "nodir")
	err = s.Exec(context.Background(), "export notebook "+filepath.Join(dir, "x.ipynb"), &textOut{})
	want := "column 17: export notebook: cannot write " + filepath.Join(dir, "x.ipynb") + ": the folder " + dir + " does not exist"
	if err == nil || err.Error() != want || called {
		t.Errorf("export notebook into a missing folder: %v (writer called: %v)\nwant %s", err, called, want)
	}
}

// A sweep interrupted (Cancel: Ctrl-C, Kernel > Interrupt, the cancel
// button) is in the transcript where it ran, marked failed, before the
// settings typed after it: it had been missing ('table best' after it then
// failed in the exported notebook), or, once resumed, put just before the
// resume, after a 'reps 1' it had not run with (a review).
func TestTranscriptKeepsInterruptedSweepInPlace(t *testing.T) {
	s := agentSession(t)
	execAll(t, s, &textOut{}, "workload synthetic steps=10,20,30,40,50,60 count=2 mean_us=20000", "policy conditional", "tolerance 2^-1", "reps 3")
	go func() {
		for s.Last() == nil || len(s.Last().Results) == 0 {
			time.Sleep(20 * time.Millisecond)
		}
		s.Cancel()
	}()
	if err := s.Exec(context.Background(), "evaluate", &textOut{}); err == nil || s.Last().Status != StatusCancelled {
		t.Fatalf("evaluate cancelled: %v, status %s", err, s.Last().Status)
	}
	execAll(t, s, &textOut{}, "reps 1", "table best")
	var lines []string
	for _, st := range s.Transcript() {
		l := st.Line
		if st.Failed != "" {
			l += " (failed)"
		}
		lines = append(lines, l)
	}
	if got := strings.Join(lines, "|"); !strings.HasSuffix(got, "|reps 3|evaluate (failed)|reps 1|table best") {
		t.Errorf("transcript %s: want the cancelled evaluate where it ran, before reps 1", got)
	}
}
