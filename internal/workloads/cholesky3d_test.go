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
	scenarios["cholesky3d-verify"] = cholesky3dVerify
	scenarios["cholesky3d-selective"] = cholesky3dSelective
}

func chol3dConfig(n, b int, strategy string) sweep.Config {
	return sweep.NewConfig(cholesky3d{}.Params(), map[string]any{"n": n, "b": b, "strategy": strategy,
		"grid": sweep.GridShape{2, 2, 2}})
}

// Full runs: every strategy and several base-case sizes (including n = b,
// no recursion, and the deepest recursion, b = c) factor correctly; the check
// catches a corrupted element of L, of L⁻¹, and a layer whose replica
// diverged.
func cholesky3dVerify(r *mpitest.R) {
	e := testEngine(r, kernels.OpenBLAS)
	w := cholesky3d{}
	g, err := e.NewGrid(sweep.GridShape{2, 2, 2})
	if err != nil {
		r.Fatalf("grid: %v", err)
	}
	defer g.Free()
	cases := []struct{ n, b int }{{128, 32}, {256, 64}, {128, 128}, {64, 2}}
	for _, strategy := range []string{"1", "2", "3"} {
		for _, tc := range cases {
			c := chol3dConfig(tc.n, tc.b, strategy)
			if err := w.Check(c, 8); err != nil {
				r.Fatalf("check %s: %v", c.Label(), err)
			}
			inst, err := w.Setup(&Env{Grid: g, K: e.Kernels(), Seed: 5}, c)
			if err != nil {
				r.Fatalf("setup: %v", err)
			}
			for rep := 0; rep < 2; rep++ { // Init must restore everything Run overwrites
				inst.Init()
				if err := inst.Run(context.Background()); err != nil {
					r.Fatalf("%s: run: %v", c.Label(), err)
				}
				if res := inst.Verify(); !(res < 1e-10) {
					r.Errorf("%s rep %d: residual %v, want < 1e-10", c.Label(), rep, res)
				}
			}
			s := inst.(*chol3dRun)
			if tc.n == 128 && tc.b == 32 {
				// A not positive definite (A(0,0) < 0, in every layer): the
				// run still completes on every process (a failing potrf must
				// not leave the others waiting) and the check reports it.
				inst.Init()
				if s.x == 0 && s.y == 0 {
					s.a[0] = -1
				}
				if err := inst.Run(context.Background()); err != nil {
					r.Fatalf("%s: run on a matrix that is not SPD: %v", c.Label(), err)
				}
				if res := inst.Verify(); res != math.MaxFloat64 {
					r.Errorf("%s: residual %v after a failed potrf, want math.MaxFloat64", c.Label(), res)
				}
			}
			if tc.n != 256 {
				continue
			}
			// A few percent off in one element of one process's share, each of
			// L (below the diagonal), L⁻¹, and one replica only.
			for _, corrupt := range []string{"L", "Linv", "layer"} {
				inst.Init()
				if err := inst.Run(context.Background()); err != nil {
					r.Fatalf("run: %v", err)
				}
				switch {
				case corrupt == "L" && r.Rank == 3:
					s.l[7*s.m+2] *= 1.05
				case corrupt == "Linv" && r.Rank == 6:
					s.li[9*s.m+4] += 1e-2 * math.Abs(s.li[9*s.m+4])
				case corrupt == "layer" && r.Rank == 5: // (1, 0, 1): layer 1 only
					s.l[20*s.m+20] *= 1.01
				}
				if res := inst.Verify(); !(res > 1e-10) {
					r.Errorf("%s: residual %v after corrupting %s, want the check to catch it", c.Label(), res, corrupt)
				}
			}
		}
	}
}

func TestCholesky3DVerifies(t *testing.T) { mpitest.Run(t, "cholesky3d-verify", 8) }

// Selective runs at a loose tolerance under every policy (apriori with its
// counting run first), on every strategy: they complete, charge a finite
// positive path, and skip some kernels. Two configurations per track, as a
// sweep does, so eager also starts one with what it already knows.
func cholesky3dSelective(r *mpitest.R) {
	e := testEngine(r, kernels.OpenBLAS)
	w := cholesky3d{}
	g, err := e.NewGrid(sweep.GridShape{2, 2, 2})
	if err != nil {
		r.Fatalf("grid: %v", err)
	}
	defer g.Free()
	var insts []Instance
	var labels []string
	for _, strategy := range []string{"1", "2", "3"} {
		for _, b := range []int{16, 32} {
			c := chol3dConfig(256, b, strategy)
			if err := w.Check(c, 8); err != nil {
				r.Fatalf("check %s: %v", c.Label(), err)
			}
			inst, err := w.Setup(&Env{Grid: g, K: e.Kernels(), Seed: 1}, c)
			if err != nil {
				r.Fatalf("setup: %v", err)
			}
			insts, labels = append(insts, inst), append(labels, c.Label())
		}
	}
	run := func(inst Instance, tr *selective.Track, mode selective.RunMode) selective.RunStats {
		return runOnce(r, e, inst, tr, mode)
	}
	for _, p := range sweep.Policies() {
		pol, err := policy.Lookup(p)
		if err != nil {
			r.Fatalf("%v", err)
		}
		for s := 0; s < len(insts); s += 2 {
			tr := selective.NewTrack(pol, 0.5)
			for i := s; i < s+2; i++ {
				if tr.NeedsCountingRun() {
					run(insts[i], tr, selective.Counting)
				}
				// A run that skips nothing (the machine's noise can keep
				// every mean from being known at 2^-1) is made again, up to
				// three runs in all (as in chol2dSelective).
				var rs selective.RunStats
				skipped := []int64{0, 0}
				for try := 0; try < 3 && skipped[0] == 0; try++ {
					rs = run(insts[i], tr, selective.Selective)
					skipped = []int64{rs.Skipped, rs.Executed}
					if err := mpi.Allreduce(r.World, skipped, skipped, mpi.Sum); err != nil {
						r.Fatalf("allreduce: %v", err)
					}
				}
				if !(rs.Total > 0) || math.IsInf(rs.Total, 0) || math.IsNaN(rs.Comp) || math.IsNaN(rs.Comm) {
					r.Errorf("%s %s: path %+v, want a finite positive time", p, labels[i], rs)
				}
				if skipped[0] == 0 {
					r.Errorf("%s %s: nothing skipped (%d executed) at tolerance 0.5 in three runs", p, labels[i], skipped[1])
				}
			}
		}
	}
}

func TestCholesky3DSelective(t *testing.T) { mpitest.Run(t, "cholesky3d-selective", 8) }
