package session

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/approxtune/approxtune/sweep"
)

// planted are four configurations with known performance classes: A and B
// equally fast (class 1), C 12% slower (class 2), D 50% slower (class 3),
// in an order that does not give the answer away.
var planted = []struct {
	name string
	grid sweep.GridShape
	b    int
	base float64
}{
	{"C", sweep.GridShape{1, 4}, 64, 1.25},
	{"A", sweep.GridShape{2, 2}, 128, 1.00},
	{"D", sweep.GridShape{4, 1}, 128, 1.50},
	{"B", sweep.GridShape{1, 4}, 128, 1.00},
}

// plantedSpace is the space the planted sweeps' specs hold: the user set
// n, which their lines then name although it does not vary.
func plantedSpace() map[string]json.RawMessage {
	return map[string]json.RawMessage{"n": json.RawMessage(`[2048]`)}
}

// plantedConfigs are the configurations of planted, with a parameter (n)
// that does not vary.
func plantedConfigs() []sweep.Config {
	params := []sweep.Param{
		{Name: "n", Kind: sweep.Int, Default: 2048, Min: 1, Max: 65536},
		{Name: "grid", Kind: sweep.Grid, Default: sweep.GridShape{2, 2}, Dims: 2},
		{Name: "b", Kind: sweep.Int, Default: 64, Min: 1, Max: 4096},
	}
	var cs []sweep.Config
	for _, p := range planted {
		cs = append(cs, sweep.NewConfig(params, map[string]any{"grid": p.grid, "b": p.b}))
	}
	return cs
}

// plantedLabel is the label of the planted configuration named name.
func plantedLabel(t *testing.T, name string) string {
	t.Helper()
	for i, p := range planted {
		if p.name == name {
			return plantedConfigs()[i].Label()
		}
	}
	t.Fatalf("no planted configuration %s", name)
	return ""
}

// plantedEvaluate is an evaluate sweep of the planted configurations with
// reps reference runs each, shaped like repeated timings (a floor and a
// right-skewed tail: base·(1 + 5%·Exp(1))), under eager at 2^-1.
func plantedEvaluate(reps int) *Sweep {
	rng := rand.New(rand.NewPCG(27, 4))
	f := func(x float64) *float64 { return &x }
	sw := &Sweep{ID: 2, Status: "ok", Workload: "summa", Configs: plantedConfigs(),
		Spec: &sweep.Spec{Space: plantedSpace(), Mode: sweep.ModeEvaluate, Policies: []string{"eager"}, Tolerances: []sweep.Tolerance{0.5}}}
	for i, p := range planted {
		refs := make([]float64, reps)
		for k := range refs {
			refs[k] = p.base * (1 + 0.05*rng.ExpFloat64())
		}
		sw.Results = append(sw.Results, sweep.Result{Index: i, Config: sw.Configs[i], Policy: "eager", Tolerance: f(0.5),
			ReferenceS: refs, PredictedS: f(p.base * 1.02), PredictedSE: f(0.01), SelectiveS: f(p.base / 3)})
	}
	return sw
}

// plantedTune is a tune sweep of the planted configurations under eager and
// conditional at 2^-1 and 2^-3. Eager predicts the planted times (A and B
// 0.5% apart, within their standard errors of 1%); conditional at 2^-1
// predicts D fastest by far. withSE false leaves the standard errors out,
// as a sweep of an older engine would.
func plantedTune(withSE bool) *Sweep {
	f := func(x float64) *float64 { return &x }
	sw := &Sweep{ID: 3, Status: "ok", Workload: "summa", Configs: plantedConfigs(),
		Spec: &sweep.Spec{Space: plantedSpace(), Mode: sweep.ModeTune, Policies: []string{"eager", "conditional"}, Tolerances: []sweep.Tolerance{0.5, 0.125}}}
	for i, p := range planted {
		for _, pol := range []string{"eager", "conditional"} {
			for _, tol := range []float64{0.5, 0.125} {
				pred, se := p.base, 0.01*p.base
				if p.name == "B" {
					pred *= 1.005
				}
				if pol == "conditional" && tol == 0.5 && p.name == "D" {
					pred = 0.5
				}
				r := sweep.Result{Index: i, Config: sw.Configs[i], Policy: pol, Tolerance: f(tol), PredictedS: f(pred), SelectiveS: f(pred / 4)}
				if withSE {
					r.PredictedSE = f(se)
				}
				sw.Results = append(sw.Results, r)
			}
		}
	}
	return sw
}

// sessionWith is a session whose last sweep is sw.
func sessionWith(t *testing.T, sw *Sweep) *Session {
	s := newSession(t)
	s.sweeps = append(s.sweeps, sw)
	return s
}

