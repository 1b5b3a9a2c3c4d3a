package session

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/approxtune/approxtune/internal/plots"
	"github.com/approxtune/approxtune/sweep"
)

// tune and evaluate search through a real agent: a line per round, the
// rounds and the choice in 'table best', an evaluate search judged by its
// references, the choice the fastest synthetic configuration; a search
// reloads from the journal with its rounds, and is not resumed.
func TestSearchFromTheSession(t *testing.T) {
	s := agentSession(t)
	out := &textOut{}
	execAll(t, s, out, "workload synthetic grid=2x2 steps=6 count=4", "space mean_us=900,100,300,600", "policy conditional", "reps 2",
		"tune search=halving")
	text := out.b.String()
	for _, want := range []string{"round 1 at 2^-1: 4 configurations,", "chosen: mean_us=100 (", "the search's runs took"} {
		if !strings.Contains(text, want) {
			t.Errorf("tune search=halving output has no %q:\n%s", want, text)
		}
	}
	sw := s.Last()
	if sw.Search == nil || sw.Configs[sw.Search.Chosen].Label() != sw.Configs[1].Label() || len(sw.Rounds) < 2 {
		t.Fatalf("search %+v, %d rounds: want configuration 1 (mean_us=100) chosen", sw.Search, len(sw.Rounds))
	}
	if sw.Spec.Policies[0] != "conditional" || sw.Spec.Search != "halving" {
		t.Errorf("spec %+v: want conditional, halving", sw.Spec)
	}
	out.b.Reset()
	execAll(t, s, out, "evaluate search=halving")
	if text := out.b.String(); !strings.Contains(text, "judged by the references (their medians): best") || !strings.Contains(text, "one full run of every configuration:") {
		t.Errorf("evaluate search=halving output:\n%s", text)
	}
	// A search that ended has nothing to resume (it had said to run it
	// again); one stopped cannot be resumed run by run.
	out.b.Reset()
	if err := s.Exec(context.Background(), "resume", out); err != nil || !strings.Contains(out.b.String(), "sweep 2 is complete: nothing to resume") {
		t.Errorf("resume of a complete search: %v\n%s", err, out.b.String())
	}
	s.Last().Status = StatusCancelled
	if err := s.Exec(context.Background(), "resume", out); err == nil || !strings.Contains(err.Error(), "cannot be resumed") {
		t.Errorf("resume of a stopped search: %v", err)
	}
	s.Last().Status = StatusOK
	for line, want := range map[string]string{
		"tune search=random":                         "needs budget=N",
		"tune search=random budget=0":                "not a budget",
		"tune search=random budget=99":               "more than the space's 4 configurations",
		"tune budget=3":                              "budget= goes with search=random",
		"tune search=fast":                           "want halving",
		"evaluate search=halving foo=1":              "KEY=VALUE",
		"tune policy=eager":                          "policy= goes with search=",
		"evaluate policy=eager,conditional":          "set by the command 'policy', e.g. policy eager,conditional, then evaluate",
		"tune search=halving search=random budget=2": "search= is given twice",
		"tune search=random budget=1":                "budget=1 draws 1 configuration, and has nothing to choose from: give budget=2 or more",
	} {
		if err := s.Exec(context.Background(), line, out); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", line, err, want)
		}
	}
	// The journal keeps the rounds: a session that loads this one has them.
	l, err := New(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	out.b.Reset()
	execAll(t, l, out, "load "+s.Dir(), "table best")
	if text := out.b.String(); !strings.Contains(text, "judged by the references") || !strings.Contains(text, "round  tolerance") {
		t.Errorf("loaded search's table best:\n%s", text)
	}
}

