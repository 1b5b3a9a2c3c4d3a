// Package programs runs sweeps over a user's own MPI program
// (sweep.Program): each reference or selective run is one launch of the
// program (apriori's selective run two: its counting run first), under
// mpirun or as a Slurm job step (a Launcher), with approxtune's preload
// library, which times the run from MPI_Init to MPI_Finalize and, in a
// selective run, runs its BLAS, LAPACK and MPI calls through the engine
// (cmd/libapproxtune). It emits the same events as the agent's sweeps. It
// links no MPI.
package programs

import (
	"bytes"
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
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/internal/launch"
	"github.com/approxtune/approxtune/internal/preload"
	"github.com/approxtune/approxtune/internal/selective/policy"
	"github.com/approxtune/approxtune/sweep"
	"gonum.org/v1/gonum/stat"
)

// Launcher is how a program's runs start its ranks: the local mpirun
// (Mpirun), or a Slurm job step (the session's srun).
type Launcher interface {
	// Command returns the command that runs n ranks of prog with args,
	// env added to the environment the ranks see: the preload library's
	// variables travel this way, never on a command line. It fails when
	// the launcher can run nothing more (a Slurm job that ended, say).
	Command(ctx context.Context, n int, env []string, prog string, args ...string) (*exec.Cmd, error)
}

// A StartChecker is a Launcher that can tell from a failed launch's output
// that it never started the program (srun refused the job step: the job
// holding the nodes past its time limit, an MPI type Slurm lacks), found
// by a type assertion. Such a failure is the launcher's, not the
// configuration's: it ends the sweep as a LaunchError, with why, where it
// had read as the program's exit status and advised skipping a good
// configuration.
type StartChecker interface {
	// NotStarted returns why the launch whose output is out never
	// started the program, or "" when it did.
	NotStarted(out string) string
}

// UserThreads are the thread counts the user set for a program's ranks
// (OMP_NUM_THREADS, OPENBLAS_NUM_THREADS), as environment entries: the
// launchers' one thread a rank is for approxtune's own workloads, and a
// hybrid MPI + OpenMP program had been tuned on one thread, whatever the
// user had set.
func UserThreads() []string {
	var env []string
	for _, k := range []string{"OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"} {
		if v, ok := os.LookupEnv(k); ok && v != "" {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Mpirun launches the ranks under this machine's mpirun.
type Mpirun struct{ *launch.Launcher }

// Command is mpirun's command for n ranks, env added to mpirun's
// environment (which mpirun passes on to its ranks), supervised
// (Supervise).
func (m Mpirun) Command(ctx context.Context, n int, env []string, prog string, args ...string) (*exec.Cmd, error) {
	cmd := m.Launcher.Command(ctx, n, prog, args...)
	cmd.Env = append(append(cmd.Env, UserThreads()...), env...)
	Supervise(cmd)
	return cmd, nil
}

// StopGrace is how long a launcher stopped with SIGTERM has to end
// before it is killed.
const StopGrace = 5 * time.Second

// Supervise makes mpirun's command stop with SIGTERM when its context
// ends, on which mpirun takes its ranks down (killed outright, it left them
// to notice), and be killed if it has not ended within StopGrace; and get
// the same SIGTERM when the thread that started it dies (Runner and
// 'program --check' start launches on a locked thread), so a session
// killed with SIGKILL leaves no launch running (a hung one had run on for
// ever). mpirun runs in a process group of its own: a terminal's Ctrl-C,
// which goes to the whole foreground group, is the session's to handle,
// at a run boundary; it had reached mpirun too and killed the launch
// under way, reported as the program's failure with advice to skip its
// configuration (a review).
func Supervise(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGTERM
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = StopGrace
}

// RunLaunch runs a supervised launch to its end on a locked thread (its
// parent-death signal follows the thread that started it). A launcher
// that ended well while something it started still held its output past
// StopGrace (exec.ErrWaitDelay) ended well.
func RunLaunch(cmd *exec.Cmd) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err := cmd.Run()
	if errors.Is(err, exec.ErrWaitDelay) && cmd.ProcessState != nil && cmd.ProcessState.Success() {
		return nil
	}
	return err
}

// ConfigError is what ended a sweep at one of its configurations (a
// reference run that failed, a launch that could not be prepared): Index
// is the configuration's, which 'resume skip=N' leaves out.
type ConfigError struct {
	Index int
	Label string
	Err   error
}

// Own reports whether the configuration's own full run failed: the
// program exited with an error or crashed at this configuration, not a
// launcher stopped or killed from outside (SIGTERM, SIGKILL: a cancelled
// job, a killed srun), nor a refusal of the whole program. Skipping the
// configuration helps only then.
func (e *ConfigError) Own() bool {
	var re *referenceError
	var ee *exec.ExitError
	return errors.As(e.Err, &re) && errors.As(e.Err, &ee) && !stopped(ee)
}

// stopped says whether a launch that ended with ee was stopped from
// outside (SIGTERM, SIGKILL: a cancelled job, a killed mpirun or srun), as
// itself or as its launcher's exit status.
func stopped(ee *exec.ExitError) bool {
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal() == syscall.SIGTERM || ws.Signal() == syscall.SIGKILL
	}
	code := ee.ExitCode()
	return code == 128+int(syscall.SIGTERM) || code == 128+int(syscall.SIGKILL)
}

// failureHint says what to try after a selective launch of the program at
// path failed with err, or "": nothing for a launch stopped from outside;
// for an exit status the program chose, to skip its result check where
// APPROXTUNE_SKIPPING() is 1 (the check fails on what skipped kernels
// leave): plainly when the program is known not to ask it (an ELF
// executable that does not import it), as a question where it links it
// (a review's Fortran program linked it and never called it, and was told
// of stale messages alone) or cannot be read (a script); and while
// messages may be skipped, StaleMessagesHint. Every failure had been
// given the stale messages' hint, a killed mpirun and a failed result
// check too.
func failureHint(err error, path string, runsMessages, search bool) string {
	var hints []string
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if stopped(ee) {
			return "stopped from outside (SIGTERM or SIGKILL), not by the configuration"
		}
		ws, _ := ee.Sys().(syscall.WaitStatus)
		if !ws.Signaled() && ee.ExitCode() > 0 && ee.ExitCode() < 128 {
			const where = "APPROXTUNE_SKIPPING() is 1 (include/approxtune.h; from Fortran, approxtune_skipping(), include/approxtune_fortran.c)"
			switch asks, known := preload.AsksSkipping(path); {
			case known && !asks:
				hints = append(hints, "a program that checks its own results and exits with an error when they are wrong fails so in selective runs, whose skipped kernels leave them meaningless: skip the check where "+where)
			case known:
				hints = append(hints, "the program links APPROXTUNE_SKIPPING(): if what failed is its own result check, make sure the check is skipped where "+where)
			default:
				hints = append(hints, "if the program checks its own results and exits with an error when they are wrong, skip the check where "+where)
			}
		}
	}
	switch {
	case !runsMessages && search:
		hints = append(hints, StaleMessagesSearchHint)
	case !runsMessages:
		hints = append(hints, StaleMessagesHint)
	}
	return strings.Join(hints, "\n    ")
}

