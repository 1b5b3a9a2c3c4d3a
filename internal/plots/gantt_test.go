package plots

import (
	"bytes"
	"encoding/xml"
	"image/color"
	"io"
	"math"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// knownLanes is a two-rank trace in seconds: rank 0 runs gemm and bcast and
// skips a gemm; rank 1 runs gemm, an unknown computation routine and an
// anomalous allreduce. (The skipped gemm's Anomalous is ignored.)
func knownLanes() []GanttLane {
	return []GanttLane{
		{Rank: 0, Spans: []GanttSpan{
			{Routine: "gemm", Start: 0, End: 0.002},
			{Routine: "bcast", Start: 0.002, End: 0.003, Comm: true},
			{Routine: "gemm", Start: 0.004, End: 0.004, Predicted: 0.002, Skipped: true, Anomalous: true},
		}},
		{Rank: 1, Dropped: 3, Spans: []GanttSpan{
			{Routine: "gemm", Start: 0.0005, End: 0.0025},
			{Routine: "frob", Start: 0.0025, End: 0.0028},
			{Routine: "allreduce", Start: 0.003, End: 0.005, Comm: true, Anomalous: true},
		}},
	}
}

func TestGanttMapping(t *testing.T) {
	ly := layoutGantt(knownLanes())
	if ly.lanes != 2 || ly.unit != "ms" || ly.scale != 1e3 || math.Abs(ly.xmax-5) > 1e-9 || ly.skipped != 1 || ly.dropped != 3 || ly.flagged != 1 {
		t.Fatalf("layout: %d lanes, unit %s x%v, xmax %v, %d skipped, %d dropped, %d flagged; want 2, ms x1000, 5, 1, 3, 1",
			ly.lanes, ly.unit, ly.scale, ly.xmax, ly.skipped, ly.dropped, ly.flagged)
	}
	gemm, bcast := routineColor("gemm", false), routineColor("bcast", true)
	want := []ganttBox{
		{0, 0, 2, gemm, false, false}, {0, 2, 3, bcast, false, false}, {0, 4, 4, gemm, true, false},
		{1, 0.5, 2.5, gemm, false, false}, {1, 2.5, 2.8, routineColor("frob", false), false, false}, {1, 3, 5, routineColor("allreduce", true), false, true},
	}
	if len(ly.boxes) != len(want) {
		t.Fatalf("%d boxes, want %d", len(ly.boxes), len(want))
	}
	for i, b := range ly.boxes {
		w := want[i]
		if b.lane != w.lane || math.Abs(b.x0-w.x0) > 1e-9 || math.Abs(b.x1-w.x1) > 1e-9 || b.color != w.color || b.skipped != w.skipped || b.flagged != w.flagged {
			t.Errorf("box %d: %+v, want %+v", i, b, w)
		}
	}
	// The legend: computation routines, then communication, palette order.
	var names []string
	for _, l := range ly.legend {
		names = append(names, l.routine)
	}
	if got := fmtList(names); got != "gemm frob bcast allreduce" {
		t.Errorf("legend order %q", got)
	}
	// Rank 0 on top: its lane is at y = 1.
	if len(ly.yTicks) != 2 || ly.yTicks[0].Value != 1 || ly.yTicks[0].Label != "0" || ly.yTicks[1].Value != 0 || ly.yTicks[1].Label != "1" {
		t.Errorf("lane ticks %+v", ly.yTicks)
	}

	p, err := Gantt(knownLanes(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if p.X.Min != 0 || p.X.Max < 5 || p.Y.Min != -0.5 || p.Y.Max != 1.5 {
		t.Errorf("ranges x [%v, %v] y [%v, %v]: want x to cover [0, 5] ms and y the 2 lanes", p.X.Min, p.X.Max, p.Y.Min, p.Y.Max)
	}
	if p.X.Label.Text != "time from the run's start (ms); 3 kernels past the per-rank cap not shown" {
		t.Errorf("x label %q", p.X.Label.Text)
	}
	// The legend's width is kept free right of the lanes.
	r := p.Legend.Rectangle(draw0())
	gb := (&ganttPlotter{ly: ly}).GlyphBoxes(p)
	if len(gb) != 1 || gb[0].X != 1 || gb[0].Size().X < r.Max.X-r.Min.X+legendGap {
		t.Errorf("legend %v wide, reserved %+v", r.Max.X-r.Min.X, gb)
	}
}

func fmtList(xs []string) string {
	var b bytes.Buffer
	for i, x := range xs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(x)
	}
	return b.String()
}

// Every routine has one color in every call; computation routines are cool
// (hues from green to violet), communication ones warm (reds, oranges,
// pinks), known or not, and the palette's colors are distinct; a skipped
// kernel's fill is its routine's color, translucent.
func TestGanttColors(t *testing.T) {
	comp := []string{"gemm", "syrk", "trsm", "trmm", "potrf", "trtri", "geqrf", "larft", "larfb", "spin"}
	comm := []string{"bcast", "reduce", "allreduce", "gather", "allgather", "scatter", "send", "recv", "isend", "irecv"}
	for _, set := range []struct {
		names []string
		comm  bool
		warm  bool
	}{{append(comp, "newblas", "x"), false, false}, {append(comm, "alltoall", "y"), true, true}} {
		seen := map[color.RGBA]string{}
		for _, r := range set.names {
			c := routineColor(r, set.comm)
			h := hue(c)
			if warm := h < 60 || h >= 300; c != routineColor(r, set.comm) || warm != set.warm {
				t.Errorf("%s (comm %v): %v, hue %.0f: not a stable color of its family", r, set.comm, c, h)
			}
			if o, ok := seen[c]; ok {
				t.Errorf("%s and %s share %v", r, o, c)
			}
			seen[c] = r
			if p := paleOf(c); p.R != c.R || p.G != c.G || p.B != c.B || p.A >= 255 {
				t.Errorf("skipped %s: %v is not the routine's color, translucent", r, p)
			}
		}
	}
}

// hue is c's hue in degrees.
func hue(c color.RGBA) float64 {
	r, g, b := float64(c.R), float64(c.G), float64(c.B)
	mx, mn := math.Max(r, math.Max(g, b)), math.Min(r, math.Min(g, b))
	if mx == mn {
		return 0
	}
	var h float64
	switch mx {
	case r:
		h = math.Mod((g-b)/(mx-mn), 6)
	case g:
		h = (b-r)/(mx-mn) + 2
	default:
		h = (r-g)/(mx-mn) + 4
	}
	return math.Mod(60*h+360, 360)
}

// The PNG shows the boxes; PNG and SVG decode.
func TestGanttEncodes(t *testing.T) {
	p, err := Gantt(knownLanes(), "Timeline")
	if err != nil {
		t.Fatal(err)
	}
	img := pngOf(t, p)
	found := map[color.RGBA]int{}
	for y := 0; y < 450; y++ {
		for x := 0; x < 800; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			found[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), 255}]++
		}
	}
	for _, r := range []struct {
		name string
		comm bool
	}{{"gemm", false}, {"bcast", true}, {"allreduce", true}} {
		// Boxes are large; the legend's thumbnail alone is about 200 pixels.
		if n := found[routineColor(r.name, r.comm)]; n < 1000 {
			t.Errorf("%d pixels of %s's color", n, r.name)
		}
	}
	s, err := Encode(p, "svg")
	if err != nil {
		t.Fatal(err)
	}
	wellFormed(t, s)
}