// A round's line says why its configurations were dropped: slower with
// confidence, past the round's budget, or cut short.
func TestRoundLineCutShort(t *testing.T) {
	sw := &Sweep{Results: []sweep.Result{{Index: 0, Round: 1}, {Index: 1, Round: 1, CutShort: true}, {Index: 2, Round: 1, CutShort: true}, {Index: 3, Round: 2, CutShort: true}}}
	r := sweep.Round{Round: 1, Policy: "eager", Tolerance: 0.5, Ran: []int{0, 1, 2}, Kept: []int{0}, Dropped: []int{1, 2}, ThresholdS: 1.5}
	if got, want := roundLine(sw, r), "2 dropped (each predicted at 1.5000 s or more: 2 cut short)"; !strings.Contains(got, want) {
		t.Errorf("round line %q, want it to contain %q", got, want)
	}
	sw.Spec = &sweep.Spec{Confidence: 0.95}
	r.Ran, r.Dropped, r.Capped = []int{0, 1, 2, 4, 5, 6}, []int{1, 2, 4, 5, 6}, []int{5, 6}
	if got, want := roundLine(sw, r), "5 dropped (each predicted at 1.5000 s or more: 1 slower than the fastest with 95% confidence, 2 past the fastest 1 the round keeps, 2 cut short)"; !strings.Contains(got, want) {
		t.Errorf("round line %q, want it to contain %q", got, want)
	}
	r.Round, r.Ran, r.Dropped = 3, []int{0}, nil
	if got := roundLine(sw, r); strings.Contains(got, "cut short") {
		t.Errorf("round line %q of a round without runs cut short", got)
	}
}

// While a search's finals run, the session counts its finalists as the
// agent picks them (sweep.Finalists), also when a round before the
// tightest ended the rounds: the fastest survivor of each process
// count none of the leaders and fastest runs joins them, also when the
// configurations came back from JSON with their grids as strings; a
// workload this binary does not know counts every configuration alike.
func TestRoundNowCountsFinalistsByProcessCount(t *testing.T) {
	var configs []sweep.Config
	for _, g := range []string{"2x2", "2x2", "1x4", "1x2", "2x1"} {
		var c sweep.Config
		if err := json.Unmarshal([]byte(`{"n":4096,"grid":"`+g+`","b":256,"lookahead":1}`), &c); err != nil {
			t.Fatal(err)
		}
		configs = append(configs, c)
	}
	rounds := []sweep.Round{
		{Round: 1, Best: 0, Kept: []int{0, 1, 2, 3, 4}},
		{Round: 2, Best: 0, Kept: []int{0, 1, 2, 3, 4}},
		{Round: 3, Best: 1, Kept: []int{1, 0, 2, 4, 3}},
	}
	spec := &sweep.Spec{Workload: "cholesky2d", Search: sweep.SearchHalving, Tolerances: []sweep.Tolerance{0.5, 0.125, 0.03125}}
	sw := &Sweep{Spec: spec, Configs: configs, Workload: "cholesky2d", Rounds: rounds}
	if got, want := sw.roundNow(), "round 4: full runs of 4"; got != want {
		t.Errorf("roundNow = %q, want %q (2x2, 2x2 and 1x4, then 2x1 for the 2-process grids)", got, want)
	}
	sw.Workload = "not-built-in"
	if got, want := sw.roundNow(), "round 4: full runs of 3"; got != want {
		t.Errorf("unknown workload: roundNow = %q, want %q", got, want)
	}
	// A round before the tightest that leaves 7 or fewer ends the rounds;
	// the finals are as many as after the tightest.
	sw.Rounds = rounds[:1]
	if got, want := sw.roundNow(), "round 2: full runs of 3"; got != want {
		t.Errorf("after round 1 left 5: roundNow = %q, want %q", got, want)
	}
}

