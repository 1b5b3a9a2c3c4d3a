package session

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/approxtune/approxtune/sweep"
)

// Sweep is one evaluate or tune (or reference) sweep and what came back.
type Sweep struct {
	ID       int
	Spec     *sweep.Spec
	Configs  []sweep.Config
	Results  []sweep.Result
	Kernels  []sweep.KernelsEvent
	Traces   []sweep.TraceEvent // selective runs' timelines, when the spec asked for them
	Rounds   []sweep.Round      // a search's rounds, as they ended (spec search)
	Search   *sweep.SearchEvent // a search's outcome, once it came
	Status   Status             // running, ok, cancelled, failed, died, hung
	Hung     *int               // the configuration that hung (status hung)
	Skipped  map[int]bool       // configurations 'resume skip=' or 'hung=skip' left out: no runs missing there (leaveOut)
	Message  string
	Started  time.Time
	Elapsed  time.Duration
	Workload string
	Ranks    int
	BLAS     string
	// CopyCost is the core time per byte of a large transfer that the
	// agent's engine measured where processes share cores (s/B); 0 when
	// it reported none (sweep.Start.CopyCostSPerB).
	CopyCost float64
	// leftOut are the results of the configurations in Skipped, out of
	// Results (leaveOut): kept for the journal of a sweep adopted by
	// another session, and counted in no figure.
	leftOut   []sweep.Result
	resumedAt int // results present when the last resume started
	pending   int // runs made whose results have not come yet (progress events)
	runs      int // a search's runs as far as known (the agent's latest total)
	refRuns   int // an evaluate search's reference runs started so far (their results come after the last pass)
	// carried are the statistics of the sweep's carrying policies after
	// its last configuration, one per policy and tolerance (carriedName).
	carried    []sweep.Carried
	carriedBad string // why the carried statistics' file was left aside ("": it was not)
	// origin is where a loaded sweep came from ('load': "loaded from DIR,
	// sweep N"); "" for a sweep this session ran.
	origin string
	// shared is the configuration each index's results carry (apply).
	shared map[int]sweep.Config
	// failedRefs are the full runs of configurations whose selective runs
	// failed, by index, as a program's error events carry them (apply).
	failedRefs map[int][]float64
	// jobs are the Slurm jobs the sweep's runs ran in (its agent's, or the
	// one whose steps a program's launches were), in order: a resume may
	// run in another.
	jobs []string
	// leftSearch are the configurations that left a program's search, in
	// order: a selective launch of theirs failed (an error event, apply).
	leftSearch []int
	// ranOn is the launcher the sweep's runs ran with: a Launcher of Kind
	// "" for this machine's mpirun; nil where unknown (a sweep adopted
	// into a journal before adopted sweeps kept it). resume runs the rest
	// with the same kind.
	ranOn *Launcher
	// namedKeys caches named(): the configurations and the space it reads do
	// not change, and the live chart's rows (Summaries) ask for it at
	// every update.
	namedKeys map[string]bool
}

// Total is the number of runs the sweep is made of.
func (s *Sweep) Total() int {
	if s.Spec == nil {
		return 0
	}
	if s.Spec.Search != sweep.SearchNone {
		// Later rounds' sizes are known only as earlier ones end.
		return max(s.runs, len(s.Results))
	}
	n := len(s.Configs) - len(s.Skipped)
	if s.Spec.Mode == sweep.ModeReference {
		return n
	}
	return n * len(s.Spec.Policies) * len(s.Spec.Tolerances)
}

