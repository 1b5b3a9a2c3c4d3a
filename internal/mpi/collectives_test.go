package mpi_test

import (
	"math"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/mpi"
)

func TestCollectives(t *testing.T) { runScenarios(t, "collectives") }

func init() { scenario("collectives", collectives) }

func collectives(r *R) {
	w := r.W

	// Rank and Size: every rank in [0, 4) appears exactly once.
	if w.Size() != 4 {
		r.Fatalf("Size() = %d, want 4", w.Size())
	}
	if w.Rank() < 0 || w.Rank() >= 4 {
		r.Fatalf("Rank() = %d, want 0..3", w.Rank())
	}
	all := make([]int64, 4)
	r.Must(mpi.Allgather(w, []int64{int64(w.Rank())}, all), "Allgather of ranks")
	eq(r, "ranks gathered", all, []int64{0, 1, 2, 3})

	// Barrier: nobody leaves it before the last rank has entered it. Each
	// rank reads the clock before a first Barrier, which rank 0 leaves only
	// after all have read it; rank 0 then sleeps before the second, so no
	// rank can leave that one sooner than late after its own reading.
	const late = 200 * time.Millisecond
	start := mpi.Wtime()
	r.Must(w.Barrier(), "Barrier")
	if r.Rank == 0 {
		time.Sleep(late)
	}
	r.Must(w.Barrier(), "Barrier after rank 0 sleeps")
	if waited := mpi.Wtime() - start; waited < late.Seconds()*0.9 {
		r.Errorf("left the second Barrier %.3fs after the first, but rank 0 entered it only after sleeping %v", waited, late)
	}

	// Ibarrier: not complete on any rank while rank 0 has not started it.
	start = mpi.Wtime()
	if r.Rank == 0 {
		time.Sleep(late)
	}
	q, err := w.Ibarrier()
	r.Must(err, "Ibarrier")
	if r.Rank != 0 {
		if done, _, err := mpi.Test(q); err != nil || done {
			r.Errorf("Ibarrier complete (%v, %v) before rank 0 started it", done, err)
		}
	}
	_, err = mpi.Wait(q)
	r.Must(err, "Wait for the Ibarrier")
	if waited := mpi.Wtime() - start; waited < late.Seconds()*0.9 {
		r.Errorf("the Ibarrier completed %.3fs after the start, but rank 0 started it only after sleeping %v", waited, late)
	}

	collBcast(r)
	collReduce(r)
	collAllreduce(r)
	collMaxLoc(r)
	collGatherScatter(r)
}

func collBcast(r *R) {
	w := r.W
	const root = 2
	f := make([]float64, 3)
	i := make([]int64, 4)
	b := make([]byte, 7)
	if r.Rank == root {
		copy(f, []float64{1.5, -2.25, 3e10})
		copy(i, []int64{math.MinInt64, math.MaxInt64, -1, 42})
		copy(b, "hello\x00\xff")
	} else {
		// Garbage that the broadcast must overwrite.
		f = fill(3, math.NaN())
		i = fill[int64](4, 7)
		b = fill[byte](7, '?')
	}
	r.Must(mpi.Bcast(w, f, root), "Bcast float64")
	r.Must(mpi.Bcast(w, i, root), "Bcast int64")
	r.Must(mpi.Bcast(w, b, root), "Bcast byte")
	eq(r, "Bcast float64 from rank 2", f, []float64{1.5, -2.25, 3e10})
	eq(r, "Bcast int64 from rank 2", i, []int64{math.MinInt64, math.MaxInt64, -1, 42})
	eq(r, "Bcast byte from rank 2", b, []byte("hello\x00\xff"))

	// From the last rank, with an empty buffer too.
	g := []float64{float64(r.Rank)}
	r.Must(mpi.Bcast(w, g, 3), "Bcast float64 from 3")
	eq(r, "Bcast float64 from rank 3", g, []float64{3})
	r.Must(mpi.Bcast(w, []int64{}, 1), "Bcast of nothing")
}

