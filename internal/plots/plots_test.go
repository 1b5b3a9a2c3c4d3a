package plots

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
)

var pts = []PolicyPoint{
	{Policy: "eager", Tolerance: 0.5, Speedup: 4.1, MeanError: 0.058, MaxError: 0.12},
	{Policy: "eager", Tolerance: 0.125, Speedup: 3.4, MeanError: 0.044, MaxError: 0.10},
	{Policy: "eager", Tolerance: 0.03125, Speedup: 1.7, MeanError: 0.049, MaxError: 0.33},
	{Policy: "conditional", Tolerance: 0.5, Speedup: 3.4, MeanError: 0, MaxError: 0.16},
	{Policy: "conditional", Tolerance: 0.03125, Speedup: 1.1, MeanError: 0.092, MaxError: 0.26},
}

func TestSpeedupMapping(t *testing.T) {
	p, err := Speedup(pts)
	if err != nil {
		t.Fatal(err)
	}
	// x = -log2(tolerance): 2^-1 at 1 (left), 2^-5 at 5, padded by 0.3.
	if p.X.Min != 0.7 || p.X.Max != 5.3 {
		t.Errorf("x range [%v, %v], want [0.7, 5.3]", p.X.Min, p.X.Max)
	}
	if p.Y.Min != 0 || math.Abs(p.Y.Max-4.1*1.15) > 1e-12 {
		t.Errorf("y range [%v, %v], want [0, %v]", p.Y.Min, p.Y.Max, 4.1*1.15)
	}
	order, m := byPolicy(pts)
	if len(order) != 2 || order[0] != "eager" || len(m["eager"]) != 3 || m["eager"][0].Tolerance != 0.5 || m["conditional"][1].Tolerance != 0.03125 {
		t.Errorf("series %v %v", order, m)
	}
	ticks := tolTicks{}.Ticks(0.7, 5.3)
	if len(ticks) != 5 || ticks[0].Label != "2^-1" || ticks[4].Label != "2^-5" {
		t.Errorf("ticks %v", ticks)
	}
}

func TestErrorMapping(t *testing.T) {
	p, err := Error(pts, 0.03)
	if err != nil {
		t.Fatal(err)
	}
	// A zero mean error is drawn at the floor, not lost or NaN on the log axis.
	if p.Y.Min <= 0 || p.Y.Min > errFloor || p.Y.Max < 0.5 {
		t.Errorf("y range [%v, %v]: want the floor below and the ideal 2^-1 = 50%% inside", p.Y.Min, p.Y.Max)
	}
	// The noise floor's line is inside the range, however high it is.
	high, err := Error(pts, 2)
	if err != nil {
		t.Fatal(err)
	}
	if high.Y.Max < 2 || high.Y.Max <= p.Y.Max {
		t.Errorf("noise floor 200%%: y up to %v (with 3%%: %v); want the line at 2 inside", high.Y.Max, p.Y.Max)
	}
	if got := (percentLogTicks{}).Ticks(0.01, 0.5); len(got) == 0 || got[0].Label != "1%" || got[len(got)-1].Label != "50%" {
		t.Errorf("percent ticks %v", got)
	}
}

// Empty and degenerate data draw without panicking and still encode.
func TestDegenerateData(t *testing.T) {
	if p, err := Speedup(nil); err != nil {
		t.Fatal(err)
	} else if _, err := Encode(p, "png"); err != nil {
		t.Fatal(err)
	}
	if p, err := Error([]PolicyPoint{{Policy: "x", Tolerance: 0, MeanError: math.NaN()}}, math.NaN()); err != nil {
		t.Fatal(err)
	} else if _, err := Encode(p, "svg"); err != nil {
		t.Fatal(err)
	}
	if p, err := Kernels([]Kernel{{Key: "a", Samples: 0, RelHalf: math.NaN()}, {Key: "b", Samples: 3, RelHalf: 0}}, 0); err != nil {
		t.Fatal(err)
	} else if _, err := Encode(p, "png"); err != nil {
		t.Fatal(err)
	}
	if p, err := Configs([]Config{{Label: "n=1", Ref: math.NaN()}}, nil); err != nil {
		t.Fatal(err)
	} else if _, err := Encode(p, "png"); err != nil {
		t.Fatal(err)
	}
	if p, err := Path([]PathBar{{Label: "a", Ref: math.NaN(), Idle: -1}}, "t"); err != nil {
		t.Fatal(err)
	} else if _, err := Encode(p, "png"); err != nil {
		t.Fatal(err)
	}
}

