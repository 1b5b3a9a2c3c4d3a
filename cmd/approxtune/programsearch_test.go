package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/preload"
	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/sweep"
)

// A search over a program's space (spec "search": "halving", evaluate)
// runs every configuration's references in round 0, a selective round
// that drops what is far slower than its best, and full runs of the
// finalists, and chooses the fastest: iterate.c at n=32 against 96, 160
// and 224 (times growing with n³). Every result is counted (done reaches
// total), and every launch is announced on standard error.
func TestProgramSearch(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "iterate.c"), "-I"+filepath.Join(testenv.Root(t), "include"), "-lopenblas")
	out, stderr, code := searchSweep(t, bin, lib, t.TempDir(), fmt.Sprintf(`{"program": {"command": [%q, "20", "{n}"]},
 "space": {"n": [96, 224, 32, 160], "ranks": [2]}, "policies": ["eager"], "tolerances": ["2^-1"],
 "search": "halving", "mode": "evaluate", "reference_reps": 2}`, prog))
	if code != 0 {
		t.Fatalf("program --sweep: exit %d\n%s", code, stderr)
	}
	ev := parseEvents(t, out)
	start, results, rounds, outcome := ev.start, ev.results, ev.rounds, ev.outcome
	for _, e := range ev.errors {
		t.Errorf("error event: %+v", e)
	}
	if outcome == nil || len(rounds) != 2 || len(results) == 0 {
		t.Fatalf("%d results, rounds %+v, outcome %+v: want 2 rounds and an outcome\n%s", len(results), rounds, outcome, out)
	}
	const fastest, slowest = 2, 1 // n=32, n=224
	if outcome.Chosen != fastest || outcome.Config.Int("n") != 32 || outcome.Method != sweep.SearchHalving || outcome.Policy != "eager" ||
		outcome.Considered != 4 || outcome.Rounds != 2 || !(outcome.SearchS > 0) || !(outcome.ChosenS > 0) {
		t.Errorf("outcome %+v: want n=32 (configuration 2) chosen of 4 in 2 rounds, at a cost", *outcome)
	}
	first, full := rounds[0], rounds[1]
	if first.Round != 1 || first.Tolerance != 0.5 || len(first.Ran) != 4 || !slices.Contains(first.Dropped, slowest) || first.Kept[0] != fastest {
		t.Errorf("round 1 %+v: want all 4 run at 2^-1, n=32 first, n=224 dropped", first)
	}
	if full.Round != 2 || full.Tolerance != 0 || full.Best != fastest || !slices.Equal(full.Kept, outcome.Finalists) || len(full.Ran) != len(full.Kept) {
		t.Errorf("full round %+v: want the finalists %v, n=32 fastest", full, outcome.Finalists)
	}
	byRound := map[int][]sweep.Result{}
	// The total grows as the search learns how many rounds it makes.
	for k, r := range results {
		byRound[r.Round] = append(byRound[r.Round], r)
		if r.Done != k+1 || r.Total < r.Done || k > 0 && r.Total < results[k-1].Total {
			t.Errorf("result %d: done %d of %d; want %d of a total that never comes down", k, r.Done, r.Total, k+1)
		}
	}
	if start.Runs != results[0].Total {
		t.Errorf("start: %d runs, the first result's total %d", start.Runs, results[0].Total)
	}
	if last := results[len(results)-1]; last.Done != last.Total {
		t.Errorf("the last result: done %d of %d", last.Done, last.Total)
	}
	if len(byRound[0]) != 4 {
		t.Errorf("round 0: %d results, want the 4 configurations' references", len(byRound[0]))
	}
	for _, r := range byRound[0] {
		if len(r.ReferenceS) != 2 || r.LaunchS == nil {
			t.Errorf("round 0, configuration %d: references %v, launch time %v; want 2 and the launches' time", r.Index, r.ReferenceS, r.LaunchS)
		}
	}
	ran := map[int]bool{}
	for _, r := range byRound[1] {
		ran[r.Index] = true
		if r.Policy != "eager" || r.PredictedS == nil || r.PredictedSE == nil || r.SelectiveS == nil || r.LaunchS == nil {
			t.Errorf("round 1 result %+v: want eager's prediction, its standard error, its time and the launch's", r)
		}
	}
	if len(ran) != 4 || len(byRound[1]) < 4 {
		t.Errorf("round 1: %d results of %d configurations, want every one of 4", len(byRound[1]), len(ran))
	}
	for _, r := range byRound[2] {
		if len(r.ReferenceS) != 1 || r.Policy != "" || !slices.Contains(full.Ran, r.Index) {
			t.Errorf("full round result %+v: want one full run of a finalist", r)
		}
	}
	if len(byRound[2]) != len(full.Ran) {
		t.Errorf("full round: %d results for %d finalists", len(byRound[2]), len(full.Ran))
	}
	// A configuration that executed kernels and could survive round 1
	// runs twice in it, its second launch reported.
	if n, least := strings.Count(stderr, "== configuration "), 8+len(byRound[1])+len(byRound[2]); n < least || n > least+len(first.Kept) {
		t.Errorf("%d launches announced on standard error, want %d to %d:\n%s", n, least, least+len(first.Kept), stderr)
	}
}

