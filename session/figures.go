package session

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat/distuv"
	"gonum.org/v1/plot"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/internal/plots"
	"github.com/approxtune/approxtune/internal/selective/policy"
	"github.com/approxtune/approxtune/sweep"
	"gonum.org/v1/gonum/stat"
)

// Figure is a rendered figure with a text summary for text-only frontends.
type Figure struct {
	Name     string
	PNG, SVG []byte
	Summary  string
}

// FigureOutput is implemented by outputs that can show figures (the Jupyter
// kernel); other outputs get the figure written to a file.
type FigureOutput interface {
	Output
	Figure(f *Figure)
}

// FigureNames lists the figures 'plot' draws.
func FigureNames() []string {
	return []string{"speedup", "error", "configs", "kernels", "path", "gantt", "rank", "model", "anomalies", "search"}
}

// FigureOptions select what a figure shows.
type FigureOptions struct {
	Policy    string  // configs/path: the policy (default the sweep's first); gantt: the run's
	Tolerance float64 // configs/path: the tolerance (default the sweep's smallest); kernels: the line; gantt: the run's
	Config    *int    // gantt: the run's configuration index (nil: any; gantt draws the last traced run that matches)
	Routine   string  // model: the kernel routine ("gemm") or family ("gemm[NT]")
	// modelSweeps are the sweeps whose kernels plot model fits (sweeps=all);
	// nil: the figure's sweep.
	modelSweeps []*Sweep
	// sessionSweeps are the session's sweeps, for plot model's advice
	// when sizes are few (sweeps=all, where they have more).
	sessionSweeps []*Sweep
	// everyPolicy: no policy was given (defaults), so configs draws
	// every policy's predictions, the first's choice marked.
	everyPolicy bool
	// zeroTol: tolerance=0 was given (a Tolerance of 0 otherwise means
	// none was; the full trace at 0 had been passed over for the latest).
	zeroTol bool
}

// tolGiven reports whether a tolerance was given.
func (o FigureOptions) tolGiven() bool { return o.Tolerance != 0 || o.zeroTol }

// policyPoints converts a sweep's summaries.
func policyPoints(sw *Sweep) []plots.PolicyPoint {
	var pts []plots.PolicyPoint
	launched, _ := launchSpeedups(sw)
	for _, s := range sw.Summaries() {
		pts = append(pts, plots.PolicyPoint{Policy: s.Policy, Tolerance: s.Tolerance, Speedup: s.Speedup, MeanError: s.MeanError, MaxError: s.MaxError,
			Launched: launched[runKey{policy: s.Policy, tolerance: s.Tolerance}]})
	}
	return pts
}

// defaults fills the policy and tolerance from the sweep.
func (o FigureOptions) defaults(sw *Sweep) FigureOptions {
	o.everyPolicy = o.Policy == ""
	if o.Policy == "" && sw.Spec != nil && len(sw.Spec.Policies) > 0 {
		o.Policy = sw.Spec.Policies[0]
	}
	if !o.tolGiven() && sw.Spec != nil {
		o.Tolerance = math.Inf(1)
		if sw.Spec.Search != sweep.SearchNone {
			// A search that went to its full runs early has no
			// predictions at its tightest tolerance: the tightest it has.
			for _, r := range sw.Results {
				if r.PredictedS != nil && r.Tolerance != nil {
					o.Tolerance = math.Min(o.Tolerance, *r.Tolerance)
				}
			}
		}
		if math.IsInf(o.Tolerance, 1) { // the spec's tightest
			for _, t := range sw.Spec.Tolerances {
				o.Tolerance = math.Min(o.Tolerance, float64(t))
			}
		}
		if math.IsInf(o.Tolerance, 1) {
			o.Tolerance = 0
		}
	}
	return o
}

// interval is the mean of xs and its 95% Student t interval.
func interval(xs []float64) (float64, float64, float64) {
	m := stat.Mean(xs, nil)
	if len(xs) < 2 {
		return m, m, m
	}
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	h := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(xs) - 1)}.Quantile(0.975) * math.Sqrt(ss/float64(len(xs)-1)/float64(len(xs)))
	return m, m - h, m + h
}

