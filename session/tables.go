package session

import (
	"cmp"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/internal/selective/policy"
	"github.com/approxtune/approxtune/sweep"
	"gonum.org/v1/gonum/stat"
)

func fptr(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// fptr0 is *p, or 0 for nil.
func fptr0(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// tableBest is one row per policy x tolerance: speed-up, errors, choice;
// then the best performance class (bestClassLine) when the data allows.
func tableBest(sw *Sweep) string {
	if sw.Spec != nil && sw.Spec.Search != sweep.SearchNone {
		return tableSearch(sw)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "sweep %d: %s %s, %d of %d runs (%s)\n", sw.ID, sw.Spec.Mode, sw.Workload, len(sw.Results), sw.Total(), sw.Status)
	b.WriteString(sw.jobsLine())
	sums := sw.Summaries()
	if len(sums) == 0 {
		if sw.Spec.Mode == sweep.ModeReference {
			return b.String() + tableConfigs(sw) + bestClassLine(sw)
		}
		if len(sw.Skipped) > 0 && len(sw.Skipped) >= len(sw.Configs) {
			// 'resume skip=' of the last configurations with runs: it
			// had read "no selective results yet" after "0 of 0 runs".
			return b.String() + leftOutLine(sw) + "no results: every configuration was left out\n"
		}
		return b.String() + leftOutLine(sw) + "no selective results yet\n"
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	if sums[0].HasRef {
		// The chosen configuration, the widest cell, trails the columns
		// left-aligned: right-aligned to the longest label, a workload's
		// several parameters had pushed the table past 100 columns.
		fmt.Fprintln(tw, "policy\ttolerance\tspeed-up\tmean error\tmax error\tquality\t  chosen")
		for _, s := range sums {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t  %s\n", s.Policy, format.Tolerance(s.Tolerance), format.Speedup(s.Speedup),
				format.Percent(s.MeanError), format.Percent(s.MaxError), format.Fixed(s.Quality, 3), s.Chosen)
		}
		tw.Flush()
		b.WriteString(partialLine(sw))
		fmt.Fprintf(&b, "best configuration (least reference time): %s\n", sums[0].Best)
		b.WriteString(failedFasterLine(sw))
		b.WriteString(bestClassLine(sw))
		if l := sw.NoiseLine(); l != "" {
			b.WriteString(l + "\n")
		}
		b.WriteString(launchLine(sw, sums))
		b.WriteString(stalledLine(sw))
		return b.String()
	}
	fmt.Fprintln(tw, "policy\ttolerance\tselective s\tchosen\tpredicted s\t")
	for _, s := range sums {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t\n", s.Policy, format.Tolerance(s.Tolerance), format.Seconds(s.SelTotal), s.Chosen, format.Seconds(s.PredChosen))
	}
	tw.Flush()
	// A tune's choice rests on the configurations run, as an evaluate's
	// does: a tune that hung after 1 of 4 had named its choice unsaid.
	b.WriteString(partialLine(sw))
	b.WriteString(bestClassLine(sw))
	return b.String()
}

// stallFactor is how many times its configuration's reference time a
// selective run must take to be called stalled: a selective run executes
// at most what a full run does, so one that takes three times as long lost
// its time to something else (the machine's other work, a process
// descheduled).
const stallFactor = 3

// stalledLine names the selective runs of sw that took stallFactor times
// their configuration's reference time or more, the longest first, and
// what the mean error of each policy and tolerance they belong to is
// without them; "" where none did. A user's sweep on a loaded machine
// read conditional at 0 as 934% off on average, one run of 2.64 s against
// a 0.028 s reference (its process descheduled 2.6 s) making all of it,
// and nothing said so.
func stalledLine(sw *Sweep) string {
	type stall struct {
		r   *sweep.Result
		m   sweep.Measured
		sel float64 // the selective run's time
	}
	var stalls []stall
	stalled := map[int]bool{}
	for i := range sw.Results {
		r := &sw.Results[i]
		m, ok := r.Measured()
		// apriori's counting run is part of its selective time: the
		// selective run is what is judged.
		sel := m.SelectiveS - fptr0(r.CountingS)
		if r.Policy == "" || r.Tolerance == nil || r.CutShort || !ok || !(m.ReferenceS > 0) || sel < stallFactor*m.ReferenceS {
			continue
		}
		stalls = append(stalls, stall{r, m, sel})
		stalled[i] = true
	}
	if len(stalls) == 0 {
		return ""
	}
	slices.SortStableFunc(stalls, func(a, b stall) int { return cmp.Compare(b.sel/b.m.ReferenceS, a.sel/a.m.ReferenceS) })
	label := sw.Labeler()
	var runs []string
	for k, st := range stalls {
		if k == 3 {
			runs = append(runs, fmt.Sprintf("and %d more", len(stalls)-k))
			break
		}
		runs = append(runs, fmt.Sprintf("config %d (%s), %s at %s: %s, %.0fx its reference %s, off by %s",
			st.r.Index, label(st.r.Config), st.r.Policy, format.Tolerance(*st.r.Tolerance), format.Seconds(st.sel)+" s", st.sel/st.m.ReferenceS,
			format.Seconds(st.m.ReferenceS)+" s", format.Percent(st.m.Error())))
	}
	// Each policy x tolerance with a stall, its mean error without them.
	var without []string
	seen := map[runKey]bool{}
	for _, st := range stalls {
		k := runKey{policy: st.r.Policy, tolerance: *st.r.Tolerance}
		if seen[k] {
			continue
		}
		seen[k] = true
		var rest []sweep.Measured
		for i, r := range sw.Results {
			if m, ok := r.Measured(); ok && !stalled[i] && r.Policy == k.policy && r.Tolerance != nil && *r.Tolerance == k.tolerance {
				rest = append(rest, m)
			}
		}
		if f := sweep.Summarize(rest); f.Judged > 0 {
			without = append(without, fmt.Sprintf("%s at %s %s", k.policy, format.Tolerance(k.tolerance), format.Percent(f.MeanError)))
		}
	}
	it := "it"
	head := fmt.Sprintf("note: a selective run took %dx its configuration's reference time or more", stallFactor)
	if len(stalls) > 1 {
		it = "them"
		head = fmt.Sprintf("note: %d selective runs took %dx their configuration's reference time or more", len(stalls), stallFactor)
	}
	line := fmt.Sprintf("%s, time a full run does not take (lost to the machine's other work, or a process descheduled): %s", head, strings.Join(runs, "; "))
	if len(without) > 0 {
		line += fmt.Sprintf(". Mean error without %s: %s", it, strings.Join(without, ", "))
	}
	w := stalls[0].r
	see := fmt.Sprintf("'plot gantt config=%d policy=%s tolerance=%s' shows where the time went", w.Index, w.Policy, format.Tolerance(*w.Tolerance))
	if sw.Spec == nil || !sw.Spec.Trace {
		see = "with 'trace on', 'plot gantt' shows where such time goes"
	}
	return line + ". Evaluate again when the machine is quiet; " + see + "\n"
}

// leftOutLine names the configurations left out of sw for good ('resume
// skip=' or 'hung=skip'), or is "". Left out, the sweep reads "ok": the
// best table had said nothing of a configuration never measured, and
// the configurations table nothing of the rows it no longer lists.
func leftOutLine(sw *Sweep) string {
	left := sw.skippedList()
	if len(left) == 0 {
		return ""
	}
	label := sw.Labeler()
	var names []string
	for _, i := range left {
		names = append(names, fmt.Sprintf("%d (%s)", i, label(sw.Configs[i])))
	}
	what := "configuration " + names[0] + " was"
	if len(names) > 1 {
		what = "configurations " + strings.Join(names, ", ") + " were"
	}
	return "note: " + what + " left out ('resume skip=' or 'hung=skip'): the speed-ups, errors and choices are the other configurations' alone\n"
}

// partialLine says, of a sweep that stopped before its end, how few
// configurations the figures above rest on: a cancelled sweep's table
// named a best configuration at quality 1.000 from 1 of its 4.
func partialLine(sw *Sweep) string {
	have := map[int]bool{}
	for _, r := range sw.Results {
		have[r.Index] = true
	}
	total := len(sw.Configs) - len(sw.Skipped) // 'resume hung=skip' left some out for good
	skipped := leftOutLine(sw)
	if len(have) >= total || sw.Status == StatusRunning || sw.Status == StatusOK {
		return skipped
	}
	verb := "have"
	if len(have) == 1 {
		verb = "has"
	}
	return skipped + fmt.Sprintf("note: only %d of the %d configurations %s results (the sweep %s): the speed-ups, errors and choices are theirs alone; 'resume' runs the rest\n",
		len(have), total, verb, endedAs(sw.Status))
}

// failedFasterLine names the configurations whose selective runs all
// failed (a program's crash; their full runs came in the error events)
// though their full runs were faster than every configuration with
// results: the best named and the quality are among the others, and the
// fastest configuration measured was not among them. "" when there are
// none.
func failedFasterLine(sw *Sweep) string {
	best := math.Inf(1)
	for _, r := range sw.Results {
		if len(r.ReferenceS) > 0 {
			best = math.Min(best, stat.Mean(r.ReferenceS, nil))
		}
	}
	if math.IsInf(best, 1) {
		return ""
	}
	var b strings.Builder
	label := sw.Labeler()
	for i := range sw.Configs {
		refs := sw.failedRefs[i]
		if len(refs) == 0 || sw.Skipped[i] || slices.ContainsFunc(sw.Results, func(r sweep.Result) bool { return r.Index == i }) {
			continue
		}
		if t := stat.Mean(refs, nil); t < best {
			fmt.Fprintf(&b, "note: configuration %d (%s) had shorter full runs (%s s) than the best above (%s s), but every selective run of it failed: no policy could choose it (the failure says what to try)\n",
				i, label(sw.Configs[i]), format.Seconds(t), format.Seconds(best))
		}
	}
	return b.String()
}

// endedAs says how a sweep ended, after "the sweep": "was cancelled",
// "died", "hung", "failed".
func endedAs(st Status) string {
	switch st {
	case StatusCancelled:
		return "was cancelled"
	case StatusDied, StatusHung, StatusFailed:
		return string(st)
	}
	return "ended " + string(st)
}

// launchLine is, for a program sweep with references, the speed-ups with
// every launch's start and end counted (mpirun, loading, MPI_Init and
// MPI_Finalize, which the timed regions leave out but the tuning waits
// for): a configuration's full run costs its reference mean plus a launch,
// a selective run its time plus a launch, a launch being the
// configuration's launch_s over its launches. "" otherwise.
func launchLine(sw *Sweep, sums []Summary) string {
	sp, each := launchSpeedups(sw)
	if sp == nil {
		return ""
	}
	var parts []string
	for _, s := range sums {
		if x, ok := sp[runKey{policy: s.Policy, tolerance: s.Tolerance}]; ok {
			parts = append(parts, fmt.Sprintf("%s %s %s", s.Policy, format.Tolerance(s.Tolerance), format.Speedup(x)))
		}
	}
	return fmt.Sprintf("with each launch's start and end counted (about %s a launch beyond its timed region): %s\n",
		format.Seconds(each)+" s", strings.Join(parts, ", "))
}

// launchSpeedups is, for a program's evaluate sweep whose results carry
// launch times, each policy and tolerance's speed-up with every launch's
// start and end counted (as launchLine says it), and the time a launch
// took beyond its timed region on average over the configurations; nil
// otherwise.
func launchSpeedups(sw *Sweep) (map[runKey]float64, float64) {
	type cfg struct {
		ref, launches float64
		n             int
		sel           map[runKey]float64
	}
	cfgs := map[int]*cfg{}
	for _, r := range sw.Results {
		if r.LaunchS == nil || r.Tolerance == nil || r.SelectiveS == nil || len(r.ReferenceS) == 0 {
			continue
		}
		c := cfgs[r.Index]
		if c == nil {
			c = &cfg{ref: stat.Mean(r.ReferenceS, nil), n: len(r.ReferenceS), sel: map[runKey]float64{}}
			cfgs[r.Index] = c
		}
		c.launches += *r.LaunchS
		c.n++
		c.sel[runKey{policy: r.Policy, tolerance: *r.Tolerance}] += *r.SelectiveS
	}
	if len(cfgs) == 0 {
		return nil, 0
	}
	// Each policy and tolerance against the full runs of its own
	// configurations: where one policy's run of a configuration failed,
	// the full runs of all had counted against its fewer runs (0.95x
	// timed regions alone, 1.25x with the launches, in a review's hpcc
	// sweep).
	per, full, launches := map[runKey]float64{}, map[runKey]float64{}, 0.0
	for _, c := range cfgs {
		launch := c.launches / float64(c.n)
		launches += launch
		for k, s := range c.sel {
			per[k] += s + launch
			full[k] += c.ref + launch
		}
	}
	sp := map[runKey]float64{}
	for k, t := range per {
		if t > 0 {
			sp[k] = full[k] / t
		}
	}
	return sp, launches / float64(len(cfgs))
}

// tableConfigs is one row per run.
func tableConfigs(sw *Sweep) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "#\tconfiguration\tpolicy\ttolerance\treference s\tpredicted s\tstd error s\terror\tselective s\tskipped\t")
	labels := map[int]string{} // each configuration's, written once for its runs
	vary := sw.varying()
	// An evaluate search's rounds come before its references are judged:
	// their errors are read against the references here.
	var searchRefs map[int][]float64
	if sw.Spec != nil && sw.Spec.Search != sweep.SearchNone {
		searchRefs = sw.references()
	}
	for _, r := range sw.sortedResults() {
		label, ok := labels[r.Index]
		if !ok {
			label = shortLabel(r.Config, vary)
			labels[r.Index] = label
		}
		ref := stat.Mean(r.ReferenceS, nil)
		skipped := "-"
		if r.Executed != nil && r.Skipped != nil && *r.Executed+*r.Skipped > 0 {
			skipped = format.Percent(float64(*r.Skipped) / float64(*r.Executed+*r.Skipped))
		}
		pol, tl := r.Policy, "-"
		errv := fptr(r.Error)
		switch {
		case pol == "" && r.Round > 0:
			pol = fmt.Sprintf("(full, round %d)", r.Round) // a search's finalist
		case pol == "":
			pol = "(full)"
		case r.Error == nil && r.PredictedS != nil && !r.CutShort && len(searchRefs[r.Index]) > 0:
			ref = stat.Mean(searchRefs[r.Index], nil)
			errv = sweep.Measured{PredictedS: *r.PredictedS, ReferenceS: ref}.Error()
		}
		if r.Tolerance != nil {
			tl = format.Tolerance(*r.Tolerance)
		}
		pred := format.Seconds(fptr(r.PredictedS))
		if r.CutShort {
			pred = ">=" + pred // cut short: the part that ran
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Index, label, pol, tl, format.Seconds(ref),
			pred, format.SmallSeconds(fptr(r.PredictedSE)), format.Percent(errv), format.Seconds(fptr(r.SelectiveS)), skipped)
	}
	tw.Flush()
	b.WriteString(leftOutLine(sw))
	return b.String()
}

