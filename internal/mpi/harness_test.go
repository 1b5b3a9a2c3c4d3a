package mpi_test

// The harness that runs MPI scenarios in this test binary.
//
// MPI must be initialised and driven from one goroutine locked to its OS
// thread, and a Go test function runs on a goroutine of its own. So the tests
// that need several ranks re-run this very test binary under mpirun: with
// APPROXTUNE_MPI_CHILD=<scenario>[,<scenario>...] in its environment the
// binary is an MPI rank, and TestMain (on the main goroutine) initialises MPI,
// runs the named scenarios in order, and exits without ever calling m.Run.
// A rank reports each failed check on stderr as "rank R: ..." and each passed
// scenario on stdout as "rank R: ok <scenario>"; it exits 0 only when every
// rank passed every scenario. The parent test asserts the exit code and that
// every rank reported every scenario, so a child that silently ran nothing
// cannot pass.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/launch"
	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/testenv"
)

const (
	// childEnv names the scenarios a child rank runs, comma separated.
	childEnv = "APPROXTUNE_MPI_CHILD"
	// ranks is how many processes every scenario runs with.
	ranks = 4
	// launchTimeout bounds one mpirun in the parent.
	launchTimeout = 60 * time.Second
	// childTimeout bounds a child rank; it is shorter than launchTimeout so
	// that a deadlocked rank reports where it hangs and exits by itself
	// (a rank orphaned by a killed mpirun would otherwise spin forever).
	childTimeout = 45 * time.Second
)

// scenarios maps a scenario name to the function every rank runs.
var scenarios = map[string]func(*R){}

// scenario registers f under name; it is called from init functions.
func scenario(name string, f func(*R)) {
	if _, dup := scenarios[name]; dup {
		panic("duplicate scenario " + name)
	}
	scenarios[name] = f
}

func TestMain(m *testing.M) {
	if names := os.Getenv(childEnv); names != "" {
		os.Exit(runChild(strings.Split(names, ",")))
	}
	os.Exit(m.Run())
}

// R is what a scenario gets: MPI_COMM_WORLD and a way to report failures.
type R struct {
	W     *mpi.Comm
	Rank  int
	Size  int
	Level mpi.ThreadLevel // what mpi.Init returned
	name  string          // the running scenario
	fails int
}

// fatal is the panic value of R.Fatalf.
type fatal struct{}

func (r *R) report(msg string) {
	r.fails++
	// Name the scenario line that failed, past the helpers that report.
	where := ""
	pcs := make([]uintptr, 16)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		name := f.Function[strings.LastIndex(f.Function, ".")+1:]
		if i := strings.IndexByte(name, '['); i >= 0 {
			name = name[:i]
		}
		if filepath.Base(f.File) != "harness_test.go" && !reportHelpers[name] && !strings.HasPrefix(f.Function, "runtime.") {
			where = fmt.Sprintf("%s:%d: ", filepath.Base(f.File), f.Line)
			break
		}
		if !more {
			break
		}
	}
	fmt.Fprintf(os.Stderr, "rank %d: %s: %s%s\n", r.Rank, r.name, where, msg)
}

// reportHelpers are the functions (outside this file) that check and report
// on behalf of their caller; a failure names their caller's line.
var reportHelpers = map[string]bool{"mpiError": true, "goError": true, "pollUntil": true}

// Errorf records a failed check and goes on.
func (r *R) Errorf(format string, args ...any) { r.report(fmt.Sprintf(format, args...)) }

// Fatalf records a failed check and abandons the job (all ranks), since the
// other ranks may already wait in a call this rank will never make.
func (r *R) Fatalf(format string, args ...any) {
	r.report(fmt.Sprintf(format, args...))
	panic(fatal{})
}

// Must fails fatally when err is not nil.
func (r *R) Must(err error, what string) {
	if err != nil {
		r.Fatalf("%s: unexpected error: %v", what, err)
	}
}

// Mod returns x mod Size, in [0, Size).
func (r *R) Mod(x int) int { return ((x % r.Size) + r.Size) % r.Size }

