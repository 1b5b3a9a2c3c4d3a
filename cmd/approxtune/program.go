package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/internal/launch"
	"github.com/approxtune/approxtune/internal/preload"
	"github.com/approxtune/approxtune/internal/programs"
	"github.com/approxtune/approxtune/internal/repl"
	"github.com/approxtune/approxtune/session"
	"github.com/approxtune/approxtune/sweep"
	"gonum.org/v1/gonum/stat"
)

// runProgram is `approxtune program --check`: it runs the user's MPI
// program once under the local mpirun with the preload library and lists
// the interposed routines it called.
func runProgram(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("program", "approxtune program --check [--ranks N] CMD [ARGS...] | --sweep FILE|-",
		`Tunes an MPI program as it is, through approxtune's preload library
(LD_PRELOAD), on the local mpirun. A program must be dynamically linked against
MPI and BLAS/LAPACK and call MPI_Init and MPI_Finalize.

A launch is timed from MPI_Init to MPI_Finalize, or, where the program calls
APPROXTUNE_BEGIN() and APPROXTUNE_END() (include/approxtune.h) on every rank,
over the region between them; APPROXTUNE_SKIPPING() is 1 in a launch that may
skip kernels, for a program to skip its own result check there
(docs/programs.md; a Fortran program compiles include/approxtune_fortran.c
with its own and calls approxtune_begin(), approxtune_end() and
approxtune_skipping()).

--check runs CMD once and lists how often its ranks called each BLAS, LAPACK
and MPI routine the library intercepts, then names those it only counts (run
as they are, never skipped), the heavy routines the program calls that it
does not intercept, and what a launch times.

--sweep runs a sweep spec whose "program" gives the command, with the space's
parameters as placeholders ({b}, {n}, {grid_r}, {grid_c}, {grid_d}, {ranks}), and input
decks written per configuration from templates:
  {"program": {"command": ["./solver", "-nb", "{b}", "-p", "{grid_r}", "-q", "{grid_c}"],
               "decks": {"solver.dat": "solver.template"}},
   "space": {"b": [32, 64], "grid": ["1x4", "2x2"]},
   "policies": ["conditional", "eager"], "tolerances": ["2^-1", "2^-3"], "mode": "evaluate"}
Each reference or selective run is one launch (apriori's selective run two: a
counting launch first) in a fresh directory holding the decks; the relative
paths of the program and of the templates are taken from the spec file's
directory, a relative file among the arguments from the launch's directory
(give it by absolute path, or as a deck). "messages": "run"
runs every message and collective, skipping kernels alone, for a program that
sends indices among its floating-point data (HPL; docs/programs.md). It prints the
sweep's events as JSON lines, as 'approxtune agent --sweep' does, and the
program's own output on standard error, each launch under a heading. A launch
that runs past --deadline is stopped as hung, and the sweep ends (exit 1); a
search's ("search": "halving" or "random", one policy: docs/programs.md)
selective launch, or finalist's full launch, is stopped alone, and its
configuration leaves the search, as one whose launch fails does (exit 1 at
the end; where every finalist leaves, the other survivors run in full in
turn). An interrupt stops the launch under way and ends the sweep; the runs its
configuration finished are printed when its full runs were all taken (the
REPL's first Ctrl-C waits for the launch's end instead).`, stderr)
	check := fs.Bool("check", false, "run CMD once and list the intercepted routines it called")
	ranks := fs.Int("ranks", 2, "start `N` ranks (--check)")
	sweepPath := fs.String("sweep", "", "run the sweep spec `FILE` (or - for standard input) over the program it names")
	deadline := fs.String("deadline", "10x", "with --sweep, how long a launch may run before it is stopped as hung: `off`, a time (90s, 2h), or a multiple of its configuration's reference time or, before it has one, of the longest launch so far (a full run's: or of its configuration's predicted time, where longer) (10x; at least 5s; the first launch has none to go by)")
	if code, done := parse(fs, args); done {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "approxtune program: "+format+"\n", a...)
		return 1
	}
	// An interrupt, SIGTERM or a hang-up stops the launch and ends the
	// command as it would end anyway: with what it was doing said, and its
	// temporary folders removed (killed at once, it had left them, unsaid).
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	if *sweepPath != "" {
		if *check || fs.NArg() > 0 {
			return fail("--sweep takes the program from the spec: no --check and no command")
		}
		d, err := session.ParseDeadline(*deadline)
		if err != nil {
			return fail("--deadline: %v", err)
		}
		return programSweep(ctx, *sweepPath, d, stdout, stderr)
	}
	if !*check {
		fs.Usage()
		return fail("want --check CMD or --sweep FILE")
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return fail("want the program to run: approxtune program --check [--ranks N] CMD [ARGS...]")
	}
	if *ranks < 1 {
		return fail("--ranks %d: want 1 or more", *ranks)
	}
	c, err := checkProgram(ctx, *ranks, fs.Arg(0), fs.Args()[1:], stdout)
	if err != nil {
		return fail("%v", err)
	}
	printCheck(stdout, c)
	if path, err := exec.LookPath(fs.Arg(0)); err == nil {
		if note := preload.StaticKernelsNote(path); note != "" {
			fmt.Fprintln(stdout, note)
		}
		if asks, known := preload.AsksCutShort(path); preload.LinksFortranMarks(path) {
			fmt.Fprintln(stdout, "searches: it links include/approxtune_fortran.c, so whether it calls approxtune_cut_short() cannot be told here; where it does, on every rank at each iteration's end, a search's round may cut a launch short")
		} else if known {
			if asks {
				fmt.Fprintln(stdout, "searches: it calls APPROXTUNE_CUT_SHORT(), so a search's round may cut a launch short once its prediction has passed the configurations the round keeps")
			} else {
				fmt.Fprintln(stdout, "searches: each launch runs whole; to let a search's round cut short a launch that cannot be kept, call APPROXTUNE_CUT_SHORT() on every rank at each iteration's end and stop when it is 1 (include/approxtune.h)")
			}
		}
		// A review tuning hpcc found HPL's MPI_Iprobe and level-2 BLAS
		// nowhere in the check, with nothing said of them.
		if un := preload.Unintercepted(path, slices.Collect(maps.Keys(c.Calls))); len(un) > 0 {
			fmt.Fprintf(stdout, "%s also calls routines the library does not intercept: they run as they are in every launch, their time part of the time between kernels: %s\n",
				filepath.Base(path), strings.Join(un, ", "))
		}
		if !preload.ImportsMPI(path) {
			fmt.Fprintf(stdout, "note: %s calls no MPI itself (a shell or a launcher?): the routines the library does not intercept are named from the program itself, so check it directly\n", filepath.Base(path))
		}
	}
	// What a launch would fail at, which the check ran through: it had
	// passed such programs, and the sweep then failed or hung.
	if ps := c.Problems(); len(ps) > 0 {
		for _, p := range ps {
			fmt.Fprintln(stderr, "approxtune program: "+p)
		}
		return 1
	}
	return 0
}

