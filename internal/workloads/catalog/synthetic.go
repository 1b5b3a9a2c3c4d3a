package catalog

import (
	"fmt"

	"github.com/approxtune/approxtune/sweep"
)

// Synthetic describes synthetic, busy-wait kernels with known time
// distributions that check the engine (package workloads runs it).
type Synthetic struct{}

// Name is what specs and users call the workload.
func (Synthetic) Name() string { return "synthetic" }

// Doc describes the workload in a line.
func (Synthetic) Doc() string {
	return "busy-wait kernels with known time distributions and an optional slow rank, to check the engine (a spin's signature is its kind alone, so eager and searches pool spins across configurations that differ in their times)"
}

// Params lists the workload's parameters, in expansion order.
func (Synthetic) Params() []sweep.Param {
	return []sweep.Param{
		{Name: "grid", Kind: sweep.Grid, Doc: "processor grid PRxPC", Default: sweep.GridShape{2, 2}, Dims: 2},
		{Name: "steps", Kind: sweep.Int, Doc: "steps (each: kernels, then a row allreduce and a column broadcast)", Default: 10, Min: 1, Max: 100000},
		{Name: "count", Kind: sweep.Int, Doc: "kernels per process per step", Default: 8, Min: 0, Max: 100000},
		{Name: "kinds", Kind: sweep.Int, Doc: "distinct kernels (ids 0..kinds-1, used in turn)", Default: 2, Min: 1, Max: 1000},
		{Name: "mean_us", Kind: sweep.Int, Doc: "mean kernel time in microseconds", Default: 1000, Min: 0, Max: 10000000},
		{Name: "spread", Kind: sweep.Int, Doc: "kernel times are uniform in mean·(1 ± spread/100)", Default: 10, Min: 0, Max: 100},
		{Name: "slow_rank", Kind: sweep.Int, Doc: "grid rank whose kernels are slower (-1: none)", Default: -1, Min: -1, Max: 1 << 20},
		{Name: "slow_pct", Kind: sweep.Int, Doc: "the slow rank's kernel time in percent of the others'", Default: 200, Min: 1, Max: 100000},
		{Name: "slow_every", Kind: sweep.Int, Doc: "on the slow rank, every Nth kernel is slow (the 1st, the N+1th, ... of the run; 1: all)", Default: 1, Min: 1, Max: 1 << 20},
		{Name: "msg", Kind: sweep.Int, Doc: "doubles per message", Default: 1024, Min: 1, Max: 1 << 24},
		{Name: "hang_rank", Kind: sweep.Int, Doc: "grid rank that stops making progress at step hang_step, never to return (-1: none): a hung run, for testing deadlines", Default: -1, Min: -1, Max: 1 << 20},
		{Name: "hang_step", Kind: sweep.Int, Doc: "the step at which hang_rank stops, counted over the configuration's runs (its warm-up included): with steps=10, hang_step=25 lets two runs end and stops the third at its step 5", Default: 0, Min: 0, Max: 100000},
	}
}

// Grid is the processor grid a configuration runs on: its grid parameter.
func (Synthetic) Grid(c sweep.Config) sweep.GridShape { return c.Grid("grid") }

// Check validates the constraints between a configuration's parameters
// for an agent of ranks processes, naming what is valid.
func (Synthetic) Check(c sweep.Config, ranks int) error {
	if s := c.Int("slow_rank"); s >= c.Grid("grid").Procs() {
		return fmt.Errorf("slow_rank=%d is not a rank of grid %s: want -1 or 0..%d", s, c.Grid("grid"), c.Grid("grid").Procs()-1)
	}
	if h := c.Int("hang_rank"); h >= c.Grid("grid").Procs() {
		return fmt.Errorf("hang_rank=%d is not a rank of grid %s: want -1 or 0..%d", h, c.Grid("grid"), c.Grid("grid").Procs()-1)
	}
	return nil
}