// eq checks got == want element by element.
func eq[T comparable](r *R, what string, got, want []T) {
	if len(got) != len(want) {
		r.Errorf("%s: got %d elements %v, want %d elements %v", what, len(got), got, len(want), want)
		return
	}
	for i := range got {
		if got[i] != want[i] {
			r.Errorf("%s: got %v, want %v (first difference at %d)", what, got, want, i)
			return
		}
	}
}

// eqStatus checks a receive's Status.
func eqStatus(r *R, what string, got mpi.Status, src, tag, count int) {
	if got.Source != src || got.Tag != tag || got.Count != count {
		r.Errorf("%s: status %+v, want {Source:%d Tag:%d Count:%d}", what, got, src, tag, count)
	}
}

// fill returns a slice of n copies of v.
func fill[T any](n int, v T) []T {
	s := make([]T, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// runChild is the body of a rank: it returns the process's exit code.
func runChild(names []string) int {
	rank := os.Getenv("OMPI_COMM_WORLD_RANK")
	if rank == "" {
		rank = os.Getenv("PMI_RANK")
	}
	if rank == "" {
		rank = "?"
	}
	go func() {
		time.Sleep(childTimeout)
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		fmt.Fprintf(os.Stderr, "rank %s: watchdog: scenarios %v still running after %v; goroutines:\n%s\n", rank, names, childTimeout, buf)
		os.Exit(3)
	}()

	if mpi.Initialized() {
		fmt.Fprintf(os.Stderr, "rank %s: mpi.Initialized() = true before mpi.Init\n", rank)
		return 1
	}
	level, err := mpi.Init()
	if err != nil {
		fmt.Fprintf(os.Stderr, "rank %s: mpi.Init: %v\n", rank, err)
		return 1
	}
	w, err := mpi.World()
	if err != nil {
		fmt.Fprintf(os.Stderr, "rank %s: mpi.World: %v\n", rank, err)
		return 1
	}
	r := &R{W: w, Rank: w.Rank(), Size: w.Size(), Level: level}
	if r.Size != ranks {
		fmt.Fprintf(os.Stderr, "rank %d: world has %d ranks, want %d (launched by an mpirun of another MPI implementation?)\n", r.Rank, r.Size, ranks)
		return 1
	}
	if rank != "?" && rank != fmt.Sprint(r.Rank) {
		fmt.Fprintf(os.Stderr, "rank %d: the launcher says this is rank %s\n", r.Rank, rank)
		return 1
	}
	for _, name := range names {
		f, ok := scenarios[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "rank %d: no scenario %q\n", r.Rank, name)
			return 1
		}
		if !r.run(name, f) {
			// Some rank failed a check fatally: end every rank now.
			fmt.Fprintf(os.Stderr, "rank %d: %s: aborting the job\n", r.Rank, name)
			mpi.Abort(w, 1)
			return 1
		}
		// Agree on the outcome, so that every rank ends the same way and
		// a rank that failed does not leave the others waiting.
		bad := []int64{int64(r.fails)}
		if err := mpi.Allreduce(w, bad, bad, mpi.Max); err != nil {
			fmt.Fprintf(os.Stderr, "rank %d: %s: agreeing on the outcome: %v\n", r.Rank, name, err)
			return 1
		}
		if r.fails > 0 {
			mpi.Finalize()
			return 1
		}
		if bad[0] > 0 {
			mpi.Finalize()
			return 1 // another rank failed and said why
		}
		fmt.Printf("rank %d: ok %s\n", r.Rank, name)
	}
	if err := mpi.Finalize(); err != nil {
		fmt.Fprintf(os.Stderr, "rank %d: mpi.Finalize: %v\n", r.Rank, err)
		return 1
	}
	if !mpi.Finalized() {
		fmt.Fprintf(os.Stderr, "rank %d: mpi.Finalized() = false after mpi.Finalize\n", r.Rank)
		return 1
	}
	return 0
}

// run runs one scenario and reports whether it ended without a fatal failure.
func (r *R) run(name string, f func(*R)) (ok bool) {
	r.name = name
	defer func() {
		if v := recover(); v != nil {
			if _, isFatal := v.(fatal); !isFatal {
				buf := make([]byte, 64<<10)
				buf = buf[:runtime.Stack(buf, false)]
				r.report(fmt.Sprintf("panic: %v\n%s", v, buf))
			}
			ok = false
		}
	}()
	f(r)
	return true
}

// runScenarios runs the named scenarios in one job of ranks processes of this
// test binary, and fails t unless every rank passes every one of them.
func runScenarios(t *testing.T, names ...string) {
	t.Helper()
	checkResult(t, launchScenarios(t, names...), names...)
}

// launchScenarios runs the named scenarios in one job of ranks processes of
// this test binary, under the launcher of the MPI it is linked against.
func launchScenarios(t *testing.T, names ...string) testenv.Result {
	t.Helper()
	for _, n := range names {
		if scenarios[n] == nil {
			t.Fatalf("no scenario %q", n)
		}
	}
	env := []string{childEnv + "=" + strings.Join(names, ",")}
	args := []string{"-test.run=^$"}
	var res testenv.Result
	switch l := testenv.Launcher(t); {
	case libFlavor == launch.MPICH && l.Flavor != launch.MPICH:
		// This binary was built with -tags mpich: only MPICH's launcher
		// can start its ranks.
		res = mpichRun(t, launchTimeout, ranks, env, os.Args[0], args...)
	case libFlavor != launch.Unknown && l.Flavor != libFlavor:
		testenv.Missing(t, "an mpirun for %s: %s is %s (set APPROXTUNE_MPIRUN)", libName, l.Path, l.Flavor)
	default:
		res = testenv.MPIRun(t, launchTimeout, ranks, env, "", os.Args[0], args...)
	}
	return res
}

// checkResult fails t unless res is a successful job in which every rank
// reported every scenario as passed.
func checkResult(t *testing.T, res testenv.Result, names ...string) {
	t.Helper()
	if res.ExitCode != 0 {
		t.Fatalf("scenarios %v: the MPI job exited with code %d\nchildren's stderr:\n%s\nchildren's stdout:\n%s",
			names, res.ExitCode, res.Stderr, res.Stdout)
	}
	var missing []string
	for _, n := range names {
		for rank := 0; rank < ranks; rank++ {
			if !strings.Contains(res.Stdout, fmt.Sprintf("rank %d: ok %s\n", rank, n)) {
				missing = append(missing, fmt.Sprintf("rank %d %s", rank, n))
			}
		}
	}
	if len(missing) > 0 {
		t.Fatalf("the MPI job exited 0 but these never reported passing: %s\nchildren's stderr:\n%s\nchildren's stdout:\n%s",
			strings.Join(missing, ", "), res.Stderr, res.Stdout)
	}
	if testing.Verbose() && strings.TrimSpace(res.Stderr) != "" {
		t.Logf("children's stderr:\n%s", res.Stderr)
	}
}

// mpichRun runs n ranks of prog under MPICH's launcher, mpiexec.mpich, and
// waits at most timeout. It skips t when MPICH is not installed.
func mpichRun(t *testing.T, timeout time.Duration, n int, env []string, prog string, args ...string) testenv.Result {
	t.Helper()
	path := testenv.Tool(t, "mpiexec.mpich")
	l, err := launch.ForPath(path)
	if err != nil {
		testenv.Missing(t, "a working mpiexec.mpich: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := l.Command(ctx, n, prog, args...)
	cmd.Env = append(cmd.Env, env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s: timed out after %v\nstdout:\n%s\nstderr:\n%s", cmd, timeout, so.String(), se.String())
	}
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("%s: %v", cmd, err)
		}
		code = ee.ExitCode()
	}
	return testenv.Result{Stdout: so.String(), Stderr: se.String(), ExitCode: code}
}
