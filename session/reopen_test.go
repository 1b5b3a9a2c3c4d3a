package session

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/approxtune/approxtune/sweep"
)

// A session started on the directory of one killed during a sweep (its
// journal without the sweep's end, and a torn last line) comes back with
// that sweep, died, its results and what is missing, and the state the
// sweep ran with; its first write (the died sweep's end) cuts the torn
// line.
func TestReopenRestoresLastSweep(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	out := &textOut{}
	for _, l := range []string{"workload synthetic steps=3 count=2", "space grid=2x2,1x4 slow_rank=-1,0", "policy eager",
		"tolerance 2^-1,2^-3", "ranks 4", "reps 2", "deadline 45s"} {
		if err := s.Exec(context.Background(), l, out); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	want := s.State()
	sp, configs, err := validate(s.schemas(), s.st, sweep.ModeEvaluate, s.st.Ranks)
	if err != nil {
		t.Fatal(err)
	}
	tol, pred := 0.5, 0.01
	res := sweep.Result{Type: sweep.TypeResult, Workload: "synthetic", Index: 2, Config: configs[2], Policy: "eager",
		Tolerance: &tol, PredictedS: &pred, ReferenceS: []float64{0.011, 0.012}}
	for _, r := range []record{{Kind: "sweep", Sweep: 1, Spec: sp, State: &s.st, Configs: configs},
		{Kind: "event", Sweep: 1, Event: raw(res)}} {
		if err := s.journal.append(r); err != nil {
			t.Fatal(err)
		}
	}
	s.journal.Close() // killed: no end record, nothing closed cleanly
	path := filepath.Join(dir, JournalName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"t":"2026-11-28T03:00:00Z","kind":"event","sweep":1,"event":{"type":"res`)
	f.Close()

	s2, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s2.Close()
	sw := s2.Last()
	if sw == nil || sw.ID != 1 || len(sw.Results) != 1 || sw.Status != StatusDied || len(sw.Configs) != 4 {
		t.Fatalf("reopened sweep: %+v", sw)
	}
	if m := sw.Missing(); len(m) != 7 {
		t.Errorf("missing runs %v, want 7 of 8", m)
	}
	for _, w := range []string{"reopened session " + dir + ": 1 sweep", "sweep 1 (evaluate synthetic)", "stopped after 1 of 8 runs",
		"the session ended during the sweep", "'resume' runs the 7 missing"} {
		if !strings.Contains(s2.Reopened(), w) {
			t.Errorf("Reopened() = %q, lacks %q", s2.Reopened(), w)
		}
	}
	got := s2.State()
	if got.Workload != want.Workload || got.Ranks != want.Ranks || got.Reps != want.Reps || got.Deadline != want.Deadline ||
		strings.Join(got.Policies, ",") != "eager" || len(got.Tolerances) != 2 {
		t.Errorf("state after reopening: %+v, want %+v", got, want)
	}
	if g, ok := got.Space["grid"][1].(sweep.GridShape); !ok || g.String() != "1x4" {
		t.Errorf("grid values %#v: want grid shapes", got.Space["grid"])
	}
	if n, ok := got.Space["steps"][0].(int); !ok || n != 3 {
		t.Errorf("steps values %#v: want the int 3", got.Space["steps"])
	}
	// The same spec as before: 'evaluate' would run the same sweep.
	sp2, _, err := validate(s2.schemas(), got, sweep.ModeEvaluate, got.Ranks)
	if err != nil {
		t.Fatalf("the restored state does not validate: %v", err)
	}
	a, _ := json.Marshal(sp)
	b, _ := json.Marshal(sp2)
	if string(a) != string(b) {
		t.Errorf("spec of the restored state:\n%s\nwant\n%s", b, a)
	}
	// The next record cuts the torn line: every line whole.
	if err := s2.journal.append(record{Kind: "end", Sweep: 1, Status: StatusCancelled}); err != nil {
		t.Fatal(err)
	}
	f, err = os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	lines, states := 0, 0
	for sc.Scan() {
		lines++
		if !json.Valid(sc.Bytes()) {
			t.Errorf("journal line %d is not whole: %q", lines, sc.Text())
		}
		if strings.Contains(sc.Text(), `"kind":"state"`) {
			states++ // the settings typed before the sweep (a directory of the test's choosing keeps them)
		}
	}
	// The sweep, its result, the end the reopen journaled for the sweep
	// it found died (so that another session reads it so) and this one.
	if lines-states != 4 {
		t.Errorf("%d journal lines besides %d of settings, want 4", lines-states, states)
	}
	sws, err := ReadJournal(path)
	if err != nil || len(sws) != 1 || sws[0].Status != StatusCancelled {
		t.Errorf("read back: %v, %d sweeps, the last %v", err, len(sws), sws)
	}
}

// A session killed after the last result of a sweep but before its end
// was recorded: the sweep comes back complete, nothing to resume.
func TestReopenCompleteSweepWithoutEnd(t *testing.T) {
	dir := t.TempDir()
	s, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"workload synthetic steps=3", "policy eager", "tolerance 2^-1"} {
		if err := s.Exec(context.Background(), l, &textOut{}); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	sp, configs, err := validate(s.schemas(), s.st, sweep.ModeEvaluate, s.st.Ranks)
	if err != nil || len(configs) != 1 {
		t.Fatalf("%d configurations, %v", len(configs), err)
	}
	tol, pred := 0.5, 0.01
	res := sweep.Result{Type: sweep.TypeResult, Index: 0, Config: configs[0], Policy: "eager", Tolerance: &tol, PredictedS: &pred}
	s.journal.append(record{Kind: "sweep", Sweep: 1, Spec: sp, State: &s.st, Configs: configs})
	s.journal.append(record{Kind: "event", Sweep: 1, Event: raw(res)})
	s.journal.Close()
	s2, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if sw := s2.Last(); sw == nil || sw.Status != StatusOK || len(sw.Missing()) != 0 {
		t.Fatalf("reopened sweep %+v, want ok with nothing missing", sw)
	}
	if !strings.Contains(s2.Reopened(), "is complete (1 run): 'table best' shows it") {
		t.Errorf("Reopened() = %q", s2.Reopened())
	}
}

// A new directory is no reopened session.
func TestNewSessionNotReopened(t *testing.T) {
	s, err := New(Options{Dir: filepath.Join(t.TempDir(), "new")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Reopened() != "" || s.Last() != nil {
		t.Fatalf("a new session reopened %q", s.Reopened())
	}
}

// mpirun killed under a running sweep: the session stops the ranks it left
// (they would run on unsupervised) and reports mpirun's end within
// seconds.
func TestKilledMpirunStopsItsRanks(t *testing.T) {
	a, took, err := killDuringSweep(t, func(a *Agent) { a.proc.(*process).cmd.Process.Signal(syscall.SIGKILL) })
	if !errors.Is(err, ErrAgentDied) || !strings.Contains(err.Error(), "mpirun: signal: killed") {
		t.Fatalf("after mpirun was killed: %v, want the agent's death with mpirun's status", err)
	}
	if took > 20*time.Second {
		t.Errorf("mpirun's death reported after %v", took)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range a.Hello.PIDs {
		for syscall.Kill(pid, 0) == nil && !zombie(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("rank pid %d still runs 10 s after mpirun was killed", pid)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	t.Logf("reported after %v: %v", took, err)
}

// zombie reports whether pid has ended, not yet reaped.
func zombie(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && strings.HasPrefix(strings.TrimSpace(string(b[i+1:])), "Z")
}

// A session directory is one session's at a time: a second session on it
// is refused with the first's pid (two would number their sweeps alike
// and interleave their records, and a reopen kept one of each pair, as a
// reviewer's two REPLs did), and the directory is free again once the
// first closes.
func TestSessionDirectoryLocked(t *testing.T) {
	dir := t.TempDir()
	first, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	// A fresh directory is taken with the journal's first record.
	if err := first.journal.open(); err != nil {
		t.Fatal(err)
	}
	_, err = New(Options{Dir: dir})
	want := fmt.Sprintf("session directory %s is open in another approxtune (pid %d)", dir, os.Getpid())
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a second session on the directory: %v; want %q", err, want)
	}
	first.Close()
	again, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatalf("the directory after the first session closed: %v", err)
	}
	again.Close()
}

// Settings typed after a session's last sweep come back when the session is
// reopened (a reviewer's policy, tolerance and reps after a sweep came
// back as the sweep's): each command that changes them journals them.
func TestReopenKeepsSettingsAfterLastSweep(t *testing.T) {
	dir := t.TempDir()
	again := reopenedAfter(t, dir, "workload synthetic steps=3", "policy online", "tolerance 2^-4", "reps 5")
	st := again.State()
	if st.Workload != "synthetic" || len(st.Policies) != 1 || st.Policies[0] != "online" || len(st.Tolerances) != 1 || st.Tolerances[0] != 1.0/16 || st.Reps != 5 {
		t.Errorf("reopened with %s %v %v reps %d; want synthetic, online, 2^-4, reps 5", st.Workload, st.Policies, st.Tolerances, st.Reps)
	}
}

// The reopened line is one line: of a stop's message its first line (not
// mpirun's banner after it), and after a hang it names hung=skip.
func TestReopenedLineIsOneLine(t *testing.T) {
	params := []sweep.Param{{Name: "b", Kind: sweep.Int, Default: 8, Min: 1, Max: 64}}
	var configs []sweep.Config
	for _, b := range []int{8, 16} {
		configs = append(configs, sweep.NewConfig(params, map[string]any{"b": b}))
	}
	hung := 1
	sw := &Sweep{ID: 3, Workload: "toy", Configs: configs, Status: StatusHung, Hung: &hung,
		Message: "the agent died: mpirun: exit status 1; its last messages:\n----------\nmpirun noticed that process rank 1 ...\n----------",
		Spec:    &sweep.Spec{Mode: sweep.ModeEvaluate, Policies: []string{"eager"}, Tolerances: []sweep.Tolerance{0.5}}}
	l := describeReopen("/d", []*Sweep{sw})
	if strings.Contains(l, "\n") || !strings.Contains(l, "(hung: the agent died: mpirun: exit status 1)") ||
		!strings.HasSuffix(l, "'resume' runs the 2 missing, 'resume hung=skip' all but configuration 1, which hung") {
		t.Errorf("reopened line %q", l)
	}
	// A Slurm job's output after its state (the line had ended at a
	// dangling "(FILE):").
	sw.Status, sw.Hung = StatusFailed, nil
	sw.Message = "the agent died: Slurm job 5 CANCELLED; the end of its output (/home/u/.local/state/approxtune/slurm/approxtune-5.out):\n  srun: Job step aborted"
	if l := describeReopen("/d", []*Sweep{sw}); !strings.Contains(l, "(failed: the agent died: Slurm job 5 CANCELLED): 'resume' runs the 2 missing") {
		t.Errorf("reopened line %q", l)
	}
}

// reopenedAfter is the session reopened on dir after one with a sweep in
// its journal ran lines: what a reopened session keeps of them.
func reopenedAfter(t *testing.T, dir string, lines ...string) *Session {
	t.Helper()
	writeJournal(t, dir, []*Sweep{tracedSweep(t)})
	s, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lines {
		if err := s.Exec(context.Background(), l, &textOut{}); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	s.Close()
	again, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { again.Close() })
	return again
}
