package plots

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"

	"github.com/approxtune/approxtune/internal/format"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Config is one configuration's times.
type Config struct {
	Label        string
	Ref          float64            // mean reference time (NaN without references)
	RefLo, RefHi float64            // its 95% interval
	Predicted    map[string]float64 // predicted time per series (e.g. "eager 2^-3")
	Best, Chosen bool               // least reference time / least predicted time
}

// MaxBars is the most configurations Configs draws as labelled bars; more
// are drawn as points against their index.
const MaxBars = 40

// labelsFit says whether labels, as p's X tick labels, fit side by side in
// the room a figure has for its data: fifteen configurations of three
// parameters had run their labels together ("grid=1x4grid=1x4..."), far
// under MaxBars.
func labelsFit(p *plot.Plot, labels []string) bool {
	if len(labels) == 0 {
		return true
	}
	room := (Width - vg.Points(80)) / vg.Length(len(labels)) // the Y axis takes about 80 points
	for _, l := range labels {
		if p.X.Tick.Label.Width(l)+vg.Points(4) > room {
			return false
		}
	}
	return true
}

// Configs draws, per configuration, the reference time (bar with its 95%
// interval) next to each series' predicted time; the best configuration and
// the chosen one are marked in the tick labels. Past MaxBars configurations,
// or labels that do not fit side by side, they could not be read: each
// series is a line of points against the configuration's index (as in
// 'table configs'), the best and the chosen marked by glyphs with their
// index in the legend.
func Configs(cs []Config, series []string) (*plot.Plot, error) {
	p := newPlot("Time per configuration", "", "time (s)")
	labels := make([]string, len(cs))
	for i, c := range cs {
		labels[i] = strings.ReplaceAll(c.Label, " ", "\n")
	}
	if len(cs) > MaxBars || !labelsFit(p, labels) {
		return configPoints(cs, series)
	}
	p.Legend.Top, p.Legend.Left = true, false
	n := 1 + len(series)
	width := vg.Points(math.Max(4, math.Min(22, 480/float64(len(cs)*n+1))))
	var names []string
	for i, c := range cs {
		l := labels[i]
		switch {
		case c.Best && c.Chosen:
			l += "\n★ best = chosen"
		case c.Best:
			l += "\n★ best"
		case c.Chosen:
			l += "\n▲ chosen"
		}
		names = append(names, l)
	}
	ymax := 0.0
	ref := make(plotter.Values, len(cs))
	errs := refErrors(cs)
	for i, c := range cs {
		ref[i] = finite(c.Ref)
		ymax = math.Max(ymax, finite(c.RefHi))
	}
	offset := func(k int) vg.Length { return width * vg.Length(float64(k)-float64(n-1)/2) }
	rb, err := plotter.NewBarChart(ref, width)
	if err != nil {
		return nil, fmt.Errorf("plots: %w", err)
	}
	rb.Color, rb.LineStyle.Width, rb.Offset = color.Gray{170}, 0, offset(0)
	p.Add(rb)
	if slices.ContainsFunc(cs, func(c Config) bool { return finite(c.Ref) > 0 }) {
		p.Legend.Add("reference (full runs, 95% interval)", rb) // a tune sweep has none
	}
	eb := &barErrors{values: ref, errs: errs, offset: offset(0)}
	p.Add(eb)
	for k, s := range series {
		vals := make(plotter.Values, len(cs))
		for i, c := range cs {
			vals[i] = finite(c.Predicted[s])
			ymax = math.Max(ymax, vals[i])
		}
		b, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return nil, fmt.Errorf("plots: %w", err)
		}
		pol := s
		if i := indexSpace(s); i > 0 {
			pol = s[:i]
		}
		b.Color, b.LineStyle.Width, b.Offset = lighten(policyColor(pol), k), 0, offset(k+1)
		p.Add(b)
		p.Legend.Add("predicted: "+s, b)
	}
	p.NominalX(names...)
	// Half a configuration's room on either side: the axis ended at the
	// last configuration's centre, and its right-hand bars were cut.
	p.X.Min, p.X.Max = -0.5, float64(len(cs))-0.5
	p.Y.Min, p.Y.Max = 0, math.Max(ymax*1.5, 1e-9)
	return p, nil
}

