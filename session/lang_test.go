package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/approxtune/approxtune/internal/preload"
	"github.com/approxtune/approxtune/internal/selective/policy"
	"github.com/approxtune/approxtune/sweep"
)

func TestParse(t *testing.T) {
	cases := []struct {
		line string
		verb string
		args []string
		cols []int
	}{
		{"", "", nil, nil},
		{"   # just a comment", "", nil, nil},
		{"status", "status", nil, nil},
		{"  Space b=64,128  grid=2x2 # comment", "space", []string{"b=64,128", "grid=2x2"}, []int{9, 19}},
		{`save "my results.jsonl"`, "save", []string{"my results.jsonl"}, []int{6}},
		{"tolerance 2^0..2^-6", "tolerance", []string{"2^0..2^-6"}, []int{11}},
	}
	for _, c := range cases {
		cmd, err := Parse(c.line)
		if err != nil {
			t.Fatalf("%q: %v", c.line, err)
		}
		if c.verb == "" {
			if cmd != nil {
				t.Fatalf("%q: want nothing, got %+v", c.line, cmd)
			}
			continue
		}
		var args []string
		var cols []int
		for _, a := range cmd.Args {
			args = append(args, a.String())
			cols = append(cols, a.Col)
		}
		if cmd.Verb != c.verb || !reflect.DeepEqual(args, c.args) || !reflect.DeepEqual(cols, c.cols) {
			t.Errorf("%q: verb %q args %q cols %v", c.line, cmd.Verb, args, cols)
		}
	}
	for line, want := range map[string]string{
		`save "oops`:    "column 6: unterminated quote",
		"space =64":     "column 7: \"=64\" has no name before =",
		"space b=":      "column 7: b= has no value",
		"b=64 evaluate": "column 1: a line starts with a command",
	} {
		if _, err := Parse(line); err == nil || err.Error()[:len(want)] != want {
			t.Errorf("%q: error %v, want %q...", line, err, want)
		}
	}
}

func TestTolerances(t *testing.T) {
	got, err := parseTolerances("2^0..2^-3,0.01", 1)
	if err != nil || !reflect.DeepEqual(got, []float64{1, 0.5, 0.25, 0.125, 0.01}) {
		t.Fatalf("got %v %v", got, err)
	}
	if _, err := parseTolerances("2^0..x", 11); err == nil || !strings.HasPrefix(err.Error(), "column 11:") {
		t.Fatalf("range error %v", err)
	}
	if _, err := parseTolerances("0.5,,0.1", 11); err == nil || !strings.HasPrefix(err.Error(), "column 15:") {
		t.Fatalf("empty item error %v", err)
	}
}

type textOut struct{ b strings.Builder }

func (o *textOut) Print(s string)    { o.b.WriteString(s + "\n") }
func (o *textOut) Update(p Progress) {}

