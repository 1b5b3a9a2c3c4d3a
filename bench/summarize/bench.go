package main

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/sweep"
)

// The tolerances the benchmarks' targets name.
const (
	tol1 = 0.5     // 2^-1
	tol3 = 0.125   // 2^-3
	tol5 = 0.03125 // 2^-5
)

// benchmark is one of bench/run's benchmarks: what its sweeps are, and
// its report over their files (args: the sweeps' files, and for some a
// separating word, vs or anchor, and what follows it).
type benchmark struct {
	kind   sweepKind // of every sweep (before vs, for a comparison)
	after  sweepKind // of the sweeps after vs, for a comparison
	report func(args []string, w io.Writer) error
}

// benchmarks are the named benchmarks of bench/run, each summarizing its
// sweeps' files with its targets. A function, not a package variable, so
// that no state is shared.
func benchmarks() map[string]benchmark {
	every := []string{"conditional", "local", "online", "apriori", "eager"}
	three := []float64{tol1, tol3, tol5}
	return map[string]benchmark{
		"summa":            {kind: sweepKind{spec: "examples/summa-evaluate.json", workload: "summa", policies: every, tolerances: three}, report: benchSumma},
		"cholesky3d":       {kind: sweepKind{spec: "bench/specs/cholesky3d.json", workload: "cholesky3d", policies: every, tolerances: three}, report: benchCholesky3d},
		"cholesky3d-eager": {kind: sweepKind{spec: "bench/specs/cholesky3d-eager.json", workload: "cholesky3d", policies: []string{"eager"}, tolerances: three}, report: benchCholesky3d},
		"cholesky3d-models": {
			kind:   sweepKind{spec: "bench/specs/cholesky3d-models-off.json", workload: "cholesky3d", policies: []string{"eager"}, tolerances: []float64{tol1}, models: modelsOff},
			after:  sweepKind{spec: "bench/specs/cholesky3d-models-on.json", workload: "cholesky3d", policies: []string{"eager"}, tolerances: []float64{tol1}, models: modelsOn},
			report: benchModels,
		},
		"apriori": {kind: sweepKind{spec: "bench/specs/apriori.json", workload: "cholesky3d", policies: []string{"conditional", "apriori"}, tolerances: []float64{tol1}}, report: benchApriori},
		"halving-cholesky2d": {kind: sweepKind{spec: "examples/cholesky2d-search.json", workload: "cholesky2d", search: "halving"},
			report: func(args []string, w io.Writer) error { return halvingMain(args, 10, w) }},
		"halving-cholesky3d": {kind: sweepKind{spec: "examples/cholesky3d-4096.json", workload: "cholesky3d", search: "halving"},
			report: func(args []string, w io.Writer) error { return halvingMain(args, 6, w) }},
	}
}

// benchMain prints the report of the named benchmark over its sweeps,
// once each sweep's file is found to hold a sweep of the benchmark's kind.
func benchMain(name string, args []string, w io.Writer) error {
	all := benchmarks()
	b, ok := all[name]
	if !ok {
		names := make([]string, 0, len(all))
		for n := range all {
			names = append(names, n)
		}
		sort.Strings(names)
		return fmt.Errorf("-bench: no benchmark %q: want one of %s", name, strings.Join(names, ", "))
	}
	if err := b.check(args); err != nil {
		return fmt.Errorf("-bench %s: %w", name, err)
	}
	if err := b.report(args, w); err != nil {
		return fmt.Errorf("-bench %s: %w", name, err)
	}
	return nil
}

// check reads the start event of each sweep file in args (those before
// the word anchor; after the word vs, of the kind after) and says which
// file holds a sweep of another kind.
func (b benchmark) check(args []string) error {
	if i := slices.Index(args, "anchor"); i >= 0 {
		args = args[:i]
	}
	if err := distinct(slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "vs" })); err != nil {
		return err
	}
	kind := b.kind
	for _, f := range args {
		if f == "vs" && b.after.workload != "" {
			kind = b.after
			continue
		}
		evs, err := readFile(f)
		if err != nil {
			return err
		}
		if err := kind.match(evs); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
	}
	return nil
}

// Whether a benchmark's sweeps run with models (spec "models").
const (
	modelsAny = iota
	modelsOff
	modelsOn
)

