// Package selective is approxtune's approximate-autotuning engine (the method
// of Hutter and Solomonik, "Accelerating Distributed-Memory Autotuning via
// Statistical Analysis of Execution Paths"; docs/design.md §2). It
// intercepts every computation kernel (through kernels.Interceptor) and
// every communication (through Comm) a workload issues, keeps per-process
// statistics of each kernel signature, skips kernels whose mean time is
// known to the tolerance under the run's policy (package policy), and
// carries each process's critical-path time along every message.
//
// A Track holds the statistics of one policy x tolerance across the
// configurations of a sweep; a run is bracketed by Begin and End. The
// engine asks a track's policy for a kernel's significance and acts on the
// capabilities it implements (docs/design.md §3).
package selective

import (
	"fmt"
	"math"
	"os"
	"sort"

	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/selective/policy"
	"github.com/approxtune/approxtune/sweep"
)

// kstat is one kernel signature's state on this process within a track.
type kstat struct {
	key          Key
	hash         uint64
	Stat               // samples measured on this process
	calls, skips int64 // this run
	alpha        float64
	pred         *prediction // models on, no samples: its time predicted from its family's model (models.go)
	ready        bool        // models on: known to the tolerance from its own samples
	pooled       bool        // Sharer: charged from the sample pooled over the processes (Track.pooled, pool.go)
	first        bool        // cold first calls: the process has not executed the kernel yet (cold.go)
}

// Track holds a policy x tolerance's statistics across the configurations of
// a sweep. A policy.Carrier keeps them from one configuration to the next;
// the other policies start every run afresh.
type Track struct {
	pol       policy.Policy
	Tolerance float64

	// The policy's capabilities (package policy), found once.
	shares      bool            // policy.Sharer
	carries     bool            // policy.Carrier
	countsPath  bool            // policy.PathCounter
	countingRun bool            // policy.Rehearser
	promiser    policy.Promiser // nil: promises only at tolerance 0

	stats   map[Key]*kstat
	global  map[uint64]Stat      // Sharer: kernels predictable somewhere, with the sharer's sample
	order   []uint64             // Sharer: global kernels in the order they became known
	sentOn  map[uint64][]Shape   // Sharer: communicator shapes each global kernel has crossed
	agreed  map[uint64]bool      // Sharer: global kernels known across the whole grid: skipped
	pooled  map[uint64]bool      // Sharer: global kernels whose sample is pooled over the processes (pool.go): charged from it
	alphas  map[uint64]float64   // Rehearser: critical-path counts of the counting run
	settled map[settleKey]bool   // collectives every member of a communicator agreed to skip
	elide   map[pairKey]pairNote // point-to-point messages left out of selective runs, with their estimates (elide.go)

	families map[famKey]*family // models on: each routine family's model (models.go)
	ready    int                // models on: signatures known to the tolerance from their own samples
}

// settleKey is a collective kernel on one communicator.
type settleKey struct {
	c commID
	h uint64
}

// NewTrack starts a track of policy p at tolerance eps.
func NewTrack(p policy.Policy, eps float64) *Track {
	tr := &Track{pol: p, Tolerance: eps, stats: map[Key]*kstat{}, global: map[uint64]Stat{}, sentOn: map[uint64][]Shape{},
		agreed: map[uint64]bool{}, pooled: map[uint64]bool{}, settled: map[settleKey]bool{}}
	_, tr.shares = p.(policy.Sharer)
	_, tr.carries = p.(policy.Carrier)
	_, tr.countsPath = p.(policy.PathCounter)
	_, tr.countingRun = p.(policy.Rehearser)
	tr.promiser, _ = p.(policy.Promiser)
	return tr
}

// afresh forgets what the track learnt of the configurations before, for a
// policy that starts each one anew (not a policy.Carrier): its kernels'
// samples, the collectives settled, the families' models, and what a
// Sharer learnt of the grid, which would otherwise skip the next
// configuration's kernels from the last one's samples. The critical-path
// counts (alphas) stay: a Rehearser's counting run, just before, set them
// for this configuration.
func (tr *Track) afresh() {
	tr.stats = map[Key]*kstat{}
	tr.settled = map[settleKey]bool{}
	tr.families, tr.ready = nil, 0
	tr.global, tr.order = map[uint64]Stat{}, nil
	tr.sentOn, tr.agreed, tr.pooled = map[uint64][]Shape{}, map[uint64]bool{}, map[uint64]bool{}
	tr.elide = nil
}

