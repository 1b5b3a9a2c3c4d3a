package main

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/approxtune/approxtune/internal/testenv"
)

// pinSpec is a sweep whose kernel counts follow from the spec rather than
// from the machine's timing (unless a spin ends milliseconds late, see
// pinAttempts), so that they can be pinned per policy and tolerance.
//
// Two ranks on a 1x2 grid have a core each. Each step, each rank spins 5
// times (one kernel, spin 0), then allreduces over its row (both ranks) and
// broadcasts over its column (itself alone): a run makes 2 ranks x 2 steps
// x (5 + 2) = 28 calls, 20 of them spins.
//
// Communication: with n_min 2 a kernel needs two samples before a call to
// skip it, so its third call in a run is the first that could be skipped,
// and each collective is called twice a run. Every policy but eager starts
// each run afresh, and eager's second configuration (msg 128) has new
// collective keys: no collective is ever skipped (none settled), and above
// tolerance 0 none runs on a promise (a promise needs two samples).
//
// Spins: their durations are not drawn at run time but fixed by the seed,
// 20 ms x (1 + 0.8 u) with u = 2 entry(93, 7+rank, step, j), so each
// policy's decisions follow from the rule h/(mean sqrt(alpha)) <= 0.5
// applied to those durations after n samples (alpha 1: conditional and
// eager; alpha n+1, the call's number in the run: local and online; alpha
// 10: apriori):
//
//	                     n=2   n=3   n=4   n=5
//	alpha 1, rank 0     6.94  1.29  0.66  0.44
//	alpha 1, rank 1     3.41  0.77  0.43
//	alpha n+1, rank 0   4.00  0.65  0.30
//	alpha n+1, rank 1   1.97  0.38
//	alpha 10, rank 0    2.19  0.41
//	alpha 10, rank 1    1.08  0.24
//
// The spins are long so that a sleeping spin's late wake-up is small beside
// the spread of the durations: a spin that ends late by up to 4 ms (a fifth
// of the mean) changes none of these decisions. Hence, at tolerance 0.5
// (executed counts are spins + the 8 collectives):
//
//   - conditional (alpha 1) executes 5 spins on rank 0 and 4 on rank 1:
//     17 executed, 11 skipped.
//   - local (alpha: this rank's calls of the kernel in the run) executes 4
//     on rank 0 and 3 on rank 1: 15 executed, 13 skipped.
//   - online (alpha: the kernel's count on the current path) equals local:
//     both ranks call the spin equally often, so the longer path's count is
//     this rank's own at every call.
//   - apriori (alpha 10: the spin's count on the counting run's critical
//     path) executes 3 on each: 14 executed, 14 skipped.
//   - eager (alpha 1) skips a kernel only once its statistics have crossed
//     the row: both ranks find the spin predictable within step 1's 5
//     calls, share it at step 1's allreduce, and skip step 2's spins: 18
//     executed, 10 skipped. It keeps that agreement into the second
//     configuration, where every spin is skipped: 8 executed, 20 skipped.
//
// The other policies give the same counts in both configurations. At
// tolerance 0 nothing is predictable: all 28 calls execute under every
// policy, and after each collective's first call (which promises to
// execute, with records) its second runs on that promise: 2 collectives x
// 2 ranks = 4 promised.
const pinSpec = `{"workload":"synthetic","space":{"grid":"1x2","steps":2,"count":5,"kinds":1,"mean_us":20000,"spread":80,"msg":[64,128]},
	"policies":["conditional","local","online","apriori","eager"],"tolerances":[0,0.5],"mode":"tune","seed":93}`

// pinRow is one selective run's kernel counts, summed over the ranks.
type pinRow struct {
	Msg                                  int
	Policy                               string
	Tolerance                            float64
	Executed, Skipped, Settled, Promised int64
}

