package session

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/testenv"
)

// A program sweep stopped at once (Stop: the REPL's SIGTERM) ends
// cancelled with the stop as its cause: the launch it killed exited with a
// status, which the sweep's message had given as if the program had failed
// (a review's "interrupted: configuration b=128 ranks=2: eager at 2^-1:
// gemmloop exited: exit status 1").
func TestProgramStopNamesTheStop(t *testing.T) {
	bin, prog := iterateProgram(t)
	s, err := New(Options{Dir: t.TempDir(), Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// Each launch sleeps 50 ms a step: 300 steps, 15 s.
	execAll(t, s, &textOut{}, "program "+prog+" {iter} 16 50000", "space iter=300 ranks=2", "policy conditional", "tolerance 2^-1", "deadline off")
	go func() {
		time.Sleep(3 * time.Second)
		s.Stop()
	}()
	start := time.Now()
	err = s.Exec(context.Background(), "tune", &textOut{})
	sw := s.Last()
	if err == nil || sw.Status != StatusCancelled || time.Since(start) > 12*time.Second {
		t.Fatalf("tune stopped: %v, status %s after %v", err, sw.Status, time.Since(start))
	}
	if want := "interrupted: the launch of configuration 0 (iter=300 ranks=2) was stopped"; sw.Message != want || strings.Contains(err.Error(), "exit status") {
		t.Errorf("the stopped sweep's cause: %q (error %v), want %q", sw.Message, err, want)
	}
}

// A program's own output (iterate's checksum) is kept in the session's
// program log, each launch under a heading that names it, and the sweep
// says where; it had been kept nowhere (a Slurm review).
func TestProgramOutputKept(t *testing.T) {
	s, prog, dir := iterateSession(t)
	out := &textOut{}
	execAll(t, s, out, "program "+prog+" {iter} 16", "space iter=2,3 ranks=2", "policy conditional", "tolerance 2^-1", "reps 1", "evaluate")
	b, err := os.ReadFile(filepath.Join(dir, ProgramLogName))
	if err != nil {
		t.Fatal(err)
	}
	log := string(b)
	for _, want := range []string{"== sweep 1, configuration 0 (iter=2 ranks=2): a full run, ", "== sweep 1, configuration 1 (iter=3 ranks=2): conditional at 2^-1, ", "checksum "} {
		if !strings.Contains(log, want) {
			t.Errorf("the program log lacks %q:\n%s", want, log)
		}
	}
	if n := strings.Count(log, "checksum "); n != 4 {
		t.Errorf("%d checksums in the log, want one a launch (4)", n)
	}
	if !strings.Contains(out.b.String(), "the program's output goes to "+filepath.Join(dir, ProgramLogName)) {
		t.Errorf("the sweep does not say where the output goes:\n%s", out.b.String())
	}
}

// An interrupt of a program sweep (the REPL's Ctrl-C: Cancel) stops it at
// the end of the launch under way, and the runs its configuration finished
// are reported against the full runs it has: the interrupt had stopped the
// launch and lost them all (a review's 5 of 6 launches), and resume had
// run them again. Resume then makes only the run still missing.
func TestProgramCancelKeepsFinishedRuns(t *testing.T) {
	s, prog, dir := iterateSession(t)
	// Each launch sleeps 50 ms a step: 20 steps, 1 s. A configuration's
	// launches: a full run, conditional, a full run, eager.
	execAll(t, s, &textOut{}, "program "+prog+" {iter} 16 50000", "space iter=20 ranks=2", "policy conditional,eager", "tolerance 2^-1", "reps 2", "deadline off")
	logPath := filepath.Join(dir, ProgramLogName)
	launches := func() int {
		b, _ := os.ReadFile(logPath)
		return strings.Count(string(b), "== sweep 1, configuration 0")
	}
	// Interrupt once the third launch (the second full run) is under way.
	go cancelAt(s, launches, 3)
	out := &textOut{}
	err := s.Exec(context.Background(), "evaluate", out)
	sw := s.Last()
	if err == nil || sw.Status != StatusCancelled || sw.Message != "cancelled at a run boundary (the end of a launch)" {
		t.Fatalf("evaluate interrupted: %v, status %s (%s)\n%s", err, sw.Status, sw.Message, out.b.String())
	}
	if len(sw.Results) != 1 || sw.Results[0].Policy != "conditional" || len(sw.Results[0].ReferenceS) != 2 || sw.Results[0].Error == nil {
		t.Fatalf("after the interrupt: %d results %+v; want conditional's, judged against both full runs", len(sw.Results), sw.Results)
	}
	refs := sw.Results[0].ReferenceS
	if err := s.Exec(context.Background(), "resume", &textOut{}); err != nil {
		t.Fatal(err)
	}
	sw = s.Last()
	if sw.Status != StatusOK || len(sw.Results) != 2 || sw.Results[1].Policy != "eager" || !slices.Equal(sw.Results[1].ReferenceS, refs) {
		t.Errorf("resumed: status %s, %d results %+v; want eager's too, against the same full runs", sw.Status, len(sw.Results), sw.Results)
	}
	// No launch was stopped, and resume made one: eager's.
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if n, sums := launches(), strings.Count(string(b), "checksum "); n != 4 || sums != 4 {
		t.Errorf("%d launches and %d checksums in the log, want 4 of each (none stopped, none run twice):\n%s", n, sums, b)
	}

	// Interrupted before its second full run, a configuration reports
	// nothing: judged against one, it would have kept one for good (resume
	// takes the full runs it finds as all). Resume runs it whole.
	sweep2 := func() int {
		b, _ := os.ReadFile(logPath)
		return strings.Count(string(b), "== sweep 2, configuration 0")
	}
	go cancelAt(s, sweep2, 2)
	if err := s.Exec(context.Background(), "evaluate", &textOut{}); err == nil || s.Last().Status != StatusCancelled || len(s.Last().Results) != 0 {
		t.Fatalf("evaluate interrupted in its second launch: %v, status %s, %d results; want none", err, s.Last().Status, len(s.Last().Results))
	}
	if err := s.Exec(context.Background(), "resume", &textOut{}); err != nil {
		t.Fatal(err)
	}
	if sw := s.Last(); len(sw.Results) != 2 || len(sw.Results[0].ReferenceS) != 2 || len(sw.Results[1].ReferenceS) != 2 {
		t.Errorf("resumed: %d results %+v; want both judged against 2 full runs", len(sw.Results), sw.Results)
	}
}

// cancelAt interrupts s's sweep (Cancel) once launches() reaches n, or
// after a minute.
func cancelAt(s *Session, launches func() int, n int) {
	for deadline := time.Now().Add(time.Minute); launches() < n && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	s.Cancel()
}

// iterateSession is a session in a directory of its own (dir) with
// approxtune to launch iterate.c (prog) under.
func iterateSession(t *testing.T) (s *Session, prog, dir string) {
	t.Helper()
	bin, prog := iterateProgram(t)
	dir = t.TempDir()
	s, err := New(Options{Dir: dir, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, prog, dir
}

// A launch stopped at the deadline after it had written its result at
// MPI_Finalize (lingers.c's exit takes a minute) is said to have hung in
// MPI_Finalize or its exit, with a longer deadline to try, not with the
// stale messages' hint: a notebook review's launch, slow to exit on a
// loaded machine, had been blamed on skipped messages.
func TestProgramHangAfterResult(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	s, _, dir := iterateSession(t)
	src := filepath.Join(dir, "lingers.c")
	if err := os.WriteFile(src, []byte(`#include <mpi.h>
#include <unistd.h>
static void linger(void) { sleep(60); }
int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  double x = 1, y;
  MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  atexit(linger);
  MPI_Finalize();
  return 0;
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	prog := filepath.Join(dir, "lingers")
	if out, err := exec.Command(mpicc, "-include", "stdlib.h", "-o", prog, src).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", mpicc, err, out)
	}
	execAll(t, s, &textOut{}, "program "+prog+" {x}", "space x=1 ranks=2", "policy conditional", "tolerance 2^-1", "deadline 4s")
	start := time.Now()
	err := s.Exec(context.Background(), "tune", &textOut{})
	sw := s.Last()
	if err == nil || sw.Status != StatusHung || time.Since(start) > 40*time.Second {
		t.Fatalf("tune of a program that lingers at exit: %v, status %s after %v", err, sw.Status, time.Since(start))
	}
	if !strings.Contains(sw.Message, "it had written its result at MPI_Finalize and did not end after it (in MPI_Finalize or its own exit)") || strings.Contains(sw.Message, "'messages run'") {
		t.Errorf("the hang's message: %s", sw.Message)
	}
	testenv.NoneLeft(t, prog, "1") // its ranks, killed with their launch
}
