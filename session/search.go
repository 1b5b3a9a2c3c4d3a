package session

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/internal/plots"
	"github.com/approxtune/approxtune/internal/workloads/catalog"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/plot"

	"github.com/approxtune/approxtune/internal/selective/policy"
	"github.com/approxtune/approxtune/sweep"
)

// Search says how a sweep searches its space: the options search=,
// budget= and policy= of tune and evaluate.
type Search struct {
	Method sweep.Search // "": every configuration under every policy and tolerance
	Budget int          // configurations SearchRandom draws
	Policy string       // the one policy a search runs ("": eager if set, else the first set)
	Seed   uint64       // SearchRandom's draw (0: the spec's default, 1)
}

// searchArgs reads tune's and evaluate's options.
func searchArgs(s *Session, c *Command) (Search, error) {
	var se Search
	var budget, seed *Arg
	for i := range c.Args {
		a := c.Args[i]
		switch a.Key {
		case "search":
			switch m := sweep.Search(strings.ToLower(a.Value)); m {
			case sweep.SearchHalving, sweep.SearchRandom:
				se.Method = m
			case "none":
				se.Method = sweep.SearchNone
			default:
				return se, errAt(a.ValueCol, "%q is not a search: want halving (successive halving over the space), random (halving over budget= configurations drawn at random) or none (every configuration)", a.Value)
			}
		case "budget":
			v, err := strconv.Atoi(a.Value)
			if err != nil || v < 1 {
				return se, errAt(a.ValueCol, "%q is not a budget: want the number of configurations search=random draws, an integer of at least 1", a.Value)
			}
			se.Budget, budget = v, &c.Args[i]
		case "seed":
			v, err := strconv.ParseUint(a.Value, 10, 63)
			if err != nil || v < 1 {
				return se, errAt(a.ValueCol, "%q is not a seed: want an integer of at least 1 (default 1); each seed draws another sample of the space", a.Value)
			}
			se.Seed, seed = v, &c.Args[i]
		case "policy":
			if _, err := policy.Lookup(a.Value); err != nil {
				if strings.Contains(a.Value, ",") {
					return se, errAt(a.ValueCol, "policy= is the one policy a search runs (with search=halving or random); the policies a sweep runs are set by the command 'policy', e.g. policy %s, then %s", a.Value, c.Verb)
				}
				return se, errAt(a.ValueCol, "%q is not a policy: want one of %s", a.Value, strings.Join(policy.Names(), ", "))
			}
			se.Policy = a.Value
		default:
			return se, errAt(a.Col, "%s takes options as KEY=VALUE: search=halving|random|none, budget=N and seed=S (with search=random), policy=P (the search's policy); e.g. %s search=halving", c.Verb, c.Verb)
		}
	}
	if budget != nil && se.Method != sweep.SearchRandom {
		return se, errAt(budget.Col, "budget= goes with search=random: it is how many configurations to draw")
	}
	if seed != nil && se.Method != sweep.SearchRandom {
		return se, errAt(seed.Col, "seed= goes with search=random: it chooses which configurations are drawn")
	}
	if se.Method == sweep.SearchRandom && budget == nil {
		return se, errAt(c.VerbCol, "search=random needs budget=N, the number of configurations to draw (e.g. %s search=random budget=20)", c.Verb)
	}
	if se.Method == sweep.SearchNone && se.Policy != "" {
		return se, errAt(c.VerbCol, "policy= goes with search=: a sweep without a search runs the policies 'policy' set")
	}
	return se, nil
}

// searchPolicy is the one policy a search of st runs: the one asked for,
// else eager when it is among the session's policies, else the first.
func searchPolicy(st State, se Search) string {
	if se.Policy != "" {
		return se.Policy
	}
	if eager := (policy.Eager{}).Name(); slices.Contains(st.Policies, eager) || len(st.Policies) == 0 {
		return eager
	}
	return st.Policies[0]
}