func newSession(t *testing.T) *Session {
	t.Helper()
	s, err := New(Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Every bad command says what, where and what is valid, and changes nothing.
func TestCommandErrorsChangeNothing(t *testing.T) {
	s := newSession(t)
	ctx := context.Background()
	out := &textOut{}
	for _, line := range []string{"workload summa n=512", "space b=32,64 grid=1x4,2x2", "policy conditional,eager", "tolerance 2^-1,2^-3"} {
		if err := s.Exec(ctx, line, out); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	}
	before := s.State()
	cases := map[string]string{
		"frobnicate":           "column 1: unknown command \"frobnicate\": the commands are help, status",
		"policies eager":       "column 1: unknown command \"policies\": did you mean policy?",
		"workload lu":          "column 10: unknown workload \"lu\": the workloads are ",
		"space q=1":            "column 7: summa has no parameter \"q\": its parameters are n, grid, b",
		"space b=64,0":         "column 12: b: 0 is out of range: want an integer from 1 to 65536",
		"space b=64 grid=2by2": "column 17: grid: \"2by2\" is not a grid",
		// A value twice ran its configurations twice.
		"space b=64,128,64":      "column 16: b: \"64\" repeats 64, already in the list: give each value once",
		"space grid=2x2,1x4,2x2": "column 20: grid: \"2x2\" repeats 2x2, already in the list",
		// A range, as tolerance takes, is no list here.
		"space b=32..128":            "column 9: b: \"32..128\" is not a value list: a space lists each value, separated by commas (b=32,64,128)",
		"space b=1..10":              "column 9: b: \"1..10\" is not a value list: a space lists each value, separated by commas (b=1,2,3,4,5,6,7,8,9,10)",
		"space b=1..100":             "column 9: b: \"1..100\" is not a value list: a space lists each value, separated by commas (b=1,2,3 and so on to 100, each written out)",
		"policy eager,greedy":        "column 14: unknown policy \"greedy\": want one of conditional, local, online, apriori, eager",
		"tolerance 2^-1,-3":          "column 16: \"-3\" is not a tolerance",
		"tolerance 2^-1,0.5":         "column 16: \"0.5\" repeats 2^-1, already in the list",
		"tolerance 2^-1..2^-3,2^-2":  "column 22: \"2^-2\" repeats 2^-2, already in the list",
		"confidence 1.5":             "column 12: \"1.5\" is not a confidence level",
		"reps 0":                     "column 6: \"0\" is not valid: want the number of reference runs, an integer from 1 to 1000",
		"ranks many":                 "column 7: \"many\" is not valid",
		"table everything":           "column 7: no table \"everything\": want configs, kernels or best",
		"status now":                 "column 8: status takes no arguments",
		"help frob":                  "column 6: no command \"frob\"",
		"export xlsx out.xlsx":       "column 8: export takes a format and a file: export csv FILE",
		"connect host:1":             "column 1: agents dial in to the session",
		"workload summa b=64,1,oops": "column 23: b: \"oops\" is not valid",
	}
	for line, want := range cases {
		err := s.Exec(ctx, line, out)
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant %s...", line, err, want)
		}
		if !reflect.DeepEqual(s.State(), before) {
			t.Fatalf("%s changed the state:\n%+v\n%+v", line, s.State(), before)
		}
	}
	// A configuration the workload rejects is caught before any agent starts.
	s.Exec(ctx, "space n=1000 b=64", out)
	if err := s.Exec(ctx, "evaluate", out); err == nil || !strings.Contains(err.Error(), "b=64 must divide") {
		t.Fatalf("evaluate of an invalid space: %v", err)
	}
	if s.Agent() != nil {
		t.Fatal("an agent was started for an invalid sweep")
	}
}

func TestHelp(t *testing.T) {
	s := newSession(t)
	out := &textOut{}
	if err := s.Exec(context.Background(), "help", out); err != nil {
		t.Fatal(err)
	}
	for _, v := range Verbs() {
		if !strings.Contains(out.b.String(), "  "+v) {
			t.Errorf("help lists no %q", v)
		}
		h, ok := HelpFor(v)
		if !ok || !strings.Contains(h, "Example:") {
			t.Errorf("help %s: %q", v, h)
		}
	}
	// 'help policy' lists every registered policy with its description.
	h, _ := HelpFor("policy")
	for _, p := range policy.All() {
		if !strings.Contains(h, "\n  "+p.Name()+strings.Repeat(" ", 13-len(p.Name()))+p.Doc()[:20]) {
			t.Errorf("help policy lacks %s:\n%s", p.Name(), h)
		}
	}
	out.b.Reset()
	s.Exec(context.Background(), "workload", out)
	if !strings.Contains(out.b.String(), "summa:") || !strings.Contains(out.b.String(), "an integer from 1 to 65536") {
		t.Errorf("workload listing:\n%s", out.b.String())
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"space b=64,128 grid=2x2", `save "a b"`, "tolerance 2^0..2^-6 # x", "=", `"`, "a=b=c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		c, err := Parse(line)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("%q: error of type %T", line, err)
			}
			return
		}
		if c == nil {
			return
		}
		if c.Verb == "" || c.VerbCol < 1 {
			t.Fatalf("%q: empty verb %+v", line, c)
		}
		for _, a := range c.Args {
			if a.Col < 1 || a.Col > len([]rune(line)) || (a.Key != "" && a.Value == "") {
				t.Fatalf("%q: bad arg %+v", line, a)
			}
		}
	})
}

func TestComplete(t *testing.T) {
	s := newSession(t)
	cases := []struct {
		line  string
		want  []string
		start int
	}{
		{"ev", []string{"evaluate"}, 0},
		{"workload su", []string{"summa"}, 9},
		{"workload summa n=1024 gr", []string{"grid="}, 22},
		{"space b=64 grid=2x2,1", []string{"1x4"}, 20}, // the grids of the rank count (4) alone
		{"grid 4", []string{"4x1"}, 5},
		{"plot co", []string{"configs"}, 5},
		{"plot configs po", []string{"policy="}, 13},
		{"plot speedup po", nil, 13},
		{"export e", []string{"extrap"}, 7},
		{"evaluate s", []string{"search=halving", "search=random", "seed="}, 9},
		{"evaluate search=halving policy=ea", []string{"eager"}, 31},
		{"tune search=h", []string{"halving"}, 12},
		{"table configs ", []string{"sweep="}, 14},
		{"anomalies le", []string{"level="}, 10},
		{"model sweeps=a", []string{"all"}, 13},
		{"model sw", []string{"sweeps=all"}, 6},
		{"resume sk", []string{"skip="}, 7},
		{"models o", []string{"off", "on"}, 7},
		{"policy conditional,ea", []string{"eager"}, 19},
		{"table k", []string{"kernels"}, 6},
		{"help sp", []string{"space"}, 5},
	}
	// File names, where a command takes one (an SSH user's review: Tab had
	// done nothing there), a folder's with a slash; the policies a list
	// names already are not offered again.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.png"), nil, 0o644)
	os.WriteFile(filepath.Join(dir, ".hidden"), nil, 0o644)
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	cases = append(cases, []struct {
		line  string
		want  []string
		start int
	}{
		{"export csv " + dir + "/a", []string{dir + "/a.png"}, 11},
		{"plot speedup " + dir + "/s", []string{dir + "/sub/"}, 13},
		{"plot configs " + dir + "/", []string{dir + "/a.png", dir + "/sub/"}, 13},
		{"program " + dir + "/", []string{dir + "/a.png", dir + "/sub/"}, 8},
		{"program " + dir + "/.", []string{dir + "/.hidden"}, 8},
		{"load " + dir + "/su", []string{dir + "/sub/"}, 5},
		{"policy conditional,", []string{"apriori", "eager", "local", "online"}, 19},
	}...)
	for _, c := range cases {
		got, start := s.Complete(c.line, len(c.line))
		if !reflect.DeepEqual(got, c.want) || start != c.start {
			t.Errorf("%q: %v at %d, want %v at %d", c.line, got, start, c.want, c.start)
		}
	}
}