// apply records one agent event.
func (s *Sweep) apply(e Event) {
	switch e.Type {
	case sweep.TypeStart:
		var st sweep.Start
		if e.Decode(&st) == nil && len(s.Configs) == 0 {
			s.Configs = st.Configs
		}
		if st.Ranks > 0 {
			// Also when the sweep's record brought the configurations
			// (a journal read back): a resume runs on these ranks.
			s.Ranks, s.BLAS = st.Ranks, st.BLAS
		}
		if st.CopyCostSPerB != nil {
			s.CopyCost = *st.CopyCostSPerB
		}
		if st.Runs > s.runs {
			s.runs = st.Runs
		}
	case sweep.TypeResult:
		var r sweep.Result
		if e.Decode(&r) == nil {
			r.Config = s.share(r.Index, r.Config)
			s.Results = append(s.Results, r)
			s.pending = max(s.pending-1, 0)
			s.runs = max(s.runs, r.Total)
		}
	case sweep.TypeError:
		var ev sweep.ErrorEvent
		if e.Decode(&ev) == nil && ev.Index != nil && len(ev.ReferenceS) > 0 {
			if s.failedRefs == nil {
				s.failedRefs = map[int][]float64{}
			}
			s.failedRefs[*ev.Index] = ev.ReferenceS
		}
		if ev.Index != nil && s.Spec != nil && s.Spec.Search != sweep.SearchNone && !slices.Contains(s.leftSearch, *ev.Index) {
			s.leftSearch = append(s.leftSearch, *ev.Index)
		}
	case sweep.TypeRound:
		var r sweep.Round
		if e.Decode(&r) == nil {
			s.Rounds = append(s.Rounds, r)
		}
	case sweep.TypeSearch:
		var se sweep.SearchEvent
		if e.Decode(&se) == nil {
			s.Search = &se
		}
	case sweep.TypeProgress:
		var p sweep.ProgressEvent
		if e.Decode(&p) == nil {
			s.pending = p.Pending
		}
	case sweep.TypeKernels:
		var k sweep.KernelsEvent
		if e.Decode(&k) == nil {
			s.Kernels = append(s.Kernels, k)
		}
	case sweep.TypeTrace:
		var t sweep.TraceEvent
		if e.Decode(&t) == nil {
			s.Traces = append(s.Traces, t)
		}
	}
}

// share returns the configuration an earlier result of index i carries
// when it equals c, else c: the results of one configuration share it
// (Config is immutable), rather than each keeping a copy of its own (a
// kilobyte each: 10 MB for a sweep of 10,000 runs).
func (s *Sweep) share(i int, c sweep.Config) sweep.Config {
	if prev, ok := s.shared[i]; ok && sameConfig(prev, c) {
		return prev
	}
	if s.shared == nil {
		s.shared = map[int]sweep.Config{}
	}
	s.shared[i] = c
	return c
}

// sameConfig reports whether a and b have the same parameters and values.
func sameConfig(a, b sweep.Config) bool {
	if !slices.Equal(a.Names(), b.Names()) {
		return false
	}
	for _, n := range a.Names() {
		va, _ := a.Value(n)
		vb, _ := b.Value(n)
		if !reflect.DeepEqual(va, vb) {
			return false
		}
	}
	return true
}

// runKey names a run for resuming.
type runKey struct {
	config    int
	policy    string
	tolerance float64
}

func keyOf(r sweep.Result) runKey {
	k := runKey{config: r.Index, policy: r.Policy}
	if r.Tolerance != nil {
		k.tolerance = *r.Tolerance
	}
	return k
}

// Missing lists the runs of the sweep that have no result yet. A search
// has none to list: its runs depend on its rounds (it is complete once it
// has chosen).
func (s *Sweep) Missing() []sweep.RunRef {
	if s.Spec != nil && s.Spec.Search != sweep.SearchNone {
		return nil
	}
	have := map[runKey]bool{}
	for _, r := range s.Results {
		have[keyOf(r)] = true
	}
	var out []sweep.RunRef
	for i := range s.Configs {
		if s.Skipped[i] {
			continue
		}
		if s.Spec.Mode == sweep.ModeReference {
			if !have[runKey{config: i}] {
				out = append(out, sweep.RunRef{Config: i})
			}
			continue
		}
		for _, p := range s.Spec.Policies {
			for _, t := range s.Spec.Tolerances {
				if !have[runKey{i, p, float64(t)}] {
					out = append(out, sweep.RunRef{Config: i, Policy: p, Tolerance: float64(t)})
				}
			}
		}
	}
	return out
}