// sweepKind is what identifies a benchmark's sweeps in their start
// event's spec (that of the spec file bench/run runs): the workload, the
// search (none: an evaluate sweep of every configuration), the policies
// and tolerances (nil: any; a search's are its rounds'), and for a
// comparison of models whether the sweep has them. The benchmarks of one
// workload differ in these (cholesky3d-eager's policies, cholesky3d-models'
// tolerances), so that a glob over bench/out mixing them is refused.
type sweepKind struct {
	spec       string // the spec file bench/run runs, for messages
	workload   string
	search     string
	policies   []string
	tolerances []float64
	models     int
}

// startSpec is what sweepKind reads of a start event's spec.
type startSpec struct {
	Workload   string            `json:"workload"`
	Search     string            `json:"search"`
	Policies   []string          `json:"policies"`
	Tolerances []sweep.Tolerance `json:"tolerances"`
	Models     bool              `json:"models"`
}

// match says how the sweep of evs differs from k, naming what it holds.
func (k sweepKind) match(evs []event) error {
	i := slices.IndexFunc(evs, func(e event) bool { return e.Type == "start" })
	if i < 0 || len(evs[i].Spec) == 0 {
		return fmt.Errorf("no start event with the sweep's spec: want the events of an agent's sweep of %s (approxtune agent --sweep, or a session's results.jsonl)", k.spec)
	}
	var s startSpec
	if err := json.Unmarshal(evs[i].Spec, &s); err != nil {
		return fmt.Errorf("the start event's spec: %w", err)
	}
	got := s.kind()
	if got.workload == k.workload && got.search == k.search &&
		(k.policies == nil || sameSet(got.policies, k.policies)) &&
		(k.tolerances == nil || sameSet(got.tolerances, k.tolerances)) &&
		(k.models == modelsAny || (got.models == modelsOn) == (k.models == modelsOn)) {
		return nil
	}
	return fmt.Errorf("holds a sweep of %s; want a sweep of %s (%s)", got.describe(), k.describe(), k.spec)
}

// kind is the sweepKind a start event's spec is of; its models are on, or
// any (a spec without them is described without them).
func (s startSpec) kind() sweepKind {
	k := sweepKind{workload: s.Workload, search: s.Search, policies: s.Policies}
	for _, t := range s.Tolerances {
		k.tolerances = append(k.tolerances, float64(t))
	}
	if s.Models {
		k.models = modelsOn
	}
	return k
}

// sameSet says whether a and b hold the same values, in any order.
func sameSet[T cmp.Ordered](a, b []T) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// tolerances names tolerances as 2^-k.
func tolerances(ts []float64) string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = format.Tolerance(t)
	}
	return strings.Join(out, ",")
}

// describe names what a sweep of kind k has.
func (k sweepKind) describe() string {
	d := "workload " + k.workload
	if k.search != "" {
		d += ", search " + k.search
	} else {
		d += ", no search"
	}
	if k.policies != nil {
		d += ", policies " + strings.Join(k.policies, ",")
	}
	if k.tolerances != nil {
		d += ", tolerances " + tolerances(k.tolerances)
	}
	switch k.models {
	case modelsOn:
		d += ", models on"
	case modelsOff:
		d += ", models off"
	}
	return d
}

// noiseFloors is each sweep's noise floor (runError over its references),
// NaN for a sweep without two references of one configuration.
func noiseFloors(sweeps [][]event) []float64 {
	out := make([]float64, len(sweeps))
	for i, evs := range sweeps {
		out[i] = math.NaN()
		if f, n := runError(evs); n > 0 {
			out[i] = f
		}
	}
	return out
}

// measured drops the NaNs of xs.
func measured(xs []float64) []float64 {
	var out []float64
	for _, x := range xs {
		if !math.IsNaN(x) {
			out = append(out, x)
		}
	}
	return out
}

// floorLine says each sweep's noise floor and their pooled mean with its
// interval.
func floorLine(floors []float64) string {
	each := make([]string, len(floors))
	for i, f := range floors {
		each[i] = "n/a"
		if !math.IsNaN(f) {
			each[i] = fmt.Sprintf("%.1f%%", 100*f)
		}
	}
	m := measured(floors)
	if len(m) == 0 {
		return "Noise floor: no configuration has two references."
	}
	return fmt.Sprintf("Noise floor (reference_error) of each sweep: %s; pooled %s.", strings.Join(each, ", "), interval(m, "%.1f%% ± %.1f", 100))
}