// MakeFigure draws one of FigureNames for the sweep.
func MakeFigure(sw *Sweep, name string, o FigureOptions) (*Figure, error) {
	p, f, err := buildFigure(sw, name, o)
	if err != nil {
		return nil, err
	}
	if err := f.encode(p); err != nil {
		return nil, err
	}
	return f, nil
}

// encode renders p into f's PNG and SVG.
func (f *Figure) encode(p *plot.Plot) error {
	var err error
	if f.PNG, err = plots.Encode(p, "png"); err != nil {
		return err
	}
	f.SVG, err = plots.Encode(p, "svg")
	return err
}

// buildFigure makes the plot of one of FigureNames for the sweep, and the
// figure without its images (name and summary).
func buildFigure(sw *Sweep, name string, o FigureOptions) (*plot.Plot, *Figure, error) {
	if sw == nil || len(sw.Results) == 0 {
		return nil, nil, fmt.Errorf("no results to plot yet: run evaluate or tune first, or read another session's with 'load SESSION'")
	}
	if err := checkFigureOptions(sw, name, o); err != nil {
		return nil, nil, err
	}
	asked := o // gantt, anomalies: unset options match any run
	o = o.defaults(sw)
	var p *plot.Plot
	var err error
	var sum strings.Builder
	evaluate := sw.Spec != nil && sw.Spec.Mode == sweep.ModeEvaluate
	switch name {
	case "speedup", "error":
		if !evaluate {
			return nil, nil, fmt.Errorf("%s needs an evaluate sweep (reference times); the last sweep is %s", name, sw.Spec.Mode)
		}
		pts := policyPoints(sw)
		noise, n := sw.ReferenceError() // NaN when n is 0: no line
		if name == "speedup" {
			p, err = plots.Speedup(pts)
		} else {
			p, err = plots.Error(pts, noise)
		}
		for _, q := range pts {
			fmt.Fprintf(&sum, "%-11s %-6s speed-up %5.2fx  mean error %5.1f%%  max error %5.1f%%", q.Policy, format.Tolerance(q.Tolerance), q.Speedup, 100*q.MeanError, 100*q.MaxError)
			if q.Launched > 0 {
				fmt.Fprintf(&sum, "  with launches %5.2fx", q.Launched)
			}
			sum.WriteString("\n")
		}
		if n > 0 {
			sum.WriteString(noiseLine(noise, n) + "\n")
		}
	case "configs":
		p, err = configsFigure(sw, o, &sum)
	case "kernels":
		p, err = kernelsFigure(sw, asked, &sum) // unset options match any run, as for 'table kernels'
	case "path":
		p, err = pathFigure(sw, o, &sum)
	case "gantt":
		p, err = ganttFigure(sw, asked, &sum)
	case "rank":
		p, err = rankFigure(sw, o, &sum)
	case "model":
		p, err = modelFigure(sw, o, &sum)
	case "anomalies":
		p, err = anomaliesFigure(sw, asked, &sum) // unset options match any run, as for gantt
	case "search":
		p, err = searchFigure(sw, &sum)
	default:
		return nil, nil, fmt.Errorf("no figure %q: want one of %s", name, strings.Join(FigureNames(), ", "))
	}
	if err != nil {
		return nil, nil, err
	}
	return p, &Figure{Name: name, Summary: sum.String()}, nil
}

// figureReads is what each figure reads of FigureOptions (policy=,
// tolerance=, config=); figureDraws says what those that read none draw.
var (
	figureReads = map[string][]string{
		"configs": {"policy", "tolerance"}, "path": {"policy", "tolerance"}, "rank": {"policy", "tolerance"},
		"gantt": {"policy", "tolerance", "config"}, "anomalies": {"policy", "tolerance", "config"},
		"kernels": {"policy", "tolerance", "config"},
	}
	figureDraws = map[string]string{
		"speedup": "every policy and tolerance", "error": "every policy and tolerance", "search": "the search's rounds",
		"model": "a routine's model (plot model ROUTINE [sweeps=all])",
	}
)

// optionError is an error of a figure's option Key=: the option itself
// (the figure reads none such), or its value (Value).
type optionError struct {
	Key   string
	Value bool
	err   error
}

