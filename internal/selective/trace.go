package selective

// Span is one intercepted kernel on a process's timeline: a computation
// kernel, a collective, a blocking send or receive, the start of a
// non-blocking send or the wait of a non-blocking receive. Times are
// seconds since the run began. An executed kernel spans its execution; a
// skipped one is the instant it was skipped (Start = End) with the time it
// was charged instead.
type Span struct {
	Op         Op
	Start, End float64
	Predicted  float64 // skipped: the predicted time charged
	Skipped    bool
	// Size is the kernel's work (Key.Work): flops for a computation,
	// bytes per process for a communication, 0 for a spin or a barrier.
	Size float64
	// Procs is a communication's communicator size (0 for a computation):
	// a broadcast on 1 process and one on 4 are different costs.
	Procs int
}

// SetTrace turns the timeline on, keeping at most limit spans per run (the
// first ones; the rest are counted), or off with limit <= 0. The spans'
// memory is allocated here, once, so tracing allocates nothing during runs.
func (e *Engine) SetTrace(limit int) {
	if limit <= 0 {
		e.tracing, e.trace, e.dropped = false, nil, 0
		return
	}
	if cap(e.trace) != limit {
		e.trace = make([]Span, 0, limit)
	}
	e.tracing = true
}

// Trace returns the last run's spans, in time order, and how many were
// dropped past the limit (nil and 0 when tracing is off). The spans are valid
// until the next Begin.
func (e *Engine) Trace() ([]Span, int64) { return e.trace, e.dropped }

// span records one kernel of key k on the timeline (tracing only).
func (e *Engine) span(k Key, t0, t1, predicted float64, skipped bool) {
	if len(e.trace) == cap(e.trace) {
		e.dropped++
		return
	}
	procs := 0
	if k.Op.IsComm() {
		procs = k.Shape.Size
	}
	e.trace = append(e.trace, Span{Op: k.Op, Start: t0 - e.t0, End: t1 - e.t0, Predicted: predicted, Skipped: skipped, Size: k.Work(), Procs: procs})
}