// referenceError is a configuration's reference run that failed.
type referenceError struct{ err error }

func (e *referenceError) Error() string { return "reference run: " + e.err.Error() }

func (e *referenceError) Unwrap() error { return e.err }

func (e *ConfigError) Error() string {
	return fmt.Sprintf("configuration %d (%s): %v", e.Index, e.Label, e.Err)
}

func (e *ConfigError) Unwrap() error { return e.Err }

// LaunchError is a launcher's refusal to run anything more: it ends the
// sweep, where a selective run's own failure does not.
type LaunchError struct{ Err error }

func (e *LaunchError) Error() string { return e.Err.Error() }

func (e *LaunchError) Unwrap() error { return e.Err }

// Runner runs program sweeps, each run a launch of the program.
type Runner struct {
	Launcher Launcher
	Lib      string // the preload library
	// Dir is where a relative program path or deck template is found
	// (the spec file's directory).
	Dir string
	// Emit receives the sweep's events, in order.
	Emit func(event any) error
	// Started, when set, is told of each launch just before it starts
	// (the session's deadline and clock go by it); Emit does not receive
	// these, as an agent's sweep file output has none.
	Started func(sweep.RunStart)
	// Ended, when set, is told when each run Started announced has
	// ended (its launches: apriori's selective run is two), however it
	// ended (a deadline armed at Started then stops).
	Ended func()
	// Warn, when set, is told what the sweep finds wrong with the program
	// that does not stop it: launches of one configuration that called
	// its routines a different number of times (callsDiffer), once a sweep.
	Warn   func(msg string)
	warned bool

	overhead float64 // the longest a launch took beyond its timed region so far
	timed    bool    // a launch of this sweep has ended: its time scales the next one's deadline
	// Output receives the program's own standard output and error.
	Output io.Writer
	// Scratch is where each configuration's run directory (its decks,
	// the run's result) and the policies' files between launches are
	// made; the program's ranks write there, so with ranks on other
	// nodes it must be on a file system they share. Empty means
	// os.TempDir().
	Scratch string
	// Carry, when set, emits after each configuration the statistics of
	// the policies that carry them from one configuration to the next
	// (sweep.Carried), for a session that can resume the sweep; the
	// spec's sweep.Spec.Carried are taken in either way.
	Carry bool
	// Stop, when set, is closed to stop the sweep at the end of the
	// launch under way (an interrupt), where cancelling the context stops
	// the launch itself: Sweep then returns ErrStopped.
	Stop <-chan struct{}
	// Stoppable, when set, is given the stop of each launch that may be
	// stopped alone while it runs, and nil once it has ended: a search's
	// selective launch, or a finalist's full launch
	// (sweep.RunStart.StoppableInSearch). Stopped with ErrHung (a
	// deadline), the launch fails, its configuration leaves the search,
	// and the search goes on.
	Stoppable func(stop context.CancelCauseFunc)
}

// ErrHung is the cause a launch is stopped alone with (Runner.Stoppable)
// when it has run past its deadline.
var ErrHung = errors.New("it ran past the deadline, hung, and was stopped")