func collReduce(r *R) {
	w := r.W
	const root = 3
	x := float64(r.Rank)
	n := int64(r.Rank)
	fsend := func() []float64 { return []float64{x + 1, x * 0.5, -x} }
	isend := func() []int64 { return []int64{n * 1e12, -n, 1<<40 + n} }
	fwant := map[mpi.Op][]float64{
		mpi.Sum: {10, 3, -6},
		mpi.Max: {4, 1.5, 0},
		mpi.Min: {1, 0, -3},
	}
	iwant := map[mpi.Op][]int64{
		mpi.Sum: {6e12, -6, 4<<40 + 6},
		mpi.Max: {3e12, 0, 1<<40 + 3},
		mpi.Min: {0, -3, 1 << 40},
	}
	for _, op := range []mpi.Op{mpi.Sum, mpi.Max, mpi.Min} {
		// Separate buffers; recv on the other ranks must stay untouched.
		fr := fill(3, -99.0)
		ir := fill[int64](3, -99)
		r.Must(mpi.Reduce(w, fsend(), fr, op, root), "Reduce float64 "+op.String())
		r.Must(mpi.Reduce(w, isend(), ir, op, root), "Reduce int64 "+op.String())
		if r.Rank == root {
			eq(r, "Reduce float64 "+op.String()+" on root", fr, fwant[op])
			eq(r, "Reduce int64 "+op.String()+" on root", ir, iwant[op])
		} else {
			eq(r, "Reduce float64 "+op.String()+" recv off root", fr, fill(3, -99.0))
			eq(r, "Reduce int64 "+op.String()+" recv off root", ir, fill[int64](3, -99))
		}

		// In place: the same slice as send and recv on every rank.
		fb := fsend()
		ib := isend()
		r.Must(mpi.Reduce(w, fb, fb, op, root), "in-place Reduce float64 "+op.String())
		r.Must(mpi.Reduce(w, ib, ib, op, root), "in-place Reduce int64 "+op.String())
		if r.Rank == root {
			eq(r, "in-place Reduce float64 "+op.String()+" on root", fb, fwant[op])
			eq(r, "in-place Reduce int64 "+op.String()+" on root", ib, iwant[op])
		} else {
			eq(r, "in-place Reduce float64 "+op.String()+" send off root", fb, fsend())
			eq(r, "in-place Reduce int64 "+op.String()+" send off root", ib, isend())
		}

		// Non-root ranks may pass no recv slice at all.
		var fr2 []float64
		if r.Rank == root {
			fr2 = make([]float64, 3)
		}
		r.Must(mpi.Reduce(w, fsend(), fr2, op, root), "Reduce float64 with nil recv off root")
		if r.Rank == root {
			eq(r, "Reduce float64 "+op.String()+" (nil recv off root)", fr2, fwant[op])
		}
	}
}

func collAllreduce(r *R) {
	w := r.W
	x := float64(r.Rank)
	n := int64(r.Rank)
	fsend := func() []float64 { return []float64{x - 1.5, x * x, 1e300 * (x - 1)} }
	isend := func() []int64 { return []int64{-n * n, n << 50, math.MinInt64 + n} }
	fwant := map[mpi.Op][]float64{
		mpi.Sum: {0, 14, 2e300},
		mpi.Max: {1.5, 9, 2e300},
		mpi.Min: {-1.5, 0, -1e300},
	}
	iwant := map[mpi.Op][]int64{
		mpi.Sum: {-14, 6 << 50, 6}, // 4*MinInt64 wraps around to 0
		mpi.Max: {0, 3 << 50, math.MinInt64 + 3},
		mpi.Min: {-9, 0, math.MinInt64},
	}
	for _, op := range []mpi.Op{mpi.Sum, mpi.Max, mpi.Min} {
		fr := make([]float64, 3)
		ir := make([]int64, 3)
		fs, is := fsend(), isend()
		r.Must(mpi.Allreduce(w, fs, fr, op), "Allreduce float64 "+op.String())
		r.Must(mpi.Allreduce(w, is, ir, op), "Allreduce int64 "+op.String())
		eq(r, "Allreduce float64 "+op.String(), fr, fwant[op])
		eq(r, "Allreduce int64 "+op.String(), ir, iwant[op])
		eq(r, "Allreduce float64 "+op.String()+" send unchanged", fs, fsend())
		eq(r, "Allreduce int64 "+op.String()+" send unchanged", is, isend())

		fb, ib := fsend(), isend()
		r.Must(mpi.Allreduce(w, fb, fb, op), "in-place Allreduce float64 "+op.String())
		r.Must(mpi.Allreduce(w, ib, ib, op), "in-place Allreduce int64 "+op.String())
		eq(r, "in-place Allreduce float64 "+op.String(), fb, fwant[op])
		eq(r, "in-place Allreduce int64 "+op.String(), ib, iwant[op])

		// A longer recv than send: only the first len(send) change.
		long := fill(5, -7.0)
		r.Must(mpi.Allreduce(w, fsend(), long, op), "Allreduce into a longer recv "+op.String())
		eq(r, "Allreduce into a longer recv "+op.String(), long, append(append([]float64{}, fwant[op]...), -7, -7))
	}
	// In place on a sub-slice sharing the backing array's start.
	big := []float64{float64(r.Rank), 100, 200}
	r.Must(mpi.Allreduce(w, big[:1], big[:1], mpi.Sum), "in-place Allreduce of a prefix")
	eq(r, "in-place Allreduce of a prefix", big, []float64{6, 100, 200})
}