// checkProgram runs prog with args on n ranks with the preload library and
// returns its check report; the program's own output goes to out.
func checkProgram(ctx context.Context, n int, prog string, args []string, out io.Writer) (*preload.Check, error) {
	path, err := exec.LookPath(prog)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", prog, err)
	}
	if err := preload.CheckLinkage(path); err != nil {
		return nil, err
	}
	lib, err := preload.Find()
	if err != nil {
		return nil, err
	}
	if err := preload.CheckMPI(path, lib); err != nil {
		return nil, err
	}
	l, err := launch.Find()
	if err != nil {
		return nil, err
	}
	if err := preload.CheckLauncher(path, l.Path, l.Flavor.Name()); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "approxtune-check")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	report := filepath.Join(dir, "check.json")
	rankProg, rankArgs := preload.Ranks(lib, path, args)
	cmd := l.Command(ctx, n, rankProg, rankArgs...)
	cmd.Env = append(cmd.Env, preload.EnvCheck+"="+report)
	programs.Supervise(cmd)
	// Its output goes straight to out, the terminal where it is one: in a
	// process group of its own, mpirun was stopped (SIGTTOU) at its first
	// line under 'stty tostop' (a review). A check's Ctrl-C may reach it:
	// nothing is measured.
	cmd.SysProcAttr.Setpgid = false
	var errs programs.Tail
	cmd.Stdout, cmd.Stderr = out, io.MultiWriter(out, &errs)
	if err := programs.RunLaunch(cmd); err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: interrupted", prog)
		}
		// Its output went to out as it came: where that is the terminal,
		// the error does not print it again.
		if f, ok := out.(*os.File); ok && repl.IsTerminal(f) {
			return nil, fmt.Errorf("%s failed under %s: %v (its output is above)", prog, l.Path, err)
		}
		return nil, fmt.Errorf("%s failed under %s: %v%s", prog, l.Path, err, errs.Lines(10))
	}
	c, err := preload.ReadCheck(report)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s never reached MPI_Finalize through approxtune's library: it does not call MPI_Init and MPI_Finalize, or links MPI statically, or calls MPI through Fortran's mpi_f08 module (in a library of its own, say: build that with 'use mpi'), or starts its MPI processes some other way; approxtune tunes programs that use MPI from a shared library", prog)
	}
	if err != nil {
		return nil, err
	}
	if len(c.Called()) == 0 {
		return nil, fmt.Errorf("%s called none of the routines approxtune intercepts (level-3 BLAS, LAPACK factorizations, MPI communication): is its BLAS linked statically, or does it call other routines?", prog)
	}
	return c, nil
}

