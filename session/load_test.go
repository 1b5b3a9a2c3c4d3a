package session

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/sweep"
)

// sessionsHome makes DefaultSessionsDir() a new empty directory for the
// test, and returns it.
func sessionsHome(t *testing.T) string {
	t.Helper()
	t.Setenv("XDG_DATA_HOME", t.TempDir())
	t.Setenv("APPROXTUNE_SESSION_DIR", "")
	return DefaultSessionsDir()
}

// appendRecords writes recs to the journal in dir, as a session would.
func appendRecords(t *testing.T, dir string, recs []record) {
	t.Helper()
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	for _, r := range recs {
		if err := j.append(r); err != nil {
			t.Fatal(err)
		}
	}
}

// writeJournal writes sws to a journal in dir as a session does: each
// sweep, its events, its end.
func writeJournal(t *testing.T, dir string, sws []*Sweep) {
	t.Helper()
	var appends []record
	for _, sw := range sws {
		appends = append(appends, record{Kind: "sweep", Sweep: sw.ID, Spec: sw.Spec, Configs: sw.Configs})
		for _, r := range sw.Results {
			appends = append(appends, record{Kind: "event", Sweep: sw.ID, Event: raw(r)})
		}
		for _, k := range sw.Kernels {
			appends = append(appends, record{Kind: "event", Sweep: sw.ID, Event: raw(k)})
		}
		for _, tr := range sw.Traces {
			appends = append(appends, record{Kind: "event", Sweep: sw.ID, Event: raw(tr)})
		}
		appends = append(appends, record{Kind: "end", Sweep: sw.ID, Status: sw.Status, Message: sw.Message})
	}
	appendRecords(t, dir, appends)
}

// The journal keeps a result's predicted_se_s and a span's size through a
// write and ReadJournal, and through 'load', which copies the sweep into
// the loading session's journal: read back, that journal rebuilds the same
// sweep.
func TestJournalKeepsNewFieldsThroughLoad(t *testing.T) {
	home := sessionsHome(t)
	sw := tracedSweep(t)
	for i := range sw.Results {
		se := 0.001 * float64(i+1)
		sw.Results[i].PredictedSE = &se
	}
	sized := 0
	for i := range sw.Traces {
		for r := range sw.Traces[i].Ranks {
			ev := sw.Traces[i].Ranks[r].Events
			for e := range ev {
				ev[e].Size = float64(1000*i + 10*r + e + 1)
				sized++
			}
		}
	}
	src := filepath.Join(home, "20261122-183602-aaaaaa")
	writeJournal(t, src, []*Sweep{sw})
	sws, err := ReadJournal(filepath.Join(src, JournalName))
	if err != nil || len(sws) != 1 {
		t.Fatalf("read back: %d sweeps, %v", len(sws), err)
	}
	check := func(where string, got *Sweep) {
		t.Helper()
		for i, r := range got.Results {
			if r.PredictedSE == nil || *r.PredictedSE != *sw.Results[i].PredictedSE {
				t.Fatalf("%s: result %d predicted_se_s %v, want %v", where, i, r.PredictedSE, *sw.Results[i].PredictedSE)
			}
		}
		if !reflect.DeepEqual(got.Traces, sw.Traces) || !reflect.DeepEqual(got.Results, sw.Results) || !reflect.DeepEqual(got.Kernels, sw.Kernels) {
			t.Fatalf("%s: the sweep differs from the one written", where)
		}
	}
	check("ReadJournal", sws[0])
	if sized < 100 {
		t.Fatalf("only %d spans sized", sized)
	}
	b, err := os.ReadFile(filepath.Join(src, JournalName))
	if err != nil || !bytes.Contains(b, []byte(`"predicted_se_s":0.004`)) || !bytes.Contains(b, []byte(`"size":1`)) {
		t.Fatalf("the journal does not hold the fields by their names (%v)", err)
	}

	s := newSession(t)
	out := &textOut{}
	if err := s.Exec(context.Background(), "load "+src, out); err != nil {
		t.Fatal(err)
	}
	check("loaded", s.Last())
	s.Close()
	again, err := ReadJournal(filepath.Join(s.Dir(), JournalName))
	if err != nil || len(again) != 1 {
		t.Fatalf("the loading session's journal: %d sweeps, %v", len(again), err)
	}
	check("the loading session's journal", again[0])
	if again[0].Status != StatusOK || !reflect.DeepEqual(again[0].Configs, sw.Configs) || !reflect.DeepEqual(again[0].Spec, sw.Spec) {
		t.Errorf("the copy's status %s, configs or spec differ", again[0].Status)
	}
	for _, want := range []string{
		"loaded 1 sweep of session 20261122-183602-aaaaaa (" + src + "):\n",
		"  sweep 1 (its sweep 1): evaluate synthetic, 2 configurations, 4 of 4 runs (ok); kernel statistics: 4 runs; timelines: 4 runs\n",
		"    analyses: model, anomalies\n",
		"    rank: needs 2 full runs per configuration or more (this sweep has 1): evaluate with reps 2 or more, or tune\n",
		"table, plot, save, export csv, rank, model and anomalies read sweep 1, the last\n",
	} {
		if !strings.Contains(out.b.String(), want) {
			t.Errorf("load printed no %q:\n%s", want, out.b.String())
		}
	}
}

