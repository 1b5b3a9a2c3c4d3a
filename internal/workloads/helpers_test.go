package workloads

import (
	"context"

	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/mpitest"
	"github.com/approxtune/approxtune/internal/selective"
	"github.com/approxtune/approxtune/sweep"
)

// testEngine makes an engine over the world with the named BLAS backend.
func testEngine(r *mpitest.R, backend string) *selective.Engine {
	b, err := kernels.NewBackend(backend)
	if err != nil {
		r.Fatalf("backend: %v", err)
	}
	e, err := selective.New(r.World, kernels.New(b))
	if err != nil {
		r.Fatalf("engine: %v", err)
	}
	return e
}

// runOnce regenerates the inputs and runs inst once under the engine in mode
// (inst is nil on ranks outside the grid, which still take part), as the
// agent's runner does.
func runOnce(r *mpitest.R, e *selective.Engine, inst Instance, tr *selective.Track, mode selective.RunMode) selective.RunStats {
	if inst != nil {
		inst.Init()
	}
	if err := r.World.Barrier(); err != nil {
		r.Fatalf("barrier: %v", err)
	}
	e.Begin(tr, mode)
	var err error
	if inst != nil {
		err = inst.Run(context.Background())
	}
	rs, eerr := e.End()
	if err != nil || eerr != nil {
		r.Fatalf("run (mode %d): %v, end: %v", mode, err, eerr)
	}
	return rs
}

// setupOn builds c's grid and, on its members, w's instance (nil elsewhere).
func setupOn(r *mpitest.R, e *selective.Engine, w Workload, c sweep.Config) (*selective.Grid, Instance) {
	g, err := e.NewGrid(w.Grid(c))
	if err != nil {
		r.Fatalf("grid: %v", err)
	}
	if !g.Member() {
		return g, nil
	}
	inst, err := w.Setup(&Env{Grid: g, K: e.Kernels(), Seed: 5}, c)
	if err != nil {
		r.Fatalf("setup %s: %v", c.Label(), err)
	}
	return g, inst
}
