package workloads

import (
	"testing"

	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/mpitest"
	"github.com/approxtune/approxtune/internal/selective"
	"github.com/approxtune/approxtune/internal/selective/policy"
	"github.com/approxtune/approxtune/sweep"
)

func init() { scenarios["cholesky2d-cut"] = chol2dCut }

// A selective run of cholesky2d given a cutoff (Engine.SetCutoff) stops at
// its next check once its longest path passes it: fewer calls than a whole
// run, every process told so, a prediction at least the cutoff and short
// of the whole run's. With look-ahead, messages are in flight at the
// check: they complete, left out or sent empty with their records. A cutoff past the whole run changes nothing, the next
// run without one runs whole, and a full run afterwards is correct: no
// message was left in MPI.
func chol2dCut(r *mpitest.R) {
	e := testEngine(r, kernels.OpenBLAS)
	for _, c := range []sweep.Config{
		chol2dConfig(r, 1024, sweep.GridShape{2, 2}, 32, 1),
		chol2dConfig(r, 1000, sweep.GridShape{1, 4}, 32, 0), // partial last tile
	} {
		g, inst := chol2dSetup(r, e, c)
		tr := selective.NewTrack(policy.Eager{}, 100) // any two samples are enough
		// run makes a selective run with the cutoff and returns its
		// prediction, the world's calls and how many processes were cut short.
		run := func(cutoff float64) (float64, int64, int64) {
			e.SetCutoff(cutoff)
			rs := runOnce(r, e, inst, tr, selective.Selective)
			n := []int64{rs.Executed + rs.Skipped, 0}
			if rs.CutShort {
				n[1] = 1
			}
			if err := mpi.Allreduce(r.World, n, n, mpi.Sum); err != nil {
				r.Fatalf("allreduce: %v", err)
			}
			return chol2dMaxAll(r, rs.Total), n[0], n[1]
		}
		for i := 0; i < 3; i++ {
			run(0)
		}
		whole, calls, cut := run(0)
		if cut != 0 {
			r.Fatalf("%s: %d processes cut short without a cutoff", c.Label(), cut)
		}
		// Left out, the skipped messages leave nothing in MPI; sent
		// empty with their records, those in flight at the check must
		// complete.
		for _, elide := range []bool{true, false} {
			e.SetElision(elide)
			p, n, cut := run(whole / 4)
			if cut != int64(g.Procs()) || n >= calls || p < whole/4 || p > 0.9*whole {
				r.Errorf("%s, messages left out %v: with a cutoff of %.4f s (a quarter of the whole run's %.4f s): %d of %d processes cut short, %d calls of %d, predicted %.4f s; want all, fewer calls, a prediction from the cutoff to 0.9 of the whole",
					c.Label(), elide, whole/4, whole, cut, g.Procs(), n, calls, p)
			}
		}
		e.SetElision(true)
		p, n, cut := run(10 * whole)
		if cut != 0 || n != calls || p > 2*whole || p < whole/2 {
			r.Errorf("%s: with a cutoff of 10 times the whole run: %d processes cut short, %d calls of %d, predicted %.4f s of %.4f",
				c.Label(), cut, n, calls, p, whole)
		}
		e.SetCutoff(whole / 4)
		e.Begin(nil, selective.Off) // a cutoff ends with the run it was set for
		if _, err := e.End(); err != nil {
			r.Fatalf("%s: %v", c.Label(), err)
		}
		if _, n, cut = run(0); cut != 0 || n != calls {
			r.Errorf("%s: after a cutoff: %d processes cut short, %d calls of %d", c.Label(), cut, n, calls)
		}
		if res := chol2dFullRun(r, inst, c.Label()); !(res < 1e-10) {
			r.Errorf("%s: full run after runs cut short: residual %v", c.Label(), res)
		}
		g.Free()
	}
}

func TestCholesky2DCutShort(t *testing.T) { mpitest.Run(t, "cholesky2d-cut", 4) }

// cutPoints checks a run about m times, past each m-th of its work, never
// at step 0.
func TestCutPoints(t *testing.T) {
	for _, c := range []struct{ nt, m, min, max int }{{128, 8, 7, 7}, {32, 8, 7, 7}, {8, 8, 3, 7}, {2, 8, 1, 1}, {1, 8, 0, 0}} {
		at := cutPoints(c.nt, c.m)
		k, first := 0, -1
		for i, b := range at {
			if b {
				k++
				if first < 0 {
					first = i
				}
			}
		}
		if len(at) != c.nt || at[0] || k < c.min || k > c.max {
			t.Errorf("cutPoints(%d, %d) = %v: %d checks, want %d-%d, none at step 0", c.nt, c.m, at, k, c.min, c.max)
		}
		// The first check comes after about an eighth of the work.
		if c.nt >= 32 && (first < c.nt/40 || first > c.nt/10) {
			t.Errorf("cutPoints(%d, %d): first check at step %d", c.nt, c.m, first)
		}
	}
}