func wellFormed(t *testing.T, s []byte) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(s))
	for {
		if _, err := dec.Token(); err != nil {
			if err != io.EOF {
				t.Fatalf("svg is not well-formed XML: %v", err)
			}
			break
		}
	}
	if !bytes.Contains(s, []byte("<svg")) {
		t.Error("no <svg> element")
	}
}

// An anomalous kernel is outlined around its box (rank 1's allreduce,
// 3-5 ms, the lower lane): the lower lane's right part has an outline's
// worth of dark pixels more than without anomalies.
func TestGanttOutlinesAnomalies(t *testing.T) {
	dark := func(lanes []GanttLane) int {
		p, err := Gantt(lanes, "t")
		if err != nil {
			t.Fatal(err)
		}
		img := pngOf(t, p)
		n := 0
		for y := 210; y < 340; y++ { // the lower lane, above the x axis
			for x := 300; x < 700; x++ { // 2.2 ms to the legend
				r, g, b, _ := img.At(x, y).RGBA()
				if r>>8 < 60 && g>>8 < 60 && b>>8 < 60 {
					n++
				}
			}
		}
		return n
	}
	plain := knownLanes()
	for i := range plain {
		for k := range plain[i].Spans {
			plain[i].Spans[k].Anomalous = false
		}
	}
	with, without := dark(knownLanes()), dark(plain)
	// The outline runs around a box about 250 px wide and 100 px high.
	if with-without < 500 {
		t.Errorf("%d dark pixels with the anomalous allreduce, %d without: want an outline", with, without)
	}
}

