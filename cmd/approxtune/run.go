package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/approxtune/approxtune/internal/jupyter"
	"github.com/approxtune/approxtune/internal/notebook"
	"github.com/approxtune/approxtune/session"
	"github.com/approxtune/approxtune/sweep"
)

func runNotebook(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("run", "approxtune run [--dir DIR] [--force] NB.ipynb [-o OUT.ipynb]",
		`Executes a notebook headless, without Jupyter nor Python: its code cells in
order, each through the Jupyter kernel's own code (the same outputs, MIME
bundles and sweep displays as in a notebook), then stores the outputs and
execution counts (1, 2, 3...) in the notebook. Markdown and raw cells are
left as they are; blank code cells are not run. The first sweep starts a
local agent under mpirun, as in the REPL; it is stopped at the end. Cells
run in the notebook's directory, as under Jupyter: a relative path in a
cell (a program, a deck template, an export) is taken from there.

A line on standard error tells how each cell went. The first failing cell
stops the run: the notebook so far is written, that cell carrying its error
output, and the exit status is 1. Ctrl-C stops a running sweep at the next
run boundary (twice: interrupts mpirun) and ends the run the same way.

Without -o the notebook is written back to NB.ipynb (whole: a temporary file
and a rename). A notebook of another kernel (python3, say) is refused: its
cells are not approxtune commands, and its stored outputs would be replaced
by their errors; --force runs them as approxtune commands all the same. The
place of the output is checked before any cell runs. Exit status 2: wrong
arguments, an unreadable notebook, another kernel's, or an output that
cannot be written.`, stderr)
	dir := fs.String("dir", "", "session `DIR` (default $APPROXTUNE_SESSION_DIR or $XDG_DATA_HOME/approxtune/sessions/ID)")
	outPath := fs.String("o", "", "write the executed notebook to `OUT.ipynb` (default: back to NB.ipynb)")
	force := fs.Bool("force", false, "run a notebook of another kernel's as approxtune commands")
	// Flags may come after the notebook too: approxtune run NB.ipynb -o OUT.ipynb.
	var paths []string
	for rest := args; ; {
		if code, done := parse(fs, rest); done {
			return code
		}
		if fs.NArg() == 0 {
			break
		}
		paths, rest = append(paths, fs.Arg(0)), fs.Args()[1:]
	}
	if len(paths) != 1 {
		fmt.Fprintf(stderr, "approxtune run: want one notebook, got %d (usage: approxtune run NB.ipynb [-o OUT.ipynb]; see approxtune run -h)\n", len(paths))
		return 2
	}
	in := paths[0]
	out := *outPath
	if out == "" {
		out = in
	}
	nb, err := notebook.ReadFile(in)
	if err != nil {
		fmt.Fprintf(stderr, "approxtune run: cannot read the notebook: %v\n", err)
		return 2
	}
	if ks, _ := nb.Metadata["kernelspec"].(map[string]any); ks == nil {
		nb.Metadata["kernelspec"] = notebook.Metadata()["kernelspec"]
	} else if name, _ := ks["name"].(string); name != notebook.KernelName && !*force {
		fmt.Fprintf(stderr, "approxtune run: %s is a notebook of the kernel %q, not approxtune's: its cells are not approxtune commands, and its stored outputs would be replaced by their errors (run it with its own kernel, e.g. jupyter nbconvert --to notebook --execute; or add --force to run its cells as approxtune commands)\n", in, name)
		return 2
	} else if name != notebook.KernelName {
		fmt.Fprintf(stderr, "approxtune run: note: the notebook's kernel is %q; --force: its cells run as approxtune commands\n", name)
	}
	nb.Metadata["language_info"] = notebook.LanguageInfo("")

	// The paths given here are the caller's; the cells' are the notebook's.
	inArg, outArg := in, out
	if *dir == "" {
		*dir = os.Getenv("APPROXTUNE_SESSION_DIR")
	}
	for _, p := range []*string{&in, &out, dir} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			fmt.Fprintf(stderr, "approxtune run: %v\n", err)
			return 2
		}
		*p = abs
	}
	// The output's place is checked now: a notebook that ran for an hour
	// must not end in a write that was bound to fail.
	f, err := os.CreateTemp(filepath.Dir(out), ".approxtune-run-*")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // not the probe's own name
		}
		fmt.Fprintf(stderr, "approxtune run: cannot write %s: %v\n", outArg, err)
		return 2
	}
	f.Close()
	os.Remove(f.Name())
	if err := os.Chdir(filepath.Dir(in)); err != nil {
		fmt.Fprintf(stderr, "approxtune run: cannot run in the notebook's directory: %v\n", err)
		return 1
	}

	s, err := session.New(session.Options{Dir: *dir, Binary: executable()})
	if err != nil {
		fmt.Fprintf(stderr, "approxtune run: %v\n", err)
		return 1
	}
	e := jupyter.NewExecutor(s)
	fmt.Fprintf(stderr, "approxtune run: %s, session journal in %s\n", inArg, s.Dir())

	// Ctrl-C interrupts the running cell as in the kernel (twice: mpirun)
	// and ends the run; SIGTERM and SIGHUP do both at once.
	var stopped atomic.Bool
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	defer func() {
		signal.Stop(sigs)
		close(done)
	}()
	go func() {
		for {
			select {
			case sig := <-sigs:
				first := !stopped.Swap(true)
				if sig != os.Interrupt {
					e.Stop() // at once what a second Ctrl-C does
					continue
				}
				if running := e.Interrupt(); first && running {
					fmt.Fprintln(stderr, "approxtune run: interrupted: a sweep stops at the next run boundary (interrupt again to stop its agent now: mpirun, or its Slurm job)")
				}
			case <-done:
				return
			}
		}
	}()

	code := runCells(nb, e, &stopped, stderr)
	if sw := s.Last(); code != 0 && sw != nil && len(sw.Missing()) > 0 && sw.Spec != nil && sw.Spec.Search == sweep.SearchNone {
		// The error's 'resume' is a command of a session, which a
		// notebook run does not keep open.
		fmt.Fprintf(stderr, "approxtune run: sweep %d stopped with %d of %d runs to go; to run just those: approxtune repl --dir %s, then 'resume'\n", sw.ID, len(sw.Missing()), sw.Total(), s.Dir())
	}
	if err := notebook.WriteFile(out, nb); err != nil {
		fmt.Fprintf(stderr, "approxtune run: %v\n", err)
		code = 1
	} else {
		fmt.Fprintf(stderr, "approxtune run: wrote %s\n", outArg)
	}
	if err := s.Close(); err != nil {
		fmt.Fprintf(stderr, "approxtune run: closing the session: %v\n", err)
	}
	return code
}

