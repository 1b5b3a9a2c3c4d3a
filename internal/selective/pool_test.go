package selective

import (
	"math"
	"slices"
	"testing"

	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/selective/policy"
)

// poolMerge pools a kernel's samples over the processes that offered it,
// keeps it only when two or more did and the pooled sample passes the test,
// and lists the kept ones in hash order.
func TestPoolMerge(t *testing.T) {
	offer := func(h uint64, xs ...float64) []float64 {
		var s Stat
		for _, x := range xs {
			s.Add(x)
		}
		return []float64{math.Float64frombits(h), float64(s.N), s.Mean, s.M2}
	}
	// Kernel 9 on three processes, one sample each; kernel 5 on two, of
	// which one has two samples; kernel 7 on one process only; kernel 3 on
	// two, too spread to pass.
	offers := [][]float64{
		append(append(offer(5, 1.0, 1.1), offer(9, 2.0)...), offer(3, 1)...),
		append(append(offer(7, 4.0), offer(9, 2.2)...), offer(3, 100)...),
		append(offer(5, 1.05), offer(9, 2.1)...),
	}
	pass := func(s Stat) bool { return s.N >= 2 && math.Sqrt(s.Var())/s.Mean < 0.5 }
	got := poolMerge(offers, pass)
	if len(got) != 2*poolLen {
		t.Fatalf("pooled %v: want kernels 5 and 9", got)
	}
	var want5, want9 Stat
	for _, x := range []float64{1.0, 1.1, 1.05} {
		want5.Add(x)
	}
	for _, x := range []float64{2.0, 2.2, 2.1} {
		want9.Add(x)
	}
	for i, w := range []struct {
		h uint64
		s Stat
	}{{5, want5}, {9, want9}} {
		e := got[i*poolLen : (i+1)*poolLen]
		if math.Float64bits(e[0]) != w.h || int64(e[1]) != w.s.N || math.Abs(e[2]-w.s.Mean) > 1e-12 || math.Abs(e[3]-w.s.M2) > 1e-12 {
			t.Errorf("pooled kernel %d: %v; want n=%d mean=%g M2=%g", w.h, e, w.s.N, w.s.Mean, w.s.M2)
		}
	}
	// The same offers in any order of their kernels pool alike (each
	// process offers in hash order; rank 0 merges in rank order).
	if again := poolMerge(offers, pass); !slices.Equal(again, got) {
		t.Errorf("pooling again gave %v, first %v", again, got)
	}
	if none := poolMerge([][]float64{offer(9, 2.0), nil}, pass); len(none) != 0 {
		t.Errorf("one process's single sample pooled: %v", none)
	}
}

// A pooled kernel is known and agreed on everywhere, charged from the
// pooled sample even where this process has a sample of its own, and a
// snapshot carries it so.
func TestPoolTake(t *testing.T) {
	e := &Engine{tr: NewTrack(policy.Eager{}, 0.5), axes: []Shape{{Size: 2, Hash: 1}, {Size: 2, Hash: 2}}}
	k := compKey(kernels.Signature{Routine: kernels.Gemm, M: 64, N: 64, K: 64})
	st := e.stat(k)
	st.Add(0.3)
	pooled := Stat{N: 8, Mean: 0.25, M2: 0.001}
	e.poolTake([]float64{math.Float64frombits(st.hash), float64(pooled.N), pooled.Mean, pooled.M2})
	if !e.tr.agreed[st.hash] || !e.tr.pooled[st.hash] || !e.agreedOn(st.hash) {
		t.Fatalf("after pooling: agreed %v pooled %v", e.tr.agreed[st.hash], e.tr.pooled[st.hash])
	}
	if s := e.sample(st); s != pooled {
		t.Errorf("charged from %+v; want the pooled %+v", s, pooled)
	}
	data, err := e.tr.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	nt := NewTrack(policy.Eager{}, 0.5)
	if err := nt.Restore(data); err != nil {
		t.Fatal(err)
	}
	if !nt.pooled[st.hash] || nt.global[st.hash] != pooled {
		t.Errorf("restored: pooled %v, global %+v", nt.pooled[st.hash], nt.global[st.hash])
	}
}