// verdict says whether a pooled estimate clears a target: at or above it
// (atLeast) or at or below it. It holds when the whole 95% interval is on
// the target's side, fails when the whole interval is on the other side,
// and is undecided when the interval spans the target.
func verdict(e estimate, target float64, atLeast bool) string {
	switch {
	case math.IsNaN(e.half):
		return "undecided (one sweep gives no interval)"
	case atLeast && e.lo() >= target, !atLeast && e.hi() <= target:
		return "holds"
	case atLeast && e.hi() < target, !atLeast && e.lo() > target:
		return "fails"
	}
	return "undecided (the interval spans the target)"
}

// target prints one target's line: the pooled estimate (scaled, in
// layout: mean, low end, high end) and its verdict.
func target(w io.Writer, what string, e estimate, scale float64, layout string, goal float64, atLeast bool) {
	fmt.Fprintf(w, "- %s: %s: **%s**\n", what, spanOf(layout, scale*e.mean, scale*e.lo(), scale*e.hi(), e.n), verdict(e, goal, atLeast))
}

// spanOf formats a figure of n sweeps (or pairs) in layout: its mean, and
// the low and high ends of its 95% interval. One sweep has no interval:
// its figure alone, and "(1 sweep)", not "(NaN to NaN)".
func spanOf(layout string, mean, lo, hi float64, n int) string {
	if n < 2 || math.IsNaN(lo) || math.IsNaN(hi) {
		return strings.SplitN(fmt.Sprintf(layout, mean, 0.0, 0.0), " (", 2)[0] + " (" + plural(n, "sweep") + ")"
	}
	return fmt.Sprintf(layout, mean, lo, hi)
}

// plural is n and word, in the plural unless n is 1.
func plural(n int, word string) string { return format.Count(n, word, word+"s") }

// floorFigure is the pooled noise floor of the sweeps' floors (measured,
// as a percentage), its interval where there are two or more, "n/a"
// where there are none.
func floorFigure(floors []float64) string {
	if len(floors) == 0 {
		return "n/a"
	}
	return interval(floors, "%.1f%% ± %.1f", 100)
}

// floorAbove notes, under an error target of at most goal, that the
// sweeps' pooled noise floor lies above it: a full run then misses its
// configuration's other full runs by more than the target allows a
// prediction, so the sweeps cannot show that the target holds, whatever
// its verdict (a review's sweeps, at floors of 44% and 58%, read "fails").
func floorAbove(w io.Writer, floors []float64, goal float64) {
	if len(floors) == 0 {
		return
	}
	if m := stat.Mean(floors, nil); m > goal {
		fmt.Fprintf(w, "  (the noise floor, %.1f%%, is above this target's %.0f%%: one full run misses its configuration's others by more, so these sweeps cannot show it holds; run them on a quieter machine)\n", 100*m, 100*goal)
	}
}

// rowTarget prints a target on a pooled row's figure, or says that the
// sweeps have no such row.
func rowTarget(w io.Writer, rows []*pooledRow, policy string, tol float64, what string, f func(*pooledRow) []float64, scale float64, layout string, goal float64, atLeast bool) {
	r := findRow(rows, policy, tol)
	if r == nil || len(f(r)) == 0 {
		fmt.Fprintf(w, "- %s: **n/a** (no %s %s summaries)\n", what, policy, format.Tolerance(tol))
		return
	}
	target(w, what, pool(f(r)), scale, layout, goal, atLeast)
}

// Layouts of a target's figure: mean (low end to high end of the 95% interval).
const (
	timesLayout   = "%.2fx (%.2f to %.2f)"
	percentLayout = "%.1f%% (%.1f to %.1f)"
	pointsLayout  = "%+.2f points (%+.2f to %+.2f)"
	qualityLayout = "%.3f (%.3f to %.3f)"
)