// The figures map a known sweep's numbers: the summaries carry them, and the
// files decode.
func TestFigureMapping(t *testing.T) {
	sw := knownSweep(t)
	f, err := MakeFigure(sw, "speedup", FigureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// conditional at 2^-1: reference 0.2+0.4, selective 0.1+0.1: 3x; errors 10% and 75%.
	if !strings.Contains(f.Summary, "conditional 2^-1   speed-up  3.00x  mean error  42.5%  max error  75.0%") {
		t.Errorf("speedup summary:\n%s", f.Summary)
	}
	// The noise floor: configuration 0's runs 0.19 and 0.21 miss each
	// other's by 0.02/0.21 and 0.02/0.19 (configuration 1 has one run).
	noise := "noise floor: a full run misses the mean of its configuration's other full runs by 10.0% on average (2 runs)"
	if e, n := sw.ReferenceError(); n != 2 || math.Abs(e-(0.02/0.21+0.02/0.19)/2) > 1e-12 {
		t.Errorf("ReferenceError = %v over %d runs", e, n)
	}
	if f, err := MakeFigure(sw, "error", FigureOptions{}); err != nil {
		t.Fatal(err)
	} else if !strings.Contains(f.Summary, noise) {
		t.Errorf("error figure summary without the noise floor:\n%s", f.Summary)
	}
	if tb := TableBest(sw); !strings.Contains(tb, noise) {
		t.Errorf("table best without the noise floor:\n%s", tb)
	}
	f, err = MakeFigure(sw, "configs", FigureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(f.Summary, "0 n=1 b=1: reference 0.2000s, conditional 2^-1 0.2200s [best]") ||
		!strings.Contains(f.Summary, "1 n=1 b=2: reference 0.4000s, conditional 2^-1 0.1000s [chosen by conditional]") {
		t.Errorf("configs summary:\n%s", f.Summary)
	}
	if _, err := MakeFigure(sw, "nosuch", FigureOptions{}); err == nil || !strings.Contains(err.Error(), "want one of speedup, error, configs, kernels, path, gantt") {
		t.Errorf("unknown figure: %v", err)
	}
	dir := t.TempDir()
	for _, name := range []string{"a.png", "a.svg"} {
		if _, err := writeFigure(f, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := writeFigure(f, filepath.Join(dir, "a.gif")); err == nil {
		t.Error("wrote a .gif")
	}
}

func knownSweep(t *testing.T) *Sweep {
	t.Helper()
	spec, err := sweep.Parse([]byte(`{"workload":"x","policies":["conditional"],"tolerances":[0.5],"mode":"evaluate"}`))
	if err != nil {
		t.Fatal(err)
	}
	var cs []sweep.Config
	for _, js := range []string{`{"n":1,"b":1}`, `{"n":1,"b":2}`} {
		var c sweep.Config
		json.Unmarshal([]byte(js), &c)
		cs = append(cs, c)
	}
	f := func(x float64) *float64 { return &x }
	tol := 0.5
	return &Sweep{ID: 1, Spec: spec, Configs: cs, Status: "ok", Results: []sweep.Result{
		{Index: 0, Config: cs[0], Policy: "conditional", Tolerance: &tol, ReferenceS: []float64{0.19, 0.21}, PredictedS: f(0.22), SelectiveS: f(0.1), Error: f(0.1)},
		{Index: 1, Config: cs[1], Policy: "conditional", Tolerance: &tol, ReferenceS: []float64{0.4}, PredictedS: f(0.1), SelectiveS: f(0.1), Error: f(0.75)},
	}}
}

// With references, the tolerance is marked even at the end of the error bar.
func TestTextChart(t *testing.T) {
	sw := knownSweep(t)
	rows := sw.ChartRows()
	if len(rows) != 1 || rows[0].Policy != "conditional" || rows[0].SpeedFrac != 1 || rows[0].TolFrac != 1 {
		t.Fatalf("rows %+v", rows)
	}
	full, err14 := strings.Repeat("█", 16), strings.Repeat("█", 14)
	want := "policy       tol    speed-up                 mean error (| tolerance)\n" +
		"conditional  2^-1   " + full + "  3.00x  " + err14 + " |  42.5%\n"
	if got := TextChart(rows, false); got != want {
		t.Errorf("chart\n%q\nwant\n%q", got, want)
	}
	if got := TextChart(rows, true); !strings.Contains(got, "\033[32m"+full+"\033[0m  3.00x") {
		t.Errorf("colour chart\n%q", got)
	}
	if TextChart(nil, false) != "" {
		t.Error("a chart without rows")
	}
}

// Without references (tune) the chart lists the configuration chosen so
// far, by the parameters the sweep set or varied only (n=1 is neither).
func TestTextChartTune(t *testing.T) {
	sw := knownSweep(t)
	sw.Spec.Mode = sweep.ModeTune
	for i := range sw.Results {
		sw.Results[i].ReferenceS, sw.Results[i].Error = nil, nil
	}
	got := TextChart(sw.ChartRows(), false)
	want := "policy       tol    configs  predicted s  chosen so far\n" +
		"conditional  2^-1         2       0.1000  b=2\n"
	if got != want {
		t.Errorf("chart\n%q\nwant\n%q", got, want)
	}
}

// A list typed with a space after or before a comma is one list (Tab
// completion ends a word with a space: "policy conditional ,eager" failed
// for a reviewer); a program's own arguments are left as typed.
func TestParseListsWithSpaces(t *testing.T) {
	for line, want := range map[string][]string{
		"policy conditional ,eager":       {"=conditional,eager"},
		"space b=32, 64 grid=2x2,  1x4":   {"b=32,64", "grid=2x2,1x4"},
		"tolerance 2^-1 , 2^-3":           {"=2^-1,2^-3"},
		"program ./solver a, b":           {"=./solver", "=a,", "=b"},
		"space n=512 b=32,64 lookahead=1": {"n=512", "b=32,64", "lookahead=1"},
	} {
		c, err := Parse(line)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		var got []string
		for _, a := range c.Args {
			got = append(got, a.Key+"="+a.Value)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: args %q, want %q", line, got, want)
		}
	}
}

// A workload command starts the space afresh, and says which settings it
// dropped; given again with the workload, a parameter is not dropped.
func TestWorkloadSaysSpaceDropped(t *testing.T) {
	s := newSession(t)
	ctx := context.Background()
	out := &textOut{}
	for _, line := range []string{"workload summa n=512", "space b=32,64 grid=1x4,2x2"} {
		if err := s.Exec(ctx, line, out); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	}
	out.b.Reset()
	if err := s.Exec(ctx, "workload summa n=2048 b=128", out); err != nil {
		t.Fatal(err)
	}
	if want := "the space set before (grid=1x4,2x2) is back to the defaults: 'space' sets it again"; !strings.Contains(out.b.String(), want) {
		t.Errorf("workload after a space: %q, want %q", out.b.String(), want)
	}
	out.b.Reset()
	if err := s.Exec(ctx, "workload summa n=1024 b=128", out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.b.String(), "back to the defaults") {
		t.Errorf("nothing dropped, yet: %q", out.b.String())
	}
}

// policy and tolerance alone show the current setting, as space does.
func TestPolicyToleranceAloneShow(t *testing.T) {
	s := newSession(t)
	ctx := context.Background()
	out := &textOut{}
	lines := []string{"policy eager,online", "tolerance 2^-1,2^-3", "policy", "tolerance",
		"confidence 0.99", "confidence", "reps 5", "reps", "ranks 2", "ranks", "workload cholesky2d", "grid", "grid 1x2,2x1", "grid"}
	for _, line := range lines {
		if err := s.Exec(ctx, line, out); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
	}
	for _, want := range []string{"policies eager, online (the policies are conditional, local, online, apriori, eager)", "tolerances 2^-1, 2^-3",
		"confidence 0.99\n", "reps 5 (", "ranks 2 (", "grid 2x2 (default)", "grid 1x2,2x1\n"} {
		if !strings.Contains(out.b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.b.String())
		}
	}
}

// A space of more configurations than a sweep may have is said at once,
// with its count; status and evaluate say the count and the lists' lengths
// (only the bound was said, and only at evaluate).
func TestSpaceTooLargeSaid(t *testing.T) {
	s := newSession(t)
	list := func(n int) string {
		var vs []string
		for i := 1; i <= n; i++ {
			vs = append(vs, strconv.Itoa(i))
		}
		return strings.Join(vs, ",")
	}
	out := &textOut{}
	execAll(t, s, out, "workload synthetic", "space count="+list(10)+" steps="+list(50)+" kinds="+list(10)+" mean_us="+list(21), "status")
	// 'workload NAME KEY=VALUES' sets the space as 'space' does, and says so too.
	w := &textOut{}
	execAll(t, s, w, "workload synthetic count="+list(10)+" steps="+list(50)+" kinds="+list(10)+" mean_us="+list(21))
	if !strings.Contains(w.b.String(), "note: this space has 105000 configurations") {
		t.Errorf("workload with a space too large:\n%s", w.b.String())
	}
	for _, want := range []string{
		"note: this space has 105000 configurations, more than the 100000 a sweep may have",
		"105000 configurations (steps 50 x count 10 x kinds 10 x mean_us 21 values), more than 100000: want fewer values",
	} {
		if !strings.Contains(out.b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.b.String())
		}
	}
}

// An option given twice is refused in every command but program (whose
// words are the program's): the last had silently won.
func TestOptionTwiceRefused(t *testing.T) {
	s := newSession(t)
	ctx := context.Background()
	for line, col := range map[string]int{"space b=64,128 b=32": 16, "workload summa b=32 B=64": 21, "plot gantt g.png config=0 config=1": 27, "anomalies level=0.9 level=0.99": 21} {
		want := fmt.Sprintf("column %d: ", col)
		if err := s.Exec(ctx, line, &textOut{}); err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "is given twice: give each option once") {
			t.Errorf("%s: %v, want %s...is given twice", line, err, want)
		}
	}
	if err := s.Exec(ctx, "program ./solver n=1 n=2", &textOut{}); err != nil && strings.Contains(err.Error(), "twice") {
		t.Errorf("program's own words refused: %v", err)
	}
}

// The csv carries a program run's launch time and apriori's counting pass
// beside the timed region's (a program review missed launch_s there).
func TestCSVLaunchAndCounting(t *testing.T) {
	sw := knownSweep(t)
	launch, counting := 0.5, 0.125
	sw.Results[0].LaunchS, sw.Results[0].CountingS = &launch, &counting
	var b strings.Builder
	if err := writeCSV(&b, sw); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[0], ",launch_s,counting_s") {
		t.Fatalf("csv:\n%s", b.String())
	}
	rows := map[bool]string{true: lines[1], false: lines[2]}
	if !strings.HasSuffix(rows[strings.HasPrefix(lines[1], "1,0,")], ",0.5,0.125") {
		t.Errorf("configuration 0's row lacks its launch and counting times:\n%s", b.String())
	}
}