// printCheck lists the routines a check run called.
func printCheck(w io.Writer, c *preload.Check) {
	fmt.Fprintf(w, "intercepted calls over %d ranks:\n", c.Ranks)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "routine\tcalls\tper rank\t")
	for _, n := range c.Called() {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t\n", n, c.Calls[n], float64(c.Calls[n])/float64(max(c.Ranks, 1)))
	}
	tw.Flush()
	var counted []string
	for _, n := range c.Counted {
		if c.Calls[n] > 0 {
			counted = append(counted, n)
		}
	}
	if len(counted) > 0 {
		slices.Sort(counted)
		fmt.Fprintf(w, "counted only, run as they are in selective runs (never skipped): %s\n", strings.Join(counted, ", "))
	}
	if l := regionLine(c); l != "" {
		fmt.Fprintln(w, l)
	}
}

// regionLine says what a launch of the checked program times, when its
// region marks are whole (Problems tells of the others): a review tuning
// HPL through hpcc, which marks nothing, had read nothing that said the
// whole suite was timed, HPL 0.024 s of its 7.1 s.
func regionLine(c *preload.Check) string {
	switch {
	case c.LinksMarks && c.Begin == 0:
		return "" // Problems says a launch fails without the mark
	case c.Begin == 0 && c.End == 0:
		return "timed: each launch whole, from MPI_Init to MPI_Finalize (no region marked): to time one part of the program alone, call APPROXTUNE_BEGIN() and APPROXTUNE_END() (include/approxtune.h; from Fortran, approxtune_begin() and approxtune_end(), include/approxtune_fortran.c) around it on every rank"
	case c.Begin == c.Ranks && c.BeginTwice == 0 && c.End == c.Ranks && c.EndTwice == 0:
		return "timed: the region from approxtune_begin to approxtune_end, marked on every rank"
	case c.Begin == c.Ranks && c.BeginTwice == 0 && c.End == 0:
		return "timed: from approxtune_begin, marked on every rank, to MPI_Finalize"
	}
	return ""
}