// Policy is the track's policy.
func (tr *Track) Policy() policy.Policy { return tr.pol }

// NeedsCountingRun reports whether the track's policy runs each
// configuration once more, counting the critical path (mode Counting, a
// skeleton of the run), before its selective run (policy.Rehearser).
func (tr *Track) NeedsCountingRun() bool { return tr.countingRun }

// Engine is one process's engine. It must be used from the goroutine that
// initialised MPI.
type Engine struct {
	world     *Comm
	worldRank int
	k         *kernels.Kernels
	qs        *quantiles
	nmin      int64
	models    bool       // kernels never measured are predicted from models (models.go)
	cold      *coldFirst // nil unless SetColdFirstCalls (cold.go)

	// sameClock: every rank reads the same mpi.Clock (one host), so a
	// receiver can tell idle waiting from transfer. Communication and
	// spins are timed with mpi.Clock; computation too, unless cpuTime:
	// this process shares its cores with other processes, so computation
	// and the code between kernels are timed in the process's CPU time and
	// the simulation at End shares the cores out (placement.go, sim.go).
	sameClock bool
	cpuTime   bool
	cpu       *cpuClock // cpuTime: the clock computation is timed in
	cpuFixed  bool      // SetCPUTime chose: NewGrid leaves cpuTime alone
	place     placement
	load      int // processes per CPU where the current grid (or the world) is most crowded: part of its communicators' shapes

	on           bool // a run is being intercepted
	skip         bool // skipping allowed (false in a counting run)
	elides       bool // messages may be left out of this run, and what it sees of them is noted (elide.go)
	keepMessages bool // SetElision(false)
	execMessages bool // SetMessagesExecuted(true): every message and collective executes
	pairs        map[pairKey]pairNote
	elided       int64   // left-out sends and receives this run
	counts       bool    // propagate path counts
	cutoff       float64 // the path past which this run may be cut short (cut.go); 0: never
	cut          bool    // this run was cut short
	tr           *Track
	recLen       int
	axes         []Shape // shapes of the current grid's axis communicators (Sharer agreement)

	// skeleton: a Counting run executes no computation kernel and sends
	// no skippable payload (skeleton.go).
	skeleton bool

	total, comp, comm float64 // path: time and its parts
	own               float64 // this process's time without propagation
	pathCounts        map[uint64]float64
	last              float64
	dirty             bool
	executed, skipped int64
	rec, peer, all    []float64 // scratch records

	// The critical-path log (replay.go): time added since the last entry
	// (its computation, communication and fixed-duration parts: fixed time
	// passes at the same pace however many processes share a core), the
	// entries of this run, settled collectives skipped without records.
	dT, dC, dM   float64
	dF           float64
	dB           float64 // bytes moved by the transfers in dF
	simDump      string  // APPROXTUNE_SIM_DUMP: a folder where rank 0 writes each replay's logs (calibration)
	dV           float64 // variance the skipped kernels added since the last entry (skippedFor)
	pathVar      float64 // the path's prediction variance, set by the replay
	plog         []event
	ends         endBuffers // End's buffers, kept from one run to the next
	settledSkips int64
	promisedRuns int64  // collectives executed without records, on a member's promise (comm.go)
	gen          uint64 // run number: communicators restart their counts
	nextComm     int64  // lowest identifier a new communicator may take

	// Timeline (SetTrace): tracing is the one branch the kernels pay when off.
	tracing bool
	trace   []Span  // this run's spans; its capacity is the limit
	dropped int64   // spans past the limit this run
	t0      float64 // the run's start (mpi.Clock)
}