// kernelRows is how many kernels 'table kernels' lists when top= does not
// say: hpcc's last run had 890, which no terminal scrolls back through.
const kernelRows = 40

// KernelOptions choose what 'table kernels' shows: the run (Config,
// Policy, Tolerance as for 'plot gantt': unset options match any, the last
// matching run is shown), a routine or family (Routine: "gemm",
// "gemm[NN]"), and how many rows (Top: 0 for kernelRows, -1 for all).
type KernelOptions struct {
	FigureOptions
	Top int
}

// tableKernels lists the kernels of the last selective run on rank 0.
func tableKernels(sw *Sweep) string {
	t, _ := tableKernelsOf(sw, KernelOptions{})
	return t
}

// tableKernelsOf lists the kernels of the last selective run on rank 0
// that o chooses: the run's order when they are few, else the Top that took
// the most time in the run (mean times calls), with how many more there
// are.
func tableKernelsOf(sw *Sweep, o KernelOptions) (string, error) {
	if len(sw.Kernels) == 0 {
		return "no kernel statistics in this sweep\n", nil
	}
	k, err := pickKernels(sw, o.FigureOptions)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	label := ""
	if k.Index >= 0 && k.Index < len(sw.Configs) {
		label = sw.Configs[k.Index].Label()
	}
	fmt.Fprintf(&b, "kernels of configuration %d (%s), %s at %s, rank %d\n", k.Index, label, k.Policy, format.Tolerance(k.Tolerance), k.Rank)
	known := 0
	var rows []sweep.KernelStat
	for _, s := range k.Kernels {
		if o.Routine != "" && !kernelOf(s, o.Routine) {
			continue
		}
		if s.Calls == 0 {
			known++ // eager: kept from earlier configurations, not called in this run
			continue
		}
		rows = append(rows, s)
	}
	if o.Routine != "" && len(rows)+known == 0 {
		var routines []string
		for _, s := range k.Kernels {
			routines = append(routines, s.Routine)
		}
		slices.Sort(routines)
		return "", fmt.Errorf("routine=%s: no kernel of configuration %d's run is one; its routines are %s", o.Routine, k.Index, strings.Join(slices.Compact(routines), ", "))
	}
	if len(rows) == 0 && known > 0 {
		// None called in this run (routine=gemm where rank 0 runs none
		// at this configuration): the table had been empty, unexplained.
		// Those known from earlier configurations are listed instead.
		what := "no kernel"
		if o.Routine != "" {
			what = "no " + o.Routine + " kernel"
		}
		fmt.Fprintf(&b, "(rank %d called %s in this run; the %d known from earlier configurations:)\n", k.Rank, what, known)
		for _, s := range k.Kernels {
			if o.Routine == "" || kernelOf(s, o.Routine) {
				rows = append(rows, s)
			}
		}
		known = 0
	}
	top := o.Top
	if top == 0 {
		top = kernelRows
	}
	more := 0
	if top > 0 && (o.Top > 0 || len(rows) > top) {
		// The kernels that took the most time, the longest first.
		slices.SortStableFunc(rows, func(a, b sweep.KernelStat) int {
			return cmp.Compare(b.MeanS*float64(b.Calls), a.MeanS*float64(a.Calls))
		})
		if len(rows) > top {
			rows, more = rows[:top], len(rows)-top
		}
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kernel\tsamples\tmean ms\thalf-width\tcalls\tskipped\tstate\t")
	for _, s := range rows {
		hw := "-"
		if s.HalfS >= 0 && s.MeanS > 0 {
			hw = format.Percent(s.HalfS / s.MeanS)
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%d\t%d\t%s\t\n", s.Key, s.Count, millis(s.MeanS), hw, s.Calls, s.Skipped, s.State)
	}
	tw.Flush()
	if more > 0 {
		fmt.Fprintf(&b, "(the %s that took the most time in the run (mean x calls), the longest first; %d more: top=all lists every one, routine=R one routine's)\n",
			format.Count(len(rows), "kernel", "kernels"), more)
	}
	if known > 0 {
		fmt.Fprintf(&b, "(and %s known from earlier configurations, not called in this run)\n", format.Count(known, "kernel", "kernels"))
	}
	others := 0
	for _, x := range k.Others {
		if o.Routine == "" || kernelOf(x.KernelStat, o.Routine) {
			others++
		}
	}
	if others > 0 {
		fmt.Fprintf(&b, "(and %s that only other ranks measured, which 'model' reads too)\n", format.Count(others, "computation kernel", "computation kernels"))
	}
	b.WriteString(sharerNote(k))
	return b.String(), nil
}

// sharerNote explains, for a policy that pools the grid's samples, why a
// kernel of k may be skipped though rank k.Rank's own samples, which the
// table and figure show, do not know it to the tolerance; "" for others.
func sharerNote(k *sweep.KernelsEvent) string {
	if p, err := policy.Lookup(k.Policy); err == nil {
		if _, ok := p.(policy.Sharer); ok {
			return fmt.Sprintf("(%s pools the grid's samples: a kernel is predictable once they know it to the tolerance, though rank %d's own samples, shown here, may be fewer and wider)\n", k.Policy, k.Rank)
		}
	}
	return ""
}

// millis writes s seconds in milliseconds: three decimals, and three
// significant digits under a millisecond (a message of a microsecond had
// read 0.001).
func millis(s float64) string {
	ms := 1e3 * s
	if ms > 0 && ms < 1 {
		return strconv.FormatFloat(ms, 'f', min(2-int(math.Floor(math.Log10(ms))), 12), 64)
	}
	return strconv.FormatFloat(ms, 'f', 3, 64)
}

// someRuns names the first 8 of n runs as their options choose them
// ("config=0 policy=eager tolerance=2^-1"), and how many more there are;
// run gives the i-th's configuration, policy and tolerance.
func someRuns(n int, run func(i int) (config int, policy string, tol float64)) string {
	var runs []string
	for i := range n {
		if i == 8 {
			runs = append(runs, fmt.Sprintf("and %d more", n-i))
			break
		}
		c, p, t := run(i)
		runs = append(runs, fmt.Sprintf("config=%d policy=%s tolerance=%s", c, p, format.Tolerance(t)))
	}
	return strings.Join(runs, ", ")
}

// kernelOf says whether s is of routine r: its routine ("gemm", any case)
// or a family its key starts with ("gemm[NN]").
func kernelOf(s sweep.KernelStat, r string) bool {
	return strings.EqualFold(s.Routine, r) || (strings.Contains(r, "[") && strings.HasPrefix(strings.ToLower(s.Key), strings.ToLower(r)))
}

// pickKernels is the last kernels event of sw that matches o (unset
// options match any run), or an error that names the value asked for
// that no run has, with those there are, or, when each value is there but
// not together, some runs that are.
func pickKernels(sw *Sweep, o FigureOptions) (*sweep.KernelsEvent, error) {
	i, err := pickRun(len(sw.Kernels), func(i int) (int, string, float64) {
		return sw.Kernels[i].Index, sw.Kernels[i].Policy, sw.Kernels[i].Tolerance
	}, o, "selective run", "selective runs", " with kernel statistics")
	if err != nil {
		return nil, err
	}
	return &sw.Kernels[i], nil
}

// pickRun is the last of n runs (at(i): configuration, policy, tolerance)
// that o matches (unset options match any), or an error that names the
// option no such run has, with the values those runs have; where each
// option has runs but none has them all, the runs there are. The runs are
// called run, runs (plural) followed by with ("traced run", "traced
// runs", "").
func pickRun(n int, at func(i int) (int, string, float64), o FigureOptions, run, runs, with string) (int, error) {
	configs, policies, tols := map[int]bool{}, map[string]bool{}, map[float64]bool{}
	for i := n - 1; i >= 0; i-- {
		c, p, t := at(i)
		if (o.Config == nil || c == *o.Config) && (o.Policy == "" || p == o.Policy) && (!o.tolGiven() || t == o.Tolerance) {
			return i, nil
		}
		configs[c], policies[p], tols[t] = true, true, true
	}
	lead, those := "no "+run+with+" has ", "the "+runs+with+" are"
	switch {
	case o.Config != nil && !configs[*o.Config]:
		var ns []string
		for _, i := range slices.Sorted(maps.Keys(configs)) {
			ns = append(ns, strconv.Itoa(i))
		}
		return -1, fmt.Errorf("%sconfig=%d: %s of configurations %s ('table configs' numbers them)", lead, *o.Config, those, strings.Join(ns, ", "))
	case o.Policy != "" && !policies[o.Policy]:
		return -1, fmt.Errorf("%spolicy=%s: %s of %s", lead, o.Policy, those, strings.Join(slices.Sorted(maps.Keys(policies)), ", "))
	case o.tolGiven() && !tols[o.Tolerance]:
		var ts []string
		for _, t := range slices.Sorted(maps.Keys(tols)) {
			ts = append(ts, format.Tolerance(t))
		}
		return -1, fmt.Errorf("%stolerance=%s: %s at %s", lead, format.Tolerance(o.Tolerance), those, strings.Join(ts, ", "))
	}
	return -1, fmt.Errorf("no %s%s matches all of these: %s %s", run, with, those, someRuns(n, at))
}

func writeJSONL(w io.Writer, sw *Sweep) error {
	enc := json.NewEncoder(w)
	for _, r := range sw.sortedResults() {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

func writeCSV(w io.Writer, sw *Sweep) error {
	cw := csv.NewWriter(w)
	keys := paramKeys(sw)
	head := []string{"sweep", "index"}
	head = append(head, keys...)
	head = append(head, "policy", "tolerance", "reference_mean_s", "reference_s", "predicted_s", "predicted_se_s", "selective_s", "error",
		"executed", "skipped", "comp_s", "comm_s", "idle_s", "residual",
		// A search's round (0: an evaluate search's references), and
		// whether a run was cut short (its prediction a lower bound).
		"round", "cut_short",
		// A program's launches beyond their timed regions, and
		// apriori's counting pass, each a part of real tuning time.
		"launch_s", "counting_s")
	cw.Write(head)
	num := func(p *float64) string {
		if p == nil {
			return ""
		}
		return strconv.FormatFloat(*p, 'g', -1, 64)
	}
	for _, r := range sw.sortedResults() {
		row := []string{strconv.Itoa(sw.ID), strconv.Itoa(r.Index)}
		for _, k := range keys {
			v, _ := r.Config.Value(k)
			row = append(row, fmt.Sprint(v))
		}
		var refs []string
		for _, x := range r.ReferenceS {
			refs = append(refs, strconv.FormatFloat(x, 'g', -1, 64))
		}
		ref := ""
		if len(r.ReferenceS) > 0 {
			ref = strconv.FormatFloat(stat.Mean(r.ReferenceS, nil), 'g', -1, 64)
		}
		ints := func(p *int64) string {
			if p == nil {
				return ""
			}
			return strconv.FormatInt(*p, 10)
		}
		round, cut := "", ""
		if sw.Spec != nil && sw.Spec.Search != sweep.SearchNone {
			round = strconv.Itoa(r.Round)
		}
		if r.CutShort {
			cut = "true"
		}
		var comp, comm, idle string
		if r.Path != nil {
			comp, comm, idle = num(&r.Path.CompS), num(&r.Path.CommS), num(&r.Path.IdleS)
		}
		row = append(row, r.Policy, num(r.Tolerance), ref, strings.Join(refs, ";"), num(r.PredictedS), num(r.PredictedSE), num(r.SelectiveS),
			num(r.Error), ints(r.Executed), ints(r.Skipped), comp, comm, idle, num(r.Residual), round, cut, num(r.LaunchS), num(r.CountingS))
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// TableBest renders a sweep's per-policy-and-tolerance table (what
// 'table best' prints): speed-up, errors, quality and the chosen configuration.
func TableBest(sw *Sweep) string { return tableBest(sw) }

// BestClass is the line 'table best' ends with that names the best
// performance class (rank's defaults), or "" where the sweep's data cannot
// be ranked (one reference run per configuration, no standard errors).
func BestClass(sw *Sweep) string { return strings.TrimRight(bestClassLine(sw), "\n") }

// TableConfigs renders one row per run (what 'table configs' prints).
func TableConfigs(sw *Sweep) string { return tableConfigs(sw) }

// TableKernels renders the last run's kernels (what 'table kernels' prints).
func TableKernels(sw *Sweep) string { return tableKernels(sw) }