// rowsOf parses the rows of 'rank's table: configuration label → class
// and score.
func rowsOf(t *testing.T, table string) map[string][2]string {
	t.Helper()
	row := regexp.MustCompile(`(?m)^\s*(\d+)\s+(n=\S+ grid=\S+ b=\d+)\s+(\d\.\d\d)\s`)
	m := map[string][2]string{}
	for _, g := range row.FindAllStringSubmatch(table, -1) {
		m[g[2]] = [2]string{g[1], g[3]}
	}
	return m
}

// On an evaluate sweep, rank recovers the planted classes from the
// reference runs: A and B share class 1 with relative scores near 1 (the
// pattern of paper 004's Table II at M=30, threshold 0.9), C and D, slower,
// score 0 in classes of their own.
func TestRankEvaluatePlantedClasses(t *testing.T) {
	s := sessionWith(t, plantedEvaluate(20))
	out := &textOut{}
	if err := s.Exec(context.Background(), "rank", out); err != nil {
		t.Fatal(err)
	}
	text := out.b.String()
	rows := rowsOf(t, text)
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4:\n%s", len(rows), text)
	}
	for name, class := range map[string]string{"A": "1", "B": "1", "C": "2", "D": "3"} {
		got := rows[plantedLabel(t, name)]
		if got[0] != class {
			t.Errorf("%s in class %s, want %s", name, got[0], class)
		}
		switch name {
		case "A", "B":
			if got[1] < "0.80" {
				t.Errorf("%s scores %s, want 0.80 or more", name, got[1])
			}
		default:
			if got[1] != "0.00" {
				t.Errorf("%s scores %s, want 0.00", name, got[1])
			}
		}
	}
	head := strings.SplitN(text, "\n", 3)
	if !strings.HasPrefix(head[0], "sweep 2 (evaluate summa): 4 configurations ranked on their reference runs (20 each)") {
		t.Errorf("first line %q", head[0])
	}
	if !strings.HasPrefix(head[1], "best class: ") || !strings.Contains(head[1], plantedLabel(t, "A")) || !strings.Contains(head[1], plantedLabel(t, "B")) ||
		strings.Contains(head[1], plantedLabel(t, "C")) || !strings.HasSuffix(head[1], "— equivalent within threshold 0.9, faster than the other 2") {
		t.Errorf("best class line %q, want A and B", head[1])
	}
	if !strings.Contains(text, "threshold 0.9, 30 bootstrap draws of K in [5, 10] runs' minimum per comparison, 100 sorts (seed 1)") {
		t.Errorf("no settings line:\n%s", text)
	}
	// The same command gives the same ranking; another seed may differ in
	// scores but not in these clear classes.
	out2 := &textOut{}
	s.Exec(context.Background(), "rank", out2)
	if out2.b.String() != text {
		t.Errorf("rank does not reproduce:\n%s\n%s", text, out2.b.String())
	}
	// A threshold of 0.5 makes equivalence impossible: A and B split.
	out.b.Reset()
	if err := s.Exec(context.Background(), "rank threshold=0.5 reps=200 draws=20 k=4..8 seed=7", out); err != nil {
		t.Fatal(err)
	}
	rows = rowsOf(t, out.b.String())
	if a, b := rows[plantedLabel(t, "A")], rows[plantedLabel(t, "B")]; a[0] == b[0] {
		t.Errorf("threshold 0.5: A and B both in class %s:\n%s", a[0], out.b.String())
	}
	// The best class is the most frequent outcome; the one of A and B it
	// leaves out was first in other sorts, and the best class line names
	// it with its score (paper 004's set of the fastest: scores above 0).
	other := "B"
	if rows[plantedLabel(t, "B")][0] == "1" {
		other = "A"
	}
	line := strings.SplitN(out.b.String(), "\n", 3)[1]
	if want := "these classes in 107 of the 200 sorts; other sorts put in class 1 also " + plantedLabel(t, other) + " (score " + rows[plantedLabel(t, other)][1] + ")"; !strings.Contains(line, want) {
		t.Errorf("best class line %q lacks %q", line, want)
	}
	if !strings.Contains(out.b.String(), "threshold 0.5, 20 bootstrap draws of K in [4, 8] runs' minimum per comparison, 200 sorts (seed 7)") {
		t.Errorf("options not applied:\n%s", out.b.String())
	}
}

// A reference sweep ranks the same way, on its full runs.
func TestRankReferenceSweep(t *testing.T) {
	sw := plantedEvaluate(10)
	sw.Spec = &sweep.Spec{Space: plantedSpace(), Mode: sweep.ModeReference}
	for i := range sw.Results {
		r := &sw.Results[i]
		r.Policy, r.Tolerance, r.PredictedS, r.PredictedSE, r.SelectiveS = "", nil, nil, nil, nil
	}
	k, err := rankSweep(context.Background(), sw, defaultRankSettings())
	if err != nil {
		t.Fatal(err)
	}
	if got := k.best(); len(got) != 2 || !strings.Contains(strings.Join(got, ","), plantedLabel(t, "A")) || !strings.Contains(strings.Join(got, ","), plantedLabel(t, "B")) {
		t.Errorf("best class %v, want A and B", got)
	}
	if tb := TableBest(sw); !strings.Contains(tb, "best class (rank, reference runs): ") {
		t.Errorf("table best of a reference sweep names no class:\n%s", tb)
	}
}

