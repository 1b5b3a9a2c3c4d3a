package plots

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// RankRow is one configuration of a ranking into performance classes
// (paper 004).
type RankRow struct {
	Label string
	// Class is the configuration's performance class, 1 for the fastest.
	Class int
	// Score is the relative score: the share of the sorts that ranked the
	// configuration first.
	Score float64
	// Mean is the mean time in seconds, Lo and Hi its 95% interval.
	Mean, Lo, Hi float64
	// Min is the least time in seconds; NaN for none (predictions).
	Min float64
}

// Rank colors: the best class's band, the other classes' alternate band, the
// mean and its interval, the minimum.
var (
	rankBest  = color.RGBA{214, 238, 214, 255}
	rankBand  = color.RGBA{236, 236, 236, 255}
	rankMean  = color.RGBA{31, 119, 180, 255}
	rankMin   = color.RGBA{214, 39, 40, 255}
	rankLabel = color.Gray{60}
)

// Rank draws performance classes: a row per configuration, in the order
// given from the top (fastest first: by class, then by mean time), its mean
// time as a dot with its 95% interval as a bar and its minimum as a
// triangle. Each class's rows lie on one band, the classes' bands shaded
// alternately and the best class's (class 1) green; right of the data each
// row names its class and relative score. xlabel
// says what the times are.
func Rank(rows []RankRow, title, xlabel string) (*plot.Plot, error) {
	p := styledPlot(title, xlabel, "")
	for i, r := range rows {
		if r.Class < 1 {
			return nil, fmt.Errorf("plots: rank: row %d (%s): class %d, want 1 or more", i, r.Label, r.Class)
		}
	}
	n := len(rows)
	unit, scale := timeUnit(rankSpan(rows))
	p.X.Label.Text = strings.ReplaceAll(xlabel, "(s)", "("+unit+")")
	rr := &rankPlotter{rows: rows, scale: scale}
	for _, r := range rows {
		rr.width = max(rr.width, rankText().Width(rankNote(r)))
	}
	p.Add(rr)
	grid := plotter.NewGrid()
	grid.Horizontal.Color = nil
	p.Add(grid)
	p.Add(&rankMarks{rr})
	ticks := make([]plot.Tick, n)
	for i, r := range rows {
		ticks[i] = plot.Tick{Value: float64(n - 1 - i), Label: r.Label}
	}
	p.Y.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Tick.Length, p.Y.Tick.LineStyle.Width = vg.Points(4), 0 // a gap before the labels
	p.X.Padding, p.Y.Padding = 0, 0
	p.Y.Min, p.Y.Max = -0.5, math.Max(float64(n), 1)-0.5
	lo, hi := rankRange(rows)
	pad := 0.04 * (hi - lo)
	p.X.Min, p.X.Max = scale*(lo-pad), scale*(hi+pad)
	p.X.Tick.Marker = linearTicks{}
	if n == 0 {
		p.Title.Text += " (no configurations)"
	}
	fitTitle(p)
	return p, nil
}

// rankSpan is the largest time of the rows, which picks the axis unit.
func rankSpan(rows []RankRow) float64 {
	m := 0.0
	for _, r := range rows {
		m = math.Max(m, math.Max(finite(r.Hi), finite(r.Mean)))
	}
	return m
}

