package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	if want := "interrupted: the launch of configuration iter=300 ranks=2 was stopped"; sw.Message != want || strings.Contains(err.Error(), "exit status") {
		t.Errorf("the stopped sweep's cause: %q (error %v), want %q", sw.Message, err, want)
	}
}

// A program's own output (iterate's checksum) is kept in the session's
// program log, each launch under a heading that names it, and the sweep
// says where; it had been kept nowhere (a Slurm review).
func TestProgramOutputKept(t *testing.T) {
	bin, prog := iterateProgram(t)
	dir := t.TempDir()
	s, err := New(Options{Dir: dir, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
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
