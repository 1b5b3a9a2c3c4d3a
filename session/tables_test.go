package session

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/approxtune/approxtune/sweep"
)

// With a policy's run of one configuration missing (it failed), the
// launch-inclusive speed-up of that policy counts the full runs of its own
// configurations only: a review's hpcc sweep read 0.95x for the timed
// regions and 1.25x with the launches.
func TestLaunchLineOwnConfigurations(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	res := func(i int, pol string, sel float64) sweep.Result {
		return sweep.Result{Index: i, Policy: pol, Tolerance: f(0.5), SelectiveS: f(sel), ReferenceS: []float64{10}, LaunchS: f(1)}
	}
	sw := &Sweep{Results: []sweep.Result{res(0, "eager", 10), res(1, "eager", 10), res(0, "conditional", 5), res(1, "conditional", 5)}}
	sw.Results = sw.Results[1:] // eager's run of configuration 0 failed
	line := launchLine(sw, []Summary{{Policy: "eager", Tolerance: 0.5}, {Policy: "conditional", Tolerance: 0.5}})
	// A configuration's launch time is shared by its launches (1 s each
	// reported, with 1 reference): eager 1.00x (it had read 1.98x);
	// conditional (10.5 + 10.67) / (5.5 + 5.67) = 1.90x.
	for _, want := range []string{"eager 2^-1 1.00x", "conditional 2^-1 1.90x"} {
		if !strings.Contains(line, want) {
			t.Errorf("launch line %q lacks %q", line, want)
		}
	}
}

// A kernel's mean in 'table kernels' keeps three significant digits under
// a millisecond: a message of a microsecond had read 0.001.
func TestMillis(t *testing.T) {
	for s, want := range map[float64]string{1.234e-6: "0.00123", 4.5e-4: "0.450", 5e-8: "0.0000500", 0.0123: "12.300", 0: "0.000"} {
		if got := millis(s); got != want {
			t.Errorf("millis(%g) = %q, want %q", s, got, want)
		}
	}
}

// A configuration whose full run fails with a value that one left out
// before had too, and that no configuration with results has, is told
// with the resume that leaves out every one still to run with it.
func TestSharedFailure(t *testing.T) {
	sw := &Sweep{Skipped: map[int]bool{1: true}, Results: []sweep.Result{{Index: 0}}}
	// 0 ran; 1 was left out; 3 fails now; 4 is still to run with nb=100.
	for _, s := range []string{`{"nb":64,"chunks":2,"ranks":2}`, `{"nb":100,"chunks":2,"ranks":2}`, `{"nb":64,"chunks":4,"ranks":2}`,
		`{"nb":100,"chunks":4,"ranks":2}`, `{"nb":100,"chunks":8,"ranks":2}`, `{"nb":128,"chunks":2,"ranks":2}`} {
		var c sweep.Config
		if err := json.Unmarshal([]byte(s), &c); err != nil {
			t.Fatal(err)
		}
		sw.Configs = append(sw.Configs, c)
	}
	want := "; configuration 1, left out before, has its nb=100 too, and no configuration with it has run: 'resume skip=3,4' also leaves out the 1 other still to run with it"
	if got := sharedFailure(sw, 3); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	sw.Results = append(sw.Results, sweep.Result{Index: 4}) // nb=100 ran once: no evidence
	if got := sharedFailure(sw, 3); got != "" {
		t.Errorf("a configuration with nb=100 has results: %q, want nothing", got)
	}
	if got := sharedFailure(&Sweep{Configs: sw.Configs, Results: sw.Results[:1]}, 3); got != "" {
		t.Errorf("none left out before: %q, want nothing", got)
	}
}

// A selective run that took three times its reference or more is named
// under the best table, with its policy's mean error without it: one
// descheduled run of a user's sweep (2.64 s against 0.028 s) had made
// conditional at 0 read 934% off on average, unexplained.
func TestStalledLine(t *testing.T) {
	f := func(x float64) *float64 { return &x }
	params := []sweep.Param{{Name: "b", Kind: sweep.Int, Default: 64, Min: 1, Max: 4096}}
	cs := []sweep.Config{sweep.NewConfig(params, map[string]any{"b": 32}), sweep.NewConfig(params, map[string]any{"b": 64})}
	res := func(i int, pol string, pred, sel float64) sweep.Result {
		return sweep.Result{Index: i, Config: cs[i], Policy: pol, Tolerance: f(0),
			PredictedS: f(pred), SelectiveS: f(sel), ReferenceS: []float64{0.028, 0.028}}
	}
	sw := &Sweep{ID: 1, Spec: &sweep.Spec{Mode: sweep.ModeEvaluate, Policies: []string{"conditional", "eager"}, Tolerances: []sweep.Tolerance{0}},
		Configs: cs}
	sw.Results = []sweep.Result{res(0, "conditional", 2.608, 2.637), res(1, "conditional", 0.0308, 0.03), res(0, "eager", 0.0294, 0.031), res(1, "eager", 0.0266, 0.03)}
	line := stalledLine(sw)
	for _, want := range []string{
		"note: a selective run took 3x its configuration's reference time or more",
		"config 0 (b=32), conditional at 0: 2.6370 s, 94x its reference 0.0280 s, off by 9214.3%",
		"Mean error without it: conditional at 0 10.0%.",
		"with 'trace on', 'plot gantt' shows where such time goes",
	} {
		if !strings.Contains(line, want) {
			t.Errorf("stalled line lacks %q:\n%s", want, line)
		}
	}
	sw.Results[0] = res(0, "conditional", 0.0308, 0.03)
	if line := stalledLine(sw); line != "" {
		t.Errorf("no run stalled, yet: %s", line)
	}
	// apriori's selective time holds its counting run: only the
	// selective run is judged.
	apriori := res(1, "apriori", 0.029, 0.1)
	apriori.CountingS = f(0.07)
	sw.Results = append(sw.Results, apriori)
	if line := stalledLine(sw); line != "" {
		t.Errorf("apriori's counting run read as a stall: %s", line)
	}
}

// table kernels routine=R where rank 0 called no R kernel in the run, only
// knows some from earlier configurations (eager): those are listed and
// the table says why, where it had been empty.
func TestTableKernelsNoneCalled(t *testing.T) {
	sw := &Sweep{ID: 1, Spec: &sweep.Spec{Mode: sweep.ModeTune, Policies: []string{"eager"}, Tolerances: []sweep.Tolerance{0.5}},
		Kernels: []sweep.KernelsEvent{{Index: 0, Policy: "eager", Tolerance: 0.5, Kernels: []sweep.KernelStat{
			{Key: "gemm[NT] 64x64x64", Routine: "gemm", Count: 3, MeanS: 1e-5, HalfS: 2e-6, State: sweep.KernelPredictable},
			{Key: "potrf[L] 128", Routine: "potrf", Count: 2, MeanS: 2e-4, HalfS: 1e-5, Calls: 1, State: sweep.KernelExecuting},
		}}}}
	got, err := tableKernelsOf(sw, KernelOptions{FigureOptions: FigureOptions{Routine: "gemm"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(got, "(rank 0 called no gemm kernel in this run; the 1 known from earlier configurations:)") || !strings.Contains(got, "gemm[NT] 64x64x64") {
		t.Errorf("no gemm called:\n%s", got)
	}
	got, _ = tableKernelsOf(sw, KernelOptions{})
	if strings.Contains(got, "called no") || strings.Contains(got, "gemm[NT]") || !strings.Contains(got, "potrf[L] 128") {
		t.Errorf("the run's kernels:\n%s", got)
	}
}