// ErrPastResult is in the error of a launch stopped (its context done)
// after rank 0 had written its result at MPI_Finalize: what kept it was
// MPI_Finalize or the program's own exit, not its timed region.
var ErrPastResult = errors.New("it had written its result at MPI_Finalize and was stopped after it")

// PastResultHint says what a launch stopped as hung after its result
// (ErrPastResult) did, and what to try.
const PastResultHint = "it had written its result at MPI_Finalize and did not end after it (in MPI_Finalize or its own exit): on a loaded machine (more ranks than cores, another job beside it), a longer deadline lets it end"

// ErrStopped is Sweep's error when Stop stopped it at a launch's end.
var ErrStopped = errors.New("stopped at the end of a launch, as asked")

// stopping says whether Stop asks the sweep to stop.
func (r *Runner) stopping() bool {
	select {
	case <-r.Stop:
		return true
	default:
		return false
	}
}

// tally is one policy x tolerance over the configurations.
type tally struct {
	policy string
	tol    float64
	runs   []sweep.Measured
	state  string // a policy.Carrier's statistics between launches: the files' prefix
	counts bool   // a policy.Rehearser: a counting launch before each selective one
}

// Sweep runs the configurations of spec, which Validate expanded: every
// configuration under every policy and tolerance, or a search of the space
// (spec.Search: see search).
func (r *Runner) Sweep(ctx context.Context, spec *sweep.Spec, configs []sweep.Config) error {
	if spec.Program == nil {
		return fmt.Errorf("sweep spec has no program")
	}
	if spec.Search != sweep.SearchNone {
		return r.search(ctx, spec, configs)
	}
	t0 := time.Now()
	var tallies []*tally
	if spec.Mode != sweep.ModeReference {
		state, err := os.MkdirTemp(r.Scratch, "approxtune-state")
		if err != nil {
			return err
		}
		defer os.RemoveAll(state)
		for _, p := range spec.Policies {
			pol, err := policy.Lookup(p)
			if err != nil {
				return err
			}
			for k, t := range spec.Tolerances {
				tl := &tally{policy: p, tol: float64(t)}
				if _, ok := pol.(policy.Carrier); ok {
					tl.state = filepath.Join(state, fmt.Sprintf("%s-%d", p, k))
					if err := restoreCarried(spec.CarriedFor(p, float64(t)), tl.state); err != nil {
						return err
					}
				}
				_, tl.counts = pol.(policy.Rehearser)
				tallies = append(tallies, tl)
			}
		}
	}
	total := len(configs) * max(len(tallies), 1)
	if len(spec.Runs) > 0 {
		total = len(spec.Runs)
	}
	ranks := 0
	for _, c := range configs {
		ranks = max(ranks, spec.Program.Ranks(c))
	}
	if err := r.Emit(sweep.Start{Type: sweep.TypeStart, V: sweep.ProtocolVersion, Spec: spec, Configs: configs, Runs: total,
		Ranks: ranks, BLAS: "the program's own"}); err != nil {
		return err
	}
	done := 0
	refMeans := make([]float64, len(configs))
	refRuns := make([][]float64, len(configs))
	for i, c := range configs {
		refMeans[i] = math.NaN() // configurations not run stay NaN
		if !spec.WantsConfig(i) {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if r.stopping() {
			return ErrStopped
		}
		// A configuration cut short (an interrupt, a failed full run)
		// returns the runs it finished once its full runs are all taken,
		// which are reported before the error: an interrupt had lost
		// them, and resume ran them again.
		results, refs, cerr := r.configuration(ctx, spec, i, c, tallies)
		if len(refs) > 0 {
			refMeans[i], refRuns[i] = stat.Mean(refs, nil), refs
		}
		for _, res := range results {
			done++
			res.Done, res.Total = done, total
			if err := r.Emit(res.Result); err != nil {
				return err
			}
			if res.kernels != nil {
				if err := r.Emit(*res.kernels); err != nil {
					return err
				}
			}
		}
		var ran []*tally // with a result: a failed launch's tally carries nothing
		for _, res := range results {
			if res.tally != nil {
				ran = append(ran, res.tally)
			}
		}
		if err := r.carry(i, ran, spec.Program.Ranks(c)); err != nil {
			return err
		}
		switch {
		case errors.Is(cerr, ErrStopped):
			return ErrStopped
		case cerr != nil:
			return &ConfigError{Index: i, Label: c.Label(), Err: cerr}
		}
	}
	return r.summaries(spec, configs, tallies, refMeans, refRuns, time.Since(t0).Seconds())
}

// summaries emits the sweep's summary events.
func (r *Runner) summaries(spec *sweep.Spec, configs []sweep.Config, tallies []*tally, refMeans []float64, refRuns [][]float64, elapsed float64) error {
	ts := make([]sweep.Tally, len(tallies))
	for i, t := range tallies {
		ts[i] = sweep.Tally{Policy: t.policy, Tolerance: t.tol, Runs: t.runs}
	}
	for _, s := range sweep.Summaries(spec.Workload, spec.Mode, configs, ts, refMeans, refRuns, elapsed) {
		if err := r.Emit(s); err != nil {
			return err
		}
	}
	return nil
}

// configuration makes one configuration's runs: its references placed
// among its selective runs (sweep.ReferenceSlots), each a launch, and
// returns the result events and the references' times.
func (r *Runner) configuration(ctx context.Context, spec *sweep.Spec, i int, c sweep.Config, tallies []*tally) ([]launched, []float64, error) {
	dir, err := os.MkdirTemp(r.Scratch, "approxtune-run")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	l, err := r.prepare(spec.Program, c, dir)
	if err != nil {
		return nil, nil, err
	}
	var wanted []*tally
	for _, t := range tallies {
		if spec.Wants(i, t.policy, t.tol) {
			wanted = append(wanted, t)
		}
	}
	reps := spec.ReferenceReps
	if spec.Mode == sweep.ModeTune {
		reps = 0
	}
	var refs []float64
	if known := spec.References[i]; len(known) > 0 && len(tallies) > 0 && reps > 0 {
		// A resumed configuration whose earlier runs were judged
		// against these: its runs now are too.
		refs, reps = slices.Clone(known), len(known)
	}
	slots := sweep.ReferenceSlots(reps, len(wanted))
	if reps > 0 && len(refs) == 0 && !r.timed && len(spec.References) == 0 {
		// The sweep's first launch has nothing to scale its deadline by
		// (Deadline.Limit): a full run, the program as it is, goes first,
		// not a selective run, which the engine may make hang (with two
		// policies the first was one, and a hung launch ran on for ever).
		slots[0] = 0
	}
	launchS := 0.0
	references := func(j int) error {
		for len(refs) < reps && slots[len(refs)] <= j {
			if r.stopping() {
				return ErrStopped
			}
			r.started(sweep.RunStart{Index: i, Kind: sweep.RunReference, ReferenceS: refs})
			res, extra, err := l.run(ctx, preload.Run{Reference: true})
			r.ended()
			if err != nil {
				return &referenceError{err}
			}
			refs = append(refs, res.ReferenceS...)
			launchS += extra
		}
		return nil
	}
	if len(tallies) == 0 {
		if err := references(0); err != nil {
			return nil, nil, err
		}
		ls := launchS
		return []launched{{Result: sweep.Result{Type: sweep.TypeResult, V: sweep.ProtocolVersion, Workload: spec.Workload,
			Index: i, Config: c, ReferenceS: refs, LaunchS: &ls}}}, refs, nil
	}
	// Failed selective runs are told of at the configuration's end, with
	// its full runs: a configuration whose every selective run failed had
	// left no trace of the references measured (a review's hpcc sweep).
	var failed []string
	tell := func() error {
		for _, msg := range failed {
			idx := i
			ev := sweep.ErrorEvent{Type: sweep.TypeError, V: sweep.ProtocolVersion, Message: msg, Index: &idx}
			// The full runs once all are taken (resume judges the rest
			// against those an error event carries, as all of them: see
			// judged).
			if len(refs) > 0 && len(refs) >= reps {
				ev.ReferenceS = refs
				var ts []string
				for _, x := range refs {
					ts = append(ts, format.Seconds(x))
				}
				ev.Message += "\n    the configuration's full runs: " + strings.Join(ts, ", ") + " s"
			}
			if err := r.Emit(ev); err != nil {
				return err
			}
		}
		failed = nil
		return nil
	}
	var results []launched
	var launches []float64
	// judged are the results with their errors against the full runs,
	// or none while the configuration has fewer than it takes (a resume
	// runs them again, with the rest of the full runs): judged against
	// those it had, they would have left it with fewer for good, which
	// resume would then have taken as all (reps = len(known)).
	judged := func() []launched {
		if len(refs) < reps {
			return nil
		}
		ref := math.NaN()
		if len(refs) > 0 {
			ref = stat.Mean(refs, nil)
		}
		for k := range results {
			res, t := &results[k], results[k].tally
			m := sweep.Measured{Config: i, PredictedS: *res.PredictedS, SelectiveS: *res.SelectiveS, ReferenceS: ref}
			t.runs = append(t.runs, m)
			ls := launches[k] + launchS/float64(len(results)) // the references' launches shared out
			res.LaunchS = &ls
			if len(refs) > 0 {
				e := m.Error()
				res.ReferenceS, res.Error = refs, &e
			}
		}
		return results
	}
	// cut ends the configuration with err: the failures so far told of,
	// and the runs it finished judged, once its full runs are all taken
	// (an interrupt had lost them, and resume ran them again).
	cut := func(err error) ([]launched, []float64, error) {
		if e := tell(); e != nil {
			return nil, nil, e
		}
		return judged(), refs, err
	}
	for j, t := range wanted {
		if err := references(j); err != nil {
			return cut(err)
		}
		if r.stopping() {
			return cut(ErrStopped)
		}
		cfg := preload.Run{Policy: t.policy, Tolerance: t.tol, Confidence: spec.Confidence, NMin: spec.NMin, Models: spec.Models,
			RunMessages: spec.RunsMessages(), State: t.state}
		if t.counts {
			cfg.Counts = filepath.Join(l.dir, fmt.Sprintf("approxtune-counts-%d", j))
		}
		tol := t.tol
		r.started(sweep.RunStart{Index: i, Kind: sweep.RunSelective, Policy: t.policy, Tolerance: &tol, ReferenceS: refs})
		res, extra, err := l.selective(ctx, cfg)
		r.ended()
		var refused *LaunchError
		if err != nil && ctx.Err() == nil && !errors.As(err, &refused) {
			// Skipped kernels leave the program's data meaningless, and a
			// program may stop on it: the run is told of and has no
			// result (resume tries it again); the sweep goes on.
			// Its index too: 'resume skip=N' takes it, and 'table configs'
			// lists no configuration without results.
			msg := fmt.Sprintf("configuration %d (%s): %s at %s: %v", i, c.Label(), t.policy, format.Tolerance(t.tol), err)
			// A crash where the full runs pass (hpcc: a segmentation
			// fault in HPL's row swaps, MPI_ERR_TRUNCATE) was a skipped
			// message's stale indices, and nothing said so.
			if h := failureHint(err, l.path, spec.RunsMessages(), false); h != "" {
				msg += "\n    " + h
			}
			failed = append(failed, msg)
			continue
		}
		if err != nil {
			return cut(fmt.Errorf("%s at %s: %w", t.policy, format.Tolerance(t.tol), err))
		}
		res.Workload, res.Index, res.Config = spec.Workload, i, c
		if res.kernels != nil {
			res.kernels.Index = i
		}
		res.tally = t
		results = append(results, *res)
		launches = append(launches, extra)
	}
	if err := references(len(wanted)); err != nil {
		return cut(err)
	}
	if err := tell(); err != nil {
		return nil, nil, err
	}
	return judged(), refs, nil
}

// Heading names a launch in the program's output, between the launches'
// own lines ("configuration 3 (b=64 grid=2x2): eager at 2^-1"); label is
// the configuration's, or "".
func Heading(rs sweep.RunStart, label string) string {
	what := "a full run"
	if rs.Kind == sweep.RunSelective {
		what = rs.Policy
		if rs.Tolerance != nil {
			what += " at " + format.Tolerance(*rs.Tolerance)
		}
		if pol, err := policy.Lookup(rs.Policy); err == nil {
			if _, counts := pol.(policy.Rehearser); counts {
				// Two launches under the one heading: the first's
				// output had read as the selective run's.
				what += ", its counting launch and then its selective launch"
			}
		}
	}
	if label != "" {
		label = " (" + label + ")"
	}
	return fmt.Sprintf("configuration %d%s: %s", rs.Index, label, what)
}

// StaleMessagesHint follows a selective launch's failure while the
// sweep lets messages be skipped: what to try when the program's full
// runs end well.
const StaleMessagesHint = staleMessages + "; in the REPL, 'resume' keeps the sweep's setting (docs/programs.md)"

// StaleMessagesSearchHint is StaleMessagesHint for a search, which cannot
// be resumed.
const StaleMessagesSearchHint = staleMessages + ": run the search again with it (docs/programs.md)"

const staleMessages = "where full runs end well, a program may compute with what a skipped message left stale (HPL sends row indices and pivots among its doubles): a sweep with 'messages run' (spec \"messages\": \"run\") runs every message and skips kernels alone"

// started tells Started of a run about to start.
func (r *Runner) started(rs sweep.RunStart) {
	if r.Started != nil {
		rs.Type, rs.V, rs.ReferenceS, rs.LaunchS = sweep.TypeRunStart, sweep.ProtocolVersion, slices.Clone(rs.ReferenceS), r.overhead
		r.Started(rs)
	}
}

// ended tells Ended that the run Started announced has ended.
func (r *Runner) ended() {
	r.timed = true
	if r.Ended != nil {
		r.Ended()
	}
}

// launcher is one configuration's launch: the command, its working
// directory and rank count.
type launcher struct {
	r     *Runner
	argv  []string
	path  string   // the executable argv[0] names
	dir   string   // the configuration's: its decks, and a directory of each launch's
	decks []string // the decks' file names
	ranks int
	label string // the configuration's

	// The first launch's calls of each routine, and what that launch was:
	// every launch of a configuration makes the same calls unless the
	// program's control flow depends on what it computes.
	calls     map[string]int64
	callsWhat string
}

// prepare expands the program's command and writes its decks into dir.
func (r *Runner) prepare(p *sweep.Program, c sweep.Config, dir string) (*launcher, error) {
	argv := make([]string, len(p.Command))
	for k, a := range p.Command {
		argv[k] = p.Expand(c, a)
	}
	if strings.ContainsRune(argv[0], '/') && !filepath.IsAbs(argv[0]) {
		argv[0] = filepath.Join(r.Dir, argv[0])
	}
	path, err := exec.LookPath(argv[0])
	if err != nil {
		return nil, fmt.Errorf("program: %w", err)
	}
	if err := preload.CheckLinkage(path); err != nil {
		return nil, err
	}
	if err := preload.CheckMPI(path, r.Lib); err != nil {
		return nil, err
	}
	if m, ok := r.Launcher.(Mpirun); ok && m.Launcher != nil {
		if err := preload.CheckLauncher(path, m.Path, m.Flavor.Name()); err != nil {
			return nil, err
		}
	}
	argv[0] = path
	decks := slices.Sorted(maps.Keys(p.Decks))
	for _, file := range decks {
		tmpl := p.Decks[file]
		if !filepath.IsAbs(tmpl) {
			tmpl = filepath.Join(r.Dir, tmpl)
		}
		b, err := os.ReadFile(tmpl)
		if err != nil {
			return nil, fmt.Errorf("deck %s: %w", file, err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte(p.Expand(c, string(b))), 0o644); err != nil {
			return nil, fmt.Errorf("deck %s: %w", file, err)
		}
	}
	return &launcher{r: r, argv: argv, path: path, dir: dir, decks: decks, ranks: p.Ranks(c), label: c.Label()}, nil
}

// launched is what one launch reported: its result and, for a selective
// run, rank 0's kernel statistics.
type launched struct {
	sweep.Result
	kernels *sweep.KernelsEvent
	tally   *tally // the policy x tolerance it ran under
}

// selective makes a selective run as cfg says and returns what it reported
// and its launches' time beyond their timed regions. A policy.Rehearser
// (cfg.Counts set) first makes its counting run, a launch of its own that
// writes the critical-path counts the selective launch reads: as the
// agent does with its counting run, its timed region is added to the
// selective run's time (SelectiveS), and its launch's time beyond it to
// the launch time.
func (l *launcher) selective(ctx context.Context, cfg preload.Run) (*launched, float64, error) {
	if cfg.Counts == "" {
		return l.run(ctx, cfg)
	}
	counting := cfg
	counting.Counting = true
	cres, cextra, err := l.run(ctx, counting)
	if err != nil {
		return nil, 0, fmt.Errorf("counting run: %w", err)
	}
	if cres.SelectiveS == nil {
		return nil, 0, fmt.Errorf("counting run: its result has no time")
	}
	res, extra, err := l.run(ctx, cfg)
	if err != nil {
		return nil, 0, err
	}
	if res.SelectiveS == nil {
		return nil, 0, fmt.Errorf("run result: no selective time")
	}
	wall := *res.SelectiveS + *cres.SelectiveS
	res.SelectiveS, res.CountingS = &wall, cres.SelectiveS
	return res, extra + cextra, nil
}

// relativeFiles says which of the launch's arguments name a file by a
// relative path that is found from approxtune's working directory or the
// spec's, but not in the launch's own directory dir, where the program
// looks: "" when none does. A review's "-i rel.in" had failed with the
// program's own "cannot open deck rel.in" alone.
func (l *launcher) relativeFiles(dir string) string {
	cwd, _ := os.Getwd()
	var names []string
	for _, a := range l.argv[1:] {
		if _, v, ok := strings.Cut(a, "="); ok && strings.HasPrefix(a, "-") {
			a = v // -i=rel.in
		}
		if a == "" || filepath.IsAbs(a) || strings.HasPrefix(a, "-") || slices.Contains(names, a) {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, a)); err == nil && !fi.IsDir() {
			continue
		}
		for _, base := range []string{cwd, l.r.Dir} {
			if fi, err := os.Stat(filepath.Join(base, a)); base != "" && err == nil && fi.Mode().IsRegular() {
				names = append(names, a)
				break
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("\n    each launch runs in a fresh directory, where %s (found from approxtune's working directory or the spec's) is not: give its absolute path, or make it a deck (docs/programs.md)",
		strings.Join(names, ", "))
}

// launchDir makes a fresh directory for one launch, in the
// configuration's, holding a copy of each deck: launches had shared the
// configuration's directory, so a program that appends to a file of its
// own (hpcc's hpccoutf.txt) read the earlier launches' output in each
// later one (a review).
func (l *launcher) launchDir() (string, error) {
	dir, err := os.MkdirTemp(l.dir, "launch")
	if err != nil {
		return "", err
	}
	for _, f := range l.decks {
		b, err := os.ReadFile(filepath.Join(l.dir, f))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, f), b, 0o644)
		}
		if err != nil {
			return "", fmt.Errorf("deck %s: %w", f, err)
		}
	}
	return dir, nil
}

// run launches the program once as cfg says and returns what it reported
// and the launch's time beyond the run's timed region.
func (l *launcher) run(ctx context.Context, cfg preload.Run) (*launched, float64, error) {
	cfg.Out = l.outFile()
	os.Remove(cfg.Out)
	check := filepath.Join(l.dir, "approxtune-calls.json")
	os.Remove(check)
	spec, err := json.Marshal(cfg)
	if err != nil {
		return nil, 0, err
	}
	prog, args := preload.Ranks(l.r.Lib, l.argv[0], l.argv[1:])
	cmd, err := l.r.Launcher.Command(ctx, l.ranks, []string{preload.EnvRun + "=" + string(spec), preload.EnvCheck + "=" + check}, prog, args...)
	if err != nil {
		return nil, 0, &LaunchError{err}
	}
	if cmd.Dir, err = l.launchDir(); err != nil {
		return nil, 0, err
	}
	tail := &Tail{}
	out := io.Writer(tail)
	if l.r.Output != nil {
		out = io.MultiWriter(l.r.Output, tail)
	}
	cmd.Stdout, cmd.Stderr = out, out
	t0 := time.Now()
	err = RunLaunch(cmd)
	wall := time.Since(t0).Seconds()
	if err != nil {
		if sc, ok := l.r.Launcher.(StartChecker); ok && ctx.Err() == nil {
			if why := sc.NotStarted(string(tail.b)); why != "" {
				return nil, 0, &LaunchError{fmt.Errorf("%s%s", why, tail.Lines(10))}
			}
		}
		if fi, serr := os.Stat(cfg.Out); ctx.Err() != nil && serr == nil && fi.Size() > 0 {
			// Stopped (a deadline, an interrupt) with its result written:
			// a hang had been blamed on the region, a loaded machine's
			// slow exit on stale messages (a notebook review).
			return nil, 0, fmt.Errorf("%s exited: %w (%w)%s", filepath.Base(l.argv[0]), err, ErrPastResult, tail.Lines(10))
		}
		return nil, 0, fmt.Errorf("%s exited: %w%s%s", filepath.Base(l.argv[0]), err, tail.Lines(10), l.relativeFiles(cmd.Dir))
	}
	res, err := l.result(cfg)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, fmt.Errorf("%s ended without reaching MPI_Finalize through approxtune's library (approxtune program --check tells why)%s", filepath.Base(l.argv[0]), tail.Lines(10))
	}
	if err != nil {
		return nil, 0, err
	}
	timed := 0.0
	switch {
	case res.SelectiveS != nil:
		timed = *res.SelectiveS
	case len(res.ReferenceS) > 0:
		timed = res.ReferenceS[0]
	}
	l.r.overhead = max(l.r.overhead, wall-timed)
	if c, err := preload.ReadCheck(check); err == nil && !res.CutShort {
		// A launch cut short stopped its work early, as the program
		// chose: its calls are fewer, and no sign of control flow that
		// depends on what it computes (apriori's counting launch had
		// been found to differ, and the sweep's one warning spent).
		l.sameCalls(launchName(cfg), c.Calls)
	}
	return res, max(wall-timed, 0), nil
}