func TestEncodeDecodes(t *testing.T) {
	p, err := Configs([]Config{
		{Label: "grid=2x2 b=64", Ref: 0.2, RefLo: 0.19, RefHi: 0.21, Predicted: map[string]float64{"eager 2^-3": 0.21}, Best: true},
		{Label: "grid=1x4 b=64", Ref: 0.3, RefLo: 0.28, RefHi: 0.33, Predicted: map[string]float64{"eager 2^-3": 0.18}, Chosen: true},
	}, []string{"eager 2^-3"})
	if err != nil {
		t.Fatal(err)
	}
	if p.Y.Max < 0.33 {
		t.Errorf("y max %v hides the top of an interval", p.Y.Max)
	}
	pngOf(t, p)
	s, err := Encode(p, "svg")
	if err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(s))
	for {
		if _, err := dec.Token(); err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("svg is not well-formed XML: %v", err)
			}
			break
		}
	}
	if !bytes.Contains(s, []byte("<svg")) {
		t.Error("no <svg> element")
	}
	if _, err := Encode(p, "bmp"); err == nil {
		t.Error("an unknown format encoded")
	}
}

// pngOf encodes p as PNG, decodes it, and checks its size (800x450).
func pngOf(t *testing.T, p *plot.Plot) image.Image {
	t.Helper()
	b, err := Encode(p, "png")
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if sz := img.Bounds().Size(); sz.X != 800 || sz.Y != 450 {
		t.Errorf("png %v, want 800x450", sz)
	}
	return img
}

// TestSVGFallbackFonts checks that an SVG names, after the Liberation font
// it was laid out with, the fonts of the same widths and a generic family.
func TestSVGFallbackFonts(t *testing.T) {
	p, err := Speedup([]PolicyPoint{{Policy: "eager", Tolerance: 0.5, Speedup: 3}, {Policy: "eager", Tolerance: 0.125, Speedup: 2}})
	if err != nil {
		t.Fatal(err)
	}
	for name, enc := range map[string]func() ([]byte, error){
		"Encode":    func() ([]byte, error) { return Encode(p, "svg") },
		"EncodeRow": func() ([]byte, error) { return EncodeRow([]*plot.Plot{p, p}, "svg") },
	} {
		b, err := enc()
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if strings.Contains(s, "font-family:Liberation Serif;") || !strings.Contains(s, "font-family:'Liberation Serif','Times New Roman',Times,serif;") {
			t.Errorf("%s: the SVG's fonts have no fallbacks: %.300s", name, s[strings.Index(s, "font-family"):])
		}
	}
	png, err := Encode(p, "png")
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Errorf("png: %v", err)
	}
}

// Past MaxBars configurations are points against their index: the axis says
// so, nothing is drawn for a series without values, the best and the chosen
// are named with their index, and the figure encodes.
func TestConfigsManyAsPoints(t *testing.T) {
	var cs []Config
	for i := range 5 * MaxBars {
		cs = append(cs, Config{Label: fmt.Sprintf("b=%d", i), Ref: math.NaN(), Predicted: map[string]float64{"eager 2^-1": 0.1 + 0.001*float64(i)}, Chosen: i == 7})
	}
	p, err := Configs(cs, []string{"eager 2^-1"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p.X.Label.Text, "index") || p.X.Max != float64(len(cs)-1) {
		t.Errorf("x axis %q up to %v", p.X.Label.Text, p.X.Max)
	}
	svg, err := Encode(p, "svg")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(svg, []byte("chosen: 7")) || !bytes.Contains(svg, []byte("predicted: eager 2^-1")) || bytes.Contains(svg, []byte("reference")) {
		t.Errorf("legend: want the chosen by index and the series, no reference line without references")
	}
	if p.Y.Max < 0.1+0.001*float64(len(cs)-1) {
		t.Errorf("y max %v hides the last configuration", p.Y.Max)
	}
	pngOf(t, p)
}

// A log axis over a narrow range (18 to 27 ms, where only 20 ms is a
// 1-9 step) still gets several labelled ticks, in durations.
func TestLogTicksNarrowRange(t *testing.T) {
	ts := logTicks{label: durationLabel}.Ticks(0.018, 0.027)
	var labels []string
	for _, tk := range ts {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if len(labels) < 2 || !strings.HasSuffix(labels[0], "ms") {
		t.Errorf("ticks from 18 to 27 ms labelled %q, want two or more in ms", labels)
	}
	if wide := (logTicks{label: durationLabel}).Ticks(1e-4, 1); len(wide) < 10 {
		t.Errorf("ticks over four decades: %d", len(wide))
	}
	// Across a power of ten, the ticks reach the top of the range: 0.85
	// to 1.7 ms had 0.9 and 1 ms only, the data above them unlabelled.
	labels = nil
	top := 0.0
	for _, tk := range (logTicks{label: durationLabel}).Ticks(0.85e-3, 1.7e-3) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
			top = tk.Value
		}
	}
	if top < 1.4e-3 || len(labels) < 2 {
		t.Errorf("ticks from 0.85 to 1.7 ms labelled %q: want two or more, up to 1.4 ms or more", labels)
	}
}