// A search's round after the first starts each rank's track from the
// samples of the round before (preload.Run.Retune), deciding afresh at its
// own tolerance: its launch's computation kernels hold round 1's samples
// and its own; it writes the statistics of its own round (State), which
// the round's next launch reads instead of round 1's. A launch without
// Retune starts afresh.
func TestProgramSearchRetunes(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	lib := buildPreload(t)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "iterate.c"), "-I"+filepath.Join(testenv.Root(t), "include"), "-lopenblas")
	const ranks, iter = 2, 40
	dir := t.TempDir()
	// samples are a launch's computation kernels' samples, and its own
	// executions of them: each a sample, but for a first call held back
	// as cold (selective.Engine.SetColdFirstCalls).
	type samples struct{ count, own map[string]int64 }
	launch := func(cfg preload.Run) samples {
		t.Helper()
		cfg.Policy, cfg.Out = "eager", filepath.Join(t.TempDir(), "result.json")
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		r := testenv.MPIRun(t, 2*time.Minute, ranks, []string{"LD_PRELOAD=" + lib, preload.EnvRun + "=" + string(b)}, "", prog, strconv.Itoa(iter), "64")
		data, err := os.ReadFile(cfg.Out)
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		var k sweep.KernelsEvent
		if err != nil || len(lines) != 2 || json.Unmarshal([]byte(lines[1]), &k) != nil {
			t.Fatalf("eager at %g (state %s, retune %s): no result (%v); exit %d\n%s%s", cfg.Tolerance, cfg.State, cfg.Retune, err, r.ExitCode, r.Stdout, r.Stderr)
		}
		s := samples{count: map[string]int64{}, own: map[string]int64{}}
		for _, st := range k.Kernels {
			if st.Routine == "gemm" {
				s.count[st.Key], s.own[st.Key] = st.Count, st.Calls-st.Skipped
			}
		}
		if len(s.count) != 2 {
			t.Fatalf("eager at %g: kernels %+v, want the two gemm", cfg.Tolerance, k.Kernels)
		}
		return s
	}
	round1, round2 := filepath.Join(dir, "round1"), filepath.Join(dir, "round2")
	first := launch(preload.Run{Tolerance: 0.5, State: round1})
	for rank := range ranks {
		if _, err := os.Stat(fmt.Sprintf("%s.%d", round1, rank)); err != nil {
			t.Fatalf("round 1's statistics: %v", err)
		}
	}
	const tight = 1.0 / 32
	fresh := launch(preload.Run{Tolerance: tight})
	retuned := launch(preload.Run{Tolerance: tight, State: round2, Retune: round1})
	again := launch(preload.Run{Tolerance: tight, State: round2, Retune: round1})
	// took says whether a launch's count holds before's samples and its
	// own executions (the first perhaps held back as cold).
	took := func(count, before, own int64) bool { return count >= before+own-1 && count <= before+own }
	for key, n := range first.count {
		if n < 2 {
			t.Fatalf("%s: %d samples in round 1, want at least n_min's 2", key, n)
		}
		if !took(fresh.count[key], 0, fresh.own[key]) {
			t.Errorf("%s fresh: %d samples of %d executions; want its own alone", key, fresh.count[key], fresh.own[key])
		}
		if !took(retuned.count[key], n, retuned.own[key]) {
			t.Errorf("%s retuned from round 1: %d samples, want round 1's %d and its own %d executions", key, retuned.count[key], n, retuned.own[key])
		}
		if !took(again.count[key], retuned.count[key], again.own[key]) {
			t.Errorf("%s, the round's second launch: %d samples, want the round's first launch's %d and its own %d executions", key, again.count[key], retuned.count[key], again.own[key])
		}
	}
}