// No lanes, lanes without spans, and spans with NaN or negative times draw
// without panicking.
func TestGanttEmpty(t *testing.T) {
	for _, lanes := range [][]GanttLane{
		nil,
		{{Rank: 0}, {Rank: 1}},
		{{Rank: 0, Spans: []GanttSpan{{Routine: "gemm", Start: math.NaN(), End: math.Inf(1)}, {Routine: "", Start: -1, End: -2, Skipped: true, Predicted: math.NaN()}}}},
		{{Rank: 0, Spans: []GanttSpan{{Routine: "gemm", Skipped: true}}}},
	} {
		p, err := Gantt(lanes, "t")
		if err != nil {
			t.Fatal(err)
		}
		if !(p.X.Max > p.X.Min) || !(p.Y.Max > p.Y.Min) {
			t.Errorf("%d lanes: ranges x [%v, %v] y [%v, %v]", len(lanes), p.X.Min, p.X.Max, p.Y.Min, p.Y.Max)
		}
		for _, f := range []string{"png", "svg"} {
			if _, err := Encode(p, f); err != nil {
				t.Fatalf("%d lanes: %s: %v", len(lanes), f, err)
			}
		}
	}
}

// Thousands of kernels become at most a rectangle per column of each band,
// and render in well under a second or two.
func TestGanttManySpans(t *testing.T) {
	lanes := make([]GanttLane, 4)
	for r := range lanes {
		lanes[r].Rank = r
		at := 0.0
		for k := 0; k < 20000; k++ {
			name, comm := "gemm", false
			if k%3 == 1 {
				name, comm = "bcast", true
			}
			d := 1e-5 * float64(1+k%7)
			lanes[r].Spans = append(lanes[r].Spans, GanttSpan{Routine: name, Start: at, End: at + d, Comm: comm, Skipped: k%5 == 4})
			at += d + 1e-6
		}
	}
	var cs columns
	n := 800
	cs.cover, cs.who = make([]vg.Length, n), make([]int, n)
	cs.reset()
	ly := layoutGantt(lanes[:1])
	for _, b := range ly.boxes {
		cs.add(vg.Length(b.x0/ly.xmax)*vg.Length(n)*colWidth, vg.Length(b.x1/ly.xmax)*vg.Length(n)*colWidth, minBox, b.color)
	}
	if runs := cs.runs(nil); len(runs) > n || len(runs) == 0 {
		t.Errorf("%d rectangles for 20000 kernels over %d columns", len(runs), n)
	}
	p, err := Gantt(lanes, "t")
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	if _, err := Encode(p, "png"); err != nil {
		t.Fatal(err)
	}
	t.Logf("80000 kernels: png in %v", time.Since(t0))
}

// A title wider than the figure is cut to fit, and says so.
func TestGanttLongTitle(t *testing.T) {
	long := "Timeline of grid=1x4 steps=40 count=8 kinds=3 mean_us=300 spread=10 slow_rank=-1 slow_pct=200 msg=256, eager at 2^-3"
	p, err := Gantt(knownLanes(), long)
	if err != nil {
		t.Fatal(err)
	}
	if w := p.Title.TextStyle.Width(p.Title.Text); w > Width || !strings.HasSuffix(p.Title.Text, "...") || !strings.HasPrefix(long, strings.TrimSuffix(p.Title.Text, "...")) {
		t.Errorf("title %q (%v wide, the figure %v)", p.Title.Text, w, Width)
	}
	if p, _ := Gantt(knownLanes(), "Timeline of n=1024, eager at 2^-3"); p.Title.Text != "Timeline of n=1024, eager at 2^-3" {
		t.Errorf("a short title changed: %q", p.Title.Text)
	}
}

func TestLinearTicks(t *testing.T) {
	var labels []string
	for _, tk := range (linearTicks{}).Ticks(0, 31.5) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := fmtList(labels); got != "0 5 10 15 20 25 30" {
		t.Errorf("ticks over [0, 31.5]: %s", got)
	}
	labels = labels[:0]
	for _, tk := range (linearTicks{}).Ticks(0, 0.9) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := fmtList(labels); got != "0.0 0.2 0.4 0.6 0.8" {
		t.Errorf("ticks over [0, 0.9]: %s", got)
	}
	if ts := (linearTicks{}).Ticks(1, 1); ts != nil {
		t.Errorf("empty range: %v", ts)
	}
}

func draw0() draw.Canvas { return draw.Canvas{} }
