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
	scenarios["cholesky2d-verify"] = chol2dVerify
	scenarios["cholesky2d-selective"] = chol2dSelective
}

// chol2dConfig builds and checks a configuration.
func chol2dConfig(r *mpitest.R, n int, grid sweep.GridShape, b, la int) sweep.Config {
	w := cholesky2d{}
	c := sweep.NewConfig(w.Params(), map[string]any{"n": n, "grid": grid, "b": b, "lookahead": la})
	if err := w.Check(c, 4); err != nil {
		r.Fatalf("check %s: %v", c.Label(), err)
	}
	return c
}

// chol2dSetup prepares c on its grid; inst is nil on ranks outside the grid.
func chol2dSetup(r *mpitest.R, e *selective.Engine, c sweep.Config) (*selective.Grid, Instance) {
	return setupOn(r, e, cholesky2d{}, c)
}

// chol2dFullRun regenerates the input and runs inst in full (the engine
// off), and returns the largest residual over the world (inst is nil on
// ranks outside the grid, which still take part).
func chol2dFullRun(r *mpitest.R, inst Instance, label string) float64 {
	res := 0.0
	if inst != nil {
		inst.Init()
		if err := inst.Run(context.Background()); err != nil {
			r.Fatalf("%s: full run: %v", label, err)
		}
		res = inst.Verify()
	}
	return chol2dMaxAll(r, res)
}

// chol2dMaxAll is the largest v over the world (NaN wins).
func chol2dMaxAll(r *mpitest.R, v float64) float64 {
	if math.IsNaN(v) {
		v = math.Inf(1)
	}
	buf := []float64{v}
	if err := mpi.Allreduce(r.World, buf, buf, mpi.Max); err != nil {
		r.Fatalf("allreduce: %v", err)
	}
	return buf[0]
}

// Full runs factor correctly on square and non-square grids, at every
// look-ahead depth, with tile counts that are not multiples of the grid
// dimensions, a partial last tile, idle processes and a grid smaller than the
// world; the check catches a corrupted factor and a failed potrf.
func chol2dVerify(r *mpitest.R) {
	e := testEngine(r, kernels.OpenBLAS)
	cases := []struct {
		n    int
		grid sweep.GridShape
		b    int
		la   []int
	}{
		{256, sweep.GridShape{2, 2}, 32, []int{0, 1, 2}},  // nt=8
		{200, sweep.GridShape{2, 2}, 48, []int{0, 1, 2}},  // nt=5, last tile 8
		{300, sweep.GridShape{1, 4}, 64, []int{0, 1, 2}},  // nt=5 on 4 columns, last tile 44
		{300, sweep.GridShape{4, 1}, 64, []int{0, 1, 2}},  // nt=5 on 4 rows
		{224, sweep.GridShape{2, 2}, 32, []int{4}},        // nt=7, depth 4
		{96, sweep.GridShape{2, 2}, 32, []int{1, 3}},      // nt=3: depth past the last column
		{64, sweep.GridShape{4, 1}, 32, []int{0, 1}},      // nt=2 < 4 rows: idle processes
		{130, sweep.GridShape{2, 1}, 40, []int{0, 1, 2}},  // two ranks outside the grid
		{100, sweep.GridShape{1, 4}, 100, []int{0, 1}},    // one tile
		{257, sweep.GridShape{2, 2}, 1 << 8, []int{0, 1}}, // a 1-wide last tile
	}
	for _, cs := range cases {
		for _, la := range cs.la {
			c := chol2dConfig(r, cs.n, cs.grid, cs.b, la)
			g, inst := chol2dSetup(r, e, c)
			for rep := 0; rep < 2; rep++ { // Init regenerates the input
				if res := chol2dFullRun(r, inst, c.Label()); !(res < 1e-10) {
					r.Errorf("%s (run %d): residual %v, want < 1e-10", c.Label(), rep, res)
				}
			}
			if cs.n == 256 && la == 1 {
				// Corrupt one element of L on one rank: the check must see it.
				res := 0.0
				if inst != nil {
					if r.Rank == 3 {
						s := inst.(*chol2dRun)
						s.tiles[len(s.tiles)-1][0] += 1e-2
					}
					res = inst.Verify()
				}
				if res = chol2dMaxAll(r, res); !(res > 1e-10) {
					r.Errorf("%s: residual %v after corrupting L, want the check to catch it", c.Label(), res)
				}
			}
			if cs.n == 200 && la == 1 {
				// A matrix that is not SPD: the potrf of tile (0, 0) fails on
				// rank 0; the run still completes on every rank and the check
				// reports it.
				res := 0.0
				if inst != nil {
					inst.Init()
					if r.Rank == 0 {
						inst.(*chol2dRun).tiles[0][0] = -1
					}
					if err := inst.Run(context.Background()); err != nil {
						r.Fatalf("%s: run of a non-SPD matrix: %v", c.Label(), err)
					}
					res = inst.Verify()
				}
				if res = chol2dMaxAll(r, res); !math.IsInf(res, 1) {
					r.Errorf("%s: residual %v after a failed potrf, want +Inf", c.Label(), res)
				}
			}
			g.Free()
		}
	}
}