// outFile is where a launch's rank 0 writes its result (preload.Run.Out).
func (l *launcher) outFile() string { return filepath.Join(l.dir, "approxtune-result.json") }

// result reads what the launch as cfg wrote at MPI_Finalize (rank 0's
// result, and a selective run's kernels): an error wrapping
// fs.ErrNotExist where it wrote nothing.
func (l *launcher) result(cfg preload.Run) (*launched, error) {
	b, err := os.ReadFile(cfg.Out)
	if err != nil {
		return nil, err
	}
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	var res launched
	if err := json.Unmarshal(lines[0], &res.Result); err != nil {
		return nil, fmt.Errorf("run result: %w", err)
	}
	if len(lines) > 1 {
		res.kernels = new(sweep.KernelsEvent)
		if err := json.Unmarshal(lines[1], res.kernels); err != nil {
			return nil, fmt.Errorf("run result: kernels: %w", err)
		}
	}
	return &res, nil
}

// launchName says what a launch as cfg was, for a warning.
func launchName(cfg preload.Run) string {
	switch {
	case cfg.Reference:
		return "the full run"
	case cfg.Counting:
		return fmt.Sprintf("%s's counting run at %s", cfg.Policy, format.Tolerance(cfg.Tolerance))
	}
	return fmt.Sprintf("%s at %s", cfg.Policy, format.Tolerance(cfg.Tolerance))
}

