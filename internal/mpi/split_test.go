package mpi_test

import (
	"testing"

	"github.com/approxtune/approxtune/internal/launch"
	"github.com/approxtune/approxtune/internal/mpi"
)

func TestSplit(t *testing.T) { runScenarios(t, "split") }

func init() { scenario("split", split) }

// split arranges the 4 ranks as a 2x2 grid:
//
//	row 0: ranks 0 1
//	row 1: ranks 2 3
func split(r *R) {
	w := r.W
	rowIdx, colIdx := r.Rank/2, r.Rank%2

	row, err := w.Split(rowIdx, r.Rank)
	r.Must(err, "Split into rows")
	col, err := w.Split(colIdx, r.Rank)
	r.Must(err, "Split into columns")
	if row == nil || col == nil {
		r.Fatalf("Split with a defined color returned a nil Comm (row %v, col %v)", row, col)
	}
	if row.Size() != 2 || row.Rank() != colIdx {
		r.Errorf("row comm: rank %d of %d, want %d of 2", row.Rank(), row.Size(), colIdx)
	}
	if col.Size() != 2 || col.Rank() != rowIdx {
		r.Errorf("column comm: rank %d of %d, want %d of 2", col.Rank(), col.Size(), rowIdx)
	}

	// Bcast along rows from each row's rank 1 (world ranks 1 and 3).
	b := []int64{-1}
	if row.Rank() == 1 {
		b[0] = int64(r.Rank) * 10
	}
	r.Must(mpi.Bcast(row, b, 1), "Bcast along the row")
	eq(r, "Bcast along the row", b, []int64{int64(rowIdx*2+1) * 10})

	// Bcast along columns from each column's rank 0 (world ranks 0 and 1).
	f := []float64{-1}
	if col.Rank() == 0 {
		f[0] = float64(r.Rank) + 0.5
	}
	r.Must(mpi.Bcast(col, f, 0), "Bcast along the column")
	eq(r, "Bcast along the column", f, []float64{float64(colIdx) + 0.5})

	// Allreduce along rows and columns: sums of rank+1.
	s := []int64{int64(r.Rank) + 1}
	rs := make([]int64, 1)
	r.Must(mpi.Allreduce(row, s, rs, mpi.Sum), "Allreduce along the row")
	eq(r, "row sum of rank+1", rs, []int64{[]int64{1 + 2, 3 + 4}[rowIdx]})
	cs := make([]int64, 1)
	r.Must(mpi.Allreduce(col, s, cs, mpi.Sum), "Allreduce along the column")
	eq(r, "column sum of rank+1", cs, []int64{[]int64{1 + 3, 2 + 4}[colIdx]})
	cm := []float64{float64(r.Rank)}
	r.Must(mpi.Allreduce(col, cm, cm, mpi.Max), "in-place Allreduce Max along the column")
	eq(r, "column max of rank", cm, []float64{float64(2 + colIdx)})
	// MaxLoc reports the rank in the sub-communicator.
	v, loc, err := mpi.AllreduceMaxLoc(row, float64(r.Rank))
	r.Must(err, "AllreduceMaxLoc along the row")
	if v != float64(rowIdx*2+1) || loc != 1 {
		r.Errorf("AllreduceMaxLoc along the row = (%v, %d), want (%d, 1)", v, loc, rowIdx*2+1)
	}

	// The key orders the new ranks: a negated key reverses them.
	rev, err := w.Split(0, -r.Rank)
	r.Must(err, "Split with reversed keys")
	if rev.Size() != 4 || rev.Rank() != 3-r.Rank {
		r.Errorf("reversed comm: rank %d of %d, want %d of 4", rev.Rank(), rev.Size(), 3-r.Rank)
	}
	g := make([]int64, 4)
	r.Must(mpi.Allgather(rev, []int64{int64(r.Rank)}, g), "Allgather on the reversed comm")
	eq(r, "world ranks in reversed order", g, []int64{3, 2, 1, 0})

	// Undefined leaves the odd ranks out.
	color := 0
	if r.Rank%2 == 1 {
		color = mpi.Undefined
	}
	even, err := w.Split(color, r.Rank)
	r.Must(err, "Split with Undefined")
	if r.Rank%2 == 1 {
		if even != nil {
			r.Errorf("Split with color Undefined returned %+v, want nil", even)
		}
	} else {
		if even == nil {
			r.Fatalf("Split with color 0 returned nil")
		}
		if even.Size() != 2 || even.Rank() != r.Rank/2 {
			r.Errorf("even comm: rank %d of %d, want %d of 2", even.Rank(), even.Size(), r.Rank/2)
		}
		es := []int64{int64(r.Rank)}
		r.Must(mpi.Allreduce(even, es, es, mpi.Sum), "Allreduce on the even comm")
		eq(r, "sum of the even ranks", es, []int64{0 + 2})
	}

	splitDup(r)

	// Free everything made here; freeing World is an error and leaves it
	// usable.
	for _, c := range []struct {
		name string
		c    *mpi.Comm
	}{{"row", row}, {"column", col}, {"reversed", rev}, {"even", even}} {
		if c.c == nil {
			continue
		}
		r.Must(c.c.Free(), "Free of the "+c.name+" comm")
	}
	if err := w.Free(); err == nil {
		r.Errorf("Free of World: no error")
	}
	if libFlavor == launch.OpenMPI {
		// The handle is MPI_COMM_NULL now, and MPI says so through World's
		// error handler (Open MPI reports errors on a null communicator there).
		if err := row.Free(); err == nil {
			r.Errorf("second Free of the row comm: no error")
		}
	}
	r.Must(w.Barrier(), "Barrier on World after the Frees")
	x := []int64{1}
	r.Must(mpi.Allreduce(w, x, x, mpi.Sum), "Allreduce on World after the Frees")
	eq(r, "Allreduce on World after the Frees", x, []int64{4})
}

