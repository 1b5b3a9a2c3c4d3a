package agent

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/approxtune/approxtune/internal/format"
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
// snapshot of another world size, or one a rank lacks or cannot read,
// leaves every rank's track fresh, as a sweep's first configuration has
// it. It is collective over the world and returns what it did for the
// sweep's warnings ("" when every carried snapshot was taken).
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
		what := name + " at " + format.Tolerance(tol)
		ok := int64(1)
		if data := c.Rank(r.world.Rank()); len(c.Ranks) != r.world.Size() || data == nil || t.tr.Restore(data) != nil {
			ok = 0
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

// maxCarried is the most a carried event may hold (every rank's
// statistics of one policy and tolerance): the protocol's lines stop at 64
// MiB, and a resume sends them all back in one command. Beyond it (some
// 400 ranks of cholesky3d's 37 KB each) nothing is sent, and a resume
// starts that policy afresh, as it says.
const maxCarried = 16 << 20

// carry sends, after configuration i, the statistics of every carrying
// tally whose run of i was reported (sw.reported; a run left out, for want
// of its references, runs again on resume): each rank's track snapshot,
// gathered on rank 0 into one sweep.Carried event. It is collective over
// the world, every rank taking part whatever its snapshot gave: a rank
// whose snapshot failed sends none, and the event is not sent (the
// session keeps the one before). Only a session, which can resume the
// sweep, is sent them (r.announce): a sweep file's output leaves them out.
func (sw *sweepRun) carry(i int) error {
	r := sw.r
	if !r.announce {
		return nil
	}
	for _, t := range sw.reported {
		if !carries(t) {
			continue
		}
		name, tol := t.tr.Policy().Name(), t.tr.Tolerance
		data, err := t.tr.Snapshot()
		if err != nil {
			data = nil // told to rank 0 as a length of 0
		}
		size := r.world.Size()
		lens := make([]int64, size)
		if err := mpi.Gather(r.world, []int64{int64(len(data))}, lens, 0); err != nil {
			return fmt.Errorf("gather carried statistics' sizes: %w", err)
		}
		if !r.root() {
			if len(data) > 0 {
				if err := mpi.Send(r.world, data, 0, carriedTag); err != nil {
					return fmt.Errorf("send carried statistics: %w", err)
				}
			}
			continue
		}
		ev := sweep.Carried{Type: sweep.TypeCarried, V: sweep.ProtocolVersion, Index: i, Policy: name, Tolerance: tol,
			Ranks: make([]json.RawMessage, size)}
		whole, total := true, int64(0)
		for p := 0; p < size; p++ {
			whole, total = whole && lens[p] > 0, total+lens[p]
			if p == 0 || lens[p] == 0 {
				continue
			}
			buf := make([]byte, lens[p])
			if _, err := mpi.Recv(r.world, buf, p, carriedTag); err != nil {
				return fmt.Errorf("receive rank %d's carried statistics: %w", p, err)
			}
			ev.Ranks[p] = buf
		}
		ev.Ranks[0] = data
		if !whole || total > maxCarried {
			continue
		}
		if err := r.send(ev); err != nil {
			return err
		}
	}
	return nil
}
