package selective

import "github.com/approxtune/approxtune/internal/mpi"

// Cutting a run short. A search's round keeps only the configurations whose
// predictions are among its fastest (internal/agent, search.go); once it has
// enough of them, a configuration whose prediction is bound to land past
// them need not run to its end. Paths only grow: a process's path at any
// point of a run is at most its path at the run's end, and a run's
// prediction, its longest path, at least the longest path so far. So once
// the longest path so far passes the time the round keeps configurations
// under (the cutoff), the rest of the run cannot bring its prediction back
// under it, and the workload may stop there. On the 120-configuration
// cholesky2d space the configurations with b=32, predicted 2-8 times the
// fastest, were most of the search's first round.

// SetCutoff lets the next selective run be cut short once its longest path
// passes s seconds (Comm.CutShort); s <= 0: never. End clears it, so a
// warm-up or full run after it is never cut short.
func (e *Engine) SetCutoff(s float64) { e.cutoff = s }

// CutShort reports whether this run's longest path over c's members has
// passed the cutoff (SetCutoff). Every member must call it at the same point
// of its work, a point the workload can stop at: it then completes the
// communication it has started and returns, and End predicts the part that
// ran, which the cutoff bounds from below (RunStats.CutShort). It costs one
// small reduction over c, not charged to the path, when the run has a
// cutoff, and nothing otherwise; once it has said yes it says yes without
// communicating.
func (c *Comm) CutShort() bool {
	e := c.e
	if e.cut || !e.on || !e.skip || e.cutoff <= 0 {
		return e.cut
	}
	e.gap()
	v := []float64{e.total}
	must(mpi.Allreduce(c.in, v, v, mpi.Max))
	e.resume()
	e.cut = v[0] > e.cutoff
	return e.cut
}
