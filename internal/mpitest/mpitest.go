// Package mpitest runs test scenarios as MPI ranks. MPI must be driven from
// one goroutine locked to its OS thread, and a Go test function runs on a
// goroutine of its own, so a test re-runs its own test binary under mpirun
// with the scenario's name in the environment; the binary's TestMain (on the
// main goroutine) sees it, initialises MPI, runs the scenario and exits.
//
// A rank reports failed checks on stderr as "rank R: ..." and, when it passed,
// "rank R: ok NAME" on stdout. Run requires exit status 0 and an ok line from
// every rank, so a child that silently ran nothing cannot pass.
package mpitest

import (
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/testenv"
)

const childEnv = "APPROXTUNE_MPITEST_CHILD"

// R is a rank's view of a scenario.
type R struct {
	World  *mpi.Comm
	Rank   int
	failed bool
}

// Errorf records a failure and goes on.
func (r *R) Errorf(format string, args ...any) {
	r.failed = true
	fmt.Fprintf(os.Stderr, "rank %d: "+format+"\n", append([]any{r.Rank}, args...)...)
}

// Fatalf records a failure and ends the whole job.
func (r *R) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	mpi.Abort(r.World, 1)
	os.Exit(1)
}

// Main is TestMain's body: in a child it runs the named scenario and exits;
// otherwise it runs the tests.
func Main(m *testing.M, scenarios map[string]func(*R)) {
	name := os.Getenv(childEnv)
	if name == "" {
		os.Exit(m.Run())
	}
	f, ok := scenarios[name]
	if !ok {
		fmt.Fprintf(os.Stderr, "mpitest: no scenario %q\n", name)
		os.Exit(2)
	}
	if _, err := mpi.Init(); err != nil {
		fmt.Fprintf(os.Stderr, "mpitest: %v\n", err)
		os.Exit(2)
	}
	w, err := mpi.World()
	if err != nil {
		fmt.Fprintf(os.Stderr, "mpitest: %v\n", err)
		os.Exit(2)
	}
	r := &R{World: w, Rank: w.Rank()}
	watchdog := time.AfterFunc(100*time.Second, func() {
		fmt.Fprintf(os.Stderr, "rank %d: %s: timed out\n%s", r.Rank, name, debug.Stack())
		os.Exit(3)
	})
	func() {
		defer func() {
			if p := recover(); p != nil {
				r.Fatalf("%s: panic: %v\n%s", name, p, debug.Stack())
			}
		}()
		f(r)
	}()
	watchdog.Stop()
	bad := []int64{0}
	if r.failed {
		bad[0] = 1
	}
	if err := mpi.Allreduce(w, bad, bad, mpi.Max); err != nil {
		r.Fatalf("agree on outcome: %v", err)
	}
	if !r.failed {
		fmt.Printf("rank %d: ok %s\n", r.Rank, name)
	}
	mpi.Finalize()
	os.Exit(int(bad[0]))
}

// Run runs scenario name on ranks ranks and fails t unless every rank passed.
func Run(t *testing.T, name string, ranks int, env ...string) {
	t.Helper()
	res := testenv.MPIRun(t, 2*time.Minute, ranks, append([]string{childEnv + "=" + name}, env...), "", os.Args[0], "-test.run=^$")
	ok := 0
	for _, l := range strings.Split(res.Stdout, "\n") {
		if strings.HasSuffix(l, ": ok "+name) {
			ok++
		}
	}
	if res.ExitCode != 0 || ok != ranks {
		t.Fatalf("scenario %s: exit %d, %d of %d ranks ok\nstdout:\n%s\nstderr:\n%s", name, res.ExitCode, ok, ranks, res.Stdout, res.Stderr)
	}
}