// runCells executes the code cells of nb in order, reporting each on
// stderr, and returns the exit status: 1 at the first failing cell (but
// one tagged raises-exception, which it goes on past), or when stopped is
// set before a cell.
func runCells(nb *notebook.Notebook, e *jupyter.Executor, stopped *atomic.Bool, stderr io.Writer) int {
	total := 0
	for _, c := range nb.Cells {
		if c.Type == notebook.Code && strings.TrimSpace(c.Source) != "" {
			total++
		}
	}
	n, warned := 0, false
	for i := range nb.Cells {
		c := &nb.Cells[i]
		if c.Type != notebook.Code {
			continue
		}
		if strings.TrimSpace(c.Source) == "" {
			e.Execute(c) // not run: clears its count and outputs
			continue
		}
		n++
		head := firstLine(c.Source)
		if heldControls(c) && !warned {
			warned = true
			fmt.Fprintf(stderr, "approxtune run: cell %d (%s) held controls when the notebook was saved: what they ran is not in its cells, so this run does not repeat it; type those commands into a cell to make the notebook run them ('export notebook' in the session that ran them writes them as cells)\n", i+1, head)
		}
		if stopped.Load() {
			fmt.Fprintf(stderr, "approxtune run: interrupted before cell %d (%s); it and the cells after it did not run\n", i+1, head)
			return 1
		}
		start := time.Now()
		err := e.Execute(c)
		took := time.Since(start).Seconds()
		if err != nil {
			fmt.Fprintf(stderr, "[%d/%d] cell %d: %s ... failed %.1f s\n", n, total, i+1, head, took)
			var ce *jupyter.CellError
			what := err.Error()
			if errors.As(err, &ce) {
				what = strings.ReplaceAll(ce.EValue, "\n", "\n  ")
				if ce.Interrupted {
					what = "interrupted: " + what
				}
			}
			if mayFail(c) && !stopped.Load() {
				// As nbconvert does: the notebook says the cell may
				// fail (an exported sweep the session had seen
				// interrupted or failed, and gone on past).
				fmt.Fprintf(stderr, "approxtune run: cell %d (%s) failed, as its raises-exception tag allows; going on: %s\n", i+1, head, what)
				continue
			}
			fmt.Fprintf(stderr, "approxtune run: cell %d (%s) failed: %s\n", i+1, head, what)
			return 1
		}
		fmt.Fprintf(stderr, "[%d/%d] cell %d: %s ... ok %.1f s\n", n, total, i+1, head, took)
	}
	return 0
}

// mayFail reports whether the code cell c is tagged raises-exception:
// Jupyter's mark of a cell expected to fail, past which a notebook's run
// goes on.
func mayFail(c *notebook.Cell) bool {
	tags, _ := c.Metadata["tags"].([]any)
	for _, t := range tags {
		if t == "raises-exception" {
			return true
		}
	}
	return false
}

// heldControls reports whether the code cell c, as saved, shows the
// kernel's controls (their widgets, or the line under them): commands run
// from the controls are the session's, never the notebook's cells.
func heldControls(c *notebook.Cell) bool {
	for _, o := range c.Outputs {
		if _, ok := o.Data[jupyter.WidgetViewMIME]; ok {
			return true
		}
		if t, _ := o.Data["text/plain"].(string); strings.HasPrefix(t, "approxtune controls") {
			return true
		}
	}
	return false
}

// firstLine is the first non-blank line of a cell, shortened.
func firstLine(src string) string {
	for _, l := range strings.Split(src, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if r := []rune(l); len(r) > 50 {
				l = string(r[:49]) + "…"
			}
			return l
		}
	}
	return ""
}