// After 'load ' and 'resume ', Tab proposes the ids of the sessions that
// have a journal, the most recent first, this session left out.
func TestCompleteSessionIDs(t *testing.T) {
	home := sessionsHome(t)
	journal, err := os.ReadFile(filepath.Join("testdata", "traced-journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"20261020-090000-aaaaaa", "20261124-090000-bbbbbb", "20261121-090000-cccccc"}
	now := time.Now()
	for i, id := range ids {
		p := filepath.Join(home, id, JournalName)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, journal, 0o644); err != nil {
			t.Fatal(err)
		}
		// Written in the order of ids: the last is the most recent.
		at := now.Add(time.Duration(i-10) * time.Minute)
		os.Chtimes(p, at, at)
	}
	os.MkdirAll(filepath.Join(home, "20261125-090000-nojrnl"), 0o755) // a session that never swept
	self := filepath.Join(home, "20261125-100000-dddddd")
	s, err := New(Options{Dir: self})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// This session's own journal, the most recent of all.
	if err := s.journal.append(record{Kind: "sweep", Sweep: 1, Spec: &sweep.Spec{Workload: "synthetic"}}); err != nil {
		t.Fatal(err)
	}
	recent := []string{ids[2], ids[1], ids[0]}
	for _, tc := range []struct {
		line  string
		want  []string
		start int
	}{
		{"load ", recent, 5},
		{"resume ", recent, 7},
		{"load 2026112", []string{ids[2], ids[1]}, 5},
		{"  load   20261020", []string{ids[0]}, 9},
		{"load 2026112 sweep=", nil, 13},
		{"load x", nil, 5},
	} {
		got, start := s.Complete(tc.line, len(tc.line))
		if !reflect.DeepEqual(got, tc.want) || start != tc.start {
			t.Errorf("complete %q: %q at %d, want %q at %d", tc.line, got, start, tc.want, tc.start)
		}
	}
}

// A real sweep in one session, closed; a second session loads it by id
// and reads it as its own: tables, figures, a reload of one sweep, and its
// journal. Then the errors: a session that is not there, this session, a
// journal with no sweep, a journal a crash cut short.
func TestLoadRealSession(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	home := sessionsHome(t)
	ctx := context.Background()

	a, err := New(Options{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	aOut := &textOut{}
	for _, l := range []string{"workload synthetic steps=4 count=2 mean_us=200", "space grid=1x4,2x2", "reps 2", "policy eager",
		"tolerance 2^-1,2^-3", "trace on", "evaluate", "trace off", "reps 1", "tune"} {
		if err := a.Exec(ctx, l, aOut); err != nil {
			t.Fatalf("%s: %v\n%s", l, err, aOut.b.String())
		}
	}
	evaluated := *a.sweeps[0]
	a.Close()
	aID := filepath.Base(a.Dir())
	if filepath.Dir(a.Dir()) != home {
		t.Fatalf("session A in %s, not under %s", a.Dir(), home)
	}

	b, err := New(Options{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	out := &textOut{}
	if err := b.Exec(ctx, "load "+aID, out); err != nil {
		t.Fatalf("load: %v", err)
	}
	for _, want := range []string{
		"loaded 2 sweeps of session " + aID + " (" + a.Dir() + "):\n",
		"  sweep 1 (its sweep 1): evaluate synthetic, 2 configurations, 4 of 4 runs (ok); kernel statistics: 4 runs; timelines: 4 runs\n    analyses: rank, model, anomalies\n",
		"  sweep 2 (its sweep 2): tune synthetic, 2 configurations, 4 of 4 runs (ok); kernel statistics: 4 runs; timelines: none\n    analyses: rank, model\n    anomalies: no timelines: run with trace on first\n",
		"read sweep 2, the last ('load " + aID + " sweep=N' loads only its sweep N)\n",
	} {
		if !strings.Contains(out.b.String(), want) {
			t.Errorf("load printed no %q:\n%s", want, out.b.String())
		}
	}
	if b.Agent() != nil {
		t.Error("load started an agent")
	}
	out.b.Reset()
	if err := b.Exec(ctx, "table best", out); err != nil || !strings.HasPrefix(out.b.String(), "sweep 2: tune synthetic, 4 of 4 runs (ok)\n") {
		t.Errorf("table best after load: %v\n%s", err, out.b.String())
	}
	// The evaluate sweep alone: now the last, with its references.
	out.b.Reset()
	if err := b.Exec(ctx, "load "+a.Dir()+" sweep=1", out); err != nil || !strings.Contains(out.b.String(), "  sweep 3 (its sweep 1): evaluate synthetic") {
		t.Fatalf("load sweep=1: %v\n%s", err, out.b.String())
	}
	// Loaded twice now: said, and counted once by the analyses of every sweep.
	if !strings.Contains(out.b.String(), "loaded again: its sweep 1 (loaded before as sweep 1); 'model sweeps=all' counts each once\n") {
		t.Errorf("a second load of sweep 1 does not say it was loaded before:\n%s", out.b.String())
	}
	if got := b.Last(); !reflect.DeepEqual(got.Results, evaluated.Results) || !reflect.DeepEqual(got.Kernels, evaluated.Kernels) || !reflect.DeepEqual(got.Traces, evaluated.Traces) {
		t.Fatalf("the loaded sweep's data differ from the sweep that ran")
	}
	out.b.Reset()
	if err := b.Exec(ctx, "table best", out); err != nil || !strings.HasPrefix(out.b.String(), "sweep 3: evaluate synthetic, 4 of 4 runs (ok)\n") || !strings.Contains(out.b.String(), "speed-up") {
		t.Errorf("table best of the loaded evaluate: %v\n%s", err, out.b.String())
	}
	fig := filepath.Join(t.TempDir(), "configs.png")
	out.b.Reset()
	if err := b.Exec(ctx, "plot configs "+fig, out); err != nil {
		t.Fatalf("plot configs: %v", err)
	}
	if f, err := os.ReadFile(fig); err != nil {
		t.Fatal(err)
	} else if _, err := png.Decode(bytes.NewReader(f)); err != nil {
		t.Fatalf("plot configs wrote no PNG: %v", err)
	}
	// This session's journal rebuilds the three sweeps; a third session
	// loads them from it.
	sws, err := ReadJournal(filepath.Join(b.Dir(), JournalName))
	if err != nil || len(sws) != 3 || len(sws[2].Traces) != 4 || len(sws[1].Results) != 4 || sws[1].Spec.Mode != sweep.ModeTune {
		t.Fatalf("B's journal rebuilt %d sweeps (%v)", len(sws), err)
	}
	c, err := New(Options{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cOut := &textOut{}
	if err := c.Exec(ctx, "load "+filepath.Base(b.Dir()), cOut); err != nil || !strings.Contains(cOut.b.String(), "loaded 3 sweeps") ||
		!reflect.DeepEqual(c.Last().Results, evaluated.Results) {
		t.Fatalf("loading the session that loaded: %v\n%s", err, cOut.b.String())
	}

	// Errors. A session not there names the recent ones, the most recent first.
	err = b.Exec(ctx, "load 20990101-000000-ffffff", out)
	if err == nil || !strings.Contains(err.Error(), `no session "20990101-000000-ffffff" under `+home) ||
		!strings.Contains(err.Error(), "the most recent sessions are "+filepath.Base(c.Dir())+", "+aID) {
		t.Errorf("load of no session: %v", err)
	}
	for _, self := range []string{filepath.Base(b.Dir()), b.Dir()} {
		if err := b.Exec(ctx, "load "+self, out); err == nil || !strings.Contains(err.Error(), "is this session") {
			t.Errorf("load %s (this session): %v", self, err)
		}
	}
	os.MkdirAll(filepath.Join(home, "nothing"), 0o755)
	if err := b.Exec(ctx, "load "+filepath.Join(home, "nothing"), out); err == nil || !strings.Contains(err.Error(), "no session in "+home+"/nothing: it holds no journal (results.jsonl); the most recent") {
		t.Errorf("load of a directory with no journal: %v", err)
	}
	if err := b.Exec(ctx, "load "+filepath.Join(home, "never-made"), out); err == nil || !strings.Contains(err.Error(), "no session in "+home+"/never-made: there is no such directory") {
		t.Errorf("load of a directory that does not exist: %v", err)
	}
	if err := b.Exec(ctx, "load "+aID+" sweep=3", out); err == nil || !strings.Contains(err.Error(), "has no sweep 3: its sweeps are 1, 2") || !strings.HasPrefix(err.Error(), fmt.Sprintf("column %d:", len("load "+aID+" sweep=")+1)) {
		t.Errorf("load sweep=3: %v", err)
	}
	empty := filepath.Join(home, "20261125-000000-empty0")
	os.MkdirAll(empty, 0o755)
	os.WriteFile(filepath.Join(empty, JournalName), nil, 0o644)
	if err := b.Exec(ctx, "load "+filepath.Base(empty), out); err == nil || !strings.Contains(err.Error(), "holds no sweep") {
		t.Errorf("load of an empty journal: %v", err)
	}
	// A's journal cut after the evaluate's first result, as a crash leaves it.
	crashed := filepath.Join(home, "20261125-000000-crash0")
	writeCut(t, filepath.Join(a.Dir(), JournalName), filepath.Join(crashed, JournalName), `"type":"result"`)
	n := len(b.sweeps)
	out.b.Reset()
	if err := b.Exec(ctx, "load 20261125-000000-crash0", out); err != nil {
		t.Fatalf("load of a crashed session: %v", err)
	}
	// No approxtune has it open: its sweep died (load had called it
	// running, where reopening it says died).
	if len(b.sweeps) != n+1 || b.Last().Status != StatusDied || len(b.Last().Results) != 1 ||
		!strings.Contains(out.b.String(), "evaluate synthetic, 2 configurations, 1 of 4 runs (died)") ||
		!strings.Contains(out.b.String(), "    rank: needs results of 2 configurations or more (this sweep has 1)\n    model: no kernel statistics\n") ||
		!strings.Contains(out.b.String(), "incomplete: 3 runs have no result (the session ended during the sweep (it was stopped, killed or crashed)); it is loaded as it is, and 'resume 20261125-000000-crash0' finishes it\n") {
		t.Errorf("load of a crashed session:\n%s", out.b.String())
	}
	// Open in another approxtune (its lock held), the sweep may be
	// running there: load says so, and 'resume' refuses to run it twice
	// (a review's second REPL had resumed a sweep the first was running).
	j := &Journal{Dir: crashed}
	if err := j.Lock(); err != nil {
		t.Fatal(err)
	}
	defer j.lock.Close()
	out.b.Reset()
	if err := b.Exec(ctx, "load 20261125-000000-crash0", out); err != nil {
		t.Fatalf("load of a running session: %v", err)
	}
	pid := fmt.Sprintf("(pid %d)", os.Getpid())
	if b.Last().Status != StatusRunning || !strings.Contains(out.b.String(), "1 of 4 runs (running)") ||
		!strings.Contains(out.b.String(), "incomplete: 3 runs have no result (its session is open in another approxtune "+pid+", which may be running it now); it is loaded as it is, and 'load' it again once it ends there\n") {
		t.Errorf("load of a session open elsewhere:\n%s", out.b.String())
	}
	n = len(b.sweeps)
	if err := b.Exec(ctx, "resume 20261125-000000-crash0", out); err == nil || !strings.Contains(err.Error(), "is open in another approxtune "+pid+", and its sweep 1 is running there: let it finish, or stop it there, then 'resume 20261125-000000-crash0'") || len(b.sweeps) != n {
		t.Errorf("resume of a sweep running elsewhere: %v (%d sweeps, were %d)", err, len(b.sweeps), n)
	}
	// Reopened (its lock held again), the crashed session journals its
	// sweep's end: another session reads it died, not running there.
	j.lock.Close()
	c, cerr := New(Options{Dir: crashed})
	if cerr != nil {
		t.Fatal(cerr)
	}
	defer c.Close()
	out.b.Reset()
	if err := b.Exec(ctx, "load 20261125-000000-crash0", out); err != nil || !strings.Contains(out.b.String(), "1 of 4 runs (died)") || strings.Contains(out.b.String(), "may be running") {
		t.Errorf("load of a reopened crashed session: %v\n%s", err, out.b.String())
	}
}

// writeCut copies the journal src to dst up to the first line holding cut.
func writeCut(t *testing.T, src, dst, cut string) {
	t.Helper()
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var b bytes.Buffer
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		b.Write(sc.Bytes())
		b.WriteByte('\n')
		if strings.Contains(sc.Text(), cut) {
			break
		}
	}
	os.MkdirAll(filepath.Dir(dst), 0o755)
	if err := os.WriteFile(dst, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// 'resume SESSION' takes over another session's interrupted sweep with all
// it had: its kernel statistics and timelines are journaled beside its
// results, so this session reopened still tabulates and draws them. Only
// the results had been journaled.
func TestResumeSessionKeepsKernelsAndTraces(t *testing.T) {
	bin := testenv.Build(t)
	testenv.Launcher(t)
	ctx := context.Background()
	first := filepath.Join(t.TempDir(), "first")
	a, err := New(Options{Dir: first, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	execAll(t, a, &textOut{}, "workload synthetic", "space steps=4,5,6,7,8,9 count=2 mean_us=200", "policy conditional", "tolerance 2^-1", "trace on")
	if err := a.Exec(ctx, "tune", &limitAt{at: 2, set: func() { a.Cancel() }}); err == nil {
		t.Fatal("tune cancelled after 2 runs ended without an error")
	}
	old := a.Last()
	if len(old.Results) == 0 || len(old.Missing()) == 0 || len(old.Kernels) == 0 || len(old.Traces) == 0 {
		t.Fatalf("the cancelled sweep: %d results, %d missing, %d kernel records, %d timelines", len(old.Results), len(old.Missing()), len(old.Kernels), len(old.Traces))
	}
	a.Close()
	second := filepath.Join(t.TempDir(), "second")
	b, err := New(Options{Dir: second, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	execAll(t, b, &textOut{}, "resume "+first)
	b.Close()
	sws, err := ReadJournal(filepath.Join(second, JournalName))
	if err != nil || len(sws) != 1 {
		t.Fatalf("the second session's journal: %d sweeps, %v", len(sws), err)
	}
	sw := sws[0]
	if sw.Status != StatusOK || len(sw.Missing()) != 0 {
		t.Errorf("read back: status %s, %d runs missing", sw.Status, len(sw.Missing()))
	}
	if len(sw.Kernels) < len(old.Kernels)+1 || len(sw.Traces) < len(old.Traces)+1 {
		t.Errorf("read back: %d kernel records and %d timelines; want the %d and %d of the first session's runs and those of the resumed ones",
			len(sw.Kernels), len(sw.Traces), len(old.Kernels), len(old.Traces))
	}
}

// A configuration left out for good ('resume skip=N') after one policy had
// run it leaves every figure, table and count, in the journal read back and
// in a session that loads it, which keeps its results in its own journal.
// conditional's mean error had averaged it in, 'table configs' listed its
// row, and the best table read "5 of 4 runs".
func TestLeftOutConfigurationLeavesTheFigures(t *testing.T) {
	home := sessionsHome(t)
	spec, err := sweep.Parse([]byte(`{"workload":"x","policies":["conditional","eager"],"tolerances":[0.5],"mode":"evaluate"}`))
	if err != nil {
		t.Fatal(err)
	}
	var cs []sweep.Config
	for _, js := range []string{`{"b":1}`, `{"b":2}`, `{"b":3}`} {
		var c sweep.Config
		if err := json.Unmarshal([]byte(js), &c); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	f := func(x float64) *float64 { return &x }
	tol := 0.5
	run := func(i int, policy string, pred float64) sweep.Result {
		return sweep.Result{Type: sweep.TypeResult, Index: i, Config: cs[i], Policy: policy, Tolerance: &tol,
			ReferenceS: []float64{1}, PredictedS: f(pred), SelectiveS: f(0.25), Error: f(math.Abs(pred - 1))}
	}
	// Configuration 2 ran under conditional (an error of 90%, a choice),
	// and failed under eager every time.
	results := []sweep.Result{run(0, "conditional", 1.1), run(0, "eager", 1), run(1, "conditional", 1.1), run(1, "eager", 1),
		run(2, "conditional", 0.1)}
	src := filepath.Join(home, "20261130-213000-aaaaaa")
	recs := []record{{Kind: "sweep", Sweep: 1, Spec: spec, Configs: cs}}
	for _, r := range results {
		recs = append(recs, record{Kind: "event", Sweep: 1, Event: raw(r)})
	}
	recs = append(recs, record{Kind: "end", Sweep: 1, Status: StatusFailed, Message: "eager failed"},
		record{Kind: "resume", Sweep: 1, Spec: spec, Skip: []int{2}},
		record{Kind: "end", Sweep: 1, Status: StatusOK, Message: "complete without the configurations skipped"})
	appendRecords(t, src, recs)

	check := func(where string, sw *Sweep) {
		t.Helper()
		if len(sw.Results) != 4 || sw.Total() != 4 || len(sw.Missing()) != 0 || len(sw.leftOut) != 1 {
			t.Errorf("%s: %d of %d results, missing %v, %d left out; want 4 of 4, none missing, 1 left out", where, len(sw.Results), sw.Total(), sw.Missing(), len(sw.leftOut))
		}
		for _, sm := range sw.Summaries() {
			if sm.Configs != 2 || math.Abs(sm.MeanError-map[string]float64{"conditional": 0.1, "eager": 0}[sm.Policy]) > 1e-9 || sm.Chosen == "b=3" {
				t.Errorf("%s: %s over %d configurations, mean error %v, chose %s; want 2, without b=3", where, sm.Policy, sm.Configs, sm.MeanError, sm.Chosen)
			}
		}
		tb, tc := TableBest(sw), TableConfigs(sw)
		if !strings.Contains(tb, "4 of 4 runs") || !strings.Contains(tb, "note: configuration 2 (b=3) was left out") {
			t.Errorf("%s: the best table\n%s", where, tb)
		}
		if strings.Contains(tc, "b=3  ") || strings.Count(tc, "\n") != 6 || !strings.Contains(tc, "note: configuration 2 (b=3) was left out") {
			t.Errorf("%s: the configurations table lists the left-out one, or does not say it is left out:\n%s", where, tc)
		}
	}
	sws, err := ReadJournal(filepath.Join(src, JournalName))
	if err != nil || len(sws) != 1 {
		t.Fatalf("read back: %d sweeps, %v", len(sws), err)
	}
	check("ReadJournal", sws[0])

	loaded, again := loadBack(t, src)
	check("loaded", loaded)
	check("the loading session's journal", again)
}

// loadBack loads the session at src into a new session, and returns the
// sweep loaded and the same sweep as the new session's journal reads back.
func loadBack(t *testing.T, src string) (loaded, again *Sweep) {
	t.Helper()
	s := newSession(t)
	if err := s.Exec(context.Background(), "load "+src, &textOut{}); err != nil {
		t.Fatal(err)
	}
	loaded = s.Last()
	s.Close()
	sws, err := ReadJournal(filepath.Join(s.Dir(), JournalName))
	if err != nil || len(sws) != 1 {
		t.Fatalf("the loading session's journal: %d sweeps, %v", len(sws), err)
	}
	return loaded, sws[0]
}

// A sweep taken in by 'load' keeps the full runs of a configuration whose
// selective runs all failed (its error event's): the copy's best table
// names it as faster than the best, as the original's does, and reading
// the loading session's journal back keeps them too.
func TestLoadKeepsFailedConfigurationsFullRuns(t *testing.T) {
	home := sessionsHome(t)
	sw := knownSweep(t)
	sw.Configs = append(sw.Configs, sw.Configs[1])
	src := filepath.Join(home, "20261130-223000-bbbbbb")
	recs := []record{{Kind: "sweep", Sweep: 1, Spec: sw.Spec, Configs: sw.Configs}}
	for _, r := range sw.Results {
		r.Type = sweep.TypeResult
		recs = append(recs, record{Kind: "event", Sweep: 1, Event: raw(r)})
	}
	idx := 2
	recs = append(recs, record{Kind: "event", Sweep: 1, Event: raw(sweep.ErrorEvent{Type: sweep.TypeError, Message: "configuration 2: conditional at 2^-1: prog exited: exit status 3", Index: &idx, ReferenceS: []float64{0.1, 0.12}})},
		record{Kind: "end", Sweep: 1, Status: StatusFailed, Message: "1 selective run failed"})
	appendRecords(t, src, recs)
	const note = ") had shorter full runs (0.1100 s) than the best above (0.2000 s), but every selective run of it failed"
	loaded, again := loadBack(t, src)
	if tb := TableBest(loaded); !strings.Contains(tb, note) {
		t.Errorf("the loaded sweep's best table:\n%s", tb)
	}
	if tb := TableBest(again); !strings.Contains(tb, note) {
		t.Errorf("the loading session's journal read back:\n%s", tb)
	}
}