// A narrow panel asks for fewer labels: 4, not 8 (the middle panel of
// three had its labels run together).
func TestLinearTicksFewer(t *testing.T) {
	count := func(lt linearTicks) int {
		n := 0
		for _, tk := range lt.Ticks(0, 0.0036) {
			if tk.Label != "" {
				n++
			}
		}
		return n
	}
	if few, many := count(linearTicks{labels: 4}), count(linearTicks{}); few < 3 || few > 5 || many < 7 {
		t.Errorf("labels over 0 to 3.6 ms: %d asking for 4, %d asking for 8", few, many)
	}
}

// A reference interval that reaches below 0 (two or three runs, a wide
// t-interval) is drawn down to 0 only: its whisker crossed the axis's
// labels.
func TestConfigsIntervalStopsAtZero(t *testing.T) {
	cs := []Config{{Label: "b=32", Ref: 1, RefLo: -0.5, RefHi: 2.5, Predicted: map[string]float64{"eager 2^-1": 1}},
		{Label: "b=64", Ref: 2, RefLo: 1.5, RefHi: 2.5, Predicted: map[string]float64{"eager 2^-1": 2}}}
	p, err := Configs(cs, []string{"eager 2^-1"})
	if err != nil {
		t.Fatal(err)
	}
	if errs := refErrors(cs); errs[0].Low != 1 || errs[0].High != 1.5 || errs[1].Low != 0.5 {
		t.Errorf("whiskers %+v: want the first down to 0 (1 below its mean), up to 2.5", errs)
	}
	pngOf(t, p)
}

// A tune sweep's configurations have no references: the legend has no
// reference entry.
func TestConfigsWithoutReferences(t *testing.T) {
	cs := []Config{{Label: "b=32", Ref: math.NaN(), Predicted: map[string]float64{"eager 2^-1": 1}, Chosen: true},
		{Label: "b=64", Ref: math.NaN(), Predicted: map[string]float64{"eager 2^-1": 2}}}
	p, err := Configs(cs, []string{"eager 2^-1"})
	if err != nil {
		t.Fatal(err)
	}
	svg, err := Encode(p, "svg")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(svg, []byte("reference")) || !bytes.Contains(svg, []byte("eager 2^-1")) {
		t.Errorf("legend of a tune sweep's configurations: want the series and no reference")
	}
}

// The speed-up axis is labelled at a 1-2-5 step, 4 to 10 labels, and 1
// (full execution's line) is always labelled.
func TestSpeedupTicks(t *testing.T) {
	for _, max := range []float64{1.15, 1.8, 6.9, 14.7, 21, 120} {
		ts := speedupTicks{}.Ticks(0, max)
		one := false
		for _, tk := range ts {
			one = one || tk.Value == 1 && tk.Label == "1"
		}
		if len(ts) < 4 || len(ts) > 11 || !one {
			t.Errorf("0..%g: %d ticks %v, want 4 to 11 with 1 labelled", max, len(ts), ts)
		}
		// No label prints over 1's (0 did, a notebook review's 0..20 axis).
		for _, tk := range ts {
			if tk.Label != "" && tk.Value != 1 && math.Abs(tk.Value-1) < max/20 {
				t.Errorf("0..%g: label %q at %g, over 1's", max, tk.Label, tk.Value)
			}
		}
	}
}

