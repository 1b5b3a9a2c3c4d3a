// Package plots draws approxtune's figures with gonum/plot: autotuning
// speed-up and prediction error against tolerance per policy, per-
// configuration times, kernel convergence and critical-path breakdowns. One
// style for all, readable at notebook width (800 px); log axes are guarded so
// empty or zero data never panics. The package knows nothing of sessions:
// callers pass plain data.
package plots

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/internal/selective/policy"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/recorder"
)

// Size of every figure: 800 x 450 px at 96 dpi.
const (
	Width  = 800.0 / 96 * vg.Inch
	Height = 450.0 / 96 * vg.Inch
)

// policyColor gives each policy the same colour in every figure: the
// registered policies take the palette's colours in registry order, any
// other name a colour of its own.
func policyColor(p string) color.Color {
	palette := []color.RGBA{{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
		{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {188, 189, 34, 255}}
	if i := slices.Index(policy.Names(), p); i >= 0 && i < len(palette) {
		return palette[i]
	}
	h := 0
	for _, c := range p {
		h = h*31 + int(c)
	}
	return color.RGBA{uint8(80 + h%150), uint8(80 + (h/7)%150), uint8(80 + (h/49)%150), 255}
}

// newPlot is a figure in the common style, with a grid.
func newPlot(title, x, y string) *plot.Plot {
	p := styledPlot(title, x, y)
	p.Add(plotter.NewGrid())
	return p
}

// styledPlot is a figure in the common style: fonts, labels, legend on top.
func styledPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = font.Length(15)
	p.X.Label.Text = x
	p.Y.Label.Text = y
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = font.Length(12)
		a.Tick.Label.Font.Size = font.Length(11)
	}
	p.Legend.TextStyle.Font.Size = font.Length(11)
	p.Legend.Top = true
	p.Legend.XOffs = -legendMargin // the line samples had run into the edge
	return p
}

// PolicyPoint is one policy at one tolerance of an evaluate sweep.
type PolicyPoint struct {
	Policy    string
	Tolerance float64
	Speedup   float64
	MeanError float64 // fraction: 0.05 is 5%
	MaxError  float64
	// Launched is, for a program's sweep, the speed-up with each launch's
	// start and end counted (mpirun, MPI_Init, MPI_Finalize: what the user
	// waits for beside the timed regions); 0 where there is none.
	Launched float64
}

// tolX places a tolerance on the x axis: -log2, so the largest tolerance is
// on the left as in the paper. Tolerance 0 has no place on a log axis.
func tolX(t float64) (float64, bool) {
	if !(t > 0) || math.IsInf(t, 0) {
		return 0, false
	}
	return -math.Log2(t), true
}

// tolTicks labels the integer exponents 2^-k between lo and hi.
type tolTicks struct{}

func (tolTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	lo, hi := math.Ceil(min), math.Floor(max)
	step := math.Max(1, math.Ceil((hi-lo)/10))
	for e := lo; e <= hi; e += step {
		label := format.Pow2(-int(e))
		if e == 0 {
			label = "1"
		}
		ts = append(ts, plot.Tick{Value: e, Label: label})
	}
	return ts
}

// speedupTicks labels a linear axis of speed-ups at a 1-2-5 step that
// gives 4 to 10 ticks, with 1 (full execution's line) always among them:
// gonum's default had labelled 0, 3 and 6, or 0, 0.9 and 1.8, with the 1x
// line between two labels.
type speedupTicks struct{}

func (speedupTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	if !(max > min) {
		return ts
	}
	step := 0.0
	for e := math.Floor(math.Log10(max - min)); step == 0; e-- {
		for _, m := range []float64{5, 2, 1} {
			if st := m * math.Pow(10, e); (max-min)/st >= 4 {
				step = st
				break
			}
		}
	}
	one := false
	for i := math.Ceil(min / step); i*step <= max+1e-9; i++ {
		v := math.Round(i*step*1e9) / 1e9 // 3*0.1 is 0.30000000000000004
		one = one || v == 1
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'g', 4, 64)})
	}
	if !one && min <= 1 && 1 <= max {
		// A label closer to 1 than a quarter step (0 when the step is 5)
		// would print over its: that tick keeps its mark, unlabelled.
		for i := range ts {
			if math.Abs(ts[i].Value-1) < step/4 {
				ts[i].Label = ""
			}
		}
		ts = append(ts, plot.Tick{Value: 1, Label: "1"})
	}
	return ts
}