// segments splits the finite values of ys, at x = their index, into runs
// of neighbouring indices.
func segments(ys []float64) []plotter.XYs {
	var segs []plotter.XYs
	for i, y := range ys {
		if math.IsNaN(y) || math.IsInf(y, 0) {
			continue
		}
		pt := plotter.XY{X: float64(i), Y: y}
		if n := len(segs); n > 0 && segs[n-1][len(segs[n-1])-1].X == float64(i-1) {
			segs[n-1] = append(segs[n-1], pt)
		} else {
			segs = append(segs, plotter.XYs{pt})
		}
	}
	return segs
}

// configPoints is Configs for many configurations.
func configPoints(cs []Config, series []string) (*plot.Plot, error) {
	p := newPlot(fmt.Sprintf("Time per configuration (%d)", len(cs)), "configuration (index, as in 'table configs')", "time (s)")
	p.X.Tick.Marker = indexTicks{}
	p.Legend.Top, p.Legend.Left = true, false
	ymax := 0.0
	// A series is drawn as lines through neighbouring configurations
	// only: across configurations it has no value for (a tune search's
	// references, of its finalists alone) a line had joined two far apart
	// as if those between had values on it. A value with no neighbour is
	// a dot.
	line := func(ys func(c Config) float64, col color.Color, name string) error {
		v := make([]float64, len(cs))
		for i, c := range cs {
			v[i] = ys(c)
		}
		for k, xy := range segments(v) {
			for _, q := range xy {
				ymax = math.Max(ymax, q.Y)
			}
			l, pts, err := plotter.NewLinePoints(xy)
			if err != nil {
				return fmt.Errorf("plots: %w", err)
			}
			l.Color, l.Width = col, vg.Points(1)
			pts.Color, pts.Radius, pts.Shape = col, vg.Points(2.5), draw.CircleGlyph{}
			if len(xy) > 1 {
				pts.Radius = 0 // a line shows it
			}
			p.Add(l, pts)
			if k == 0 {
				p.Legend.Add(name, l)
			}
		}
		return nil
	}
	if err := line(func(c Config) float64 { return c.Ref }, color.Gray{120}, "reference (mean of full runs)"); err != nil {
		return nil, err
	}
	for k, s := range series {
		pol := s
		if i := indexSpace(s); i > 0 {
			pol = s[:i]
		}
		if err := line(func(c Config) float64 { return c.Predicted[s] }, lighten(policyColor(pol), k), "predicted: "+s); err != nil {
			return nil, err
		}
	}
	mark := func(is func(c Config) bool, y func(c Config) float64, shape draw.GlyphDrawer, what string) error {
		for i, c := range cs {
			if !is(c) || math.IsNaN(y(c)) {
				continue
			}
			sc, err := plotter.NewScatter(plotter.XYs{{X: float64(i), Y: y(c)}})
			if err != nil {
				return fmt.Errorf("plots: %w", err)
			}
			sc.GlyphStyle = draw.GlyphStyle{Color: color.Black, Radius: vg.Points(5), Shape: shape}
			p.Add(sc)
			p.Legend.Add(fmt.Sprintf("%s: %d", what, i), sc)
		}
		return nil
	}
	firstPred := func(c Config) float64 {
		for _, s := range series {
			if v, ok := c.Predicted[s]; ok {
				return v
			}
		}
		return math.NaN()
	}
	if err := mark(func(c Config) bool { return c.Best }, func(c Config) float64 { return c.Ref }, draw.PyramidGlyph{}, "best"); err != nil {
		return nil, err
	}
	if err := mark(func(c Config) bool { return c.Chosen }, firstPred, draw.CircleGlyph{}, "chosen"); err != nil {
		return nil, err
	}
	p.X.Min, p.X.Max = 0, float64(len(cs)-1)
	p.Y.Min, p.Y.Max = 0, math.Max(ymax*1.3, 1e-9)
	return p, nil
}

func indexSpace(s string) int {
	for i, c := range s {
		if c == ' ' {
			return i
		}
	}
	return -1
}