// splitDup checks that a duplicate communicator has its own message space:
// a message sent on the duplicate never matches a receive posted on World.
func splitDup(r *R) {
	w := r.W
	d, err := w.Dup()
	r.Must(err, "Dup")
	if d.Rank() != r.Rank || d.Size() != r.Size {
		r.Errorf("Dup: rank %d of %d, want %d of %d", d.Rank(), d.Size(), r.Rank, r.Size)
	}
	const tag = 7
	var onWorld *mpi.Request
	worldBuf := []int64{-1}
	if r.Rank == 0 {
		onWorld, err = mpi.Irecv(w, worldBuf, 1, tag)
		r.Must(err, "Irecv on World")
	}
	// Rank 1 sends only once the receive on World is surely posted.
	r.Must(w.Barrier(), "Barrier")
	switch r.Rank {
	case 1:
		r.Must(mpi.Send(d, []int64{42}, 0, tag), "Send on the Dup")
		r.Must(mpi.Send(w, []int64{99}, 0, tag), "Send on World")
	case 0:
		dupBuf := []int64{-1}
		st, err := mpi.Recv(d, dupBuf, 1, tag)
		r.Must(err, "Recv on the Dup")
		eqStatus(r, "Recv on the Dup", st, 1, tag, 1)
		eq(r, "message received on the Dup", dupBuf, []int64{42})
		st, err = mpi.Wait(onWorld)
		r.Must(err, "Wait for the Irecv on World")
		eqStatus(r, "Irecv on World", st, 1, tag, 1)
		eq(r, "message received on World", worldBuf, []int64{99})
	}
	// A collective on the Dup and one on World do not mix either.
	a := []float64{float64(r.Rank)}
	r.Must(mpi.Allreduce(d, a, a, mpi.Max), "Allreduce on the Dup")
	eq(r, "Allreduce Max on the Dup", a, []float64{3})
	r.Must(d.Free(), "Free of the Dup")
}