// A tolerance above 1 is taken, with a note of what it means (a notebook
// review's 'tolerance 3' ran at a 21.8% mean error without a word).
func TestToleranceAboveOneNoted(t *testing.T) {
	s := newSession(t)
	out := &textOut{}
	if err := s.Exec(context.Background(), "tolerance 2^-1,3", out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.b.String(), "note: tolerance 3 lets a kernel's 95% interval be wider than its mean") {
		t.Errorf("tolerance 3: %q", out.b.String())
	}
	out.b.Reset()
	if err := s.Exec(context.Background(), "tolerance 2^0,2^-3", out); err != nil || out.b.Len() != 0 {
		t.Errorf("tolerance 2^0,2^-3: %v %q", err, out.b.String())
	}
}

// 'space' says at once what evaluate and tune would refuse in a built-in
// workload's space (b=48 on n=1024 had been accepted, and said only at the
// sweep), naming the valid values; a runnable space draws no note.
func TestSpaceNotesWhatASweepRefuses(t *testing.T) {
	s := newSession(t)
	out := &textOut{}
	ctx := context.Background()
	if err := s.Exec(ctx, "workload qr2d m=1024 n=1024", out); err != nil {
		t.Fatal(err)
	}
	out.b.Reset()
	if err := s.Exec(ctx, "space b=48 grid=2x2", out); err != nil {
		t.Fatal(err)
	}
	if got := out.b.String(); !strings.Contains(got, "note: evaluate and tune would refuse this space: ") || !strings.Contains(got, "want b in 1, 2, 4, 8, 16, 32, 64, 128, 256, 512") {
		t.Errorf("space b=48 on n=1024:\n%s", got)
	}
	out.b.Reset()
	if err := s.Exec(ctx, "space b=64,128", out); err != nil || strings.Contains(out.b.String(), "note:") {
		t.Errorf("a runnable space: %v\n%s", err, out.b.String())
	}
	// A grid of more ranks than set yet draws none: 'ranks' may come next.
	out.b.Reset()
	if err := s.Exec(ctx, "workload cholesky3d n=1024 grid=2x2x2 b=64", out); err != nil || strings.Contains(out.b.String(), "note:") {
		t.Errorf("a grid of 8 before 'ranks 8': %v\n%s", err, out.b.String())
	}
}

