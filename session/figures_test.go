package session

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/approxtune/approxtune/sweep"
)

// tracedSweep is a real evaluate sweep of the synthetic workload (2
// configurations x eager, conditional at 2^-1, 4 ranks) with 'trace on', as
// the session's journal recorded it.
func tracedSweep(t *testing.T) *Sweep {
	t.Helper()
	sws, err := ReadJournal(filepath.Join("testdata", "traced-journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sws) != 1 {
		t.Fatalf("%d sweeps in the fixture", len(sws))
	}
	return sws[0]
}

// The journal keeps the trace events; gantt draws the last traced run by
// default, or the one the options choose, with a per-rank summary.
func TestGanttFigure(t *testing.T) {
	sw := tracedSweep(t)
	if len(sw.Traces) != 4 || len(sw.Results) != 4 || !sw.Spec.Trace {
		t.Fatalf("fixture: %d traces, %d results, trace %v", len(sw.Traces), len(sw.Results), sw.Spec.Trace)
	}
	for _, tr := range sw.Traces {
		if len(tr.Ranks) != 4 || len(tr.Ranks[3].Events) == 0 {
			t.Fatalf("trace of config %d %s: %d ranks", tr.Index, tr.Policy, len(tr.Ranks))
		}
	}
	f, err := MakeFigure(sw, "gantt", FigureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(f.Summary, "timeline of config 1 (grid=1x4 ") || !strings.Contains(f.Summary, "conditional at 2^-1, 4 ranks\n") ||
		!regexp.MustCompile(`(?m)^rank 3: busy [0-9.]+ (ns|µs|ms|s) of [0-9.]+ (ns|µs|ms|s): `).MatchString(f.Summary) || !strings.Contains(f.Summary, "spin ") {
		t.Errorf("default gantt summary:\n%s", f.Summary)
	}
	img, err := png.Decode(bytes.NewReader(f.PNG))
	if err != nil {
		t.Fatal(err)
	}
	if sz := img.Bounds().Size(); sz.X != 800 || sz.Y != 450 {
		t.Errorf("png %v", sz)
	}
	if !bytes.Contains(f.SVG, []byte("<svg")) {
		t.Error("no svg")
	}
	zero := 0
	f, err = MakeFigure(sw, "gantt", FigureOptions{Config: &zero, Policy: "eager", Tolerance: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(f.Summary, "timeline of config 0 (grid=2x2 ") || !strings.Contains(f.Summary, "eager at 2^-1") ||
		!regexp.MustCompile(`\(\d+ run, [1-9]\d* skipped\)`).MatchString(f.Summary) {
		t.Errorf("eager gantt summary: want config 0 with skipped kernels:\n%s", f.Summary)
	}
	five := 5
	if _, err := MakeFigure(sw, "gantt", FigureOptions{Config: &five}); err == nil ||
		!strings.Contains(err.Error(), "no traced run has config=5: the traced runs are of configurations 0, 1 ('table configs' numbers them)") {
		t.Errorf("no such run: %v", err)
	}
	if _, err := MakeFigure(knownSweep(t), "gantt", FigureOptions{}); err == nil || !strings.Contains(err.Error(), "run 'trace on'") {
		t.Errorf("untraced sweep: %v", err)
	}
}

// 'trace on|off' sets the spec's trace; 'plot gantt' takes config=.
func TestTraceVerbAndPlotGantt(t *testing.T) {
	s := newSession(t)
	ctx := context.Background()
	out := &textOut{}
	if s.State().Spec("tune").Trace {
		t.Fatal("trace is on by default")
	}
	if err := s.Exec(ctx, "trace on", out); err != nil {
		t.Fatal(err)
	}
	if !s.State().Trace || !s.State().Spec("tune").Trace {
		t.Fatal("trace on did not reach the spec")
	}
	out.b.Reset()
	s.Exec(ctx, "trace", out)
	if !strings.HasPrefix(out.b.String(), "trace on") {
		t.Errorf("trace alone: %q", out.b.String())
	}
	before := s.State()
	for line, want := range map[string]string{
		"trace maybe":                "column 7: \"maybe\" is not on or off",
		"trace on off":               "column 10: trace takes one word, on or off, and no more: off is one too many",
		"plot gantt config=x":        "column 19: \"x\" is not a configuration index",
		"plot gantt config=-1":       "column 19: \"-1\" is not a configuration index",
		"plot gantt frames=3":        "column 12: plot gantt has no option \"frames\": want policy=, tolerance=, config=",
		"plot speedup nosuch=3":      "column 14: plot speedup takes no options: it draws every policy and tolerance",
		"ranks 2 3":                  "column 9: ranks takes one word, the number of ranks, and no more: 3 is one too many",
		"help tolerance extra":       "column 16: help takes one word, a command name, and no more: extra is one too many",
		"plot gantt g.png config=0 ": "column 1: no results yet",
	} {
		if err := s.Exec(ctx, line, out); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant %s...", line, err, want)
		}
	}
	if !reflect.DeepEqual(s.State(), before) {
		t.Error("a bad command changed the state")
	}
	// A figure's help is plot's ('help gantt' had said there is no such
	// command, 'help plot gantt' that gantt was one word too many).
	for _, line := range []string{"help gantt", "help plot gantt"} {
		out.b.Reset()
		// Its words, however the help wraps them.
		if err := s.Exec(ctx, line, out); err != nil || !strings.Contains(strings.Join(strings.Fields(out.b.String()), " "), "gantt: one selective run's timeline") {
			t.Errorf("%s: %v\n%s", line, err, out.b.String())
		}
	}
	if err := s.Exec(ctx, "trace off", out); err != nil || s.State().Trace {
		t.Fatalf("trace off: %v, trace %v", err, s.State().Trace)
	}
	s.sweeps = append(s.sweeps, tracedSweep(t))
	// A value the sweep does not have is pointed at, not the figure's name.
	if err := s.Exec(ctx, "plot configs tolerance=2^-7", out); err == nil || !strings.HasPrefix(err.Error(), "column 24: sweep ") {
		t.Errorf("plot configs tolerance=2^-7: %v", err)
	}
	file := filepath.Join(t.TempDir(), "g.png")
	out.b.Reset()
	if err := s.Exec(ctx, "plot gantt "+file+" config=0 policy=eager tolerance=2^-1", out); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(file); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("plot gantt wrote no png: %v", err)
	}
	if !strings.Contains(out.b.String(), "timeline of config 0 ") {
		t.Errorf("plot gantt printed:\n%s", out.b.String())
	}
	if got, _ := s.Complete("trace o", 7); !reflect.DeepEqual(got, []string{"off", "on"}) {
		t.Errorf("complete trace: %v", got)
	}
}

// handEvaluated is an evaluate sweep made by hand: eager at 2^-1 over three
// block sizes. It predicts b=16 fastest, and b=32 is fastest.
func handEvaluated() *Sweep {
	f := func(x float64) *float64 { return &x }
	params := []sweep.Param{{Name: "b", Kind: sweep.Int, Default: 8, Min: 1, Max: 64}}
	sw := &Sweep{ID: 1, Status: "ok", Workload: "toy",
		Spec: &sweep.Spec{Mode: sweep.ModeEvaluate, Policies: []string{"eager"}, Tolerances: []sweep.Tolerance{0.5}}}
	for i, r := range []struct{ b, predicted, selective, reference float64 }{
		{8, 3, 1, 4}, {16, 1, 0.5, 2}, {32, 1.5, 0.25, 1},
	} {
		c := sweep.NewConfig(params, map[string]any{"b": int(r.b)})
		sw.Configs = append(sw.Configs, c)
		sw.Results = append(sw.Results, sweep.Result{Index: i, Config: c, Policy: "eager", Tolerance: f(0.5),
			PredictedS: f(r.predicted), SelectiveS: f(r.selective), ReferenceS: []float64{r.reference}})
	}
	return sw
}

// The summaries and the configs figure agree on the chosen and the best
// configuration.
func TestSummariesAndConfigsFigure(t *testing.T) {
	sw := handEvaluated()
	want := []Summary{{Policy: "eager", Tolerance: 0.5, Configs: 3, RefTotal: 7, SelTotal: 1.75, Speedup: 4,
		MeanError: 1.25 / 3, MaxError: 0.5, Chosen: "b=16", Best: "b=32", Quality: 0.5, HasRef: true, PredChosen: 1}}
	if got := sw.Summaries(); !reflect.DeepEqual(got, want) {
		t.Errorf("Summaries = %+v, want %+v", got, want)
	}
	f, err := MakeFigure(sw, "configs", FigureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(f.Summary), "\n")
	if len(lines) != 3 || strings.Contains(lines[0], "[") || !strings.HasSuffix(lines[1], "[chosen by eager]") ||
		!strings.HasSuffix(lines[2], "[best]") {
		t.Errorf("configs summary: want b=16 chosen and b=32 best:\n%s", f.Summary)
	}
}

// After a tune search, the configs figure marks the search's choice (made
// on its finals' full runs), as 'table best' says, not the least
// prediction, and no best among the finalists' references alone; a
// configuration without a reference says so ("reference -s" before).
func TestConfigsFigureAfterSearch(t *testing.T) {
	sw := handEvaluated()
	sw.Spec.Mode, sw.Spec.Search = sweep.ModeTune, sweep.SearchHalving
	sw.Results[0].ReferenceS = nil // not a finalist
	sw.Search = &sweep.SearchEvent{Method: sweep.SearchHalving, Policy: "eager", Chosen: 2, Config: sw.Configs[2], Finalists: []int{2, 1}}
	f, err := MakeFigure(sw, "configs", FigureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(f.Summary), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "b=8: no reference") || strings.Contains(lines[1], "[") ||
		!strings.HasSuffix(lines[2], "[chosen by the search]") || strings.Contains(f.Summary, "[best]") {
		t.Errorf("configs summary after a search: want b=32 chosen by the search, no best, b=8 with no reference:\n%s", f.Summary)
	}
}

// A figure refuses an option it does not read, and a policy or tolerance
// the sweep did not run, naming what it has: both used to draw something
// else without a word.
func TestFigureOptionsChecked(t *testing.T) {
	sw := knownSweep(t)
	one := 1
	for _, c := range []struct {
		name string
		o    FigureOptions
		want string
	}{
		{"speedup", FigureOptions{Policy: "conditional"}, "plot speedup takes no policy=: it draws every policy and tolerance"},
		{"path", FigureOptions{Config: &one}, "plot path takes no config=: it reads policy=, tolerance="},
		{"configs", FigureOptions{Policy: "online"}, "sweep 1 has no online results: policy= one of conditional"},
		{"configs", FigureOptions{Tolerance: 0.125}, "sweep 1 ran no tolerance 2^-3: tolerance= one of 2^-1"},
	} {
		if _, err := MakeFigure(sw, c.name, c.o); err == nil || err.Error() != c.want {
			t.Errorf("plot %s %+v: %v, want %q", c.name, c.o, err, c.want)
		}
	}
	if _, err := MakeFigure(sw, "configs", FigureOptions{Policy: "conditional", Tolerance: 0.5}); err != nil {
		t.Errorf("plot configs of what the sweep ran: %v", err)
	}
}

// A figure for a folder that does not exist is refused by its folder, not
// by the name of the temporary file it would have been written through.
func TestPlotIntoMissingFolder(t *testing.T) {
	s := sessionWith(t, knownSweep(t))
	missing := filepath.Join(t.TempDir(), "no", "such")
	err := s.Exec(context.Background(), "plot speedup "+filepath.Join(missing, "a.png"), &textOut{})
	if err == nil || !strings.Contains(err.Error(), "the folder "+missing+" does not exist") || strings.Contains(err.Error(), ".approxtune-") {
		t.Errorf("plot into a missing folder: %v", err)
	}
}

// The kernels figure's title names the configuration by the sweep's short
// label: with the whole one (every parameter of a workload, a dozen for
// synthetic) the title ran off both sides of the figure.
func TestKernelsFigureTitleShortLabel(t *testing.T) {
	params := []sweep.Param{{Name: "b", Kind: sweep.Int, Default: 64, Min: 1, Max: 4096}}
	for _, name := range []string{"spread", "slow_rank", "slow_pct", "slow_every", "hang_rank", "hang_step"} {
		params = append(params, sweep.Param{Name: name, Kind: sweep.Int, Default: 1, Min: 0, Max: 1000})
	}
	sw := &Sweep{ID: 1, Status: "ok", Workload: "synthetic",
		Spec: &sweep.Spec{Mode: sweep.ModeTune, Space: map[string]json.RawMessage{"b": json.RawMessage("[64,128]")}, Policies: []string{"conditional"}, Tolerances: []sweep.Tolerance{0.125}}}
	for _, b := range []int{64, 128} {
		sw.Configs = append(sw.Configs, sweep.NewConfig(params, map[string]any{"b": b}))
	}
	sw.Kernels = append(sw.Kernels, sweep.KernelsEvent{Type: sweep.TypeKernels, Index: 1, Policy: "conditional", Tolerance: 0.125,
		Kernels: []sweep.KernelStat{{Key: "gemm[NN] 64x64x64", Count: 5, MeanS: 1e-4, HalfS: 1e-6, Calls: 10, Skipped: 5}}})
	f := 0.01
	tol := 0.125
	sw.Results = append(sw.Results, sweep.Result{Index: 1, Config: sw.Configs[1], Policy: "conditional", Tolerance: &tol, PredictedS: &f})
	p, _, err := buildFigure(sw, "kernels", FigureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "Kernels of b=128, conditional at 2^-3 (rank 0)"; p.Title.Text != want {
		t.Errorf("title %q, want %q", p.Title.Text, want)
	}
}

// tolerance=0 chooses the traced run at 0, the one with every kernel: a
// Tolerance of 0 had meant no tolerance given, and the latest traced run,
// at another tolerance, was drawn and analysed instead.
func TestTraceAtToleranceZeroChosen(t *testing.T) {
	sw := tracedSweep(t)
	zero := sw.Traces[0]
	zero.Tolerance = 0
	sw.Traces = append([]sweep.TraceEvent{zero}, sw.Traces...)
	var o FigureOptions
	for _, a := range []Arg{{Key: "tolerance", Value: "0"}, {Key: "config", Value: strconv.Itoa(zero.Index)}, {Key: "policy", Value: zero.Policy}} {
		if err := runOption(a, &o); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := pickTrace(sw, o)
	if err != nil || tr.Tolerance != 0 {
		t.Fatalf("tolerance=0: %+v, %v; want the run at 0", tr, err)
	}
}

// 'messages run' reaches the spec and the status; 'messages skip' takes it
// back; anything else is refused, naming both words.
func TestMessagesVerb(t *testing.T) {
	s := newSession(t)
	ctx := context.Background()
	out := &textOut{}
	if s.State().Spec("tune").RunsMessages() {
		t.Fatal("messages run by default")
	}
	if err := s.Exec(ctx, "messages run", out); err != nil {
		t.Fatal(err)
	}
	if !s.State().Spec("tune").RunsMessages() {
		t.Fatal("messages run did not reach the spec")
	}
	out.b.Reset()
	s.Exec(ctx, "status", out)
	if !strings.Contains(out.b.String(), "messages    run") {
		t.Errorf("status does not show messages run:\n%s", out.b.String())
	}
	out.b.Reset()
	s.Exec(ctx, "messages", out)
	if !strings.HasPrefix(out.b.String(), "messages run") {
		t.Errorf("messages alone: %q", out.b.String())
	}
	if err := s.Exec(ctx, "messages never", out); err == nil || !strings.HasPrefix(err.Error(), `column 10: "never" is not skip or run`) {
		t.Errorf("messages never: %v", err)
	}
	if err := s.Exec(ctx, "messages Skip", out); err != nil || s.State().Spec("tune").RunsMessages() {
		t.Errorf("messages Skip: %v, spec runs messages %v", err, s.State().Spec("tune").RunsMessages())
	}
}

// A program session's status gives the rank counts its launches take, its
// configurations' grids, not the ranks setting, which 'ranks' says it does
// not change for a program: status had shown 'ranks 4' beside a grid of 6.
func TestProgramStatusRanks(t *testing.T) {
	s := newSession(t)
	ctx := context.Background()
	execAll(t, s, &textOut{}, "ranks 4", "program /bin/true {grid}", "space grid=2x3,1x2,3x2")
	out := &textOut{}
	if err := s.Exec(ctx, "status", out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.b.String(), "ranks       2, 6 (each launch on its configuration's grid or ranks=") {
		t.Errorf("a program's status:\n%s", out.b.String())
	}
	out.b.Reset()
	if err := s.Exec(ctx, "ranks 3", out); err != nil || !strings.Contains(out.b.String(), "note: a program's launches take their configuration's grid or ranks=, not this setting") {
		t.Errorf("ranks 3 in a program session: %v\n%s", err, out.b.String())
	}
	// A space not runnable yet (a placeholder it lacks) still sets them.
	execAll(t, s, &textOut{}, "space reset", "program /bin/true {iter} {zz}", "space iter=2 ranks=2,4")
	out.b.Reset()
	if err := s.Exec(ctx, "status", out); err != nil || !strings.Contains(out.b.String(), "ranks       2, 4 (each launch") || !strings.Contains(out.b.String(), "not runnable yet") {
		t.Errorf("a program's status, the space not runnable yet: %v\n%s", err, out.b.String())
	}
	execAll(t, s, &textOut{}, "workload synthetic")
	out.b.Reset()
	if err := s.Exec(ctx, "status", out); err != nil || !strings.Contains(out.b.String(), "ranks       3\n") {
		t.Errorf("a built-in workload's status: %v\n%s", err, out.b.String())
	}
}

// A timeline that ends well before its run did says how much of the run
// it spans (a user read 0.21 ms of kernels as the whole 0.54 ms run).
func TestTimelineCover(t *testing.T) {
	tol, sel := 0.5, 543e-6
	sw := &Sweep{Results: []sweep.Result{{Index: 2, Policy: "eager", Tolerance: &tol, SelectiveS: &sel}}}
	tr := &sweep.TraceEvent{Index: 2, Policy: "eager", Tolerance: tol, Ranks: []sweep.RankTrace{{Events: []sweep.Span{{StartS: 0, EndS: 208e-6}}}}}
	if got, want := timelineCover(sw, tr), "the timeline spans 208 µs of the run's 543 µs: the rest"; !strings.HasPrefix(got, want) {
		t.Errorf("%q, want %q...", got, want)
	}
	sel = 220e-6
	if got := timelineCover(sw, tr); got != "" {
		t.Errorf("a timeline spanning most of its run: %q", got)
	}
}

// A search's selective results carry no references: the path figure reads
// a configuration's full runs from the search's own results (a tune
// search's finalist had read "no reference").
func TestPathFigureSearchFullRuns(t *testing.T) {
	params := []sweep.Param{{Name: "b", Kind: sweep.Int, Default: 64, Min: 1, Max: 4096}}
	cs := []sweep.Config{sweep.NewConfig(params, map[string]any{"b": 32}), sweep.NewConfig(params, map[string]any{"b": 64})}
	tol, pred := 0.5, 0.02
	path := &sweep.Path{CompS: 0.01, CommS: 0.008, IdleS: 0.002}
	sw := &Sweep{ID: 1, Configs: cs, Spec: &sweep.Spec{Mode: sweep.ModeTune, Search: sweep.SearchHalving, Policies: []string{"eager"}, Tolerances: []sweep.Tolerance{0.5}},
		Results: []sweep.Result{
			{Index: 0, Config: cs[0], Policy: "eager", Tolerance: &tol, PredictedS: &pred, Path: path, Round: 1},
			{Index: 1, Config: cs[1], Policy: "eager", Tolerance: &tol, PredictedS: &pred, Path: path, Round: 1},
			{Index: 1, Config: cs[1], ReferenceS: []float64{0.019}, Round: 2},
		}}
	_, f, err := buildFigure(sw, "path", FigureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.Summary, "b=64: computation 0.0100s, communication 0.0080s, idle 0.0020s, reference 0.0190s") || !strings.Contains(f.Summary, "b=32: computation 0.0100s, communication 0.0080s, idle 0.0020s, no reference") {
		t.Errorf("path summary:\n%s", f.Summary)
	}
}
