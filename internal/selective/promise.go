package selective

import "math"

// maxPromise is the promise of a process that will never find a kernel
// predictable in this run (tolerance 0): more calls than any run makes.
const maxPromise = 1 << 20

// farCalls is how far (in calls, each sampled) a kernel must be from
// predictable before its process promises to execute it without records.
// The workloads here call one collective a few hundred times a run at most,
// so such a kernel would not have become predictable in the run anyway. A promise costs a run that calls a
// collective far more often: sampled once every far/8 calls, a kernel far
// calls away needs about far²/16 calls instead of far to get there.
const farCalls = 256

// promise is how many calls of a collective, after this one, this process
// will execute whatever the others say (policy.Promiser). While one member's promise lasts,
// every member runs the collective without exchanging records (comm.go):
// on a node with more ranks than cores each records exchange costs as much
// as a small collective. Those calls are timed and charged at End (their
// cost needs every member's arrival), but add no sample, so a process
// promises only where its statistics are hopeless: at tolerance 0, or a
// kernel farCalls sampled calls or more from predictable (one of a few
// microseconds, timed within the clock's noise, at 2^-5), and then an
// eighth of that distance. Above tolerance 0, a policy that is not a
// Promiser (eager, online) promises nothing: its records carry what others
// decide by (statistics shared along the grid, critical-path counts); at
// tolerance 0 nothing is decided. A counting run promises nothing: its
// records are its path.
func (e *Engine) promise(st *kstat) float64 {
	tr := e.tr
	if !e.skip {
		return 0
	}
	if tr.Tolerance <= 0 {
		return maxPromise
	}
	if tr.promiser == nil {
		return 0
	}
	if st.N < max(e.nmin, 2) || st.Mean <= 0 {
		return 0
	}
	// The rule is z·s/(sqrt(n)·mean·sqrt(alpha)) <= tolerance (z below t:
	// the distance comes out shorter), so n·alpha >= q.
	zs := e.qs.z * math.Sqrt(st.Var()) / (st.Mean * tr.Tolerance)
	far := tr.promiser.Distance(float64(st.N), zs*zs, e.view(st))
	if !(far >= farCalls) { // NaN too: a promise must be a number every member can compare
		return 0
	}
	return math.Min(math.Floor(far/8), maxPromise)
}

// promisedFor counts a collective executed on a promise. Its cost goes on
// the path at End (chargePromised), from the members' logs. This process's
// own time (its path without propagation) cannot wait for that: it takes
// the kernel's mean, which its executions with records measured from the
// last member's arrival, as the path would have (its time t1-t0 holds its
// wait for the others). The bytes a transfer above the eager limit moved
// go with the entry its cost joins, as an executed one's do (add): on a
// shared core the copy is work the processes take turns at (simulate).
func (e *Engine) promisedFor(st *kstat, t0, t1 float64) {
	if e.tracing {
		e.span(st.key, t0, t1, 0, false)
	}
	if !smallMessage(st.key) {
		e.dB += 8 * float64(st.key.M)
	}
	e.own += st.Mean
	e.executed++
	e.promisedRuns++
}
