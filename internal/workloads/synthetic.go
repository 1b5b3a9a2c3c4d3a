package workloads

import (
	"context"
	"time"

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
// rank. With hang_rank, that rank stops at step hang_step, counted over the configuration's runs, and never returns (the others wait in their next collective). It checks the engine's statistics and critical path, and the session's deadlines; it has no
// numerical result (Verify returns 0).
type synthetic struct{ catalog.Synthetic }

type syntheticRun struct {
	env                  *Env
	steps, count, kinds  int
	every                int // on the slow rank, every every-th kernel is slow
	mean, spread, factor float64
	buf, out             []float64
	rank                 int
	hangStep             int // the step at which this process hangs, counted over the runs (-1: never)
	stepped              int // steps made by the runs before this one
}

func (synthetic) Setup(env *Env, c sweep.Config) (Instance, error) {
	s := &syntheticRun{env: env, steps: c.Int("steps"), count: c.Int("count"), kinds: c.Int("kinds"),
		every: c.Int("slow_every"), mean: float64(c.Int("mean_us")) * 1e-6, spread: float64(c.Int("spread")) / 100, factor: 1,
		buf: buffer(c.Int("msg")), out: buffer(c.Int("msg")), rank: env.Grid.Comm.Rank()}
	if c.Int("slow_rank") == s.rank {
		s.factor = float64(c.Int("slow_pct")) / 100
	}
	s.hangStep = -1
	if c.Int("hang_rank") == s.rank {
		s.hangStep = c.Int("hang_step")
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
		if s.stepped+step == s.hangStep {
			// A hung process: no progress, no error, the context ignored,
			// as a deadlocked or livelocked program would be.
			for {
				time.Sleep(time.Second)
			}
		}
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
	s.stepped += s.steps
	return nil
}

func (s *syntheticRun) Verify() float64 { return 0 }
