package plots

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// GanttSpan is one kernel on a rank's timeline, in seconds from the run's
// start. An executed kernel spans its execution; a skipped one is the instant
// it was skipped, with the predicted time it was charged instead.
type GanttSpan struct {
	Routine    string // "gemm", "bcast", ...
	Start, End float64
	Predicted  float64 // skipped: the predicted time charged
	Skipped    bool
	Comm       bool // a communication (drawn in the warm family of colors)
	Anomalous  bool // executed and slower than its size predicts: outlined
}

// GanttLane is one rank's timeline.
type GanttLane struct {
	Rank    int
	Spans   []GanttSpan
	Dropped int64 // spans past the agent's cap, not recorded
}

// swatch is a routine's color in a palette.
type swatch struct {
	name string
	c    color.RGBA
}

// Routine palettes: computation routines in cool colors, communication in
// warm ones, each routine always the same color.
var (
	compColors = []swatch{
		{"gemm", color.RGBA{31, 119, 180, 255}},
		{"syrk", color.RGBA{44, 160, 44, 255}},
		{"trsm", color.RGBA{148, 103, 189, 255}},
		{"trmm", color.RGBA{23, 190, 207, 255}},
		{"potrf", color.RGBA{57, 59, 121, 255}},
		{"trtri", color.RGBA{116, 196, 118, 255}},
		{"geqrf", color.RGBA{0, 109, 119, 255}},
		{"larft", color.RGBA{158, 154, 200, 255}},
		{"larfb", color.RGBA{49, 130, 189, 255}},
		{"spin", color.RGBA{82, 84, 163, 255}},
	}
	commColors = []swatch{
		{"bcast", color.RGBA{255, 127, 14, 255}},
		{"allreduce", color.RGBA{214, 39, 40, 255}},
		{"reduce", color.RGBA{240, 170, 60, 255}},
		{"allgather", color.RGBA{140, 86, 75, 255}},
		{"gather", color.RGBA{196, 156, 148, 255}},
		{"scatter", color.RGBA{140, 20, 60, 255}},
		{"send", color.RGBA{231, 41, 138, 255}},
		{"recv", color.RGBA{166, 54, 3, 255}},
		{"isend", color.RGBA{247, 129, 191, 255}},
		{"irecv", color.RGBA{230, 85, 13, 255}},
		{"barrier", color.RGBA{127, 127, 127, 255}},
	}
)

// routineColor is a routine's color: from the palette, or for a routine it
// does not name, a stable hash into the cool (computation) or warm
// (communication) family.
func routineColor(routine string, comm bool) color.RGBA {
	pal := compColors
	if comm {
		pal = commColors
	}
	for _, e := range pal {
		if e.name == routine {
			return e.c
		}
	}
	h := uint32(2166136261)
	for i := 0; i < len(routine); i++ {
		h = (h ^ uint32(routine[i])) * 16777619
	}
	hue := 190 + float64(h%90) // blues to violets
	if comm {
		hue = float64(h % 50) // reds to oranges
	}
	return hsv(hue, 0.65, 0.55+float64(h>>8%30)/100)
}

// routineRank orders routines for the legend: the palette's order,
// computation first, then unknown routines by name.
func routineRank(routine string, comm bool) int {
	pal, base := compColors, 0
	if comm {
		pal, base = commColors, 1000
	}
	for i, e := range pal {
		if e.name == routine {
			return base + i
		}
	}
	return base + 500
}

func hsv(h, s, v float64) color.RGBA {
	c := v * s
	x := c * (1 - math.Abs(math.Mod(h/60, 2)-1))
	var r, g, b float64
	switch {
	case h < 60:
		r, g = c, x
	case h < 120:
		r, g = x, c
	case h < 180:
		g, b = c, x
	case h < 240:
		g, b = x, c
	case h < 300:
		r, b = x, c
	default:
		r, b = c, x
	}
	m := v - c
	return color.RGBA{uint8(255 * (r + m)), uint8(255 * (g + m)), uint8(255 * (b + m)), 255}
}

