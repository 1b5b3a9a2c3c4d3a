package selective

import (
	"slices"
	"testing"

	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/mpitest"
	"github.com/approxtune/approxtune/internal/selective/policy"
)

// Left-out messages (elide.go) with blocking (Send to Recv) and
// non-blocking (Isend to Irecv) messages both ways, each after a spin of its sender, on the row
// communicators of a 2x2 grid that declare exact receives (a broadcast
// down the columns carries eager's shares across the other axis). Once
// eager skips everything, later runs leave the messages out; they predict
// what runs with the messages sent predict, alternating on one track; and
// with the engine off afterwards every message still arrives whole, so none
// was left unreceived in MPI.
func p2pElide(r *mpitest.R) {
	e := newEngine(r)
	g, err := e.NewGrid([]int{2, 2})
	if err != nil {
		r.Fatalf("grid: %v", err)
	}
	row, col := g.Along(1), g.Along(0)
	row.ExactReceives()
	me, peer := row.Rank(), 1-row.Rank()
	k := e.Kernels()
	buf, small := make([]float64, 64), make([]float64, 4)
	exchange := func() {
		for i := 0; i < 8; i++ {
			from := i % 2   // the sender's rank in the row
			if me == from { // the path runs through both: 8 ms where its messages carry it, 4 ms where not
				k.Spin(4, 0.001)
			}
			if i%4 < 2 { // blocking: Send pairs with Recv
				if me == from {
					row.Send(buf, peer, i)
				} else {
					row.Recv(buf, peer, i)
				}
			} else if me == from {
				row.Isend(buf, peer, i).Wait()
			} else {
				row.Irecv(buf, peer, i).Wait()
			}
			col.Bcast(small, 0)
		}
	}
	tr := NewTrack(policy.Eager{}, 1)
	run := func(elide bool) (float64, []int64) {
		e.SetElision(elide)
		e.Begin(tr, Selective)
		exchange()
		rs, err := e.End()
		if err != nil {
			r.Fatalf("end: %v", err)
		}
		n := []int64{rs.Executed, rs.Skipped, rs.Elided}
		if err := mpi.Allreduce(r.World, n, n, mpi.Sum); err != nil {
			r.Fatalf("allreduce: %v", err)
		}
		t := []float64{rs.Total}
		if err := mpi.Allreduce(r.World, t, t, mpi.Max); err != nil {
			r.Fatalf("allreduce: %v", err)
		}
		return t[0], n
	}
	n := []int64{0, 0, 0}
	for try := 0; try < 30 && n[2] == 0; try++ {
		_, n = run(true)
	}
	if n[2] == 0 {
		r.Fatalf("no message left out in 30 runs (last: executed %d, skipped %d)", n[0], n[1])
	}
	var on, off []float64
	for i := 0; i < 3; i++ {
		t, n := run(false)
		if n[2] != 0 {
			r.Errorf("left out %d messages with elision off", n[2])
		}
		off = append(off, t)
		t, n = run(true)
		if n[2] == 0 {
			r.Errorf("left out no message (executed %d, skipped %d)", n[0], n[1])
		}
		on = append(on, t)
	}
	slices.Sort(on)
	slices.Sort(off)
	if d := on[1]/off[1] - 1; !(d > -0.05 && d < 0.05) {
		r.Errorf("predicted %.4f s with messages left out, %.4f s with them sent (medians of 3): %+.1f%%, want within 5%%", on[1], off[1], 100*d)
	}
	// The engine off: every message travels whole.
	e.Begin(nil, Off)
	for i := range buf {
		buf[i] = float64(100*r.Rank + i)
	}
	want := float64(100*row.ranks[peer] + 7)
	if me == 1 {
		buf[7] = -1
	}
	if me == 0 {
		row.Send(buf, peer, 99)
	} else {
		row.Recv(buf, peer, 99)
		if buf[7] != want {
			r.Errorf("full run after left-out messages: received %v, want %v", buf[7], want)
		}
	}
	if _, err := e.End(); err != nil {
		r.Fatalf("end: %v", err)
	}
	g.Free()
}

func TestLeftOutMessages(t *testing.T) { mpitest.Run(t, "p2p-elide", 4) }