// A search that ends early says how to run it again, not to resume it
// ('resume' refuses a search).
func TestSearchEndErrorSaysRunAgain(t *testing.T) {
	for _, st := range []Status{StatusCancelled, StatusDied, StatusHung} {
		sw := &Sweep{ID: 3, Status: st, Message: "why", Spec: &sweep.Spec{Mode: sweep.ModeTune, Search: sweep.SearchRandom, Budget: 4}}
		msg := endError(sw, 9).Error()
		if !strings.Contains(msg, "'tune search=random budget=4' runs it again") || strings.Contains(msg, "'resume'") {
			t.Errorf("%s search: %q, want it to say 'tune search=random budget=4' runs it again, and nothing of resume", st, msg)
		}
		// A reopened session says the same, in words (it had read "is a
		// search that ended died with 9 runs: run it again").
		sw.Results = make([]sweep.Result, 9)
		if l := describeReopen("/d", []*Sweep{sw}); !strings.Contains(l, fmt.Sprintf("is a search that stopped after 9 runs (%s): a search cannot be resumed run by run, 'tune search=random budget=4' runs it again", st)) {
			t.Errorf("reopened after a %s search: %q", st, l)
		}
		sw.Spec = &sweep.Spec{Mode: sweep.ModeTune}
		if msg := endError(sw, 9).Error(); !strings.Contains(msg, "'resume'") {
			t.Errorf("%s sweep: %q, want it to offer resume", st, msg)
		}
	}
}

// An evaluate search interrupted while it takes its references (in passes,
// a run of every configuration per pass) keeps every reference taken: each
// configuration the first pass ran comes back with what it has. Before,
// only those the last pass had reached were reported, and an interrupt in
// the second pass threw the first pass's runs of the others away.
func TestSearchReferencesKeptOnInterrupt(t *testing.T) {
	s := agentSession(t)
	execAll(t, s, &textOut{}, "workload synthetic grid=2x2 steps=10 count=4", "space mean_us=4000,5000,6000,7000,8000", "policy conditional", "reps 2")
	// The 7th reference run to start is the second pass's second.
	err := s.Exec(context.Background(), "evaluate search=halving", &cancelAtRef{s: s, at: 7})
	sw := s.Last()
	if err == nil || sw.Status != StatusCancelled {
		t.Fatalf("interrupted search: %v, status %s", err, sw.Status)
	}
	have := map[int]int{}
	for _, r := range sw.Results {
		if r.Round == 0 {
			have[r.Index] += len(r.ReferenceS)
		}
	}
	if len(have) != 5 {
		t.Errorf("references of %d configurations kept, want all 5 the first pass ran: %v", len(have), have)
	}
}

// cancelAtRef cancels an evaluate search once its at-th reference run has
// started.
type cancelAtRef struct {
	textOut
	s    *Session
	at   int
	once sync.Once
}

func (o *cancelAtRef) Update(p Progress) {
	if p.Sweep.refRuns >= o.at {
		o.once.Do(func() { o.s.Cancel() })
	}
}

// After a search that went to its full runs at its first round, rank and
// the figures default to the tightest tolerance that has predictions, not
// the spec's tightest, which it never reached.
func TestSearchDefaultsToReachedTolerance(t *testing.T) {
	half, p := 0.5, 0.1
	sw := &Sweep{Spec: &sweep.Spec{Search: sweep.SearchHalving, Policies: []string{"eager"}, Tolerances: []sweep.Tolerance{0.5, 0.125, 0.03125}},
		Results: []sweep.Result{{Index: 0, Policy: "eager", Tolerance: &half, PredictedS: &p, Round: 1}, {Index: 0, ReferenceS: []float64{0.1}, Round: 2}}}
	if o := (FigureOptions{}).defaults(sw); o.Tolerance != 0.5 || o.Policy != "eager" {
		t.Errorf("defaults %+v: want eager at 2^-1", o)
	}
}

// A run a search cut short carries a lower bound, not a prediction: rank
// leaves it out and says so, and the CSV marks it (with the round).
func TestSearchCutShortNotRanked(t *testing.T) {
	half, se := 0.5, 0.001
	params := []sweep.Param{{Name: "b", Kind: sweep.Int, Default: 64, Min: 1, Max: 4096}}
	sw := &Sweep{ID: 1, Spec: &sweep.Spec{Mode: sweep.ModeTune, Search: sweep.SearchHalving, Policies: []string{"eager"}, Tolerances: []sweep.Tolerance{0.5}}}
	for i, t := range []float64{0.10, 0.11, 0.12} {
		sw.Configs = append(sw.Configs, sweep.NewConfig(params, map[string]any{"b": 32 << i}))
		pred := t
		sw.Results = append(sw.Results, sweep.Result{Index: i, Config: sw.Configs[i], Policy: "eager", Tolerance: &half, PredictedS: &pred, PredictedSE: &se, Round: 1, CutShort: i == 2})
	}
	k, err := rankSweep(context.Background(), sw, defaultRankSettings())
	if err != nil {
		t.Fatal(err)
	}
	if len(k.src.index) != 2 || !strings.Contains(k.table(sw), "1 without results left out (1 of them cut short by the search: their times are lower bounds)") {
		t.Errorf("ranked %v:\n%s", k.src.index, k.table(sw))
	}
	var b strings.Builder
	if err := writeCSV(&b, sw); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if !strings.HasSuffix(lines[0], ",residual,round,cut_short,launch_s,counting_s") || !strings.HasSuffix(lines[3], ",1,true,,") || !strings.HasSuffix(lines[1], ",1,,,") {
		t.Errorf("csv:\n%s", b.String())
	}
}

