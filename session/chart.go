package session

import (
	"fmt"
	"math"
	"strings"

	"github.com/approxtune/approxtune/internal/format"
)

// ChartRow is one policy x tolerance of the chart the faces draw while a
// sweep runs (TextChart in a terminal, HTML in a notebook).
type ChartRow struct {
	Policy    string // "" when the same as the row above
	Tolerance float64
	HasRef    bool    // the sweep has reference runs (evaluate)
	Speedup   float64 // with references: the autotuning speed-up
	MeanError float64 // with references: the mean prediction error
	// SpeedFrac, ErrFrac and TolFrac are the speed-up, the mean error and
	// the tolerance as fractions (0 to 1) of the chart's scale, for bars.
	SpeedFrac, ErrFrac, TolFrac float64
	// Without references (tune): the configuration chosen so far, its
	// predicted time, the selective runs' total time and the
	// configurations run.
	Chosen    string
	Predicted float64
	Selective float64
	Configs   int
}

// ChartRows computes the rows of the chart of sw, one per policy x
// tolerance with results, in spec order, on the common scale of ChartScale.
func (s *Sweep) ChartRows() []ChartRow {
	sums := s.Summaries()
	maxS, maxE := ChartScale(sums)
	frac := func(v, max float64) float64 {
		if math.IsNaN(v) || max <= 0 {
			return 0
		}
		return math.Min(1, math.Max(0, v/max))
	}
	var rows []ChartRow
	prev := ""
	for _, sm := range sums {
		name := sm.Policy
		if name == prev {
			name = ""
		}
		prev = sm.Policy
		rows = append(rows, ChartRow{
			Policy: name, Tolerance: sm.Tolerance, HasRef: sm.HasRef,
			Speedup: sm.Speedup, MeanError: sm.MeanError,
			SpeedFrac: frac(sm.Speedup, maxS), ErrFrac: frac(sm.MeanError, maxE), TolFrac: frac(sm.Tolerance, maxE),
			Chosen: sm.Chosen, Predicted: sm.PredChosen, Selective: sm.SelTotal, Configs: sm.Configs,
		})
	}
	return rows
}

// chartBarWidth is the width of TextChart's bars, in characters.
const chartBarWidth = 16

// TextChart draws chart rows as text, a line each after a header: with
// references, the speed-up and the mean error as bars of block characters,
// the tolerance marked by '|' on the error's; without (tune), the
// configurations run, the predicted time of the configuration chosen so far
// and its name. color paints the speed-up bars green with ANSI escapes.
// It is "" without rows.
func TextChart(rows []ChartRow, color bool) string { return TextChartIn(rows, color, 0) }

// TextChartIn is TextChart in at most width columns where its bars can
// shrink to fit (0: their full width): a 60-column terminal had cut every
// row's error figure off.
func TextChartIn(rows []ChartRow, color bool, width int) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	if !rows[0].HasRef {
		fmt.Fprintf(&b, "%-12s %-6s %7s %12s  %s\n", "policy", "tol", "configs", "predicted s", "chosen so far")
		for _, r := range rows {
			fmt.Fprintf(&b, "%-12s %-6s %7d %12s  %s\n", r.Policy, format.Tolerance(r.Tolerance), r.Configs, format.SecondsOrNone(r.Predicted), r.Chosen)
		}
		return b.String()
	}
	bar := chartBarWidth
	if width > 0 {
		// Policy, tolerance, the two figures and the spaces take 36.
		bar = max(4, min(chartBarWidth, (width-36)/2))
	}
	head := "mean error (| tolerance)"
	if bar < chartBarWidth {
		head = "error (| tol)"
	}
	fmt.Fprintf(&b, "%-12s %-6s %-*s %s\n", "policy", "tol", bar+8, "speed-up", head)
	for _, r := range rows {
		eb := []rune(textBar(r.ErrFrac, bar))
		if tp := min(int(math.Round(r.TolFrac*float64(bar))), bar-1); eb[tp] == ' ' {
			eb[tp] = '|'
		}
		sb := textBar(r.SpeedFrac, bar)
		if color {
			sb = "\033[32m" + sb + "\033[0m"
		}
		fmt.Fprintf(&b, "%-12s %-6s %s %6s  %s %6s\n", r.Policy, format.Tolerance(r.Tolerance), sb,
			format.Speedup(r.Speedup), string(eb), format.Percent(r.MeanError))
	}
	return b.String()
}

// textBar is a bar of block characters filling the fraction f of the width.
func textBar(f float64, width int) string {
	n := max(0, min(int(math.Round(f*float64(width))), width))
	return strings.Repeat("█", n) + strings.Repeat(" ", width-n)
}