func collMaxLoc(r *R) {
	w := r.W
	cases := []struct {
		vals []float64
		max  float64
		loc  int
	}{
		{[]float64{3, 7, 7, -1}, 7, 1},     // tie between 1 and 2: lowest rank
		{[]float64{5, 5, 5, 5}, 5, 0},      // all equal: rank 0
		{[]float64{-5, -2, -9, -2}, -2, 1}, // negative values, tie
		{[]float64{0, 1, 2, 2.5}, 2.5, 3},  // the last rank
		{[]float64{1e-300, 0, -0.5, 1e-301}, 1e-300, 0},
	}
	for _, c := range cases {
		v, loc, err := mpi.AllreduceMaxLoc(w, c.vals[r.Rank])
		r.Must(err, "AllreduceMaxLoc")
		if v != c.max || loc != c.loc {
			r.Errorf("AllreduceMaxLoc over %v = (%v, %d), want (%v, %d)", c.vals, v, loc, c.max, c.loc)
		}
	}
}

func collGatherScatter(r *R) {
	w := r.W
	n := int64(r.Rank)

	// Gather to rank 1.
	const groot = 1
	var ig []int64
	var fg []float64
	if r.Rank == groot {
		ig = fill[int64](8, -1)
		fg = fill(4, -1.0)
	}
	r.Must(mpi.Gather(w, []int64{n * 10, n*10 + 1}, ig, groot), "Gather int64")
	r.Must(mpi.Gather(w, []float64{float64(n) / 4}, fg, groot), "Gather float64")
	if r.Rank == groot {
		eq(r, "Gather int64 to rank 1", ig, []int64{0, 1, 10, 11, 20, 21, 30, 31})
		eq(r, "Gather float64 to rank 1", fg, []float64{0, 0.25, 0.5, 0.75})
	}

	// Allgather.
	fa := fill(4, -1.0)
	ba := fill[byte](8, '?')
	r.Must(mpi.Allgather(w, []float64{float64(n) + 0.25}, fa), "Allgather float64")
	r.Must(mpi.Allgather(w, []byte{'a' + byte(n), 'A' + byte(n)}, ba), "Allgather byte")
	eq(r, "Allgather float64", fa, []float64{0.25, 1.25, 2.25, 3.25})
	eq(r, "Allgather byte", ba, []byte("aAbBcCdD"))

	// Scatter from rank 3.
	const sroot = 3
	var is []int64
	var bs []byte
	if r.Rank == sroot {
		is = []int64{100, 101, 102, 103, 104, 105, 106, 107}
		bs = []byte("wxyz")
	}
	ir := fill[int64](2, -1)
	br := []byte{'?'}
	r.Must(mpi.Scatter(w, is, ir, sroot), "Scatter int64")
	r.Must(mpi.Scatter(w, bs, br, sroot), "Scatter byte")
	eq(r, "Scatter int64 from rank 3", ir, []int64{100 + 2*n, 101 + 2*n})
	eq(r, "Scatter byte from rank 3", br, []byte{"wxyz"[r.Rank]})
	if r.Rank == sroot {
		eq(r, "Scatter send on root unchanged", is, []int64{100, 101, 102, 103, 104, 105, 106, 107})
	}
}