func (e *optionError) Error() string { return e.err.Error() }

// checkFigureOptions refuses an option the figure does not read, and a
// policy, tolerance or configuration the sweep does not have, naming what
// it has: 'plot speedup policy=conditional' drew every policy, and 'plot
// configs policy=online' on a sweep without online drew the references
// alone, without a word. Its errors are *optionError.
func checkFigureOptions(sw *Sweep, name string, o FigureOptions) error {
	given := map[string]bool{"policy": o.Policy != "", "tolerance": o.tolGiven(), "config": o.Config != nil}
	reads := figureReads[name]
	for _, opt := range []string{"policy", "tolerance", "config"} {
		if !given[opt] || slices.Contains(reads, opt) {
			continue
		}
		if len(reads) == 0 {
			return &optionError{Key: opt, err: fmt.Errorf("plot %s takes no %s=: it draws %s", name, opt, figureDraws[name])}
		}
		return &optionError{Key: opt, err: fmt.Errorf("plot %s takes no %s=: it reads %s=", name, opt, strings.Join(reads, "=, "))}
	}
	if sw.Spec == nil || slices.Contains(reads, "config") {
		return nil // gantt, anomalies: pickTrace names the traced runs there are
	}
	if o.Policy != "" && !slices.Contains(sw.Spec.Policies, o.Policy) {
		return &optionError{Key: "policy", Value: true, err: fmt.Errorf("sweep %d has no %s results: policy= one of %s", sw.ID, o.Policy, strings.Join(sw.Spec.Policies, ", "))}
	}
	if o.tolGiven() && sw.Spec.Search == sweep.SearchNone { // a search's rounds run tolerances of their own
		var ts []string
		found := false
		for _, t := range sw.Spec.Tolerances {
			ts = append(ts, format.Tolerance(float64(t)))
			found = found || float64(t) == o.Tolerance
		}
		if !found && len(ts) > 0 {
			return &optionError{Key: "tolerance", Value: true, err: fmt.Errorf("sweep %d ran no tolerance %s: tolerance= one of %s", sw.ID, format.Tolerance(o.Tolerance), strings.Join(ts, ", "))}
		}
	}
	return nil
}

// LiveInterval is the least time between two drawings of a running
// sweep's live figures (a cell's live display, 'plot live FILE'); the
// sweep's end is always drawn.
const LiveInterval = time.Second

// LiveFigureNames are the figures drawn while sw runs: search for a
// search; speedup and error for an evaluate sweep; configs for the others (in a tune sweep, each
// configuration's predicted time per policy, the one chosen so far marked).
func LiveFigureNames(sw *Sweep) []string {
	if sw.Spec != nil && sw.Spec.Search != sweep.SearchNone {
		return []string{"search"}
	}
	if sw.Spec != nil && sw.Spec.Mode == sweep.ModeEvaluate {
		return []string{"speedup", "error"}
	}
	return []string{"configs"}
}

// LiveFigures draws the figures of LiveFigureNames for sw, each as 'plot
// NAME' draws its SVG (MakeFigure with no options: the same bytes), and,
// when final, row: all of them side by side on one canvas, named
// "speedup|error" (the names joined by '|'), as PNG and SVG, which an
// output that shows a single image shows. While the sweep runs only the
// SVGs are drawn: a live display carries them in its HTML, and the row's
// PNG, encoded at every drawing and sent with every update (80 of an
// update's 110 KB, four updates a second), served only the stored final
// state. Without results it returns nothing and no error. It runs between
// two runs of a gated agent (LiveOutput), and collects the drawing's
// garbage before it returns so that the collector does not run beside the
// next timed run.
func LiveFigures(sw *Sweep, final bool) (figs []*Figure, row *Figure, err error) {
	if sw == nil || len(sw.Results) == 0 {
		return nil, nil, nil
	}
	defer runtime.GC()
	ps, figs, err := livePlots(sw)
	if err != nil {
		return nil, nil, err
	}
	var names, sums []string
	for i, f := range figs {
		if f.SVG, err = plots.Encode(ps[i], "svg"); err != nil {
			return nil, nil, err
		}
		names, sums = append(names, f.Name), append(sums, f.Summary)
	}
	if !final {
		return figs, nil, nil
	}
	if len(figs) == 1 {
		row = &Figure{Name: figs[0].Name, Summary: figs[0].Summary, SVG: figs[0].SVG}
		if row.PNG, err = plots.Encode(ps[0], "png"); err != nil {
			return nil, nil, err
		}
		return figs, row, nil
	}
	row = &Figure{Name: strings.Join(names, "|"), Summary: strings.Join(sums, "")}
	if row.PNG, err = plots.EncodeRow(ps, "png"); err != nil {
		return nil, nil, err
	}
	if row.SVG, err = plots.EncodeRow(ps, "svg"); err != nil {
		return nil, nil, err
	}
	return figs, row, nil
}