// New creates the engine for this process over MPI_COMM_WORLD and routes the
// kernels of k through it.
func New(world *mpi.Comm, k *kernels.Kernels) (*Engine, error) {
	e := &Engine{worldRank: world.Rank(), k: k, nmin: 2, simDump: os.Getenv("APPROXTUNE_SIM_DUMP")}
	var err error
	if e.place, err = placementOf(world); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e.load = e.place.load(world.Size())
	if e.world, err = e.wrap(world); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if e.place.copyCost, err = measureCopyCost(e.world.in, e.place); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	e.sameClock = e.place.oneHost
	e.useCPUTime(e.place.shared(e.place.group[e.worldRank]))
	e.SetConfidence(0.95)
	k.SetInterceptor(e)
	return e, nil
}

// SetCPUTime chooses how computation is timed: in the process's CPU time (on)
// or in wall time (off), and keeps to it. Otherwise New chooses CPU time
// where this process shares its cores with the world's others, and NewGrid
// again for each grid, by the grid's processes (useCPUTime); on a core of
// its own the two agree. Call it between runs, not during one.
func (e *Engine) SetCPUTime(on bool) {
	e.useCPUTime(on)
	e.cpuFixed = true
}

// useCPUTime times computation in CPU time (on) or wall time, starting the
// CPU clock the first time.
func (e *Engine) useCPUTime(on bool) {
	e.cpuTime = on && cpuClockWorks()
	if e.cpuTime && e.cpu == nil {
		e.cpu = newCPUClock()
	}
}

// CPUTime reports whether computation is timed in CPU time (SetCPUTime).
func (e *Engine) CPUTime() bool { return e.cpuTime }

// CopyCost is the core time per byte of a large transfer that the
// simulation charges where processes share cores (measured at New,
// measureCopyCost, or CopyCost where it could not be), and whether any of
// the world's core sets is shared, so that the simulation uses it at all.
func (e *Engine) CopyCost() (float64, bool) { return e.place.copyCost, e.place.anyShared() }

// SetElision turns off (false) or back on (true, the default) the leaving
// out of point-to-point messages that both sides know are skipped
// (elide.go). Off, every skipped message still travels empty with its
// record, as on a communicator without Comm.ExactReceives. Set it between
// runs, on every process alike.
func (e *Engine) SetElision(on bool) { e.keepMessages = !on }

// SetMessagesExecuted makes every message and collective execute (true),
// computation kernels alone being skipped, or lets the policy skip them as
// kernels (false, the default). A program may send what it computes with
// inside floating-point data (HPL sends each panel's pivots as doubles at
// the end of the panel): a skipped message leaves its receiver the
// previous contents, and the ranks then swap the wrong rows, read past
// their arrays or disagree on the next message's size. Set it between
// runs, on every process alike.
func (e *Engine) SetMessagesExecuted(on bool) { e.execMessages = on }

// SetConfidence sets the confidence level of the intervals (0.95 by default).
func (e *Engine) SetConfidence(c float64) {
	if e.qs == nil || e.qs.conf != c {
		e.qs = newQuantiles(c)
	}
}

// SetNMin sets the least number of samples before a kernel may be skipped.
func (e *Engine) SetNMin(n int) { e.nmin = int64(n) }

// World is MPI_COMM_WORLD through the engine.
func (e *Engine) World() *Comm { return e.world }

// Kernels is the computation-kernel entry point through the engine.
func (e *Engine) Kernels() *kernels.Kernels { return e.k }

// RunMode says how a run is intercepted.
type RunMode int

// Run modes.
const (
	Off       RunMode = iota // full execution, no interception (reference runs)
	Selective                // intercept and skip by the track's policy
	Counting                 // a skeleton of the run that counts kernels on the critical path (a policy.Rehearser's extra run; skeleton.go)
)

// CountingFull counts the kernels on the critical path as Counting does,
// but executes everything: the reference the skeleton's counts are checked
// against (the workloads' skeleton tests). No policy runs it: apriori's
// counting run is always the skeleton, and a program whose control flow
// depends on computed values is warned of (docs/programs.md).
const CountingFull = Counting + 1