// Summary is one policy x tolerance over the sweep's results (computed by the
// session from every result, so resumed sweeps summarize correctly).
type Summary struct {
	Policy     string
	Tolerance  float64
	Configs    int     // configurations run (one selective run each)
	RefTotal   float64 // sum over configurations of the mean reference time
	SelTotal   float64 // sum of the selective runs' wall times
	Speedup    float64 // RefTotal / SelTotal (NaN without references: a tune sweep)
	MeanError  float64 // mean of the runs' prediction errors, |predicted − reference| / reference (NaN likewise)
	MaxError   float64 // the largest of them
	Chosen     string  // least predicted time
	Best       string  // least reference time ("" without references)
	Quality    float64 // Best's reference time over Chosen's: 1 when the policy chose the best (NaN likewise)
	HasRef     bool    // some run has a reference: the figures above that need one are set
	PredChosen float64 // Chosen's predicted time
}

// Summaries computes one Summary per policy x tolerance, in spec order
// (sweep.Summarize's figures over the results in the order they came).
func (s *Sweep) Summaries() []Summary {
	if s.Spec == nil || s.Spec.Mode == sweep.ModeReference || s.Spec.Search != sweep.SearchNone {
		return nil // a search's rounds run subsets of the space: tableSearch
	}
	// One pass puts each run in its policy x tolerance, in the order the
	// results came: the live display summarizes a running sweep after
	// every result, and a pass per policy x tolerance made that quadratic
	// (10,000 runs at 40 of them: 70 ms a summary).
	type group struct {
		runs []sweep.Measured
		of   []int // the index in s.Results of each run
	}
	groups := map[runKey]*group{}
	for i := range s.Results {
		r := &s.Results[i]
		if r.Tolerance == nil {
			continue
		}
		m, ok := r.Measured()
		if !ok {
			continue
		}
		k := runKey{policy: r.Policy, tolerance: *r.Tolerance}
		g := groups[k]
		if g == nil {
			g = &group{}
			groups[k] = g
		}
		g.runs, g.of = append(g.runs, m), append(g.of, i)
	}
	var out []Summary
	label := s.Labeler()
	for _, p := range s.Spec.Policies {
		for _, t := range s.Spec.Tolerances {
			g := groups[runKey{policy: p, tolerance: float64(t)}]
			if g == nil {
				continue
			}
			f := sweep.Summarize(g.runs)
			sm := Summary{Policy: p, Tolerance: float64(t), Configs: f.Runs, RefTotal: f.ReferenceTotalS,
				SelTotal: f.SelectiveTotalS, Speedup: f.Speedup, MeanError: f.MeanError, MaxError: f.MaxError,
				Quality: f.Quality, HasRef: f.Judged > 0}
			if f.Chosen >= 0 {
				sm.Chosen, sm.PredChosen = label(s.Results[g.of[f.Chosen]].Config), g.runs[f.Chosen].PredictedS
			}
			if f.Best >= 0 {
				sm.Best = label(s.Results[g.of[f.Best]].Config)
			}
			out = append(out, sm)
		}
	}
	return out
}

// sortedResults returns the results ordered by configuration, policy and tolerance.
func (s *Sweep) sortedResults() []sweep.Result {
	rs := append([]sweep.Result(nil), s.Results...)
	pol := map[string]int{}
	for i, p := range s.Spec.Policies {
		pol[p] = i
	}
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if a.Index != b.Index {
			return a.Index < b.Index
		}
		if pol[a.Policy] != pol[b.Policy] {
			return pol[a.Policy] < pol[b.Policy]
		}
		return tol(a) > tol(b)
	})
	return rs
}

func tol(r sweep.Result) float64 {
	if r.Tolerance == nil {
		return 0
	}
	return *r.Tolerance
}

