package mpi_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/approxtune/approxtune/internal/mpi"
)

func TestErrors(t *testing.T) { runScenarios(t, "errors") }

// TestRootBufferTooSmall: Reduce, Gather, Scatter and Allgather refuse a
// recv (or send) slice on root too small for the call, instead of letting MPI
// write past the slice's end.
func TestRootBufferTooSmall(t *testing.T) { runScenarios(t, "toosmall") }

func init() {
	scenario("errors", errorsScenario)
	scenario("toosmall", tooSmall)
}

// mpiError checks that err is an *mpi.Error from the MPI routine op.
func mpiError(r *R, what string, err error, op string) {
	var me *mpi.Error
	switch {
	case err == nil:
		r.Errorf("%s: no error", what)
	case !errors.As(err, &me):
		r.Errorf("%s: error %q (%T), want an *mpi.Error", what, err, err)
	case me.Op != op || me.Msg == "" || me.Code == 0:
		r.Errorf("%s: %#v, want Op %q, a message and a non-zero code", what, me, op)
	case strings.ContainsRune(me.Msg, 0):
		r.Errorf("%s: Msg %q contains a NUL", what, me.Msg)
	case !strings.Contains(err.Error(), op) || !strings.Contains(err.Error(), me.Msg):
		r.Errorf("%s: Error() = %q, want it to name %s and say %q", what, err.Error(), op, me.Msg)
	}
}

// goError checks that err is an error found before any MPI call: not an
// *mpi.Error, and naming the function.
func goError(r *R, what string, err error, fn string) {
	var me *mpi.Error
	switch {
	case err == nil:
		r.Errorf("%s: no error", what)
	case errors.As(err, &me):
		r.Errorf("%s: %v comes from MPI; want the binding to refuse before calling it", what, err)
	case !strings.Contains(err.Error(), fn):
		r.Errorf("%s: error %q does not name %s", what, err, fn)
	}
}

func errorsScenario(r *R) {
	w := r.W

	// Errors MPI finds in the arguments come back as *mpi.Error on every
	// rank (MPI_ERRORS_RETURN), and no rank aborts.
	mpiError(r, "Bcast with root = Size()", mpi.Bcast(w, []float64{1}, w.Size()), "MPI_Bcast")
	mpiError(r, "Bcast with root -5", mpi.Bcast(w, []int64{1}, -5), "MPI_Bcast")
	mpiError(r, "Reduce with root 99", mpi.Reduce(w, []int64{1}, make([]int64, 1), mpi.Sum, 99), "MPI_Reduce")
	mpiError(r, "Send to rank 99", mpi.Send(w, []float64{1, 2}, 99, 0), "MPI_Send")
	mpiError(r, "Send with tag -5", mpi.Send(w, []float64{1}, r.Mod(r.Rank+1), -5), "MPI_Send")
	_, err := mpi.Recv(w, make([]byte, 4), 99, 0)
	mpiError(r, "Recv from rank 99", err, "MPI_Recv")
	_, err = mpi.Sendrecv(w, []int64{1}, 99, 0, make([]int64, 1), r.Rank, 0)
	mpiError(r, "Sendrecv to rank 99", err, "MPI_Sendrecv")
	q, err := mpi.Isend(w, []float64{1, 2, 3}, 99, 0)
	mpiError(r, "Isend to rank 99", err, "MPI_Isend")
	if q != nil {
		r.Errorf("Isend to rank 99 returned a request as well as an error")
	}
	q, err = mpi.Irecv(w, make([]int64, 3), 99, 0)
	mpiError(r, "Irecv from rank 99", err, "MPI_Irecv")
	if q != nil {
		r.Errorf("Irecv from rank 99 returned a request as well as an error")
	}

	// Communicators made from World inherit its error handler: their
	// errors come back too, instead of aborting the job.
	d, err := w.Dup()
	r.Must(err, "Dup")
	mpiError(r, "Send to rank 99 on a Dup", mpi.Send(d, []int64{1}, 99, 0), "MPI_Send")
	half, err := w.Split(r.Rank/2, r.Rank)
	r.Must(err, "Split")
	mpiError(r, "Bcast with root 2 on a 2-rank Split comm", mpi.Bcast(half, []byte{1}, 2), "MPI_Bcast")
	one := []int64{int64(r.Rank)}
	r.Must(mpi.Allreduce(half, one, one, mpi.Sum), "Allreduce on the Split comm after an error")
	eq(r, "Allreduce on the Split comm after an error", one, []int64{[]int64{0 + 1, 2 + 3}[r.Rank/2]})
	r.Must(d.Free(), "Free of the Dup")
	r.Must(half.Free(), "Free of the Split comm")

	// Slices too small for the call are refused before MPI sees them.
	goError(r, "Allgather into 3 elements", mpi.Allgather(w, []float64{1}, make([]float64, 3)), "Allgather")
	goError(r, "Allgather of 2 each into 7", mpi.Allgather(w, []int64{1, 2}, make([]int64, 7)), "Allgather")
	goError(r, "Allreduce of 3 into 2", mpi.Allreduce(w, []float64{1, 2, 3}, make([]float64, 2), mpi.Sum), "Allreduce")

	// The process, and the communicator, go on working.
	x := []int64{int64(r.Rank) + 1}
	sum := make([]int64, 1)
	r.Must(mpi.Allreduce(w, x, sum, mpi.Sum), "Allreduce after the errors")
	eq(r, "Allreduce after the errors", sum, []int64{10})
	b := []float64{-1}
	if r.Rank == 3 {
		b[0] = 3.5
	}
	r.Must(mpi.Bcast(w, b, 3), "Bcast after the errors")
	eq(r, "Bcast after the errors", b, []float64{3.5})
	got := []int64{-1}
	st, err := mpi.Sendrecv(w, x, r.Mod(r.Rank+1), 0, got, r.Mod(r.Rank-1), 0)
	r.Must(err, "Sendrecv after the errors")
	eqStatus(r, "Sendrecv after the errors", st, r.Mod(r.Rank-1), 0, 1)
	eq(r, "Sendrecv after the errors", got, []int64{int64(r.Mod(r.Rank-1)) + 1})
}