// seed= chooses search=random's sample (the same for the same seed), and
// goes with search=random only.
func TestSearchRandomSeed(t *testing.T) {
	s := newSession(t)
	execAll(t, s, &textOut{}, "workload summa", "space b=16,32,64,128,256")
	c, err := Parse("tune search=random budget=3 seed=7")
	if err != nil {
		t.Fatal(err)
	}
	se, err := searchArgs(s, c)
	if err != nil || se.Seed != 7 {
		t.Fatalf("%+v, %v", se, err)
	}
	sp, _, err := validateSearch(s.schemas(), s.st, sweep.ModeTune, se, 4)
	if err != nil || sp.Seed != 7 {
		t.Fatalf("spec seed %v, %v; want 7", sp, err)
	}
	for line, want := range map[string]string{
		"tune search=halving seed=7":           "seed= goes with search=random",
		"tune search=random budget=3 seed=0":   "is not a seed",
		"tune search=random budget=3 seed=abc": "is not a seed",
	} {
		if err := s.Exec(context.Background(), line, &textOut{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", line, err, want)
		}
	}
}

// A search stopped in its full runs shows, in 'table best', the full runs
// it made: its best information (they were shown only by 'table configs').
func TestSearchStoppedShowsFullRuns(t *testing.T) {
	half, p := 0.5, 0.1
	params := []sweep.Param{{Name: "b", Kind: sweep.Int, Default: 64, Min: 1, Max: 4096}}
	sw := &Sweep{ID: 1, Status: StatusCancelled, Spec: &sweep.Spec{Mode: sweep.ModeTune, Search: sweep.SearchHalving, Policies: []string{"eager"}, Tolerances: []sweep.Tolerance{0.5}}}
	for i := range 2 {
		sw.Configs = append(sw.Configs, sweep.NewConfig(params, map[string]any{"b": 32 << i}))
		sw.Results = append(sw.Results, sweep.Result{Index: i, Config: sw.Configs[i], Policy: "eager", Tolerance: &half, PredictedS: &p, Round: 1})
	}
	sw.Rounds = []sweep.Round{{Round: 1, Tolerance: 0.5, Ran: []int{0, 1}, Kept: []int{0, 1}, Best: 0}}
	sw.Results = append(sw.Results, sweep.Result{Index: 1, Config: sw.Configs[1], ReferenceS: []float64{0.125}, Round: 2})
	if got := tableSearch(sw); !strings.Contains(got, "the search has not chosen yet; its full runs so far: b=64 (0.1250 s)") {
		t.Errorf("table best of a stopped search:\n%s", got)
	}
}

// plot search draws a run cut short apart (a lower bound), not as a run
// dropped whole, while its round is under way and once it has ended.
func TestSearchFigureCutShortApart(t *testing.T) {
	half, se := 0.5, 0.01
	sw := &Sweep{Workload: "synthetic", Spec: &sweep.Spec{Workload: "synthetic", Search: sweep.SearchHalving, Policies: []string{"eager"},
		Tolerances: []sweep.Tolerance{0.5, 0.125}}}
	for i := range 3 {
		var c sweep.Config
		if err := json.Unmarshal([]byte(fmt.Sprintf(`{"mean_us":%d}`, 100*(i+1))), &c); err != nil {
			t.Fatal(err)
		}
		p := float64(1 + i)
		sw.Configs = append(sw.Configs, c)
		sw.Results = append(sw.Results, sweep.Result{Index: i, Config: c, Policy: "eager", Tolerance: &half, PredictedS: &p, PredictedSE: &se, Round: 1, CutShort: i == 2})
	}
	legend := func() map[string]bool {
		var sum strings.Builder
		p, err := searchFigure(sw, &sum)
		if err != nil {
			t.Fatal(err)
		}
		svg, err := plots.Encode(p, "svg")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, l := range []string{"kept", "dropped", "cut short (at least)", "drop above"} {
			got[l] = strings.Contains(string(svg), ">"+l+"<")
		}
		return got
	}
	want := map[string]bool{"kept": true, "cut short (at least)": true, "dropped": false, "drop above": false}
	if got := legend(); !maps.Equal(got, want) {
		t.Errorf("a round under way with a run cut short: legend entries %v, want %v", got, want)
	}
	sw.Rounds = []sweep.Round{{Round: 1, Policy: "eager", Tolerance: 0.5, Ran: []int{0, 1, 2}, Kept: []int{0}, Dropped: []int{1, 2}, ThresholdS: 1.5}}
	want["dropped"], want["drop above"] = true, true
	if got := legend(); !maps.Equal(got, want) {
		t.Errorf("the round ended: legend entries %v, want %v", got, want)
	}
	// A program's search is titled with the program's name.
	sw.Workload, sw.Spec.Program = sweep.ProgramWorkload, &sweep.Program{Command: []string{"/opt/bin/solver", "{b}"}}
	if p, err := searchFigure(sw, &strings.Builder{}); err != nil || p.Title.Text != "halving search, eager: solver" {
		t.Errorf("a program's search figure: %v, title %q", err, p.Title.Text)
	}
}

// A search whose rounds ended before its tightest tolerance, with
// survivors that did not run in full, says they were passed over on loose
// predictions and how to rank them tighter; one whose rounds reached the
// tightest, or whose survivors all ran in full, says nothing of it.
func TestEarlyFinalsLine(t *testing.T) {
	sw := &Sweep{Spec: &sweep.Spec{Search: sweep.SearchHalving, Policies: []string{"eager"}, Tolerances: []sweep.Tolerance{0.5, 0.125, 0.03125}}}
	for i := range 6 {
		var c sweep.Config
		if err := json.Unmarshal([]byte(fmt.Sprintf(`{"nb":%d}`, 16<<i)), &c); err != nil {
			t.Fatal(err)
		}
		sw.Configs = append(sw.Configs, c)
	}
	sw.Rounds = []sweep.Round{{Round: 1, Policy: "eager", Tolerance: 0.5, Ran: []int{0, 1, 2, 3, 4, 5}, Kept: []int{2, 0, 1, 5, 4}, Dropped: []int{3}},
		{Round: 2, Ran: []int{2, 0, 1}, Best: 2}}
	want := "note: the rounds ended at 2^-1 with 5 survivors (they end once 7 or fewer survive, and those predicted fastest run in full), and 2 survivors did not run in full, passed over on predictions at 2^-1 (each kernel's mean known to within 50.0%), which can put configurations out of order: nb=512, nb=256. " +
		"For tighter rounds to rank them, start the search at a tighter tolerance ('tolerance 2^-3,2^-5')\n"
	if got := earlyFinalsLine(sw); got != want {
		t.Errorf("rounds ended at 2^-1:\n got %q\nwant %q", got, want)
	}
	sw.leftSearch = []int{5, 4} // ran in full as finalists too, and their launches failed: none was passed over
	if got := earlyFinalsLine(sw); got != "" {
		t.Errorf("the other survivors left the search in the finals: %q, want nothing", got)
	}
	sw.leftSearch = nil
	sw.Spec.Tolerances = []sweep.Tolerance{0.5}
	if got := earlyFinalsLine(sw); got != "" {
		t.Errorf("rounds ended at the tightest tolerance: %q, want nothing", got)
	}
}