// Errors say what is wrong, where, and what is valid.
func TestRankErrors(t *testing.T) {
	ctx := context.Background()
	s := newSession(t)
	if err := s.Exec(ctx, "rank", &textOut{}); err == nil || err.Error() != "column 1: no results yet: run evaluate or tune first, or read another session's with 'load SESSION'" {
		t.Errorf("no sweep: %v", err)
	}
	s.sweeps = append(s.sweeps, plantedEvaluate(1))
	if err := s.Exec(ctx, "rank", &textOut{}); err == nil || !strings.HasPrefix(err.Error(), "column 1: rank compares the spread of each configuration's reference runs and needs 2 or more of them; sweep 2 has 1 for n=2048 grid=1x4 b=64, n=2048 grid=2x2 b=128, n=2048 grid=4x1 b=128 and 1 more: set 'reps 3' or more and run evaluate again") {
		t.Errorf("one reference run: %v", err)
	}
	one := plantedEvaluate(5)
	one.Results = one.Results[:1]
	s.sweeps = append(s.sweeps, one)
	if err := s.Exec(ctx, "rank", &textOut{}); err == nil || err.Error() != "column 1: rank compares two or more configurations; sweep 2 has reference runs for only 1 configuration" {
		t.Errorf("one configuration: %v", err)
	}
	s.sweeps = append(s.sweeps, plantedEvaluate(5))
	for line, want := range map[string]string{
		"rank threshold=0.3": `column 16: "0.3" is not a threshold: want a number from 0.5 up to, but not, 1 (default 0.9)`,
		// At 1 no configuration is ever slower: the sort kept its random
		// order, and a configuration twice as slow was "equivalent".
		"rank threshold=1":                 `column 16: "1" is not a threshold: want a number from 0.5 up to, but not, 1`,
		"rank threshold=0.9 threshold=0.8": `column 20: threshold= is given twice: give each option once`,
		"rank threshold=x":                 `column 16: "x" is not a threshold`,
		"rank threshold=1.5":               `column 16: "1.5" is not a threshold`,
		"rank reps=0":                      `column 11: "0" is not valid for reps=: want the number of sorts (default 100), an integer from 1 to 100000`,
		"rank draws=many":                  `column 12: "many" is not valid for draws=: want the number of bootstrap draws per comparison (default 30)`,
		"rank k=10..5":                     `column 8: "10..5" is not valid for k=: want the runs each bootstrap draw takes, an integer or a range A..B`,
		"rank seed=-1":                     `column 11: "-1" is not a seed`,
		"rank bins=3":                      `column 6: rank has no option "bins": want threshold=, reps=, draws=, k=, seed=, policy= or tolerance=`,
		"rank 0.8":                         `column 6: rank takes options as KEY=VALUE`,
		"rank policy=lazy":                 `column 13: unknown policy "lazy"`,
		"rank tolerance=2^-1,2^-2":         `column 16: one tolerance only`,
		"rank policy=eager":                `column 6: policy= and tolerance= choose the predictions of a tune sweep to rank; sweep 2 is evaluate, ranked on its reference runs`,
		"rank threshold=0.9 reps=3":        "",
	} {
		err := s.Exec(ctx, line, &textOut{})
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", line, err)
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant %s...", line, err, want)
		}
	}
	s.sweeps = append(s.sweeps, plantedTune(true))
	for line, want := range map[string]string{
		"rank policy=conditional tolerance=2^-2": `column 35: sweep 3 did not run tolerance 2^-2: its tolerances are 2^-1, 2^-3`,
		"rank policy=lazy-eager":                 `column 13: unknown policy`,
	} {
		if err := s.Exec(ctx, line, &textOut{}); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant %s...", line, err, want)
		}
	}
	s.sweeps = append(s.sweeps, plantedTune(false))
	if err := s.Exec(ctx, "rank", &textOut{}); err == nil || !strings.Contains(err.Error(), "4 of the 4 predictions of eager at 2^-3 in sweep 3 carry no standard error (predicted_se_s)") {
		t.Errorf("no standard errors: %v", err)
	}
	if _, err := MakeFigure(plantedTune(false), "rank", FigureOptions{}); err == nil || !strings.Contains(err.Error(), "predicted_se_s") {
		t.Errorf("plot rank without standard errors: %v", err)
	}
}

