package workloads

import (
	"context"
	"testing"

	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/mpitest"
	"github.com/approxtune/approxtune/internal/selective"
	"github.com/approxtune/approxtune/sweep"
)

// scenarios are the MPI scenarios of this package's tests; test files add
// theirs from init functions.
var scenarios = map[string]func(*mpitest.R){"summa-verify": summaVerify}

func TestMain(m *testing.M) { mpitest.Main(m, scenarios) }

// SUMMA's check passes on a correct product and fails on a corrupted one, on
// a square and a non-square grid.
func summaVerify(r *mpitest.R) {
	b, err := kernels.NewBackend(kernels.OpenBLAS)
	if err != nil {
		r.Fatalf("backend: %v", err)
	}
	e, err := selective.New(r.World, kernels.New(b))
	if err != nil {
		r.Fatalf("engine: %v", err)
	}
	w := summa{}
	for _, grid := range []sweep.GridShape{{2, 2}, {1, 4}, {4, 1}} {
		c := sweep.NewConfig(w.Params(), map[string]any{"n": 256, "grid": grid, "b": 32})
		if err := w.Check(c, 4); err != nil {
			r.Fatalf("check %s: %v", c.Label(), err)
		}
		g, err := e.NewGrid(grid)
		if err != nil {
			r.Fatalf("grid: %v", err)
		}
		inst, err := w.Setup(&Env{Grid: g, K: e.Kernels(), Seed: 3}, c)
		if err != nil {
			r.Fatalf("setup: %v", err)
		}
		inst.Init()
		if err := inst.Run(context.Background()); err != nil {
			r.Fatalf("run: %v", err)
		}
		if res := inst.Verify(); !(res < 1e-14) {
			r.Errorf("%s: residual %v of a correct product, want < 1e-14", grid, res)
		}
		s := inst.(*summaRun)
		if r.Rank == 3 {
			s.c[7] += 1e-2 // one element of 65536 off by a few percent, on one rank
		}
		if res := inst.Verify(); !(res > 1e-10) { // the acceptance threshold of full runs
			r.Errorf("%s: residual %v after corrupting C, want the check to catch it", grid, res)
		}
		g.Free()
	}
	c := sweep.NewConfig(w.Params(), map[string]any{"n": 1000, "grid": sweep.GridShape{2, 2}, "b": 64})
	if err := w.Check(c, 4); err == nil {
		r.Errorf("n=1000 b=64 on 2x2 accepted; 64 does not divide 500")
	}
}

func TestSUMMAVerifies(t *testing.T) { mpitest.Run(t, "summa-verify", 4) }