// indexTicks labels an axis of configuration indices with whole numbers
// at a 1-2-5 step that gives 4 to 10 ticks: gonum's default had written
// "0.00", "250.00".
type indexTicks struct{}

func (indexTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	lo, hi := math.Ceil(math.Max(min, 0)), math.Floor(max)
	if hi < lo {
		return ts
	}
	step := 1.0
	for e := 0.0; (hi-lo)/step > 10; e++ {
		for _, m := range []float64{1, 2, 5} {
			if step = m * math.Pow(10, e); (hi-lo)/step <= 10 {
				break
			}
		}
	}
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		ts = append(ts, plot.Tick{Value: v, Label: strconv.Itoa(int(v))})
	}
	return ts
}

// countTicks labels a log axis of counts at 1-2-5 steps.
type countTicks struct{}

func (countTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	if !(min > 0) || !(max > min) {
		return ts
	}
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		for _, m := range []float64{1, 2, 5} {
			if v := m * math.Pow(10, e); v >= min && v <= max {
				ts = append(ts, plot.Tick{Value: v, Label: fmt.Sprint(v)})
			}
		}
	}
	return ts
}

// byPolicy groups points by policy (in first-seen order) and sorts each by tolerance.
func byPolicy(pts []PolicyPoint) ([]string, map[string][]PolicyPoint) {
	var order []string
	m := map[string][]PolicyPoint{}
	for _, p := range pts {
		if _, ok := m[p.Policy]; !ok {
			order = append(order, p.Policy)
		}
		m[p.Policy] = append(m[p.Policy], p)
	}
	for _, ps := range m {
		sort.Slice(ps, func(i, j int) bool { return ps[i].Tolerance > ps[j].Tolerance })
	}
	return order, m
}

func pad(p *plot.Plot) {
	p.X.Min, p.X.Max = p.X.Min-0.3, p.X.Max+0.3
}

// launchDashes dash the speed-up figure's lines with launches counted.
var launchDashes = []vg.Length{vg.Points(4), vg.Points(3)}

// Speedup draws the autotuning speed-up against tolerance, a line per policy,
// with full execution (1x) dashed. Where points have a speed-up with
// launches counted (a program's sweep), each policy's is a thin dashed line
// of its color with hollow markers: for a short program it is far below the
// timed regions' (30x against 1.2x in a review), which alone had read as
// what the user gains.
func Speedup(pts []PolicyPoint) (*plot.Plot, error) {
	p := newPlot("Autotuning speed-up", "tolerance ε", "speed-up over full execution (×)")
	p.X.Tick.Marker = tolTicks{}
	p.Y.Tick.Marker = speedupTicks{}
	order, m := byPolicy(pts)
	xmin, xmax, ymax := math.Inf(1), math.Inf(-1), 1.0
	var shown plotter.XYs // what the legend must leave visible
	withLaunches := false // the legend's entry for the launches' lines added
	for _, pol := range order {
		var xy plotter.XYs
		for _, q := range m[pol] {
			x, ok := tolX(q.Tolerance)
			if !ok || math.IsNaN(q.Speedup) || math.IsInf(q.Speedup, 0) {
				continue
			}
			xy = append(xy, plotter.XY{X: x, Y: q.Speedup})
			shown = append(shown, plotter.XY{X: x, Y: q.Speedup})
			xmin, xmax, ymax = math.Min(xmin, x), math.Max(xmax, x), math.Max(ymax, q.Speedup)
		}
		if len(xy) == 0 {
			continue
		}
		if err := addLine(p, pol, pol, xy); err != nil {
			return nil, err
		}
		var launched plotter.XYs
		for _, q := range m[pol] {
			if x, ok := tolX(q.Tolerance); ok && q.Launched > 0 && !math.IsInf(q.Launched, 0) {
				launched = append(launched, plotter.XY{X: x, Y: q.Launched})
				shown = append(shown, plotter.XY{X: x, Y: q.Launched})
				ymax = math.Max(ymax, q.Launched)
			}
		}
		if len(launched) > 0 {
			l, s, err := plotter.NewLinePoints(launched)
			if err != nil {
				return nil, fmt.Errorf("plots: %s with launches: %w", pol, err)
			}
			c := policyColor(pol)
			l.Color, l.Width, l.Dashes = c, vg.Points(1), launchDashes
			s.Color, s.Shape, s.Radius = c, draw.RingGlyph{}, vg.Points(3.5)
			p.Add(l, s)
			withLaunches = true
			// Each value written under its marker: near 1x (a program
			// of seconds or less) the line lies on the full execution's
			// and cannot be read (a review's 1.01x).
			ls := make([]string, len(launched))
			for i, q := range launched {
				ls[i] = fmt.Sprintf("%.2fx", q.Y)
			}
			lb, err := plotter.NewLabels(plotter.XYLabels{XYs: launched, Labels: ls})
			if err != nil {
				return nil, fmt.Errorf("plots: %s with launches: %w", pol, err)
			}
			for i := range lb.TextStyle {
				lb.TextStyle[i].Color = c
				lb.TextStyle[i].Font.Size = vg.Points(8)
				lb.TextStyle[i].XAlign = draw.XCenter
			}
			lb.Offset = vg.Point{Y: -vg.Points(14)}
			p.Add(lb)
		}
	}
	if withLaunches {
		l, s, err := plotter.NewLinePoints(plotter.XYs{{X: 0, Y: 0}})
		if err != nil {
			return nil, err
		}
		l.Color, l.Width, l.Dashes = color.Gray{60}, vg.Points(1), launchDashes
		s.Color, s.Shape, s.Radius = color.Gray{60}, draw.RingGlyph{}, vg.Points(3.5)
		p.Legend.Add("launches counted", l, s)
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax = 0, 1
	}
	one, err := plotter.NewLine(plotter.XYs{{X: xmin - 0.3, Y: 1}, {X: xmax + 0.3, Y: 1}})
	if err != nil {
		return nil, err
	}
	one.Color, one.Dashes, one.Width = color.Gray{120}, []vg.Length{vg.Points(5), vg.Points(4)}, vg.Points(1.5)
	p.Add(one)
	p.Legend.Add("full execution", one)
	p.X.Min, p.X.Max = xmin, xmax
	pad(p)
	p.Y.Min, p.Y.Max = 0, ymax*1.15
	clearOfLegend(p, shown, false)
	return p, nil
}

