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
// process executes the kernel again, kept (added at the run's end)
// otherwise, since then it is the process's one measure of the kernel. A
// kernel whose sample is held counts as measured: it is not predicted from
// its family's model as one never measured would be.

// coldFirst is the engine's state for cold first calls.
type coldFirst struct {
	seen map[Key]bool       // computation kernels this process has executed, or called with the engine off
	held map[Key]heldSample // first calls executed, their samples held back
}

// heldSample is a first call's sample, held back.
type heldSample struct {
	st *kstat
	dt float64
}

// SetColdFirstCalls sets whether a process's first executed call of each
// computation kernel is left out of its statistics when the process
// executes the kernel again (see above). The preload library sets it: a
// program's launches are fresh processes, with no warm-up run.
func (e *Engine) SetColdFirstCalls(on bool) {
	e.cold = nil
	if on {
		e.cold = &coldFirst{seen: map[Key]bool{}, held: map[Key]heldSample{}}
	}
}

// called notes a call of the computation kernel st: st.first says whether
// the process has executed it yet (or called it while the engine was off).
func (c *coldFirst) called(st *kstat) {
	st.first = !c.seen[st.key]
}

// hold keeps an executed first call's sample back, and reports whether st's
// call was one; a later execution drops the held sample.
func (c *coldFirst) hold(st *kstat, dt float64) bool {
	if st.key.IsComm() {
		return false
	}
	if !st.first {
		if len(c.held) > 0 { // most executions find none held
			delete(c.held, st.key)
		}
		return false
	}
	st.first = false
	c.seen[st.key] = true
	c.held[st.key] = heldSample{st: st, dt: dt}
	return true
}

// holds says whether a sample of the kernel k is held back.
func (c *coldFirst) holds(k Key) bool {
	_, ok := c.held[k]
	return ok
}

// flush adds the samples still held, of kernels the process executed once:
// each is its one measure of its kernel.
func (c *coldFirst) flush() {
	for k, h := range c.held {
		h.st.Add(h.dt)
		delete(c.held, k)
	}
}