// Configuration indices are labelled as whole numbers, 4 to 11 of them
// ("0.00", "250.00" before); a path of hundreds of configurations numbers
// its axis so (its labels had overlapped into a black band).
func TestIndexTicks(t *testing.T) {
	for _, max := range []float64{3, 14, 299.5, 2999.5} {
		ts := indexTicks{}.Ticks(-0.5, max)
		if len(ts) < 3 || len(ts) > 11 {
			t.Errorf("max %v: %d ticks", max, len(ts))
		}
		for _, tk := range ts {
			if tk.Label != strconv.Itoa(int(tk.Value)) || tk.Value != math.Trunc(tk.Value) || tk.Value < 0 {
				t.Errorf("max %v: tick %+v", max, tk)
			}
		}
	}
	bs := make([]PathBar, 300)
	for i := range bs {
		bs[i] = PathBar{Label: fmt.Sprintf("count=%d kinds=%d", i%30, i/30), Comp: 1, Comm: 0.5, Ref: math.NaN()}
	}
	p, err := Path(bs, "path")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.X.Tick.Marker.(indexTicks); !ok || !strings.Contains(p.X.Label.Text, "index") {
		t.Errorf("a path of 300 configurations: axis %q with %T", p.X.Label.Text, p.X.Tick.Marker)
	}
	b, err := Encode(p, "png")
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("APPROXTUNE_FIGURES"); dir != "" { // to look at
		os.WriteFile(filepath.Join(dir, "path300.png"), b, 0o644)
	}
}

// A linear axis from just below zero labels zero "0", not "-0".
func TestLinearTicksNoNegativeZero(t *testing.T) {
	for _, tk := range (linearTicks{}).Ticks(-0.0004, 0.01) {
		if strings.HasPrefix(tk.Label, "-") {
			t.Errorf("tick %+v", tk)
		}
	}
}

// Only the round marked Full draws a chosen configuration: a selective
// round under way, with no threshold yet, had been taken for the full one
// and its points drawn as chosen.
func TestSearchChosenOnlyInTheFullRound(t *testing.T) {
	under := []SearchRound{{Label: "1: 2^-1", Points: []SearchPoint{{Time: 1, Kept: true}, {Time: 2, Kept: true}}}}
	full := append(under[:1:1], SearchRound{Label: "2: full", Full: true, Points: []SearchPoint{{Time: 1.1, Kept: true}, {Time: 1.3}}})
	for _, c := range []struct {
		rounds []SearchRound
		chosen bool
	}{{under, false}, {full, true}} {
		p, err := Search(c.rounds, 0, "search")
		if err != nil {
			t.Fatal(err)
		}
		svg, err := Encode(p, "svg")
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Contains(svg, []byte(">chosen<")); got != c.chosen {
			t.Errorf("rounds %+v: a chosen one drawn %v, want %v", c.rounds, got, c.chosen)
		}
	}
}

// Labels that do not fit side by side make the axes number configurations
// by index, far under MaxBars: fifteen configurations of grid and b had run
// their labels together ("grid=1x4grid=1x4..."). Nine short ones keep their
// labels, and the path's last bar is not cut at the figure's edge.
func TestLabelsFitOrIndex(t *testing.T) {
	var long, short []PathBar
	var cs []Config
	for i := range 15 {
		l := fmt.Sprintf("grid=%s b=%d lookahead=%d", []string{"1x4", "2x2", "4x1"}[i%3], 8<<(i/3), i%2)
		long = append(long, PathBar{Label: l, Comp: 1, Comm: 0.5, Ref: 1.6})
		cs = append(cs, Config{Label: l, Ref: 1, RefLo: 0.9, RefHi: 1.1, Predicted: map[string]float64{"eager 2^-1": 1}, Chosen: i == 3})
	}
	for i := range 9 {
		short = append(short, PathBar{Label: fmt.Sprintf("b=%d grid=%s", 64<<(i/3), []string{"1x4", "2x2", "4x1"}[i%3]), Comp: 1, Comm: 0.5, Ref: 1.6})
	}
	p, err := Path(long, "path")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.X.Tick.Marker.(indexTicks); !ok {
		t.Errorf("15 configurations of 3 parameters: the path's axis is %T, want index ticks", p.X.Tick.Marker)
	}
	if p, err = Configs(cs, []string{"eager 2^-1"}); err != nil || !strings.Contains(p.X.Label.Text, "index") {
		t.Errorf("15 configurations of 3 parameters: Configs %v, axis %q; want them by index", err, p.X.Label.Text)
	}
	p, err = Path(short, "path")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.X.Tick.Marker.(indexTicks); ok || p.X.Max != 8.5 || p.X.Min != -0.5 {
		t.Errorf("9 short labels: axis %T from %v to %v; want the labels, and half a bar's room on either side", p.X.Tick.Marker, p.X.Min, p.X.Max)
	}
	b, err := Encode(p, "png")
	if err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("APPROXTUNE_FIGURES"); dir != "" { // to look at
		os.WriteFile(filepath.Join(dir, "path9.png"), b, 0o644)
		p, _ = Path(long, "path")
		b, _ = Encode(p, "png")
		os.WriteFile(filepath.Join(dir, "path15.png"), b, 0o644)
	}
}