// pooledReport reads the sweeps and prints their pooled table and noise
// floors; it returns the sweeps, the rows and the floors of the sweeps
// that have one.
func pooledReport(files []string, w io.Writer) ([][]event, []*pooledRow, []float64, error) {
	sweeps, err := readSweeps(files)
	if err != nil {
		return nil, nil, nil, err
	}
	rows := pooledRows(sweeps)
	if len(rows) == 0 {
		return nil, nil, nil, fmt.Errorf("no policy summaries: want evaluate sweeps")
	}
	pooledTable(w, rows)
	floors := noiseFloors(sweeps)
	fmt.Fprintf(w, "\n%s; mean ± half-width of the 95%% interval over them. %s\n\n", plural(len(sweeps), "sweep"), floorLine(floors))
	return sweeps, rows, measured(floors), nil
}

// benchSumma is the SUMMA evaluate space under every policy: eager at 2^-3
// at least 3x at a mean error of at most 5%, every policy's quality at
// 2^-5 at least 0.95, and every policy's error at 2^-5 not above its error
// at 2^-1 by more than the interval of their paired difference.
func benchSumma(files []string, w io.Writer) error {
	sweeps, rows, floors, err := pooledReport(files, w)
	if err != nil {
		return err
	}
	pairs, err := pairedTable(w, sweeps)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nTargets (noise floor %s):\n\n", floorFigure(floors))
	rowTarget(w, rows, "eager", tol3, "eager 2^-3 speed-up >= 3x", speedups, 1, timesLayout, 3, true)
	rowTarget(w, rows, "eager", tol3, "eager 2^-3 mean error <= 5%", meanErrors, 100, percentLayout, 0.05, false)
	floorAbove(w, floors, 0.05)
	for _, r := range rows {
		if r.tol == tol5 {
			rowTarget(w, rows, r.policy, tol5, r.policy+" 2^-5 quality >= 0.95", qualities, 1, qualityLayout, 0.95, true)
		}
	}
	for _, p := range pairs {
		what := p.Policy + " mean error at 2^-5 not above its error at 2^-1 beyond the interval"
		if p.Pairs < 2 {
			fmt.Fprintf(w, "- %s: **n/a** (%s: no interval)\n", what, plural(p.Pairs, "pair"))
			continue
		}
		h := tQuantile(p.Pairs) * p.SE
		v := "holds"
		if p.Diff-h > 0 {
			v = "fails"
		}
		fmt.Fprintf(w, "- %s: %s: **%s**\n", what, spanOf(pointsLayout, 100*p.Diff, 100*(p.Diff-h), 100*(p.Diff+h), p.Pairs), v)
	}
	return nil
}

// The figures of a pooled row.
func speedups(r *pooledRow) []float64   { return r.speedup }
func meanErrors(r *pooledRow) []float64 { return r.err }
func qualities(r *pooledRow) []float64  { return r.quals }

