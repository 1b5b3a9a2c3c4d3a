package plots

import (
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// AnomalyPoint is one kernel execution in the anomalies figure.
type AnomalyPoint struct {
	X        float64 // its size, or its start time in a panel of one size
	Duration float64 // seconds
	Flagged  bool    // above the prediction interval
}

// AnomalyPanel is one routine's panel of the anomalies figure: its
// executions' durations against their size, the fitted duration and the
// prediction interval, on log axes; for a routine whose executions all have
// one size, against their start time (a linear axis).
type AnomalyPanel struct {
	Routine string
	Comm    bool   // a communication (its color from the warm family, as in Gantt)
	Title   string // above the panel
	XLabel  string // "flops", "bytes per process", "start (ms)"
	LogX    bool   // X is a size (log axis); false: a start time
	Points  []AnomalyPoint
	// FitX are the x values at which Fit (the fitted duration) and Lower
	// and Upper (the prediction interval's bounds) are given, increasing.
	FitX, Fit, Lower, Upper []float64
}

// flagColor marks the executions above the interval, in the anomalies
// figure and the Gantt chart's outlines: black, which no routine's color is
// near.
var flagColor = color.RGBA{0, 0, 0, 255}

// Anomalies draws one panel per routine in a grid (at most three columns):
// each execution a dot in its routine's color, the flagged ones ringed in
// black, the fitted duration a line and the prediction interval at level a
// shaded band bounded by dashed lines. The legend is a line under the
// panels.
func Anomalies(panels []AnomalyPanel, title string, level float64) (*plot.Plot, error) {
	outer := styledPlot(title, "", "")
	outer.HideAxes()
	f := &facets{text: outer.Legend.TextStyle}
	if len(panels) == 0 {
		outer.Title.Text += " (no executions)"
	}
	for _, pn := range panels {
		p, err := anomalyPanel(pn, level)
		if err != nil {
			return nil, err
		}
		if len(panels) > 1 {
			// Side by side, a panel has room for about four labels
			// (eight overlapped in the middle one of three).
			if lt, ok := p.X.Tick.Marker.(linearTicks); ok {
				lt.labels = 4
				p.X.Tick.Marker = lt
			}
		}
		f.ps = append(f.ps, p)
	}
	// The legend, in gray: it stands for every routine's color.
	gray := color.RGBA{110, 110, 110, 255}
	fit, upper := fitLines(gray)
	band := &plotter.Polygon{Color: bandColor(gray)}
	f.legend = []legendItem{
		{"execution", []plot.Thumbnailer{&plotter.Scatter{GlyphStyle: dotStyle(gray)}}},
		{"anomaly: above the interval", []plot.Thumbnailer{&plotter.Scatter{GlyphStyle: ringStyle}}},
		{"fit", []plot.Thumbnailer{fit}},
		{strconv.FormatFloat(100*level, 'f', -1, 64) + "% prediction interval", []plot.Thumbnailer{band, upper}},
	}
	outer.Add(f)
	fitTitle(outer)
	return outer, nil
}

// The styles of the anomalies figure: an execution's dot, an anomaly's
// ring, the fit's line and the interval's dashed bounds and band.
var ringStyle = draw.GlyphStyle{Color: flagColor, Radius: vg.Points(3.5), Shape: ring{width: vg.Points(1.2)}}

func dotStyle(c color.RGBA) draw.GlyphStyle {
	return draw.GlyphStyle{Color: color.NRGBA{c.R, c.G, c.B, 150}, Radius: vg.Points(1.6), Shape: draw.CircleGlyph{}}
}

func bandColor(c color.RGBA) color.Color { return color.NRGBA{c.R, c.G, c.B, 40} }

// fitLines are the fit's line and an interval bound's, without points.
func fitLines(c color.RGBA) (fit, bound *plotter.Line) {
	fit = &plotter.Line{LineStyle: draw.LineStyle{Color: c, Width: vg.Points(1.2)}}
	bound = &plotter.Line{LineStyle: draw.LineStyle{Color: c, Width: vg.Points(0.8), Dashes: []vg.Length{vg.Points(4), vg.Points(2.5)}}}
	return fit, bound
}

// anomalyPanel draws one routine.
func anomalyPanel(pn AnomalyPanel, level float64) (*plot.Plot, error) {
	p := styledPlot(pn.Title, pn.XLabel, "duration")
	p.Title.TextStyle.Font.Size = font.Length(11)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle.Font.Size = font.Length(9)
		a.Tick.Label.Font.Size = font.Length(8)
	}
	p.Add(plotter.NewGrid())
	base := routineColor(pn.Routine, pn.Comm)
	xlo, xhi := math.Inf(1), math.Inf(-1)
	ylo, yhi := math.Inf(1), math.Inf(-1)
	widen := func(x, y float64) {
		if finite(x) == x && finite(y) == y && y > 0 && (!pn.LogX || x > 0) {
			xlo, xhi = math.Min(xlo, x), math.Max(xhi, x)
			ylo, yhi = math.Min(ylo, y), math.Max(yhi, y)
		}
	}
	var normal, flagged plotter.XYs
	for _, q := range pn.Points {
		widen(q.X, q.Duration)
		if !(q.Duration > 0) || pn.LogX && !(q.X > 0) {
			continue
		}
		if q.Flagged {
			flagged = append(flagged, plotter.XY{X: q.X, Y: q.Duration})
		} else {
			normal = append(normal, plotter.XY{X: q.X, Y: q.Duration})
		}
	}
	var fit, lower, upper plotter.XYs
	for i, x := range pn.FitX {
		if i < len(pn.Fit) && i < len(pn.Lower) && i < len(pn.Upper) && pn.Lower[i] > 0 {
			widen(x, pn.Lower[i])
			widen(x, pn.Upper[i])
			fit = append(fit, plotter.XY{X: x, Y: pn.Fit[i]})
			lower = append(lower, plotter.XY{X: x, Y: pn.Lower[i]})
			upper = append(upper, plotter.XY{X: x, Y: pn.Upper[i]})
		}
	}
	if len(fit) > 1 {
		band := make(plotter.XYs, 0, 2*len(fit))
		band = append(band, upper...)
		for i := len(lower) - 1; i >= 0; i-- {
			band = append(band, lower[i])
		}
		poly, err := plotter.NewPolygon(band)
		if err != nil {
			return nil, fmt.Errorf("plots: anomalies band: %w", err)
		}
		poly.Color = bandColor(base)
		poly.LineStyle.Width = 0
		p.Add(poly)
		for _, l := range []struct {
			xy    plotter.XYs
			bound bool
		}{{lower, true}, {upper, true}, {fit, false}} {
			line, err := plotter.NewLine(l.xy)
			if err != nil {
				return nil, fmt.Errorf("plots: anomalies line: %w", err)
			}
			styled, bound := fitLines(base)
			if l.bound {
				styled = bound
			}
			line.LineStyle = styled.LineStyle
			p.Add(line)
		}
	}
	if len(normal) > 0 {
		sc, err := plotter.NewScatter(normal)
		if err != nil {
			return nil, fmt.Errorf("plots: anomalies points: %w", err)
		}
		sc.GlyphStyle = dotStyle(base)
		p.Add(sc)
	}
	if len(flagged) > 0 {
		sc, err := plotter.NewScatter(flagged)
		if err != nil {
			return nil, fmt.Errorf("plots: anomalies flagged points: %w", err)
		}
		sc.GlyphStyle = ringStyle
		p.Add(sc)
	}
	p.Y.Scale = logScale{}
	p.Y.Tick.Marker = logTicks{label: durationLabel}
	if xlo > xhi {
		xlo, xhi, ylo, yhi = 1, 10, 1e-3, 1e-2
	}
	// Room above the highest for its ring (rings had touched the top).
	p.Y.Min, p.Y.Max = ylo/1.3, yhi*1.6
	if pn.LogX {
		p.X.Scale = logScale{}
		p.X.Tick.Marker = logTicks{label: sizeLabel}
		p.X.Min, p.X.Max = xlo/1.5, xhi*1.5
	} else {
		p.X.Tick.Marker = linearTicks{}
		pad := math.Max((xhi-xlo)*0.03, 1e-6)
		p.X.Min, p.X.Max = math.Max(0, xlo-pad), xhi+pad
	}
	return p, nil
}

