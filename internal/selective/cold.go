package selective

// A process's first call of a computation kernel is slower than the rest:
// its pages are untouched, the BLAS allocates its buffers, the caches are
// cold (dgemm n=256 in a fresh process: 1.19 ms, then 0.58-0.64 ms). A
// built-in workload makes an untimed warm-up run first, but each launch of
// a user's program is a fresh process, so its first calls are cold in
// every launch. Counted among the samples, a first call raises the mean
// that every skipped call is charged: a program of 80 dgemm calls a rank
// was predicted 17% over its run at 2^-1 (5 samples, mean 0.72 ms against
// 0.61 ms over all 80 calls).
//
// With cold first calls (SetColdFirstCalls), a process's first executed
// call of each computation kernel is charged to the path as measured, as
// any executed call is, and its sample is held back: dropped when the
// process calls the kernel again, kept (added at the run's end) when that
// was its only call, since then every call of it is a first one.

// coldFirst is the engine's state for cold first calls.
type coldFirst struct {
	seen map[Key]bool       // computation kernels this process has called
	held map[Key]heldSample // first calls executed, their samples held back
}

// heldSample is a first call's sample, held back.
type heldSample struct {
	st *kstat
	dt float64
}

// SetColdFirstCalls sets whether a process's first call of each
// computation kernel is left out of its statistics when the process calls
// the kernel again (see above). The preload library sets it: a program's
// launches are fresh processes, with no warm-up run.
func (e *Engine) SetColdFirstCalls(on bool) {
	e.cold = nil
	if on {
		e.cold = &coldFirst{seen: map[Key]bool{}, held: map[Key]heldSample{}}
	}
}

// called notes a call of the computation kernel st and marks whether it is
// this process's first (st.first); a later call drops the first one's held
// sample.
func (c *coldFirst) called(st *kstat) {
	if c.seen[st.key] {
		st.first = false
		delete(c.held, st.key)
		return
	}
	c.seen[st.key] = true
	st.first = true
}

// hold keeps an executed first call's sample back, and reports whether st's
// call was one.
func (c *coldFirst) hold(st *kstat, dt float64) bool {
	if !st.first {
		return false
	}
	st.first = false
	c.held[st.key] = heldSample{st: st, dt: dt}
	return true
}

// flush adds the samples still held, of kernels called once: every call of
// such a kernel is a first one.
func (c *coldFirst) flush() {
	for k, h := range c.held {
		h.st.Add(h.dt)
		delete(c.held, k)
	}
}