// timingDependent are the routines whose calls depend on how long
// messages take, not on the program's control flow: loops of tests, and
// the waits that complete some of several requests.
var timingDependent = map[string]bool{"MPI_Test": true, "MPI_Testall": true, "MPI_Testany": true, "MPI_Testsome": true,
	"MPI_Waitany": true, "MPI_Waitsome": true}

// sameCalls compares a launch's calls (what: which launch) with the
// configuration's first launch's, and warns (Runner.Warn, once a sweep)
// where they differ: the program's control flow depends on computed
// values, which a selective run's skipped kernels leave meaningless.
func (l *launcher) sameCalls(what string, calls map[string]int64) {
	if l.calls == nil {
		l.calls, l.callsWhat = calls, what
		return
	}
	if l.r.Warn == nil || l.r.warned {
		return
	}
	worst, most := "", 0.0
	names := maps.Clone(calls)
	maps.Copy(names, l.calls)
	for _, name := range slices.Sorted(maps.Keys(names)) {
		a, b := l.calls[name], calls[name]
		if timingDependent[name] || a == b {
			continue
		}
		if d := math.Abs(float64(b-a)) / float64(max(a, b)); d > most {
			worst, most = name, d
		}
	}
	if worst == "" {
		return
	}
	l.r.warned = true
	if what == l.callsWhat {
		// Two full runs, which skip nothing, differ: HPL's look-ahead
		// polls with MPI_Iprobe and updates meanwhile, so its calls of
		// cblas_dtrsm follow message timing. It had been told "the full
		// run called ... the full run ...", blamed on skipped kernels; and
		// since calls differ from launch to launch anyway, the comparison
		// can tell nothing more in this sweep.
		l.r.Warn(fmt.Sprintf("configuration %s: two full runs called %s %d and %d times over their ranks: the program's work depends on the timing of its messages "+
			"(a loop that polls with MPI_Iprobe or MPI_Test and computes meanwhile) or on something else that changes from launch to launch, not only on what it computes; "+
			"calls that differ between launches then say nothing of what skipped kernels do to its work, and this sweep compares them no more (docs/programs.md)",
			l.label, worst, l.calls[worst], calls[worst]))
		return
	}
	l.r.Warn(fmt.Sprintf("configuration %s: %s called %s %d times over its ranks, %s %d times: the program's control flow depends on what it computes, "+
		"which skipped kernels leave meaningless, so its selective runs do other work than its full runs: read their predictions with care. "+
		"An iteration to convergence: fix its count, or stop on APPROXTUNE_SKIPPING(); pivoting (LU's row swaps) or deflation (a divide-and-conquer eigensolver) cannot be fixed so (docs/programs.md)",
		l.label, l.callsWhat, worst, l.calls[worst], what, calls[worst]))
}

