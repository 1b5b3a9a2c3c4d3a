package session

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approxtune/approxtune/sweep"
)

// plantedTrace is a traced run made by hand on two ranks: gemms of sizes
// 1e6 to 1e9 flops taking 1e-10 s per flop, bcasts of 1 KiB to 1 MiB
// taking 2e-9·bytes^0.95 s, and spins of no size taking 2 ms, each x 1 ± 5%, one skipped gemm and one of no duration per rank; rank 1's gemms
// i = 0, every, 2·every, ... take 4 times as long. It returns the trace and
// the planted spans, as {rank, span index}.
func plantedTrace(every int) (sweep.TraceEvent, map[[2]int]bool) {
	rng := rand.New(rand.NewPCG(1, 2))
	tr := sweep.TraceEvent{Type: sweep.TypeTrace, V: sweep.ProtocolVersion, Index: 0, Policy: "eager", Tolerance: 0}
	planted := map[[2]int]bool{}
	for r := 0; r < 2; r++ {
		rt := sweep.RankTrace{Rank: r}
		t := 0.0
		add := func(routine string, comm bool, size, d float64) {
			rt.Events = append(rt.Events, sweep.Span{Routine: routine, Comm: comm, Size: size, StartS: t, EndS: t + d})
			t += d + 1e-6
		}
		for i := 0; i < 120; i++ {
			size := math.Pow(10, 6+3*rng.Float64())
			d := 1e-10 * size * (1 + 0.1*(rng.Float64()-0.5))
			if r == 1 && i%every == 0 {
				planted[[2]int{r, len(rt.Events)}] = true
				d *= 4
			}
			add("gemm", false, size, d)
			if i%4 == 0 {
				b := math.Pow(2, 10+10*rng.Float64())
				add("bcast", true, b, 2e-9*math.Pow(b, 0.95)*(1+0.1*(rng.Float64()-0.5)))
			}
			if i%3 == 0 {
				add("spin", false, 0, 2e-3*(1+0.1*(rng.Float64()-0.5)))
			}
		}
		rt.Events = append(rt.Events, sweep.Span{Routine: "gemm", StartS: t, EndS: t, PredictedS: 1e-3, Skipped: true, Size: 1e7},
			sweep.Span{Routine: "gemm", StartS: t, EndS: t, Size: 1e3})
		tr.Ranks = append(tr.Ranks, rt)
	}
	return tr, planted
}

// plantedSweep is a tune sweep whose one run has tr as its trace.
func plantedSweep(t *testing.T, tr sweep.TraceEvent) *Sweep {
	t.Helper()
	sp, err := sweep.Parse([]byte(`{"workload":"synthetic","policies":["eager"],"tolerances":[0],"mode":"tune","trace":true}`))
	if err != nil {
		t.Fatal(err)
	}
	c := sweep.Config{}
	tol, pred := 0.0, 0.5
	return &Sweep{ID: 1, Spec: sp, Configs: []sweep.Config{c}, Status: "ok", Traces: []sweep.TraceEvent{tr},
		Results: []sweep.Result{{Index: 0, Config: c, Policy: "eager", Tolerance: &tol, PredictedS: &pred}}}
}

// precisionRecall compares the flagged spans with the planted ones.
func precisionRecall(an *traceAnomalies, planted map[[2]int]bool) (precision, recall float64, wrong []string) {
	hit := 0
	for _, a := range an.report.Anomalies {
		at := an.at[a.Index]
		if planted[at] {
			hit++
		} else {
			wrong = append(wrong, fmt.Sprintf("rank %d span %d %s %.3gs (%.2fx) flagged, not planted", a.Rank, at[1], a.Routine, a.Duration, a.Ratio))
		}
	}
	flagged := map[[2]int]bool{}
	for _, a := range an.report.Anomalies {
		flagged[an.at[a.Index]] = true
	}
	for at := range planted {
		if !flagged[at] {
			wrong = append(wrong, fmt.Sprintf("rank %d span %d planted, not flagged", at[0], at[1]))
		}
	}
	if n := len(an.report.Anomalies); n > 0 {
		precision = float64(hit) / float64(n)
	}
	if len(planted) > 0 {
		recall = float64(hit) / float64(len(planted))
	}
	return precision, recall, wrong
}