// liveRow draws LiveFigures' row in one format ("png" or "svg") only, for
// 'plot live FILE'; like LiveFigures it collects its garbage.
func liveRow(sw *Sweep, format string) ([]byte, error) {
	defer runtime.GC()
	ps, _, err := livePlots(sw)
	if err != nil {
		return nil, err
	}
	if len(ps) == 1 {
		return plots.Encode(ps[0], format)
	}
	return plots.EncodeRow(ps, format)
}

// livePlots builds the plots of LiveFigureNames for sw, and their figures
// without images.
func livePlots(sw *Sweep) ([]*plot.Plot, []*Figure, error) {
	var ps []*plot.Plot
	var figs []*Figure
	for _, name := range LiveFigureNames(sw) {
		p, f, err := buildFigure(sw, name, FigureOptions{})
		if err != nil {
			return nil, nil, err
		}
		ps, figs = append(ps, p), append(figs, f)
	}
	return ps, figs, nil
}

func configsFigure(sw *Sweep, o FigureOptions, sum *strings.Builder) (*plot.Plot, error) {
	series := []string{}
	for _, pol := range sw.Spec.Policies {
		if o.everyPolicy || pol == o.Policy {
			series = append(series, pol+" "+format.Tolerance(o.Tolerance))
		}
	}
	cs := make([]plots.Config, len(sw.Configs))
	for i, c := range sw.Configs {
		cs[i] = plots.Config{Label: c.Label(), Ref: math.NaN(), Predicted: map[string]float64{}}
	}
	var runs []sweep.Measured // o.Policy's at o.Tolerance, which choose a configuration
	for _, r := range sw.Results {
		if r.Index >= len(cs) {
			continue
		}
		c := &cs[r.Index]
		if len(r.ReferenceS) > 0 && math.IsNaN(c.Ref) {
			c.Ref, c.RefLo, c.RefHi = interval(r.ReferenceS)
		}
		if r.PredictedS != nil && r.Tolerance != nil && *r.Tolerance == o.Tolerance && (o.everyPolicy || r.Policy == o.Policy) {
			c.Predicted[r.Policy+" "+format.Tolerance(o.Tolerance)] = *r.PredictedS
			if m, ok := r.Measured(); ok && r.Policy == o.Policy {
				runs = append(runs, m)
			}
		}
	}
	refs := make([]float64, len(cs))
	all := true // every configuration has a reference
	for i, c := range cs {
		refs[i] = c.Ref
		all = all && !math.IsNaN(c.Ref)
	}
	search := sw.Spec.Search != sweep.SearchNone
	// A tune search has references of its finalists only: the fastest of
	// those is no best of the space.
	if i := sweep.Least(refs); i >= 0 && (all || !search) {
		cs[i].Best = true
	}
	switch {
	case search && sw.Search != nil:
		// The search's choice, from its finals' full runs, as 'table
		// best' says; the least prediction had been marked chosen.
		if i := sw.Search.Chosen; i >= 0 && i < len(cs) {
			cs[i].Chosen = true
		}
	case !search:
		if f := sweep.Summarize(runs); f.Chosen >= 0 {
			cs[runs[f.Chosen].Config].Chosen = true
		}
	}
	by := o.Policy
	if search {
		by = "the search"
	}
	for i, c := range cs {
		ref := "reference " + format.Seconds(c.Ref) + "s"
		if math.IsNaN(c.Ref) {
			ref = "no reference" // it had read "reference -s"
		}
		fmt.Fprintf(sum, "%d %s: %s", i, c.Label, ref)
		keys := make([]string, 0, len(c.Predicted))
		for k := range c.Predicted {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(sum, ", %s %ss", k, format.Seconds(c.Predicted[k]))
		}
		if c.Best {
			sum.WriteString(" [best]")
		}
		if c.Chosen {
			sum.WriteString(" [chosen by " + by + "]")
		}
		if sw.Skipped[i] {
			sum.WriteString(" [left out]")
		}
		sum.WriteString("\n")
	}
	// Short labels: only the parameters that vary. A configuration left
	// out for good says so under its empty place (a non-breaking space:
	// the label's spaces break lines).
	shortLabels(sw, cs)
	for i := range cs {
		if sw.Skipped[i] {
			cs[i].Label += " (left\u00a0out)"
		}
	}
	p, err := plots.Configs(cs, series)
	if err == nil && slices.ContainsFunc(cs, func(c plots.Config) bool { return c.Chosen }) {
		// Whose choice is marked: with two policies drawn, the figure
		// had not said (a review).
		if !search {
			by += " at " + format.Tolerance(o.Tolerance)
		}
		p.Title.Text += ", chosen by " + by
	}
	return p, err
}

