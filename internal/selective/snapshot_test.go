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