// rankRange is the range of the rows' times (intervals and minima), never
// empty.
func rankRange(rows []RankRow) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, r := range rows {
		for _, v := range []float64{r.Mean, r.Lo, r.Hi, r.Min} {
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	switch {
	case math.IsInf(lo, 0):
		return 0, 1
	case hi == lo && lo == 0:
		return 0, 1
	case hi == lo:
		return lo - 0.05*math.Abs(lo), hi + 0.05*math.Abs(hi)
	}
	return lo, hi
}

// rankText is the style of the notes right of the rows.
func rankText() draw.TextStyle {
	return draw.TextStyle{Color: rankLabel, Font: font.From(plot.DefaultFont, 10), Handler: plot.DefaultTextHandler,
		XAlign: draw.XLeft, YAlign: draw.YCenter}
}

// rankNote is what the figure says right of a row.
func rankNote(r RankRow) string {
	if r.Class == 1 {
		return fmt.Sprintf("class 1 (best)  score %.2f", r.Score)
	}
	return fmt.Sprintf("class %d  score %.2f", r.Class, r.Score)
}

// rankNoteGap separates the notes from the data.
const rankNoteGap = 6

// rankPlotter draws the class bands and the notes right of them; it
// reserves the notes' width right of the data (plot.GlyphBoxer).
type rankPlotter struct {
	rows  []RankRow
	scale float64   // axis units per second
	width vg.Length // the widest note
}

// GlyphBoxes implements plot.GlyphBoxer.
func (r *rankPlotter) GlyphBoxes(p *plot.Plot) []plot.GlyphBox {
	if r.width <= 0 {
		return nil
	}
	return []plot.GlyphBox{{X: 1, Y: 0.5, Rectangle: vg.Rectangle{Max: vg.Point{X: r.width + 2*rankNoteGap + legendMargin}}}}
}

// Plot implements plot.Plotter: the bands, under everything else.
func (r *rankPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	n := len(r.rows)
	right := c.Max.X + r.width + 2*rankNoteGap
	shade := false
	for i := 0; i < n; {
		j := i
		for j+1 < n && r.rows[j+1].Class == r.rows[i].Class {
			j++
		}
		// rows i..j, drawn from y = n-1-i (top) down to n-1-j.
		top, bottom := trY(float64(n-1-i)+0.5), trY(float64(n-1-j)-0.5)
		var fill color.Color
		switch {
		case r.rows[i].Class == 1:
			fill = rankBest
		case shade:
			fill = rankBand
		}
		if fill != nil {
			c.FillPolygon(fill, []vg.Point{{X: c.Min.X, Y: bottom}, {X: right, Y: bottom}, {X: right, Y: top}, {X: c.Min.X, Y: top}})
		}
		if i > 0 {
			c.StrokeLine2(draw.LineStyle{Color: color.Gray{170}, Width: vg.Points(0.75)}, c.Min.X, top, right, top)
		}
		shade = !shade
		i = j + 1
	}
	sty := rankText()
	for i, row := range r.rows {
		c.FillText(sty, vg.Point{X: c.Max.X + rankNoteGap, Y: trY(float64(n - 1 - i))}, rankNote(row))
	}
}

// rankMarks draws the intervals, means and minima over the grid.
type rankMarks struct{ r *rankPlotter }

// Plot implements plot.Plotter.
func (m *rankMarks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	n := len(m.r.rows)
	s := m.r.scale
	bar := draw.LineStyle{Color: rankMean, Width: vg.Points(1.5)}
	end := vg.Points(3)
	for i, row := range m.r.rows {
		y := trY(float64(n - 1 - i))
		if lo, hi := row.Lo, row.Hi; !math.IsNaN(lo) && !math.IsNaN(hi) && hi > lo {
			x0, x1 := trX(s*lo), trX(s*hi)
			c.StrokeLine2(bar, x0, y, x1, y)
			c.StrokeLine2(bar, x0, y-end, x0, y+end)
			c.StrokeLine2(bar, x1, y-end, x1, y+end)
		}
		if !math.IsNaN(row.Min) {
			c.DrawGlyph(draw.GlyphStyle{Color: rankMin, Radius: vg.Points(4), Shape: draw.PyramidGlyph{}}, vg.Point{X: trX(s * row.Min), Y: y})
		}
		if !math.IsNaN(row.Mean) {
			c.DrawGlyph(draw.GlyphStyle{Color: rankMean, Radius: vg.Points(3.5), Shape: draw.CircleGlyph{}}, vg.Point{X: trX(s * row.Mean), Y: y})
		}
	}
}
