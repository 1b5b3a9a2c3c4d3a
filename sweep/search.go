package sweep

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/stat"
)

// SearchFullRuns is the most survivors a round before the tightest may
// leave for the search to go to its finals at once: a tighter round on
// this few costs more than it can change. On the cholesky3d n=4096 space,
// in the 11 sweeps of 2026-11-29 where round 1 (2^-1) left 7 (7 of them
// on this engine, 4 on a build that also skipped the workload's packing),
// round 2 (2^-3, 1.3-1.8 s) ended with round 1's first 3 as the finalists
// every time.
const SearchFullRuns = 7

// SearchFinalists is how many configurations a search runs in full at its
// end: every round's leader and the fastest predicted, this many in all.
// The last round has already ranked its survivors as well as the search
// can. On the 120-configuration cholesky2d space, in the 3 of 5 sweeps
// where 5-6 survived the tightest round and all ran in full, these 3
// alone would have given the same choice in 2 and, in the third, one 2%
// slower by the references, still in the best class, at about 1 s less of
// the search's 10-12 s. On the cholesky3d n=4096 space, in the 11 of 18
// sweeps (2026-11-29) where round 1 (2^-1) left 5 or 6 and all ran in full,
// the fastest full run was always one of the 3 that round ranked first;
// the other 2-3 full runs and their warm-ups took 1.6-2.7 s of a 6.2-7.4 s
// search.
const SearchFinalists = 3

// Candidates are the configurations of a space of n that a search of s
// starts from: all of them, or for SearchRandom Budget drawn without
// replacement with the spec's seed (every rank draws the same), in index
// order.
func (s *Spec) Candidates(n int) []int {
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	if s.Search != SearchRandom || s.Budget >= n {
		return all
	}
	rng := rand.New(rand.NewPCG(uint64(s.Seed), 0x5eed))
	rng.Shuffle(n, func(i, j int) { all[i], all[j] = all[j], all[i] })
	out := all[:s.Budget]
	slices.Sort(out)
	return out
}

// Finalists are the configurations a search runs in full at its end, of the
// last round's survivors (alive, fastest first): every round's leader
// (leaders: each round's fastest prediction, which no later round drops),
// then the fastest predicted survivors up to SearchFinalists in all, then
// the fastest predicted survivor of each process count (procs, per
// configuration; nil: one count) that none of these runs.
//
// The last is for predictions whose bias depends on how many processes a
// configuration runs, which a ranking cannot see: configurations on as
// many processes share it, and those on other counts do not. On the
// 120-configuration cholesky2d space (4 ranks on 2 cores), eager at 2^-5
// put the 2-process grids 3.7 points (± 0.8, 95%) further above their
// references than the 4-process ones, in each of 25 sweeps. In 6 of them
// no 2-process grid made the finals, and in 3 of those one was the
// fastest configuration by the references: the search chose one 4-6%
// slower, twice outside the best class.
func Finalists(alive, leaders []int, procs func(int) int) []int {
	var out []int
	for _, i := range alive {
		if slices.Contains(leaders, i) {
			out = append(out, i)
		}
	}
	for _, i := range alive {
		if len(out) >= SearchFinalists {
			break
		}
		if !slices.Contains(out, i) {
			out = append(out, i)
		}
	}
	if procs == nil {
		return out
	}
	seen := map[int]bool{}
	for _, i := range out {
		seen[procs(i)] = true
	}
	for _, i := range alive {
		if p := procs(i); !seen[p] {
			seen[p] = true
			out = append(out, i)
		}
	}
	return out
}

// RoundTolerances are a search's round tolerances: the spec's, loosest
// first, each once.
func (s *Spec) RoundTolerances() []float64 {
	ts := make([]float64, len(s.Tolerances))
	for i, t := range s.Tolerances {
		ts[i] = float64(t)
	}
	slices.SortFunc(ts, func(a, b float64) int { return cmp.Compare(b, a) })
	return slices.Compact(ts)
}

// Judgement is a search's choice judged against every configuration's
// references (an evaluate sweep with a search).
//
// A configuration's reference time is the median of its references (with
// two, their mean). On a shared machine a full run now and then lands far
// slow (one reference 19% above the configuration's others and its own
// full run in the search, on the cholesky2d space), and with two
// references that moves the mean by half of it: in 30 sweeps of that space
// (2026-11-28/29) the chosen configuration fell outside the best class 4
// times, and 2 of those were such a reference. With three, the median
// leaves one such run out.
type Judgement struct {
	Best  int     // the configuration with the least reference time
	BestS float64 // its reference time
	// NoiseFloor is the sweep's RunError: how far one full run lands from
	// its configuration's other full runs, on average.
	NoiseFloor float64
	// BestClass are the configurations whose reference time is within the
	// noise floor of the best's (time <= best * (1 + NoiseFloor)): those
	// one more full run could not tell from the best. Index order.
	BestClass   []int
	ChosenS     float64 // the chosen configuration's reference time
	InBestClass bool
	Quality     float64 // BestS / ChosenS
	// FullS is what one full run of every configuration costs: the sum of
	// their mean reference times (the mean, slow runs and all, is what
	// running them costs).
	FullS   float64
	SearchS float64 // what the search's runs took (SearchEvent.SearchS)
	Ratio   float64 // FullS / SearchS: how many times faster than running everything in full
}

