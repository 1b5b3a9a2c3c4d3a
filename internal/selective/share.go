package selective

import (
	"slices"
)

// A policy.Sharer's aggregate channels: a kernel predictable on one process
// travels with its statistics along every axis of the grid, and is skipped
// once it has crossed them all (docs/design.md §3).

// agreedOn reports whether a shared kernel's statistics have crossed a
// communicator along every axis of the grid from this process, so every
// process knows it and the decision to skip is the same everywhere (the
// paper's aggregate channels; skipping before agreement would let ranks that
// share a node run the others' kernels in a different context). Agreement is
// kept for later configurations.
func (e *Engine) agreedOn(h uint64) bool {
	tr := e.tr
	if tr.agreed[h] {
		return true
	}
	for _, a := range e.axes {
		if !slices.Contains(tr.sentOn[h], a) {
			return false
		}
	}
	tr.agreed[h] = true
	return true
}

// learn records a kernel found predictable (here, or by another process whose
// record came over a communicator of shape from), to be passed on over every
// other communicator.
func (tr *Track) learn(h uint64, s Stat, from Shape) {
	if _, ok := tr.global[h]; ok {
		// Known already (found here, or heard of along another axis):
		// it has now crossed this communicator too.
		if from.Size > 0 && !slices.Contains(tr.sentOn[h], from) {
			tr.sentOn[h] = append(tr.sentOn[h], from)
		}
		return
	}
	tr.global[h] = s
	tr.order = append(tr.order, h)
	if from.Size > 0 {
		tr.sentOn[h] = []Shape{from}
	}
}

// toShare picks up to maxShares global kernels not yet passed over a
// communicator of shape sh, and marks them passed.
func (tr *Track) toShare(sh Shape, dst []uint64) []uint64 {
	for _, h := range tr.order {
		if len(dst) == maxShares {
			break
		}
		if !slices.Contains(tr.sentOn[h], sh) {
			tr.sentOn[h] = append(tr.sentOn[h], sh)
			dst = append(dst, h)
		}
	}
	return dst
}