// In the REPL, 'tune search=halving' searches a program's space: the
// rounds' lines, the choice and the search's cost, and 'table best' its
// rounds, as for a built-in workload.
func TestProgramSearchREPL(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	t.Setenv(preload.EnvLib, lib)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "iterate.c"), "-I"+filepath.Join(testenv.Root(t), "include"), "-lopenblas")
	script := fmt.Sprintf(`program %s 20 {n}
space n=160,32,96,224 ranks=2
tune search=halving
table best
`, prog)
	out, errs, code := runScript(t, bin, script)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"round 1 at 2^-1: 4 configurations,", "chosen: n=32", "the search's runs took", "round  tolerance"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A configuration whose selective launch fails leaves the search, whether
// its first launch failed or the second a round gives a configuration
// that settled kernels (it had stayed, and could be chosen, its error
// saying it had left); the search chooses among the rest, and
// 'program --sweep' exits 1 saying so. iterate.c at n=224 fails every
// eager launch (FLAG), and every configuration its second (ONCE).
func TestProgramSearchLeavesFailed(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "iterate.c"), "-I"+filepath.Join(testenv.Root(t), "include"), "-lopenblas")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "flag-224"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := searchSweep(t, bin, lib, dir, fmt.Sprintf(`{"program": {"command": [%q, "20", "{n}", "0", %q, %q]},
 "space": {"n": [224, 32, 96, 160], "ranks": [2]}, "policies": ["eager"], "tolerances": ["2^-1"], "search": "halving", "mode": "tune"}`,
		prog, filepath.Join(dir, "flag-{n}"), filepath.Join(dir, "once-{n}")))
	if code != 1 || !strings.Contains(stderr, "failed (their error events are on standard output)") || !strings.Contains(stderr, "the search chose among the rest") {
		t.Errorf("program --sweep: exit %d; want exit 1 saying the search chose among the rest\n%s", code, stderr)
	}
	ev := parseEvents(t, out)
	rounds, outcome := ev.rounds, ev.outcome
	left := map[int]string{}
	for _, e := range ev.errors {
		if e.Index == nil || !strings.Contains(e.Message, "in round 1") || !strings.Contains(e.Message, "it leaves the search") {
			t.Errorf("error event %+v: want its configuration, round 1, and that it leaves the search", e)
			continue
		}
		left[*e.Index] = e.Message
	}
	if _, ok := left[0]; !ok || len(left) < 2 || outcome == nil || len(rounds) != 2 {
		t.Fatalf("left the search %v, rounds %+v, outcome %+v: want n=224 and at least one more left, and a choice\n%s", left, rounds, outcome, out)
	}
	for i := range left {
		if _, gone := left[outcome.Chosen]; gone || slices.Contains(rounds[0].Ran, i) || slices.Contains(rounds[0].Kept, i) || slices.Contains(rounds[1].Ran, i) {
			t.Errorf("configuration %d left the search, yet rounds %+v chose %d", i, rounds, outcome.Chosen)
		}
	}
	// Each failed launch's result will not come: the count of results to
	// come leaves it out, and the last one reads n of n.
	if last := ev.results[len(ev.results)-1]; last.Done != last.Total {
		t.Errorf("the last result: %d of %d", last.Done, last.Total)
	}
}