// No point of a figure lies under its legend, in the top right corner: a
// noisy sweep's largest errors (about 67% at every tolerance, as a review's
// sweep on a busy machine had) and the speed-up of the fastest policy at the
// right had been hidden by it. The y axis is raised until they are clear.
func TestLegendHidesNoPoint(t *testing.T) {
	var noisy []PolicyPoint
	for i, pol := range []string{"conditional", "local", "online", "apriori", "eager"} {
		for k := 1; k <= 5; k++ {
			noisy = append(noisy, PolicyPoint{Policy: pol, Tolerance: math.Exp2(-float64(k)),
				Speedup: 7 - 0.3*float64(i), MeanError: 0.18 + 0.005*float64(i), MaxError: 0.66 + 0.002*float64(k)})
		}
	}
	var errPts, speedPts plotter.XYs
	for _, q := range noisy {
		x, _ := tolX(q.Tolerance)
		errPts = append(errPts, plotter.XY{X: x, Y: q.MeanError}, plotter.XY{X: x, Y: q.MaxError})
		speedPts = append(speedPts, plotter.XY{X: x, Y: q.Speedup})
	}
	for _, c := range []struct {
		name   string
		draw   func() (*plot.Plot, error)
		pts    plotter.XYs
		before float64 // the top of the y axis the figure had without the legend's room
	}{
		{"error", func() (*plot.Plot, error) { return Error(noisy, 0.157) }, errPts, 0.67 * 1.5},
		{"speed-up", func() (*plot.Plot, error) { return Speedup(noisy) }, speedPts, 7 * 1.15},
		// A Fortran review's kernel at 11 samples and 110%, under the
		// kernels figure's legend.
		{"kernels", func() (*plot.Plot, error) {
			return Kernels([]Kernel{{Key: "bcast", Samples: 11, RelHalf: 1.1, Executed: 21}, {Key: "gemm", Samples: 2, RelHalf: 0.14, Executed: 2, Skipped: 19}}, 0.25)
		}, plotter.XYs{{X: 11, Y: 1.1}, {X: 2, Y: 0.14}}, 1.1 * 1.5},
	} {
		p, err := c.draw()
		if err != nil {
			t.Fatal(err)
		}
		if underLegend(p, c.pts) {
			t.Errorf("%s: a point lies under the legend (y up to %v)", c.name, p.Y.Max)
		}
		p.Y.Max = c.before
		if !underLegend(p, c.pts) {
			t.Errorf("%s: at y up to %v no point lies under the legend: the test shows nothing", c.name, c.before)
		}
		if dir := os.Getenv("APPROXTUNE_FIGURES"); dir != "" { // to look at
			p, _ = c.draw()
			b, _ := Encode(p, "png")
			os.WriteFile(filepath.Join(dir, "legend-"+c.name+".png"), b, 0o644)
		}
	}
}

// A run cut short is drawn apart from those dropped after a whole run: its
// time is a lower bound. A funnel without one has no such legend entry.
func TestSearchCutShortApart(t *testing.T) {
	rounds := func(cut bool) []SearchRound {
		return []SearchRound{{Label: "1: 2^-1", Threshold: 1.5, Points: []SearchPoint{
			{Time: 1, Kept: true}, {Time: 1.2, Kept: true}, {Time: 2}, {Time: 1.6, Cut: cut}}}}
	}
	for _, cut := range []bool{false, true} {
		p, err := Search(rounds(cut), 0, "search")
		if err != nil {
			t.Fatal(err)
		}
		svg, err := Encode(p, "svg")
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Contains(svg, []byte(">cut short (at least)<")); got != cut {
			t.Errorf("a run cut short %v: legend entry drawn %v", cut, got)
		}
		if !bytes.Contains(svg, []byte(">dropped<")) {
			t.Errorf("a run cut short %v: the run dropped whole has no legend entry", cut)
		}
		if dir := os.Getenv("APPROXTUNE_FIGURES"); dir != "" && cut { // to look at
			b, _ := Encode(p, "png")
			os.WriteFile(filepath.Join(dir, "search-cut.png"), b, 0o644)
		}
	}
}