// facets draws plots in a grid filling the data area (at most three
// columns), their data areas aligned, above a one-line legend.
type facets struct {
	ps     []*plot.Plot
	legend []legendItem
	text   text.Style
}

// legendItem is an entry of a facets legend: its thumbnails, drawn over
// each other, and its label.
type legendItem struct {
	label  string
	thumbs []plot.Thumbnailer
}

// Plot implements plot.Plotter.
func (f *facets) Plot(c draw.Canvas, _ *plot.Plot) {
	if len(f.legend) > 0 {
		h := f.text.Height("Xg") + vg.Points(6)
		f.drawLegend(draw.Crop(c, 0, 0, 0, h-(c.Max.Y-c.Min.Y)))
		c = draw.Crop(c, 0, 0, h, 0)
	}
	if len(f.ps) == 0 {
		return
	}
	cols := min(3, len(f.ps))
	if len(f.ps) == 4 {
		cols = 2
	}
	rows := (len(f.ps) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for r := range grid {
		grid[r] = make([]*plot.Plot, cols)
		for k := range grid[r] {
			if i := r*cols + k; i < len(f.ps) {
				apart(f.ps[i])
				grid[r][k] = f.ps[i]
			}
		}
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(14), PadY: vg.Points(10), PadTop: vg.Points(4), PadRight: vg.Points(8)}
	cs := plot.Align(grid, tiles, c)
	for r := range grid {
		for k, p := range grid[r] {
			if p != nil {
				p.Draw(cs[r][k])
			}
		}
	}
}

// drawLegend draws the legend's entries in a row, centred in c.
func (f *facets) drawLegend(c draw.Canvas) {
	thumbW, gap, pad := vg.Points(14), vg.Points(18), vg.Points(4)
	total := vg.Length(0)
	for i, it := range f.legend {
		if i > 0 {
			total += gap
		}
		total += thumbW + pad + f.text.Width(it.label)
	}
	x := c.Center().X - total/2
	h := f.text.Height("Xg")
	y := c.Center().Y
	for _, it := range f.legend {
		tc := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{Min: vg.Point{X: x, Y: y - h/2}, Max: vg.Point{X: x + thumbW, Y: y + h/2}}}
		for _, t := range it.thumbs {
			t.Thumbnail(&tc)
		}
		x += thumbW + pad
		sty := f.text
		sty.YAlign = draw.YCenter
		c.FillText(sty, vg.Point{X: x, Y: y}, it.label)
		x += f.text.Width(it.label) + gap
	}
}