// Begin starts a run on the track (nil with Off). Call it on every world rank
// right after a barrier.
func (e *Engine) Begin(tr *Track, mode RunMode) {
	e.on = mode != Off
	e.tr = tr
	e.skip = mode == Selective
	e.skeleton = mode == Counting
	e.total, e.comp, e.comm, e.own = 0, 0, 0, 0
	e.dirty = false
	e.executed, e.skipped = 0, 0
	e.dT, e.dC, e.dM, e.dF, e.dV, e.dB = 0, 0, 0, 0, 0, 0
	e.pathVar = 0
	e.plog = e.plog[:0]
	e.settledSkips, e.promisedRuns = 0, 0
	e.elides, e.elided = false, 0
	e.cut = false
	clear(e.pairs)
	e.gen++
	if e.tracing {
		e.trace, e.dropped = e.trace[:0], 0
	}
	if !e.on {
		return
	}
	e.counts = mode == Counting || mode == CountingFull || tr.countsPath
	if e.counts {
		e.pathCounts = map[uint64]float64{}
	} else {
		e.pathCounts = nil
	}
	if !tr.carries && mode == Selective {
		tr.afresh()
	}
	e.elides = !e.keepMessages && !e.execMessages && mode == Selective && tr.shares && tr.carries && !e.counts && tr.Tolerance > 0
	for _, st := range tr.stats {
		st.calls, st.skips = 0, 0
	}
	for _, f := range tr.families {
		f.runSE = 0
	}
	e.recLen = recBase
	if tr.shares {
		e.recLen += maxShares * shareLen
	}
	if e.counts {
		e.recLen += 2 * maxCounts
	}
	e.rec = make([]float64, e.recLen)
	e.peer = make([]float64, e.recLen)
	e.t0 = mpi.Clock()
	e.last = e.now()
}

// RunStats is what a process knows at the end of a run.
type RunStats struct {
	Total, Comp, Comm float64 // this process's path
	Own               float64 // its time without propagation from others
	Executed, Skipped int64   // its kernel calls
	// Var is the variance of Total's prediction: what the skipped
	// kernels' estimated means leave uncertain (skippedFor), along the
	// path the replay recovered. 0 in full and counting runs.
	Var      float64
	Settled  int64 // of the skipped, collectives skipped without exchanging records
	Elided   int64 // of the skipped, point-to-point sends and receives left out (elide.go)
	Promised int64 // of the executed, collectives run without records on a member's promise
	// CutShort: the workload stopped when the longest path passed the
	// run's cutoff (cut.go); the path is that of the part that ran.
	CutShort bool
}

// End closes the run and returns this process's figures. After a counting
// run (Counting, CountingFull, or a policy.PathCounter's selective run) it
// also computes the track's critical-path counts (collective over world).
func (e *Engine) End() (RunStats, error) {
	// Whatever happens, the run is over: kernels after it are not the
	// run's (a counting error had left the engine on).
	defer func() { e.on, e.elides, e.cutoff = false, false, 0 }()
	if e.cold != nil {
		e.cold.flush()
	}
	if e.on {
		e.gap()
		if e.skip {
			if err := e.replay(); err != nil {
				return RunStats{}, err
			}
		}
	}
	rs := RunStats{Total: e.total, Comp: e.comp, Comm: e.comm, Own: e.own, Executed: e.executed, Skipped: e.skipped, Var: e.pathVar,
		Settled: e.settledSkips, Promised: e.promisedRuns, Elided: e.elided, CutShort: e.cut}
	if e.on && !e.skip && e.counts {
		if err := e.criticalCounts(); err != nil {
			return rs, err
		}
	}
	return rs, nil
}