// The analysis of a trace made by hand: each routine fitted against its
// size (none for spins), exactly the planted slow gemms flagged, skipped
// spans and spans of no duration left out.
func TestFindAnomaliesPlanted(t *testing.T) {
	tr, planted := plantedTrace(10)
	an, err := findAnomalies(&tr, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	p, r, wrong := precisionRecall(an, planted)
	if p != 1 || r != 1 {
		t.Errorf("precision %.2f recall %.2f of %d planted:\n%s", p, r, len(planted), strings.Join(wrong, "\n"))
	}
	if len(an.execs) != 2*(120+30+40) || an.short != 2 {
		t.Errorf("%d executions fitted, %d too short: want 380 and 2", len(an.execs), an.short)
	}
	fits := map[string]string{}
	for _, f := range an.report.Fits {
		fits[f.Routine] = fmt.Sprintf("%v %.2f", f.Constant, f.Slope)
	}
	// The slow gemms lift the fit a little; spins are one size.
	if fits["spin"] != "true 0.00" || !strings.HasPrefix(fits["gemm"], "false 1.0") || !an.sized["gemm"] || an.sized["spin"] || !an.sized["bcast"] {
		t.Errorf("fits %v, sized %v", fits, an.sized)
	}
}

// 'anomalies' prints the flagged executions, most above expectation first,
// at most anomalyRows of them and a count of the rest, then a fit per
// routine; it takes config=, policy=, tolerance= and level=.
func TestAnomaliesVerb(t *testing.T) {
	s := newSession(t)
	ctx := context.Background()
	out := &textOut{}
	tr, planted := plantedTrace(4) // 30 planted
	s.sweeps = append(s.sweeps, plantedSweep(t, tr))
	if err := s.Exec(ctx, "anomalies", out); err != nil {
		t.Fatal(err)
	}
	got := out.b.String()
	head := fmt.Sprintf("anomalies of config 0 (), eager at 0, 2 ranks: %d of 380 kernel executions above the 95%% prediction interval of their routine\n", len(planted))
	if !strings.HasPrefix(got, head) {
		t.Errorf("head: want %q in\n%s", head, got)
	}
	rows := regexp.MustCompile(`(?m)^ +1 +gemm +[0-9.]+ +[0-9.]+ [mµ]s +[0-9.]+ [mµ]s +[0-9.]+ [mµ]s +([0-9.]+)x$`).FindAllStringSubmatch(got, -1)
	if len(rows) != anomalyRows || !strings.Contains(got, fmt.Sprintf("(and %d more)\n", len(planted)-anomalyRows)) {
		t.Errorf("%d rows of rank 1's gemms, want %d and a count of the rest:\n%s", len(rows), anomalyRows, got)
	}
	for i := 1; i < len(rows); i++ {
		if rows[i][1] > rows[i-1][1] {
			t.Errorf("row %d (%sx) above row %d (%sx): want the most anomalous first", i, rows[i][1], i-1, rows[i-1][1])
		}
	}
	for _, re := range []string{
		`(?m)^ +gemm +240 +[0-9.e-]+ s · flops\^(0\.9|1\.0)[0-9]* +x[0-9.]+ +30$`,
		`(?m)^ +bcast +60 +[0-9.e-]+ s · bytes\^0\.9[0-9]+ +x[0-9.]+ +0$`,
		`(?m)^ +spin +80 +(1\.99|2\.00)[0-9] ms \(no size: one duration\) +x[0-9.]+ +0$`,
		`left out: 2 executions too short to time`,
	} {
		if !regexp.MustCompile(re).MatchString(got) {
			t.Errorf("no line %s in\n%s", re, got)
		}
	}
	// A wider interval flags fewer.
	out.b.Reset()
	if err := s.Exec(ctx, "anomalies level=99.99% config=0 policy=eager tolerance=0", out); err != nil {
		t.Fatal(err)
	}
	var n99 int
	fmt.Sscanf(out.b.String()[strings.Index(out.b.String(), ": ")+2:], "%d", &n99)
	if !strings.Contains(out.b.String(), "above the 99.99% prediction interval") || n99 > len(planted) {
		t.Errorf("level 99.99%%: %d flagged:\n%s", n99, out.b.String())
	}
}

// 'anomalies' errors say what is missing or wrong, and where.
func TestAnomaliesErrors(t *testing.T) {
	s := newSession(t)
	ctx := context.Background()
	out := &textOut{}
	if err := s.Exec(ctx, "anomalies", out); err == nil || !strings.Contains(err.Error(), "no results yet: run evaluate or tune first") {
		t.Errorf("no sweep: %v", err)
	}
	s.sweeps = append(s.sweeps, knownSweep(t))
	if err := s.Exec(ctx, "anomalies", out); err == nil || !strings.Contains(err.Error(), "sweep 1 has no timelines: run 'trace on', then evaluate or tune again") {
		t.Errorf("untraced sweep: %v", err)
	}
	tr, _ := plantedTrace(10)
	s.sweeps = append(s.sweeps, plantedSweep(t, tr))
	skipped := sweep.TraceEvent{Index: 0, Policy: "eager", Tolerance: 0.5, Ranks: []sweep.RankTrace{{Events: []sweep.Span{{Routine: "gemm", Skipped: true, Size: 1}}}}}
	s.sweeps = append(s.sweeps, plantedSweep(t, skipped))
	for line, want := range map[string]string{
		"anomalies":                   "column 1: the traced run of config 0, eager at 2^-1, executed no kernel (all were skipped): trace a run at a smaller tolerance",
		"anomalies level=1":           "column 17: level \"1\": want a probability in (0, 1), like 0.95 or 95%",
		"anomalies level=x":           "column 17: level \"x\"",
		"anomalies config=-1":         "column 18: \"-1\" is not a configuration index",
		"anomalies policy=nope":       "column 18: ",
		"anomalies tolerance=1,2^-1":  "column 21: one tolerance only",
		"anomalies gemm":              "column 11: anomalies takes config=, policy=, tolerance= and level=, not \"gemm\"",
		"anomalies config=3 level=.9": "column 11: no traced run has config=3: the traced runs are of configurations 0",
	} {
		if err := s.Exec(ctx, line, out); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant %s...", line, err, want)
		}
	}
}

