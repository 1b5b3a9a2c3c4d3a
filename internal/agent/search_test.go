package agent

import (
	"encoding/json"
	"math"
	"slices"
	"testing"

	"github.com/approxtune/approxtune/internal/mpitest"
	"github.com/approxtune/approxtune/sweep"
)

func TestSearchRounds(t *testing.T) { mpitest.Run(t, "search-rounds", 4) }

// A search's events tell a consistent story: each round runs exactly the
// previous round's survivors, every configuration it ran is kept or
// dropped, the full runs are of the last survivors, the choice is the
// fastest of them, and search_s is what its runs took (the finalists'
// warm-ups included). On synthetic
// configurations whose spins differ by 3x and 50x, the fastest is chosen
// and the slowest dropped in round 1. An evaluate search also runs every
// configuration's references (round 0); a random search runs its budget.
func searchRounds(r *mpitest.R) {
	run := testRunner(r)
	for _, c := range []struct {
		spec       string
		considered int
		refs       int // configurations with round-0 references
	}{
		{`{"workload":"synthetic","space":{"grid":"2x2","steps":6,"count":4,"mean_us":[5000,100,300]},"policies":["conditional"],"search":"halving","mode":"tune"}`, 3, 0},
		{`{"workload":"synthetic","space":{"grid":"2x2","steps":6,"count":4,"mean_us":[5000,100,300]},"policies":["conditional"],"search":"halving","mode":"evaluate","reference_reps":2}`, 3, 3},
		{`{"workload":"synthetic","space":{"grid":"2x2","steps":6,"count":4,"mean_us":[5000,100,300,200]},"policies":["conditional"],"search":"random","budget":2,"mode":"tune"}`, 2, 0},
	} {
		evs := sweepEvents(r, run, c.spec)
		if r.Rank != 0 {
			continue
		}
		var rounds []sweep.Round
		var se *sweep.SearchEvent
		var results []sweep.Result
		for _, raw := range evs {
			switch typeOf(raw) {
			case sweep.TypeRound:
				var x sweep.Round
				json.Unmarshal(raw, &x)
				rounds = append(rounds, x)
			case sweep.TypeSearch:
				se = new(sweep.SearchEvent)
				json.Unmarshal(raw, se)
			case sweep.TypeResult:
				var x sweep.Result
				json.Unmarshal(raw, &x)
				results = append(results, x)
			}
		}
		if se == nil || len(rounds) < 2 {
			r.Fatalf("%s: search event %v, %d rounds", c.spec, se, len(rounds))
		}
		if len(rounds[0].Ran) != c.considered || se.Considered != c.considered {
			r.Errorf("%s: round 1 ran %v, considered %d, want %d", c.spec, rounds[0].Ran, se.Considered, c.considered)
		}
		cost := 0.0
		for k, rd := range rounds {
			if rd.Round != k+1 {
				r.Errorf("round %d numbered %d", k+1, rd.Round)
			}
			ran := append(append([]int(nil), rd.Kept...), rd.Dropped...)
			slices.Sort(ran)
			got := slices.Sorted(slices.Values(rd.Ran))
			if !slices.Equal(ran, got) {
				r.Errorf("round %d: kept %v + dropped %v is not ran %v", rd.Round, rd.Kept, rd.Dropped, rd.Ran)
			}
			if k > 0 && !slices.Equal(rd.Ran, rounds[k-1].Kept) {
				r.Errorf("round %d ran %v, not round %d's survivors %v", rd.Round, rd.Ran, k, rounds[k-1].Kept)
			}
			n, full := 0, 0.0
			for _, x := range results {
				if x.Round != rd.Round {
					continue
				}
				n++
				if !slices.Contains(rd.Ran, x.Index) {
					r.Errorf("round %d: a result of configuration %d, not among %v", rd.Round, x.Index, rd.Ran)
				}
				if x.SelectiveS != nil {
					cost += *x.SelectiveS
				} else {
					full += x.ReferenceS[0]
				}
			}
			if full > 0 {
				// The full round's time includes each finalist's warm-up.
				if rd.ElapsedS < full {
					r.Errorf("round %d: elapsed %g, its full runs took %g", rd.Round, rd.ElapsedS, full)
				}
				cost += rd.ElapsedS
			}
			if n != len(rd.Ran) {
				r.Errorf("round %d: %d results for %d configurations", rd.Round, n, len(rd.Ran))
			}
		}
		last := rounds[len(rounds)-1]
		if last.Tolerance != 0 || last.Policy != "" || se.Rounds != last.Round || se.Chosen != last.Kept[0] || !slices.Equal(se.Finalists, last.Kept) {
			r.Errorf("%s: last round %+v, search %+v", c.spec, last, *se)
		}
		if math.Abs(cost-se.SearchS) > 1e-9*max(1, cost) {
			r.Errorf("%s: search_s %g, its runs took %g", c.spec, se.SearchS, cost)
		}
		refs := 0
		for _, x := range results {
			if x.Round == 0 {
				refs++
				if x.Policy != "" || len(x.ReferenceS) != 2 {
					r.Errorf("round-0 result %+v: want 2 references and no policy", x)
				}
			}
		}
		if refs != c.refs {
			r.Errorf("%s: %d configurations with references, want %d", c.spec, refs, c.refs)
		}
		if c.considered == 3 {
			// mean_us 5000 (index 0) is 50 times mean_us 100 (index 1): a run of the first takes over 0.12 s, of the second about 0.02 s.
			if se.Chosen != 1 {
				r.Errorf("%s: chose %d (%v), want 1 (mean_us=100)", c.spec, se.Chosen, se.Config)
			}
			if !slices.Contains(rounds[0].Dropped, 0) {
				r.Errorf("%s: round 1 kept mean_us=5000: %+v", c.spec, rounds[0])
			}
		}
	}
}