// clearOfLegend raises the top of p's y axis, its ranges set, until none
// of pts (data coordinates) lies under the legend, which sits in the top
// right corner of the data area of a figure drawn at Width x Height: a
// noisy sweep's largest errors, near the top, had been hidden under the
// error figure's legend, and so had the speed-up figure's fastest policy.
// logY steps a log axis by factors, a linear one by a tenth of its range.
func clearOfLegend(p *plot.Plot, pts plotter.XYs, logY bool) {
	for i := 0; i < 24 && underLegend(p, pts); i++ {
		if logY {
			p.Y.Max *= 1.4
		} else {
			p.Y.Max += (p.Y.Max - p.Y.Min) / 10
		}
	}
}

// underLegend reports whether a point of pts lies under p's legend, in the
// top right corner of a figure drawn at Width x Height.
func underLegend(p *plot.Plot, pts plotter.XYs) bool {
	area := draw.Canvas{Canvas: new(recorder.Canvas), Rectangle: vg.Rectangle{Max: vg.Point{X: Width, Y: Height}}}
	leg := p.Legend.Rectangle(area)
	top := area.Max.Y
	if p.Title.Text != "" {
		top -= p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	}
	const margin = vg.Length(4)
	left := area.Max.X + p.Legend.XOffs - (leg.Max.X - leg.Min.X) - margin
	bottom := top + p.Legend.YOffs - (leg.Max.Y - leg.Min.Y) - margin
	dc := p.DataCanvas(area)
	for _, q := range pts {
		if dc.X(p.X.Norm(q.X)) >= left && dc.Y(p.Y.Norm(q.Y)) >= bottom {
			return true
		}
	}
	return false
}

// addLine draws a policy's line with its points, labelled in the legend.
func addLine(p *plot.Plot, policy, label string, xy plotter.XYs) error {
	l, s, err := plotter.NewLinePoints(xy)
	if err != nil {
		return fmt.Errorf("plots: %s: %w", label, err)
	}
	c := policyColor(policy)
	l.Color, l.Width = c, vg.Points(2)
	s.Color, s.Shape, s.Radius = c, draw.CircleGlyph{}, vg.Points(3.5)
	p.Add(l, s)
	p.Legend.Add(label, l, s)
	return nil
}

