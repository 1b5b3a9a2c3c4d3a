package selective

import (
	"math"
	"testing"

	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/mpitest"
	"github.com/approxtune/approxtune/internal/selective/policy"
)

// greedy is a policy defined here only, to show that a policy is one type:
// it skips a kernel as soon as it has n_min samples, however spread they are
// (alpha = +Inf makes h / (m·sqrt(alpha)) zero). It has no capabilities, so
// it starts every run afresh, shares nothing and promises nothing.
type greedy struct{}

func (greedy) Name() string                       { return "greedy" }
func (greedy) Doc() string                        { return "skip a kernel once it has n_min samples" }
func (greedy) Significance(policy.Kernel) float64 { return math.Inf(1) }

// A policy outside the registry runs through the engine: on every rank the
// first n_min = 2 calls of a spin and of a world allreduce execute and the
// rest are skipped (the allreduce because every member agrees), whatever
// the timings; the next run on the same track starts afresh and does the
// same, since greedy is no policy.Carrier.
func extraPolicy(r *mpitest.R) {
	for _, p := range []policy.Policy{greedy{}, sharingGreedy{}} {
		afreshEachRun(r, p)
	}
}

// sharingGreedy is greedy sharing its statistics over the grid, as eager
// does, but no policy.Carrier: it too starts every run afresh, what it
// learnt of the grid included (a run had skipped the next one's kernels
// from the last one's shared samples, had such a policy been written).
type sharingGreedy struct{ greedy }

func (sharingGreedy) Name() string      { return "sharing-greedy" }
func (sharingGreedy) SharesStatistics() {}

func afreshEachRun(r *mpitest.R, p policy.Policy) {
	e := newEngine(r)
	tr := NewTrack(p, 0.01)
	w, k := e.World(), e.Kernels()
	send, recv := []float64{float64(r.Rank)}, make([]float64, 1)
	const calls = 10
	for run := 0; run < 2; run++ {
		e.Begin(tr, Selective)
		for i := 0; i < calls; i++ {
			k.Spin(0, 50e-6*float64(1+r.Rank)*float64(1+i%3)) // spread samples: greedy skips them anyway
			w.Allreduce(send, recv, mpi.Sum)
		}
		rs, err := e.End()
		if err != nil {
			r.Fatalf("%s run %d: end: %v", p.Name(), run, err)
		}
		if rs.Executed != 4 || rs.Skipped != 2*calls-4 {
			r.Errorf("%s run %d: executed %d, skipped %d; want 4 (two spins, two allreduces) and %d", p.Name(), run, rs.Executed, rs.Skipped, 2*calls-4)
		}
		if !(rs.Total > 0) {
			r.Errorf("%s run %d: path %v, want the skipped kernels' means charged", p.Name(), run, rs.Total)
		}
	}
}

func TestExtraPolicyThroughEngine(t *testing.T) { mpitest.Run(t, "extra-policy", 4) }