// shortLabels keeps only the parameters that vary across the sweep.
func shortLabels(sw *Sweep, cs []plots.Config) {
	vary := sw.varying()
	for i, c := range sw.Configs {
		if i < len(cs) {
			cs[i].Label = shortLabel(c, vary)
		}
	}
}

// varying are the parameters whose values differ across the sweep's
// configurations.
func (s *Sweep) varying() map[string]bool {
	vary := map[string]bool{}
	for _, k := range paramKeys(s) {
		first := ""
		for i, c := range s.Configs {
			v, _ := c.Value(k)
			if i == 0 {
				first = fmt.Sprint(v)
			} else if fmt.Sprint(v) != first {
				vary[k] = true
			}
		}
	}
	return vary
}

// named are the parameters a sweep's lines and tables name a
// configuration by: those its spec's space sets (varied or not: n=2048
// says what ran) and those that vary. A workload's parameters left at
// their defaults (synthetic has a dozen) would fill every line.
func (s *Sweep) named() map[string]bool {
	if s.namedKeys != nil {
		return s.namedKeys
	}
	keep := s.varying()
	if s.Spec != nil {
		for k := range s.Spec.Space {
			keep[k] = true
		}
	}
	s.namedKeys = keep
	return keep
}

// Labeler returns what names a configuration of s in its lines and
// tables: its label with only the parameters the sweep set or varied
// (the whole label where there are none).
func (s *Sweep) Labeler() func(sweep.Config) string {
	keep := s.named()
	return func(c sweep.Config) string { return shortLabel(c, keep) }
}

// shortLabel is c's label with only the parameters in vary (Sweep.varying):
// a workload's fixed parameters (synthetic has a dozen) would fill every
// line and column. With none varying, the whole label.
func shortLabel(c sweep.Config, vary map[string]bool) string {
	var parts []string
	for _, k := range c.Names() {
		if vary[k] {
			v, _ := c.Value(k)
			parts = append(parts, fmt.Sprintf("%s=%v", k, v))
		}
	}
	if len(parts) == 0 {
		return c.Label()
	}
	return strings.Join(parts, " ")
}

