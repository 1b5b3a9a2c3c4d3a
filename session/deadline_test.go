package session

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
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
		"deadline soon":   `column 10: "soon" is not a deadline: want off, a multiple of the reference time (10x, the default) or a time of 1s or more (90s, 5m, 2h)`,
		"deadline 500ms":  `column 10: "500ms" is not a deadline`,
		"resume hung=yes": "hung=yes: want hung=retry (run the configuration that hung again, the default) or hung=skip (go on without it)",
		"resume x=1":      "resume takes a session, hung=retry|skip and skip=N[,N...], not x=",
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
	// The transcript ('export notebook') has what the session ran, where
	// it ran it: the tune that hung, the resume that skipped
	// configuration 1 and hung at 3, both marked failed, then the resume
	// that succeeded (not the retry, which changed nothing). It had had
	// the resume alone, and the exported notebook's 'resume' found no
	// sweep; then the tune just before the last resume.
	var lines []string
	for _, st := range s.Transcript() {
		l := st.Line
		if st.Failed != "" {
			l += " (failed)"
		}
		lines = append(lines, l)
	}
	if got := strings.Join(lines, "|"); !strings.HasSuffix(got, "|tune (failed)|resume hung=skip (failed)|resume hung=skip") || strings.Count(got, "tune") != 1 {
		t.Errorf("transcript %s: want the tune and the resume that skipped 1 as failed, then the resume that succeeded", got)
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
	if err := s.Exec(ctx, "tune", out); err == nil || s.Last().Status != StatusHung || time.Since(start) < DeadlineFloor {
		t.Errorf("deadline 3x: %v after %v, status %s", err, time.Since(start), s.Last().Status)
	}
	testenv.NoneLeft(t, bin, "agent")
}

// The scale of the default deadline, for an agent that announces no runs
// (an older build), is the runs' length: the wait for the agent's start
// (its 'start' event) and the lines after a result are no runs, so a
// fresh sweep has no deadline until a run has ended (it had 5 s after a
// quick 'start', and a first run of 6 s was stopped as hung).
func TestWatchdogScalesWithRunsOnly(t *testing.T) {
	w := newWatchdog(Deadline{}, nil)
	w.tick(Event{Type: sweep.TypeStart})
	w.last = time.Now().Add(-6 * time.Second) // the first run takes 6 s so far
	if w.overdue() {
		t.Fatalf("a fresh sweep's first run called hung after 6 s (deadline %v)", limit(w))
	}
	w.tick(Event{Type: sweep.TypeResult}) // it ends: the scale is 6 s
	w.tick(Event{Type: sweep.TypeKernels})
	if got := limit(w); got < 59*time.Second || got > 61*time.Second {
		t.Fatalf("after a run of 6 s the deadline is %v, want 10 x 6 s", got)
	}
	w.last = time.Now().Add(-61 * time.Second)
	if !w.overdue() {
		t.Fatal("a run past 10 times the longest was not called hung")
	}
	if w.hung != nil || !strings.Contains(w.hungMessage(&Sweep{}, 2), "configuration 2 made no progress: no run ended for 1m01s, past the deadline of 1m00s (10 times the sweep's longest run, 6s") {
		t.Errorf("the message without announced runs: %s", w.hungMessage(&Sweep{}, 2))
	}
}

// The time the session spends handling an event (journal, display) is not
// the run's: a slow fsync (6 s, on a loaded machine's disk) had made the
// next run of microseconds "hang" past the 5 s floor, and stopped a
// healthy sweep. The clock restarts once the event is handled.
func TestWatchdogLeavesOutTheSessionsTime(t *testing.T) {
	w := newWatchdog(Deadline{Factor: 10}, nil)
	w.tick(Event{Type: sweep.TypeStart})
	w.last = time.Now().Add(-time.Millisecond)
	w.tick(Event{Type: sweep.TypeResult}) // a run of 1 ms: the floor, 5 s, rules
	done := w.seen(Event{Type: sweep.TypeKernels})
	w.last = time.Now().Add(-6 * time.Second) // the journal's fsync takes 6 s
	if w.overdue() {
		t.Fatal("called hung while the session was handling an event")
	}
	done()
	if w.overdue() {
		t.Fatal("called hung right after the session handled an event")
	}
	w.last = time.Now().Add(-6 * time.Second) // the next run takes 6 s
	if !w.overdue() {
		t.Fatalf("a run past the deadline (%v) was not called hung", limit(w))
	}
}

