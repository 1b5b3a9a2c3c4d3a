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

func init() {
	scenarios["cholesky2d-cut"] = func(r *mpitest.R) {
		cutShort(r, cholesky2d{}, chol2dConfig(r, 1024, sweep.GridShape{2, 2}, 32, 1),
			chol2dConfig(r, 1000, sweep.GridShape{1, 4}, 32, 0)) // partial last tile
	}
	scenarios["cholesky3d-cut"] = func(r *mpitest.R) {
		cutShort(r, cholesky3d{}, chol3dConfig(512, 32, "1"), chol3dConfig(512, 32, "3"))
	}
}

// A selective run of cholesky2d or cholesky3d given a cutoff
// (Engine.SetCutoff) stops at its next check once its longest path passes
// it: fewer calls than a whole run, every process told so, and at a cutoff
// of a sixteenth of the whole run a prediction from the cutoff to 0.45 of
// the whole (the checks come often enough, and cholesky3d unwinds its
// recursion rather than going on with the updates). Not an eighth:
// cholesky3d's left half, before its first top-level update, carries
// about an eighth of the work, so its last check there lands on that
// cutoff and the next one comes after the update, at half the run (seen
// with other packages' tests running beside it). With look-ahead,
// cholesky2d has messages in flight at the check: they complete, left out
// or sent empty with their records. A cutoff past the whole run changes
// nothing, the next run without one runs whole, and a full run afterwards
// is correct: no message was left in MPI.
func cutShort(r *mpitest.R, w Workload, configs ...sweep.Config) {
	e := testEngine(r, kernels.OpenBLAS)
	for _, c := range configs {
		g, inst := setupOn(r, e, w, c)
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
			cutoff := whole / 16
			p, n, cut := run(cutoff)
			if cut != int64(g.Procs()) || n >= calls || p < cutoff || p > 0.45*whole {
				r.Errorf("%s, messages left out %v: with a cutoff of %.4f s (a sixteenth of the whole run's %.4f s): %d of %d processes cut short, %d calls of %d, predicted %.4f s; want all, fewer calls, a prediction from the cutoff to 0.45 of the whole",
					c.Label(), elide, cutoff, whole, cut, g.Procs(), n, calls, p)
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
		if res := chol2dFullRun(r, inst, c.Label()); !(res < 1e-9) {
			r.Errorf("%s: full run after runs cut short: residual %v", c.Label(), res)
		}
		g.Free()
	}
}

func TestCholesky2DCutShort(t *testing.T) { mpitest.Run(t, "cholesky2d-cut", 4) }
func TestCholesky3DCutShort(t *testing.T) { mpitest.Run(t, "cholesky3d-cut", 8) }

// cutPoints checks a run at most once per fraction of its work, the first
// time after about a 32nd of it, never at step 0.
func TestCutPoints(t *testing.T) {
	for _, c := range []struct{ nt, min, max int }{{128, 9, 9}, {32, 8, 9}, {8, 3, 7}, {2, 1, 1}, {1, 0, 0}} {
		at := cutPoints(c.nt)
		k, first := 0, -1
		for i, b := range at {
			if b {
				k++
				if first < 0 {
					first = i
				}
			}
		}
		if len(at) != c.nt || (c.nt > 0 && at[0]) || k < c.min || k > c.max {
			t.Errorf("cutPoints(%d) = %v: %d checks, want %d-%d, none at step 0", c.nt, at, k, c.min, c.max)
		}
		// Work before step k is 1-(1-k/nt)³: a 32nd of it is done by
		// step 0.0105 nt.
		if c.nt >= 128 && (first < 1 || first > c.nt/50) {
			t.Errorf("cutPoints(%d): first check at step %d", c.nt, first)
		}
	}
}