// validateSearch is validate with a search: the spec runs the search's
// one policy over the session's tolerances, loosest first.
func validateSearch(ss schemaSet, st State, mode sweep.Mode, se Search, ranks int) (*sweep.Spec, []sweep.Config, error) {
	if se.Method == sweep.SearchNone {
		return validate(ss, st, mode, ranks)
	}
	st = st.clone()
	st.Policies = []string{searchPolicy(st, se)}
	sp, configs, err := validate(ss, st, mode, ranks)
	if err != nil {
		return nil, nil, err
	}
	sp.Search, sp.Budget = se.Method, se.Budget
	if se.Seed != 0 {
		sp.Seed = int64(se.Seed)
	}
	if se.Method == sweep.SearchRandom && se.Budget > len(configs) {
		return nil, nil, &Error{Msg: fmt.Sprintf("budget=%d is more than the space's %d configurations: use search=halving to search them all", se.Budget, len(configs))}
	}
	if len(configs) == 1 {
		return nil, nil, &Error{Msg: fmt.Sprintf("search=%s over 1 configuration has nothing to choose from: give 'space' more values, or '%s' without search= runs it", se.Method, mode)}
	}
	if se.Budget == 1 {
		return nil, nil, &Error{Msg: "search=random budget=1 draws 1 configuration, and has nothing to choose from: give budget=2 or more"}
	}
	return sp, configs, nil
}

// roundNow says which round a search is in: the one after the last that
// ended.
func (s *Sweep) roundNow() string {
	if s.Search != nil {
		return fmt.Sprintf("%d rounds done", s.Search.Rounds)
	}
	if s.Spec.Mode == sweep.ModeEvaluate && len(s.Rounds) == 0 && s.selectiveResults() == 0 {
		if s.refRuns > 0 && len(s.Configs) > 0 {
			return fmt.Sprintf("references of every configuration (to judge the search), run %d of %d", s.refRuns, len(s.Configs)*s.Spec.ReferenceReps)
		}
		return "references of every configuration (to judge the search)"
	}
	n := len(s.Rounds)
	ts := s.Spec.RoundTolerances()
	if n > 0 {
		last := s.Rounds[n-1]
		if len(last.Kept) <= sweep.SearchFullRuns || n >= len(ts) {
			var leaders []int
			for _, r := range s.Rounds {
				leaders = append(leaders, r.Best)
			}
			return fmt.Sprintf("round %d: full runs of %d", n+1, len(sweep.Finalists(last.Kept, leaders, s.procs())))
		}
		return fmt.Sprintf("round %d at %s on %d", n+1, format.Tolerance(ts[n]), len(last.Kept))
	}
	return fmt.Sprintf("round 1 at %s", format.Tolerance(ts[0]))
}

// procs is each configuration's process count, as the search's finals
// group them (sweep.Finalists): a program's ranks, or the grid of a
// workload this binary knows; nil where it does not. A configuration the
// workload's parameters reject counts 0.
func (s *Sweep) procs() func(int) int {
	if s.Spec != nil && s.Spec.Program != nil {
		p := s.Spec.Program
		return func(i int) int {
			if i < 0 || i >= len(s.Configs) {
				return 0
			}
			return p.Ranks(s.Configs[i])
		}
	}
	w, ok := catalog.Lookup(s.Workload)
	if !ok {
		return nil
	}
	params := w.Params()
	return func(i int) int {
		if i < 0 || i >= len(s.Configs) {
			return 0
		}
		c, err := sweep.Canonical(params, s.Configs[i])
		if err != nil {
			return 0
		}
		return w.Grid(c).Procs()
	}
}

// selectiveResults counts the sweep's selective results.
func (s *Sweep) selectiveResults() int {
	n := 0
	for _, r := range s.Results {
		if r.Policy != "" {
			n++
		}
	}
	return n
}

// roundLine is what a sweep prints as a search's round ends.
func roundLine(sw *Sweep, r sweep.Round) string {
	if r.Tolerance == 0 && r.Policy == "" {
		return fmt.Sprintf("round %d, full runs: %d configuration%s, fastest %s (%s s)",
			r.Round, len(r.Ran), plural(len(r.Ran)), sw.label(r.Best), format.Seconds(sw.fullTime(r.Best, r.Round)))
	}
	cut := 0
	for _, x := range sw.Results {
		if x.Round == r.Round && x.CutShort {
			cut++
		}
	}
	why := ""
	if len(r.Dropped) > 0 {
		// Why each was dropped: slower with confidence, past the round's
		// budget (Capped), or cut short on the way there.
		conf := "with confidence"
		if sw.Spec != nil && sw.Spec.Confidence > 0 {
			conf = fmt.Sprintf("with %g%% confidence", 100*sw.Spec.Confidence)
		}
		var parts []string
		if n := len(r.Dropped) - len(r.Capped) - cut; n > 0 {
			parts = append(parts, fmt.Sprintf("%d slower than the fastest %s", n, conf))
		}
		if len(r.Capped) > 0 {
			parts = append(parts, fmt.Sprintf("%d past the fastest %d the round keeps", len(r.Capped), len(r.Kept)))
		}
		if cut > 0 {
			parts = append(parts, fmt.Sprintf("%d cut short", cut))
		}
		above := ""
		if r.ThresholdS > 0 {
			above = fmt.Sprintf("each predicted at %s s or more: ", format.Seconds(r.ThresholdS))
		}
		why = fmt.Sprintf(" (%s%s)", above, strings.Join(parts, ", "))
	}
	return fmt.Sprintf("round %d at %s: %d configuration%s, %d kept, %d dropped%s; fastest %s",
		r.Round, format.Tolerance(r.Tolerance), len(r.Ran), plural(len(r.Ran)), len(r.Kept), len(r.Dropped), why, sw.label(r.Best))
}

