package workloads

import (
	"context"

	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/workloads/catalog"
	"github.com/approxtune/approxtune/sweep"
)

// synthetic is a workload whose kernels have known time distributions: each
// step, every process busy-waits count times (kernel ids 0..kinds-1, each a
// duration drawn uniformly from mean·(1 ± spread%)), the designated slow rank
// slow% as long (only its kernels i = step·count + j with i % slow_every == 0
// when slow_every > 1: planted slow executions), then the processes of each
// grid row allreduce and each grid column broadcasts a message of msg doubles. With no slow rank the critical
// path is steps·count·mean plus the messages; with one, it follows the slow
// rank. It checks the engine's statistics and critical path; it has no
// numerical result (Verify returns 0).
type synthetic struct{ catalog.Synthetic }

type syntheticRun struct {
	env                  *Env
	steps, count, kinds  int
	every                int // on the slow rank, every every-th kernel is slow
	mean, spread, factor float64
	buf, out             []float64
	rank                 int
}

func (synthetic) Setup(env *Env, c sweep.Config) (Instance, error) {
	s := &syntheticRun{env: env, steps: c.Int("steps"), count: c.Int("count"), kinds: c.Int("kinds"),
		every: c.Int("slow_every"), mean: float64(c.Int("mean_us")) * 1e-6, spread: float64(c.Int("spread")) / 100, factor: 1,
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
			f := s.factor
			if (step*s.count+j)%s.every != 0 {
				f = 1
			}
			s.env.K.Spin(j%s.kinds, s.mean*(1+s.spread*u)*f)
		}
		row.Allreduce(s.buf, s.out, mpi.Sum)
		col.Bcast(s.buf, 0)
	}
	return nil
}

func (s *syntheticRun) Verify() float64 { return 0 }