// pinned is what pinSpec gives, per configuration (msg), policy and
// tolerance. The table was taken from the engine at commit c73fb67, before
// the policies became types, and agrees with the derivation at pinSpec.
var pinned = []pinRow{
	{64, "apriori", 0, 28, 0, 0, 4},
	{64, "apriori", 0.5, 14, 14, 0, 0},
	{64, "conditional", 0, 28, 0, 0, 4},
	{64, "conditional", 0.5, 17, 11, 0, 0},
	{64, "eager", 0, 28, 0, 0, 4},
	{64, "eager", 0.5, 18, 10, 0, 0},
	{64, "local", 0, 28, 0, 0, 4},
	{64, "local", 0.5, 15, 13, 0, 0},
	{64, "online", 0, 28, 0, 0, 4},
	{64, "online", 0.5, 15, 13, 0, 0},
	{128, "apriori", 0, 28, 0, 0, 4},
	{128, "apriori", 0.5, 14, 14, 0, 0},
	{128, "conditional", 0, 28, 0, 0, 4},
	{128, "conditional", 0.5, 17, 11, 0, 0},
	{128, "eager", 0, 28, 0, 0, 4},
	{128, "eager", 0.5, 8, 20, 0, 0},
	{128, "local", 0, 28, 0, 0, 4},
	{128, "local", 0.5, 15, 13, 0, 0},
	{128, "online", 0, 28, 0, 0, 4},
	{128, "online", 0.5, 15, 13, 0, 0},
}

// pinAttempts is how many sweeps of pinSpec a row of the table may take
// to come out as pinned. Timing enters the counts only through the spins'
// measured durations, and a spin ends late when its rank is not scheduled
// on time: on a busy machine, by tens of milliseconds now and then, and
// one such spin among a rank's first samples moves that run's decision. A
// change of the engine's decisions moves its row in every sweep. The
// sweeps stop as soon as every row has come out as pinned.
const pinAttempts = 5

// The same sweep gives the same number of kernel executions, skips,
// settled skips and promised executions per policy and tolerance: the
// engine's decisions, pinned on a workload whose timings do not move them.
// Each row must come out as pinned in one of pinAttempts sweeps.
func TestPinnedKernelCounts(t *testing.T) {
	bin := testenv.Build(t)
	matched := make([]bool, len(pinned))
	var tables []string
	for attempt := 1; attempt <= pinAttempts && slices.Contains(matched, false); attempt++ {
		got := pinSweep(t, bin)
		for i := range pinned {
			if i < len(got) && got[i] == pinned[i] {
				matched[i] = true
			}
		}
		if !slices.Equal(got, pinned) {
			tables = append(tables, fmt.Sprintf("sweep %d (* marks a row that differs):\n%s", attempt, pinTable(got, pinned)))
		}
	}
	if slices.Contains(matched, false) {
		t.Fatalf("kernel counts: a row differs from the pinned one in all %d sweeps:\n%s", pinAttempts, strings.Join(tables, "\n"))
	}
	if len(tables) > 0 {
		t.Logf("every row came out as pinned, after sweeps that differed:\n%s", strings.Join(tables, "\n"))
	}
}

// pinSweep runs pinSpec and returns its rows, ordered as pinned is.
func pinSweep(t *testing.T, bin string) []pinRow {
	t.Helper()
	evs := runSweepOn(t, bin, 2, pinSpec)
	var got []pinRow
	for _, r := range evs["result"] {
		msg, ok := r.Config["msg"].(float64)
		if !ok {
			t.Fatalf("result without msg in its configuration: %+v", r)
		}
		got = append(got, pinRow{int(msg), r.Policy, r.Tolerance, r.Executed, r.Skipped, r.Settled, r.Promised})
	}
	slices.SortFunc(got, func(a, b pinRow) int {
		return cmp.Or(cmp.Compare(a.Msg, b.Msg), cmp.Compare(a.Policy, b.Policy), cmp.Compare(a.Tolerance, b.Tolerance))
	})
	return got
}

// pinTable lays out got beside want, row by row.
func pinTable(got, want []pinRow) string {
	var b strings.Builder
	const head = "msg policy      tol exec skip settled promised"
	fmt.Fprintf(&b, "  got: %-41s | want: %s\n", head, head)
	for i := range max(len(got), len(want)) {
		var g, w string
		mark := "*"
		if i < len(got) {
			g = pinFormat(got[i])
		}
		if i < len(want) {
			w = pinFormat(want[i])
		}
		if i < len(got) && i < len(want) && got[i] == want[i] {
			mark = " "
		}
		fmt.Fprintf(&b, "%s      %-41s |       %s\n", mark, g, w)
	}
	return b.String()
}

// pinFormat lays out one row.
func pinFormat(r pinRow) string {
	return fmt.Sprintf("%3d %-11s %-3g %4d %4d %7d %8d", r.Msg, r.Policy, r.Tolerance, r.Executed, r.Skipped, r.Settled, r.Promised)
}
