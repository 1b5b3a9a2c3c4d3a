package session

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/plot"

	"github.com/approxtune/approxtune/analysis"
	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/internal/plots"
	"github.com/approxtune/approxtune/sweep"
)

// Settings of 'rank' besides the paper's (analysis.DefaultRankOptions).
const (
	// rankSeed seeds the bootstrap unless seed= says otherwise, so that a
	// ranking of the same data reproduces.
	rankSeed = 1
	// rankDraws is how many times a tune sweep's ranking draws from each
	// prediction's distribution (the paper measures 50 runs per algorithm).
	rankDraws = 50
	// maxRankCount bounds reps=, draws= and k=, so a typo cannot hang the
	// session.
	maxRankCount = 100000
	// rankSeedKey mixes the seed into the second word of the PCG state.
	rankSeedKey = 0x9e3779b97f4a7c15
)

// rankSettings are the options of a ranking.
type rankSettings struct {
	opt  analysis.RankOptions
	seed uint64
	// kSet: k= was given. Otherwise a tune sweep's predictions are
	// compared one drawn time a side (rankSweep).
	kSet bool
	// policy and tolerance choose a tune sweep's predictions; "" and nil
	// take the sweep's first policy and its smallest tolerance.
	policy    string
	tolerance *float64
	// announce, when set, is told how many configurations are about to be
	// ranked and about how long that takes (rankDuration).
	announce func(n int, d time.Duration)
	// top, when above 0, ranks only the top configurations of least mean
	// time: the bubble sort's cost grows with the square of the
	// configurations (seconds for a few hundred), and the best class of a
	// large sweep is found among its fastest.
	top int
}

// bestLineTop is how many of the fastest configurations by mean the best
// class line at the end of a sweep and in 'table best' ranks;
// figureRankTop how many 'plot rank' draws, a row each.
const (
	bestLineTop   = 40
	figureRankTop = 25
)

// defaultRankSettings are the paper's options and the fixed seed.
func defaultRankSettings() rankSettings {
	return rankSettings{opt: analysis.DefaultRankOptions(), seed: rankSeed}
}

// rankSource is what a ranking compares: one sample of times per
// configuration.
type rankSource struct {
	// from says what the times are: "reference runs", or "predictions of
	// eager at 2^-5".
	from      string
	predicted bool
	tol       float64  // predicted: the tolerance of the predictions
	index     []int    // each sample's configuration index
	labels    []string // each sample's configuration label
	samples   []analysis.Sample
	pred, se  []float64 // predicted: each configuration's prediction and its standard error
	runs      [2]int    // reference runs: the fewest and the most of a configuration
	left      int       // configurations of the sweep without results, left out
	cutShort  int       // of those, a search's runs cut short: lower bounds, not predictions
}

// ranked is a sweep's ranking.
type ranked struct {
	st  rankSettings
	src rankSource
	r   analysis.Ranking
	cut int // slower configurations by mean not ranked (settings' top)
}

// rankWhich fills st's policy and tolerance with a tune sweep's defaults
// (FigureOptions.defaults: the first policy, the smallest tolerance).
func rankWhich(sw *Sweep, st rankSettings) (string, float64) {
	o := FigureOptions{Policy: st.policy}.defaults(sw)
	if st.tolerance != nil {
		return o.Policy, *st.tolerance
	}
	return o.Policy, o.Tolerance
}