// raw marshals v, for the journal.
func raw(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// ChartScale is the common scale of a speed-up/error chart of summaries: the
// largest speed-up (at least 1) and the largest mean error or tolerance.
func ChartScale(sums []Summary) (maxSpeedup, maxError float64) {
	maxSpeedup = 1
	for _, s := range sums {
		if !math.IsNaN(s.Speedup) {
			maxSpeedup = math.Max(maxSpeedup, s.Speedup)
		}
		if !math.IsNaN(s.MeanError) {
			maxError = math.Max(maxError, s.MeanError)
		}
		maxError = math.Max(maxError, s.Tolerance)
	}
	return maxSpeedup, maxError
}

// ReferenceError is sweep.RunError over the sweep's reference runs (each
// configuration's longest list, should a resume have taken them twice): how
// far one full run lands from its configuration's other full runs, on
// average. A mean error at or below it is as close to the references as one
// more full run would be. n is 0 when no configuration has two references.
func (s *Sweep) ReferenceError() (mean float64, n int) {
	refs := map[int][]float64{}
	for _, r := range s.Results {
		if len(r.ReferenceS) > len(refs[r.Index]) {
			refs[r.Index] = r.ReferenceS
		}
	}
	return sweep.RunErrorByIndex(refs)
}

// NoiseLine says what ReferenceError means, for the tables and figures of an
// evaluate sweep; it is empty when there is no such figure.
func (s *Sweep) NoiseLine() string {
	e, n := s.ReferenceError()
	if n == 0 {
		return ""
	}
	return noiseLine(e, n)
}

// noiseLine words a noise floor of e over n reference runs.
func noiseLine(e float64, n int) string {
	return fmt.Sprintf("noise floor: a full run misses the mean of its configuration's other full runs by %.1f%% on average (%d runs); a mean error at or below it is as close as one more full run would be", 100*e, n)
}

// leaveOut leaves configuration i out of the sweep for good: its runs are
// no longer missing, and the results it had (a policy that ran before
// another's run of it failed or hung) move from Results to leftOut, so that
// the figures, tables and counts of results are the other configurations'
// alone (its kernels' statistics, measurements of their own, stay in the
// kernel tables and models). They had stayed: conditional's mean error
// averaged in a configuration the best table said was left out, 'table
// configs' listed it, and a sweep of 6 runs read '7 of 6'.
func (s *Sweep) leaveOut(i int) {
	if s.Skipped == nil {
		s.Skipped = map[int]bool{}
	}
	s.Skipped[i] = true
	s.Results = slices.DeleteFunc(s.Results, func(r sweep.Result) bool {
		if r.Index == i {
			s.leftOut = append(s.leftOut, r)
			return true
		}
		return false
	})
}

// addJob adds Slurm job id to the jobs the sweep ran in, once, and says
// whether it was new.
func (s *Sweep) addJob(id string) bool {
	if id == "" || slices.Contains(s.jobs, id) {
		return false
	}
	s.jobs = append(s.jobs, id)
	return true
}

// jobsLine says which Slurm jobs the sweep ran in ("" for none): what
// sacct and the jobs' output files go by, once the session has forgotten.
func (s *Sweep) jobsLine() string {
	switch len(s.jobs) {
	case 0:
		return ""
	case 1:
		return "ran in Slurm job " + s.jobs[0] + "\n"
	}
	return "ran in Slurm jobs " + strings.Join(s.jobs, ", ") + "\n"
}

// skippedList is Skipped in order.
func (s *Sweep) skippedList() []int {
	var l []int
	for i := range s.Configs {
		if s.Skipped[i] {
			l = append(l, i)
		}
	}
	return l
}

// takenReferences are the references of the configurations of runs that
// already have results judged against them (sweep.Spec.References): a
// resumed run of such a configuration is judged against the same ones.
// Resuming had taken them again, and a configuration's conditional and
// eager runs were judged against two different references, its quality
// against a best its table did not name.
func (sw *Sweep) takenReferences(runs []sweep.RunRef) map[int][]float64 {
	taken := map[int][]float64{} // each configuration's, from its first result with them
	for _, r := range sw.Results {
		if _, ok := taken[r.Index]; !ok && r.Policy != "" && len(r.ReferenceS) > 0 {
			taken[r.Index] = r.ReferenceS
		}
	}
	// A configuration whose selective runs all failed has its full runs
	// in their error events: a resume had taken them again.
	for i, refs := range sw.failedRefs {
		if _, ok := taken[i]; !ok {
			taken[i] = refs
		}
	}
	var refs map[int][]float64
	for _, run := range runs {
		if t, ok := taken[run.Config]; ok {
			if refs == nil {
				refs = map[int][]float64{}
			}
			refs[run.Config] = t
		}
	}
	return refs
}