// A sweep asked for with a context already done returns the context's
// error and starts nothing: it had journaled an empty sweep, "cancelled
// after 0 of 8 runs" (a Go caller's review).
func TestSweepWithDoneContextStartsNothing(t *testing.T) {
	s := newSession(t)
	execAll(t, s, &textOut{}, "workload synthetic", "space steps=6,7")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Exec(ctx, "evaluate", &textOut{}); !errors.Is(err, context.Canceled) {
		t.Errorf("evaluate with a cancelled context: %v, want context.Canceled", err)
	}
	if sw := s.Last(); sw != nil {
		t.Errorf("a sweep was made: %d (%s)", sw.ID, sw.Status)
	}
}

// A Go program that drives a session without Options.Binary gets the
// approxtune on its PATH, or an error that says so: the default had been
// the program's own executable, which mpirun then started as the agent,
// each rank running the program's main again.
func TestSessionWithoutBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	s := newSession(t)
	execAll(t, s, &textOut{}, "workload synthetic", "space steps=6,7")
	err := s.Exec(context.Background(), "evaluate", &textOut{})
	if err == nil || !strings.Contains(err.Error(), "approxtune is not on PATH, and Options.Binary is not set") {
		t.Errorf("evaluate without an approxtune: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "approxtune")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Dir(bin))
	if s := newSession(t); s.opts.Binary != bin {
		t.Errorf("Options.Binary defaults to %q, want %q on PATH", s.opts.Binary, bin)
	}
}

// A program's space refuses a range of integers (as 'tolerance' takes),
// which had gone to the program as the word "32..128", and takes words of
// digits and x's where no grid is meant (chunks=x1 had been refused as
// "not a grid"); a grid mistyped is still told.
func TestProgramSpaceValues(t *testing.T) {
	s := newSession(t)
	ctx := context.Background()
	execAll(t, s, &textOut{}, "program /bin/true {x} {nb} {chunks} {grid}")
	err := s.Exec(ctx, "space nb=32..128 ranks=2", &textOut{})
	if err == nil || !strings.Contains(err.Error(), `nb: "32..128" is not a value list: a space lists each value, separated by commas (nb=32,64,128), or, for the word itself, quote it (nb="32..128")`) {
		t.Errorf("space nb=32..128: %v", err)
	}
	out := &textOut{}
	if err := s.Exec(ctx, "space x=1 nb=32 chunks=x1,2 ranks=2", out); err != nil || strings.Contains(out.b.String(), "not a grid") {
		t.Errorf("space chunks=x1,2: %v\n%s", err, out.b.String())
	}
	// 'space' lists them in name order, the same each time.
	for range 3 {
		out.b.Reset()
		if err := s.Exec(ctx, "space", out); err != nil || out.b.String() != "chunks=x1,2\nnb=32\nranks=2\nx=1\n\n" {
			t.Errorf("space: %v\n%q", err, out.b.String())
		}
	}
	out.b.Reset()
	if err := s.Exec(ctx, "space ranks=default grid=2x2,2x2x", out); err != nil || !strings.Contains(out.b.String(), `"2x2x" is not a grid`) {
		t.Errorf("space grid=2x2,2x2x: %v\n%s", err, out.b.String())
	}
	// Quoted, the word reaches the program as it is (a review's could not).
	q := newSession(t)
	execAll(t, q, &textOut{}, "program /bin/true {nb}")
	if err := q.Exec(ctx, `space nb="32..128" ranks=2`, &textOut{}); err != nil || len(q.State().Space["nb"]) != 1 || q.State().Space["nb"][0] != "32..128" {
		t.Errorf(`space nb="32..128": %v, %v`, err, q.State().Space["nb"])
	}
	// Only the item quoted: an unquoted range beside it is still refused.
	for _, line := range []string{`space nb="1..3",64..128 ranks=2`, `space nb="1..3", 64..128 ranks=2`} {
		if err := q.Exec(ctx, line, &textOut{}); err == nil || !strings.Contains(err.Error(), `nb: "64..128" is not a value list`) {
			t.Errorf("%s: %v", line, err)
		}
	}
	if err := q.Exec(ctx, `space nb="1..3","64..128",x ranks=2`, &textOut{}); err != nil || len(q.State().Space["nb"]) != 3 {
		t.Errorf(`space nb="1..3","64..128",x: %v, %v`, err, q.State().Space["nb"])
	}
	// Typed again, a program's parameter takes values of another kind.
	for _, line := range []string{"space nb=5", "space nb=solver-a,solver-b", "space nb=solver-c"} {
		if err := q.Exec(ctx, line, &textOut{}); err != nil {
			t.Errorf("%s after other values: %v", line, err)
		}
	}
	if got := q.State().Space["nb"]; len(got) != 1 || got[0] != "solver-c" {
		t.Errorf("nb: %v, want solver-c", got)
	}
}

// A program sweep without an approxtune to find the preload library
// beside, and no APPROXTUNE_LIB, says so: it had looked beside the Go
// caller's own executable.
func TestProgramSweepWithoutBinary(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	t.Setenv(preload.EnvLib, "")
	s := newSession(t)
	execAll(t, s, &textOut{}, "program /bin/true {x}", "space x=1,2 ranks=1")
	err := s.Exec(context.Background(), "evaluate", &textOut{})
	if err == nil || !strings.Contains(err.Error(), "no approxtune to find the preload library beside: approxtune is not on PATH, and neither Options.Binary nor APPROXTUNE_LIB is set") {
		t.Errorf("a program sweep without an approxtune: %v", err)
	}
}

// The best table says which configurations its figures leave out: one left
// out for good ('resume hung=skip': the sweep then reads "ok"), and, of a
// tune as of an evaluate, those a stopped sweep never ran (a ScaLAPACK
// review's tables had named a choice with a configuration never measured,
// unsaid).
func TestTableBestSaysWhatIsLeftOut(t *testing.T) {
	sw := knownSweep(t)
	sw.Configs = append(sw.Configs, sw.Configs[1])
	sw.Skipped = map[int]bool{2: true}
	if tb := TableBest(sw); !strings.Contains(tb, "note: configuration 2 (") || !strings.Contains(tb, ") was left out ('resume skip=' or 'hung=skip')") {
		t.Errorf("a skipped configuration:\n%s", tb)
	}
	// A configuration whose selective runs all failed, with full runs
	// faster than the best named, is told of; a slower one is not.
	failed := knownSweep(t)
	failed.Configs = append(failed.Configs, failed.Configs[1], failed.Configs[1])
	failed.Status = StatusFailed
	failed.failedRefs = map[int][]float64{2: {0.1, 0.12}, 3: {0.5}}
	tb := TableBest(failed)
	if !strings.Contains(tb, "note: configuration 2 (") || !strings.Contains(tb, ") had shorter full runs (0.1100 s) than the best above (0.2000 s), but every selective run of it failed") || strings.Contains(tb, "configuration 3 (") {
		t.Errorf("a faster configuration whose selective runs failed:\n%s", tb)
	}
	// Every configuration left out: said so, not "no results yet".
	all := knownSweep(t)
	all.Skipped, all.Results = map[int]bool{0: true, 1: true}, nil
	if tb := TableBest(all); !strings.Contains(tb, "0 of 0 runs (ok)") || !strings.Contains(tb, "configurations 0 (") || !strings.HasSuffix(tb, "no results: every configuration was left out\n") {
		t.Errorf("every configuration left out:\n%s", tb)
	}
	tune := knownSweep(t)
	tune.Spec.Mode = sweep.ModeTune
	for i := range tune.Results {
		tune.Results[i].ReferenceS, tune.Results[i].Error = nil, nil
	}
	tune.Results = tune.Results[:1]
	tune.Status = StatusHung
	if tb := TableBest(tune); !strings.Contains(tb, "note: only 1 of the 2 configurations has results (the sweep hung)") {
		t.Errorf("a tune that hung after 1 of 2:\n%s", tb)
	}
}

// 'table kernels' lists at most 40 kernels, those that took the most time
// in the run first, and says how many more there are (hpcc's last run had
// listed 890); top=, routine= and config=, policy=, tolerance= choose what
// it shows, a routine the run lacks is refused with those it has, and Tab
// offers the options.
func TestTableKernelsOptions(t *testing.T) {
	s := newSession(t)
	sw := knownSweep(t)
	stat := func(key, routine string, mean float64, calls int64) sweep.KernelStat {
		return sweep.KernelStat{Key: key, Routine: routine, Count: 3, MeanS: mean, HalfS: mean / 10, Calls: calls, Skipped: calls - 3, State: sweep.KernelPredictable}
	}
	var many []sweep.KernelStat
	for i := 1; i <= 50; i++ { // gemm i: i ms, called once; the last ones take the most time
		many = append(many, stat(fmt.Sprintf("gemm[NN] %dx8x8", i), "gemm", float64(i)*1e-3, 4))
	}
	many = append(many, stat("bcast 64 B", "bcast", 1e-5, 100), stat("gemm[NT] 8x8x8", "gemm", 2e-3, 4))
	sw.Kernels = []sweep.KernelsEvent{
		{Index: 0, Policy: "conditional", Tolerance: 0.5, Kernels: []sweep.KernelStat{stat("trsm[LLNN] 8x8", "trsm", 1e-3, 5)}},
		{Index: 1, Policy: "conditional", Tolerance: 0.5, Kernels: many},
	}
	s.sweeps = append(s.sweeps, sw)
	ctx := context.Background()
	run := func(line string) (string, error) {
		out := &textOut{}
		err := s.Exec(ctx, line, out)
		return out.b.String(), err
	}
	got, err := run("table kernels")
	rows := strings.Count(got, "\n")
	if err != nil || !strings.HasPrefix(got, "kernels of configuration 1 ") || rows != 1+1+40+1+1 ||
		!strings.Contains(got, "(the 40 kernels that took the most time in the run (mean x calls), the longest first; 12 more: top=all lists every one") ||
		strings.Index(got, "gemm[NN] 50x8x8") > strings.Index(got, "gemm[NN] 49x8x8") || strings.Contains(got, "gemm[NN] 5x8x8 ") {
		t.Errorf("table kernels (%d lines): %v\n%s", rows, err, got)
	}
	if got, err := run("table kernels top=all"); err != nil || strings.Count(got, "\n") != 1+1+52+1 || strings.Contains(got, " more: ") {
		t.Errorf("top=all: %v\n%s", err, got)
	}
	if got, err := run("table kernels top=2 routine=GEMM"); err != nil || strings.Count(got, "\n") != 6 || !strings.Contains(got, "gemm[NN] 50x8x8") || !strings.Contains(got, "(the 2 kernels that took the most time in the run (mean x calls), the longest first; 49 more:") {
		t.Errorf("top=2 routine=GEMM: %v\n%s", err, got)
	}
	if got, err := run("table kernels routine=gemm[NT]"); err != nil || strings.Count(got, "\n") != 4 || !strings.Contains(got, "gemm[NT] 8x8x8") {
		t.Errorf("routine=gemm[NT]: %v\n%s", err, got)
	}
	if got, err := run("table kernels config=0 policy=conditional tolerance=2^-1"); err != nil || !strings.HasPrefix(got, "kernels of configuration 0 ") || !strings.Contains(got, "trsm[LLNN] 8x8") {
		t.Errorf("config=0: %v\n%s", err, got)
	}
	if got, err := run("plot kernels " + filepath.Join(t.TempDir(), "k.png") + " config=0 policy=conditional tolerance=2^-1"); err != nil || !strings.Contains(got, "trsm[LLNN] 8x8") {
		t.Errorf("plot kernels config=0: %v\n%s", err, got)
	}
	for line, want := range map[string]string{
		"table kernels routine=potrf":  "routine=potrf: no kernel of configuration 1's run is one; its routines are bcast, gemm",
		"table kernels top=0":          "top=0: want a number of kernels from 1, or all",
		"table kernels config=5":       "no selective run with kernel statistics has config=5: the selective runs with kernel statistics are of configurations 0, 1 ('table configs' numbers them)",
		"table kernels policy=eager":   "no selective run with kernel statistics has policy=eager: the selective runs with kernel statistics are of conditional",
		"table kernels tolerance=2^-3": "no selective run with kernel statistics has tolerance=2^-3: the selective runs with kernel statistics are at 2^-1",
		// plot kernels reads the same run options (it had refused them).
		"plot kernels config=5": "no selective run with kernel statistics has config=5: the selective runs with kernel statistics are of configurations 0, 1",
		"table kernels level=2": `"level" is not routine=, top=, config=, policy= or tolerance=`,
		"table kernels gemm":    `table kernels takes routine=, top=, config=, policy= and tolerance=, not "gemm"`,
		"table best top=3":      "top=3 is one too many",
	} {
		if _, err := run(line); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", line, err, want)
		}
	}
	for line, want := range map[string]string{"table kernels ro": "routine=", "table kernels routine=b": "bcast", "table kernels top=a": "all"} {
		if got, _ := s.Complete(line, len(line)); !slices.Contains(got, want) {
			t.Errorf("Tab after %q offers %v, want %s", line, got, want)
		}
	}
}