// searchSweep runs 'approxtune program --sweep' on the spec text (written
// in dir) and returns its standard output, standard error and exit status.
func searchSweep(t *testing.T, bin, lib, dir, spec string) ([]byte, string, int) {
	t.Helper()
	path := filepath.Join(dir, "search.json")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "program", "--sweep", path)
	cmd.Env = append(os.Environ(), preload.EnvLib+"="+lib)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil && cmd.ProcessState == nil {
		t.Fatalf("program --sweep: %v", err)
	}
	return out, stderr.String(), cmd.ProcessState.ExitCode()
}

// A search's selective launch that hangs is stopped alone at its deadline,
// its configuration leaving the search, and the search goes on (a hang had
// ended it, and a search cannot be resumed): in the REPL, and under
// 'program --sweep'. hangs.c deadlocks in x=1's selective launches.
func TestProgramSearchHungLaunch(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	t.Setenv(preload.EnvLib, lib)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "hangs.c"))
	// x=5's selective launch is stopped after it wrote its result (a slow
	// exit): its result stands, and it stays in the search.
	out, errs, code := runScript(t, bin, fmt.Sprintf(`program %s {x}
space x=2,1,3,5 ranks=2
deadline 3s
tune search=halving
table best
`, prog))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"it hangs; stopping that launch alone (its configuration leaves the search, which goes on)", "(ok)",
		"note: 1 configuration left the search, a launch of its failed", "1 (x=1)\n", "chosen: x=",
		"configuration 3 (ranks=2 x=5): its launch had written its result at MPI_Finalize and was stopped past the deadline after it: the result stands"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "chosen: x=1") {
		t.Errorf("x=1, which hung, chosen:\n%s", out)
	}

	// Three hangs in a row, each stopped at the default deadline's 5 s
	// least: a hang stopped alone scales no later deadline (each had
	// made the next ten times longer: 5 s, then 50 s, then 500 s).
	t0 := time.Now()
	events, stderr, code := searchSweep(t, bin, lib, t.TempDir(), fmt.Sprintf(`{"program": {"command": [%q, "{x}"]},
 "space": {"x": [2, 1, 10, 11, 3], "ranks": [2]}, "policies": ["eager"], "search": "halving", "mode": "tune"}`, prog))
	if code != 1 || !strings.Contains(stderr, "the search chose among the rest") {
		t.Errorf("program --sweep: exit %d; want 1, the search chosen among the rest\n%s", code, stderr)
	}
	if took := time.Since(t0); took > 45*time.Second {
		t.Errorf("program --sweep with three hangs took %v: want each stopped at about 5 s", took)
	}
	ev := parseEvents(t, events)
	hung, outcome := 0, ev.outcome
	for _, e := range ev.errors {
		if e.Index != nil && strings.Contains(e.Message, "ran past the deadline") {
			hung++
		}
	}
	if hung != 3 || outcome == nil || outcome.Chosen != 0 && outcome.Chosen != 4 {
		t.Errorf("program --sweep: %d hung, outcome %+v; want x=1, 10 and 11 told of and x=2 or 3 chosen\n%s", hung, outcome, events)
	}
}

