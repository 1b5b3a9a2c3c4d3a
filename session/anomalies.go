package session

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot"

	"github.com/approxtune/approxtune/analysis"
	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/internal/plots"
	"github.com/approxtune/approxtune/sweep"
)

// anomalyLevel is the prediction interval's default level (paper 002's).
const anomalyLevel = 0.95

// anomalyRows is how many anomalies of each kind (computation, communication)
// 'anomalies' lists; the rest are counted.
const anomalyRows = 20

// anomalyPanels is how many routines 'plot anomalies' draws.
const anomalyPanels = 6

// traceAnomalies is one traced run's anomalous kernel executions: its
// executed spans as executions (analysis.Execution), where each came from,
// and their regression per routine (analysis.DetectAnomalies).
type traceAnomalies struct {
	trace *sweep.TraceEvent
	level float64
	execs []analysis.Execution
	at    [][2]int // per execution: its rank's index in trace.Ranks, its span's there
	start []float64
	// sized are the routines fitted against their size; the others (a
	// spin, a barrier) have none, and are fitted as one size.
	sized map[string]bool
	comm  map[string]bool
	// short counts the executed spans left out for want of a duration (under
	// the trace's 0.1 µs), unsized those without a size in a sized routine.
	short, unsized int
	report         analysis.AnomalyReport
}

// findAnomalies regresses, per routine, the log duration of tr's executed
// kernels on their log size (flops, or bytes per process) and flags those
// above the prediction interval at level.
func findAnomalies(tr *sweep.TraceEvent, level float64) (*traceAnomalies, error) {
	a := &traceAnomalies{trace: tr, level: level, sized: map[string]bool{}, comm: map[string]bool{}}
	// A communication on communicators of several sizes is as many
	// routines ("bcast p=4"): a broadcast on 1 process costs nothing, one
	// on 4 a transfer, and fitted together on their bytes alone they made
	// a curve that flagged the 4-process ones.
	procs := map[string]map[int]bool{}
	for _, rt := range tr.Ranks {
		for _, e := range rt.Events {
			if !e.Skipped && e.Comm && e.Procs > 0 {
				if procs[e.Routine] == nil {
					procs[e.Routine] = map[int]bool{}
				}
				procs[e.Routine][e.Procs] = true
			}
		}
	}
	routine := func(e sweep.Span) string {
		if len(procs[e.Routine]) > 1 {
			return fmt.Sprintf("%s p=%d", e.Routine, e.Procs)
		}
		return e.Routine
	}
	executed := 0
	for _, rt := range tr.Ranks {
		for _, e := range rt.Events {
			if !e.Skipped {
				executed++
				name := routine(e)
				a.comm[name] = e.Comm
				if e.Size > 0 {
					a.sized[name] = true
				}
			}
		}
	}
	if executed == 0 {
		return nil, fmt.Errorf("the traced run of config %d, %s at %s, executed no kernel (all were skipped): trace a run at a smaller tolerance, e.g. 'tolerance 0'",
			tr.Index, tr.Policy, format.Tolerance(tr.Tolerance))
	}
	for ri, rt := range tr.Ranks {
		for k, e := range rt.Events {
			if e.Skipped {
				continue
			}
			d, size, name := e.EndS-e.StartS, e.Size, routine(e)
			switch {
			case !(d > 0):
				a.short++
				continue
			case !a.sized[name]:
				size = 1
			case !(size > 0):
				a.unsized++
				continue
			}
			a.execs = append(a.execs, analysis.Execution{Routine: name, Rank: rt.Rank, Size: size, Duration: d})
			a.at = append(a.at, [2]int{ri, k})
			a.start = append(a.start, e.StartS)
		}
	}
	rep, err := analysis.DetectAnomalies(a.execs, level)
	if err != nil {
		return nil, err
	}
	a.report = rep
	return a, nil
}

// flaggedBy counts the anomalies per routine.
func (a *traceAnomalies) flaggedBy() map[string]int {
	n := map[string]int{}
	for _, x := range a.report.Anomalies {
		n[x.Routine]++
	}
	return n
}

// sizeUnit names what a routine's size counts.
func (a *traceAnomalies) sizeUnit(routine string) string {
	switch {
	case !a.sized[routine]:
		return ""
	case a.comm[routine]:
		return "bytes"
	}
	return "flops"
}

// fitText is a routine's fitted duration as a formula.
func (a *traceAnomalies) fitText(f analysis.RoutineFit) string {
	switch {
	case !a.sized[f.Routine]:
		return fmt.Sprintf("%s (no size: one duration)", duration(math.Exp(f.Intercept)))
	case f.Constant:
		return fmt.Sprintf("%s (one size)", duration(math.Exp(f.Intercept)))
	}
	return fmt.Sprintf("%.3g s · %s^%.3f", math.Exp(f.Intercept), a.sizeUnit(f.Routine), f.Slope)
}