func TestSearchCutsShort(t *testing.T) { mpitest.Run(t, "search-cut", 4) }

// A search's first round runs the configurations of a workload that counts
// its calls (cholesky2d) fewest calls first; once the round has as many
// predictions as it keeps, a configuration far slower than them (b=8
// against b=128 and 256 at n=1024) is cut short and dropped, its result
// marked so. No run of a later round is cut short here (the full round).
// Six fast configurations run before the slow ones, so the cutoff (the
// third fastest prediction so far) holds even when one of the first runs,
// cold, is predicted far too slow: with two of each block size the cutoff
// came from the first three runs, and a CI run cut no b=16 run short.
func searchCut(r *mpitest.R) {
	run := testRunner(r)
	evs := sweepEvents(r, run, `{"workload":"cholesky2d","space":{"n":[1024],"grid":["2x2"],"b":[8,128,256],"lookahead":[0,1,2]},"policies":["eager"],"tolerances":[0.5],"mode":"tune","search":"halving"}`)
	if r.Rank != 0 {
		return
	}
	var first *sweep.Round
	var results []sweep.Result
	for _, raw := range evs {
		switch typeOf(raw) {
		case sweep.TypeRound:
			if first == nil {
				first = new(sweep.Round)
				json.Unmarshal(raw, first)
			}
		case sweep.TypeResult:
			var x sweep.Result
			json.Unmarshal(raw, &x)
			results = append(results, x)
		}
	}
	if first == nil {
		r.Fatalf("no round")
	}
	// Configurations: b=8 (0-2), 128 (3-5), 256 (6-8). (b=16's predictions
	// came down once a small message's wall time stopped counting the
	// others' turns, and its runs then ended before passing the cutoff.)
	if want := []int{6, 7, 8, 3, 4, 5, 0, 1, 2}; !slices.Equal(first.Ran, want) {
		r.Errorf("round 1 ran %v, want fewest calls first, %v", first.Ran, want)
	}
	cut := 0
	for _, x := range results {
		if !x.CutShort {
			continue
		}
		cut++
		if x.Round != 1 || !slices.Contains(first.Dropped, x.Index) || x.PredictedS == nil || !(*x.PredictedS > 0) {
			r.Errorf("a run cut short: %+v; round 1 dropped %v", x, first.Dropped)
		}
		if b := x.Config.Int("b"); b != 8 {
			r.Errorf("configuration %d (b=%d) cut short", x.Index, b)
		}
	}
	if cut == 0 {
		r.Errorf("no run cut short; round 1: %+v", *first)
	}
}
