package selective

import (
	"math"

	"github.com/approxtune/approxtune/internal/kernels"
)

// A counting run (mode Counting, a policy.Rehearser's extra run) is a
// skeleton of the program, as the paper's skeletonization makes one: it
// needs the kernels' counts along the critical path, not their results.
//
//   - No computation kernel executes. Each is counted and charged its
//     modeled time (computeCost).
//   - A collective that may be skipped (every collective of a workload; a
//     program's floating-point data beyond the eager limit) exchanges the
//     engine's records (path, path counts), which also keep its members in
//     step, and does not run: it is charged its modeled time
//     (collectiveCost). One that may not be skipped (a program's integers,
//     small messages) runs in full and is timed.
//   - A skippable point-to-point message goes out empty, as a skipped one
//     does in a selective run: its record travels ahead of it and every
//     receive still matches; the receiver is charged its modeled transfer
//     (messageCost).
//
// The path is the cost model's alone: the time between kernels is not
// charged (Engine.gap), so no measurement enters it and the path, with its
// counts, comes out the same every time. Only the model's ratios matter,
// to tell which path is longest.
//
// What the program computes is then meaningless until its inputs are
// generated again: the runner's next run does that (Instance.Init), and
// nothing verifies a counting run. A program whose control flow depends on
// computed values follows the skeleton's values (docs/design.md, "Apriori's
// counting run"); CountingFull, a counting run that executes everything,
// is the tests' reference.

// The skeleton's cost model: a computation kernel runs at skeletonFlopRate
// (a core's dgemm on mid-sized tiles); a message costs skeletonLatency plus
// its bytes at skeletonBandwidth (a node's shared-memory copies).
const (
	skeletonFlopRate  = 2e10 // flop/s
	skeletonBandwidth = 4e9  // bytes/s
	skeletonLatency   = 5e-5 // s
)

// Skeleton reports whether the current run is a counting run's skeleton
// (mode Counting): its data are meaningless, so a workload may leave out
// code that only moves them between kernels and messages (the time between
// kernels is not charged in a skeleton). Its control flow must stay the
// same.
func (c *Comm) Skeleton() bool { return c.e.on && c.e.skeleton }

// skeletal counts a kernel the skeleton did not execute and charges its
// modeled time t to the path.
func (e *Engine) skeletal(st *kstat, t float64) {
	e.add(t, st.key)
	e.skipped++
}

// computeCost is a computation kernel's modeled time: a spin's duration, or
// its flops at skeletonFlopRate.
func computeCost(c *kernels.Call) float64 {
	if s := c.Seconds(); s > 0 {
		return s
	}
	eff := skeletonEfficiency[c.Sig.Routine]
	if eff == 0 {
		eff = 1
	}
	return c.Sig.Flops() / (eff * skeletonFlopRate)
}

// skeletonEfficiency is each routine's rate on small tiles relative to
// gemm's (1 where missing): the triangular solves and factorizations run
// a large part of their flops in level-2 BLAS.
var skeletonEfficiency = map[kernels.Routine]float64{
	kernels.Syrk: 0.7, kernels.Trsm: 0.5, kernels.Trmm: 0.5, kernels.Potrf: 0.3, kernels.Trtri: 0.3,
	kernels.Geqrf: 0.25, kernels.Larft: 0.2, kernels.Larfb: 0.6,
}

// collectiveCost is a collective's modeled time, n elements per process over
// size members: a tree's ⌈log2 size⌉ steps, each a latency and, for a
// broadcast or reduction, the n elements; the gathers, scatters and
// all-to-all move size-1 blocks of them.
func collectiveCost(op Op, n, size int) float64 {
	steps := math.Ceil(math.Log2(float64(max(size, 1))))
	b := 8 * float64(n)
	switch op {
	case OpBarrier:
		b = 0
	case OpGather, OpAllgather, OpScatter, OpAlltoall:
		b *= float64(size - 1)
	default:
		b *= steps
	}
	return steps*skeletonLatency + b/skeletonBandwidth
}

// messageCost is an empty point-to-point message's modeled transfer of bytes.
func messageCost(bytes int) float64 {
	return skeletonLatency + float64(bytes)/skeletonBandwidth
}