// duration writes seconds with a unit and four significant digits:
// "368.8 ms", "1.214 ms", "551.1 µs".
func duration(s float64) string {
	v, unit := s*1e6, " µs"
	switch {
	case s >= 1:
		v, unit = s, " s"
	case s >= 1e-3:
		v, unit = s*1e3, " ms"
	}
	digits := 3
	if v >= 1 {
		digits = max(0, 3-int(math.Floor(math.Log10(v))))
	}
	return strconv.FormatFloat(v, 'f', digits, 64) + unit
}

// levelText writes a level as a percentage: "95%".
func levelText(level float64) string {
	return strconv.FormatFloat(100*level, 'f', -1, 64) + "%"
}

// table is what 'anomalies' prints: the flagged executions, computation's
// then communication's, each most above expectation first and at most
// anomalyRows of them, then a line per routine.
func (a *traceAnomalies) table(sw *Sweep) string {
	var b strings.Builder
	label, _ := traceLabels(sw, a.trace)
	fmt.Fprintf(&b, "anomalies of config %d (%s), %s at %s, %d ranks: %d of %d kernel executions above the %s prediction interval of their routine\n",
		a.trace.Index, label, a.trace.Policy, format.Tolerance(a.trace.Tolerance), len(a.trace.Ranks), len(a.report.Anomalies), len(a.execs), levelText(a.level))
	// Computation first: a communication's time includes the wait for its
	// partners, so a late sender makes a receive hundreds of times its
	// expected length, and those rows had filled the list ahead of slow
	// kernels.
	var comp, comm []analysis.Anomaly
	for _, x := range a.report.Anomalies {
		if a.comm[x.Routine] {
			comm = append(comm, x)
		} else {
			comp = append(comp, x)
		}
	}
	for _, part := range []struct {
		xs   []analysis.Anomaly
		head string
	}{
		{comp, "computation:"},
		{comm, "communication (a call's time includes the wait for its partners: a late sender counts here as much as a slow transfer):"},
	} {
		if len(part.xs) == 0 {
			continue
		}
		if len(comm) > 0 { // computation alone needs no heading
			b.WriteString(part.head + "\n")
		}
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "rank\troutine\tstart s\tduration\texpected\tupper bound\tx expected\t")
		for _, x := range part.xs[:min(anomalyRows, len(part.xs))] {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%.2fx\t\n", x.Rank, x.Routine, format.Seconds(a.start[x.Index]),
				duration(x.Duration), duration(x.Expected), duration(x.Upper), x.Ratio)
		}
		tw.Flush()
		if n := len(part.xs) - anomalyRows; n > 0 {
			fmt.Fprintf(&b, "(and %d more)\n", n)
		}
	}
	b.WriteString("fits of log duration on log size, per routine:\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "routine\texecutions\tfitted duration\tspread\tanomalies\t")
	flagged := a.flaggedBy()
	for _, f := range a.report.Fits {
		fmt.Fprintf(tw, "%s\t%d\t%s\tx%.3f\t%d\t\n", f.Routine, f.N, a.fitText(f), math.Exp(f.S), flagged[f.Routine])
	}
	tw.Flush()
	if len(a.report.Skipped) > 0 {
		fmt.Fprintf(&b, "not fitted (fewer than 3 executions): %s\n", strings.Join(a.report.Skipped, ", "))
	}
	if a.short > 0 {
		fmt.Fprintf(&b, "left out: %d executions too short to time (under 0.1 µs)\n", a.short)
	}
	if a.unsized > 0 {
		fmt.Fprintf(&b, "left out: %d executions of no size in routines whose others have one\n", a.unsized)
	}
	dropped := int64(0)
	for _, rt := range a.trace.Ranks {
		dropped += rt.Dropped
	}
	if dropped > 0 {
		fmt.Fprintf(&b, "not traced: %d kernels past the per-rank cap ('help trace')\n", dropped)
	}
	return b.String()
}

// cmdAnomalies is 'anomalies [config=N] [policy=P] [tolerance=T]
// [level=L]': the anomalous kernel executions of a traced run of the last
// sweep (default the last one traced).
func cmdAnomalies(s *Session, ctx context.Context, c *Command, out Output) error {
	var o FigureOptions
	level := anomalyLevel
	for _, a := range c.Args {
		switch a.Key {
		case "policy", "tolerance", "config":
			if err := runOption(a, &o); err != nil {
				return err
			}
		case "level":
			v, pct := strings.CutSuffix(a.Value, "%")
			l, err := strconv.ParseFloat(v, 64)
			if pct {
				l /= 100
			}
			if err != nil || !(l > 0 && l < 1) {
				return errAt(a.ValueCol, "level %q: want a probability in (0, 1), like 0.95 or 95%%", a.Value)
			}
			level = l
		default:
			return errAt(a.Col, "anomalies takes config=, policy=, tolerance= and level=, not %q", a.String())
		}
	}
	sw, err := lastSweep(s, c, out)
	if err != nil {
		return err
	}
	tr, err := pickTrace(sw, o)
	if err != nil {
		col := c.VerbCol // the sweep traced no run
		if strings.HasPrefix(err.Error(), "no traced run ") {
			// None is the run asked for: at its first option.
			if i := slices.IndexFunc(c.Args, func(a Arg) bool { return a.Key == "config" || a.Key == "policy" || a.Key == "tolerance" }); i >= 0 {
				col = c.Args[i].Col
			}
		}
		return errAt(col, "%v", err)
	}
	an, err := findAnomalies(tr, level)
	if err != nil {
		return errAt(c.VerbCol, "%v", err)
	}
	out.Print(an.table(sw))
	return nil
}