func TestCholesky2DVerifies(t *testing.T) { mpitest.Run(t, "cholesky2d-verify", 4) }

// Selective runs at a loose tolerance complete under every policy (apriori
// after its counting run, eager over two configurations' worth of runs),
// predict a finite positive time, skip kernels, and leave the instance able
// to do a correct full run afterwards.
func chol2dSelective(r *mpitest.R) {
	e := testEngine(r, kernels.OpenBLAS)
	configs := []sweep.Config{
		chol2dConfig(r, 512, sweep.GridShape{2, 2}, 64, 1),
		chol2dConfig(r, 480, sweep.GridShape{1, 4}, 64, 0), // partial last tile
		chol2dConfig(r, 448, sweep.GridShape{4, 1}, 64, 2),
	}
	for _, pol := range policy.All() {
		tr := selective.NewTrack(pol, 0.5)
		for _, c := range configs {
			g, inst := chol2dSetup(r, e, c)
			run := func(mode selective.RunMode) selective.RunStats { return runOnce(r, e, inst, tr, mode) }
			if tr.NeedsCountingRun() {
				run(selective.Counting)
			}
			// Whether a kernel's mean is known well enough to skip it
			// depends on the machine's noise: on a loaded CI machine one
			// run at 2^-1 skipped nothing, so a run that skips nothing is
			// made again, up to three runs in all.
			var rs selective.RunStats
			n := []int64{0, 0}
			for try := 0; try < 3 && n[1] == 0; try++ {
				rs = run(selective.Selective)
				n = []int64{rs.Executed, rs.Skipped}
				if err := mpi.Allreduce(r.World, n, n, mpi.Sum); err != nil {
					r.Fatalf("allreduce: %v", err)
				}
			}
			if !(rs.Total > 0) || math.IsInf(rs.Total, 0) || math.IsNaN(rs.Comp) || math.IsNaN(rs.Comm) {
				r.Errorf("%s %s: predicted path %v (comp %v, comm %v), want finite and > 0", pol.Name(), c.Label(), rs.Total, rs.Comp, rs.Comm)
			}
			if n[1] == 0 {
				r.Errorf("%s %s: executed %d, skipped nothing at tolerance 0.5 in three runs", pol.Name(), c.Label(), n[0])
			}
			// A full run after the selective one is correct again.
			res := 0.0
			if inst != nil {
				inst.Init()
				if err := inst.Run(context.Background()); err != nil {
					r.Fatalf("%s %s: full run: %v", pol.Name(), c.Label(), err)
				}
				res = inst.Verify()
			}
			if res = chol2dMaxAll(r, res); !(res < 1e-10) {
				r.Errorf("%s %s: full run after a selective one: residual %v", pol.Name(), c.Label(), res)
			}
			g.Free()
		}
	}
}

func TestCholesky2DSelective(t *testing.T) { mpitest.Run(t, "cholesky2d-selective", 4) }

// The ownership helpers agree with counting by hand.
func TestCholesky2DOwnership(t *testing.T) {
	for nt := 1; nt <= 9; nt++ {
		for pr := 1; pr <= 4; pr++ {
			for pc := 1; pc <= 4; pc++ {
				s := &chol2dRun{nt: nt, pr: pr, pc: pc}
				for r := 0; r < pr; r++ {
					n := 0
					for i := 0; i < nt; i++ {
						if i%pr == r {
							n++
						}
					}
					if got := chol2dCount(nt, r, pr); got != n {
						t.Fatalf("count(%d, %d, %d) = %d, want %d", nt, r, pr, got, n)
					}
					for lo := 0; lo <= nt+1; lo++ {
						want := false
						for i := lo; i < nt; i++ {
							want = want || i%pr == r
						}
						if got := s.hasRow(r, lo); got != want {
							t.Fatalf("nt=%d pr=%d: hasRow(%d, %d) = %v, want %v", nt, pr, r, lo, got, want)
						}
					}
				}
				for c := 0; c < pc; c++ {
					for lo := 0; lo < nt; lo++ {
						for hi := lo - 1; hi < nt; hi++ {
							want := false
							for j := lo; j <= hi; j++ {
								want = want || j%pc == c
							}
							if got := s.hitsCol(c, lo, hi); got != want {
								t.Fatalf("pc=%d: hitsCol(%d, %d, %d) = %v, want %v", pc, c, lo, hi, got, want)
							}
						}
					}
				}
			}
		}
	}
}