// Judge judges the search ev by refs, the times of each configuration's
// reference runs by index (every configuration of the space). It reports
// false when the chosen configuration has no references.
func Judge(refs map[int][]float64, ev SearchEvent) (Judgement, bool) {
	j := Judgement{Best: -1, SearchS: ev.SearchS}
	ref := map[int]float64{}
	// In index order, so that the sum is the same to the last bit at
	// every call.
	for _, i := range slices.Sorted(maps.Keys(refs)) {
		ts := refs[i]
		if len(ts) == 0 {
			continue
		}
		j.FullS += stat.Mean(ts, nil)
		m := Median(ts)
		ref[i] = m
		if j.Best < 0 || m < j.BestS || (m == j.BestS && i < j.Best) {
			j.Best, j.BestS = i, m
		}
	}
	chosen, ok := ref[ev.Chosen]
	if !ok {
		return j, false
	}
	j.NoiseFloor, _ = RunErrorByIndex(refs)
	if math.IsNaN(j.NoiseFloor) {
		j.NoiseFloor = 0
	}
	for i, m := range ref {
		if m <= j.BestS*(1+j.NoiseFloor) {
			j.BestClass = append(j.BestClass, i)
		}
	}
	slices.Sort(j.BestClass)
	j.ChosenS = chosen
	j.InBestClass = slices.Contains(j.BestClass, ev.Chosen)
	j.Quality = j.BestS / chosen
	if ev.SearchS > 0 {
		j.Ratio = j.FullS / ev.SearchS
	}
	return j, true
}

// Median is the middle of x, the mean of the two middle values for an
// even count (x is left as it is); NaN for none.
func Median(x []float64) float64 {
	if len(x) == 0 {
		return math.NaN()
	}
	s := slices.Clone(x)
	slices.Sort(s)
	h := len(s) / 2
	if len(s)%2 == 1 {
		return s[h]
	}
	return (s[h-1] + s[h]) / 2
}

// ReferencePasses takes reps full runs of each of n configurations for an
// evaluate search to be judged by, in passes: one run of every
// configuration a pass (run), so that a slow spell of the machine slows
// one of a configuration's references, not all. Each configuration is
// reported (report) after its last pass; when a run fails (an interrupt),
// every configuration not reported yet with a run taken (taken) is
// reported with those it has, and run's error returned (with report's,
// where one of those reports fails too: the configurations after it are
// not reported): an interrupt had thrown away the first pass's runs of
// every configuration the last pass had not reached.
func ReferencePasses(n, reps int, run func(i int) error, taken func(i int) bool, report func(i int) error) (err error) {
	sent := make([]bool, n)
	defer func() {
		if err == nil {
			return
		}
		for i := range n {
			if !sent[i] && taken(i) {
				if rerr := report(i); rerr != nil {
					err = errors.Join(err, fmt.Errorf("reporting configuration %d's references: %w", i, rerr))
					return
				}
			}
		}
	}()
	for j := range reps {
		for i := range n {
			if err := run(i); err != nil {
				return err
			}
			if j == reps-1 {
				sent[i] = true
				if err := report(i); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// RoundEvent is round n of a search decided at tolerance tol under policy:
// the configurations it ran, those it kept (fastest first), dropped and,
// of those, capped by its budget, its best, the least prediction it
// dropped (thresholdS; +Inf: none, told as 0) and its runs' time.
func RoundEvent(n int, policy string, tol float64, ran, kept, dropped, capped []int, best int, thresholdS, elapsedS float64) Round {
	if math.IsInf(thresholdS, 0) {
		thresholdS = 0
	}
	if dropped == nil {
		dropped = []int{} // [], not null
	}
	return Round{Type: TypeRound, V: ProtocolVersion, Round: n, Policy: policy, Tolerance: tol, Ran: ran, Kept: kept,
		Dropped: dropped, Capped: capped, Best: best, ThresholdS: thresholdS, ElapsedS: elapsedS}
}

// FullRound is a search's last round, n: the finalists (alive) run once
// each in full in times (seconds, alike), the fastest chosen; and the
// search's outcome, with the configurations it considered and its cost
// (costS, the finals included). elapsedS is the round's own time. alive
// holds one finalist at least (a search with none has nothing to choose,
// and ends with an error instead).
func FullRound(spec *Spec, policy string, n int, configs []Config, alive []int, times []float64, considered int, costS, elapsedS float64) (Round, SearchEvent) {
	order := make([]int, len(alive))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(times[a], times[b]) })
	finalists := make([]int, len(alive))
	for k, o := range order {
		finalists[k] = alive[o]
	}
	best := order[0]
	return Round{Type: TypeRound, V: ProtocolVersion, Round: n, Ran: alive, Kept: finalists, Dropped: []int{}, Best: alive[best], ElapsedS: elapsedS},
		SearchEvent{Type: TypeSearch, V: ProtocolVersion, Method: spec.Search, Policy: policy, Chosen: alive[best],
			Config: configs[alive[best]], ChosenS: times[best], Finalists: finalists, Rounds: n, Considered: considered, SearchS: costS}
}
