package workloads

import (
	"context"
	"math"
	"testing"

	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/mpitest"
	"github.com/approxtune/approxtune/internal/selective"
	"github.com/approxtune/approxtune/internal/selective/policy"
	"github.com/approxtune/approxtune/sweep"
)

func init() {
	scenarios["qr2d-verify"] = qr2dVerify
	scenarios["qr2d-selective"] = qr2dSelective
}

func qrConfig(m, n int, grid sweep.GridShape, b, la int) sweep.Config {
	return sweep.NewConfig(qr2d{}.Params(), map[string]any{"m": m, "n": n, "grid": grid, "b": b, "lookahead": la})
}

// qrSetup builds c's grid and, on its members, an initialized instance (nil
// on the other ranks).
func qrSetup(r *mpitest.R, e *selective.Engine, c sweep.Config) (*selective.Grid, *qrRun) {
	w := qr2d{}
	if err := w.Check(c, r.World.Size()); err != nil {
		r.Fatalf("check %s: %v", c.Label(), err)
	}
	g, inst := setupOn(r, e, w, c)
	if inst == nil {
		return g, nil
	}
	inst.Init()
	return g, inst.(*qrRun)
}

// Full runs factor correctly on every grid shape of 4 ranks (and on grids
// smaller than the world), with and without lookahead, with block rows and
// columns that are not multiples of the grid dimensions, square matrices
// (process rows that run out of active rows), a block size that is not a
// power of two, and both BLAS backends; the check catches a corrupted R, a
// corrupted Householder vector and a corrupted T.
func qr2dVerify(r *mpitest.R) {
	type tc struct {
		m, n int
		grid sweep.GridShape
		b    int
	}
	cases := []tc{
		{256, 128, sweep.GridShape{2, 2}, 32},
		{256, 128, sweep.GridShape{1, 4}, 32},
		{256, 128, sweep.GridShape{4, 1}, 32},
		{352, 160, sweep.GridShape{2, 2}, 32}, // 11 x 5 blocks on 2 x 2
		{352, 160, sweep.GridShape{1, 4}, 32}, // 5 block columns on 4
		{352, 160, sweep.GridShape{4, 1}, 32}, // 11 block rows on 4
		{160, 160, sweep.GridShape{4, 1}, 32}, // square: the last panels leave process rows idle
		{96, 96, sweep.GridShape{2, 2}, 32},
		{360, 120, sweep.GridShape{2, 2}, 24},
		{200, 120, sweep.GridShape{2, 1}, 8}, // on 2 of the 4 ranks
		{64, 64, sweep.GridShape{1, 1}, 16},
	}
	var e *selective.Engine
	for i, backend := range kernels.Backends() {
		be := testEngine(r, backend)
		if i == 0 {
			e = be // the default backend's, for the corruptions below
		}
		for _, c := range cases {
			for la := 0; la <= 1; la++ {
				cfg := qrConfig(c.m, c.n, c.grid, c.b, la)
				g, s := qrSetup(r, be, cfg)
				if s != nil {
					if err := s.Run(context.Background()); err != nil {
						r.Fatalf("run %s: %v", cfg.Label(), err)
					}
					if res := s.Verify(); !(res < 1e-13) {
						r.Errorf("%s %s: residual %v of a full run, want < 1e-13", backend, cfg.Label(), res)
					}
				}
				g.Free()
			}
		}
	}

	// Corruptions, on a 2x2 grid (rank 3 is process (1, 1)).
	cfg := qrConfig(256, 128, sweep.GridShape{2, 2}, 32, 0)
	g, s := qrSetup(r, e, cfg)
	if err := s.Run(context.Background()); err != nil {
		r.Fatalf("run: %v", err)
	}
	if res := s.Verify(); !(res < 1e-13) {
		r.Fatalf("residual %v before corruption", res)
	}
	// Local (0, 1) is global (32, 33): above the diagonal, in R. The last
	// local row is global row 255, column 32 + 1: a Householder vector.
	rIdx, yIdx := 1, (s.mloc-1)*s.nloc+1
	if r.Rank == 3 && (s.grow[0] != 32 || s.gcol[1] != 33 || s.grow[s.mloc-1] != 255) {
		r.Fatalf("layout: local (0,1) is (%d,%d), last row %d", s.grow[0], s.gcol[1], s.grow[s.mloc-1])
	}
	for _, cor := range []struct {
		what string
		buf  []float64
		i    int
		all  bool // on every rank (T is replicated), else on rank 3
	}{
		{"an element of R", s.a, rIdx, false},
		{"an element of a Householder vector", s.a, yIdx, false},
		{"an element of a panel's T", s.ts, 2*32*32 + 3, true},
	} {
		old := cor.buf[cor.i]
		if cor.all || r.Rank == 3 {
			cor.buf[cor.i] += 1e-3
		}
		if res := s.Verify(); !(res > 1e-10) {
			r.Errorf("residual %v after corrupting %s, want the check (threshold 1e-10) to catch it", res, cor.what)
		}
		cor.buf[cor.i] = old
	}
	if res := s.Verify(); !(res < 1e-13) {
		r.Errorf("residual %v after restoring, want < 1e-13", res)
	}
	g.Free()
}

func TestQR2DVerifies(t *testing.T) { mpitest.Run(t, "qr2d-verify", 4) }

// Every policy's selective run at a loose tolerance completes with a finite,
// positive predicted time on every rank and skips kernels; apriori runs its
// counting run first. A full run afterwards still verifies.
func qr2dSelective(r *mpitest.R) {
	e := testEngine(r, kernels.Backends()[0])
	for _, la := range []int{0, 1} {
		cfg := qrConfig(1024, 256, sweep.GridShape{2, 2}, 16, la)
		g, s := qrSetup(r, e, cfg)
		run := func(tr *selective.Track, mode selective.RunMode) selective.RunStats {
			return runOnce(r, e, s, tr, mode)
		}
		for _, pol := range policy.All() {
			tr := selective.NewTrack(pol, 0.5)
			var skipped int64
			for rep := 0; rep < 2; rep++ {
				if tr.NeedsCountingRun() {
					if rs := run(tr, selective.Counting); rs.Executed != 0 {
						r.Errorf("%s %s: counting run (a skeleton) executed %d kernels", cfg.Label(), pol.Name(), rs.Executed)
					}
				}
				rs := run(tr, selective.Selective)
				if !(rs.Total > 0) || math.IsInf(rs.Total, 0) || math.IsNaN(rs.Comp) || math.IsNaN(rs.Comm) {
					r.Errorf("%s %s: path %v (comp %v, comm %v), want finite and positive", cfg.Label(), pol.Name(), rs.Total, rs.Comp, rs.Comm)
				}
				skipped += rs.Skipped
			}
			all := []int64{skipped}
			if err := mpi.Allreduce(r.World, all, all, mpi.Sum); err != nil {
				r.Fatalf("allreduce: %v", err)
			}
			if all[0] == 0 {
				r.Errorf("%s %s: nothing skipped at tolerance 0.5", cfg.Label(), pol.Name())
			}
		}
		run(nil, selective.Off)
		if res := s.Verify(); !(res < 1e-13) {
			r.Errorf("%s: full run after selective runs: residual %v, want < 1e-13", cfg.Label(), res)
		}
		g.Free()
	}
}

func TestQR2DSelective(t *testing.T) { mpitest.Run(t, "qr2d-selective", 4) }