// logTicks marks a log axis at the powers of ten, labelled, with the
// 2..9 multiples between as unlabelled ticks; a range under two decades
// also labels the 2 and 5 multiples, and one that would have fewer than
// two labels labels every tick.
type logTicks struct{ label func(float64) string }

// Ticks implements plot.Ticker.
func (t logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) || math.IsInf(hi, 0) {
		return nil
	}
	e0, e1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	dense := e1-e0 <= 2
	var ts []plot.Tick
	for e := e0; e <= e1; e++ {
		for m := 1.0; m <= 9; m++ {
			v := m * math.Pow(10, e)
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			tk := plot.Tick{Value: v}
			if m == 1 || dense && (m == 2 || m == 5) {
				tk.Label = t.label(v)
			}
			ts = append(ts, tk)
		}
	}
	labelled := 0
	for _, tk := range ts {
		if tk.Label != "" {
			labelled++
		}
	}
	if labelled < 2 {
		for i := range ts {
			ts[i].Label = t.label(ts[i].Value)
		}
	}
	if len(ts) < 2 || uncovered(ts, lo, hi) {
		// A range within one step of 1-9 (18 to 27 ms: only 20 ms), or
		// one whose ticks leave a third of it bare (0.85 to 1.7 ms:
		// 0.9 and 1 ms, then nothing up to 2 ms), reads better with
		// plain ticks, labelled alike.
		ts = plot.DefaultTicks{}.Ticks(lo, hi)
		for i := range ts {
			if ts[i].Label != "" {
				ts[i].Label = t.label(ts[i].Value)
			}
		}
	}
	return ts
}

// uncovered reports whether ts, ascending, leave more than a third of the
// log axis lo..hi without a tick at one end.
func uncovered(ts []plot.Tick, lo, hi float64) bool {
	span := math.Log(hi / lo)
	return math.Log(ts[0].Value/lo) > span/3 || math.Log(hi/ts[len(ts)-1].Value) > span/3
}

// durationLabel writes seconds with a unit: "2 ms", "500 µs", "1 s".
func durationLabel(s float64) string {
	unit, scale := "s", 1.0
	switch {
	case s < 1e-6*(1-1e-9):
		unit, scale = "ns", 1e9
	case s < 1e-3*(1-1e-9):
		unit, scale = "µs", 1e6
	case s < 1-1e-9:
		unit, scale = "ms", 1e3
	}
	return strconv.FormatFloat(s*scale, 'g', 3, 64) + " " + unit
}

// sizeLabel writes a size as 1e6, 2e6, 500 (small ones in full).
func sizeLabel(x float64) string {
	if x < 1000 {
		return strconv.FormatFloat(x, 'g', 3, 64)
	}
	s := strconv.FormatFloat(x, 'e', -1, 64) // 2e+06
	m, e, _ := strings.Cut(s, "e")
	return m + "e" + strings.TrimLeft(strings.TrimPrefix(e, "+"), "0")
}

// ring is a circle's outline of a given width (draw.RingGlyph's is fixed).
type ring struct{ width vg.Length }

// DrawGlyph implements draw.GlyphDrawer.
func (r ring) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: r.width})
	var p vg.Path
	p.Move(vg.Point{X: pt.X + sty.Radius, Y: pt.Y})
	p.Arc(pt, sty.Radius, 0, 2*math.Pi)
	p.Close()
	c.Stroke(p)
}