// A program's speed-ups with its launches counted are drawn beside the
// timed regions', dashed, with one legend entry for them; a workload's
// sweep has none.
func TestSpeedupWithLaunches(t *testing.T) {
	pts := []PolicyPoint{{Policy: "eager", Tolerance: 0.5, Speedup: 30, Launched: 1.17}, {Policy: "eager", Tolerance: 0.125, Speedup: 17, Launched: 1.1},
		{Policy: "conditional", Tolerance: 0.5, Speedup: 20, Launched: 1.15}, {Policy: "conditional", Tolerance: 0.125, Speedup: 12, Launched: 1.05}}
	for _, launched := range []bool{true, false} {
		if !launched {
			for i := range pts {
				pts[i].Launched = 0
			}
		}
		p, err := Speedup(pts)
		if err != nil {
			t.Fatal(err)
		}
		svg, err := Encode(p, "svg")
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Count(svg, []byte(">launches counted<")); got != map[bool]int{true: 1, false: 0}[launched] {
			t.Errorf("launches counted %v: %d legend entries for them", launched, got)
		}
		// Each launch-counted value is written by its marker: near 1x its
		// line lies on the full execution's.
		for _, v := range []string{">1.17x<", ">1.10x<", ">1.15x<", ">1.05x<"} {
			if got := bytes.Contains(svg, []byte(v)); got != launched {
				t.Errorf("launches counted %v: the label %s written %v", launched, v, got)
			}
		}
		if dir := os.Getenv("APPROXTUNE_FIGURES"); dir != "" && launched { // to look at
			b, _ := Encode(p, "png")
			os.WriteFile(filepath.Join(dir, "speedup-launched.png"), b, 0o644)
		}
	}
}

// A log axis puts every tick and point where plot.LogScale does, the
// arithmetic middle of its range too once the figure is encoded: on the
// kernel figure's samples axis of 1..9, the tick 5 had been drawn in the
// middle of the axis, where 3 belongs, and a kernel of 5 samples with it.
func TestLogAxisMiddle(t *testing.T) {
	p, err := Kernels([]Kernel{{Key: "a", Samples: 1, RelHalf: 0.5}, {Key: "b", Samples: 5, RelHalf: 0.1, Skipped: 1}, {Key: "c", Samples: 6, RelHalf: 0.05, Skipped: 1}}, 0.125)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Encode(p, "png"); err != nil {
		t.Fatal(err)
	}
	min, max := p.X.Min, p.X.Max
	if min != 1 || max < 9 || max > 9.001 {
		t.Fatalf("samples axis %g..%g, want 1..9", min, max)
	}
	for _, v := range []float64{1, 2, 3, 5, 6, 9} {
		got, want := p.X.Norm(v), plot.LogScale{}.Normalize(min, max, v)
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("samples %g drawn at %.3f of the axis, want %.3f", v, got, want)
		}
	}
	for _, tk := range p.X.Tick.Marker.Ticks(min, max) {
		got, want := p.X.Norm(tk.Value), plot.LogScale{}.Normalize(min, max, tk.Value)
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("tick %q drawn at %.3f of the axis, want %.3f", tk.Label, got, want)
		}
	}
}

// Many configurations are drawn as lines, but never across one a series
// has no value for: a tune search's references (its finalists' full runs)
// had been joined from configuration 5 to 10 as if those between had
// references on that line.
func TestConfigsLinesBreakAtGaps(t *testing.T) {
	nan := math.NaN()
	ref := []float64{nan, nan, nan, nan, nan, 0.019, nan, nan, nan, nan, 0.0168, 0.0169}
	var got [][]float64
	for _, seg := range segments(ref) {
		var xs []float64
		for _, q := range seg {
			xs = append(xs, q.X)
		}
		got = append(got, xs)
	}
	if want := [][]float64{{5}, {10, 11}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("segments through %v, want %v", got, want)
	}
	cs := make([]Config, len(ref))
	for i := range cs {
		cs[i] = Config{Label: fmt.Sprintf("b=%d", 16*(i+1)), Ref: ref[i], Predicted: map[string]float64{"eager 2^-1": 0.02 + 0.001*float64(i)}}
	}
	p, err := configPoints(cs, []string{"eager 2^-1"})
	if err != nil {
		t.Fatal(err)
	}
	svg, err := Encode(p, "svg")
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(svg, []byte("reference (mean of full runs)")); n != 1 {
		t.Errorf("the reference is in the legend %d times, want once", n)
	}
	pngOf(t, p)
}