// smallStart reads the CPU clock before a point-to-point call that moves a
// message of at most bytes within the eager limit, where computation is
// timed in CPU time (cpuTime); else it returns -1. Such a message costs its
// members the processing of the call, work that the processes of a shared
// core take turns at (add, sim.go). Its wall time on a shared core also
// holds the turns of the others, which the simulation then adds once more
// (cholesky2d n=1024 b=16 on 4 ranks on 2 cores, 2 KB messages: predicted
// at tolerance 0 twice its full runs); its CPU time holds the polling for a
// late partner instead. Each bounds the processing from above: the call
// costs the lesser (min with cpuSince). A small collective keeps its wall
// time from the last member's arrival (collectiveTime): there the members'
// turns to get a core, step after step of the collective, are what a full
// run pays too, which the simulation does not make (cholesky3d at 2^-3 and
// 2^-5, b=32 and 128, came out 4-6% under its references with the lesser,
// 2026-11-29, against 0-3% over with the wall time).
func (e *Engine) smallStart(bytes int) float64 {
	if !e.cpuTime || bytes > EagerLimit {
		return -1
	}
	return e.cpu.now()
}

// cpuSince is the CPU time since smallStart read c0, or +Inf where it did
// not.
func (e *Engine) cpuSince(c0 float64) float64 {
	if c0 < 0 {
		return math.Inf(1)
	}
	return max(e.cpu.now()-c0, 0)
}

// now reads the clock that times computation (cpuTime: the process's CPU
// time, else mpi.Clock).
func (e *Engine) now() float64 {
	if e.cpuTime {
		return e.cpu.now()
	}
	return mpi.Clock()
}

// gap adds the time since the last intercepted event to the path and
// returns the clock's reading.
func (e *Engine) gap() float64 {
	if e.skeleton { // its path is its cost model's alone (skeleton.go)
		return e.last
	}
	now := e.now()
	d := max(now-e.last, 0)
	e.total += d
	e.dT += d
	e.own += d
	e.last = now
	return now
}

// resume marks the end of the engine's own work, so it is not charged.
func (e *Engine) resume() { e.last = e.now() }

// resumeAt is resume after a communication that ended at t1 (mpi.Clock):
// reading the CPU clock again is needed only when computation is timed in it.
func (e *Engine) resumeAt(t1 float64) {
	if e.cpuTime {
		e.last = e.cpu.now()
		return
	}
	e.last = t1
}

func (e *Engine) stat(k Key) *kstat {
	st := e.tr.stats[k]
	if st == nil {
		st = &kstat{key: k, hash: k.hash()}
		if e.tr.alphas != nil {
			st.alpha = e.tr.alphas[st.hash]
		}
		st.pooled = e.tr.pooled[st.hash]
		e.tr.stats[k] = st
	}
	st.calls++
	if e.counts {
		e.pathCounts[st.hash]++
	}
	return st
}

// skippable applies the track's policy to a kernel about to run: the
// predictability test with the policy's significance and, for a Sharer,
// what the grid knows.
func (e *Engine) skippable(st *kstat) bool {
	if !e.skip {
		return false
	}
	tr := e.tr
	if tr.shares {
		if _, ok := tr.global[st.hash]; ok {
			return e.agreedOn(st.hash)
		}
	}
	if st.N == 0 && e.models && (e.cold == nil || !e.cold.holds(st.key)) && e.modelled(st) {
		return true
	}
	alpha := tr.pol.Significance(e.view(st))
	if !e.qs.Predictable(st.Stat, tr.Tolerance, alpha, e.nmin) {
		return false
	}
	if tr.shares {
		tr.learn(st.hash, st.Stat, Shape{})
		return e.agreedOn(st.hash)
	}
	return true
}

// known says whether a sample's mean is known to the track's tolerance by
// itself: its confidence interval within it, with no policy's significance
// widening it (alpha 1). That is what a kernel must be for a Sharer to
// share it with the grid, and for its mean to enter a family's model or a
// pooled sample, whatever the policy's significance (eager's is 1); the
// policy's significance decides only whether this process skips it
// (skippable).
func (e *Engine) known(s Stat) bool { return e.qs.Predictable(s, e.tr.Tolerance, 1, e.nmin) }

// view is what the track's policy may read of a kernel.
func (e *Engine) view(st *kstat) policy.Kernel {
	k := policy.Kernel{Calls: st.calls, CriticalCount: st.alpha}
	if e.tr.countsPath {
		k.PathCount = e.pathCounts[st.hash]
	}
	return k
}