// paleOf is a skipped kernel's fill: the routine's color, translucent.
func paleOf(c color.RGBA) color.NRGBA {
	return color.NRGBA{c.R, c.G, c.B, 80}
}

// Lane geometry, in lanes (1 apart): executed kernels fill the upper band,
// skipped ones the strip below it.
const (
	execLo, execHi = -0.08, 0.40
	skipLo, skipHi = -0.40, -0.16
)

// ganttBox is one span placed on the figure: lane index (0 is the top lane,
// at y = lanes-1), x in the axis unit.
type ganttBox struct {
	lane    int
	x0, x1  float64
	color   color.RGBA
	skipped bool
	flagged bool // anomalous: outlined
}

// ganttLegend is a routine as the legend shows it.
type ganttLegend struct {
	routine string
	comm    bool
	color   color.RGBA
}

// ganttLayout is the data mapping of a Gantt figure.
type ganttLayout struct {
	lanes   int
	unit    string  // "s", "ms" or "µs"
	scale   float64 // axis units per second
	xmax    float64 // in axis units
	boxes   []ganttBox
	legend  []ganttLegend
	skipped int
	flagged int
	dropped int64
	yTicks  []plot.Tick
}

// timeUnit picks the unit that keeps tick labels short for a run of t seconds.
func timeUnit(t float64) (string, float64) {
	switch {
	case t >= 1:
		return "s", 1
	case t >= 1e-3:
		return "ms", 1e3
	default:
		return "µs", 1e6
	}
}

// layoutGantt maps the lanes onto the figure.
func layoutGantt(lanes []GanttLane) ganttLayout {
	end := 0.0
	for _, l := range lanes {
		for _, s := range l.Spans {
			end = math.Max(end, finite(s.End))
		}
	}
	ly := ganttLayout{lanes: len(lanes)}
	ly.unit, ly.scale = timeUnit(end)
	ly.xmax = end * ly.scale
	if !(ly.xmax > 0) {
		ly.xmax = 1
	}
	type routine struct {
		name string
		comm bool
	}
	seen := map[routine]bool{}
	for i, l := range lanes {
		ly.dropped += l.Dropped
		for _, s := range l.Spans {
			c := routineColor(s.Routine, s.Comm)
			if k := (routine{s.Routine, s.Comm}); !seen[k] {
				seen[k] = true
				name := s.Routine
				if name == "" {
					name = "(unnamed)"
				}
				ly.legend = append(ly.legend, ganttLegend{routine: name, comm: s.Comm, color: c})
			}
			x0 := math.Max(0, finite(s.Start)) * ly.scale
			x1 := math.Max(x0, finite(s.End)*ly.scale)
			if s.Skipped {
				ly.skipped++
			}
			flagged := s.Anomalous && !s.Skipped
			if flagged {
				ly.flagged++
			}
			ly.boxes = append(ly.boxes, ganttBox{lane: i, x0: x0, x1: x1, color: c, skipped: s.Skipped, flagged: flagged})
		}
	}
	slices.SortStableFunc(ly.legend, func(a, b ganttLegend) int {
		ra, rb := routineRank(a.routine, a.comm), routineRank(b.routine, b.comm)
		if ra != rb {
			return ra - rb
		}
		if a.routine < b.routine {
			return -1
		}
		if a.routine > b.routine {
			return 1
		}
		return 0
	})
	step := max(1, (len(lanes)+23)/24) // at most about 24 labelled lanes
	for i, l := range lanes {
		t := plot.Tick{Value: float64(len(lanes) - 1 - i)}
		if i%step == 0 {
			t.Label = fmt.Sprint(l.Rank)
		}
		ly.yTicks = append(ly.yTicks, t)
	}
	return ly
}

