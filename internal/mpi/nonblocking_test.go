package mpi_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/mpi"
)

func TestNonblocking(t *testing.T) { runScenarios(t, "nonblocking") }

func init() { scenario("nonblocking", nonblocking) }

func nonblocking(r *R) {
	w := r.W
	left, right := r.Mod(r.Rank-1), r.Mod(r.Rank+1)

	// Exchange with both neighbours at once, completing with Wait.
	fromLeft := fill[int64](2, -1)
	fromRight := fill[int64](2, -1)
	rl, err := mpi.Irecv(w, fromLeft, left, 1)
	r.Must(err, "Irecv from the left")
	rr, err := mpi.Irecv(w, fromRight, right, 2)
	r.Must(err, "Irecv from the right")
	toRight := []int64{int64(r.Rank), 1}
	toLeft := []int64{int64(r.Rank) + 100, 2}
	sr, err := mpi.Isend(w, toRight, right, 1)
	r.Must(err, "Isend to the right")
	sl, err := mpi.Isend(w, toLeft, left, 2)
	r.Must(err, "Isend to the left")
	// The pinned receive buffers survive collections while pending.
	runtime.GC()
	st, err := mpi.Wait(rl)
	r.Must(err, "Wait for the left Irecv")
	eqStatus(r, "Irecv from the left", st, left, 1, 2)
	st, err = mpi.Wait(rr)
	r.Must(err, "Wait for the right Irecv")
	eqStatus(r, "Irecv from the right", st, right, 2, 2)
	_, err = mpi.Wait(sr)
	r.Must(err, "Wait for the right Isend")
	_, err = mpi.Wait(sl)
	r.Must(err, "Wait for the left Isend")
	eq(r, "Irecv from the left", fromLeft, []int64{int64(left), 1})
	eq(r, "Irecv from the right", fromRight, []int64{int64(right) + 100, 2})

	// Wait on a completed request returns at once, with no error.
	start := time.Now()
	for _, q := range []*mpi.Request{rl, rr, sr, sl} {
		if _, err := mpi.Wait(q); err != nil {
			r.Errorf("second Wait on a completed request: %v", err)
		}
		if done, _, err := mpi.Test(q); !done || err != nil {
			r.Errorf("Test on a completed request = %v, %v; want true, nil", done, err)
		}
	}
	if d := time.Since(start); d > time.Second {
		r.Errorf("Wait/Test on completed requests took %v", d)
	}

	// Waitall over a mix: a request already completed by Wait, a nil entry,
	// pending receives and sends.
	a := fill(3, -1.0)
	b := fill(3, -1.0)
	qa, err := mpi.Irecv(w, a, left, 3)
	r.Must(err, "Irecv a")
	qb, err := mpi.Irecv(w, b, right, 4)
	r.Must(err, "Irecv b")
	s1, err := mpi.Isend(w, []float64{float64(r.Rank), 0.5, -1}, right, 3)
	r.Must(err, "Isend 3")
	s2, err := mpi.Isend(w, []float64{float64(r.Rank) * 2, 1.5, -2}, left, 4)
	r.Must(err, "Isend 4")
	st, err = mpi.Wait(qa)
	r.Must(err, "Wait a")
	eqStatus(r, "Wait a", st, left, 3, 3)
	r.Must(mpi.Waitall([]*mpi.Request{qa, nil, qb, s1, nil, s2}), "Waitall")
	eq(r, "Irecv a", a, []float64{float64(left), 0.5, -1})
	eq(r, "Irecv b (completed by Waitall)", b, []float64{float64(right) * 2, 1.5, -2})
	for i, q := range []*mpi.Request{qa, qb, s1, s2} {
		if done, _, err := mpi.Test(q); !done || err != nil {
			r.Errorf("Test of request %d after Waitall = %v, %v; want true, nil", i, done, err)
		}
		if _, err := mpi.Wait(q); err != nil {
			r.Errorf("Wait of request %d after Waitall: %v", i, err)
		}
	}
	r.Must(mpi.Waitall(nil), "Waitall of nothing")
	r.Must(mpi.Waitall([]*mpi.Request{nil, qa, nil}), "Waitall of nils and completed requests")

	// Test polling: rank 0's receive cannot complete before rank 1 sends,
	// which it does only after the Barrier that rank 0 enters after its
	// first Tests.
	var q *mpi.Request
	buf := fill[int64](5, -1)
	if r.Rank == 0 {
		q, err = mpi.Irecv(w, buf, 1, 5)
		r.Must(err, "Irecv for polling")
		for i := 0; i < 3; i++ {
			done, _, err := mpi.Test(q)
			r.Must(err, "Test before the send")
			if done {
				r.Errorf("Test reported a receive complete before its message was sent")
			}
		}
		runtime.GC()
	}
	r.Must(w.Barrier(), "Barrier")
	switch r.Rank {
	case 1:
		s, err := mpi.Isend(w, []int64{7, 8, 9}, 0, 5)
		r.Must(err, "Isend for polling")
		pollUntil(r, s, "Isend for polling")
	case 0:
		st := pollUntil(r, q, "Irecv for polling")
		eqStatus(r, "Irecv completed by Test", st, 1, 5, 3)
		eq(r, "Irecv completed by Test", buf, []int64{7, 8, 9, -1, -1})
		if done, _, err := mpi.Test(q); !done || err != nil {
			r.Errorf("Test after completion = %v, %v; want true, nil", done, err)
		}
		start := time.Now()
		if _, err := mpi.Wait(q); err != nil {
			r.Errorf("Wait after Test completed the request: %v", err)
		}
		if d := time.Since(start); d > time.Second {
			r.Errorf("Wait on a request completed by Test took %v", d)
		}
	}

	// Zero-length non-blocking messages, and byte buffers.
	qz, err := mpi.Irecv[byte](w, nil, left, 6)
	r.Must(err, "Irecv of nothing")
	bz := fill[byte](3, '?')
	qy, err := mpi.Irecv(w, bz, right, 7)
	r.Must(err, "Irecv of bytes")
	sz, err := mpi.Isend(w, []byte{}, right, 6)
	r.Must(err, "Isend of nothing")
	sy, err := mpi.Isend(w, []byte{'L', byte('0' + r.Rank)}, left, 7)
	r.Must(err, "Isend of bytes")
	st, err = mpi.Wait(qz)
	r.Must(err, "Wait for nothing")
	eqStatus(r, "Irecv of nothing", st, left, 6, 0)
	st, err = mpi.Wait(qy)
	r.Must(err, "Wait for bytes")
	eqStatus(r, "Irecv of bytes", st, right, 7, 2)
	eq(r, "Irecv of bytes", bz, []byte{'L', byte('0' + right), '?'})
	r.Must(mpi.Waitall([]*mpi.Request{sz, sy}), "Waitall for the sends")

	// Every request above is complete and so unpinned: collecting them must
	// not trip the runtime's check for leaked pins.
	rl, rr, sr, sl, qa, qb, s1, s2, q, qz, qy, sz, sy = nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil
	runtime.GC()
	runtime.GC()
	time.Sleep(10 * time.Millisecond) // let finalizers run
	r.Must(w.Barrier(), "final Barrier")
}

// pollUntil calls Test on q until it completes, for at most 20 seconds.
func pollUntil(r *R, q *mpi.Request, what string) mpi.Status {
	deadline := time.Now().Add(20 * time.Second)
	for polls := 1; ; polls++ {
		done, st, err := mpi.Test(q)
		r.Must(err, what+": Test")
		if done {
			return st
		}
		if time.Now().After(deadline) {
			r.Fatalf("%s: not complete after %d Tests", what, polls)
		}
		time.Sleep(100 * time.Microsecond)
	}
}
