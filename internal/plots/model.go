package plots

import (
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// ModelPoint is one measured size of a kernel: its place on the x axis and
// the measured mean time with its 95% interval (Lo, Hi; NaN or Lo <= 0
// where the interval is unknown or reaches 0).
type ModelPoint struct {
	X, Mean, Lo, Hi float64
}

// ModelValue is a performance model's prediction at one x, with its
// prediction band [Lo, Hi].
type ModelValue struct {
	X, Y, Lo, Hi float64
}

// ModelSeries is one kernel family of a model figure: its measurements and
// its model, either as a curve along x (a model of the x parameter alone)
// or at each measured point (a model of several parameters, which x does
// not determine).
type ModelSeries struct {
	Label      string // the measurements' legend entry
	ModelLabel string // the model's
	Points     []ModelPoint
	Curve      []ModelValue // the model along x, sorted by X
	AtPoints   []ModelValue // the model at the measured points
}

// modelColors tell the families of one figure apart.
var modelColors = []color.RGBA{{31, 119, 180, 255}, {214, 39, 40, 255}, {44, 160, 44, 255}, {148, 103, 189, 255},
	{255, 127, 14, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {23, 190, 207, 255}}

// Model draws kernel performance models on log-log axes: per series the
// measured mean times as dots with their 95% intervals, the model as a line
// with its 95% prediction band shaded (or, for a model of several
// parameters, as rings at the measured points with the band as bars).
// Values that are not positive have no place on the axes and are left out
// (an interval or a band reaching 0 is cut at the axis' floor).
//
// The axes are linear in log10 of the values, labelled with the values:
// gonum's log scale places a centred axis label's glyph box at the linear
// midpoint of the range, near the right end of a log axis, and shrinks the
// figure to make room for a label that is in fact centred.
func Model(title, xLabel string, series []ModelSeries) (*plot.Plot, error) {
	p := newPlot(title, xLabel, "time per call")
	p.X.Tick.Marker, p.Y.Tick.Marker = log10Ticks{siSize}, log10Ticks{Duration}
	p.Legend.Top, p.Legend.Left = true, true
	xr, yr := newSpan(), newSpan()
	for _, s := range series {
		for _, q := range s.Points {
			xr.add(q.X)
			yr.add(q.Mean, q.Hi)
		}
		for _, v := range s.Curve {
			xr.add(v.X)
			yr.add(v.Y, v.Hi)
		}
		for _, v := range s.AtPoints {
			xr.add(v.X)
			yr.add(v.Y, v.Hi)
		}
	}
	if !xr.ok() || !yr.ok() {
		p.Title.Text += " (nothing to draw)"
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 1, 10, 1e-6, 1e-3
		return p, nil
	}
	floor := yr.lo / 2
	clamp := func(v float64) float64 { // log10 of v, cut at the floor
		if !(v > floor) {
			return math.Log10(floor)
		}
		return math.Log10(v)
	}
	for i, s := range series {
		c := modelColors[i%len(modelColors)]
		if len(s.Curve) > 1 {
			if err := addModelCurve(p, s, c, clamp); err != nil {
				return nil, err
			}
		}
		if len(s.AtPoints) > 0 {
			if err := addModelAtPoints(p, s, c, clamp); err != nil {
				return nil, err
			}
		}
		if err := addMeasured(p, s, c, clamp); err != nil {
			return nil, err
		}
	}
	p.X.Min, p.X.Max = math.Log10(xr.lo/1.25), math.Log10(xr.hi*1.25)
	p.Y.Min, p.Y.Max = math.Log10(floor), math.Log10(yr.hi*2)
	fitTitle(p)
	return p, nil
}

// span is the positive range of some values.
type span struct{ lo, hi float64 }

func newSpan() span { return span{math.Inf(1), math.Inf(-1)} }

func (s *span) add(vs ...float64) {
	for _, v := range vs {
		if v > 0 && !math.IsInf(v, 0) {
			s.lo, s.hi = math.Min(s.lo, v), math.Max(s.hi, v)
		}
	}
}

func (s span) ok() bool { return s.lo <= s.hi }

// addModelCurve draws the model's line and its band as a shaded polygon.
func addModelCurve(p *plot.Plot, s ModelSeries, c color.RGBA, clamp func(float64) float64) error {
	var line, band plotter.XYs
	for _, v := range s.Curve {
		if v.X > 0 && v.Y > 0 {
			line = append(line, plotter.XY{X: math.Log10(v.X), Y: math.Log10(v.Y)})
		}
	}
	for _, v := range s.Curve {
		if v.X > 0 && !math.IsNaN(v.Lo) {
			band = append(band, plotter.XY{X: math.Log10(v.X), Y: clamp(v.Lo)})
		}
	}
	for k := len(s.Curve) - 1; k >= 0; k-- {
		if v := s.Curve[k]; v.X > 0 && !math.IsNaN(v.Hi) {
			band = append(band, plotter.XY{X: math.Log10(v.X), Y: clamp(v.Hi)})
		}
	}
	if len(band) > 2 {
		poly, err := plotter.NewPolygon(band)
		if err != nil {
			return fmt.Errorf("plots: model band: %w", err)
		}
		poly.Color = color.NRGBA{c.R, c.G, c.B, 45}
		poly.LineStyle.Width = 0
		p.Add(poly)
	}
	if len(line) < 2 {
		return nil
	}
	l, err := plotter.NewLine(line)
	if err != nil {
		return fmt.Errorf("plots: model curve: %w", err)
	}
	l.Color, l.Width = c, vg.Points(2)
	p.Add(l)
	p.Legend.Add(s.ModelLabel, modelThumb{line: c, band: color.NRGBA{c.R, c.G, c.B, 45}})
	return nil
}

// addModelAtPoints draws the model at the measured points as rings, its
// band as light bars.
func addModelAtPoints(p *plot.Plot, s ModelSeries, c color.RGBA, clamp func(float64) float64) error {
	var at plotter.XYs
	bars := intervals{color: color.NRGBA{c.R, c.G, c.B, 110}, width: vg.Points(5), cap: vg.Points(2)}
	for _, v := range s.AtPoints {
		if v.X > 0 && v.Y > 0 {
			at = append(at, plotter.XY{X: math.Log10(v.X), Y: math.Log10(v.Y)})
		}
		if v.X > 0 && !math.IsNaN(v.Lo) && !math.IsNaN(v.Hi) {
			bars.xs = append(bars.xs, math.Log10(v.X))
			bars.lo, bars.hi = append(bars.lo, clamp(v.Lo)), append(bars.hi, clamp(v.Hi))
		}
	}
	return addMarks(p, at, &bars, s.ModelLabel, draw.GlyphStyle{Color: c, Shape: draw.RingGlyph{}, Radius: vg.Points(5)})
}

// addMarks adds markers at xy with their bars, and a legend entry.
func addMarks(p *plot.Plot, xy plotter.XYs, bars *intervals, label string, glyph draw.GlyphStyle) error {
	p.Add(bars)
	if len(xy) == 0 {
		return nil
	}
	sc, err := plotter.NewScatter(xy)
	if err != nil {
		return fmt.Errorf("plots: %s: %w", label, err)
	}
	sc.GlyphStyle = glyph
	p.Add(sc)
	p.Legend.Add(label, sc)
	return nil
}

// addMeasured draws the measured means as dots with their intervals.
func addMeasured(p *plot.Plot, s ModelSeries, c color.RGBA, clamp func(float64) float64) error {
	var xy plotter.XYs
	bars := intervals{color: color.Black, width: vg.Points(1), cap: vg.Points(3)}
	for _, q := range s.Points {
		if !(q.X > 0 && q.Mean > 0) {
			continue
		}
		xy = append(xy, plotter.XY{X: math.Log10(q.X), Y: math.Log10(q.Mean)})
		if !math.IsNaN(q.Hi) && q.Hi > q.Mean {
			bars.xs = append(bars.xs, math.Log10(q.X))
			bars.lo, bars.hi = append(bars.lo, clamp(q.Lo)), append(bars.hi, math.Log10(q.Hi))
		}
	}
	return addMarks(p, xy, &bars, s.Label, draw.GlyphStyle{Color: c, Shape: draw.CircleGlyph{}, Radius: vg.Points(3.5)})
}

// intervals draws vertical bars from lo to hi at xs (axis coordinates),
// with caps.
type intervals struct {
	xs, lo, hi []float64
	color      color.Color
	width, cap vg.Length
}

// Plot implements plot.Plotter.
func (iv *intervals) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	ls := draw.LineStyle{Color: iv.color, Width: iv.width}
	cs := draw.LineStyle{Color: iv.color, Width: vg.Points(1)}
	for k, x := range iv.xs {
		px, lo, hi := trX(x), trY(iv.lo[k]), trY(iv.hi[k])
		c.StrokeLine2(ls, px, lo, px, hi)
		c.StrokeLine2(cs, px-iv.cap, lo, px+iv.cap, lo)
		c.StrokeLine2(cs, px-iv.cap, hi, px+iv.cap, hi)
	}
}

// modelThumb is a model's legend entry: its line over its band's shade.
type modelThumb struct {
	line color.Color
	band color.Color
}

// Thumbnail implements plot.Thumbnailer.
func (t modelThumb) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(t.band, []vg.Point{{X: c.Min.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Min.Y}, {X: c.Max.X, Y: c.Max.Y}, {X: c.Min.X, Y: c.Max.Y}})
	y := (c.Min.Y + c.Max.Y) / 2
	c.StrokeLine2(draw.LineStyle{Color: t.line, Width: vg.Points(2)}, c.Min.X, y, c.Max.X, y)
}