func limit(w *watchdog) time.Duration {
	l, _ := w.limitNow()
	return l
}

// event is v as the agent sends it.
func event(t *testing.T, v any) Event {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var head struct{ Type string }
	json.Unmarshal(b, &head)
	return Event{Type: head.Type, Raw: b}
}

// runStart is the announcement of a run of configuration i, the references
// measured so far (seconds) with it.
func runStart(t *testing.T, i int, kind sweep.RunKind, refs ...float64) Event {
	ev := sweep.RunStart{Type: sweep.TypeRunStart, V: sweep.ProtocolVersion, Index: i, Kind: kind, ReferenceS: refs}
	if kind == sweep.RunSelective {
		tol := 0.5
		ev.Policy, ev.Tolerance = "conditional", &tol
	}
	return event(t, ev)
}

// The default deadline of an announced run is 10 times its configuration's
// reference time; while the configuration has none, 10 times the sweep's
// first run; at least 5 s; the first run itself has none, unless resumed
// results give its configuration a reference time.
func TestWatchdogScalesWithTheConfiguration(t *testing.T) {
	// ticks takes an event after a wait of d since the one before.
	ticks := func(w *watchdog, d time.Duration, e Event) {
		w.last = time.Now().Add(-d)
		w.tick(e)
	}
	want := func(w *watchdog, what string, lo, hi time.Duration, basis string) {
		t.Helper()
		l, b := w.limitNow()
		if l < lo || l > hi || !strings.Contains(b, basis) {
			t.Errorf("%s: deadline %v (%s), want %v to %v (%s)", what, l, b, lo, hi, basis)
		}
	}

	// evaluate: the configurations' references are known from their runs'
	// announcements, long before their results come.
	w := newWatchdog(Deadline{}, nil)
	w.tick(event(t, sweep.Start{Type: sweep.TypeStart}))
	ticks(w, time.Millisecond, runStart(t, 0, sweep.RunSetup))
	ticks(w, 10*time.Millisecond, runStart(t, 0, sweep.RunWarmUp))
	w.last = time.Now().Add(-time.Minute)
	if w.overdue() {
		t.Fatalf("the sweep's first run was called hung after a minute (deadline %v)", limit(w))
	}
	ticks(w, 700*time.Millisecond, runStart(t, 0, sweep.RunReference)) // the first run took 0.7 s
	want(w, "configuration 0's first reference", 6900*time.Millisecond, 7100*time.Millisecond, "10 times the sweep's longest run so far, 700ms")
	ticks(w, 300*time.Millisecond, runStart(t, 0, sweep.RunSelective, 0.3))
	want(w, "configuration 0 with a reference", DeadlineFloor, DeadlineFloor, "5s is the least a multiple allows; 10 times its configuration's reference time, 300ms, is less")
	ticks(w, 200*time.Millisecond, event(t, sweep.ProgressEvent{Type: sweep.TypeProgress, Index: 0, Pending: 1}))
	ticks(w, time.Millisecond, runStart(t, 0, sweep.RunReference, 0.3))
	ticks(w, 300*time.Millisecond, event(t, sweep.Result{Type: sweep.TypeResult, Index: 0, ReferenceS: []float64{0.3, 0.3}}))

	// A configuration whose runs are 5 times as long: its own reference
	// sets its scale, not the first run's, and the next one's (shorter)
	// is not the longest run so far.
	ticks(w, time.Millisecond, runStart(t, 1, sweep.RunSetup))
	want(w, "configuration 1's set-up", 6900*time.Millisecond, 7100*time.Millisecond, "the sweep's longest run so far, 700ms")
	ticks(w, time.Millisecond, runStart(t, 1, sweep.RunWarmUp))
	ticks(w, 3*time.Second, runStart(t, 1, sweep.RunReference))
	ticks(w, 3*time.Second, runStart(t, 1, sweep.RunSelective, 3))
	want(w, "configuration 1's selective run", 29900*time.Millisecond, 30100*time.Millisecond, "10 times its configuration's reference time, 3s")
	w.last = time.Now().Add(-20 * time.Second)
	if w.overdue() {
		t.Fatal("configuration 1's selective run was called hung after 20 s, twice the first run's deadline but not its own")
	}
	ticks(w, 3*time.Second, event(t, sweep.Result{Type: sweep.TypeResult, Index: 1, ReferenceS: []float64{3}}))
	ticks(w, time.Millisecond, runStart(t, 2, sweep.RunSetup))
	ticks(w, time.Millisecond, runStart(t, 2, sweep.RunWarmUp))
	ticks(w, 800*time.Millisecond, runStart(t, 2, sweep.RunReference))
	ticks(w, 800*time.Millisecond, runStart(t, 2, sweep.RunSelective, 0.8))
	want(w, "configuration 2 after a longer one", 7900*time.Millisecond, 8100*time.Millisecond, "10 times its configuration's reference time, 800ms")
	w.last = time.Now().Add(-9 * time.Second)
	if !w.overdue() {
		t.Fatal("configuration 2's selective run was not called hung after 9 s, past 10 times its reference")
	}
	sw := &Sweep{Configs: make([]sweep.Config, 3)}
	if w.hungIndex(sw) != 2 || !strings.Contains(w.hungMessage(sw, 2), " made no progress in a selective run (conditional at 2^-1): it had not ended after 9") {
		t.Errorf("the hung run: configuration %d, %s", w.hungIndex(sw), w.hungMessage(sw, 2))
	}
	// A program's selective run that hangs where messages may be skipped
	// says what to try, as a crash does; not once messages run.
	sw.Spec = &sweep.Spec{Program: &sweep.Program{Command: []string{"hpcc"}}}
	if !strings.Contains(w.hungMessage(sw, 2), "'messages run'") {
		t.Errorf("a program's hung selective run: %s", w.hungMessage(sw, 2))
	}
	sw.Spec.Messages = sweep.MessagesRun
	if strings.Contains(w.hungMessage(sw, 2), "'messages run'") {
		t.Errorf("a program's hung selective run with messages run: %s", w.hungMessage(sw, 2))
	}

	// tune: no references; every run's scale is the first run's.
	w = newWatchdog(Deadline{Factor: 4}, nil)
	ticks(w, time.Millisecond, runStart(t, 0, sweep.RunSetup))
	ticks(w, time.Millisecond, runStart(t, 0, sweep.RunSelective))
	if limit(w) != 0 {
		t.Errorf("tune's first run has a deadline of %v", limit(w))
	}
	ticks(w, 2*time.Second, event(t, sweep.Result{Type: sweep.TypeResult, Index: 0}))
	ticks(w, time.Millisecond, runStart(t, 1, sweep.RunSetup))
	ticks(w, time.Millisecond, runStart(t, 1, sweep.RunSelective))
	want(w, "tune's second configuration", 7900*time.Millisecond, 8100*time.Millisecond, "4 times the sweep's longest run so far, 2s")
	// A wait after the last announced run's result is between runs: no
	// run is named.
	ticks(w, 2*time.Second, event(t, sweep.Result{Type: sweep.TypeResult, Index: 1}))
	w.last = time.Now().Add(-time.Minute)
	sw = &Sweep{Configs: make([]sweep.Config, 2)}
	if !w.overdue() || w.hung != nil || !strings.Contains(w.hungMessage(sw, 1), "configuration 1 () made no progress: no run ended for 1m00s, past the deadline of 8s (4 times the sweep's longest run so far") {
		t.Errorf("a wait between runs: hung %v, %s", w.hung, w.hungMessage(sw, 1))
	}

	// resumed: the results' references count from the start, and the
	// first result's first run is the sweep's.
	ref, sel := []float64{1.5, 2.5}, 0.2
	w = newWatchdog(Deadline{}, []sweep.Result{{Index: 3, ReferenceS: ref, SelectiveS: &sel}, {Index: 4, SelectiveS: &sel}})
	ticks(w, time.Millisecond, runStart(t, 3, sweep.RunSelective))
	want(w, "a resumed configuration with references", 19900*time.Millisecond, 20100*time.Millisecond, "its configuration's reference time, 2s")
	ticks(w, time.Millisecond, runStart(t, 5, sweep.RunSelective))
	// Not 10 times its first run (1.5 s) alone: its longest, 2.5 s (a
	// resume after a Slurm time limit had stopped a larger configuration
	// as hung at 10 times the first run of a smaller one).
	want(w, "a resumed sweep's configuration without", 24900*time.Millisecond, 25100*time.Millisecond, "the sweep's longest run so far, 2.5s")
	// A program's: its launches' time beyond their timed regions counts
	// from the start too (9 s over a reference and a selective launch:
	// 4.5 s each, twice that allowed), as it does once a launch ends; a
	// resume under Slurm had stopped its first launch as hung.
	launch := 9.0
	w = newWatchdog(Deadline{}, []sweep.Result{{Index: 0, ReferenceS: []float64{0.5}, SelectiveS: &sel, LaunchS: &launch}})
	ticks(w, time.Millisecond, runStart(t, 1, sweep.RunReference))
	want(w, "a resumed program's configuration", 13900*time.Millisecond, 14100*time.Millisecond, "twice the longest a launch took beyond its timed region, 4.5s")

	// A fixed deadline, or none.
	for d, l := range map[Deadline]time.Duration{{Fixed: 90 * time.Second}: 90 * time.Second, {Off: true}: 0} {
		w = newWatchdog(d, nil)
		ticks(w, time.Millisecond, runStart(t, 0, sweep.RunSelective))
		if limit(w) != l {
			t.Errorf("deadline %s: %v, want %v", d, limit(w), l)
		}
	}
}