// On a tune sweep, rank draws times from each prediction's distribution
// and says so; policy= and tolerance= choose the predictions.
func TestRankTunePredictions(t *testing.T) {
	ctx := context.Background()
	s := sessionWith(t, plantedTune(true))
	out := &textOut{}
	if err := s.Exec(ctx, "rank", out); err != nil {
		t.Fatal(err)
	}
	text := out.b.String()
	if !strings.HasPrefix(text, "sweep 3 (tune summa): 4 configurations ranked on their predictions of eager at 2^-3: 50 times drawn from each prediction's normal distribution N(predicted, standard error² + (6.2% × predicted)²), not measured (6.2%: the run-to-run noise and bias the standard error leaves out, as a search's rounds allow at 2^-3)\n") {
		t.Errorf("first line does not say the times are drawn from predictions:\n%s", text)
	}
	if !regexp.MustCompile(`(?m)^\s*class\s+configuration\s+score\s+predicted s\s+std error s$`).MatchString(text) {
		t.Errorf("no prediction columns:\n%s", text)
	}
	rows := rowsOf(t, text)
	for name, class := range map[string]string{"A": "1", "B": "1", "C": "2", "D": "3"} {
		if got := rows[plantedLabel(t, name)][0]; got != class {
			t.Errorf("eager at 2^-3: %s in class %s, want %s:\n%s", name, got, class, text)
		}
	}
	// The prediction and its standard error are printed as they are, not
	// the mean of the draws.
	if !regexp.MustCompile(`(?m)^\s*3\s+n=2048 grid=4x1 b=128\s+0\.00\s+1\.5000\s+0\.0150$`).MatchString(text) {
		t.Errorf("D's row does not show its prediction 1.5000 and standard error 0.0150:\n%s", text)
	}
	out.b.Reset()
	if err := s.Exec(ctx, "rank policy=conditional tolerance=2^-1", out); err != nil {
		t.Fatal(err)
	}
	rows = rowsOf(t, out.b.String())
	if d := rows[plantedLabel(t, "D")]; d[0] != "1" || d[1] != "1.00" {
		t.Errorf("conditional at 2^-1 predicts D fastest; got class %s score %s:\n%s", d[0], d[1], out.b.String())
	}
	if !strings.Contains(out.b.String(), "predictions of conditional at 2^-1") {
		t.Errorf("not the chosen predictions:\n%s", out.b.String())
	}
	// At 2^-1 the allowance (25%) is wider than the steps between the
	// predictions: all in one class, and the note says why and what to do.
	out.b.Reset()
	if err := s.Exec(ctx, "rank policy=eager tolerance=2^-1", out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.b.String(), "note: each prediction at 2^-1 is allowed 25.0%, more than the steps between these configurations' predictions (1.0000 to 1.5000 s)") {
		t.Errorf("one class at 2^-1, not explained:\n%s", out.b.String())
	}
	if out.b.Reset(); s.Exec(ctx, "rank", out) != nil || strings.Contains(out.b.String(), "tells no neighbours apart") {
		t.Errorf("several classes at 2^-3, yet the one-class note:\n%s", out.b.String())
	}
	// A tolerance the sweep set but has no predictions at (a search's
	// rounds ended before it): the error names those it has, where it
	// had offered the very tolerance it refused.
	sw := s.Last()
	kept := sw.Results[:0]
	for _, r := range sw.Results {
		if r.Policy == "conditional" || *r.Tolerance == 0.5 {
			kept = append(kept, r)
		}
	}
	sw.Results = kept
	err := s.Exec(ctx, "rank policy=eager tolerance=2^-3", out)
	if err == nil || !strings.Contains(err.Error(), "no predictions of eager at 2^-3: it has predictions of policy=conditional tolerance=2^-1; policy=conditional tolerance=2^-3; policy=eager tolerance=2^-1") {
		t.Errorf("rank at a tolerance without predictions: %v", err)
	}
}