// sweep=N reads an earlier sweep of the session in the commands that read
// one (the last with results otherwise: a review could not look at an
// earlier sweep again); a sweep the session lacks is refused with those it
// has, and Tab offers the ids.
func TestReadEarlierSweep(t *testing.T) {
	s := newSession(t)
	first, second := knownSweep(t), knownSweep(t)
	first.Workload, second.Workload, second.ID = "x", "x", 2
	second.Results = second.Results[:1]
	s.sweeps = append(s.sweeps, first, second)
	ctx := context.Background()
	run := func(line string) (string, error) {
		out := &textOut{}
		err := s.Exec(ctx, line, out)
		return out.b.String(), err
	}
	if got, err := run("table best"); err != nil || !strings.HasPrefix(got, "sweep 2: ") {
		t.Errorf("table best: %v\n%s", err, got)
	}
	if got, err := run("table best sweep=1"); err != nil || !strings.HasPrefix(got, "sweep 1: evaluate x, 2 of 2 runs") {
		t.Errorf("table best sweep=1: %v\n%s", err, got)
	}
	if got, err := run("table configs sweep=1"); err != nil || strings.Count(got, "conditional") != 2 {
		t.Errorf("table configs sweep=1: %v\n%s", err, got)
	}
	if _, err := run("table best sweep=3"); err == nil || !strings.Contains(err.Error(), "sweep=3: this session's sweeps are 1 (evaluate x, ok), 2 (evaluate x, ok)") {
		t.Errorf("sweep=3: %v", err)
	}
	for line, want := range map[string]string{
		"export notebook x.ipynb sweep=1": "export notebook reads no sweep: sweep= is for the commands that read one",
		"plot live x.png sweep=1":         "plot live reads no sweep",
		"model gemm sweep=1 sweeps=all":   "model takes sweep=N (one sweep) or sweeps=all (every one), not both",
	} {
		if _, err := run(line); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", line, err, want)
		}
	}
	second.Results, second.Status = nil, StatusFailed
	if _, err := run("plot speedup x.png sweep=2"); err == nil || !strings.Contains(err.Error(), "sweep 2 has no results (failed)") {
		t.Errorf("sweep=2 without results: %v", err)
	}
	if h, _ := HelpFor("table"); !strings.Contains(h, "sweep=N (as numbered when it ran) reads sweep N") {
		t.Errorf("help table says nothing of sweep=:\n%s", h)
	}
	if got, _ := s.Complete("table best sweep=", len("table best sweep=")); !slices.Equal(got, []string{"1", "2"}) {
		t.Errorf("Tab after sweep= offers %v", got)
	}
}

