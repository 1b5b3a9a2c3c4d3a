package agent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/selective"
	"github.com/approxtune/approxtune/internal/selective/policy"
	"github.com/approxtune/approxtune/sweep"
)

// carriedTag is the tag of the carried statistics' messages on the world
// communicator; like the timelines' (traceTag), they are sent at a
// configuration's end, when no other world message is pending.
const carriedTag = 7402

// carries reports whether t's policy keeps its kernels' statistics from one
// configuration to the next (policy.Carrier).
func carries(t *tally) bool {
	_, ok := t.tr.Policy().(policy.Carrier)
	return ok
}

// restoreCarried starts each carrying tally from the statistics a resumed
// sweep's spec brought (sweep.Spec.Carried), on every rank or on none: a
// snapshot of another world size, or one a rank cannot read, leaves every
// rank's track fresh, as a sweep's first configuration has it. It is
// collective over the world and returns what it did for the sweep's
// warnings ("" when every carried snapshot was taken).
func (r *runner) restoreCarried(spec *sweep.Spec, tallies []*tally) (string, error) {
	if len(spec.Carried) == 0 {
		return "", nil
	}
	var fresh []string
	for _, t := range tallies {
		if !carries(t) {
			continue
		}
		name, tol := t.tr.Policy().Name(), t.tr.Tolerance
		c := spec.CarriedFor(name, tol)
		if c == nil {
			continue
		}
		what := fmt.Sprintf("%s at %g", name, tol)
		ok := int64(1)
		if len(c.Ranks) != r.world.Size() {
			ok = 0
		} else if data := c.Rank(r.world.Rank()); data != nil {
			if err := t.tr.Restore(data); err != nil {
				ok = 0
			}
		}
		all := []int64{0}
		if err := mpi.Allreduce(r.world, []int64{ok}, all, mpi.Min); err != nil {
			return "", fmt.Errorf("agree on the carried statistics: %w", err)
		}
		if all[0] == 0 {
			t.tr = selective.NewTrack(t.tr.Policy(), tol)
			fresh = append(fresh, what)
		}
	}
	if len(fresh) == 0 {
		return "", nil
	}
	return fmt.Sprintf("the kernel statistics %s had before the sweep stopped were not taken (another number of ranks, or unreadable): its resumed runs start afresh",
		strings.Join(fresh, ", ")), nil
}

// carry sends, after configuration i, the statistics of every carrying
// tally that ran there: each rank's track snapshot, gathered on rank 0 into
// one sweep.Carried event. It is collective over the world. Only a
// session, which can resume the sweep, is sent them (r.announce): a sweep
// file's output leaves them out.
func (sw *sweepRun) carry(i int) error {
	r := sw.r
	if !r.announce {
		return nil
	}
	for _, t := range sw.tallies {
		name, tol := t.tr.Policy().Name(), t.tr.Tolerance
		if !carries(t) || !sw.spec.Wants(i, name, tol) {
			continue
		}
		data, err := t.tr.Snapshot()
		if err != nil {
			return fmt.Errorf("%s at %g: snapshot: %w", name, tol, err)
		}
		size := r.world.Size()
		lens := make([]int64, size)
		if err := mpi.Gather(r.world, []int64{int64(len(data))}, lens, 0); err != nil {
			return fmt.Errorf("gather carried statistics' sizes: %w", err)
		}
		if !r.root() {
			if err := mpi.Send(r.world, data, 0, carriedTag); err != nil {
				return fmt.Errorf("send carried statistics: %w", err)
			}
			continue
		}
		ev := sweep.Carried{Type: sweep.TypeCarried, V: sweep.ProtocolVersion, Index: i, Policy: name, Tolerance: tol,
			Ranks: make([]json.RawMessage, size)}
		ev.Ranks[0] = data
		for p := 1; p < size; p++ {
			buf := make([]byte, lens[p])
			if _, err := mpi.Recv(r.world, buf, p, carriedTag); err != nil {
				return fmt.Errorf("receive rank %d's carried statistics: %w", p, err)
			}
			ev.Ranks[p] = buf
		}
		if err := r.send(ev); err != nil {
			return err
		}
	}
	return nil
}