// tooSmall checks that the rooted collectives refuse a root buffer too small
// for the call. Each rank does it alone, on a communicator of its own, so that
// a binding that did call MPI could neither hang nor leave stray messages on
// World; the slices are views of longer arrays, so that a write past their
// length lands where the check sees it instead of corrupting memory.
func tooSmall(r *R) {
	self, err := r.W.Split(r.Rank, 0)
	r.Must(err, "Split into single-rank comms")
	if self.Size() != 1 || self.Rank() != 0 {
		r.Fatalf("single-rank comm: rank %d of %d", self.Rank(), self.Size())
	}
	defer func() { r.Must(self.Free(), "Free of the single-rank comm") }()

	// Sanity: with room enough, each works on one rank.
	ok := make([]float64, 2)
	r.Must(mpi.Reduce(self, []float64{1, 2}, ok, mpi.Sum, 0), "Reduce on one rank")
	eq(r, "Reduce on one rank", ok, []float64{1, 2})

	back := fill(4, -1.0)
	err = mpi.Reduce(self, []float64{1, 2, 3}, back[:1], mpi.Sum, 0)
	goError(r, "Reduce of 3 elements into a 1-element recv on root", err, "Reduce")
	eq(r, "array behind the 1-element Reduce recv", back, fill(4, -1.0))

	backI := fill[int64](4, -1)
	err = mpi.Gather(self, []int64{1, 2, 3}, backI[:2], 0)
	goError(r, "Gather of 3 elements into a 2-element recv on root", err, "Gather")
	eq(r, "array behind the 2-element Gather recv", backI, fill[int64](4, -1))

	backB := fill[byte](4, '?')
	err = mpi.Scatter(self, []byte("ab"), backB[:3], 0)
	goError(r, "Scatter of 2 bytes in 3-byte pieces", err, "Scatter")
	eq(r, "array behind the Scatter recv", backB, fill[byte](4, '?'))

	back = fill(4, -1.0)
	err = mpi.Allgather(self, []float64{1, 2}, back[:1])
	goError(r, "Allgather of 2 elements into 1 on one rank", err, "Allgather")
	eq(r, "array behind the 1-element Allgather recv", back, fill(4, -1.0))
}