func kernelsFigure(sw *Sweep, o FigureOptions, sum *strings.Builder) (*plot.Plot, error) {
	if len(sw.Kernels) == 0 {
		return nil, fmt.Errorf("this sweep has no kernel statistics")
	}
	k, err := pickKernels(sw, o)
	if err != nil {
		return nil, err
	}
	var ks []plots.Kernel
	for _, s := range k.Kernels {
		if s.Calls == 0 {
			continue
		}
		rel := math.NaN()
		if s.HalfS >= 0 && s.MeanS > 0 {
			rel = s.HalfS / s.MeanS
		}
		ks = append(ks, plots.Kernel{Key: s.Key, Samples: s.Count, RelHalf: rel, Executed: s.Calls - s.Skipped, Skipped: s.Skipped})
		half := "-" // as 'table kernels' writes it (it had read "NaN%")
		if !math.IsNaN(rel) {
			half = fmt.Sprintf("%.1f%%", 100*rel)
		}
		fmt.Fprintf(sum, "%s: %s, half-width %s, %d of %d calls skipped\n", s.Key, format.Count(int(s.Count), "sample", "samples"), half, s.Skipped, s.Calls)
	}
	if pooled := sharerNote(k); pooled != "" {
		// Its triangles above the tolerance line are explained so.
		sum.WriteString(pooled)
	}
	p, err := plots.Kernels(ks, k.Tolerance)
	if err == nil {
		label := ""
		if k.Index >= 0 && k.Index < len(sw.Configs) {
			// The sweep's short label: the whole one ran off both
			// sides of the figure (synthetic has a dozen parameters).
			label = sw.Labeler()(sw.Configs[k.Index])
		}
		p.Title.Text = fmt.Sprintf("Kernels of %s, %s at %s (rank %d)", label, k.Policy, format.Tolerance(k.Tolerance), k.Rank)
	}
	return p, err
}

func pathFigure(sw *Sweep, o FigureOptions, sum *strings.Builder) (*plot.Plot, error) {
	bs := make([]plots.PathBar, len(sw.Configs))
	for i, c := range sw.Configs {
		bs[i] = plots.PathBar{Label: c.Label(), Ref: math.NaN()}
	}
	// A search's full runs are results of their own (its references,
	// round 0, and its finalists' runs): a selective result of a search
	// carries none, and a tune search's finalist read "no reference"
	// beside the configs figure's full run.
	full := map[int][]float64{}
	for _, r := range sw.Results {
		if r.Policy == "" && len(r.ReferenceS) > 0 {
			full[r.Index] = append(full[r.Index], r.ReferenceS...)
		}
	}
	found := false
	for _, r := range sw.Results {
		if r.Index >= len(bs) || r.Policy != o.Policy || r.Tolerance == nil || *r.Tolerance != o.Tolerance || r.Path == nil {
			continue
		}
		found = true
		b := &bs[r.Index]
		b.Comp, b.Comm, b.Idle = r.Path.CompS, r.Path.CommS, r.Path.IdleS
		refs := r.ReferenceS
		if len(refs) == 0 {
			refs = full[r.Index]
		}
		if len(refs) > 0 {
			b.Ref = stat.Mean(refs, nil)
		}
		ref := "reference " + format.Seconds(b.Ref) + "s"
		if math.IsNaN(b.Ref) {
			ref = "no reference"
		}
		fmt.Fprintf(sum, "%s: computation %ss, communication %ss, idle %ss, %s\n", b.Label, format.Seconds(b.Comp), format.Seconds(b.Comm), format.Seconds(b.Idle), ref)
	}
	if !found {
		return nil, fmt.Errorf("no results for %s at %s: choose policy= and tolerance= from the sweep", o.Policy, format.Tolerance(o.Tolerance))
	}
	cs := make([]plots.Config, len(bs))
	for i := range bs {
		cs[i].Label = bs[i].Label
	}
	shortLabels(sw, cs)
	for i := range bs {
		bs[i].Label = cs[i].Label
	}
	return plots.Path(bs, fmt.Sprintf("Critical path, %s at %s", o.Policy, format.Tolerance(o.Tolerance)))
}

// runOption parses a policy=, tolerance= or config= argument, which choose
// a run ('plot', 'anomalies'), into o.
func runOption(a Arg, o *FigureOptions) error {
	switch a.Key {
	case "policy":
		p, err := policy.Lookup(a.Value)
		if err != nil {
			return errAt(a.ValueCol, "%v", err)
		}
		o.Policy = p.Name()
	case "tolerance":
		ts, err := parseTolerances(a.Value, a.ValueCol)
		if err != nil {
			return err
		}
		if len(ts) != 1 {
			return errAt(a.ValueCol, "one tolerance only")
		}
		o.Tolerance, o.zeroTol = ts[0], ts[0] == 0
	case "config":
		n, err := strconv.Atoi(a.Value)
		if err != nil || n < 0 {
			return errAt(a.ValueCol, "%q is not a configuration index: want an integer from 0, as in 'table configs'", a.Value)
		}
		o.Config = &n
	default:
		return errAt(a.Col, "%q is not policy=, tolerance= or config=", a.Key)
	}
	return nil
}

