package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/mpitest"
)

func TestLostEvents(t *testing.T) { mpitest.Run(t, "lost-events", 4) }

// When rank 0 can no longer send events (the session died, its pipe
// closed), every rank leaves the sweep together at the next run boundary
// with the same answer, and rank 0 tries no further event. A rank that
// left alone would leave the others in a collective forever (the orphaned
// agent the fault campaign caught: rank 0 in MPI_Finalize, the other ranks
// in the sweep). The failure is planted after each of the first events of
// evaluate, tune and a halving search.
func lostEvents(r *mpitest.R) {
	run := testRunner(r)
	run.announce = true
	const space = `"workload":"synthetic","space":{"grid":"2x2","steps":2,"count":1,"mean_us":[100,200]},"policies":["conditional"],"tolerances":[0.5,0.125]`
	broken := errors.New("planted: the session is gone")
	for _, spec := range []string{
		`{` + space + `,"mode":"evaluate","reference_reps":2}`,
		`{` + space + `,"mode":"tune"}`,
		`{` + space + `,"mode":"tune","search":"halving"}`,
	} {
		s, configs := parseSpec(r, spec)
		for k := 0; k < 12; k++ {
			sent, after := 0, 0
			run.lost = nil
			run.emit = func(any) error {
				if sent == k {
					after++
					return broken
				}
				sent++
				return nil
			}
			err := run.sweep(context.Background(), s, configs)
			// Every rank must give the same answer; an Allreduce that
			// completes also shows that no rank is still in the sweep.
			failed := []int64{0}
			if err != nil {
				failed[0] = 1
			}
			all := []int64{0}
			if e := mpi.Allreduce(r.World, failed, all, mpi.Sum); e != nil {
				r.Fatalf("allreduce: %v", e)
			}
			if all[0] != 0 && all[0] != int64(r.World.Size()) {
				r.Errorf("%s, emit failing after %d events: %d of %d ranks failed (this one: %v)", spec, k, all[0], r.World.Size(), err)
			}
			if r.Rank != 0 {
				continue
			}
			if err == nil || !strings.Contains(err.Error(), broken.Error()) {
				r.Errorf("%s, emit failing after %d events: the sweep returned %v, want the send error", spec, k, err)
			}
			if after != 1 {
				r.Errorf("%s, emit failing after %d events: %d events tried after the failure, want none", spec, k, after-1)
			}
		}
	}
}
