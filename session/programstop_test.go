package session

import (
	"context"
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
