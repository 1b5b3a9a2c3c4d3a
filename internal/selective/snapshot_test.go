package selective

import (
	"bytes"
	"testing"

	"github.com/approxtune/approxtune/internal/selective/policy"
)

// A Carrier's track written down and taken in by a fresh track decides as
// the original does: a kernel it found predictable is skipped, one shared
// and agreed is skipped at once; a track that carries nothing writes nothing.
func TestTrackSnapshot(t *testing.T) {
	eps := 0.1
	tr := NewTrack(policy.Eager{}, eps)
	key := Key{Op: 1, M: 8, N: 8, K: 8}
	shared := Key{Op: OpBcast, M: 16, Shape: Shape{Size: 2, Hash: 7}}
	tr.stats[key] = &kstat{key: key, hash: key.hash(), Stat: predictable}
	tr.learn(shared.hash(), predictable, Shape{Size: 2, Hash: 7})
	tr.agreed[shared.hash()] = true
	data, err := tr.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	fresh := NewTrack(policy.Eager{}, eps)
	if err := fresh.Restore(data); err != nil {
		t.Fatal(err)
	}
	again, _ := fresh.Snapshot()
	if !bytes.Equal(data, again) {
		t.Fatalf("restored track writes\n%s\nwant\n%s", again, data)
	}
	qs := newQuantiles(0.95)
	e := &Engine{qs: qs, nmin: 2, skip: true, tr: fresh}
	if st := fresh.stats[key]; st == nil || !e.skippable(st) {
		t.Errorf("restored kernel %v: not skippable", key)
	}
	st := &kstat{key: shared, hash: shared.hash()} // no samples here: known from the grid
	if !e.skippable(st) {
		t.Errorf("restored shared and agreed kernel: not skippable")
	}
	cond := NewTrack(policy.Conditional{}, eps)
	cond.stats[key] = &kstat{key: key, hash: key.hash(), Stat: predictable}
	if data, _ := cond.Snapshot(); string(data) != `{"stats":null,"global":null}` {
		t.Errorf("conditional's snapshot %s, want nothing carried", data)
	}
}

// A counting run's critical-path counts written down and taken in by a fresh
// track become its kernels' CriticalCount, for kernels it already holds and
// kernels it meets later; a track with no counting run has none to write,
// and a corrupt file is refused.
func TestTrackCounts(t *testing.T) {
	key, other := Key{Op: 1, M: 8, N: 8, K: 8}, Key{Op: 1, M: 16, N: 16, K: 16}
	tr := NewTrack(policy.Apriori{}, 0.1)
	if _, err := tr.Counts(); err == nil {
		t.Errorf("counts of a track with no counting run: no error")
	}
	tr.alphas = map[uint64]float64{key.hash(): 120, other.hash(): 30}
	data, err := tr.Counts()
	if err != nil {
		t.Fatal(err)
	}
	fresh := NewTrack(policy.Apriori{}, 0.1)
	fresh.stats[key] = &kstat{key: key, hash: key.hash()}
	if err := fresh.SetCounts(data); err != nil {
		t.Fatal(err)
	}
	e := &Engine{tr: fresh}
	if a, b := fresh.stats[key].alpha, e.stat(other).alpha; a != 120 || b != 30 {
		t.Errorf("critical counts after SetCounts: %v and %v, want 120 and 30", a, b)
	}
	if again, _ := fresh.Counts(); !bytes.Equal(again, data) {
		t.Errorf("taken-in counts write\n%s\nwant\n%s", again, data)
	}
	for _, bad := range []string{`{"counts": [{"hash": 1, "count": `, `{}`, `{"counts": [{"hash": 1, "count": -1}]}`} {
		if err := NewTrack(policy.Apriori{}, 0.1).SetCounts([]byte(bad)); err == nil {
			t.Errorf("counts %s: no error", bad)
		}
	}
}
