package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// SearchPoint is one configuration's time in one round of a search.
type SearchPoint struct {
	Time float64 // predicted seconds in a selective round, measured in the full round
	Kept bool    // it survived the round (in the full round: the chosen one)
	// Cut: its run was cut short once its prediction passed the round's
	// cutoff, and dropped. Time is its prediction where it stopped, a
	// lower bound of the whole run's, and is drawn apart: a hollow
	// triangle pointing up.
	Cut bool
}

// SearchRound is one round of a search as drawn: its x-axis label (the
// tolerance, or "full"), the configurations it ran and the time above
// which it dropped them (0: none, as in the full round). A column of
// references (Reference: an evaluate search's, to judge it) is no round:
// its dots are every configuration's reference time, Kept unused.
type SearchRound struct {
	Label     string
	Points    []SearchPoint
	Threshold float64
	Reference bool
	// Full marks the round of full runs, whose Kept point is the chosen
	// one: a selective round under way (no threshold yet) had been taken
	// for it, and its points drawn as chosen.
	Full bool
}

// Search colors: survivors, the dropped, those cut short, the chosen one,
// the threshold, the references.
var (
	searchKept      = color.RGBA{31, 119, 180, 255}
	searchDropped   = color.RGBA{170, 170, 170, 255}
	searchCut       = color.Gray{90} // a hollow glyph's thin outline: darker than searchDropped's dots
	searchChosen    = color.RGBA{44, 160, 44, 255}
	searchThreshold = color.RGBA{214, 39, 40, 255}
	searchReference = color.Gray{70}
)

// Search draws successive halving's funnel: a column per round (loosest
// tolerance on the left, the full runs last), each configuration the round
// ran a dot at its time on a log axis, survivors blue and the dropped
// grey (a run cut short a hollow grey triangle at its time when cut, a
// lower bound), the round's drop threshold a red dash; in the full round the
// chosen configuration is green and the other finalists blue. A column of
// references is dark grey. best, when positive, is the least reference
// time over the whole space (an evaluate search), a dotted line.
func Search(rounds []SearchRound, best float64, title string) (*plot.Plot, error) {
	if len(rounds) == 0 {
		return nil, fmt.Errorf("plots: search: no round has ended")
	}
	p := newPlot(title, "round", "time per run")
	p.Legend.XOffs = -legendMargin // the line samples had run into the edge
	p.Y.Scale = logScale{}
	p.Y.Tick.Marker = logTicks{label: durationLabel}
	var ticks []plot.Tick
	lo, hi := math.Inf(1), math.Inf(-1)
	legend := map[string]bool{}
	for k, r := range rounds {
		x := float64(k + 1)
		ticks = append(ticks, plot.Tick{Value: x, Label: r.Label})
		var kept, dropped, cut plotter.XYs
		for j, pt := range r.Points {
			if !(pt.Time > 0) || math.IsInf(pt.Time, 0) {
				return nil, fmt.Errorf("plots: search: round %s: time %v, want a positive time", r.Label, pt.Time)
			}
			// Spread a round's dots a little, so equal times stay visible.
			xy := plotter.XY{X: x + 0.25*(float64(j%9)/8-0.5), Y: pt.Time}
			switch {
			case pt.Kept || r.Reference:
				kept = append(kept, xy)
			case pt.Cut:
				cut = append(cut, xy)
			default:
				dropped = append(dropped, xy)
			}
			lo, hi = math.Min(lo, pt.Time), math.Max(hi, pt.Time)
		}
		full := r.Full && !r.Reference
		sets := []struct {
			xy    plotter.XYs
			c     color.Color
			label string
			shape draw.GlyphDrawer
		}{{dropped, searchDropped, "dropped", draw.CircleGlyph{}}, {kept, searchKept, "kept", draw.CircleGlyph{}},
			{cut, searchCut, "cut short (at least)", draw.TriangleGlyph{}}}
		switch {
		case r.Reference:
			sets[1].c, sets[1].label = searchReference, "reference"
		case full: // the finalists not chosen were not dropped: they ran in full
			sets[0].c, sets[0].label = searchKept, "kept"
			sets[1].c, sets[1].label = searchChosen, "chosen"
		}
		for _, set := range sets {
			if len(set.xy) == 0 {
				continue
			}
			s, err := plotter.NewScatter(set.xy)
			if err != nil {
				return nil, err
			}
			s.GlyphStyle = draw.GlyphStyle{Color: set.c, Radius: vg.Points(3), Shape: set.shape}
			p.Add(s)
			if !legend[set.label] {
				legend[set.label] = true
				p.Legend.Add(set.label, s)
			}
		}
		if r.Threshold > 0 {
			l, err := plotter.NewLine(plotter.XYs{{X: x - 0.35, Y: r.Threshold}, {X: x + 0.35, Y: r.Threshold}})
			if err != nil {
				return nil, err
			}
			l.LineStyle = draw.LineStyle{Color: searchThreshold, Width: vg.Points(1.5), Dashes: []vg.Length{vg.Points(4), vg.Points(2)}}
			p.Add(l)
			if !legend["drop above"] {
				legend["drop above"] = true
				p.Legend.Add("drop above", l)
			}
			hi = math.Max(hi, r.Threshold)
		}
	}
	if best > 0 {
		l, err := plotter.NewLine(plotter.XYs{{X: 0.5, Y: best}, {X: float64(len(rounds)) + 0.5, Y: best}})
		if err != nil {
			return nil, err
		}
		l.LineStyle = draw.LineStyle{Color: color.Gray{60}, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(1), vg.Points(2)}}
		p.Add(l)
		p.Legend.Add("best reference", l)
		lo = math.Min(lo, best)
	}
	p.X.Min, p.X.Max = 0.5, float64(len(rounds))+0.5
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min, p.Y.Max = lo/1.15, hi*1.15
	return p, nil
}
