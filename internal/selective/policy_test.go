package selective

import (
	"testing"

	"github.com/approxtune/approxtune/internal/selective/policy"
)

// alpha per policy on a hand-built state: a kernel whose relative half-width
// is r is skippable at eps = r/2 exactly when the policy's alpha is >= 4.
func TestPolicyAlpha(t *testing.T) {
	qs := newQuantiles(0.95)
	var s Stat
	for _, x := range []float64{9, 10, 11, 10, 10.5, 9.5} {
		s.Add(x)
	}
	eps := qs.HalfWidth(s) / s.Mean / 2 * (1 + 1e-9)
	key := Key{Op: 1, M: 8}
	cases := []struct {
		name            string
		pol             policy.Policy
		calls           int64   // this process's calls in the run
		pathCount       float64 // count along the current sub-critical path
		apriori         float64 // critical-path count of the counting run
		globalElsewhere bool
		want            bool
	}{
		{"conditional ignores counts", policy.Conditional{}, 9, 9, 9, false, false},
		{"local uses this process's calls", policy.Local{}, 4, 1, 1, false, true},
		{"local below 4 calls", policy.Local{}, 3, 9, 9, false, false},
		{"online uses the path count", policy.Online{}, 1, 4, 1, false, true},
		{"online ignores local calls", policy.Online{}, 9, 3, 9, false, false},
		{"apriori uses the counting run", policy.Apriori{}, 1, 1, 4, false, true},
		{"apriori below 4", policy.Apriori{}, 9, 9, 3, false, false},
		{"eager alpha is 1", policy.Eager{}, 9, 9, 9, false, false},
		{"eager skips what another process shared", policy.Eager{}, 1, 1, 1, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := &Engine{qs: qs, nmin: 2, skip: true, tr: NewTrack(c.pol, eps), pathCounts: map[uint64]float64{}}
			st := &kstat{key: key, hash: key.hash(), Stat: s, calls: c.calls, alpha: c.apriori}
			e.pathCounts[st.hash] = c.pathCount
			if c.globalElsewhere {
				st.Stat = Stat{N: 1, Mean: 10}
				e.tr.learn(st.hash, s, Shape{Size: 2})
			}
			if got := e.skippable(st); got != c.want {
				t.Fatalf("%s: skippable = %v, want %v (eps %v)", c.pol.Name(), got, c.want, eps)
			}
		})
	}
}

// Eager: a kernel this process found predictable itself, then heard of from
// a row partner, has crossed the row; once it also went out along the
// column it is agreed on a 2x2 grid. (A share of a kernel already known used
// to be dropped without noting where it came from, so a process that only
// ever received along one axis never agreed: eager on cholesky2d executed
// half of its kernels.)
func TestEagerAgreesOnKernelsHeardOfAlongAnAxis(t *testing.T) {
	row, col := Shape{Size: 2, Hash: 1}, Shape{Size: 2, Hash: 2}
	tr := NewTrack(policy.Eager{}, 0.1)
	e := &Engine{tr: tr, axes: []Shape{row, col}}
	const h = 42
	tr.learn(h, Stat{N: 3, Mean: 1}, Shape{}) // found here
	if e.agreedOn(h) {
		t.Fatal("agreed before crossing any axis")
	}
	tr.learn(h, Stat{N: 5, Mean: 2}, row) // a row partner's share
	if e.agreedOn(h) {
		t.Fatal("agreed after crossing the row only")
	}
	if got := tr.toShare(row, nil); len(got) != 0 {
		t.Errorf("shares %v back along the row it came from", got)
	}
	if got := tr.toShare(col, nil); len(got) != 1 || got[0] != h {
		t.Errorf("shares %v along the column, want [%d]", got, h)
	}
	if !e.agreedOn(h) {
		t.Errorf("not agreed after crossing row and column: %v", tr.sentOn[h])
	}
	if g := tr.global[h]; g.N != 3 {
		t.Errorf("kept the share's statistics %+v, want this process's own (n=3)", g)
	}
}