// label is configuration i's label, with the parameters that vary in the
// sweep only (shortLabel).
func (s *Sweep) label(i int) string {
	if i >= 0 && i < len(s.Configs) {
		return shortLabel(s.Configs[i], s.varying())
	}
	return fmt.Sprintf("#%d", i)
}

// fullTime is configuration i's full-run time in a search round (NaN: none).
func (s *Sweep) fullTime(i, round int) float64 {
	for _, r := range s.Results {
		if r.Index == i && r.Round == round && r.Policy == "" && len(r.ReferenceS) > 0 {
			return stat.Mean(r.ReferenceS, nil)
		}
	}
	return math.NaN()
}

// references are an evaluate search's references by configuration (round 0).
func (s *Sweep) references() map[int][]float64 {
	refs := map[int][]float64{}
	for _, r := range s.Results {
		if r.Round == 0 && r.Policy == "" && len(r.ReferenceS) > 0 {
			refs[r.Index] = r.ReferenceS
		}
	}
	return refs
}

// tableSearch is 'table best' for a search: its rounds, the choice and
// what the search cost; for evaluate, the choice judged by the references.
func tableSearch(sw *Sweep) string {
	var b strings.Builder
	fmt.Fprintf(&b, "sweep %d: %s search=%s %s, %s, %d runs (%s)\n", sw.ID, sw.Spec.Mode, sw.Spec.Search, sw.Workload,
		sw.Spec.Policies[0], len(sw.Results), sw.Status)
	b.WriteString(sw.jobsLine())
	if len(sw.Rounds) == 0 {
		return b.String() + "no round has ended yet\n"
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\ttolerance\tran\tkept\tdropped\tfastest\tseconds\t")
	for _, r := range sw.Rounds {
		tl := format.Tolerance(r.Tolerance)
		if r.Policy == "" {
			tl = "full"
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%d\t%s\t%s\t\n", r.Round, tl, len(r.Ran), len(r.Kept), len(r.Dropped), sw.label(r.Best), format.Seconds(r.ElapsedS))
	}
	tw.Flush()
	se := sw.Search
	if se == nil {
		// The full runs a stopped search made are its best information.
		var full []string
		for _, r := range sw.Results {
			if r.Round > len(sw.Rounds) && r.Policy == "" && len(r.ReferenceS) > 0 {
				full = append(full, fmt.Sprintf("%s (%s s)", sw.label(r.Index), format.Seconds(stat.Mean(r.ReferenceS, nil))))
			}
		}
		b.WriteString(leftSearchLine(sw))
		if len(full) > 0 {
			return b.String() + "the search has not chosen yet; its full runs so far: " + strings.Join(full, ", ") + "\n"
		}
		return b.String() + "the search has not chosen yet\n"
	}
	fmt.Fprintf(&b, "chosen: %s (%s s in full), after %d round%s on %d configuration%s; the search's runs took %s s\n",
		sw.label(se.Chosen), format.Seconds(se.ChosenS), se.Rounds, plural(se.Rounds), se.Considered, plural(se.Considered), format.Seconds(se.SearchS))
	b.WriteString(leftSearchLine(sw))
	b.WriteString(earlyFinalsLine(sw))
	refs := sw.references()
	fullS := 0.0 // one full run of every configuration, where judged
	if j, ok := sweep.Judge(refs, *se); ok {
		fullS = j.FullS
		in := "not in it"
		if j.InBestClass {
			in = "in it"
		}
		// The search's best class is the noise floor's (the benchmarks'
		// judge), not rank's bootstrapped classes, which a review found
		// differ on one sweep: each says which it is.
		floor := fmt.Sprintf("by the noise floor: within %s of the best; 'rank' classes by bootstrapped comparison, and may differ", format.Percent(j.NoiseFloor))
		if !slices.ContainsFunc(slices.Collect(maps.Values(refs)), func(ts []float64) bool { return len(ts) > 1 }) {
			floor = "no noise floor with 1 reference run each ('reps 3'): the best alone"
		}
		var members []string
		for _, i := range j.BestClass {
			members = append(members, sw.label(i))
		}
		fmt.Fprintf(&b, "judged by the references (their medians): best %s (%s s), the chosen one %s s; best class (%s): %s, the chosen one %s; quality %s (best over chosen)\n",
			sw.label(j.Best), format.Seconds(j.BestS), format.Seconds(j.ChosenS), floor, listSome(members, 5), in, format.Fixed(j.Quality, 3))
		fmt.Fprintf(&b, "one full run of every configuration: %s s, %s the search's time", format.Seconds(j.FullS), format.Speedup(j.Ratio))
		if j.Ratio > 0 && j.Ratio < 1 {
			// Runs of milliseconds: a selective run's fixed costs (its
			// set-up, the critical path's exchange) are most of it.
			b.WriteString("; the search took longer than running every configuration in full would: its runs are too short for skipping to pay off")
		}
		b.WriteString("\n")
	}
	return b.String() + searchLaunchLine(sw, se.SearchS, fullS)
}

// earlyFinalsLine says, where a search's rounds ended before its tightest
// tolerance (sweep.SearchFullRuns or fewer survived) and some survivors
// did not run in full, that the finalists were picked by predictions at
// that looser tolerance, and how to have tighter rounds rank them; or is
// "". A new user's 24 configurations left 6 at 2^-1, whose 3 predicted
// fastest ran in full: the fastest by its references, predicted 19% high,
// was not among them (quality 0.665), and nothing said why.
func earlyFinalsLine(sw *Sweep) string {
	if sw.Spec == nil || len(sw.Rounds) < 2 {
		return ""
	}
	last, full := sw.Rounds[len(sw.Rounds)-2], sw.Rounds[len(sw.Rounds)-1]
	ts := sw.Spec.RoundTolerances()
	if last.Policy == "" || full.Policy != "" || len(ts) == 0 || last.Tolerance <= ts[len(ts)-1] {
		return ""
	}
	var out []string
	for _, i := range last.Kept {
		if !slices.Contains(full.Ran, i) && !slices.Contains(sw.leftSearch, i) {
			out = append(out, sw.label(i))
		}
	}
	if len(out) == 0 {
		return ""
	}
	tl := format.Tolerance(last.Tolerance)
	return fmt.Sprintf("note: the rounds ended at %s with %d survivors (they end once %d or fewer survive, and those predicted fastest run in full), and %s did not run in full, passed over on predictions at %s (each kernel's mean known to within %s), which can put configurations out of order: %s. "+
		"For tighter rounds to rank them, start the search at a tighter tolerance ('tolerance %s')\n",
		tl, len(last.Kept), sweep.SearchFullRuns, format.Count(len(out), "survivor", "survivors"), tl, format.Percent(last.Tolerance), listSome(out, 5), tighterTolerances(ts, last.Tolerance))
}

// tighterTolerances is the tolerance setting ts (loosest first) without
// tol and those looser.
func tighterTolerances(ts []float64, tol float64) string {
	var names []string
	for _, t := range ts {
		if t < tol {
			names = append(names, format.Tolerance(t))
		}
	}
	return strings.Join(names, ",")
}

// leftSearchLine names the configurations that left a program's search, a
// launch of theirs failed (a selective one, or a finalist's full one: the
// sweep ends ok, the choice made among the rest), or is "".
func leftSearchLine(sw *Sweep) string {
	if len(sw.leftSearch) == 0 {
		return ""
	}
	var names []string
	for _, i := range sw.leftSearch {
		names = append(names, fmt.Sprintf("%d (%s)", i, sw.label(i)))
	}
	whose := "theirs"
	if len(names) == 1 {
		whose = "its"
	}
	return fmt.Sprintf("note: %s left the search, a launch of %s failed (the program's output is in %s): %s\n",
		format.Count(len(names), "configuration", "configurations"), whose, ProgramLogName, listSome(names, 5))
}

// searchLaunchLine compares, for a program's search, the search's launches
// with one full launch of every configuration (fullS: their medians' sum,
// where an evaluate search's references judged it; a tune's time is given
// alone), each launch's start and end counted (mpirun, MPI_Init,
// MPI_Finalize: results' launch_s), as a program sweep's table does: for a
// program of milliseconds they are most of the time the user waits. ""
// where the results carry no launch times.
func searchLaunchLine(sw *Sweep, searchS, fullS float64) string {
	extra, fullExtra, refs := 0.0, 0.0, 0
	for _, r := range sw.Results {
		switch {
		case r.LaunchS == nil:
		case r.Round > 0:
			extra += *r.LaunchS
		case len(r.ReferenceS) > 0:
			fullExtra += *r.LaunchS / float64(len(r.ReferenceS))
			refs++
		}
	}
	switch {
	case !(searchS+extra > 0) || extra == 0:
		return ""
	case refs == 0 || fullS == 0:
		return fmt.Sprintf("with each launch's start and end counted, the search took %s s\n", format.Seconds(searchS+extra))
	}
	return fmt.Sprintf("with each launch's start and end counted (about %s s a launch beyond its timed region): the search %s s, one full run of every configuration %s s, %s\n",
		format.Seconds(fullExtra/float64(refs)), format.Seconds(searchS+extra), format.Seconds(fullS+fullExtra), format.Speedup((fullS+fullExtra)/(searchS+extra)))
}

// searchFigure draws a search's rounds (plots.Search): the rounds that
// ended with their survivors and thresholds, the round under way with
// what it has run so far, and for an evaluate search first a column of
// every configuration's mean reference time.
func searchFigure(sw *Sweep, sum *strings.Builder) (*plot.Plot, error) {
	if sw.Spec == nil || sw.Spec.Search == sweep.SearchNone {
		return nil, fmt.Errorf("search needs a search sweep (tune search=halving); the last sweep ran every configuration")
	}
	var rounds []plots.SearchRound
	refs := sw.references()
	best := 0.0
	if len(refs) > 0 {
		col := plots.SearchRound{Label: "references", Reference: true}
		for _, i := range slices.Sorted(maps.Keys(refs)) {
			m := stat.Mean(refs[i], nil)
			col.Points = append(col.Points, plots.SearchPoint{Time: m, Kept: true})
			if best == 0 || m < best {
				best = m
			}
		}
		rounds = append(rounds, col)
	}
	ts := sw.Spec.RoundTolerances()
	for n := 1; ; n++ {
		var ended *sweep.Round
		if n <= len(sw.Rounds) {
			ended = &sw.Rounds[n-1]
		}
		col := plots.SearchRound{Label: fmt.Sprintf("%d", n)}
		full := false
		for _, r := range sw.Results {
			if r.Round != n {
				continue
			}
			t := fptr(r.PredictedS)
			if r.Policy == "" {
				t, full = stat.Mean(r.ReferenceS, nil), true
			}
			// A run cut short is dropped whatever the rest of its round
			// gives.
			kept := (ended == nil || slices.Contains(ended.Kept, r.Index)) && !r.CutShort
			if full { // the chosen one, once the round has ended
				kept = ended != nil && r.Index == ended.Best
			}
			col.Points = append(col.Points, plots.SearchPoint{Time: t, Kept: kept, Cut: r.CutShort})
		}
		if len(col.Points) == 0 {
			break
		}
		col.Full = full
		switch {
		case full:
			col.Label = fmt.Sprintf("%d: full", n)
		case n <= len(ts):
			col.Label = fmt.Sprintf("%d: %s", n, format.Tolerance(ts[n-1]))
		}
		if ended != nil {
			if !full {
				col.Threshold = ended.ThresholdS
			}
			fmt.Fprintf(sum, "%s\n", roundLine(sw, *ended))
		}
		rounds = append(rounds, col)
	}
	if sw.Search != nil {
		fmt.Fprintf(sum, "chosen: %s (%s s in full); the search's runs took %s s\n", sw.Search.Config.Label(), format.Seconds(sw.Search.ChosenS), format.Seconds(sw.Search.SearchS))
	}
	what := sw.Workload
	if p := sw.Spec.Program; p != nil && len(p.Command) > 0 {
		what = filepath.Base(p.Command[0]) // the title had said "program"
	}
	return plots.Search(rounds, best, fmt.Sprintf("%s search, %s: %s", sw.Spec.Search, sw.Spec.Policies[0], what))
}