// mpirunLine is a line Open MPI's mpirun writes of itself: "[host:pid]
// [[job,0],0] ORTE_ERROR_LOG: ...", "[host:pid] 2 more processes have sent
// help message ...".
var mpirunLine = regexp.MustCompile(`^\[[^\]\s]+:\d+\] `)

// improper is the first line of Open MPI's banner for a rank that ended
// without MPI_Finalize.
var improper = regexp.MustCompile(`^mpirun has exited due to process rank (\d+) with PID`)

// Tail keeps the last output written to it (a program's, for the error
// that tells of its failure).
type Tail struct{ b []byte }

// tailMax is how much of the output a Tail keeps, at least.
const tailMax = 8192

// Write keeps p's end.
func (t *Tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2*tailMax {
		t.b = append(t.b[:0], t.b[len(t.b)-tailMax:]...)
	}
	return len(p), nil
}

// Lines is the last n lines kept, indented to stand under an error
// message ("" when nothing was written), without mpirun's own notices: its
// boxed banners (between lines of dashes: about 10 lines when a rank exits
// non-zero, which left no room for the program's last words), its
// "Forwarding signal" lines and its "[host:pid] ..." lines. Of a banner it
// keeps the line that says which rank ended how ("mpirun noticed that
// process rank 1 ... exited on signal 11"). A line every rank printed alike
// is kept once. Where nothing but notices was written, it is the notices.
func (t *Tail) Lines(n int) string {
	all := strings.Split(strings.TrimSpace(string(t.b)), "\n")
	if len(all) == 1 && all[0] == "" {
		return ""
	}
	var lines []string
	seen := map[string]bool{}
	boxed := false
	for _, l := range all {
		trimmed := strings.TrimSpace(l)
		switch {
		case len(trimmed) >= 20 && strings.Trim(trimmed, "-") == "":
			boxed = !boxed
		case boxed && improper.MatchString(trimmed):
			// Open MPI's banner for a rank that ended without
			// MPI_Finalize, in 20 lines of three possible reasons.
			m := improper.FindStringSubmatch(trimmed)
			lines = append(lines, "mpirun: process rank "+m[1]+" exited without calling MPI_Finalize (or called MPI_Abort, or never called MPI_Init)")
		case strings.HasPrefix(trimmed, "mpirun: Forwarding signal"), mpirunLine.MatchString(trimmed):
		case boxed && !strings.HasPrefix(trimmed, "mpirun noticed that process rank"):
		case seen[l]:
		default:
			seen[l] = true
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		lines = all
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return "\n    " + strings.Join(lines, "\n    ")
}

// restoreCarried writes the statistics a resumed sweep's spec brought for a
// carrying tally (nil: none) to the files, prefix.RANK, that its launches
// read (preload.Run.State), so that the resumed runs start where the
// stopped sweep was.
func restoreCarried(c *sweep.Carried, prefix string) error {
	if c == nil {
		return nil
	}
	for rank := range c.Ranks {
		if data := c.Rank(rank); data != nil {
			if err := os.WriteFile(fmt.Sprintf("%s.%d", prefix, rank), data, 0o600); err != nil {
				return fmt.Errorf("carried statistics: %w", err)
			}
		}
	}
	return nil
}

// carry emits, after configuration i (run on ranks ranks), the statistics
// of each carrying tally whose run there has a result (ran), as its
// launches left them in their files: one sweep.Carried event each, null
// for a rank with no file.
func (r *Runner) carry(i int, ran []*tally, ranks int) error {
	if !r.Carry {
		return nil
	}
	for _, t := range ran {
		if t.state == "" {
			continue
		}
		ev := sweep.Carried{Type: sweep.TypeCarried, V: sweep.ProtocolVersion, Index: i, Policy: t.policy, Tolerance: t.tol}
		found := false
		for rank := range ranks {
			data, err := os.ReadFile(fmt.Sprintf("%s.%d", t.state, rank))
			if err != nil || !json.Valid(data) {
				data = nil
			}
			found = found || data != nil
			ev.Ranks = append(ev.Ranks, data)
		}
		if !found {
			continue
		}
		if err := r.Emit(ev); err != nil {
			return err
		}
	}
	return nil
}
