package agent

import (
	"runtime"
	"runtime/metrics"
)

// collectIfDue runs a garbage collection now, between timed runs, when the
// heap has grown to frac of the size at which the runtime would start one
// by itself, and reports whether it did. Otherwise that collection would
// start inside whichever run came next and be timed with it: each
// reference's verification allocates a copy of the matrix (4.7 MB per rank
// for cholesky3d at n=3072), and each selective run's End its logs: on 8
// ranks, 20 cholesky3d references went through four collections, 20
// selective runs through one.
func collectIfDue(frac float64) bool {
	if heapShare() < frac {
		return false
	}
	runtime.GC()
	return true
}

// heapShare is the heap's live and unswept objects over the heap size at
// which the runtime starts its next collection (0 if the runtime does not
// report them).
func heapShare() float64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 || s[1].Value.Uint64() == 0 {
		return 0
	}
	return float64(s[0].Value.Uint64()) / float64(s[1].Value.Uint64())
}