// The default deadline follows each configuration's own reference time: a
// configuration whose runs are 10 times as long as the sweep's first is
// judged by its reference once it has one, and a run that hangs there is
// stopped past 10 times that reference (where the first run's scale would
// have given 5 s) and named with the kind of run it was. Run starts stay
// out of the journal.
func TestHungRunJudgedByItsConfiguration(t *testing.T) {
	s := agentSession(t)
	dir := s.Dir()
	// Configuration 0 runs 2 steps of 40 ms, configuration 1 20 steps;
	// rank 1 hangs at the 46th step of a configuration's runs: in
	// configuration 1's third run, its selective one, after its warm-up
	// and its reference (configuration 0 makes 6 steps in all).
	execAll(t, s, &textOut{}, "workload synthetic", "ranks 2",
		"space grid=1x2 steps=2,20 count=1 kinds=1 spread=0 msg=1 mean_us=40000 hang_rank=1 hang_step=45",
		"policy conditional", "tolerance 2^-1", "reps 1")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out := &textOut{}
	start := time.Now()
	err := s.Exec(ctx, "evaluate", out)
	took := time.Since(start)
	sw := s.Last()
	if err == nil || sw.Status != StatusHung || sw.Hung == nil || *sw.Hung != 1 || len(sw.Results) != 1 {
		t.Fatalf("evaluate: %v, status %s, hung %v, %d results; want configuration 1 hung, configuration 0's result\n%s", err, sw.Status, sw.Hung, len(sw.Results), out.b.String())
	}
	t.Logf("stopped after %v: %s", took.Round(time.Millisecond), sw.Message)
	if want := describeConfig(sw, 1) + " made no progress in a selective run (conditional at 2^-1)"; !strings.Contains(sw.Message, want) {
		t.Errorf("the message does not say %q", want)
	}
	m := regexp.MustCompile(`past the deadline of (\S+) \(10 times its configuration's reference time, ([^;]+);`).FindStringSubmatch(sw.Message)
	if m == nil {
		t.Fatal("the hung run was not judged by its configuration's reference time")
	}
	limit, err1 := time.ParseDuration(m[1])
	ref, err2 := time.ParseDuration(m[2])
	if err1 != nil || err2 != nil || ref < 800*time.Millisecond || limit < 8*time.Second || took < limit {
		t.Errorf("deadline %s, reference %s (%v, %v), stopped after %v: want a reference of 20 x 40 ms or more, 10 times it, and the wait past it", m[1], m[2], err1, err2, took)
	}
	testenv.NoneLeft(t, s.opts.Binary, "agent")
	journal, err := os.ReadFile(filepath.Join(dir, JournalName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(journal), sweep.TypeRunStart) {
		t.Error("the journal holds the runs' starts")
	}
	if strings.Contains(out.b.String(), sweep.TypeRunStart) {
		t.Errorf("the output shows the runs' starts:\n%s", out.b.String())
	}
}

// A search runs its finalists in full with no references: such a run is
// judged by its configuration's latest whole prediction, not by the
// sweep's first run (a selective run of milliseconds, by which a full run
// of 5 s was stopped as hung); a prediction cut short is a lower bound
// and does not count.
func TestWatchdogSearchFullRun(t *testing.T) {
	w := newWatchdog(Deadline{}, nil)
	step := func(d time.Duration, e Event) {
		w.last = time.Now().Add(-d)
		w.tick(e)
	}
	selective := func(i int, pred float64, cut bool) Event {
		return event(t, sweep.Result{Type: sweep.TypeResult, Index: i, PredictedS: &pred, CutShort: cut, Round: 1})
	}
	step(time.Millisecond, runStart(t, 0, sweep.RunSetup))
	step(time.Millisecond, runStart(t, 0, sweep.RunSelective))
	step(23*time.Millisecond, selective(0, 5.2, false))
	step(time.Millisecond, runStart(t, 1, sweep.RunSetup))
	step(time.Millisecond, runStart(t, 1, sweep.RunSelective))
	step(20*time.Millisecond, selective(1, 0.9, true))

	step(time.Millisecond, runStart(t, 0, sweep.RunReference))
	if l, b := w.limitNow(); l < 51*time.Second || l > 53*time.Second || !strings.Contains(b, "10 times its configuration's predicted time, 5.2s") {
		t.Errorf("a finalist predicted at 5.2 s: deadline %v (%s), want 52 s from its prediction", l, b)
	}
	w.last = time.Now().Add(-6 * time.Second)
	if w.overdue() {
		t.Error("a finalist predicted at 5.2 s was called hung after 6 s")
	}
	step(5*time.Second, event(t, sweep.Result{Type: sweep.TypeResult, Index: 0, ReferenceS: []float64{5}, Round: 2}))
	step(time.Millisecond, runStart(t, 1, sweep.RunReference))
	if l, b := w.limitNow(); l < 49*time.Second || l > 51*time.Second || !strings.Contains(b, "10 times the sweep's longest run so far, 5s") {
		t.Errorf("a run whose only prediction was cut short: deadline %v (%s), want 50 s from the sweep's longest run, the finalist's 5 s", l, b)
	}
}

// A sweep the user cancelled ends cancelled, not hung, when the deadline
// passes while the cancel waits for a run boundary the hung run never
// reaches (the grace before mpirun is stopped, 15 s, is longer than the
// deadline here).
func TestCancelledBeforeTheDeadline(t *testing.T) {
	s := agentSession(t)
	execAll(t, s, &textOut{}, "workload synthetic", "ranks 2",
		"space grid=1x2 steps=4 count=1 kinds=1 spread=0 msg=1 mean_us=1000 hang_rank=1 hang_step=0",
		"policy conditional", "tolerance 2^-1", "deadline 3s")
	ready := make(chan struct{})
	go func() {
		<-ready
		time.Sleep(500 * time.Millisecond) // into the run that hangs
		s.Cancel()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := &readyOut{ready: ready}
	err := s.Exec(ctx, "tune", out)
	sw := s.Last()
	if err == nil || sw.Status != StatusCancelled || sw.Hung != nil || !strings.Contains(sw.Message, "past the deadline") {
		t.Fatalf("tune cancelled while its run hangs: %v, status %s, hung %v, %q; want cancelled\n%s", err, sw.Status, sw.Hung, sw.Message, out.b.String())
	}
	testenv.NoneLeft(t, s.opts.Binary, "agent")
}

// readyOut is textOut that closes ready at the first plain update: the
// agent is ready and the sweep's runs begin.
type readyOut struct {
	textOut
	ready chan struct{}
	once  sync.Once
}

func (o *readyOut) Update(p Progress) {
	if p.Note == "" {
		o.once.Do(func() { close(o.ready) })
	}
}