// benchCholesky3d is the paper-tool comparison space under every policy
// (cholesky3d) or eager alone (cholesky3d-eager), with eager's mean signed
// error per block size against the noise floor: no block size predicted
// more than the floor away from its references on average. After the word
// anchor come the paper tool's results.json, one per sweep, run beside
// them (bench/run -anchor): the two tools side by side (anchorTable).
func benchCholesky3d(args []string, w io.Writer) error {
	files, anchors := args, []string(nil)
	if i := slices.Index(args, "anchor"); i >= 0 {
		files, anchors = args[:i], args[i+1:]
	}
	sweeps, _, floors, err := pooledReport(files, w)
	if err != nil {
		return err
	}
	floor := math.NaN()
	if len(floors) > 0 {
		floor = pool(floors).mean
	}
	type key struct {
		b   string
		tol float64
	}
	// Per sweep, block size and tolerance: eager's signed errors.
	per := make([]map[key][]float64, len(sweeps))
	var keys []key
	for s, evs := range sweeps {
		per[s] = map[key][]float64{}
		for _, e := range evs {
			if e.Type != "result" || e.Policy != "eager" || e.Tolerance == nil || len(e.ReferenceS) == 0 || e.PredictedS == 0 {
				continue
			}
			b, _, err := splitConfig(e.Config, "b")
			if err != nil {
				return err
			}
			k := key{b, *e.Tolerance}
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
			per[s][k] = append(per[s][k], e.PredictedS/stat.Mean(e.ReferenceS, nil)-1)
		}
	}
	if len(keys) == 0 {
		return fmt.Errorf("no eager results with predictions and references")
	}
	sort.Slice(keys, func(i, j int) bool {
		bi, _ := strconv.Atoi(keys[i].b)
		bj, _ := strconv.Atoi(keys[j].b)
		if bi != bj {
			return bi < bj
		}
		return keys[i].tol > keys[j].tol
	})
	fmt.Fprintln(w, "Eager's mean signed error (predicted / mean reference - 1) per block size, each sweep's mean over the block size's configurations, pooled:")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| b | tolerance | mean signed error | per sweep | within the noise floor |")
	fmt.Fprintln(w, "| ---: | --- | ---: | --- | --- |")
	for _, k := range keys {
		var means []float64
		var each []string
		for s := range sweeps {
			if xs := per[s][k]; len(xs) > 0 {
				m := stat.Mean(xs, nil)
				means = append(means, m)
				each = append(each, fmt.Sprintf("%+.1f%%", 100*m))
			}
		}
		e := pool(means)
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", k.b, format.Tolerance(k.tol), interval(means, "%+.1f%% ± %.1f", 100), strings.Join(each, ", "), within(e, floor))
	}
	floorText := "n/a: no sweep has two references of a configuration"
	if !math.IsNaN(floor) {
		floorText = fmt.Sprintf("%.1f%%, the pooled mean", 100*floor)
	}
	fmt.Fprintf(w, "\nTarget: no block size predicted more than the noise floor (%s) away from its references on average: a row holds when its interval lies within ± the floor, fails when it lies wholly outside.\n", floorText)
	if anchors != nil {
		return anchorTable(w, sweeps, anchors)
	}
	return nil
}

// within says whether an estimate's interval lies within ±bound (holds),
// wholly outside it (fails), or across it (undecided).
func within(e estimate, bound float64) string {
	switch {
	case math.IsNaN(e.half) || math.IsNaN(bound):
		return "undecided (no interval)"
	case e.lo() >= -bound && e.hi() <= bound:
		return "holds"
	case e.lo() > bound || e.hi() < -bound:
		return "fails"
	}
	return "undecided"
}

// policySummary is the summary of a policy at a tolerance in one sweep.
func policySummary(evs []event, policy string, tol float64) (event, bool) {
	for _, e := range evs {
		if e.Type == "summary" && e.Policy == policy && e.Tolerance != nil && *e.Tolerance == tol && e.MeanError != nil {
			return e, true
		}
	}
	return event{}, false
}

// pairedSummaries are, for two groups of sweeps paired by position, the
// summaries of policy pa at tolerance ta in the first and of pb at tb in
// the second (the same group twice pairs two policies of one sweep).
func pairedSummaries(a, b [][]event, pa string, ta float64, pb string, tb float64) (ea, eb []event, err error) {
	for i := range a {
		x, okx := policySummary(a[i], pa, ta)
		y, oky := policySummary(b[i], pb, tb)
		if !okx || !oky {
			return nil, nil, fmt.Errorf("sweep %d lacks the summary of %s %s or of %s %s", i+1, pa, format.Tolerance(ta), pb, format.Tolerance(tb))
		}
		ea, eb = append(ea, x), append(eb, y)
	}
	return ea, eb, nil
}

// column is one figure of each event.
func column(evs []event, f func(event) float64) []float64 {
	out := make([]float64, len(evs))
	for i, e := range evs {
		out[i] = f(e)
	}
	return out
}

func speedupOf(e event) float64   { return e.Speedup }
func meanErrorOf(e event) float64 { return *e.MeanError }
func qualityOf(e event) float64 {
	if e.Quality == nil {
		return math.NaN()
	}
	return *e.Quality
}

// ratioTarget prints a target on the ratio b[i]/a[i] of paired sweeps:
// its geometric mean and 95% interval (ratioInterval), at least goal.
func ratioTarget(w io.Writer, what string, a, b []float64, goal float64) {
	m, lo, hi := ratioInterval(a, b)
	v := "holds"
	switch {
	case math.IsNaN(lo):
		v = "undecided (one sweep gives no interval)"
	case hi < goal:
		v = "fails"
	case lo < goal:
		v = "undecided (the interval spans the target)"
	}
	fmt.Fprintf(w, "- %s: %s: **%s**\n", what, spanOf(timesLayout, m, lo, hi, len(a)), v)
}

