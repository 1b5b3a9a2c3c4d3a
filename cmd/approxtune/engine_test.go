package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/sweep"
	"gonum.org/v1/gonum/stat"
)

// selectiveResult is the part of a selective run's result the tests read.
type selectiveResult struct {
	Type        string         `json:"type"`
	Config      map[string]any `json:"config"`
	Policy      string         `json:"policy"`
	Tolerance   float64        `json:"tolerance"`
	ReferenceS  []float64      `json:"reference_s"`
	PredictedS  float64        `json:"predicted_s"`
	PredictedSE *float64       `json:"predicted_se_s"`
	SelectiveS  float64        `json:"selective_s"`
	LocalS      float64        `json:"local_s"`
	Error       *float64       `json:"error"`
	Executed    int64          `json:"executed"`
	Skipped     int64          `json:"skipped"`
	Settled     int64          `json:"settled"`
	Promised    int64          `json:"promised"`
	RefError    *float64       `json:"reference_error"` // summary
	Kernels     []struct {
		Key     string  `json:"key"`
		Count   int64   `json:"count"`
		MeanS   float64 `json:"mean_s"`
		State   string  `json:"state"`
		Skipped int64   `json:"skipped"`
	} `json:"kernels"`
}

// runSweep runs a spec on 4 ranks and returns its events by type.
func runSweep(t *testing.T, bin, spec string) map[string][]selectiveResult {
	t.Helper()
	return runSweepOn(t, bin, 4, spec)
}