// sample is the sample a skipped kernel's time is estimated from: this
// process's, else the one another process shared (Sharer), or the one
// pooled over the processes, this one's among them (pool.go); empty when
// there is none. A Sharer skips a kernel the grid knows on the shared
// sample's test, and charges this process's own sample, which holds how
// the kernel runs here, unless that sample does not even know its mean to
// within itself (a half-width at the engine's confidence over 100% of the
// mean): then the shared
// one, which passed the test. A user's review found eager charging a
// process's 8 samples of a 2 ms spin, one of them a slow call, with a
// mean of 15 ms and a half-width of 203% at 2^-3, and predicting 4.4
// times the run. Charging the shared sample whenever the own one failed
// the test moved eager's predictions on cholesky3d n=4096 by 3-8% (3
// sweeps each, 2026-11-29: over at 2^-1 where communications took
// another member's first samples, under at 2^-3 where computations took
// the samples that agreed first).
func (e *Engine) sample(st *kstat) Stat {
	if st.N == 0 || st.pooled {
		return e.tr.global[st.hash]
	}
	if g, shared := e.tr.global[st.hash]; shared && e.qs.HalfWidth(st.Stat) > st.Mean {
		return g
	}
	return st.Stat
}

// mean is the time charged for a skipped kernel: its sample's mean, or,
// without a sample, the mean a point-to-point peer sent along.
func (e *Engine) mean(st *kstat, sent float64) float64 {
	if s := e.sample(st); s.N > 0 {
		return s.Mean
	}
	return sent
}

// meanVar is the variance of the mean charged from sample s (see sample):
// the square of its standard error s/sqrt(n), widened by t_{n-1}/z at the
// engine's confidence level, so that z·SE is the kernel's own Student t
// half-width (quantiles.HalfWidth). A kernel is skipped as soon as its
// interval looks narrow, after as few as two samples, and a narrow
// interval from two samples is mostly two samples that happen to agree:
// their s understates the spread, and the t quantile (12.7 for one degree
// of freedom) is what keeps such an interval honest. A mean only sent
// along by a peer (no sample) carries no spread and counts 0.
func (e *Engine) meanVar(s Stat) float64 {
	h := e.qs.HalfWidth(s)
	if s.N < 2 || math.IsInf(h, 0) || math.IsNaN(h) {
		return 0
	}
	se := h / e.qs.z
	return se * se
}

// executedFor records an executed kernel's time dt; it ran from t0 to t1
// (mpi.Clock, for the timeline).
func (e *Engine) executedFor(st *kstat, dt float64, t0, t1 float64) {
	if e.tracing {
		e.span(st.key, t0, t1, 0, false)
	}
	if e.cold == nil || !e.cold.hold(st, dt) {
		st.Add(dt)
	}
	e.add(dt, st.key)
	e.executed++
	if e.models {
		e.noteMeasured(st)
	}
	// A Sharer shares a kernel as soon as an execution makes it predictable,
	// so its statistics travel with the run's next records: a kernel that
	// runs once per run (the top of a recursion) is then agreed on by the
	// next run, instead of being found predictable only when next reached
	// and executed once more while its statistics travel. Communication
	// kernels wait until next reached: their first samples are taken while
	// the members arrive out of step, and overstate their mean.
	if e.skip && e.tr.shares && !st.key.Op.IsComm() {
		if _, ok := e.tr.global[st.hash]; !ok && e.known(st.Stat) {
			e.tr.learn(st.hash, st.Stat, Shape{})
		}
	}
}

// skippedFor charges a skipped kernel's predicted time (mean; sent is what
// a point-to-point peer sent along, or 0), and the variance of that
// prediction to the path (see meanVar).
//
// Every skipped call of a kernel is charged the same estimated mean, so
// their errors are one error counted c times: c skips add c²·SE² to the
// variance, not c·SE². The i-th skip this run adds (2i-1)·SE², which sums
// to c²·SE² over this process's c skips. A path that takes only some of a
// process's skips (it went through another process for a while) is charged
// at least their c'² share, a little more when they were not the first:
// the path's standard error leans to the conservative side. Estimates of
// different kernels, or of one kernel on different processes, come from
// different samples and add as independent variances; kernels predicted
// from one family's model do not (modelVar).
func (e *Engine) skippedFor(st *kstat, sent float64) {
	smp, t := e.sample(st), sent
	st.skips++
	switch {
	case smp.N > 0:
		t = smp.Mean
		e.dV += float64(2*st.skips-1) * e.meanVar(smp)
	case st.pred != nil:
		t = st.pred.mean
		e.dV += e.modelVar(st)
	}
	if e.tracing {
		now := mpi.Clock()
		e.span(st.key, now, now, t, true)
	}
	e.add(t, st.key)
	e.skipped++
	e.dirty = true
}