// log10Ticks labels an axis of log10 values with the ticks logTicks gives
// the values.
type log10Ticks struct{ label func(float64) string }

// Ticks implements plot.Ticker.
func (t log10Ticks) Ticks(lo, hi float64) []plot.Tick {
	ts := logTicks{t.label}.Ticks(math.Pow(10, lo), math.Pow(10, hi))
	for i := range ts {
		ts[i].Value = math.Log10(ts[i].Value)
	}
	return ts
}

// siSize writes a positive size with an SI prefix and at most three
// significant digits: 512, 65.5k, 1.07G.
func siSize(v float64) string {
	for _, u := range []struct {
		s string
		f float64
	}{{"P", 1e15}, {"T", 1e12}, {"G", 1e9}, {"M", 1e6}, {"k", 1e3}} {
		if v >= u.f {
			return strconv.FormatFloat(roundSig(v/u.f, 3), 'g', -1, 64) + u.s
		}
	}
	return strconv.FormatFloat(roundSig(v, 3), 'g', -1, 64)
}

// roundSig rounds v to n significant digits.
func roundSig(v float64, n int) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	f, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', n, 64), 64)
	if err != nil {
		return v
	}
	return f
}

// Duration writes a time in seconds with three significant digits in the
// unit that suits it: "2.74 µs", "83.8 µs", "1.2 ms", "1.05 s"; "-" for NaN.
func Duration(s float64) string {
	if math.IsNaN(s) {
		return "-"
	}
	if s == 0 {
		return "0" // a band clamped at zero: "0 µs" named a unit for nothing
	}
	a := math.Abs(s)
	unit, scale := timeUnit(a)
	if a > 0 && a < 1e-6 {
		unit, scale = "ns", 1e9
	}
	v := strconv.FormatFloat(roundSig(s*scale, 3), 'f', -1, 64)
	return strings.TrimSuffix(v, ".0") + " " + unit
}