// lighten gives successive series of one policy lighter shades.
func lighten(c color.Color, k int) color.Color {
	r, g, b, _ := c.RGBA()
	f := math.Min(0.6, 0.18*float64(k%4))
	mix := func(v uint32) uint8 { return uint8(float64(v>>8) + (255-float64(v>>8))*f) }
	return color.RGBA{mix(r), mix(g), mix(b), 255}
}

func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return x
}

// refErrors are the whiskers of the references' 95% intervals, below and
// above each mean. A time is not below 0: an interval from two or three
// runs may reach under it, and its whisker crossed the axis's labels.
func refErrors(cs []Config) plotter.YErrors {
	var errs plotter.YErrors
	for _, c := range cs {
		lo, hi := finite(c.Ref-math.Max(c.RefLo, 0)), finite(c.RefHi-c.Ref)
		errs = append(errs, struct{ Low, High float64 }{lo, hi})
	}
	return errs
}

// barErrors draws vertical error bars over bars placed like a BarChart with offset.
type barErrors struct {
	values plotter.Values
	errs   plotter.YErrors
	offset vg.Length
}

func (e *barErrors) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	ls := draw.LineStyle{Color: color.Black, Width: vg.Points(1)}
	for i, v := range e.values {
		if e.errs[i].Low == 0 && e.errs[i].High == 0 {
			continue
		}
		x := trX(float64(i)) + e.offset
		lo, hi := trY(v-e.errs[i].Low), trY(v+e.errs[i].High)
		c.StrokeLine2(ls, x, lo, x, hi)
		c.StrokeLine2(ls, x-vg.Points(3), lo, x+vg.Points(3), lo)
		c.StrokeLine2(ls, x-vg.Points(3), hi, x+vg.Points(3), hi)
	}
}

// Kernel is one kernel's state after a run.
type Kernel struct {
	Key      string
	Samples  int64
	RelHalf  float64 // confidence half-width / mean (NaN below 2 samples)
	Executed int64   // calls executed in the run
	Skipped  int64   // calls skipped in the run
}

// Kernels draws each kernel's relative half-width against its samples (log
// axes), skipped and still-executing kernels apart, with the tolerance line.
func Kernels(ks []Kernel, tolerance float64) (*plot.Plot, error) {
	p := newPlot("Kernel convergence", "samples (executions)", "relative half-width of the mean")
	p.X.Scale, p.Y.Scale = logScale{}, logScale{}
	p.X.Tick.Marker, p.Y.Tick.Marker = countTicks{}, percentLogTicks{}
	var skipped, executing plotter.XYs
	var nExec, nSkip int64
	xmax, ymin, ymax := 2.0, math.Max(tolerance/4, errFloor), math.Max(tolerance*2, 0.01)
	for _, k := range ks {
		nExec += k.Executed
		nSkip += k.Skipped
		if k.Samples < 1 || math.IsNaN(k.RelHalf) || math.IsInf(k.RelHalf, 0) || k.RelHalf < 0 {
			continue
		}
		pt := plotter.XY{X: float64(k.Samples), Y: math.Max(k.RelHalf, errFloor)}
		xmax, ymin, ymax = math.Max(xmax, pt.X), math.Min(ymin, pt.Y), math.Max(ymax, pt.Y)
		if k.Skipped > 0 {
			skipped = append(skipped, pt)
		} else {
			executing = append(executing, pt)
		}
	}
	for _, set := range []struct {
		xy    plotter.XYs
		name  string
		color color.Color
		shape draw.GlyphDrawer
	}{
		{executing, fmt.Sprintf("still executed (%s)", calls(nExec)), color.RGBA{31, 119, 180, 255}, draw.CircleGlyph{}},
		{skipped, fmt.Sprintf("skipped in the run (%s)", calls(nSkip)), color.RGBA{148, 103, 189, 255}, draw.TriangleGlyph{}},
	} {
		if len(set.xy) == 0 {
			continue
		}
		s, err := plotter.NewScatter(set.xy)
		if err != nil {
			return nil, fmt.Errorf("plots: %w", err)
		}
		s.Color, s.Shape, s.Radius = set.color, set.shape, vg.Points(4)
		p.Add(s)
		p.Legend.Add(set.name, s)
	}
	if tolerance > 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: 1, Y: tolerance}, {X: xmax * 1.5, Y: tolerance}})
		if err != nil {
			return nil, err
		}
		l.Color, l.Dashes, l.Width = color.RGBA{200, 30, 30, 255}, []vg.Length{vg.Points(5), vg.Points(4)}, vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(fmt.Sprintf("tolerance ε = %s", format.Tolerance(tolerance)), l)
	}
	p.X.Min, p.X.Max = 1, xmax*1.5
	p.Y.Min, p.Y.Max = ymin/1.5, ymax*1.5
	clearOfLegend(p, append(slices.Clone(executing), skipped...), true) // a kernel at 110% had lain under it
	return p, nil
}