// Gantt draws one run's timelines: a lane per rank (the first on top), x the
// time from the run's start, a box per kernel colored by routine
// (computation in cool colors, communication in warm ones). A skipped kernel
// takes no time: it is a narrow translucent outlined mark in a strip under
// its lane, at the instant it was skipped (its predicted time, which the
// figure does not show, is what the engine charged instead). An anomalous
// kernel (GanttSpan.Anomalous) is outlined in black. The legend sits right of
// the lanes, which are narrowed to make room.
func Gantt(lanes []GanttLane, title string) (*plot.Plot, error) {
	ly := layoutGantt(lanes)
	p := styledPlot(title, fmt.Sprintf("time from the run's start (%s)", ly.unit), "rank")
	if ly.dropped > 0 {
		p.X.Label.Text += fmt.Sprintf("; %d kernels past the per-rank cap not shown", ly.dropped)
	}
	grid := plotter.NewGrid()
	grid.Horizontal.Color = nil
	p.Add(grid)
	p.Add(&ganttPlotter{ly: ly})
	for _, l := range ly.legend {
		p.Legend.Add(l.routine, ganttThumb{fill: l.color})
	}
	if ly.skipped > 0 {
		p.Legend.Add("skipped (pale, below)", ganttThumb{fill: paleOf(color.RGBA{110, 110, 110, 255}), line: color.Gray{90}, low: true})
	}
	if ly.flagged > 0 {
		p.Legend.Add("anomalous", ganttThumb{fill: color.White, line: flagColor, width: 1.5})
	}
	p.Legend.Top, p.Legend.Left = true, false
	p.Legend.Padding = vg.Points(1.5)
	p.Legend.XOffs = -legendMargin
	p.X.Min, p.X.Max = 0, ly.xmax*1.03 // room for the marks of kernels skipped at the end
	p.X.Tick.Marker = linearTicks{}
	n := math.Max(1, float64(ly.lanes))
	p.Y.Min, p.Y.Max = -0.5, n-0.5
	p.Y.Tick.Marker = plot.ConstantTicks(ly.yTicks)
	if ly.lanes == 0 {
		p.Title.Text += " (no timeline)"
	}
	fitTitle(p)
	return p, nil
}

// fitTitle shortens a title wider than the figure, ending it with "...".
func fitTitle(p *plot.Plot) {
	room := Width - 2*vg.Points(legendMargin)
	if p.Title.TextStyle.Width(p.Title.Text) <= room {
		return
	}
	r := []rune(p.Title.Text)
	for n := len(r) - 1; n > 0; n-- {
		if t := strings.TrimRight(string(r[:n]), " ,") + "..."; p.Title.TextStyle.Width(t) <= room {
			p.Title.Text = t
			return
		}
	}
}

// linearTicks labels a linear axis at 1-2-5 steps, about labels of them
// (0: eight), with as few decimals as the step needs.
type linearTicks struct{ labels int }

// Ticks implements plot.Ticker.
func (t linearTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return nil
	}
	n := t.labels
	if n <= 0 {
		n = 8
	}
	raw := (hi - lo) / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	prec := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	var ts []plot.Tick
	for k := math.Ceil(lo / step * 2); k/2*step <= hi+step*1e-9; k++ {
		v := k / 2 * step
		if v == 0 {
			v = 0 // not -0, which was labelled "-0"
		}
		tk := plot.Tick{Value: v}
		if int(k)%2 == 0 {
			tk.Label = strconv.FormatFloat(v, 'f', prec, 64)
		}
		ts = append(ts, tk)
	}
	return ts
}

// ganttPlotter draws the boxes of a Gantt figure. Each lane's band is cut
// into columns half a point wide, each showing the routine that covers most
// of it, and runs of columns of one routine become one rectangle; the
// rectangles of a color are one path. Thousands of kernels thus cost a few
// fills, and kernels narrower than a pixel still show.
type ganttPlotter struct{ ly ganttLayout }

// legendGap separates the lanes from the legend on their right, and
// legendMargin the legend from the figure's edge.
const (
	legendGap    = 10
	legendMargin = 6
)

