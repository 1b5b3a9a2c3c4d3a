package agent

import (
	"runtime"
	"runtime/metrics"
	"testing"
)

func forcedCycles() uint64 {
	s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// Right after a collection the heap is far from the next one, and nothing
// runs; once garbage fills it to 80% of the goal, a collection runs.
func TestCollectIfDue(t *testing.T) {
	runtime.GC()
	before := forcedCycles()
	if collectIfDue(0.75) {
		t.Fatalf("collected right after a collection (heap at %.2f of its goal)", heapShare())
	}
	share := fillHeap(t, 0.8)
	if !collectIfDue(0.75) {
		t.Fatalf("heap at %.2f of its goal: no collection", share)
	}
	if got := forcedCycles(); got != before+1 {
		t.Fatalf("forced cycles %d -> %d, want one more", before, got)
	}
}

// fillHeap allocates until the heap holds frac of its goal and returns the
// share reached; what it allocated is garbage once it returns.
func fillHeap(t *testing.T, frac float64) float64 {
	var held [][]byte
	for heapShare() < frac {
		held = append(held, make([]byte, 64<<10))
		if len(held) > 1<<16 {
			t.Fatalf("heap at %.2f of its goal after 4 GiB", heapShare())
		}
	}
	return heapShare()
}