// rankSources gathers the times of sw's configurations: an evaluate or
// reference sweep's reference runs (two or more per configuration), or a
// tune sweep's predictions of one policy at one tolerance, each the source
// of rankDraws times drawn from N(predicted, standard error² + (a ×
// predicted)²), a the allowance a search grants the tolerance's
// predictions (analysis.Allowance): a standard error of 0 (every kernel
// skipped at its own mean) is no certainty, and 0.7% apart had made two
// classes in every sort.
func rankSources(sw *Sweep, st rankSettings, rng *rand.Rand) (rankSource, error) {
	var src rankSource
	if sw == nil || sw.Spec == nil || len(sw.Results) == 0 {
		return src, fmt.Errorf("no results yet: run evaluate or tune first, or read another session's with 'load SESSION'")
	}
	if sw.Spec.Mode == sweep.ModeTune {
		return predictionSources(sw, st, rng)
	}
	src.from = "reference runs"
	refs := map[int][]float64{}
	labels := map[int]string{}
	label := sw.Labeler()
	for _, r := range sw.Results {
		if len(r.ReferenceS) > len(refs[r.Index]) {
			refs[r.Index], labels[r.Index] = r.ReferenceS, label(r.Config)
		}
	}
	var few []string
	src.runs = [2]int{math.MaxInt, 0}
	for _, i := range sortedKeys(refs) {
		x := refs[i]
		if len(x) < 2 {
			few = append(few, labels[i])
			continue
		}
		src.add(i, labels[i], x)
		src.runs = [2]int{min(src.runs[0], len(x)), max(src.runs[1], len(x))}
	}
	if len(few) > 0 {
		return src, fmt.Errorf("rank compares the spread of each configuration's reference runs and needs 2 or more of them; sweep %d has 1 for %s: set 'reps 3' or more and run %s again",
			sw.ID, listSome(few, 3), sw.Spec.Mode)
	}
	src.left = max(0, len(sw.Configs)-len(src.index))
	return src, nil
}

// predictionSources is rankSources for a tune sweep.
func predictionSources(sw *Sweep, st rankSettings, rng *rand.Rand) (rankSource, error) {
	pol, tol := rankWhich(sw, st)
	src := rankSource{predicted: true, tol: tol, from: fmt.Sprintf("predictions of %s at %s", pol, format.Tolerance(tol))}
	byIndex := map[int]sweep.Result{}
	cut := 0
	for _, r := range sw.Results {
		if r.Policy == pol && r.Tolerance != nil && *r.Tolerance == tol && r.PredictedS != nil {
			if r.CutShort { // a lower bound, not a prediction: left out (src.left)
				cut++
				continue
			}
			byIndex[r.Index] = r
		}
	}
	if len(byIndex) == 0 {
		return src, fmt.Errorf("sweep %d has no predictions of %s at %s: %s", sw.ID, pol, format.Tolerance(tol), predictedPairs(sw))
	}
	var noSE []string
	label := sw.Labeler()
	for _, i := range sortedKeys(byIndex) {
		r := byIndex[i]
		if r.PredictedSE == nil {
			noSE = append(noSE, label(r.Config))
			continue
		}
		a := analysis.Allowance(tol) * *r.PredictedS
		x, err := analysis.SampleNormal(*r.PredictedS, math.Hypot(*r.PredictedSE, a), rankDraws, rng)
		if err != nil {
			return src, fmt.Errorf("prediction of %s: %w", label(r.Config), err)
		}
		src.add(i, label(r.Config), x)
		src.pred, src.se = append(src.pred, *r.PredictedS), append(src.se, *r.PredictedSE)
	}
	if len(noSE) > 0 {
		return src, fmt.Errorf("rank draws times from each prediction's distribution, N(predicted, standard error²), and %d of the %d predictions of %s at %s in sweep %d carry no standard error (predicted_se_s), among them %s: run tune again with this version of approxtune, or rank an evaluate sweep's reference runs",
			len(noSE), len(byIndex), pol, format.Tolerance(tol), sw.ID, listSome(noSE, 3))
	}
	src.left, src.cutShort = max(0, len(sw.Configs)-len(src.index)), cut
	return src, nil
}

// add appends a configuration's times; a configuration without parameters
// is named by its index, as 'table configs' numbers it.
func (src *rankSource) add(i int, label string, x []float64) {
	if label == "" {
		label = fmt.Sprintf("config %d", i)
	}
	src.index = append(src.index, i)
	src.labels = append(src.labels, label)
	src.samples = append(src.samples, analysis.Sample{Name: strconv.Itoa(len(src.samples)), Times: x})
}