// PathBar is one configuration's predicted critical path.
type PathBar struct {
	Label            string
	Comp, Comm, Idle float64 // predicted path parts
	Ref              float64 // mean reference time (NaN without)
}

// Path draws, per configuration, the predicted critical path stacked by part
// (computation, communication, idle and other), with the reference time as a
// marker. Past MaxBars configurations, or labels that do not fit side by
// side (they overlapped into a black band), the axis numbers them by index
// as 'table configs' does.
func Path(bs []PathBar, title string) (*plot.Plot, error) {
	p := newPlot(title, "", "time (s)")
	var names []string
	comp, comm, idle := make(plotter.Values, len(bs)), make(plotter.Values, len(bs)), make(plotter.Values, len(bs))
	var refs plotter.XYs
	ymax := 0.0
	for i, b := range bs {
		names = append(names, strings.ReplaceAll(b.Label, " ", "\n"))
		comp[i], comm[i], idle[i] = finite(b.Comp), finite(b.Comm), math.Max(0, finite(b.Idle))
		ymax = math.Max(ymax, comp[i]+comm[i]+idle[i])
		if !math.IsNaN(b.Ref) {
			refs = append(refs, plotter.XY{X: float64(i), Y: b.Ref})
			ymax = math.Max(ymax, b.Ref)
		}
	}
	many := len(bs) > MaxBars || !labelsFit(p, names)
	w := vg.Points(math.Max(6, math.Min(40, 500/float64(len(bs)+1))))
	if many { // bars of 6 points overlapped into a grey field
		w = vg.Points(math.Max(0.5, 500/float64(len(bs)+1)))
	}
	var below *plotter.BarChart
	for _, part := range []struct {
		v    plotter.Values
		name string
		c    color.Color
	}{
		{comp, "computation", color.RGBA{31, 119, 180, 255}},
		{comm, "communication", color.RGBA{255, 127, 14, 255}},
		{idle, "idle and other", color.RGBA{190, 190, 190, 255}},
	} {
		b, err := plotter.NewBarChart(part.v, w)
		if err != nil {
			return nil, fmt.Errorf("plots: %w", err)
		}
		b.Color, b.LineStyle.Width = part.c, 0
		if below != nil {
			b.StackOn(below)
		}
		below = b
		p.Add(b)
		p.Legend.Add(part.name+" (predicted)", b)
	}
	if len(refs) > 0 {
		s, err := plotter.NewScatter(refs)
		if err != nil {
			return nil, err
		}
		s.Shape, s.Color, s.Radius = draw.BoxGlyph{}, color.Black, vg.Points(4)
		p.Add(s)
		p.Legend.Add("reference (full runs)", s)
	}
	if many {
		p.X.Label.Text = "configuration (index, as in 'table configs')"
		p.X.Tick.Marker = indexTicks{}
		p.X.Min, p.X.Max = -0.5, float64(len(bs))-0.5
	} else {
		p.NominalX(names...)
		// Half a configuration's room on either side, as in Configs:
		// the last bar and its label had been cut at the figure's edge.
		p.X.Min, p.X.Max = -0.5, float64(len(bs))-0.5
	}
	p.Y.Min, p.Y.Max = 0, math.Max(ymax*1.45, 1e-9)
	return p, nil
}

// calls is "1 call" or "N calls".
func calls(n int64) string {
	if n == 1 {
		return "1 call"
	}
	return fmt.Sprintf("%d calls", n)
}