// add puts a kernel's time (executed or charged) on the path: in the log, a
// spin's and a transfer's as fixed-duration time, a computation's and a
// small message's as work that the processes of a shared core take turns
// at (sim.go; see smallMessage).
func (e *Engine) add(t float64, k Key) {
	e.total += t
	e.dT += t
	e.own += t
	if k.IsComm() {
		e.comm += t
		e.dM += t
		if !smallMessage(k) {
			e.dF += t
			e.dB += 8 * float64(k.M)
		}
		return
	}
	e.comp += t
	e.dC += t
	if k.Op == Op(kernels.Spin) {
		e.dF += t
	}
}

// smallMessage reports whether a communication kernel moves messages
// within the eager limit. Such a message costs its members the processing
// of the call (the library's progress engine, copies into and out of
// shared memory, the switch to the partner that shares the core), not a
// transfer: on a core shared by several processes that is work they take
// turns at, like computation, and a run of many small collectives on 4
// processes to a core takes about 4 times their summed cost. A larger
// message is a transfer, which passes at its own pace.
func smallMessage(k Key) bool { return 8*int64(k.M) <= EagerLimit }

// Kernel intercepts a computation kernel (kernels.Interceptor).
func (e *Engine) Kernel(c *kernels.Call) {
	if !e.on {
		if e.cold != nil {
			e.cold.seen[compKey(c.Sig)] = true
		}
		c.Run()
		return
	}
	if e.skeleton {
		e.skeletal(e.stat(compKey(c.Sig)), computeCost(c))
		return
	}
	if e.cpuTime && c.Sig.Routine != kernels.Spin { // a spin lasts its time however the cores are shared
		e.kernelCPU(c)
		return
	}
	e.gap()
	st := e.stat(compKey(c.Sig))
	if e.cold != nil {
		e.cold.called(st)
	}
	if e.skippable(st) {
		e.skippedFor(st, 0)
		e.resume()
		return
	}
	e.prepareInput(c) // not timed
	t0 := mpi.Clock()
	c.Run()
	t1 := mpi.Clock()
	e.executedFor(st, t1-t0, t0, t1)
	e.resumeAt(t1)
}

// prepareInput resets an executed factorization's input where it may hold
// what skipped kernels left, and reports whether it looked at the input at
// all (so the caller leaves that time out). After this process skipped a
// kernel in the run, the input is reset. Before, in a selective run that
// can skip (tolerance above 0), it is reset only if it holds NaN, Inf or an
// extreme magnitude (kernels.Call.Suspect): another process's skipped
// kernels can have left those, and the factorization takes another time
// on them. Full runs, and selective runs at tolerance 0, leave it alone.
func (e *Engine) prepareInput(c *kernels.Call) bool {
	switch {
	case !c.Resettable():
		return false
	case e.dirty:
		c.Reset()
	case e.skip && e.tr.Tolerance > 0:
		if c.Suspect() {
			c.Reset()
		}
	default:
		return false
	}
	return true
}