// programSweep runs the program sweep in the spec at path, printing its
// events on stdout and the program's own output on stderr.
func programSweep(ctx context.Context, path string, d session.Deadline, stdout, stderr io.Writer) int {
	fail := func(code int, format string, a ...any) int {
		fmt.Fprintf(stderr, "approxtune program: "+format+"\n", a...)
		return code
	}
	var data []byte
	var err error
	dir := "."
	if path == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(path)
		dir = filepath.Dir(path)
	}
	if err != nil {
		return fail(2, "%v", err) // a spec that cannot be read: a usage error, as for 'agent --sweep'
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return fail(1, "%v", err)
	}
	spec, err := sweep.Parse(data)
	if err != nil {
		return fail(2, "%v", err)
	}
	if spec.Program == nil {
		return fail(2, "sweep spec: no \"program\": a built-in workload runs with 'approxtune agent --sweep'")
	}
	if err := resolveDecks(spec.Program, dir); err != nil {
		return fail(2, "%v", err)
	}
	configs, err := spec.Validate(nil, nil, math.MaxInt32)
	if err != nil {
		return fail(2, "%v", err)
	}
	// As the REPL's 'space' does: a review's "q": [1] had run unremarked.
	if note := spec.Program.UnusedNote(sweep.SpaceOf(configs)); note != "" {
		fmt.Fprintln(stderr, "approxtune program: "+note)
	}
	lib, err := preload.Find()
	if err != nil {
		return fail(1, "%v", err)
	}
	l, err := launch.Find()
	if err != nil {
		return fail(1, "%v", err)
	}
	enc := json.NewEncoder(stdout)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watch := &launchWatch{d: d, configs: configs, stop: cancel}
	defer watch.ended()
	failed := 0 // selective runs that failed: told of as error events, the sweep going on
	r := &programs.Runner{Launcher: programs.Mpirun{Launcher: l}, Lib: lib, Dir: dir, Output: stderr, Emit: func(ev any) error {
		switch ev := ev.(type) {
		case sweep.ErrorEvent:
			failed++
		case sweep.Result:
			watch.predicted(ev)
		}
		return enc.Encode(ev)
	},
		Warn: func(msg string) { fmt.Fprintln(stderr, "approxtune program: warning: "+msg) }, Ended: watch.ended, Stoppable: watch.stoppable,
		Started: func(rs sweep.RunStart) {
			// The program's output, on standard error, under a heading
			// for each launch, as the REPL's program.log has it: it had
			// come unlabelled among mpirun's.
			label := ""
			if rs.Index >= 0 && rs.Index < len(configs) {
				label = configs[rs.Index].Label()
			}
			fmt.Fprintf(stderr, "== %s, %s ==\n", programs.Heading(rs, label), time.Now().Format(time.DateTime))
			watch.started(rs)
		}}
	if err := r.Sweep(ctx, spec, configs); err != nil {
		switch cause := context.Cause(ctx); {
		case errors.As(cause, new(*hungLaunch)):
			if errors.Is(err, programs.ErrPastResult) {
				// As the REPL says it: not the region, its exit.
				err = fmt.Errorf("%w; %s (--deadline 30x)", cause, programs.PastResultHint)
			} else {
				err = cause
			}
		case ctx.Err() != nil:
			err = errors.New("interrupted: the launch under way was stopped, and the sweep ended (its events so far are on standard output)")
		default:
			var ce *programs.ConfigError
			var le *programs.LaunchError
			if errors.As(err, &ce) && !errors.As(err, &le) && ce.Own() {
				// The REPL's resume skip=N has no counterpart here: a
				// crashing configuration had ended every sweep of the
				// spec, those after it never run (a review).
				first, rest, _ := strings.Cut(err.Error(), "\n")
				msg := first + " (the space is a product: leave out one of this configuration's values, and the configurations with it, to sweep the others)"
				if rest != "" {
					msg += "\n" + rest
				}
				err = errors.New(msg)
			}
		}
		_ = enc.Encode(sweep.ErrorEvent{Type: sweep.TypeError, V: sweep.ProtocolVersion, Message: err.Error()})
		return fail(1, "%v", err)
	}
	if failed > 0 {
		// A batch job reads the exit status: 3 of 4 configurations
		// crashed had ended with 0 and a choice among the one left.
		have := "have"
		if failed == 1 {
			have = "has"
		}
		if spec.Search != sweep.SearchNone {
			left := "their configurations left the search"
			if failed == 1 {
				left = "its configuration left the search"
			}
			return fail(1, "%s failed (their error events are on standard output): %s, and the search chose among the rest",
				format.Count(failed, "launch", "launches"), left)
		}
		return fail(1, "%s failed and %s no result (their error events are on standard output); the summaries are the other runs'",
			format.Count(failed, "selective run", "selective runs"), have)
	}
	return 0
}

// launchWatch stops a program sweep's launch that runs past the deadline
// (a deadlock): nothing else would end it, and a batch job would wait out
// its allocation (the REPL's sweeps had a deadline, 'program --sweep' none).
type launchWatch struct {
	d       session.Deadline
	configs []sweep.Config
	stop    context.CancelCauseFunc

	mu      sync.Mutex
	timer   *time.Timer
	began   time.Time               // the running launch's start (zero between launches)
	longest time.Duration           // the longest launch that ended so far
	preds   map[int]time.Duration   // each configuration's latest whole prediction (predicted)
	spare   context.CancelCauseFunc // the launch under way that a deadline stops alone (stoppable), or nil
	stopped bool                    // the launch under way was stopped alone: its time is no launch's length
}