// anomaliesFigure draws 'plot anomalies': per routine (those with the most
// anomalies, then the most executions, up to anomalyPanels), duration
// against size with the fit and its interval, the anomalies marked.
func anomaliesFigure(sw *Sweep, o FigureOptions, sum *strings.Builder) (*plot.Plot, error) {
	tr, err := pickTrace(sw, o)
	if err != nil {
		return nil, err
	}
	an, err := findAnomalies(tr, anomalyLevel)
	if err != nil {
		return nil, err
	}
	_, short := traceLabels(sw, tr)
	flagged := an.flaggedBy()
	fits := slices.Clone(an.report.Fits)
	slices.SortStableFunc(fits, func(x, y analysis.RoutineFit) int {
		if d := flagged[y.Routine] - flagged[x.Routine]; d != 0 {
			return d
		}
		return y.N - x.N
	})
	isFlagged := make([]bool, len(an.execs))
	for _, x := range an.report.Anomalies {
		isFlagged[x.Index] = true
	}
	fmt.Fprintf(sum, "anomalies of config %d, %s at %s: %d of %d kernel executions above the %s prediction interval\n",
		tr.Index, tr.Policy, format.Tolerance(tr.Tolerance), len(an.report.Anomalies), len(an.execs), levelText(an.level))
	// A routine of one size is drawn against start time, in ms for a run
	// under 10 s (its seconds had read 0.001 beside durations in us).
	unit, scale := "s", 1.0
	if len(an.start) > 0 && slices.Max(an.start) < 10 {
		unit, scale = "ms", 1e3
	}
	var panels []plots.AnomalyPanel
	sized, timed := false, false
	for i, f := range fits {
		fmt.Fprintf(sum, "%s: %d executions, fitted duration %s, %d anomalous\n", f.Routine, f.N, an.fitText(f), flagged[f.Routine])
		if i >= anomalyPanels {
			continue
		}
		pn := plots.AnomalyPanel{Routine: f.Routine, Comm: an.comm[f.Routine], LogX: an.sized[f.Routine] && !f.Constant,
			Title: fmt.Sprintf("%s: %d of %d anomalous", f.Routine, flagged[f.Routine], f.N)}
		pn.XLabel = "start (" + unit + "); all of one size"
		if pn.LogX {
			pn.XLabel = an.sizeUnit(f.Routine)
			if an.comm[f.Routine] {
				pn.XLabel += " per process"
			}
		}
		lo, hi := math.Inf(1), math.Inf(-1)
		for k, e := range an.execs {
			if e.Routine != f.Routine {
				continue
			}
			x := e.Size
			if !pn.LogX {
				x = an.start[k] * scale
			}
			lo, hi = math.Min(lo, x), math.Max(hi, x)
			pn.Points = append(pn.Points, plots.AnomalyPoint{X: x, Duration: e.Duration, Flagged: isFlagged[k]})
		}
		const steps = 40
		for j := 0; j <= steps; j++ {
			x := lo + (hi-lo)*float64(j)/steps
			size := 1.0
			if pn.LogX {
				x = math.Exp(math.Log(lo) + (math.Log(hi)-math.Log(lo))*float64(j)/steps)
				size = x
			} else if j > 0 && j < steps {
				continue // a constant: its two ends
			}
			fit, up := f.Expected(size), f.Upper(size, an.level)
			pn.FitX = append(pn.FitX, x)
			pn.Fit, pn.Upper, pn.Lower = append(pn.Fit, fit), append(pn.Upper, up), append(pn.Lower, fit*fit/up)
		}
		panels = append(panels, pn)
		sized, timed = sized || pn.LogX, timed || !pn.LogX
	}
	if n := len(fits) - anomalyPanels; n > 0 {
		fmt.Fprintf(sum, "(%d routines not drawn: the figure shows %d)\n", n, anomalyPanels)
	}
	title := "Kernel durations against size, "
	switch {
	case timed && !sized:
		title = "Kernel durations over the run, "
	case timed:
		title = "Kernel durations against size or start, "
	}
	if short != "" {
		title += short + ", "
	}
	return plots.Anomalies(panels, title+tr.Policy+" at "+format.Tolerance(tr.Tolerance), an.level)
}
