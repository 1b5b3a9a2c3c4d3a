package workloads

import (
	"context"
	"fmt"

	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/sweep"
)

// synthetic is a workload whose kernels have known time distributions: each
// step, every process busy-waits count times (kernel ids 0..kinds-1, each a
// duration drawn uniformly from mean·(1 ± spread%)), the designated slow rank
// slow% as long, then the processes of each grid row allreduce and each grid
// column broadcasts a message of msg doubles. With no slow rank the critical
// path is steps·count·mean plus the messages; with one, it follows the slow
// rank. It checks the engine's statistics and critical path; it has no
// numerical result (Verify returns 0).
type synthetic struct{}

func (synthetic) Name() string { return "synthetic" }
func (synthetic) Doc() string {
	return "busy-wait kernels with known time distributions and an optional slow rank, to check the engine"
}

func (synthetic) Params() []sweep.Param {
	return []sweep.Param{
		{Name: "grid", Kind: sweep.Grid, Doc: "processor grid PRxPC", Default: sweep.GridShape{2, 2}, Dims: 2},
		{Name: "steps", Kind: sweep.Int, Doc: "steps (each: kernels, then a row allreduce and a column broadcast)", Default: 10, Min: 1, Max: 100000},
		{Name: "count", Kind: sweep.Int, Doc: "kernels per process per step", Default: 8, Min: 0, Max: 100000},
		{Name: "kinds", Kind: sweep.Int, Doc: "distinct kernels (ids 0..kinds-1, used in turn)", Default: 2, Min: 1, Max: 1000},
		{Name: "mean_us", Kind: sweep.Int, Doc: "mean kernel time in microseconds", Default: 1000, Min: 0, Max: 10000000},
		{Name: "spread", Kind: sweep.Int, Doc: "kernel times are uniform in mean·(1 ± spread/100)", Default: 10, Min: 0, Max: 100},
		{Name: "slow_rank", Kind: sweep.Int, Doc: "grid rank whose kernels are slower (-1: none)", Default: -1, Min: -1, Max: 1 << 20},
		{Name: "slow_pct", Kind: sweep.Int, Doc: "the slow rank's kernel time in percent of the others'", Default: 200, Min: 1, Max: 100000},
		{Name: "msg", Kind: sweep.Int, Doc: "doubles per message", Default: 1024, Min: 1, Max: 1 << 24},
	}
}

func (synthetic) Grid(c sweep.Config) sweep.GridShape { return c.Grid("grid") }

func (synthetic) Check(c sweep.Config, ranks int) error {
	if s := c.Int("slow_rank"); s >= c.Grid("grid").Procs() {
		return fmt.Errorf("slow_rank=%d is not a rank of grid %s: want -1 or 0..%d", s, c.Grid("grid"), c.Grid("grid").Procs()-1)
	}
	return nil
}

type syntheticRun struct {
	env                  *Env
	steps, count, kinds  int
	mean, spread, factor float64
	buf, out             []float64
	rank                 int
}

func (synthetic) Setup(env *Env, c sweep.Config) (Instance, error) {
	s := &syntheticRun{env: env, steps: c.Int("steps"), count: c.Int("count"), kinds: c.Int("kinds"),
		mean: float64(c.Int("mean_us")) * 1e-6, spread: float64(c.Int("spread")) / 100, factor: 1,
		buf: buffer(c.Int("msg")), out: buffer(c.Int("msg")), rank: env.Grid.Comm.Rank()}
	if c.Int("slow_rank") == s.rank {
		s.factor = float64(c.Int("slow_pct")) / 100
	}
	return s, nil
}

func (s *syntheticRun) Init() {
	for i := range s.buf {
		s.buf[i] = float64(s.rank + i)
	}
}

func (s *syntheticRun) Run(ctx context.Context) error {
	row, col := s.env.Grid.Along(1), s.env.Grid.Along(0)
	for step := 0; step < s.steps; step++ {
		for j := 0; j < s.count; j++ {
			u := 2 * entry(s.env.Seed, 7+s.rank, step, j) // uniform in [-1, 1)
			s.env.K.Spin(j%s.kinds, s.mean*(1+s.spread*u)*s.factor)
		}
		row.Allreduce(s.buf, s.out, mpi.Sum)
		col.Bcast(s.buf, 0)
	}
	return nil
}

func (s *syntheticRun) Verify() float64 { return 0 }