// A grid larger than the session's agent is told at the sweep with the
// 'ranks' that makes an agent that large (it had said only to shrink it).
func TestGridLargerThanRanks(t *testing.T) {
	s := newSession(t)
	execAll(t, s, &textOut{}, "workload summa n=512", "grid 3x3")
	err := s.Exec(context.Background(), "evaluate", &textOut{})
	if err == nil || !strings.Contains(err.Error(), "3x3 needs 9 processes, the agent has 4") || !strings.Contains(err.Error(), "; or set 'ranks 9' for an agent that large") {
		t.Errorf("evaluate with grid 3x3 on 4 ranks: %v", err)
	}
	// On a Slurm job of nodes x tasks-per-node, 'ranks' is their product
	// and refused alone: the hint names them instead.
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	execAll(t, s, &textOut{}, "launcher slurm nodes=1 tasks-per-node=2", "grid 2x2")
	err = s.Exec(context.Background(), "evaluate", &textOut{})
	if err == nil || !strings.Contains(err.Error(), "2x2 needs 4 processes, the agent has 2: want a grid of at most 2 processes; or set 'launcher slurm nodes= tasks-per-node=' for a job of 4 ranks") {
		t.Errorf("evaluate with grid 2x2 on a job of 1 x 2: %v", err)
	}
}

// A mistyped table is told before anything else, with the nearest name.
func TestTableTypo(t *testing.T) {
	s := newSession(t)
	err := s.Exec(context.Background(), "table bset", &textOut{})
	if err == nil || !strings.Contains(err.Error(), `no table "bset": did you mean best? The tables are configs, kernels and best`) {
		t.Errorf("table bset: %v", err)
	}
}