// hungLaunch is the cause a launch past its deadline ends the sweep with.
type hungLaunch struct {
	label string
	kind  sweep.RunKind
	limit time.Duration
}

func (h *hungLaunch) Error() string {
	return fmt.Sprintf("configuration %s made no progress in a %s launch: it had not ended after %s (--deadline), so it was stopped and the sweep ended", h.label, h.kind, h.limit.Round(time.Millisecond))
}

// started arms the deadline of the launch rs starts.
func (w *launchWatch) started(rs sweep.RunStart) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.began = time.Now()
	limit := w.limit(rs)
	w.timer = nil
	if limit > 0 {
		h := &hungLaunch{label: fmt.Sprint(rs.Index), kind: rs.Kind, limit: limit}
		if rs.Index >= 0 && rs.Index < len(w.configs) {
			h.label = fmt.Sprintf("%d (%s)", rs.Index, w.configs[rs.Index].Label())
		}
		w.timer = time.AfterFunc(limit, func() {
			w.mu.Lock()
			spare := w.spare
			w.mu.Unlock()
			if rs.StoppableInSearch() && spare != nil {
				// A search's selective launch, or a finalist's: it
				// alone stops, its configuration leaving the search
				// (an error event).
				// Its time scales no later deadline: each stopped hang
				// had made the next one's ten times longer (5 s, 69 s,
				// then some 690 s in a review).
				w.mu.Lock()
				w.stopped = true
				w.mu.Unlock()
				spare(programs.ErrHung)
				return
			}
			w.stop(h)
		})
	}
}

// limit is the deadline of the launch rs starts (0: none): the deadline's
// multiple of its configuration's reference time where it has one, else
// of the longest launch so far or, for a full run, of the configuration's
// latest prediction, whichever is longer (w.mu held).
func (w *launchWatch) limit(rs sweep.RunStart) time.Duration {
	scale := w.longest
	switch p, ok := w.preds[rs.Index]; {
	case len(rs.ReferenceS) > 0:
		scale = time.Duration(stat.Mean(rs.ReferenceS, nil) * float64(time.Second))
	case ok && rs.Kind == sweep.RunReference:
		// A search's finalist runs longer than the selective launches
		// before it, the longest of which had allowed its full launch
		// no more than the multiple of a selective launch.
		scale = max(scale, p)
	}
	limit, _ := w.d.Limit(scale, time.Duration(rs.LaunchS*float64(time.Second)))
	return limit
}

// predicted keeps a result's whole prediction of its configuration's run
// (none where the run was cut short: a lower bound).
func (w *launchWatch) predicted(r sweep.Result) {
	if r.PredictedS == nil || !(*r.PredictedS > 0) || r.CutShort {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.preds == nil {
		w.preds = map[int]time.Duration{}
	}
	w.preds[r.Index] = time.Duration(min(*r.PredictedS, 365*24*3600) * float64(time.Second))
}

// stoppable is programs.Runner.Stoppable: the launch under way that a
// deadline stops alone.
func (w *launchWatch) stoppable(stop context.CancelCauseFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.spare = stop
}

// ended disarms the deadline of the launch that ended, and keeps its
// time: what comes between launches (results, the next configuration's
// preparation) is no launch's.
func (w *launchWatch) ended() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	if !w.began.IsZero() && !w.stopped {
		w.longest = max(w.longest, time.Since(w.began))
	}
	w.began, w.stopped = time.Time{}, false
}

// resolveDecks makes the deck templates' paths absolute from dir, so that
// validation reads the same files the runs do.
func resolveDecks(p *sweep.Program, dir string) error {
	for file, tmpl := range p.Decks {
		if strings.ContainsRune(file, '/') {
			return fmt.Errorf("sweep spec: program: deck %q: want a file name, written in the run's directory", file)
		}
		if !filepath.IsAbs(tmpl) {
			p.Decks[file] = filepath.Join(dir, tmpl)
		}
	}
	return nil
}