// benchModels compares eager at 2^-1 without models (the sweeps before
// "vs") and with them (after), run in alternation: the speed-up with
// models over that without at least 1.5x, at a mean error no more than
// one point higher.
func benchModels(args []string, w io.Writer) error {
	split := slices.Index(args, "vs")
	if split < 0 || split != len(args)-split-1 || split == 0 {
		return fmt.Errorf("want the sweeps without models, the word vs, and as many sweeps with models")
	}
	off, err := readSweeps(args[:split])
	if err != nil {
		return err
	}
	on, err := readSweeps(args[split+1:])
	if err != nil {
		return err
	}
	a, b, err := pairedSummaries(off, on, "eager", tol1, "eager", tol1)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "| eager 2^-1 | without models | with models | with minus without |")
	fmt.Fprintln(w, "| --- | ---: | ---: | ---: |")
	for _, f := range []struct {
		name   string
		of     func(event) float64
		scale  float64
		layout string
	}{{"speed-up", speedupOf, 1, "%.2fx ± %.2f"}, {"mean error", meanErrorOf, 100, "%.1f%% ± %.1f"}, {"quality", qualityOf, 1, "%.3f ± %.3f"}} {
		xa, xb := column(a, f.of), column(b, f.of)
		d := make([]float64, len(xa))
		for i := range d {
			d[i] = xb[i] - xa[i]
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", f.name, interval(xa, f.layout, f.scale), interval(xb, f.layout, f.scale), interval(d, "%+"+f.layout[1:], f.scale))
	}
	floors := noiseFloors(append(slices.Clone(off), on...))
	fmt.Fprintf(w, "\n%s of sweeps. %s\n\nTargets:\n\n", plural(len(a), "pair"), floorLine(floors))
	ratioTarget(w, "speed-up with models / without >= 1.5", column(a, speedupOf), column(b, speedupOf), 1.5)
	ea, eb := column(a, meanErrorOf), column(b, meanErrorOf)
	d := make([]float64, len(ea))
	for i := range d {
		d[i] = eb[i] - ea[i]
	}
	target(w, "mean error with models minus without <= +1 point", pool(d), 100, pointsLayout, 0.01, false)
	return nil
}

// benchApriori compares apriori with conditional at 2^-1 in the same
// sweeps: apriori's speed-up at least conditional's, and its counting
// pass (a result's counting_s, when the agent reports it) under 10% of a
// full run.
func benchApriori(files []string, w io.Writer) error {
	sweeps, _, _, err := pooledReport(files, w)
	if err != nil {
		return err
	}
	c, a, err := pairedSummaries(sweeps, sweeps, "conditional", tol1, "apriori", tol1)
	if err != nil {
		return err
	}
	// Each sweep's mean share of a full run that apriori's counting pass took.
	var shares []float64
	for _, evs := range sweeps {
		var s []float64
		for _, e := range evs {
			if e.Type == "result" && e.Policy == "apriori" && e.CountingS != nil && len(e.ReferenceS) > 0 {
				s = append(s, *e.CountingS/stat.Mean(e.ReferenceS, nil))
			}
		}
		if len(s) > 0 {
			shares = append(shares, stat.Mean(s, nil))
		}
	}
	fmt.Fprintln(w, "Targets:")
	fmt.Fprintln(w)
	ratioTarget(w, "apriori's speed-up / conditional's at 2^-1 >= 1", column(c, speedupOf), column(a, speedupOf), 1)
	if len(shares) == 0 {
		fmt.Fprintln(w, "- apriori's counting pass < 10% of a full run: **n/a** (the results carry no counting_s)")
		return nil
	}
	what := "apriori's counting pass < 10% of a full run"
	if len(shares) < len(sweeps) {
		what += fmt.Sprintf(" (%d of %d sweeps report counting_s)", len(shares), len(sweeps))
	}
	target(w, what, pool(shares), 100, percentLayout, 0.10, false)
	return nil
}