// errFloor is where zero errors are drawn on the log axis (0.01%).
const errFloor = 1e-4

// Error draws the mean prediction error against tolerance, a line per policy,
// the maximum error as hollow markers, and the ideal error = tolerance as a
// dashed diagonal, on log axes. A noise floor above 0 (a full run's error
// against its configuration's other full runs, sweep.RunError) is drawn as
// a dotted grey line: a mean error on or under it is as close to the
// references as one more full run would be. Pass NaN or 0 for none.
func Error(pts []PolicyPoint, noise float64) (*plot.Plot, error) {
	p := newPlot("Prediction error", "tolerance ε", "relative error of the predicted time")
	p.X.Tick.Marker = tolTicks{}
	p.Y.Scale = logScale{}
	p.Y.Tick.Marker = percentLogTicks{}
	order, m := byPolicy(pts)
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymin, ymax := math.Inf(1), math.Inf(-1)
	var shown plotter.XYs // what the legend must leave visible
	clampY := func(v float64) float64 { return math.Max(v, errFloor) }
	for _, pol := range order {
		var mean, max plotter.XYs
		for _, q := range m[pol] {
			x, ok := tolX(q.Tolerance)
			if !ok {
				continue
			}
			if !math.IsNaN(q.MeanError) {
				mean = append(mean, plotter.XY{X: x, Y: clampY(q.MeanError)})
				shown = append(shown, mean[len(mean)-1])
				ymin, ymax = math.Min(ymin, clampY(q.MeanError)), math.Max(ymax, clampY(q.MeanError))
			}
			if !math.IsNaN(q.MaxError) {
				max = append(max, plotter.XY{X: x, Y: clampY(q.MaxError)})
				shown = append(shown, max[len(max)-1])
				ymax = math.Max(ymax, clampY(q.MaxError))
			}
			xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
		}
		if len(mean) > 0 {
			if err := addLine(p, pol, pol+" (mean)", mean); err != nil {
				return nil, err
			}
		}
		if len(max) > 0 {
			s, err := plotter.NewScatter(max)
			if err != nil {
				return nil, err
			}
			s.Color, s.Shape, s.Radius = policyColor(pol), draw.RingGlyph{}, vg.Points(4)
			p.Add(s)
		}
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax, ymin, ymax = 0, 1, errFloor, 1
	}
	// The reference lines span the padded axis (pad), so that with a
	// single tolerance they are short lines, not points nobody sees
	// beside their legend entries.
	lo, hi := xmin-0.3, xmax+0.3
	var diag plotter.XYs
	for x := lo; x < hi; x += 0.25 {
		diag = append(diag, plotter.XY{X: x, Y: math.Exp2(-x)})
	}
	diag = append(diag, plotter.XY{X: hi, Y: math.Exp2(-hi)})
	d, err := plotter.NewLine(diag)
	if err != nil {
		return nil, err
	}
	d.Color, d.Dashes, d.Width = color.RGBA{200, 30, 30, 255}, []vg.Length{vg.Points(5), vg.Points(4)}, vg.Points(1.5)
	p.Add(d)
	p.Legend.Add("ideal: error = ε", d)
	if noise > 0 {
		n, err := plotter.NewLine(plotter.XYs{{X: lo, Y: noise}, {X: hi, Y: noise}})
		if err != nil {
			return nil, err
		}
		n.Color, n.Dashes, n.Width = color.Gray{110}, []vg.Length{vg.Points(2), vg.Points(3)}, vg.Points(2)
		p.Add(n)
		p.Legend.Add(fmt.Sprintf("noise: full run vs others (%.1f%%)", 100*noise), n)
		ymin, ymax = math.Min(ymin, noise), math.Max(ymax, noise)
		shown = append(shown, plotter.XY{X: xmax, Y: noise}) // the line's right end, where the legend is
	}
	hollow, _ := plotter.NewScatter(plotter.XYs{{X: xmin, Y: ymin}})
	hollow.Shape, hollow.Color, hollow.Radius = draw.RingGlyph{}, color.Gray{60}, vg.Points(4)
	p.Legend.Add("max error (rings)", hollow)
	ymin = math.Min(ymin, math.Exp2(-hi))
	ymax = math.Max(ymax, math.Exp2(-lo))
	p.X.Min, p.X.Max = xmin, xmax
	pad(p)
	p.Y.Min, p.Y.Max = math.Max(errFloor, ymin/1.5), ymax*1.5
	clearOfLegend(p, shown, true)
	return p, nil
}