// GlyphBoxes reserves the legend's width right of the data (plot.GlyphBoxer),
// so the lanes are narrowed and the legend never covers a box.
func (g *ganttPlotter) GlyphBoxes(p *plot.Plot) []plot.GlyphBox {
	r := p.Legend.Rectangle(draw.Canvas{})
	w := r.Max.X - r.Min.X
	if w <= 0 {
		return nil
	}
	return []plot.GlyphBox{{X: 1, Y: 0.5, Rectangle: vg.Rectangle{Max: vg.Point{X: w + legendGap + legendMargin}}}}
}

// Column width, the least width of an executed kernel's box (so short
// kernels show) and the width of a skipped kernel's mark.
const (
	colWidth = vg.Length(0.5)
	minBox   = vg.Length(0.75)
	skipMark = vg.Length(2.5)
	// edgeWidth is the least width of a kernel whose start is marked by
	// a thin white line, so back-to-back kernels of one routine show apart.
	edgeWidth = vg.Length(4)
)

// run is a range of columns [from, to) of one color (an index in columns.colors).
type run struct{ from, to, color int }

// columns is one lane's band cut into columns: per column the routine
// color that covers most of it (-1: none) and how much.
type columns struct {
	cover  []vg.Length
	who    []int
	colors []color.RGBA
}

func (cs *columns) reset() {
	for i := range cs.cover {
		cs.cover[i], cs.who[i] = 0, -1
	}
}

func (cs *columns) index(c color.RGBA) int {
	for i, x := range cs.colors {
		if x == c {
			return i
		}
	}
	cs.colors = append(cs.colors, c)
	return len(cs.colors) - 1
}

// add lays a box from x0 to x1 (relative to the band's start), at least
// least wide, over the columns.
func (cs *columns) add(x0, x1, least vg.Length, c color.RGBA) {
	if x1-x0 < least {
		x1 = x0 + least
	}
	k := cs.index(c)
	last := len(cs.cover) - 1
	for i := max(0, int(x0/colWidth)); i <= min(last, int(x1/colWidth)); i++ {
		lo, hi := vg.Length(i)*colWidth, vg.Length(i+1)*colWidth
		if ov := min(x1, hi) - max(x0, lo); ov > cs.cover[i] {
			cs.cover[i], cs.who[i] = ov, k
		}
	}
}

// runs returns the columns' runs of one color.
func (cs *columns) runs(dst []run) []run {
	for i := 0; i < len(cs.who); {
		if cs.who[i] < 0 {
			i++
			continue
		}
		j := i + 1
		for j < len(cs.who) && cs.who[j] == cs.who[i] {
			j++
		}
		dst = append(dst, run{i, j, cs.who[i]})
		i = j
	}
	return dst
}

