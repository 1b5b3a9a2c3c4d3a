package session

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/protocol"
	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/sweep"
)

// hookOut calls onResult with the number of results after each one, and
// notes every count of runs done that a progress update showed ahead of the
// results.
type hookOut struct {
	textOut
	onResult func(n int)
	seen     int
	ahead    map[int]bool
}

func (o *hookOut) Update(p Progress) {
	if o.ahead == nil {
		o.ahead = map[int]bool{}
	}
	if p.Done > len(p.Sweep.Results) {
		o.ahead[p.Done] = true
	}
	for ; o.seen < len(p.Sweep.Results); o.seen++ {
		if o.onResult != nil {
			o.onResult(o.seen + 1)
		}
	}
}

// journalKinds counts the journal's records by kind and its result events.
func journalCounts(t *testing.T, dir string) (map[string]int, int) {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, JournalName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kinds := map[string]int{}
	results := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("journal line %q: %v", sc.Text(), err)
		}
		kinds[r.Kind]++
		if r.Kind == "event" && strings.Contains(string(r.Event), `"type":"result"`) {
			results++
		}
	}
	return kinds, results
}

// A rank killed mid-sweep: reported within 10 s with the reason, every
// finished run journaled, and resume runs exactly the missing ones.
func TestKilledRankThenResume(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	dir := t.TempDir()
	s, err := New(Options{Dir: dir, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	out := &hookOut{}
	for _, l := range []string{"workload synthetic steps=15 count=4", "space slow_rank=-1,0,1,2,3", "policy conditional,eager", "tolerance 2^-1,2^-3", "reps 1"} {
		if err := s.Exec(ctx, l, out); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	var killed time.Time
	out.onResult = func(n int) {
		if n == 7 {
			killed = time.Now()
			syscall.Kill(s.Agent().Hello.PIDs[1], syscall.SIGKILL)
		}
	}
	err = s.Exec(ctx, "evaluate", out)
	took := time.Since(killed)
	if err == nil || !strings.Contains(err.Error(), "mpirun") || !strings.Contains(err.Error(), "'resume'") {
		t.Fatalf("evaluate after a killed rank: %v", err)
	}
	// A Go caller tells a dead agent from a refused command: the sweep's
	// error had been a bare *Error.
	if !errors.Is(err, ErrAgentDied) {
		t.Errorf("evaluate after a killed rank: %v is not ErrAgentDied", err)
	}
	if took > 20*time.Second {
		t.Fatalf("death reported %v after the kill", took)
	}
	sw := s.Last()
	finished := len(sw.Results)
	_, journaled := journalCounts(t, dir)
	if finished < 7 || journaled != finished {
		t.Fatalf("%d results before the death, %d in the journal", finished, journaled)
	}
	missing := len(sw.Missing())
	if missing != sw.Total()-finished || missing == 0 {
		t.Fatalf("missing %d, total %d, finished %d", missing, sw.Total(), finished)
	}

	out.onResult, out.ahead = nil, nil
	if err := s.Exec(ctx, "resume", out); err != nil {
		t.Fatalf("resume: %v", err)
	}
	kinds, journaled := journalCounts(t, dir)
	if len(sw.Results) != sw.Total() || journaled != sw.Total() || kinds["resume"] != 1 {
		t.Fatalf("after resume: %d results (journal %d) of %d; kinds %v", len(sw.Results), journaled, sw.Total(), kinds)
	}
	seen := map[runKey]int{}
	for _, r := range sw.Results {
		seen[keyOf(r)]++
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("run %+v has %d results: resume must run exactly the missing ones", k, n)
		}
	}
	// The journal alone rebuilds the complete sweep.
	sws, err := ReadJournal(filepath.Join(dir, JournalName))
	if err != nil || len(sws) != 1 || len(sws[0].Results) != sw.Total() || len(sws[0].Missing()) != 0 {
		t.Fatalf("journal rebuilt %d sweeps, %v", len(sws), err)
	}
	if !strings.Contains(out.b.String(), "resuming sweep 1: "+itoa(missing)+" of "+itoa(sw.Total())) {
		t.Errorf("resume did not say what it reruns:\n%s", out.b.String())
	}
	// Eager's runs before the death were made with statistics the new
	// agent starts from (sweep.Carried): resume says so.
	if !strings.Contains(out.b.String(), "the resumed runs start from the kernel statistics carried from before the stop: eager at 2^-1 (after configuration ") {
		t.Errorf("resume did not say where eager's resumed runs start:\n%s", out.b.String())
	}
	// Progress moved run by run, though evaluate's results come a
	// configuration at a time (after its last reference run): the updates
	// counted runs whose results had not come yet.
	if len(out.ahead) == 0 {
		t.Errorf("no progress update counted a run ahead of its result")
	}
	for n := range out.ahead {
		if n <= finished || n > sw.Total() {
			t.Errorf("progress showed %d runs done, outside %d-%d", n, finished+1, sw.Total())
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// An agent with a wrong token is refused and nothing it sent is recorded.
// listening returns a session in dir that runs bin and listens on a free
// local port, with its output so far and the address and token that
// 'listen' printed for agents to dial in with.
func listening(t *testing.T, dir, bin string) (s *Session, out *textOut, addr, token string) {
	t.Helper()
	s, err := New(Options{Dir: dir, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	out = &textOut{}
	if err := s.Exec(context.Background(), "listen 127.0.0.1:0", out); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`--connect (\S+)`).FindStringSubmatch(out.b.String())
	file := regexp.MustCompile(protocol.TokenEnv + `=\$\(cat (\S+)\)`).FindStringSubmatch(out.b.String())
	if m == nil || file == nil {
		t.Fatalf("listen printed no command with the token's file:\n%s", out.b.String())
	}
	b, err := os.ReadFile(file[1])
	if err != nil {
		t.Fatal(err)
	}
	return s, out, m[1], strings.TrimSpace(string(b))
}

func TestListenRefusesWrongToken(t *testing.T) {
	l := testenv.Launcher(t)
	bin := testenv.Build(t)
	dir := t.TempDir()
	s, out, addr, _ := listening(t, dir, bin)
	var refused []string
	s.ln.Refused = func(_, reason string) { refused = append(refused, reason) }
	cmd := l.Command(context.Background(), 2, bin, "agent", "--connect", addr)
	cmd.Env = append(cmd.Env, protocol.TokenEnv+"="+strings.Repeat("0", 64))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The next sweep waits for an agent; the wrong one is turned away.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() { cmd.Wait(); time.Sleep(500 * time.Millisecond); cancel() }()
	s.Exec(ctx, "workload synthetic steps=2", out)
	err := s.Exec(ctx, "tune", out)
	if err == nil || !strings.Contains(err.Error(), "no agent dialed in") {
		t.Fatalf("tune with only a wrong agent: %v", err)
	}
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 3 || len(refused) != 1 {
		t.Fatalf("agent state %v, refusals %q", cmd.ProcessState, refused)
	}
	if _, results := journalCounts(t, dir); results != 0 || s.Agent() != nil {
		t.Fatalf("a refused agent left %d results and agent %v", results, s.Agent())
	}
}

// TestDialedAgentWarns: an agent started by hand under the user's own
// mpirun, whose environment turns Open MPI's single-copy transfers off and
// forces OpenBLAS onto its SSE-only kernels, dials in and the session
// prints its warnings (the kernels' on a CPU with AVX2 and FMA), though the
// session's own environment has neither setting.
func TestDialedAgentWarns(t *testing.T) {
	l := testenv.Launcher(t)
	bin := testenv.Build(t)
	s, out, addr, token := listening(t, t.TempDir(), bin)
	env := testenv.WarnedEnv(t)
	cmd := l.Command(context.Background(), 4, bin, "agent", "--connect", addr)
	cmd.Env = append(cmd.Env, protocol.TokenEnv+"="+token)
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer s.Close() // before the wait: it tells the agent to shut down
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, line := range []string{"workload synthetic steps=2 count=2", "tune"} {
		if err := s.Exec(ctx, line, out); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, out.b.String())
		}
	}
	a := s.Agent()
	if a == nil {
		t.Fatalf("no agent after tune:\n%s", out.b.String())
	}
	want := testenv.WantedWarnings(t, a.Hello.BLAS)
	if len(a.Warnings()) != len(want) {
		t.Errorf("agent's warnings %q (BLAS %q), want %d", a.Warnings(), a.Hello.BLAS, len(want))
	}
	for _, w := range want {
		if w = "warning: " + w; strings.Count(out.b.String(), w) != 1 {
			t.Errorf("session output does not hold %q once:\n%s", w, out.b.String())
		}
	}
	// The session's end is the agent's normal end: it says nothing of the
	// connection closing (a reviewer saw "use of closed network
	// connection" each time).
	s.Close()
	cmd.Wait()
	if strings.Contains(stderr.String(), "protocol: receive") {
		t.Errorf("the agent's error output at the session's end:\n%s", stderr.String())
	}
}

// A cancel also ends the wait for a cluster agent that never dials in.
func TestCancelWhileWaitingForAgent(t *testing.T) {
	s := newSession(t)
	out := &textOut{}
	ctx := context.Background()
	if err := s.Exec(ctx, "listen 127.0.0.1:0", out); err != nil {
		t.Fatal(err)
	}
	s.Exec(ctx, "workload synthetic steps=2", out)
	go func() {
		for s.Cancel() == "" {
			time.Sleep(50 * time.Millisecond)
		}
	}()
	start := time.Now()
	err := s.Exec(ctx, "tune", out)
	if err == nil || !strings.Contains(err.Error(), "cancelled before an agent was ready (no agent dialed in)") || time.Since(start) > 10*time.Second {
		t.Fatalf("tune while waiting, cancelled: %v after %v", err, time.Since(start))
	}
	if strings.Contains(err.Error(), "context canceled") {
		t.Errorf("the cancel's message speaks Go: %v", err)
	}
	if err := s.Exec(ctx, "status", out); err != nil {
		t.Fatalf("the session is unusable after the cancel: %v", err)
	}
}

// clockOut is an Output that asks for the clock's reports and keeps the
// elapsed times reported.
type clockOut struct {
	mu      sync.Mutex
	elapsed []time.Duration
	final   int
}

func (o *clockOut) Print(string) {}
func (o *clockOut) Update(p Progress) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.elapsed = append(o.elapsed, p.Elapsed)
	if p.Final {
		o.final = len(o.elapsed)
	}
}
func (o *clockOut) Clocked() bool { return true }

// A terminal's live area is told the sweep's state every second that
// brings no event (a reviewer's display stood at "15s elapsed" through a
// long run), through the transcript's recorder, and nothing after the
// sweep's end.
func TestProgressClock(t *testing.T) {
	sw := &Sweep{ID: 1, Workload: "synthetic", Spec: &sweep.Spec{Mode: sweep.ModeEvaluate}}
	out := &clockOut{}
	_, rec := newRecorder(out)
	p := newProgress(sw, rec, "")
	stop := p.clock()
	time.Sleep(2600 * time.Millisecond)
	stop()
	p.final()
	time.Sleep(600 * time.Millisecond)
	out.mu.Lock()
	n, final, last := len(out.elapsed), out.final, out.elapsed[len(out.elapsed)-1]
	out.mu.Unlock()
	if n < 3 || final != n || last < 2*time.Second {
		t.Errorf("%d reports (final the %dth), the last at %v; want 2 or more clock reports a second apart, then the final one last", n, final, last)
	}
}

// An idle agent that went away (its Slurm job reached its time limit; here
// its mpirun stopped) is shown by 'status' as gone, not described as if it
// were up.
func TestStatusAgentGone(t *testing.T) {
	s := agentSession(t)
	ctx := context.Background()
	out := &textOut{}
	execAll(t, s, out, "ranks 2", "workload synthetic grid=1x2 steps=2 count=2", "policy eager", "tolerance 2^-1", "tune")
	a := s.Agent()
	if a == nil {
		t.Fatal("no agent after a sweep")
	}
	a.Interrupt(time.Second)
	select {
	case <-a.Gone():
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not go")
	}
	out.b.Reset()
	if err := s.Exec(ctx, "status", out); err != nil || !strings.Contains(out.b.String(), "agent       gone (") || !strings.Contains(out.b.String(), "the next sweep starts another") {
		t.Errorf("status after the agent went: %v\n%s", err, out.b.String())
	}
}

// lineOut keeps the progress lines it is given.
type lineOut struct{ lines []string }

func (o *lineOut) Print(string)      {}
func (o *lineOut) Update(p Progress) { o.lines = append(o.lines, p.Line()) }

// The progress line says what runs now, from the agent's announcement of a
// run's start: a long run showed nothing of what it was (a reviewer).
func TestProgressSaysWhatRuns(t *testing.T) {
	sw := knownSweep(t)
	sw.Spec.ReferenceReps = 3
	out := &lineOut{}
	p := newProgress(sw, out, "")
	tol := 0.5
	for _, rs := range []sweep.RunStart{
		{Type: sweep.TypeRunStart, Index: 1, Kind: sweep.RunReference, ReferenceS: []float64{0.4}},
		{Type: sweep.TypeRunStart, Index: 1, Kind: sweep.RunSelective, Policy: "conditional", Tolerance: &tol},
	} {
		raw, _ := json.Marshal(rs)
		p.shown = time.Time{} // report at once
		p.started(Event{Type: rs.Type, Raw: raw})
	}
	p.final()
	if len(out.lines) != 3 || !strings.HasSuffix(out.lines[0], "; now b=2: full run 2 of 3") ||
		!strings.HasSuffix(out.lines[1], "; now b=2: conditional at 2^-1") || strings.Contains(out.lines[2], "now") {
		t.Errorf("progress lines %q; want the full run, then the selective run, then none at the end", out.lines)
	}
}

// A sweep cancelled while a configuration's first run waits for its
// references reports that run against the references taken so far;
// resume then judges the configuration's other runs against the same
// reference instead of taking new ones (sweep.Spec.References), so every
// run of a configuration has one reference and quality and the best agree.
func TestResumeKeepsReferences(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	dir := t.TempDir()
	s, err := New(Options{Dir: dir, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	out := &cancelOut{s: s}
	for _, l := range []string{"workload synthetic steps=15 count=4", "space slow_rank=-1,0", "policy conditional,eager", "tolerance 2^-1", "reps 2"} {
		if err := s.Exec(ctx, l, out); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	if err := s.Exec(ctx, "evaluate", out); err == nil || !strings.Contains(err.Error(), "cancelled") {
		t.Fatalf("evaluate cancelled at its first run: %v", err)
	}
	sw := s.Last()
	if len(sw.Results) != 1 || len(sw.Results[0].ReferenceS) == 0 {
		t.Fatalf("cancelled at the first run: %d results, want 1 judged against the references taken: %+v", len(sw.Results), sw.Results)
	}
	out.cancelled = true
	if err := s.Exec(ctx, "resume", out); err != nil {
		t.Fatalf("resume: %v", err)
	}
	if len(sw.Results) != sw.Total() {
		t.Fatalf("after resume: %d results of %d", len(sw.Results), sw.Total())
	}
	refs := map[int][]float64{}
	for _, r := range sw.Results {
		if first, ok := refs[r.Index]; ok && !slices.Equal(first, r.ReferenceS) {
			t.Errorf("configuration %d: %s judged against %v, an earlier run against %v", r.Index, r.Policy, r.ReferenceS, first)
		} else if !ok {
			refs[r.Index] = r.ReferenceS
		}
	}
	if len(refs[1]) != 2 {
		t.Errorf("configuration 1, run only after the resume: references %v, want its 2", refs[1])
	}
}

// cancelOut cancels the sweep the first time a run is done ahead of its
// result (a configuration's run waiting for its references).
type cancelOut struct {
	textOut
	s         *Session
	cancelled bool
}

func (o *cancelOut) Update(p Progress) {
	if !o.cancelled && p.Done > len(p.Sweep.Results) {
		o.cancelled = true
		o.s.Cancel()
	}
}

// A session directory removed while the session has it open (a /tmp
// cleaner, an rm of the wrong folder): the next command writes the journal
// again from the file the session still has open, says so, and the
// session goes on there, so the journal ends with every sweep; before, the
// session wrote on into the deleted file and lost them all.
func TestJournalDeletedIsWrittenAgain(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "session")
	s, out := tunedSession(t, dir)
	defer s.Close()
	ctx := context.Background()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, "tune", out); err != nil {
		t.Fatalf("tune after the directory was removed: %v", err)
	}
	if !strings.Contains(out.b.String(), "journal "+filepath.Join(dir, JournalName)+" was deleted while the session had it open: every record was written again to it") {
		t.Errorf("no word of the journal written again:\n%s", out.b.String())
	}
	// Removed again after the last command: the session's end writes it
	// again, and says so on the last command's output.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	out.b.Reset()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.b.String(), "was deleted while the session had it open") {
		t.Errorf("the session's end said nothing of the journal it wrote again: %q", out.b.String())
	}
	sws, err := ReadJournal(filepath.Join(dir, JournalName))
	if err != nil || len(sws) != 2 || len(sws[0].Results) != 1 || len(sws[1].Results) != 1 {
		t.Fatalf("journal after the session: %d sweeps (%v), want both with their result", len(sws), err)
	}
	if _, err := os.Stat(filepath.Join(dir, LockName)); err != nil {
		t.Errorf("the directory's lock was not made again: %v", err)
	}
}

// An mpirun that never starts the agent is stopped at the hello timeout,
// and the error says that it was, not mpirun's status after the stop
// ("signal: interrupt", which read as if the user had pressed Ctrl-C).
func TestAgentHelloTimeoutSaysStopped(t *testing.T) {
	bin := testenv.Build(t)
	fake := filepath.Join(t.TempDir(), "mpirun")
	script := "#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'mpirun (Open MPI) 4.1.4'; exit 0; fi\necho 'waiting for a resource'\nexec sleep 60\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("APPROXTUNE_MPIRUN", fake)
	s, err := New(Options{Dir: t.TempDir(), Binary: bin, HelloTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := &textOut{}
	ctx := context.Background()
	if err := s.Exec(ctx, "workload synthetic steps=2", out); err != nil {
		t.Fatal(err)
	}
	err = s.Exec(ctx, "tune", out)
	if err == nil || !strings.Contains(err.Error(), "did not say hello within 2s, so it was stopped; its last messages:\nwaiting for a resource") || strings.Contains(err.Error(), "signal:") {
		t.Errorf("an mpirun that never starts the agent: %v", err)
	}
}

// A journal replaced by another file while the session runs (an editor's
// save writes a new file at the path): the session's records go beside it,
// once, and on there; later commands neither warn again nor fail, and the
// session closes cleanly.
func TestJournalReplacedGoesBeside(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "session")
	s, out := tunedSession(t, dir)
	defer s.Close()
	ctx := context.Background()
	path := filepath.Join(dir, JournalName)
	if err := os.WriteFile(path+".new", []byte("edited\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".new", path); err != nil {
		t.Fatal(err)
	}
	out.b.Reset()
	for _, l := range []string{"tune", "status", "tune"} {
		if err := s.Exec(ctx, l, out); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	side := filepath.Join(dir, fmt.Sprintf("results.recovered-%d.jsonl", os.Getpid()))
	if n := strings.Count(out.b.String(), "was replaced by another file"); n != 1 || !strings.Contains(out.b.String(), "every record was written to "+side) || strings.Contains(out.b.String(), "are lost") {
		t.Errorf("%d warnings of the replaced journal, want 1 naming %s:\n%s", n, side, out.b.String())
	}
	if err := s.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "edited\n" {
		t.Errorf("the file put at the journal's path was changed: %q", b)
	}
	sws, err := ReadJournal(side)
	if err != nil || len(sws) != 3 {
		t.Fatalf("the records beside it: %d sweeps (%v), want all 3", len(sws), err)
	}
}

// tunedSession is a session in dir that has made one tune sweep of the
// synthetic workload, with what it printed.
func tunedSession(t *testing.T, dir string) (*Session, *textOut) {
	t.Helper()
	testenv.Launcher(t)
	bin := testenv.Build(t)
	s, err := New(Options{Dir: dir, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	out := &textOut{}
	for _, l := range []string{"workload synthetic steps=4", "policy eager", "tolerance 2^-1", "tune"} {
		if err := s.Exec(context.Background(), l, out); err != nil {
			s.Close()
			t.Fatalf("%s: %v", l, err)
		}
	}
	return s, out
}

// A sweep cancelled before its first result does not hide the results of
// the sweep before it: table, plot and rank read the last sweep that has
// results and say so (a notebook review: an interrupted second evaluate
// left 'plot speedup' saying "no results to plot yet", and nothing brought
// the first sweep's back).
func TestEmptySweepKeepsEarlierResults(t *testing.T) {
	s, out := tunedSession(t, t.TempDir())
	defer s.Close()
	first := s.Last()
	// Interrupted while its agent starts (a context already done starts
	// no sweep at all).
	s.stopAgent(out)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	if err := s.Exec(ctx, "tune", out); err == nil {
		t.Fatal("a tune whose context was cancelled ended without an error")
	}
	if last := s.Last(); last == first || len(last.Results) != 0 {
		t.Fatalf("the cancelled sweep: %d of sweeps, %d results", len(s.sweeps), len(last.Results))
	}
	out.b.Reset()
	png := filepath.Join(t.TempDir(), "configs.png")
	for _, l := range []string{"table best", "plot configs " + png} {
		if err := s.Exec(context.Background(), l, out); err != nil {
			t.Fatalf("%s after an empty sweep: %v", l, err)
		}
	}
	said := out.b.String()
	if strings.Count(said, "sweep 2 has no results (cancelled): reading sweep 1, the last that has") != 2 || !strings.Contains(said, "eager") {
		t.Errorf("table and plot after an empty sweep:\n%s", said)
	}
	if fi, err := os.Stat(png); err != nil || fi.Size() == 0 {
		t.Errorf("plot configs after an empty sweep wrote nothing: %v", err)
	}
	// In a notebook (an Output that shows figures), plot with a file
	// writes it and shows the figure too.
	fo := &figOut{}
	other := filepath.Join(t.TempDir(), "configs2.png")
	if err := s.Exec(context.Background(), "plot configs "+other, fo); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(other); err != nil || fi.Size() == 0 || fo.figs != 1 || !strings.Contains(fo.b.String(), "wrote "+other) {
		t.Errorf("plot configs FILE in a notebook: %d figures shown, %q, file %v", fo.figs, fo.b.String(), err)
	}
}