// logScale is plot.LogScale, but for the arithmetic middle of the range,
// which it puts in the middle of the axis. gonum asks for that point to
// place the glyph box of an axis's centred label (axis.go,
// verticalAxis.GlyphBoxes: a.Norm(0.5*(Max+Min))), though it draws the
// label in the middle: on a log axis that point lies near the end, and the
// label's box, centred there, ran past the top, so that every error figure
// lost a fifth of its height to an empty band above its data. A tick or a
// point whose value is that middle would be drawn there too (samples
// 1..9 had drawn the tick 5 where 3 belongs): apart moves the middle off
// every such value before a figure is drawn.
type logScale struct{}

// Normalize implements plot.Normalizer.
func (logScale) Normalize(min, max, x float64) float64 {
	if x == 0.5*(max+min) {
		return 0.5
	}
	return plot.LogScale{}.Normalize(min, max, x)
}

// apart raises the top of each of p's log axes by a part in a billion, so
// that the arithmetic middle of its range, which logScale keeps for
// gonum's label box, is no tick's value and no data point's (both are
// round or measured numbers; the middle then is neither). Raising it
// again, as a figure encoded twice does, keeps that so.
func apart(p *plot.Plot) {
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		if _, ok := ax.Scale.(logScale); ok && ax.Max > 0 {
			ax.Max *= 1 + 1e-9
		}
	}
}

// percentLogTicks labels a log axis in percent at 1-2-5 steps.
type percentLogTicks struct{}

func (percentLogTicks) Ticks(min, max float64) []plot.Tick {
	var ts []plot.Tick
	if !(min > 0) || !(max > min) {
		return ts
	}
	for e := math.Floor(math.Log10(min)); e <= math.Ceil(math.Log10(max)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v < min || v > max {
				continue
			}
			ts = append(ts, plot.Tick{Value: v, Label: strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", 100*v), "0"), ".") + "%"})
		}
	}
	return ts
}

// Encode renders p as "png" or "svg" at the standard size.
func Encode(p *plot.Plot, format string) ([]byte, error) {
	apart(p)
	w, err := p.WriterTo(Width, Height, format)
	if err != nil {
		return nil, fmt.Errorf("plots: render %s: %w", format, err)
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("plots: render %s: %w", format, err)
	}
	return withFallbackFonts(b.Bytes(), format), nil
}

// fallbackFonts are the fonts a browser may draw an SVG's text in when it
// lacks the Liberation font the figure was laid out with: the fonts each
// Liberation font is metric-compatible with, then the generic family.
// Without them a browser falls back to its default font, whose wider
// letters run right-aligned legend labels into their line samples.
var fallbackFonts = strings.NewReplacer(
	"font-family:Liberation Serif;", "font-family:'Liberation Serif','Times New Roman',Times,serif;",
	"font-family:Liberation Sans;", "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;",
	"font-family:Liberation Mono;", "font-family:'Liberation Mono','Courier New',Courier,monospace;",
)

// withFallbackFonts gives an SVG's fonts their fallbacks (fallbackFonts);
// other formats are returned as they are.
func withFallbackFonts(b []byte, format string) []byte {
	if format != "svg" {
		return b
	}
	return []byte(fallbackFonts.Replace(string(b)))
}

// EncodeRow renders ps side by side on one canvas as "png" or "svg", each
// at the standard size, their plotting areas aligned.
func EncodeRow(ps []*plot.Plot, format string) ([]byte, error) {
	c, err := draw.NewFormattedCanvas(vg.Length(len(ps))*Width, Height, format)
	if err != nil {
		return nil, fmt.Errorf("plots: render %s: %w", format, err)
	}
	for _, p := range ps {
		apart(p)
	}
	tiles := draw.Tiles{Rows: 1, Cols: len(ps)}
	for i, dc := range plot.Align([][]*plot.Plot{ps}, tiles, draw.New(c))[0] {
		ps[i].Draw(dc)
	}
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return nil, fmt.Errorf("plots: render %s: %w", format, err)
	}
	return withFallbackFonts(b.Bytes(), format), nil
}
