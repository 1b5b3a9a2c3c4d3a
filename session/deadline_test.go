package session

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/sweep"
)

func TestParseDeadline(t *testing.T) {
	good := map[string]string{"off": "off", "10x": "10x", "2.5x": "2.5x", "90s": "1m30s", "5m": "5m0s", "1s": "1s"}
	for in, want := range good {
		d, err := ParseDeadline(in)
		if err != nil || d.String() != want {
			t.Errorf("ParseDeadline(%q) = %v, %v; want %s", in, d, err, want)
		}
		var back Deadline
		if b, _ := d.MarshalText(); back.UnmarshalText(b) != nil || back != d {
			t.Errorf("%q does not read back: %s -> %v", in, b, back)
		}
	}
	if (Deadline{}).String() != "10x" {
		t.Errorf("default %s, want 10x", Deadline{})
	}
	s := newSession(t)
	for line, want := range map[string]string{
		"deadline 1x":     `column 10: "1x" is not a multiple of 2x or more (e.g. 10x)`,
		"deadline soon":   `column 10: "soon" is not a deadline: want off, a multiple of the longest run (10x, the default) or a time of 1s or more (90s, 5m, 2h)`,
		"deadline 500ms":  `column 10: "500ms" is not a deadline`,
		"resume hung=yes": "hung=yes: want hung=retry (run the configuration that hung again, the default) or hung=skip (go on without it)",
		"resume x=1":      "resume takes a session and hung=retry|skip, not x=",
	} {
		err := s.Exec(context.Background(), line, &textOut{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", line, err, want)
		}
	}
}

// A rank that stops making progress is found by the deadline: the agent is
// stopped and no process is left, the configuration named; resume retries
// it, or with hung=skip goes on without it, and the journal reads back
// what was skipped.
func TestHungRunStoppedAndResumed(t *testing.T) {
	bin := testenv.Build(t)
	testenv.Launcher(t)
	dir := filepath.Join(t.TempDir(), "session")
	s, err := New(Options{Dir: dir, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	execAll(t, s, &textOut{}, "workload synthetic", "space steps=6,7 count=2 mean_us=500 hang_rank=-1,1 hang_step=2",
		"policy conditional", "tolerance 2^-1", "deadline 2s")
	hangs := func(line string, config int, results int) {
		t.Helper()
		out := &textOut{}
		start := time.Now()
		// Were the deadline not kept, the interrupt at 60 s ends the wait.
		ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		err := s.Exec(ctx, line, out)
		took := time.Since(start)
		sw := s.Last()
		if err == nil || sw.Status != StatusHung || sw.Hung == nil || *sw.Hung != config {
			t.Fatalf("%s: %v, status %s, hung %v; want configuration %d hung\n%s", line, err, sw.Status, sw.Hung, config, out.b.String())
		}
		want := describeConfig(sw, config) + " made no progress"
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "'resume hung=skip'") {
			t.Errorf("%s: the error does not say %q and what to do:\n%v", line, want, err)
		}
		if len(sw.Results) != results {
			t.Errorf("%s: %d results, want %d", line, len(sw.Results), results)
		}
		if took > 40*time.Second {
			t.Errorf("%s: hung for %v with a 2 s deadline", line, took)
		}
		testenv.NoneLeft(t, bin, "agent")
		t.Logf("%s: stopped after %v: %v", line, took.Round(time.Millisecond), err)
	}
	if !strings.Contains(describeConfig(&Sweep{}, 3), "configuration 3") {
		t.Fatal(describeConfig(&Sweep{}, 3))
	}
	hangs("tune", 1, 1)
	hangs("resume", 1, 1) // retried: it hangs again
	hangs("resume hung=skip", 3, 2)
	out := &textOut{}
	if err := s.Exec(ctx, "resume hung=skip", out); err != nil || s.Last().Status != StatusOK {
		t.Fatalf("the last skip: %v, status %s\n%s", err, s.Last().Status, out.b.String())
	}
	if err := s.Exec(ctx, "resume hung=skip", out); err == nil || !strings.Contains(err.Error(), "did not hang") {
		t.Errorf("hung=skip on a complete sweep: %v", err)
	}
	sws, err := ReadJournal(filepath.Join(dir, JournalName))
	if err != nil {
		t.Fatal(err)
	}
	sw := sws[len(sws)-1]
	if sw.Status != StatusOK || !sw.Skipped[1] || !sw.Skipped[3] || len(sw.Skipped) != 2 || len(sw.Missing()) != 0 || len(sw.Results) != 2 || sw.Total() != 2 {
		t.Errorf("the journal reads back status %s, skipped %v, missing %v, %d of %d results", sw.Status, sw.Skipped, sw.Missing(), len(sw.Results), sw.Total())
	}

	// The default kind of deadline, a multiple of the longest run, with
	// its floor: the hang is called after 5 s or more.
	execAll(t, s, &textOut{}, "space steps=6 count=2 mean_us=500 hang_rank=-1,1 hang_step=2", "deadline 3x")
	start := time.Now()
	if err := s.Exec(ctx, "tune", out); err == nil || s.Last().Status != StatusHung || time.Since(start) < deadlineFloor {
		t.Errorf("deadline 3x: %v after %v, status %s", err, time.Since(start), s.Last().Status)
	}
	testenv.NoneLeft(t, bin, "agent")
}

// The scale of the default deadline is the runs' length: the wait for the
// agent's start (its 'start' event) and the lines after a result are no
// runs, so a fresh sweep has no deadline until a run has ended (it had 5 s
// after a quick 'start', and a first run of 6 s was stopped as hung).
func TestWatchdogScalesWithRunsOnly(t *testing.T) {
	w := newWatchdog(Deadline{}, 0)
	w.tick(Event{Type: sweep.TypeStart})
	w.last = time.Now().Add(-6 * time.Second) // the first run takes 6 s so far
	if w.overdue() {
		t.Fatalf("a fresh sweep's first run called hung after 6 s (deadline %v)", w.limitNow())
	}
	w.tick(Event{Type: sweep.TypeResult}) // it ends: the scale is 6 s
	w.tick(Event{Type: sweep.TypeKernels})
	if got := w.limitNow(); got < 59*time.Second || got > 61*time.Second {
		t.Fatalf("after a run of 6 s the deadline is %v, want 10 x 6 s", got)
	}
	w.last = time.Now().Add(-61 * time.Second)
	if !w.overdue() {
		t.Fatal("a run past 10 times the longest was not called hung")
	}
}