// timelineCover says how much of its run's wall time a timeline spans,
// where its last kernel ends well before the run did: a user read a
// timeline of 0.21 ms as the whole of a run of 0.54 ms.
func timelineCover(sw *Sweep, tr *sweep.TraceEvent) string {
	end := 0.0
	for _, rt := range tr.Ranks {
		for _, e := range rt.Events {
			end = math.Max(end, e.EndS)
		}
	}
	for _, r := range sw.Results {
		if r.Index != tr.Index || r.Policy != tr.Policy || r.Tolerance == nil || *r.Tolerance != tr.Tolerance || r.SelectiveS == nil {
			continue
		}
		if run := *r.SelectiveS - fptr0(r.CountingS); end > 0 && end < 0.8*run { // apriori's counting run is not the traced one
			return fmt.Sprintf("the timeline spans %s of the run's %s: the rest, the engine's own work outside the kernels (the replay of the critical path at the run's end), is not drawn\n",
				plots.Duration(end), plots.Duration(run))
		}
		return ""
	}
	return ""
}

// pickTrace is the last traced run of sw that matches o (unset options
// match any run), or an error that says what to do or which runs there are.
func pickTrace(sw *Sweep, o FigureOptions) (*sweep.TraceEvent, error) {
	if len(sw.Traces) == 0 {
		if sw.Spec != nil && sw.Spec.Program != nil {
			return nil, fmt.Errorf("sweep %d is a program's: its selective runs record no timelines yet", sw.ID)
		}
		return nil, fmt.Errorf("sweep %d has no timelines: run 'trace on', then evaluate or tune again", sw.ID)
	}
	i, err := pickRun(len(sw.Traces), func(i int) (int, string, float64) {
		return sw.Traces[i].Index, sw.Traces[i].Policy, sw.Traces[i].Tolerance
	}, o, "traced run", "traced runs", "")
	if err != nil {
		return nil, err
	}
	tr := &sw.Traces[i]
	return tr, nil
}

// traceLabels are a traced run's configuration label and its short form
// (what varies in the sweep), for titles.
func traceLabels(sw *Sweep, tr *sweep.TraceEvent) (label, short string) {
	label, short = fmt.Sprintf("configuration %d", tr.Index), fmt.Sprintf("config %d", tr.Index)
	if tr.Index >= 0 && tr.Index < len(sw.Configs) {
		label = sw.Configs[tr.Index].Label()
		cs := make([]plots.Config, len(sw.Configs))
		for i, c := range sw.Configs {
			cs[i].Label = c.Label()
		}
		shortLabels(sw, cs) // the title names only what varies in the sweep
		short = cs[tr.Index].Label
	}
	return label, short
}

