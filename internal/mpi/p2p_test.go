package mpi_test

import (
	"errors"
	"testing"

	"github.com/approxtune/approxtune/internal/mpi"
)

func TestPointToPoint(t *testing.T) { runScenarios(t, "p2p") }

func init() { scenario("p2p", p2p) }

func p2p(r *R) {
	w := r.W
	next, prev := r.Mod(r.Rank+1), r.Mod(r.Rank-1)

	// A ring of blocking Send/Recv: even ranks send first, odd ranks receive
	// first, so nothing relies on eager buffering.
	send := []float64{float64(r.Rank), float64(r.Rank) * 2, -0.5}
	got := fill(3, -1.0)
	var st mpi.Status
	var err error
	if r.Rank%2 == 0 {
		r.Must(mpi.Send(w, send, next, 10+r.Rank), "ring Send")
		st, err = mpi.Recv(w, got, prev, 10+prev)
		r.Must(err, "ring Recv")
	} else {
		st, err = mpi.Recv(w, got, prev, 10+prev)
		r.Must(err, "ring Recv")
		r.Must(mpi.Send(w, send, next, 10+r.Rank), "ring Send")
	}
	eqStatus(r, "ring Recv", st, prev, 10+prev, 3)
	eq(r, "ring Recv from the previous rank", got, []float64{float64(prev), float64(prev) * 2, -0.5})

	// AnySource and AnyTag: ranks 1..3 each send to 0, which learns who
	// sent what from the Status.
	if r.Rank == 0 {
		seen := map[int]bool{}
		for i := 0; i < 3; i++ {
			b := []int64{-1, -1}
			st, err := mpi.Recv(w, b, mpi.AnySource, mpi.AnyTag)
			r.Must(err, "Recv from AnySource with AnyTag")
			if st.Source < 1 || st.Source > 3 || seen[st.Source] {
				r.Errorf("Recv from AnySource: Source %d (already seen: %v)", st.Source, seen)
				continue
			}
			seen[st.Source] = true
			eqStatus(r, "Recv from AnySource with AnyTag", st, st.Source, 20+st.Source, 1)
			eq(r, "message from AnySource", b, []int64{int64(st.Source) * 100, -1})
		}
	} else {
		r.Must(mpi.Send(w, []int64{int64(r.Rank) * 100}, 0, 20+r.Rank), "Send to rank 0")
	}
	// AnySource with a fixed tag, and a fixed source with AnyTag.
	if r.Rank == 2 {
		r.Must(mpi.Send(w, []byte("tagged"), 3, 31), "Send tag 31")
		r.Must(mpi.Send(w, []byte("any"), 3, 32), "Send tag 32")
	}
	if r.Rank == 3 {
		b := make([]byte, 16)
		st, err := mpi.Recv(w, b, mpi.AnySource, 31)
		r.Must(err, "Recv from AnySource with tag 31")
		eqStatus(r, "Recv from AnySource with tag 31", st, 2, 31, 6)
		eq(r, "Recv from AnySource with tag 31", b[:st.Count], []byte("tagged"))
		st, err = mpi.Recv(w, b, 2, mpi.AnyTag)
		r.Must(err, "Recv from rank 2 with AnyTag")
		eqStatus(r, "Recv from rank 2 with AnyTag", st, 2, 32, 3)
		eq(r, "Recv from rank 2 with AnyTag", b[:st.Count], []byte("any"))
	}

	// Sendrecv shifts the ring one way with int64s and the other with bytes.
	ib := fill[int64](2, -1)
	st, err = mpi.Sendrecv(w, []int64{int64(r.Rank), int64(r.Rank) << 40}, next, 40, ib, prev, 40)
	r.Must(err, "Sendrecv shift up")
	eqStatus(r, "Sendrecv shift up", st, prev, 40, 2)
	eq(r, "Sendrecv shift up", ib, []int64{int64(prev), int64(prev) << 40})
	bb := fill[byte](4, '?')
	st, err = mpi.Sendrecv(w, []byte{'r', '0' + byte(r.Rank)}, prev, 41+r.Rank, bb, next, mpi.AnyTag)
	r.Must(err, "Sendrecv shift down")
	eqStatus(r, "Sendrecv shift down", st, next, 41+next, 2)
	eq(r, "Sendrecv shift down", bb, []byte{'r', '0' + byte(next), '?', '?'})
	// Sendrecv with itself.
	self := []float64{0}
	st, err = mpi.Sendrecv(w, []float64{float64(r.Rank) + 0.5}, r.Rank, 42, self, r.Rank, 42)
	r.Must(err, "Sendrecv with itself")
	eqStatus(r, "Sendrecv with itself", st, r.Rank, 42, 1)
	eq(r, "Sendrecv with itself", self, []float64{float64(r.Rank) + 0.5})

	// A short message into a long buffer: Count says how much came, and the
	// rest of the buffer is untouched.
	long := fill(10, -1.0)
	st, err = mpi.Sendrecv(w, []float64{1, 2, float64(r.Rank)}, next, 50, long, prev, 50)
	r.Must(err, "Sendrecv of 3 into 10")
	eqStatus(r, "Sendrecv of 3 into 10", st, prev, 50, 3)
	eq(r, "Sendrecv of 3 into 10", long, []float64{1, 2, float64(prev), -1, -1, -1, -1, -1, -1, -1})
	if r.Rank%2 == 0 {
		r.Must(mpi.Send(w, []byte("hello"), next, 51), "Send of 5 bytes")
	} else {
		b := fill[byte](8, '.')
		st, err := mpi.Recv(w, b, prev, 51)
		r.Must(err, "Recv of 5 bytes into 8")
		eqStatus(r, "Recv of 5 bytes into 8", st, prev, 51, 5)
		eq(r, "Recv of 5 bytes into 8", b, []byte("hello..."))
	}

	// Zero-length messages, into empty and non-empty buffers.
	if r.Rank%2 == 0 {
		r.Must(mpi.Send(w, []float64{}, next, 60), "Send of nothing")
		r.Must(mpi.Send[int64](w, nil, next, 61), "Send of a nil slice")
	} else {
		b := fill(4, 9.0)
		st, err := mpi.Recv(w, b, prev, 60)
		r.Must(err, "Recv of nothing into 4")
		eqStatus(r, "Recv of nothing into 4", st, prev, 60, 0)
		eq(r, "buffer after receiving nothing", b, fill(4, 9.0))
		st, err = mpi.Recv[int64](w, nil, prev, 61)
		r.Must(err, "Recv of nothing into nil")
		eqStatus(r, "Recv of nothing into nil", st, prev, 61, 0)
	}
	st, err = mpi.Sendrecv(w, []byte{}, next, 62, nil, prev, 62)
	r.Must(err, "Sendrecv of nothing")
	eqStatus(r, "Sendrecv of nothing", st, prev, 62, 0)

	// A message longer than the buffer is an MPI error (truncation), and
	// the ring goes on working afterwards.
	if r.Rank%2 == 0 {
		r.Must(mpi.Send(w, []int64{1, 2, 3, 4}, next, 70), "Send of 4")
	} else {
		_, err := mpi.Recv(w, make([]int64, 2), prev, 70)
		var me *mpi.Error
		if !errors.As(err, &me) {
			r.Errorf("Recv of 4 elements into 2: error %v, want an *mpi.Error", err)
		} else if me.Op != "MPI_Recv" || me.Msg == "" || me.Code == 0 {
			r.Errorf("Recv of 4 elements into 2: %+v, want Op MPI_Recv, a message and a code", me)
		}
	}
	ib = fill[int64](1, -1)
	st, err = mpi.Sendrecv(w, []int64{int64(r.Rank)}, next, 71, ib, prev, 71)
	r.Must(err, "Sendrecv after a truncated receive")
	eqStatus(r, "Sendrecv after a truncated receive", st, prev, 71, 1)
	eq(r, "Sendrecv after a truncated receive", ib, []int64{int64(prev)})
}