// Plot implements plot.Plotter.
func (g *ganttPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	ly := g.ly
	sep := draw.LineStyle{Color: color.Gray{215}, Width: vg.Points(0.5)}
	for k := 1; k < ly.lanes; k++ {
		y := trY(float64(k) - 0.5)
		c.StrokeLine2(sep, c.Min.X, y, c.Max.X, y)
	}
	n := int((c.Max.X-c.Min.X)/colWidth) + 1
	if n < 1 || ly.lanes == 0 {
		return
	}
	var exec, skip columns
	for _, cs := range []*columns{&exec, &skip} {
		cs.cover, cs.who = make([]vg.Length, n), make([]int, n)
	}
	execPaths := map[color.RGBA]*vg.Path{}
	skipPaths := map[color.RGBA]*vg.Path{}
	var order []color.RGBA
	rect := func(paths map[color.RGBA]*vg.Path, col color.RGBA, r run, y0, y1 vg.Length) {
		path := paths[col]
		if path == nil {
			path = &vg.Path{}
			paths[col] = path
			if !slices.Contains(order, col) {
				order = append(order, col)
			}
		}
		x0, x1 := c.Min.X+vg.Length(r.from)*colWidth, min(c.Max.X, c.Min.X+vg.Length(r.to)*colWidth)
		path.Move(vg.Point{X: x0, Y: y0})
		path.Line(vg.Point{X: x1, Y: y0})
		path.Line(vg.Point{X: x1, Y: y1})
		path.Line(vg.Point{X: x0, Y: y1})
		path.Close()
	}
	var runs []run
	var edges vg.Path   // where a kernel wide enough to tell apart starts
	var outline vg.Path // around the anomalous kernels
	b := ly.boxes
	for lane := 0; lane < ly.lanes; lane++ {
		exec.reset()
		skip.reset()
		yc := float64(ly.lanes - 1 - lane)
		for len(b) > 0 && b[0].lane == lane {
			cs, least := &exec, minBox
			if b[0].skipped {
				cs, least = &skip, skipMark
			}
			x0, x1 := trX(b[0].x0), trX(b[0].x1)
			cs.add(x0-c.Min.X, x1-c.Min.X, least, b[0].color)
			if !b[0].skipped && x1-x0 >= edgeWidth && x0 > c.Min.X {
				edges.Move(vg.Point{X: x0, Y: trY(yc + execLo)})
				edges.Line(vg.Point{X: x0, Y: trY(yc + execHi)})
			}
			if b[0].flagged {
				x1 = max(x1, x0+minBox)
				y0, y1 := trY(yc+execLo-flagPad), trY(yc+execHi+flagPad)
				outline.Move(vg.Point{X: x0, Y: y0})
				outline.Line(vg.Point{X: x1, Y: y0})
				outline.Line(vg.Point{X: x1, Y: y1})
				outline.Line(vg.Point{X: x0, Y: y1})
				outline.Close()
			}
			b = b[1:]
		}
		for _, band := range []struct {
			cs     *columns
			paths  map[color.RGBA]*vg.Path
			lo, hi float64
		}{{&exec, execPaths, execLo, execHi}, {&skip, skipPaths, skipLo, skipHi}} {
			runs = band.cs.runs(runs[:0])
			for _, r := range runs {
				rect(band.paths, band.cs.colors[r.color], r, trY(yc+band.lo), trY(yc+band.hi))
			}
		}
	}
	for _, col := range order {
		if path := execPaths[col]; path != nil {
			c.SetColor(col)
			c.Fill(*path)
		}
	}
	for _, col := range order {
		if path := skipPaths[col]; path != nil {
			c.SetColor(paleOf(col))
			c.Fill(*path)
			c.SetLineStyle(draw.LineStyle{Color: col, Width: vg.Points(0.5)})
			c.Stroke(*path)
		}
	}
	// Back-to-back kernels of one routine stay apart.
	c.SetLineStyle(draw.LineStyle{Color: color.White, Width: vg.Points(0.75)})
	c.Stroke(edges)
	c.SetLineStyle(draw.LineStyle{Color: flagColor, Width: vg.Points(1.5)})
	c.Stroke(outline)
}

// flagPad is how far, in lanes, an anomalous kernel's outline stands out
// of the executed band.
const flagPad = 0.04

// ganttThumb is a legend entry's box: a routine's color, or the skipped
// style (translucent, outlined, in the lower strip).
type ganttThumb struct {
	fill  color.Color
	line  color.Color
	low   bool
	width float64 // the outline's width in points (0: 0.5)
}

// Thumbnail implements plot.Thumbnailer.
func (t ganttThumb) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	h := r.Max.Y - r.Min.Y
	y0, y1 := r.Min.Y+0.1*h, r.Max.Y-0.1*h
	if t.low {
		y1 = r.Min.Y + 0.55*h
	}
	pts := []vg.Point{{X: r.Min.X, Y: y0}, {X: r.Max.X, Y: y0}, {X: r.Max.X, Y: y1}, {X: r.Min.X, Y: y1}}
	c.FillPolygon(t.fill, pts)
	if t.line != nil {
		w := t.width
		if w == 0 {
			w = 0.5
		}
		c.StrokeLines(draw.LineStyle{Color: t.line, Width: vg.Points(w)}, append(pts, pts[0]))
	}
}