// A tune sweep's prediction with an error far wider than its value is not
// ranked fastest on its width: compared by the least of several draws, the
// first configuration (7.1 ms, a 35 ms standard error, a reviewer's case)
// came out alone in class 1, ahead of the second (1.0 ms, a 13 us error),
// which is in class 1 now, and of the third (4.6 ms), which the second
// beats.
func TestRankTuneWidePrediction(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	sw := &Sweep{ID: 4, Status: "ok", Workload: "summa", Configs: plantedConfigs(),
		Spec: &sweep.Spec{Space: plantedSpace(), Mode: sweep.ModeTune, Policies: []string{"eager"}, Tolerances: []sweep.Tolerance{0.5}}}
	for i, ps := range [][2]float64{{0.0071, 0.035}, {0.0010, 0.000013}, {0.0046, 0.0001}, {0.0100, 0.0001}} {
		sw.Results = append(sw.Results, sweep.Result{Index: i, Config: sw.Configs[i], Policy: "eager", Tolerance: f(0.5),
			PredictedS: f(ps[0]), PredictedSE: f(ps[1]), SelectiveS: f(ps[0] / 4)})
	}
	out := &textOut{}
	if err := sessionWith(t, sw).Exec(context.Background(), "rank", out); err != nil {
		t.Fatal(err)
	}
	text := out.b.String()
	rows := rowsOf(t, text)
	a, b, c := rows[sw.Configs[0].Label()], rows[sw.Configs[1].Label()], rows[sw.Configs[2].Label()]
	if b[0] != "1" || c[0] <= b[0] || strings.Contains(text, "best class: "+sw.Configs[0].Label()+" — faster") {
		t.Errorf("7.1 ms ± 35 ms in class %s, 1.0 ms in class %s, 4.6 ms in class %s; want 1.0 ms in class 1 ahead of 4.6 ms, and 7.1 ms not alone ahead of it:\n%s", a[0], b[0], c[0], text)
	}
	if !strings.Contains(text, "30 bootstrap draws of one drawn time a side per comparison") {
		t.Errorf("the table does not say a comparison draws one time a side:\n%s", text)
	}
}