// kernelCPU is Kernel timed in the process's CPU time (cpuTime). A CPU-clock
// read costs more than the engine's bookkeeping it would leave out, so the
// clock is read only around an executed kernel: the code since the previous
// event, the bookkeeping included, is charged as the gap before it (or
// before the next event, in the same log entry, when the kernel is skipped).
func (e *Engine) kernelCPU(c *kernels.Call) {
	st := e.stat(compKey(c.Sig))
	if e.cold != nil {
		e.cold.called(st)
	}
	if e.skippable(st) {
		e.skippedFor(st, 0)
		return
	}
	t0 := e.gap()
	if e.prepareInput(c) {
		t0 = e.cpu.now() // neither the check nor the reset is timed, as in Kernel
		e.last = t0
	}
	var w0, w1 float64
	if e.tracing {
		w0 = mpi.Clock()
	}
	c.Run()
	t1 := e.cpu.now()
	if e.tracing {
		w1 = mpi.Clock()
	}
	e.executedFor(st, max(t1-t0, 0), w0, w1)
	e.last = t1
}

// Report lists this process's kernels on the track, most called first.
func (e *Engine) Report(tr *Track) []sweep.KernelStat { return e.report(tr, nil) }

// report is Report of the kernels keep keeps (nil: all).
func (e *Engine) report(tr *Track, keep func(*kstat) bool) []sweep.KernelStat {
	out := make([]sweep.KernelStat, 0, len(tr.stats))
	for _, st := range tr.stats {
		if keep != nil && !keep(st) {
			continue
		}
		h := e.qs.HalfWidth(st.Stat)
		if math.IsInf(h, 0) || math.IsNaN(h) {
			h = -1
		}
		state := sweep.KernelExecuting
		_, global := tr.global[st.hash]
		if global || st.skips > 0 || e.qs.Predictable(st.Stat, tr.Tolerance, 1, e.nmin) {
			state = sweep.KernelPredictable
		}
		ks := sweep.KernelStat{Key: st.key.String(), Routine: st.key.Op.String(), Count: st.N, MeanS: st.Mean,
			HalfS: h, Calls: st.calls, Skipped: st.skips, State: state}
		if st.N == 0 && st.pred != nil { // predicted from its model: no samples
			ks.MeanS, ks.HalfS, ks.State = st.pred.mean, st.pred.rel*st.pred.mean, sweep.KernelModelled
		}
		out = append(out, ks)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Calls != out[j].Calls {
			return out[i].Calls > out[j].Calls
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// Prediction is a run's outcome over all processes: the predicted time (the
// longest path), its standard error, that process's breakdown, and the
// kernel counts summed.
type Prediction struct {
	TotalS float64
	// SE is the standard error of TotalS: the square root of the
	// longest path's variance (RunStats.Var).
	SE float64
	// Path is the breakdown of the process whose path is the longest.
	Path sweep.Path
	// Executed, Skipped, Settled and Promised are the RunStats counts
	// summed over the processes.
	Executed, Skipped, Settled, Promised int64
	// CutShort: the run was cut short (RunStats.CutShort), and TotalS is
	// the prediction of the part that ran, at least the run's cutoff.
	CutShort bool
}

// Predict combines every process's figures of the run that just ended
// (End's RunStats) into the prediction. It is collective over the world.
func (e *Engine) Predict(rs RunStats) (Prediction, error) {
	w := e.world.c
	var p Prediction
	all := make([]float64, 4*w.Size())
	if err := mpi.Allgather(w, []float64{rs.Total, rs.Comp, rs.Comm, rs.Var}, all); err != nil {
		return p, fmt.Errorf("gather paths: %w", err)
	}
	for q := 0; q < w.Size(); q++ {
		if t := all[4*q]; t > p.TotalS {
			p.TotalS, p.SE = t, math.Sqrt(math.Max(all[4*q+3], 0))
			p.Path = sweep.Path{CompS: all[4*q+1], CommS: all[4*q+2], IdleS: t - all[4*q+1] - all[4*q+2]}
		}
	}
	cut := int64(0)
	if rs.CutShort {
		cut = 1
	}
	counts := []int64{rs.Executed, rs.Skipped, rs.Settled, rs.Promised, cut}
	if err := mpi.Allreduce(w, counts, counts, mpi.Sum); err != nil {
		return p, fmt.Errorf("sum kernel counts: %w", err)
	}
	p.Executed, p.Skipped, p.Settled, p.Promised, p.CutShort = counts[0], counts[1], counts[2], counts[3], counts[4] > 0
	return p, nil
}