// A finalist whose full launch fails, or hangs and is stopped alone at its
// deadline, leaves the search, and the fastest of the other finalists is
// chosen (either had ended the search with no choice): in the REPL, and
// under 'program --sweep'. hangs.c's full runs of x=7 exit with status 4, of x=8
// deadlock; its three configurations are all finalists.
func TestProgramSearchFinalistLeaves(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	t.Setenv(preload.EnvLib, lib)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "hangs.c"))
	out, errs, code := runScript(t, bin, fmt.Sprintf(`program %s {x}
space x=7,2,8 ranks=2
deadline 3s
tune search=halving
table best
plot search
`, prog))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"configuration 0 (ranks=2 x=7): its full launch in the finals (round 2) failed: ",
		"it hangs; stopping that launch alone (its configuration leaves the search, which goes on)",
		"configuration 2 (ranks=2 x=8): its full launch in the finals (round 2) did not end: it ran past the deadline",
		"note: 2 configurations left the search, a launch of theirs failed", "chosen: x=2 ("} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	events, stderr, code := searchSweep(t, bin, lib, t.TempDir(), fmt.Sprintf(`{"program": {"command": [%q, "{x}"]},
 "space": {"x": [7, 2, 8], "ranks": [2]}, "policies": ["eager"], "search": "halving", "mode": "tune"}`, prog))
	if code != 1 || !strings.Contains(stderr, "2 launches failed (their error events are on standard output): their configurations left the search, and the search chose among the rest") {
		t.Errorf("program --sweep: exit %d; want 1, the search chosen among the rest\n%s", code, stderr)
	}
	ev := parseEvents(t, events)
	left := map[int]string{}
	for _, e := range ev.errors {
		if e.Index != nil {
			left[*e.Index] = e.Message
		}
	}
	if !strings.Contains(left[0], "failed") || !strings.Contains(left[2], "ran past the deadline") || len(left) != 2 ||
		ev.outcome == nil || ev.outcome.Chosen != 1 || len(ev.rounds) != 2 || !slices.Equal(ev.rounds[1].Ran, []int{1}) {
		t.Errorf("program --sweep: left %v, rounds %+v, outcome %+v; want x=7 failed, x=8 hung, x=2 chosen alone in the finals\n%s", left, ev.rounds, ev.outcome, events)
	}
}

// Once a round has as many predictions as it keeps, a program that asks
// (APPROXTUNE_CUT_SHORT(), as iterate.c does at each step's end) stops a
// launch whose prediction has passed them: its result says cut_short,
// with fewer calls than the whole run makes, and the round drops it.
// iterate.c at n=256 and 224 after 32, 48 and 64, which a round of 5
// keeps at most 3 of.
func TestProgramSearchCutsShort(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "iterate.c"), "-I"+filepath.Join(testenv.Root(t), "include"), "-lopenblas")
	out, stderr, code := searchSweep(t, bin, lib, t.TempDir(), fmt.Sprintf(`{"program": {"command": [%q, "20", "{n}"]},
 "space": {"n": [32, 48, 64, 256, 224], "ranks": [2]}, "policies": ["eager"], "tolerances": ["2^-1"], "search": "halving", "mode": "tune"}`, prog))
	if code != 0 {
		t.Fatalf("program --sweep: exit %d\n%s", code, stderr)
	}
	const calls = 2 * 20 * 8 // ranks x steps x calls a step
	ev := parseEvents(t, out)
	cut := map[int]bool{}
	for _, r := range ev.results {
		if !r.CutShort {
			continue
		}
		cut[r.Index] = true
		if r.Executed == nil || r.Skipped == nil || *r.Executed+*r.Skipped >= calls || r.Round != 1 {
			t.Errorf("configuration %d cut short: %+v; want fewer than %d calls, in round 1", r.Index, r, calls)
		}
	}
	var first *sweep.Round
	if len(ev.rounds) > 0 {
		first = &ev.rounds[0]
	}
	if !cut[3] || cut[0] || cut[1] || cut[2] || first == nil {
		t.Fatalf("cut short %v, want n=256 (configuration 3) and none of the first three; round 1 %+v\n%s", cut, first, out)
	}
	for i := range cut {
		if !slices.Contains(first.Dropped, i) {
			t.Errorf("configuration %d cut short, yet round 1 did not drop it: %+v", i, *first)
		}
	}
}

// searchEvents are a search's events, by type.
type searchEvents struct {
	start   sweep.Start
	results []sweep.Result
	rounds  []sweep.Round
	errors  []sweep.ErrorEvent
	outcome *sweep.SearchEvent // nil: none came
}