// runSweepOn runs a spec on the given number of ranks and returns its events
// by type.
func runSweepOn(t *testing.T, bin string, ranks int, spec string) map[string][]selectiveResult {
	t.Helper()
	f := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(f, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	r := testenv.MPIRun(t, 4*time.Minute, ranks, nil, "", bin, "agent", "--sweep", f)
	if r.ExitCode != 0 {
		t.Fatalf("agent exit %d\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	out := map[string][]selectiveResult{}
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		var e selectiveResult
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("bad event %q: %v", line, err)
		}
		out[e.Type] = append(out[e.Type], e)
	}
	return out
}

// Eager skips a kernel the grid knows on the shared sample's test, and
// charges it from that sample unless the process's own passes the test
// too. Rank 0's 2 ms spin is 50 times slower in one call of 100, and one
// such call among its first samples made its own sample wide (8 samples,
// mean 15 ms, half-width 203% at 2^-3): charged from it, eager predicted
// 4.4 times the run (error 340%, where conditional was 0.1-1.5% off).
func TestEagerChargesTheSampleThatPassed(t *testing.T) {
	bin := testenv.Build(t)
	evs := runSweep(t, bin, `{"workload":"synthetic","space":{"grid":"2x2","steps":10,"count":8,"kinds":1,"mean_us":2000,"slow_rank":0,"slow_pct":5000,"slow_every":100},
		"policies":["eager"],"tolerances":[0.5,0.125],"mode":"evaluate","reference_reps":2}`)
	res := evs["result"]
	if len(res) != 2 {
		t.Fatalf("%d results, want 2", len(res))
	}
	for _, r := range res {
		ref := stat.Mean(r.ReferenceS, nil)
		if e := math.Abs(r.PredictedS-ref) / ref; e > 0.25 || r.Skipped == 0 {
			t.Errorf("eager at %g: predicted %.4fs, reference %.4fs (error %.1f%%), skipped %d; want within 25%% with kernels skipped",
				r.Tolerance, r.PredictedS, ref, 100*e, r.Skipped)
		}
	}
}

// With one slow rank, the propagated prediction follows the slow rank's path
// under every policy, while a prediction without propagation (rank 0's own
// path) would miss it. (Its collectives never become predictable at this
// tolerance; internal/selective's TestSettledCollectivesReplayed follows a
// slow rank through collectives skipped without records.)
func TestSlowRankPathFollowedByEveryPolicy(t *testing.T) {
	bin := testenv.Build(t)
	evs := runSweep(t, bin, `{"workload":"synthetic","space":{"grid":"2x2","slow_rank":3,"steps":24,"count":8,"mean_us":6000,"spread":1},
		"policies":["conditional","local","online","apriori","eager"],"tolerances":[0.015625],"mode":"evaluate","reference_reps":2}`)
	res := evs["result"]
	if len(res) != 5 {
		t.Fatalf("%d results, want 5", len(res))
	}
	// 6 ms spins keep the scheduler's wake-up jitter small beside the kernels
	// (with 3 ms, wake-ups behind a neighbour polling in MPI once moved a
	// reference by 4% and a prediction by 3.5% on 2 cores); 24 steps keep
	// one stall small beside the run (with 12, a run of 1.17 s once came
	// out 37 ms, 3.2%, long); and a spread of ±1% bounds the error of any sample mean to 1% (this test
	// is about propagation, not sampling). The tolerance is 2^-6 because
	// apriori divides it by sqrt(alpha), the kernel's count on the path, and
	// so only bounds the whole path's sampling error by about the tolerance:
	// at 2^-3 one preempted spin among its first samples once put apriori
	// 7.8% off on a busy 2-core CI machine. At 2^-6 the spread still lets
	// every policy skip about 70% of the calls. The bound is 5%, a tenth of
	// what a prediction without propagation misses by (48-49%): on a
	// shared 2-core VM, eager once came out 2.3% off (reference 2.359 s,
	// predicted 2.414 s) while every other policy was within 0.4%.
	var report []string
	bad := false
	for _, r := range res {
		ref := stat.Mean(r.ReferenceS, nil)
		errPred := math.Abs(r.PredictedS-ref) / ref
		errLocal := math.Abs(r.LocalS-ref) / ref
		report = append(report, fmt.Sprintf("%-11s reference %.4fs predicted %.4fs (error %.1f%%) without propagation %.4fs (error %.1f%%), skipped %d of %d (%d without records)",
			r.Policy, ref, r.PredictedS, 100*errPred, r.LocalS, 100*errLocal, r.Skipped, r.Skipped+r.Executed, r.Settled))
		if errPred > 0.05 || errLocal < 0.20 || r.Skipped == 0 {
			bad = true
		}
	}
	if bad {
		t.Fatalf("want every prediction within 5%% of the reference and every unpropagated one off by more than 20%%, with kernels skipped:\n%s", strings.Join(report, "\n"))
	}
	t.Logf("\n%s", strings.Join(report, "\n"))
	// Every policy's summary carries the noise floor of the sweep's
	// references: with one configuration of two runs, their difference
	// over their mean taken each way.
	r0, r1 := res[0].ReferenceS[0], res[0].ReferenceS[1]
	floor := (math.Abs(r0-r1)/r1 + math.Abs(r1-r0)/r0) / 2
	if sums := evs["summary"]; len(sums) != 5 {
		t.Errorf("%d summaries, want 5", len(sums))
	} else {
		for _, sm := range sums {
			if sm.RefError == nil || math.Abs(*sm.RefError-floor) > 1e-9 {
				t.Errorf("%s summary: reference_error %v, want %v from the references %v", sm.Policy, sm.RefError, floor, res[0].ReferenceS)
			}
		}
	}
}

// Tolerance 0 skips nothing, and then the prediction is the measured run.
func TestToleranceZeroSkipsNothing(t *testing.T) {
	bin := testenv.Build(t)
	// Spins of 6 ms: the scheduler's wake-up jitter (a rank waking behind a
	// neighbour that polls in MPI on the same core) is small beside them;
	// with 3 ms and 10 steps one run on a busy 2-core CI machine came out
	// 4.7% long (a 12 ms stall), and with 20 steps of 6 ms one in about 20
	// came out 3.7% long (a 40 ms stall); 40 steps make that 1.9%.
	const spec = `{"workload":"synthetic","space":{"grid":"2x2","steps":40,"mean_us":6000},
		"policies":["conditional","local","online","apriori","eager"],"tolerances":[0],"mode":"evaluate","reference_reps":3,"kernels":true}`
	// A prediction more than 3% off is judged on a second sweep: one stall
	// of a rank on a loaded 2-core machine made online 7.3% long once in CI
	// (its other predictions within 1%); twice in a row is a defect. It is
	// judged against the references' median: one of three references
	// 12% long (2.38 s beside 2.12 s twice) had put every policy 3.2-4.2%
	// from their mean in a CI run, each within 0.7% of the median.
	var evs map[string][]selectiveResult
	for try := 1; ; try++ {
		evs = runSweep(t, bin, spec)
		var off []string
		for _, r := range evs["result"] {
			refs := slices.Sorted(slices.Values(r.ReferenceS))
			med := stat.Quantile(0.5, stat.Empirical, refs, nil)
			if e := math.Abs(r.PredictedS/med - 1); e > 0.03 {
				off = append(off, fmt.Sprintf("%s at 0: predicted %.4fs (its run took %.4fs) vs reference %v: %.1f%% from their median > 3%%", r.Policy, r.PredictedS, r.SelectiveS, r.ReferenceS, 100*e))
			}
		}
		if len(off) == 0 {
			break
		}
		if try == 2 {
			for _, o := range off {
				t.Error(o)
			}
			break
		}
		t.Logf("sweep %d: %s; a second sweep judges the errors", try, strings.Join(off, "; "))
	}
	for _, r := range evs["result"] {
		if r.Skipped != 0 || r.Executed == 0 {
			t.Errorf("%s at 0: skipped %d executed %d, want nothing skipped", r.Policy, r.Skipped, r.Executed)
		}
		// Nothing is decided at 0: after its first call, a collective runs
		// without records, on a promise, under every policy.
		if r.Promised == 0 || r.Promised >= r.Executed {
			t.Errorf("%s at 0: %d of %d executed calls ran on a promise, want most collectives", r.Policy, r.Promised, r.Executed)
		}
		t.Logf("%s at 0: predicted %.4fs, reference %.4fs: error %.2f%%", r.Policy, r.PredictedS, stat.Mean(r.ReferenceS, nil), 100**r.Error)
	}
	if len(evs["result"]) != 5 {
		t.Fatalf("%d results, want 5", len(evs["result"]))
	}
	// "kernels": true lists each kernel: the two spin kinds ran 40·8/2 = 160 times each on rank 0.
	// Their means: draws of 6 ms ±10% average within 0.1 ms of 6 ms over 160
	// calls, and a spin never ends early but can end late when its rank
	// wakes behind a neighbour, hence the one-sided slack.
	ks := evs["kernels"]
	if len(ks) != 5 {
		t.Fatalf("%d kernels events, want 5", len(ks))
	}
	found := 0
	for _, k := range ks[0].Kernels {
		if strings.HasPrefix(k.Key, "spin") {
			found++
			if k.Count != 160 || k.State != "executing" || k.Skipped != 0 || k.MeanS < 5.8e-3 || k.MeanS > 6.9e-3 {
				t.Errorf("kernel %+v, want 160 executions of about 6 ms, none skipped", k)
			}
		}
	}
	if found != 2 {
		t.Errorf("found %d spin kernels in %+v, want 2", found, ks[0].Kernels)
	}
}

// A critical path is a chain of intervals that happened one after another,
// so it cannot be longer than the run it was measured in: with nothing
// skipped, cholesky2d's prediction (non-blocking messages, whose transfer
// the receiver separates from its wait by comparing its clock with the
// sender's) stays within the selective run's own wall time. Comparing
// clocks across ranks with MPI_Wtime, which Open MPI counts from each
// process's first call, made it up to 38% longer.
func TestPathWithinOwnWallTime(t *testing.T) {
	bin := testenv.Build(t)
	evs := runSweep(t, bin, `{"workload":"cholesky2d","space":{"n":2048,"grid":"2x2","b":[64,128],"lookahead":[0,1]},
		"policies":["conditional","eager"],"tolerances":[0],"mode":"tune"}`)
	if len(evs["result"]) != 8 {
		t.Fatalf("%d results, want 8", len(evs["result"]))
	}
	for _, r := range evs["result"] {
		if r.Skipped != 0 {
			t.Errorf("%v %s at 0: skipped %d", r.Config, r.Policy, r.Skipped)
		}
		// Where ranks share cores (4 on 2 here) the prediction is the
		// logged work run on the cores (simulate), not a measured chain:
		// the process CPU clock also counts the process's other threads
		// (the Go runtime's), which may have run on the other core, and
		// the simulation shares a core evenly where the scheduler did not.
		// It ran 0.3-17% under the run's wall time in six sweeps of this
		// spec, and once 5.2% over (3.6 ms of a 68 ms run, b=128, on a
		// busy 2-core CI machine). 8% and 1 ms (the final barrier, clock
		// reads outside the path) leave room for that and still catch the
		// cross-rank clock comparison (+38%).
		if r.PredictedS > 1.08*r.SelectiveS+1e-3 {
			t.Errorf("%v %s: path %.4fs longer than the run's own wall time %.4fs (%+.1f%%)",
				r.Config, r.Policy, r.PredictedS, r.SelectiveS, 100*(r.PredictedS/r.SelectiveS-1))
		}
	}
}

// SUMMA through the engine: tolerance 0 skips nothing; a loose one skips and
// still completes every policy without NaN.
func TestSUMMASelective(t *testing.T) {
	bin := testenv.Build(t)
	evs := runSweep(t, bin, `{"workload":"summa","space":{"n":512,"grid":["2x2","1x4"],"b":[64,128]},
		"policies":["conditional","local","online","apriori","eager"],"tolerances":[0,0.5],"mode":"evaluate","reference_reps":1}`)
	if n := len(evs["result"]); n != 4*5*2 {
		t.Fatalf("%d results, want 40", n)
	}
	skippedLoose := int64(0)
	for _, r := range evs["result"] {
		if math.IsNaN(r.PredictedS) || r.PredictedS <= 0 {
			t.Errorf("%s at %v: predicted %v", r.Policy, r.Tolerance, r.PredictedS)
		}
		if r.Tolerance == 0 && r.Skipped != 0 {
			t.Errorf("%s at 0 skipped %d kernels", r.Policy, r.Skipped)
		}
		if r.Tolerance == 0.5 {
			skippedLoose += r.Skipped
		}
	}
	if skippedLoose == 0 {
		t.Error("nothing skipped at tolerance 0.5")
	}
	if n := len(evs["summary"]); n != 10 {
		t.Errorf("%d summaries, want one per policy x tolerance (10)", n)
	}
}

// A selective run's standard error covers what its skipped kernels leave
// unknown: on the synthetic workload, whose kernels are drawn from a wide
// distribution (uniform ±30%) and skipped after few samples at tolerance
// 2^-2, the 95% interval of the prediction holds the configuration's
// reference mean in at least 15 of the 18 runs (83%; see the bar below). The reference mean is itself
// the mean of three runs, so its own standard error joins the prediction's
// in quadrature; it is small (0.03-0.35% in the runs that set this test up,
// beside prediction errors of 3-11%). Two ranks on their own cores keep the
// run-to-run noise of the measured part, which the standard error does not
// cover, small. The runs that set this test up covered 17 of 18 twice.
func TestPredictionIntervalCoversReference(t *testing.T) {
	bin := testenv.Build(t)
	evs := runSweepOn(t, bin, 2, `{"workload":"synthetic","space":{"grid":["1x2"],"steps":[3,4,5],"count":[6,8],"mean_us":[10000],"spread":[30],"kinds":[2]},
		"policies":["conditional","online","eager"],"tolerances":[0.25],"mode":"evaluate","reference_reps":3}`)
	res := evs["result"]
	if len(res) != 18 {
		t.Fatalf("%d results, want 18", len(res))
	}
	covered := 0
	var report []string
	for _, r := range res {
		if r.PredictedSE == nil {
			t.Fatalf("%s %v: no predicted_se_s in the result", r.Policy, r.Config)
		}
		se := *r.PredictedSE
		if r.Skipped > 0 && !(se > 0) {
			t.Errorf("%s %v: %d kernels skipped and a standard error of %g; want it above 0", r.Policy, r.Config, r.Skipped, se)
		}
		ref, sd := stat.MeanStdDev(r.ReferenceS, nil)
		half := 1.96 * math.Hypot(se, sd/math.Sqrt(float64(len(r.ReferenceS))))
		ok := math.Abs(r.PredictedS-ref) <= half
		if ok {
			covered++
		}
		report = append(report, fmt.Sprintf("%-11s steps=%v count=%v reference %.4fs predicted %.4fs ± %.4fs (standard error %.1f%%, skipped %d of %d) covered %v",
			r.Policy, r.Config["steps"], r.Config["count"], ref, r.PredictedS, half, 100*se/ref, r.Skipped, r.Skipped+r.Executed, ok))
	}
	// At a true coverage of 95%, 18 runs cover 14 or fewer 1.1% of the
	// time (binomial); the bar was 17, what two sweeps happened to give,
	// and CI saw 16 once (every prediction a few percent low of its
	// reference; the two misses 7% and 40% of their half-width outside).
	if covered < 15 {
		t.Fatalf("the 95%% interval covered the reference mean in %d of %d runs; want at least 15:\n%s", covered, len(res), strings.Join(report, "\n"))
	}
	t.Logf("covered %d of %d:\n%s", covered, len(res), strings.Join(report, "\n"))
}

// The kernels event also carries the computation kernels rank 0 did not
// run, as the rank that ran them most measured them: on a 2x2 grid,
// cholesky2d n=1024 b=256 gives rank 0 no gemm (a user's gemm model
// lacked that size), and another rank's gemm 256x256x256 comes along.
func TestKernelsOfOtherRanks(t *testing.T) {
	bin := testenv.Build(t)
	f := filepath.Join(t.TempDir(), "spec.json")
	spec := `{"workload":"cholesky2d","space":{"n":1024,"b":256,"grid":"2x2"},"policies":["eager"],"tolerances":[0.5],"mode":"tune","kernels":true}`
	if err := os.WriteFile(f, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	r := testenv.MPIRun(t, 4*time.Minute, 4, nil, "", bin, "agent", "--sweep", f)
	if r.ExitCode != 0 {
		t.Fatalf("agent exit %d\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	var ks []sweep.KernelsEvent
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		if strings.Contains(line, `"type":"kernels"`) {
			var k sweep.KernelsEvent
			if err := json.Unmarshal([]byte(line), &k); err != nil {
				t.Fatalf("bad event %q: %v", line, err)
			}
			ks = append(ks, k)
		}
	}
	if len(ks) != 1 {
		t.Fatalf("%d kernels events, want 1:\n%s", len(ks), r.Stdout)
	}
	own := map[string]bool{}
	for _, k := range ks[0].Kernels {
		if k.Routine == "gemm" {
			t.Fatalf("rank 0 ran %s: the test needs a grid where it runs none", k.Key)
		}
		own[k.Key] = k.Count > 0
	}
	var gemm *sweep.OtherKernel
	for i, o := range ks[0].Others {
		// A communication's key names its communicator ("... on 2 ranks [hash]").
		if o.Rank < 1 || o.Rank > 3 || o.Count < 1 || !(o.MeanS > 0) || strings.Contains(o.Key, " ranks [") || strings.Contains(o.Key, " rank [") {
			t.Errorf("other rank's kernel %+v: want a computation kernel of rank 1-3 with samples", o)
		}
		if own[o.Key] {
			t.Errorf("%s: rank 0 has samples of it, yet it came from rank %d", o.Key, o.Rank)
		}
		if o.Key == "gemm[NT] 256x256x256" {
			gemm = &ks[0].Others[i]
		}
	}
	if gemm == nil {
		t.Fatalf("no gemm[NT] 256x256x256 among the other ranks' kernels: %+v", ks[0].Others)
	}
}