// sortedKeys is m's keys in increasing order.
func sortedKeys[V any](m map[int]V) []int {
	ks := make([]int, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// listSome joins the first n of xs, saying how many more there are.
func listSome(xs []string, n int) string {
	if len(xs) <= n {
		return strings.Join(xs, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(xs[:n], ", "), len(xs)-n)
}

// predictedPairs says which policy= and tolerance= a sweep has predictions
// of, from its results: a search's rounds ran some of its tolerances only,
// and naming every tolerance set had offered the very one refused.
func predictedPairs(sw *Sweep) string {
	seen := map[string]bool{}
	var pairs []string
	for _, r := range sw.Results {
		if r.Policy == "" || r.Tolerance == nil || r.PredictedS == nil || r.CutShort {
			continue
		}
		p := fmt.Sprintf("policy=%s tolerance=%s", r.Policy, format.Tolerance(*r.Tolerance))
		if !seen[p] {
			seen[p] = true
			pairs = append(pairs, p)
		}
	}
	if len(pairs) == 0 {
		return "it has none"
	}
	slices.Sort(pairs)
	return "it has predictions of " + strings.Join(pairs, "; ")
}

// tolerances lists a sweep's tolerances as the language writes them.
func tolerances(sw *Sweep) string {
	var ts []string
	for _, t := range sw.Spec.Tolerances {
		ts = append(ts, format.Tolerance(float64(t)))
	}
	return strings.Join(ts, ", ")
}

// rankSweep ranks sw's configurations into performance classes; it stops
// with ctx's error when ctx ends.
func rankSweep(ctx context.Context, sw *Sweep, st rankSettings) (*ranked, error) {
	if err := st.opt.Validate(); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(st.seed, st.seed^rankSeedKey))
	src, err := rankSources(sw, st, rng)
	if err != nil {
		return nil, err
	}
	if len(src.samples) < 2 {
		what := "only 1 configuration"
		if len(src.samples) == 0 {
			what = "no configuration"
		}
		return nil, fmt.Errorf("rank compares two or more configurations; sweep %d has %s for %s", sw.ID, src.from, what)
	}
	if src.predicted && !st.kSet {
		// The paper compares minima of K runs: a run's noise only ever
		// adds time, and the least of K is what the configuration can do.
		// A prediction's uncertainty is symmetric: the least of K draws
		// from N(predicted, se²) falls with se, and the least certain
		// prediction came out fastest whatever its mean (a reviewer's
		// 7.1 ms with a 35 ms error ranked alone above 1.0 ms). One draw a
		// side makes a comparison the chance that one is faster.
		st.opt.KMin, st.opt.KMax = 1, 1
	}
	cut := 0
	if st.top > 0 && len(src.samples) > st.top {
		cut = len(src.samples) - st.top
		src = src.fastest(st.top)
	}
	if st.announce != nil {
		st.announce(len(src.samples), rankDuration(len(src.samples), st.opt))
	}
	r, err := analysis.RankContext(ctx, src.samples, st.opt, rng)
	if errors.Is(err, context.Canceled) {
		return nil, errors.New("rank: interrupted")
	}
	if err != nil {
		return nil, fmt.Errorf("rank: %w", err)
	}
	k := &ranked{st: st, src: src, r: r, cut: cut}
	// Within a class, fastest first by the time shown (a tune sweep's
	// prediction, not the mean of the times drawn from it), so the best
	// class line, the table and the figure agree.
	for _, c := range k.r.Classes {
		slices.SortStableFunc(c.Members, func(x, y analysis.Member) int { return cmp.Compare(k.shown(x), k.shown(y)) })
	}
	return k, nil
}

// fastest is the source cut to its n configurations of least time shown
// (the mean of their runs, or their predictions), in their order.
func (src rankSource) fastest(n int) rankSource {
	order := make([]int, len(src.samples))
	shown := make([]float64, len(src.samples))
	for i := range order {
		order[i], shown[i] = i, src.shown(i)
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(shown[a], shown[b]) })
	keep := order[:n]
	slices.Sort(keep)
	out := src
	out.index, out.labels, out.samples, out.pred, out.se = nil, nil, nil, nil, nil
	for _, i := range keep {
		out.index = append(out.index, src.index[i])
		out.labels = append(out.labels, src.labels[i])
		out.samples = append(out.samples, analysis.Sample{Name: strconv.Itoa(len(out.samples)), Times: src.samples[i].Times})
		if src.predicted {
			out.pred = append(out.pred, src.pred[i])
			out.se = append(out.se, src.se[i])
		}
	}
	return out
}

// shown is the time shown for a ranking member: the mean of its runs, or
// a tune sweep's prediction.
func (k *ranked) shown(m analysis.Member) float64 { return k.src.shown(k.pos(m)) }

// shown is the time shown for configuration i: the mean of its runs, or
// a tune sweep's prediction.
func (src rankSource) shown(i int) float64 {
	if src.predicted {
		return src.pred[i]
	}
	return stat.Mean(src.samples[i].Times, nil)
}

// pos is the position in k.src of a ranking member.
func (k *ranked) pos(m analysis.Member) int {
	i, _ := strconv.Atoi(m.Name)
	return i
}

// best lists the labels of the best class's members.
func (k *ranked) best() []string {
	var ls []string
	for _, m := range k.r.Classes[0].Members {
		ls = append(ls, k.src.labels[k.pos(m)])
	}
	return ls
}

// alsoFirst names the configurations outside the best class that some sort
// put in class 1, by descending score ("b=128 (score 0.43)"), with how
// many sorts gave these classes, or "" when none did and every member of
// the best class was in class 1 in every sort: the best class is the most
// frequent outcome, which with close configurations may be the outcome of
// few sorts, and paper 004's set of the fastest is every configuration
// with a score above 0. A best class of every configuration, some of them
// rarely first, says how many sorts gave it too: "all 7 equivalent" had
// hidden scores from 0.09 to 1 and 8 sorts of 100.
func (k *ranked) alsoFirst() string {
	var others []analysis.Member
	for _, c := range k.r.Classes[1:] {
		for _, m := range c.Members {
			if m.Score > 0 {
				others = append(others, m)
			}
		}
	}
	rep := k.st.opt.Rep
	// "These classes": the count is of the whole sorting, not of the
	// best configuration (a review had read 4 of 100 against a 0.40).
	these := fmt.Sprintf(", these classes in %d of the %d sorts", int(math.Round(k.r.Support*float64(rep))), rep)
	if len(others) == 0 {
		if slices.ContainsFunc(k.r.Classes[0].Members, func(m analysis.Member) bool { return m.Score < 1 }) {
			return these
		}
		return ""
	}
	slices.SortStableFunc(others, func(a, b analysis.Member) int { return cmp.Compare(b.Score, a.Score) })
	var ls []string
	for _, m := range others {
		ls = append(ls, fmt.Sprintf("%s (score %s)", k.src.labels[k.pos(m)], format.Fixed(m.Score, 2)))
	}
	return fmt.Sprintf("%s; other sorts put in class 1 also %s", these, listSome(ls, 5))
}

// bestShown lists the best class's members, each with its score when
// other configurations have one too (alsoFirst), so the scores compare.
func (k *ranked) bestShown() string {
	ls := k.best()
	if k.alsoFirst() == "" {
		return strings.Join(ls, ", ")
	}
	for i, m := range k.r.Classes[0].Members {
		ls[i] += fmt.Sprintf(" (score %s)", format.Fixed(m.Score, 2))
	}
	return strings.Join(ls, ", ")
}

// relation says how the best class stands to the rest.
func (k *ranked) relation() string {
	in, all := len(k.r.Classes[0].Members), len(k.src.samples)
	t := strconv.FormatFloat(k.st.opt.Threshold, 'g', -1, 64)
	among := ""
	if k.cut > 0 {
		among = fmt.Sprintf(" (the %d fastest by mean ranked; 'rank' ranks all %d)", all, all+k.cut)
	}
	switch {
	case in == all:
		return fmt.Sprintf("all %d equivalent within threshold %s%s", all, t, among)
	case in == 1:
		return fmt.Sprintf("faster than the other %d at threshold %s%s", all-1, t, among)
	}
	return fmt.Sprintf("equivalent within threshold %s, faster than the other %d%s", t, all-in, among)
}

// table is what 'rank' prints: the best class on top, then a row per
// configuration (class, configuration, relative score, times) and what
// the figures mean.
func (k *ranked) table(sw *Sweep) string {
	var b strings.Builder
	src := k.src
	fmt.Fprintf(&b, "sweep %d (%s %s): %d configurations ranked on their %s", sw.ID, sw.Spec.Mode, sw.Workload, len(src.samples), src.from)
	switch {
	case src.predicted:
		fmt.Fprintf(&b, ": %d times drawn from each prediction's normal distribution N(predicted, standard error² + (%s × predicted)²), not measured (%s: the run-to-run noise and bias the standard error leaves out, as a search's rounds allow at %s)",
			rankDraws, format.Percent(analysis.Allowance(src.tol)), format.Percent(analysis.Allowance(src.tol)), format.Tolerance(src.tol))
	case src.runs[0] == src.runs[1]:
		fmt.Fprintf(&b, " (%d each)", src.runs[0])
	default:
		fmt.Fprintf(&b, " (%d to %d each)", src.runs[0], src.runs[1])
	}
	if src.left > 0 {
		fmt.Fprintf(&b, "; %d without results left out", src.left)
		if src.cutShort > 0 {
			fmt.Fprintf(&b, " (%d of them cut short by the search: their times are lower bounds)", src.cutShort)
		}
	}
	fmt.Fprintf(&b, "\nbest class: %s — %s%s\n", k.bestShown(), k.relation(), k.alsoFirst())
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	if src.predicted {
		fmt.Fprintln(tw, "class\tconfiguration\tscore\tpredicted s\tstd error s\t")
	} else {
		fmt.Fprintln(tw, "class\tconfiguration\tscore\tmean s\tmin s\t")
	}
	secondCol := format.Seconds
	if src.predicted {
		secondCol = format.SmallSeconds // a standard error
	}
	for _, c := range k.r.Classes {
		for _, m := range c.Members {
			i := k.pos(m)
			mean, second := m.Mean, m.Min
			if src.predicted {
				mean, second = src.pred[i], src.se[i]
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t\n", c.Rank, src.labels[i], format.Fixed(m.Score, 2), format.Seconds(mean), secondCol(second))
		}
	}
	tw.Flush()
	o := k.st.opt
	per := fmt.Sprintf("K in [%d, %d] runs' minimum", o.KMin, o.KMax)
	switch {
	case o.KMin == 1 && o.KMax == 1 && src.predicted:
		per = "one drawn time a side"
	case o.KMin == 1 && o.KMax == 1:
		per = "one run a side"
	}
	fmt.Fprintf(&b, "threshold %g, %d bootstrap draws of %s per comparison, %d sorts (seed %d); %d of the %d sorts gave these classes\n",
		o.Threshold, o.M, per, o.Rep, k.st.seed, int(math.Round(k.r.Support*float64(o.Rep))), o.Rep)
	fmt.Fprintf(&b, "score: the share of the %d sorts that put the configuration in class 1\n", o.Rep)
	if k.r.Support < 0.2 {
		// The most frequent outcome of many: the classes above are one of
		// several about as likely.
		fmt.Fprintf(&b, "note: only %d of the %d sorts gave these classes, so other sorts drew them otherwise: read the scores rather than the classes (a score near 1: reliably among the fastest)\n",
			int(math.Round(k.r.Support*float64(o.Rep))), o.Rep)
	}
	if src.predicted && len(k.r.Classes) == 1 && len(src.pred) > 1 {
		// Every configuration in one class: the allowance, not the data,
		// decided (a user's 12 configurations of 16 to 30 ms, 2^-1).
		lo, hi := slices.Min(src.pred), slices.Max(src.pred)
		fmt.Fprintf(&b, "note: each prediction at %s is allowed %s, more than the steps between these configurations' predictions (%s to %s s), so the sort tells no neighbours apart and puts all in one class: rank predictions at a tighter tolerance (tolerance=), or an evaluate sweep's references",
			format.Tolerance(src.tol), format.Percent(analysis.Allowance(src.tol)), format.Seconds(lo), format.Seconds(hi))
		if sw.Spec.Search != sweep.SearchNone {
			b.WriteString("; the search ran its finalists in full ('table best')")
		}
		b.WriteString("\n")
	}
	if !src.predicted && src.runs[0] <= o.KMax {
		fewer := " or fewer per draw (k=2..3)"
		if o.KMax <= 3 {
			fewer = "" // k=2..3 is what ran: advised, it read as a remedy untried
		}
		fmt.Fprintf(&b, "note: with %d runs of a configuration and draws of up to %d, most draws hold its fastest run, so a comparison is nearly one of minima and equivalence is rare; more runs (reps 20, then evaluate)%s let it weigh the spread\n",
			src.runs[0], o.KMax, fewer)
	}
	return b.String()
}

// bestClassLine names the best class of sw's configurations, ranked with
// the default settings, for 'table best' and the end of a sweep; it is
// empty when the data does not allow a ranking (fewer than 2 reference runs
// per configuration, predictions without their standard error, fewer than
// 2 configurations).
func bestClassLine(sw *Sweep) string {
	st := defaultRankSettings()
	st.top = bestLineTop
	k, err := rankSweep(context.Background(), sw, st)
	if err != nil {
		return ""
	}
	few := ""
	if !k.src.predicted && k.src.runs[0] <= k.st.opt.KMax {
		// With 2 runs each, two equal configurations come out one faster
		// than the other about half the time, and the class may leave out
		// the least mean time the line above names: then it says so, as
		// two best answers side by side read as a contradiction.
		least := k.src.labels[0]
		lm := math.Inf(1)
		for i, smp := range k.src.samples {
			if m := stat.Mean(smp.Times, nil); m < lm {
				least, lm = k.src.labels[i], m
			}
		}
		if !slices.Contains(k.best(), least) {
			few = fmt.Sprintf("; it leaves out %s, the least mean time, because with %d runs of a configuration the ranking compares their fastest runs, which here disagree with the means ('rank' tells more; more runs: reps 20, then evaluate)", least, k.src.runs[0])
		} else {
			few = fmt.Sprintf("; with %d runs of a configuration this compares their fastest runs, which may disagree with the means ('rank' tells more; more runs: reps 20, then evaluate)", k.src.runs[0])
		}
	}
	return fmt.Sprintf("best class (rank, %s): %s — %s%s%s\n", k.src.from, k.bestShown(), k.relation(), k.alsoFirst(), few)
}

// cmdRank is the 'rank' verb: the last sweep's configurations sorted into
// performance classes (paper 004).
func cmdRank(s *Session, ctx context.Context, c *Command, out Output) error {
	st := defaultRankSettings()
	var polArg, tolArg *Arg
	for i := range c.Args {
		a := c.Args[i]
		count := func(what string) (int, error) {
			v, err := strconv.Atoi(a.Value)
			if err != nil || v < 1 || v > maxRankCount {
				return 0, errAt(a.ValueCol, "%q is not valid for %s=: want %s, an integer from 1 to %d", a.Value, a.Key, what, maxRankCount)
			}
			return v, nil
		}
		var err error
		switch a.Key {
		case "":
			return errAt(a.Col, "rank takes options as KEY=VALUE: threshold=, reps=, draws=, k=, seed=, policy=, tolerance= (e.g. rank threshold=0.8 reps=500)")
		case "threshold":
			v, perr := strconv.ParseFloat(a.Value, 64)
			if perr != nil || !(v >= 0.5 && v < 1) {
				return errAt(a.ValueCol, "%q is not a threshold: want a number from 0.5 up to, but not, 1 (default 0.9), the share of bootstrap draws a configuration must win to be faster (at 1 none would be slower)", a.Value)
			}
			st.opt.Threshold = v
		case "reps":
			st.opt.Rep, err = count("the number of sorts (default 100)")
		case "draws":
			st.opt.M, err = count("the number of bootstrap draws per comparison (default 30)")
		case "k":
			st.opt.KMin, st.opt.KMax, err = parseK(a)
			st.kSet = true
		case "seed":
			v, perr := strconv.ParseUint(a.Value, 10, 64)
			if perr != nil {
				return errAt(a.ValueCol, "%q is not a seed: want an integer from 0 to %d (default %d)", a.Value, uint64(math.MaxUint64), rankSeed)
			}
			st.seed = v
		case "policy", "tolerance": // as 'plot' reads them
			var fo FigureOptions
			if err := runOption(a, &fo); err != nil {
				return err
			}
			if a.Key == "policy" {
				st.policy, polArg = fo.Policy, &c.Args[i]
			} else {
				st.tolerance, tolArg = &fo.Tolerance, &c.Args[i]
			}
		default:
			return errAt(a.Col, "rank has no option %q: want threshold=, reps=, draws=, k=, seed=, policy= or tolerance=", a.Key)
		}
		if err != nil {
			return err
		}
	}
	sw, err := lastSweep(s, c, out)
	if err != nil {
		return err
	}
	if err := rankChoice(sw, st, polArg, tolArg); err != nil {
		return err
	}
	st.announce = func(n int, d time.Duration) {
		if d > 5*time.Second {
			out.Print(fmt.Sprintf("ranking %d configurations takes up to about %s (the sorts' cost grows with the square of the configurations; fewer reps= or draws= take less); an interrupt stops it", n, FormatDuration(d)))
		}
	}
	k, err := rankSweep(ctx, sw, st)
	if err != nil {
		return errAt(c.VerbCol, "%v", err)
	}
	out.Print(k.table(sw))
	return nil
}

// rankDuration estimates how long ranking n configurations with opt
// takes: each sort compares every pair once, each comparison draws M pairs
// of K runs; about 2.5e8 runs drawn a second here (8 configurations,
// reps=1000 draws=1000: 0.9 s).
func rankDuration(n int, opt analysis.RankOptions) time.Duration {
	p := float64(n)
	k := float64(opt.KMin+opt.KMax) / 2
	draws := float64(opt.Rep) * p * (p - 1) / 2 * float64(opt.M) * 2 * k
	return time.Duration(draws / 2.5e8 * float64(time.Second))
}

// parseK reads k=N or k=A..B, the bootstrap sample size's range.
func parseK(a Arg) (int, int, error) {
	lo, hi, ok := strings.Cut(a.Value, "..")
	if !ok {
		hi = lo
	}
	x, errx := strconv.Atoi(lo)
	y, erry := strconv.Atoi(hi)
	if errx != nil || erry != nil || x < 1 || y < x || y > maxRankCount {
		return 0, 0, errAt(a.ValueCol, "%q is not valid for k=: want the runs each bootstrap draw takes, an integer or a range A..B with 1 <= A <= B <= %d (default 5..10)", a.Value, maxRankCount)
	}
	return x, y, nil
}

// rankChoice checks policy= and tolerance= against the sweep: they choose a
// tune sweep's predictions.
func rankChoice(sw *Sweep, st rankSettings, polArg, tolArg *Arg) error {
	if polArg == nil && tolArg == nil {
		return nil
	}
	a := polArg
	if a == nil {
		a = tolArg
	}
	if sw.Spec == nil || sw.Spec.Mode != sweep.ModeTune {
		mode := "unknown"
		if sw.Spec != nil {
			mode = string(sw.Spec.Mode)
		}
		return errAt(a.Col, "policy= and tolerance= choose the predictions of a tune sweep to rank; sweep %d is %s, ranked on its reference runs", sw.ID, mode)
	}
	if polArg != nil && !slices.Contains(sw.Spec.Policies, st.policy) {
		return errAt(polArg.ValueCol, "sweep %d did not run %s: its policies are %s", sw.ID, st.policy, strings.Join(sw.Spec.Policies, ", "))
	}
	if tolArg != nil && !slices.Contains(sw.Spec.Tolerances, sweep.Tolerance(*st.tolerance)) {
		return errAt(tolArg.ValueCol, "sweep %d did not run tolerance %s: its tolerances are %s", sw.ID, format.Tolerance(*st.tolerance), tolerances(sw))
	}
	return nil
}

// rankFigure draws 'plot rank': the configurations by class, then mean
// time, with their intervals, the classes shaded and the best one marked.
// A tune sweep's predictions are o's policy at o's tolerance.
func rankFigure(sw *Sweep, o FigureOptions, sum *strings.Builder) (*plot.Plot, error) {
	st := defaultRankSettings()
	st.policy, st.tolerance = o.Policy, &o.Tolerance
	// A row per configuration: past a couple of dozen the labels overlap
	// (40 did) and the sort's cost grows with their square, so the figure
	// ranks the fastest by mean, as the best class line does, and says so.
	st.top = figureRankTop
	k, err := rankSweep(context.Background(), sw, st)
	if err != nil {
		return nil, err
	}
	// Short labels: only the parameters that vary.
	short := make([]string, len(k.src.labels))
	copy(short, k.src.labels)
	if len(sw.Configs) > 0 {
		cs := make([]plots.Config, len(sw.Configs))
		shortLabels(sw, cs)
		for j, i := range k.src.index {
			if i < len(cs) && cs[i].Label != "" {
				short[j] = cs[i].Label
			}
		}
	}
	var rows []plots.RankRow
	for _, c := range k.r.Classes {
		for _, m := range c.Members { // fastest first (rankSweep)
			i := k.pos(m)
			row := plots.RankRow{Label: short[i], Class: c.Rank, Score: m.Score}
			if k.src.predicted {
				row.Mean, row.Min = k.src.pred[i], math.NaN()
				// The spread the ranking drew from: the standard error
				// widened by the tolerance's allowance.
				sd := math.Hypot(k.src.se[i], analysis.Allowance(k.src.tol)*row.Mean)
				row.Lo, row.Hi = row.Mean-1.96*sd, row.Mean+1.96*sd
			} else {
				row.Mean, row.Lo, row.Hi = interval(k.src.samples[i].Times)
				row.Min = m.Min
			}
			row.Lo = max(row.Lo, 0) // a time: an interval wider than its mean says little below it
			rows = append(rows, row)
		}
	}
	var best []string
	for _, r := range rows {
		if r.Class == 1 {
			best = append(best, r.Label)
		}
	}
	fmt.Fprintf(sum, "performance classes of %d configurations on their %s: best class %s — %s\n",
		len(rows), k.src.from, strings.Join(best, ", "), k.relation())
	for _, r := range rows {
		what := "mean"
		if k.src.predicted {
			what = "predicted"
		}
		fmt.Fprintf(sum, "class %d  %s: score %.2f, %s %ss (95%% %s..%s)", r.Class, r.Label, r.Score, what, format.Seconds(r.Mean), format.Seconds(r.Lo), format.Seconds(r.Hi))
		if !math.IsNaN(r.Min) {
			fmt.Fprintf(sum, ", min %ss", format.Seconds(r.Min))
		}
		sum.WriteString("\n")
	}
	title := "Performance classes, " + k.src.from
	if k.cut > 0 {
		title += fmt.Sprintf(" (the %d fastest of %d)", len(rows), len(rows)+k.cut)
	}
	xlabel := "time (s): ● mean with its 95% interval, ▲ minimum"
	if k.src.predicted {
		xlabel = fmt.Sprintf("predicted time (s): ● prediction with its 95%% interval (±1.96 × its standard error widened by %s of it)", format.Percent(analysis.Allowance(k.src.tol)))
	}
	return plots.Rank(rows, title, xlabel)
}