// 'plot anomalies' draws a panel per routine, the anomalies ringed in black;
// 'plot gantt' outlines the same executions.
func TestAnomaliesFigures(t *testing.T) {
	tr, planted := plantedTrace(10)
	sw := plantedSweep(t, tr)
	f, err := MakeFigure(sw, "anomalies", FigureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf("anomalies of config 0, eager at 0: %d of 380 kernel executions above the 95%% prediction interval\n", len(planted)),
		"gemm: 240 executions, fitted duration ", fmt.Sprintf(", %d anomalous\n", len(planted)),
		"spin: 80 executions, fitted duration ", "bcast: 60 executions", ", 0 anomalous\n",
	} {
		if !strings.Contains(f.Summary, want) {
			t.Errorf("summary has no %q:\n%s", want, f.Summary)
		}
	}
	img, err := png.Decode(bytes.NewReader(f.PNG))
	if err != nil {
		t.Fatal(err)
	}
	if sz := img.Bounds().Size(); sz.X != 800 || sz.Y != 450 || !bytes.Contains(f.SVG, []byte("<svg")) {
		t.Errorf("png %v", sz)
	}
	// The gemm panel (the first: it has the anomalies) has the rings: more
	// black than the same figure with no anomaly.
	dark := func(b []byte) int {
		n := 0
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		for y := 80; y < 380; y++ {
			for x := 70; x < 260; x++ {
				r, g, b, _ := img.At(x, y).RGBA()
				if r>>8 < 110 && g>>8 < 110 && b>>8 < 110 { // black and its antialiased edge; no routine's color
					n++
				}
			}
		}
		return n
	}
	plain, _ := plantedTrace(1 << 30)
	plain.Ranks[1].Events[0].EndS = plain.Ranks[1].Events[0].StartS + 1e-4 // the only planted one, made normal
	fp, err := MakeFigure(plantedSweep(t, plain), "anomalies", FigureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fp.Summary, ": 0 of 380 kernel executions") {
		t.Fatalf("plain trace:\n%s", fp.Summary)
	}
	if with, without := dark(f.PNG), dark(fp.PNG); with < without+100 {
		t.Errorf("gemm panel: %d dark pixels with %d anomalies, %d without", with, len(planted), without)
	}

	g, err := MakeFigure(sw, "gantt", FigureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(g.Summary, fmt.Sprintf("\noutlined in black: %d anomalous kernel executions (see 'anomalies')\n", len(planted))) {
		t.Errorf("gantt summary:\n%s", g.Summary)
	}
	gp, err := MakeFigure(plantedSweep(t, plain), "gantt", FigureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(gp.Summary, "outlined") {
		t.Errorf("gantt without anomalies:\n%s", gp.Summary)
	}
	// The outlines: many more dark pixels in rank 1's lane (the lower half).
	lane := func(b []byte) int {
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for y := 240; y < 390; y++ {
			for x := 60; x < 680; x++ {
				r, g, b, _ := img.At(x, y).RGBA()
				if r>>8 < 60 && g>>8 < 60 && b>>8 < 60 {
					n++
				}
			}
		}
		return n
	}
	if with, without := lane(g.PNG), lane(gp.PNG); with < without+500 {
		t.Errorf("gantt: %d dark pixels in rank 1's lane with the outlines, %d without", with, without)
	} else {
		t.Logf("gantt: %d dark pixels in rank 1's lane with the outlines, %d without", with, without)
	}
	// A trace without sizes (journaled before sizes were recorded) fits
	// each routine as one size.
	old := tracedSweep(t)
	if _, err := MakeFigure(old, "anomalies", FigureOptions{}); err != nil {
		t.Errorf("plot anomalies on a trace without sizes: %v", err)
	}
}

// The synthetic workload with planted slow executions on one rank (every
// 4th kernel of rank 1 four times as long), traced at tolerance 0 so that
// every kernel runs: 'anomalies' finds them with precision and recall of at
// least 0.9, among all the executions it flags (messages included).
func TestAnomaliesFindPlantedSlowKernels(t *testing.T) {
	s := agentSession(t)
	ctx := context.Background()
	out := &textOut{}
	// Few steps of many kernels: the messages (2 per step and rank), whose
	// durations are not planted, are few beside the 40 planted spins, so
	// that the 2.5% of normal executions a 95% interval may leave above it
	// cannot bring the precision under 0.9. Kernels of 2 ms, the planted
	// ones 4 times as long: a normal one is flagged only if held up about
	// 4 ms, longer than another process on the core usually holds it.
	const steps, count, every = 8, 20, 4
	start := time.Now()
	for _, l := range []string{"ranks 2", fmt.Sprintf("workload synthetic grid=1x2 steps=%d count=%d mean_us=2000 slow_rank=1 slow_pct=400 slow_every=%d", steps, count, every),
		"trace on", "policy eager", "tolerance 0", "tune", "anomalies"} {
		if err := s.Exec(ctx, l, out); err != nil {
			t.Fatalf("%s: %v\n%s", l, err, out.b.String())
		}
	}
	t.Logf("sweep and analysis in %v", time.Since(start))
	tr, err := pickTrace(s.Last(), FigureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	an, err := findAnomalies(tr, anomalyLevel)
	if err != nil {
		t.Fatal(err)
	}
	// The planted set: rank 1's spins i = step·count + j with i % every == 0.
	planted := map[[2]int]bool{}
	for ri, rt := range tr.Ranks {
		i := 0
		for k, e := range rt.Events {
			if e.Routine != "spin" {
				continue
			}
			if rt.Rank == 1 && i%every == 0 {
				planted[[2]int{ri, k}] = true
			}
			i++
		}
		if i != steps*count || rt.Dropped != 0 {
			t.Fatalf("rank %d: %d spins traced (%d dropped), want %d", rt.Rank, i, rt.Dropped, steps*count)
		}
	}
	p, r, wrong := precisionRecall(an, planted)
	t.Logf("precision %.3f, recall %.3f (%d flagged, %d planted)", p, r, len(an.report.Anomalies), len(planted))
	if p < 0.9 || r < 0.9 {
		t.Errorf("precision %.3f recall %.3f, want both >= 0.9:\n%s\n%s", p, r, strings.Join(wrong, "\n"), out.b.String())
	} else if len(wrong) > 0 {
		t.Logf("misses:\n%s", strings.Join(wrong, "\n"))
	}
	if !strings.Contains(out.b.String(), fmt.Sprintf("%d of %d kernel executions above", len(an.report.Anomalies), len(an.execs))) {
		t.Errorf("anomalies printed:\n%s", out.b.String())
	}
}

// A broadcast on 1 process (next to nothing) and one on 4 (a transfer) are
// fitted apart: together on their bytes alone, the 4-process ones stood
// above a steep curve and were flagged.
func TestAnomaliesCommunicatorSizesApart(t *testing.T) {
	var spans []sweep.Span
	t0 := 0.0
	for i := 0; i < 40; i++ {
		bytes := float64(int(1) << (10 + i%8))
		d := 1e-5 + bytes/2e9*(1+0.05*float64(i%3))
		spans = append(spans, sweep.Span{Routine: "bcast", StartS: t0, EndS: t0 + d, Comm: true, Size: bytes, Procs: 4})
		t0 += d
		spans = append(spans, sweep.Span{Routine: "bcast", StartS: t0, EndS: t0 + 3e-7*(1+0.05*float64(i%3)), Comm: true, Size: bytes, Procs: 1})
		t0 += 1e-6
	}
	tr := sweep.TraceEvent{Ranks: []sweep.RankTrace{{Rank: 0, Events: spans}}}
	an, err := findAnomalies(&tr, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	var routines []string
	for _, f := range an.report.Fits {
		routines = append(routines, f.Routine)
	}
	slices.Sort(routines)
	if !slices.Equal(routines, []string{"bcast p=1", "bcast p=4"}) || len(an.report.Anomalies) != 0 {
		t.Errorf("fits of %v, %d anomalies; want bcast p=1 and p=4 fitted apart, none flagged", routines, len(an.report.Anomalies))
	}
}

// Computation's anomalies come first, the communication's after them under
// a heading that says a call's time includes the wait for its partners: a
// receive waiting for a late sender, hundreds of times its expected time,
// had filled the list ahead of slow kernels.
func TestAnomaliesComputationFirst(t *testing.T) {
	tr, _ := plantedTrace(4)
	for i, e := range tr.Ranks[0].Events {
		if e.Routine == "bcast" {
			tr.Ranks[0].Events[i].EndS = e.StartS + 1000*(e.EndS-e.StartS) // a late root
			break
		}
	}
	s := newSession(t)
	s.sweeps = append(s.sweeps, plantedSweep(t, tr))
	out := &textOut{}
	if err := s.Exec(context.Background(), "anomalies", out); err != nil {
		t.Fatal(err)
	}
	got := out.b.String()
	comp, comm := strings.Index(got, "computation:\n"), strings.Index(got, "communication (a call's time includes the wait for its partners")
	bcast := regexp.MustCompile(`(?m)^ +0 +bcast `).FindStringIndex(got)
	gemm := regexp.MustCompile(`(?m)^ +1 +gemm `).FindStringIndex(got)
	if comp < 0 || comm < comp || bcast == nil || gemm == nil || bcast[0] < comm || gemm[0] > comm {
		t.Errorf("want the gemms under computation, then the bcast under communication:\n%s", got)
	}
}