// Within a class, rank's table, its best class line and plot rank list
// the configurations fastest first by the time they show: a tune sweep's
// prediction (a review saw them in the order of the mean of the times
// drawn from each prediction, and plot rank in yet another).
func TestRankClassFastestFirst(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	sw := &Sweep{ID: 4, Status: "ok", Workload: "summa", Configs: plantedConfigs(),
		Spec: &sweep.Spec{Space: plantedSpace(), Mode: sweep.ModeTune, Policies: []string{"eager"}, Tolerances: []sweep.Tolerance{0.5}}}
	preds := []float64{0.00103, 0.00100, 0.00102, 0.00101} // one class: a standard error of 0.3 ms each
	for i, p := range preds {
		sw.Results = append(sw.Results, sweep.Result{Index: i, Config: sw.Configs[i], Policy: "eager", Tolerance: f(0.5),
			PredictedS: f(p), PredictedSE: f(0.0003), SelectiveS: f(p / 4)})
	}
	want := []string{sw.Configs[1].Label(), sw.Configs[3].Label(), sw.Configs[2].Label(), sw.Configs[0].Label()}
	s := sessionWith(t, sw)
	for seed := 1; seed <= 5; seed++ {
		out := &textOut{}
		if err := s.Exec(context.Background(), fmt.Sprintf("rank seed=%d", seed), out); err != nil {
			t.Fatal(err)
		}
		text := out.b.String()
		var got []string
		for _, line := range strings.Split(text, "\n") {
			for _, l := range want {
				if strings.Contains(line, " "+l+" ") && regexp.MustCompile(`^\s*1\s`).MatchString(line) {
					got = append(got, l)
				}
			}
		}
		if !slices.Equal(got, want) || !strings.Contains(text, "best class: "+strings.Join(want, ", ")+" — ") {
			t.Fatalf("seed %d: class 1 listed as %q, want %q (ascending predictions):\n%s", seed, got, want, text)
		}
	}
	fig, err := MakeFigure(sw, "rank", FigureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	short := strings.ReplaceAll(strings.Join(want, ", "), "n=2048 ", "") // only what varies
	if !strings.Contains(fig.Summary, "best class "+short+" — ") || !strings.Contains(fig.Summary, "score 1.00, predicted 0.0010s") {
		t.Errorf("plot rank's best class is not fastest first, want %q:\n%s", want, fig.Summary)
	}
}

// 'plot rank' draws a PNG with a summary that names the classes, for
// reference runs and for predictions.
func TestPlotRank(t *testing.T) {
	f, err := MakeFigure(plantedEvaluate(20), "rank", FigureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(f.PNG))
	if err != nil {
		t.Fatal(err)
	}
	if sz := img.Bounds().Size(); sz.X != 800 || sz.Y != 450 {
		t.Errorf("png %v", sz)
	}
	if !bytes.Contains(f.SVG, []byte("<svg")) || !bytes.Contains(f.SVG, []byte("class 3")) {
		t.Error("the svg does not name class 3")
	}
	lines := strings.Split(strings.TrimSpace(f.Summary), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[0], "performance classes of 4 configurations on their reference runs: best class ") {
		t.Fatalf("summary:\n%s", f.Summary)
	}
	// Rows by class, then mean time; labels only what varies.
	for i, want := range []string{`class 1  grid=(2x2|1x4) b=128: score `, `class 1  grid=(2x2|1x4) b=128: `, `class 2  grid=1x4 b=64: score 0.00, mean 1\.\d{4}s \(95% 1\.\d{4}\.\.1\.\d{4}\), min 1\.\d{4}s`, `class 3  grid=4x1 b=128: score 0.00`} {
		if !regexp.MustCompile("^" + want).MatchString(lines[i+1]) {
			t.Errorf("summary line %d %q, want %s", i+1, lines[i+1], want)
		}
	}
	f, err = MakeFigure(plantedTune(true), "rank", FigureOptions{Policy: "conditional", Tolerance: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(f.Summary, "performance classes of 4 configurations on their predictions of conditional at 2^-1: best class grid=4x1 b=128 — faster than the other 3") ||
		strings.Contains(f.Summary, "min ") {
		t.Errorf("tune summary:\n%s", f.Summary)
	}
	// Through the verb, to a file.
	s := sessionWith(t, plantedEvaluate(5))
	file := filepath.Join(t.TempDir(), "rank.png")
	out := &textOut{}
	if err := s.Exec(context.Background(), "plot rank "+file, out); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(file); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("plot rank wrote no png: %v", err)
	}
	if !strings.Contains(out.b.String(), "performance classes of 4 configurations") {
		t.Errorf("plot rank printed:\n%s", out.b.String())
	}
	if _, err := MakeFigure(plantedEvaluate(1), "rank", FigureOptions{}); err == nil || !strings.Contains(err.Error(), "set 'reps 3'") {
		t.Errorf("plot rank with one reference run: %v", err)
	}
}

// 'table best' (and so the end of evaluate and tune) names the best class
// when the data allows, and leaves it out otherwise.
func TestTableBestNamesBestClass(t *testing.T) {
	a, b := plantedLabel(t, "A"), plantedLabel(t, "B")
	line := regexp.MustCompile(`(?m)^best class \(rank, ([^)]*)\): (.*) — (.*)$`)
	for _, c := range []struct {
		name string
		sw   *Sweep
		from string
	}{
		{"evaluate", plantedEvaluate(20), "reference runs"},
		{"tune", plantedTune(true), "predictions of eager at 2^-3"},
	} {
		tb := TableBest(c.sw)
		g := line.FindStringSubmatch(tb)
		if g == nil {
			t.Errorf("%s: no best class line:\n%s", c.name, tb)
			continue
		}
		// Each with its score where configurations outside it have
		// theirs (the tune's).
		members := strings.Split(regexp.MustCompile(` \(score [0-9.]+\)`).ReplaceAllString(g[2], ""), ", ")
		if strings.Contains(g[3], "other sorts put in class 1 also") != strings.Contains(g[2], " (score ") {
			t.Errorf("%s: the best class's members without their scores: %q", c.name, g[2])
		}
		if g[1] != c.from || len(members) != 2 || !sameTwo(members, a, b) || !strings.HasPrefix(g[3], "equivalent within threshold 0.9, faster than the other 2") {
			t.Errorf("%s: best class line %q, want A and B from %s", c.name, g[0], c.from)
		}
	}
	for _, sw := range []*Sweep{plantedEvaluate(1), plantedTune(false)} {
		if tb := TableBest(sw); strings.Contains(tb, "best class") {
			t.Errorf("%s sweep without the data names a class:\n%s", sw.Spec.Mode, tb)
		}
	}
	// The end of a tune prints table best: the class is there too.
	s := sessionWith(t, plantedTune(true))
	out := &textOut{}
	if err := s.Exec(context.Background(), "table best", out); err != nil || !line.MatchString(out.b.String()) {
		t.Errorf("table best: %v\n%s", err, out.b.String())
	}
}

// sameTwo reports whether xs holds exactly a and b, in either order.
func sameTwo(xs []string, a, b string) bool {
	return reflect.DeepEqual(xs, []string{a, b}) || reflect.DeepEqual(xs, []string{b, a})
}

// wideEvaluate is an evaluate sweep of n configurations with reps
// reference runs each, in three tiers of speed.
func wideEvaluate(n, reps int) *Sweep {
	rng := rand.New(rand.NewPCG(5, 6))
	params := []sweep.Param{{Name: "b", Kind: sweep.Int, Default: 8, Min: 1, Max: 1 << 20}}
	f := func(x float64) *float64 { return &x }
	sw := &Sweep{ID: 1, Status: "ok", Workload: "toy",
		Spec: &sweep.Spec{Space: plantedSpace(), Mode: sweep.ModeEvaluate, Policies: []string{"eager"}, Tolerances: []sweep.Tolerance{0.5}}}
	for i := range n {
		c := sweep.NewConfig(params, map[string]any{"b": 8 * (i + 1)})
		sw.Configs = append(sw.Configs, c)
		refs := make([]float64, reps)
		base := 1 + 0.1*float64(i%3)
		for k := range refs {
			refs[k] = base * (1 + 0.05*rng.ExpFloat64())
		}
		sw.Results = append(sw.Results, sweep.Result{Index: i, Config: c, Policy: "eager", Tolerance: f(0.5), ReferenceS: refs, PredictedS: f(base), SelectiveS: f(base / 3)})
	}
	return sw
}

// The best class costs table best little: 15 configurations at the
// default 100 sorts take well under a second (measured: a few tens of ms).
func TestBestClassLineIsFast(t *testing.T) {
	sw := wideEvaluate(15, 5)
	start := time.Now()
	l := bestClassLine(sw)
	el := time.Since(start)
	t.Logf("best class of 15 configurations, 100 sorts: %v", el)
	if !strings.HasPrefix(l, "best class (rank, reference runs): ") {
		t.Fatalf("line %q", l)
	}
	if el > 2*time.Second {
		t.Errorf("best class line took %v", el)
	}
}

// BenchmarkBestClassLine measures the default ranking of 15 configurations.
func BenchmarkBestClassLine(b *testing.B) {
	sw := wideEvaluate(15, 5)
	for b.Loop() {
		bestClassLine(sw)
	}
}

// A large sweep's best class line ranks its fastest configurations by
// mean only, and says so; the fastest is in the class, a slow tier never.
func TestBestClassLineOfALargeSweep(t *testing.T) {
	sw := wideEvaluate(600, 3)
	l := bestClassLine(sw)
	if !strings.Contains(l, fmt.Sprintf("(the %d fastest by mean ranked; 'rank' ranks all 600)", bestLineTop)) {
		t.Fatalf("line %q", l)
	}
	st := defaultRankSettings()
	st.top = bestLineTop
	k, err := rankSweep(context.Background(), sw, st)
	if err != nil {
		t.Fatal(err)
	}
	if len(k.src.samples) != bestLineTop || k.cut != 600-bestLineTop {
		t.Fatalf("ranked %d, cut %d", len(k.src.samples), k.cut)
	}
	for _, m := range k.r.Classes[0].Members {
		if i := k.src.index[k.pos(m)]; i%3 != 0 {
			t.Errorf("configuration %d (a slower tier) in the best class", i)
		}
		if k.src.labels[k.pos(m)] != sw.Configs[k.src.index[k.pos(m)]].Label() {
			t.Errorf("labels out of step with indices after the cut")
		}
	}
}

// With 2 runs of a configuration the best class compares fastest runs: a
// configuration with one fast and one slow run (1.00, 1.60: mean 1.30)
// beats a steady one (1.20, 1.21: mean 1.205), whose mean is the least.
// The line then says it leaves the least mean out, and why, rather than
// naming another best than the line above it.
func TestBestClassLineSaysWhenMeansDisagree(t *testing.T) {
	params := []sweep.Param{{Name: "b", Kind: sweep.Int, Default: 8, Min: 1, Max: 1 << 20}}
	f := func(x float64) *float64 { return &x }
	sw := &Sweep{ID: 1, Status: "ok", Workload: "toy",
		Spec: &sweep.Spec{Space: plantedSpace(), Mode: sweep.ModeEvaluate, Policies: []string{"eager"}, Tolerances: []sweep.Tolerance{0.5}}}
	for i, refs := range [][]float64{{1.00, 1.60}, {1.20, 1.21}} {
		c := sweep.NewConfig(params, map[string]any{"b": 8 * (i + 1)})
		sw.Configs = append(sw.Configs, c)
		sw.Results = append(sw.Results, sweep.Result{Index: i, Config: c, Policy: "eager", Tolerance: f(0.5), ReferenceS: refs, PredictedS: f(1.2), SelectiveS: f(0.4)})
	}
	l := bestClassLine(sw)
	if !strings.HasPrefix(l, "best class (rank, reference runs): b=8 ") || !strings.Contains(l, "it leaves out b=16, the least mean time, because with 2 runs of a configuration the ranking compares their fastest runs") {
		t.Errorf("line %q", l)
	}
}

// resume skip= refuses a configuration the sweep does not have, and a
// sweep that is complete, before doing anything.
func TestResumeSkippingRefuses(t *testing.T) {
	s := newSession(t)
	sw := wideEvaluate(2, 2)
	for cfgs, want := range map[int]string{5: "skip=5: sweep 1 has configurations 0 to 1", 1: "sweep 1 is complete: nothing to skip or resume"} {
		err := s.ResumeSkipping(context.Background(), sw, []int{cfgs}, &textOut{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("skip=%d: %v, want %q", cfgs, err, want)
		}
	}
	if sw.Status != "ok" || len(sw.Skipped) != 0 {
		t.Errorf("the sweep changed: status %s, skipped %v", sw.Status, sw.Skipped)
	}
}

// A prediction whose standard error is 0 (every kernel skipped at its own
// mean) is no certainty: A and B, 0.5% apart, are one class. Drawn from
// N(predicted, 0), they had made two classes in every sort.
func TestRankZeroStandardErrorNotCertain(t *testing.T) {
	sw := plantedTune(true)
	for i := range sw.Results {
		zero := 0.0
		sw.Results[i].PredictedSE = &zero
	}
	k, err := rankSweep(context.Background(), sw, defaultRankSettings())
	if err != nil {
		t.Fatal(err)
	}
	if got := k.best(); !sameTwo(got, plantedLabel(t, "A"), plantedLabel(t, "B")) {
		t.Errorf("best class %v, want A and B", got)
	}
}

// When few sorts agree on the classes (configurations in a chain, each
// near its neighbours), rank says to read the scores.
func TestRankRareClassesNoted(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	var configs []sweep.Config
	params := []sweep.Param{{Name: "b", Kind: sweep.Int, Default: 8, Min: 1, Max: 1 << 20}}
	sw := &Sweep{ID: 4, Status: "ok", Workload: "toy",
		Spec: &sweep.Spec{Mode: sweep.ModeTune, Policies: []string{"eager"}, Tolerances: []sweep.Tolerance{0.5}}}
	for i := range 12 {
		configs = append(configs, sweep.NewConfig(params, map[string]any{"b": 8 * (i + 1)}))
		p := 0.001 * (1 + 0.12*float64(i)) // each 12% of the first from the next: at 2^-1 a search allows 25%
		sw.Results = append(sw.Results, sweep.Result{Index: i, Config: configs[i], Policy: "eager", Tolerance: f(0.5),
			PredictedS: f(p), PredictedSE: f(0.03 * p), SelectiveS: f(p / 4)})
	}
	sw.Configs = configs
	out := &textOut{}
	if err := sessionWith(t, sw).Exec(context.Background(), "rank", out); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(\d+) of the 100 sorts gave these classes`).FindStringSubmatch(out.b.String())
	if m == nil {
		t.Fatalf("no support line:\n%s", out.b.String())
	}
	n, _ := strconv.Atoi(m[1])
	if noted := strings.Contains(out.b.String(), "note: only "+m[1]+" of the 100 sorts gave these classes"); noted != (n < 20) {
		t.Errorf("%d of 100 sorts, noted %v:\n%s", n, noted, out.b.String())
	}
	if n >= 20 {
		t.Errorf("a chain of 12 configurations 12%% apart gave the same classes in %d of 100 sorts: the test wants a rare outcome", n)
	}
}

// With few runs a configuration, the note advises fewer runs per draw only
// where the draws are larger than that: at k=2..3 it had advised the k
// already in use.
func TestRankFewRunsAdvice(t *testing.T) {
	s := newSession(t)
	s.sweeps = []*Sweep{plantedEvaluate(3)}
	for line, fewer := range map[string]bool{"rank": true, "rank k=2..3": false} {
		out := &textOut{}
		if err := s.Exec(context.Background(), line, out); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		said := out.b.String()
		if !strings.Contains(said, "most draws hold its fastest run") || strings.Contains(said, "fewer per draw (k=2..3)") != fewer {
			t.Errorf("%s: want the few-runs note, advising k=2..3: %v\n%s", line, fewer, said)
		}
	}
}

// A best class of every configuration, some rarely first, shows their
// scores and how many sorts gave it: "all 7 equivalent within threshold
// 0.9" had hidden scores from 0.09 to 1 and 8 sorts of 100 (a review).
func TestRankAllEquivalentShowsScores(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	params := []sweep.Param{{Name: "b", Kind: sweep.Int, Default: 8, Min: 1, Max: 1 << 20}}
	sw := &Sweep{ID: 4, Status: "ok", Workload: "toy",
		Spec: &sweep.Spec{Mode: sweep.ModeTune, Policies: []string{"eager"}, Tolerances: []sweep.Tolerance{0.5}}}
	for i := range 6 {
		sw.Configs = append(sw.Configs, sweep.NewConfig(params, map[string]any{"b": 8 * (i + 1)}))
		p := 0.001 * (1 + 0.1*float64(i))
		sw.Results = append(sw.Results, sweep.Result{Index: i, Config: sw.Configs[i], Policy: "eager", Tolerance: f(0.5),
			PredictedS: f(p), PredictedSE: f(0.03 * p), SelectiveS: f(p / 4)})
	}
	out := &textOut{}
	if err := sessionWith(t, sw).Exec(context.Background(), "rank threshold=0.99", out); err != nil {
		t.Fatal(err)
	}
	best := regexp.MustCompile(`(?m)^best class: .*$`).FindString(out.b.String())
	if !strings.Contains(best, "all 6 equivalent within threshold 0.99, these classes in ") || !strings.Contains(best, "b=48 (score ") {
		t.Errorf("best class line:\n%s\nin:\n%s", best, out.b.String())
	}
}