// parseEvents reads the JSON-lines events 'program --sweep' printed.
func parseEvents(t *testing.T, out []byte) searchEvents {
	t.Helper()
	var ev searchEvents
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var head struct{ Type string }
		if err := json.Unmarshal([]byte(line), &head); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		var err error
		switch head.Type {
		case sweep.TypeStart:
			err = json.Unmarshal([]byte(line), &ev.start)
		case sweep.TypeResult:
			var r sweep.Result
			err = json.Unmarshal([]byte(line), &r)
			ev.results = append(ev.results, r)
		case sweep.TypeRound:
			var r sweep.Round
			err = json.Unmarshal([]byte(line), &r)
			ev.rounds = append(ev.rounds, r)
		case sweep.TypeError:
			var e sweep.ErrorEvent
			err = json.Unmarshal([]byte(line), &e)
			ev.errors = append(ev.errors, e)
		case sweep.TypeSearch:
			ev.outcome = new(sweep.SearchEvent)
			err = json.Unmarshal([]byte(line), ev.outcome)
		}
		if err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
	}
	return ev
}

// 'program --sweep' gives a search's finalist ten times its prediction,
// where the longest launch before it, a selective one, allows less: a
// program whose launches skip 90% had its full launches stopped as hung.
// A prediction cut short is a lower bound and counts for nothing; a
// reference time, where there is one, is what counts.
func TestLaunchWatchFinalistByPrediction(t *testing.T) {
	w := &launchWatch{longest: 2 * time.Second}
	full := sweep.RunStart{Index: 0, Kind: sweep.RunReference, Round: 2}
	if got, want := w.limit(full), 20*time.Second; got != want {
		t.Errorf("no prediction: limit %v, want %v (10 times the longest launch)", got, want)
	}
	pred, cut := 30.0, 90.0
	w.predicted(sweep.Result{Index: 0, PredictedS: &pred})
	w.predicted(sweep.Result{Index: 0, PredictedS: &cut, CutShort: true})
	if got, want := w.limit(full), 300*time.Second; got != want {
		t.Errorf("predicted 30 s: limit %v, want %v", got, want)
	}
	if got, want := w.limit(sweep.RunStart{Index: 1, Kind: sweep.RunReference, Round: 2}), 20*time.Second; got != want {
		t.Errorf("another configuration: limit %v, want %v", got, want)
	}
	if got, want := w.limit(sweep.RunStart{Index: 0, Kind: sweep.RunSelective, Round: 2}), 20*time.Second; got != want {
		t.Errorf("a selective launch: limit %v, want %v (its prediction is the whole run's, not the launch's)", got, want)
	}
	full.ReferenceS = []float64{1}
	if got, want := w.limit(full), 10*time.Second; got != want {
		t.Errorf("reference time 1 s: limit %v, want %v", got, want)
	}
}

// A terminal's Ctrl-C goes to its whole foreground process group: the
// REPL, and mpirun with it where mpirun shared the group, which then
// killed the program's launch under way, reported as the program's
// failure ("exited: exit status 1", with advice to skip its
// configuration) where the REPL had said the sweep would stop at the
// launch's end (a review). mpirun runs in a group of its own: the launch
// ends whole, and the sweep is cancelled at that boundary.
func TestREPLGroupInterruptSparesLaunch(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "iterate.c"), "-I"+filepath.Join(testenv.Root(t), "include"), "-lopenblas")
	// Each full run sleeps 10 x 0.2 s.
	script := fmt.Sprintf("program %s 10 {n} 200000\nspace n=32,48 ranks=2\npolicy eager\ntolerance 2^-1\nreps 1\nevaluate\n", prog)
	repl, out := startREPLUntil(t, bin, filepath.Join(t.TempDir(), "session"), script, "sweep 1:", func(c *exec.Cmd) {
		c.Env = append(os.Environ(), preload.EnvLib+"="+lib)
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its own group, as a terminal's foreground job
	})
	time.Sleep(time.Second) // into the first launch's run
	if err := syscall.Kill(-repl.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	repl.Wait() // a script's line that ends in error exits 1
	got := out.String()
	if !strings.Contains(got, "sweep 1 cancelled after 0 of 2 runs (cancelled at a run boundary (the end of a launch))") ||
		strings.Contains(got, "exit status") || strings.Contains(got, "failed") {
		t.Errorf("after a Ctrl-C to the REPL's group: want the sweep cancelled at the launch's end, no launch failed\n%s", got)
	}
}
