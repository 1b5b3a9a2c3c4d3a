package workloads

import (
	"slices"
	"testing"

	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/mpitest"
	"github.com/approxtune/approxtune/internal/selective"
	"github.com/approxtune/approxtune/internal/selective/policy"
	"github.com/approxtune/approxtune/sweep"
)

func init() { scenarios["cholesky2d-elide"] = chol2dElide }

// Left-out messages (selective/elide.go) on cholesky2d. Once eager skips
// every kernel of a configuration, its selective runs leave the skipped
// messages out, and predict what the same runs predict with every message
// sent empty with its record (the replay puts the sender's path on the
// receiver either way). Runs with and without left-out messages alternate
// on one track, and a full run afterwards is still correct: no message was
// left unreceived in MPI.
func chol2dElide(r *mpitest.R) {
	e := testEngine(r, kernels.OpenBLAS)
	configs := []sweep.Config{
		chol2dConfig(r, 1024, sweep.GridShape{2, 2}, 32, 1),
		chol2dConfig(r, 1024, sweep.GridShape{4, 1}, 32, 2),
		chol2dConfig(r, 1000, sweep.GridShape{1, 4}, 32, 0), // partial last tile
	}
	tr := selective.NewTrack(policy.Eager{}, 100) // any two samples are enough
	for _, c := range configs {
		g, inst := chol2dSetup(r, e, c)
		// run makes a selective run and returns its prediction (the
		// longest path) and the world's executed, skipped and left-out calls.
		run := func(elide bool) (float64, []int64) {
			e.SetElision(elide)
			rs := runOnce(r, e, inst, tr, selective.Selective)
			n := []int64{rs.Executed, rs.Skipped, rs.Elided}
			if err := mpi.Allreduce(r.World, n, n, mpi.Sum); err != nil {
				r.Fatalf("allreduce: %v", err)
			}
			return chol2dMaxAll(r, rs.Total), n
		}
		// Warm up until eager executes next to nothing. Runs that still
		// execute many calls are not compared: with the messages around
		// them left out, the executed ones are timed with the processes out
		// of step, and their samples differ from the ones timed in step.
		n := []int64{1, 0}
		for try := 0; try < 20 && 200*n[0] > n[0]+n[1]; try++ {
			_, n = run(true)
		}
		if 200*n[0] > n[0]+n[1] {
			r.Fatalf("%s: eager at a tolerance of 100 still executed %d of %d calls after 20 runs", c.Label(), n[0], n[0]+n[1])
		}
		var on, off []float64
		for i := 0; i < 3; i++ {
			t, n := run(false)
			if n[2] != 0 {
				r.Errorf("%s: left out %d messages with elision off", c.Label(), n[2])
			}
			off = append(off, t)
			t, n = run(true)
			if n[2] == 0 {
				r.Errorf("%s: left out no message (executed %d, skipped %d)", c.Label(), n[0], n[1])
			}
			on = append(on, t)
		}
		slices.Sort(on)
		slices.Sort(off)
		if d := on[1]/off[1] - 1; !(d > -0.03 && d < 0.03) {
			r.Errorf("%s: predicted %.4f s with messages left out, %.4f s with them sent (medians of 3): %+.1f%%, want within 3%%",
				c.Label(), on[1], off[1], 100*d)
		}
		if res := chol2dFullRun(r, inst, c.Label()); !(res < 1e-10) {
			r.Errorf("%s: full run after runs with messages left out: residual %v", c.Label(), res)
		}
		g.Free()
	}
}

func TestCholesky2DElide(t *testing.T) { mpitest.Run(t, "cholesky2d-elide", 4) }