// ganttFigure draws the timeline of the last traced run that matches o, its
// anomalous kernels (as 'anomalies' finds them at its default level)
// outlined.
func ganttFigure(sw *Sweep, o FigureOptions, sum *strings.Builder) (*plot.Plot, error) {
	tr, err := pickTrace(sw, o)
	if err != nil {
		return nil, err
	}
	label, short := traceLabels(sw, tr)
	flagged := map[[2]int]bool{}
	if an, err := findAnomalies(tr, anomalyLevel); err == nil {
		for _, a := range an.report.Anomalies {
			flagged[an.at[a.Index]] = true
		}
	}
	fmt.Fprintf(sum, "timeline of config %d (%s), %s at %s, %d ranks\n", tr.Index, label, tr.Policy, format.Tolerance(tr.Tolerance), len(tr.Ranks))
	lanes := make([]plots.GanttLane, len(tr.Ranks))
	for i, rt := range tr.Ranks {
		l := plots.GanttLane{Rank: rt.Rank, Dropped: rt.Dropped, Spans: make([]plots.GanttSpan, len(rt.Events))}
		type use struct {
			busy       float64
			run, skips int
		}
		by := map[string]*use{}
		var names []string
		busy, end := 0.0, 0.0
		for k, e := range rt.Events {
			l.Spans[k] = plots.GanttSpan{Routine: e.Routine, Start: e.StartS, End: e.EndS, Predicted: e.PredictedS, Skipped: e.Skipped, Comm: e.Comm,
				Anomalous: flagged[[2]int{i, k}]}
			u := by[e.Routine]
			if u == nil {
				u = &use{}
				by[e.Routine] = u
				names = append(names, e.Routine)
			}
			end = math.Max(end, e.EndS)
			if e.Skipped {
				u.skips++
				continue
			}
			u.run++
			u.busy += e.EndS - e.StartS
			busy += e.EndS - e.StartS
		}
		lanes[i] = l
		sort.SliceStable(names, func(a, b int) bool { return by[names[a]].busy > by[names[b]].busy })
		// In µs, ms or s as the times need: "busy 0.000163s" had been
		// read digit by digit.
		fmt.Fprintf(sum, "rank %d: busy %s of %s", rt.Rank, plots.Duration(busy), plots.Duration(end))
		for k, n := range names {
			sep := ", "
			if k == 0 {
				sep = ": "
			}
			fmt.Fprintf(sum, "%s%s %s (%d run, %d skipped)", sep, n, plots.Duration(by[n].busy), by[n].run, by[n].skips)
		}
		if rt.Dropped > 0 {
			fmt.Fprintf(sum, "; %d kernels past the cap not recorded", rt.Dropped)
		}
		sum.WriteString("\n")
	}
	if len(flagged) > 0 {
		fmt.Fprintf(sum, "outlined in black: %d anomalous kernel executions (see 'anomalies')\n", len(flagged))
	}
	sum.WriteString(timelineCover(sw, tr))
	return plots.Gantt(lanes, fmt.Sprintf("Timeline of %s, %s at %s", short, tr.Policy, format.Tolerance(tr.Tolerance)))
}

// writeFigure writes the figure to name (PNG or SVG by extension).
func writeFigure(f *Figure, name string) (string, error) {
	data := f.PNG
	if imageFormat(name) == "svg" {
		data = f.SVG
	}
	return writeImage(data, name)
}

// imageFormat is "png" or "svg" by name's extension, "" for another.
func imageFormat(name string) string {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".svg":
		return "svg"
	case ".png":
		return "png"
	}
	return ""
}

// writeImage writes data, a PNG or SVG image, to name (by its extension).
func writeImage(data []byte, name string) (string, error) {
	if imageFormat(name) == "" {
		return "", fmt.Errorf("%q: the file must end in .png or .svg", name)
	}
	return writeFile(name, func(w *os.File) error {
		_, err := w.Write(data)
		return err
	})
}

// plotLive is 'plot live [FILE | off]': the file drive draws each sweep's
// figures to as results arrive (progress.drawFile).
func plotLive(s *Session, c *Command, out Output) error {
	switch {
	case len(c.Args) == 1:
		if s.live == "" {
			out.Print("no live figure: 'plot live FILE.png' redraws FILE as each sweep's results arrive")
		} else {
			out.Print("live figure: " + s.live + " ('plot live off' stops)")
		}
		return nil
	case len(c.Args) > 2:
		return errAt(c.Args[2].Col, "one file only: plot live FILE")
	case c.Args[1].Key != "":
		return errAt(c.Args[1].Col, "plot live takes a file (.png or .svg) or off, not %s=", c.Args[1].Key)
	}
	a := c.Args[1]
	if strings.EqualFold(a.Value, "off") {
		s.live = ""
		out.Print("live figure off")
		return nil
	}
	if imageFormat(a.Value) == "" {
		return errAt(a.Col, "%q: the file must end in .png or .svg", a.Value)
	}
	path, err := filepath.Abs(a.Value)
	if err != nil {
		return errAt(a.Col, "%v", err)
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || !st.IsDir() {
		return errAt(a.Col, "%s: no such directory", filepath.Dir(path))
	}
	s.live = path
	out.Print("live figure: each sweep redraws " + path + " as its results arrive, at most once a second ('plot live off' stops)")
	return nil
}
