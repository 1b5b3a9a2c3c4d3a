package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/selective"
	"github.com/approxtune/approxtune/internal/selective/policy"
	"github.com/approxtune/approxtune/internal/workloads"
	"github.com/approxtune/approxtune/sweep"
	"gonum.org/v1/gonum/stat"
)

// Emit receives the events of a sweep; only rank 0's is called.
type Emit func(event any) error

// runner executes sweeps on every rank. It lives on the MPI goroutine.
type runner struct {
	world   *mpi.Comm
	eng     *selective.Engine
	backend kernels.Backend
	emit    Emit
	// warnings go into the start event (environmentWarnings, rank 0).
	warnings []string
	// stop, when set, is rank 0's wish to end the sweep (a cancel from the
	// session, or its connection gone); it is called on rank 0 only, at
	// every run boundary, and may wait there (a gated command waits for the
	// session's acknowledgements, cancelCheck). Every timed run whose time
	// is reported starts after a boundary, unless no event was sent since
	// the last.
	stop func() bool
	// lost is the first error of rank 0's emit: the events' reader is gone
	// (the session's connection, a closed pipe). Rank 0 goes on as the other
	// ranks do until the next boundary, where every rank stops together: a
	// rank that left alone would leave the others in a collective forever.
	lost error
	// announce sends a sweep.RunStart before every run and set-up (for a
	// session's deadline; a sweep file's output leaves them out).
	announce bool
}

// begin announces a run (or set-up), when the runner announces them.
func (r *runner) begin(ev sweep.RunStart) error {
	if !r.announce {
		return nil
	}
	ev.Type, ev.V = sweep.TypeRunStart, sweep.ProtocolVersion
	return r.send(ev)
}

// boundary decides, collectively, whether the sweep stops here: when rank
// 0's stop says so (errCancelled) or an event could not be sent (the send
// error). Every rank returns the same answer.
func (r *runner) boundary() error {
	return r.agree(r.root() && r.lost == nil && r.stop != nil && r.stop())
}

// agree broadcasts rank 0's verdict at a boundary: a lost event (r.lost)
// ends the sweep with the send error, else cancel with errCancelled. Only
// rank 0's arguments count; every rank returns the same answer.
func (r *runner) agree(cancel bool) error {
	v := []int64{0}
	if r.root() {
		switch {
		case r.lost != nil:
			v[0] = 2
		case cancel:
			v[0] = 1
		}
	}
	if err := mpi.Bcast(r.world, v, 0); err != nil {
		return err
	}
	switch v[0] {
	case 1:
		return errCancelled
	case 2:
		return r.lostError()
	}
	return nil
}

// lostError is the error of a sweep whose events rank 0 could not send
// (the same on every rank but the cause, which rank 0 only knows).
func (r *runner) lostError() error {
	if r.lost != nil {
		return fmt.Errorf("sending the sweep's events: %w", r.lost)
	}
	return errors.New("rank 0 could not send the sweep's events")
}

func (r *runner) root() bool { return r.world.Rank() == 0 }

// copyCost is the copy cost a sweep's start reports: the engine's, where
// processes share cores (selective.Engine.CopyCost); nil elsewhere.
func (r *runner) copyCost() *float64 {
	if c, ok := r.eng.CopyCost(); ok {
		return &c
	}
	return nil
}

// send emits an event from rank 0 (a no-op elsewhere). It never fails one
// rank alone: a failed emit is kept in r.lost and ends the sweep on every
// rank at the next boundary.
func (r *runner) send(ev any) error {
	if !r.root() || r.emit == nil || r.lost != nil {
		return nil
	}
	if err := r.emit(ev); err != nil {
		r.lost = err
	}
	return nil
}

// timed runs f between two barriers of world and returns the wall time, the
// max over ranks. A garbage collection that is due runs first, untimed.
func (r *runner) timed(f func() error) (float64, error) {
	collectIfDue(0.75)
	if err := r.world.Barrier(); err != nil {
		return 0, err
	}
	t0 := mpi.Wtime()
	ferr := protect(f)
	if err := r.world.Barrier(); err != nil {
		return 0, err
	}
	dt := []float64{mpi.Wtime() - t0}
	if err := mpi.Allreduce(r.world, dt, dt, mpi.Max); err != nil {
		return 0, err
	}
	return dt[0], ferr
}

// protect turns a selective.Failure panic into an error.
func protect(f func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			if fl, ok := p.(selective.Failure); ok {
				err = fl
				return
			}
			panic(p)
		}
	}()
	return f()
}

// config is one configuration prepared on this rank: its grid and, on
// members, its instance.
type config struct {
	grid *selective.Grid
	inst workloads.Instance
}

func (r *runner) prepare(w workloads.Workload, c sweep.Config, seed int64) (*config, error) {
	g, err := r.eng.NewGrid(w.Grid(c))
	if err != nil {
		return nil, err
	}
	pc := &config{grid: g}
	if g.Member() {
		env := &workloads.Env{Grid: g, K: r.eng.Kernels(), Seed: seed}
		if pc.inst, err = w.Setup(env, c); err != nil {
			return nil, fmt.Errorf("setup %s: %w", c.Label(), err)
		}
	}
	// Collect now, untimed: the set-up just allocated this configuration's
	// matrices and left the previous one's to the collector, whose cycle
	// would otherwise run beside the first timed runs (reference or
	// selective). Its workers are threads of this process, which the
	// engine's CPU clock counts.
	runtime.GC()
	return pc, nil
}

// once runs the prepared configuration once, under the engine in mode, and
// returns the wall time.
func (r *runner) once(ctx context.Context, pc *config, tr *selective.Track, mode selective.RunMode) (float64, selective.RunStats, error) {
	if pc.inst != nil {
		pc.inst.Init()
	}
	var rs selective.RunStats
	dt, err := r.timed(func() error {
		r.eng.Begin(tr, mode)
		var err error
		if pc.inst != nil {
			err = pc.inst.Run(ctx)
		}
		var eerr error
		rs, eerr = r.eng.End()
		if err == nil {
			err = eerr
		}
		return err
	})
	return dt, rs, err
}

// warmUp runs a prepared configuration once, untimed: its buffers were just
// allocated, and their first touch (page faults), the first messages between
// new communicators' ranks and cold caches would otherwise land in the first
// timed run only. When selective runs follow (engine), it runs through the
// engine, at tolerance 0 on a track of its own (so every kernel executes and
// no policy's statistics change): the engine's first run on a configuration
// meets its communicators' record channels, its kernel keys and its logs for
// the first time, and that cost would land in the first selective run
// only. Otherwise (references only) it runs as they do, with the engine off.
func (r *runner) warmUp(ctx context.Context, pc *config, engine bool) error {
	if !engine {
		_, _, err := r.once(ctx, pc, nil, selective.Off)
		return err
	}
	// At tolerance 0 nothing is skipped whatever the policy; the simplest one does.
	_, _, err := r.once(ctx, pc, selective.NewTrack(policy.Conditional{}, 0), selective.Selective)
	return err
}

// reference runs a prepared configuration once at full execution with the
// engine off, verifies the result, and returns the wall time and the largest
// residual over the processes.
func (r *runner) reference(ctx context.Context, pc *config) (float64, float64, error) {
	dt, _, err := r.once(ctx, pc, nil, selective.Off)
	if err != nil {
		return 0, 0, err
	}
	res := 0.0
	if pc.inst != nil {
		if err := protect(func() error { res = pc.inst.Verify(); return nil }); err != nil {
			return 0, 0, err
		}
	}
	v := []float64{res}
	if err := mpi.Allreduce(r.world, v, v, mpi.Max); err != nil {
		return 0, 0, err
	}
	return dt, v[0], nil
}

// outcome is a selective run as the sweep sees it.
type outcome struct {
	wall      float64 // selective run, plus apriori's counting run
	counting  float64 // of wall, apriori's counting run (0: none)
	predicted float64
	se        float64 // predicted's standard error
	path      sweep.Path
	local     float64 // rank 0's time without propagation
	executed  int64
	skipped   int64
	settled   int64
	promised  int64
	cut       bool // cut short at the run's cutoff (selective.Prediction.CutShort)
}

// selectiveRun runs a configuration under a track's policy (a
// policy.Rehearser first runs a skeleton of it, selective.Counting, counting
// the critical path). A cutoff > 0 lets the selective run be cut short
// once its prediction passes it (selective.Engine.SetCutoff).
func (r *runner) selectiveRun(ctx context.Context, pc *config, tr *selective.Track, cutoff float64) (outcome, error) {
	var o outcome
	if tr.NeedsCountingRun() {
		dt, _, err := r.once(ctx, pc, tr, selective.Counting)
		if err != nil {
			return o, err
		}
		o.wall, o.counting = dt, dt
	}
	r.eng.SetCutoff(cutoff)
	dt, rs, err := r.once(ctx, pc, tr, selective.Selective)
	if err != nil {
		return o, err
	}
	o.wall += dt
	p, err := r.eng.Predict(rs)
	if err != nil {
		return o, err
	}
	o.predicted, o.se, o.path = p.TotalS, p.SE, p.Path
	o.executed, o.skipped, o.settled, o.promised = p.Executed, p.Skipped, p.Settled, p.Promised
	o.local, o.cut = rs.Own, p.CutShort
	return o, nil
}

// tally accumulates one policy x tolerance over the configurations.
type tally struct {
	tr   *selective.Track
	runs []sweep.Measured // in the order they were reported
}

// record adds a run of configuration i whose references' mean is ref (NaN
// when it has none) and returns it.
func (t *tally) record(i int, o outcome, ref float64) sweep.Measured {
	m := sweep.Measured{Config: i, PredictedS: o.predicted, SelectiveS: o.wall, ReferenceS: ref}
	t.runs = append(t.runs, m)
	return m
}

// sweep runs every configuration of spec.
func (r *runner) sweep(ctx context.Context, spec *sweep.Spec, configs []sweep.Config) error {
	if err := r.sweepBody(ctx, spec, configs); err != nil {
		return err
	}
	// An event lost after the last boundary (the end of the sweep) fails
	// the sweep too, on every rank.
	return r.agree(false)
}

// sweepBody is sweep without the final check of lost events.
func (r *runner) sweepBody(ctx context.Context, spec *sweep.Spec, configs []sweep.Config) error {
	w, ok := workloads.Lookup(spec.Workload)
	if !ok {
		return fmt.Errorf("unknown workload %q", spec.Workload)
	}
	r.eng.SetConfidence(spec.Confidence)
	r.eng.SetNMin(spec.NMin)
	r.eng.SetModels(spec.Models)
	r.eng.SetMessagesExecuted(spec.RunsMessages())
	if spec.Trace && len(spec.Policies) > 0 && spec.Mode != sweep.ModeReference {
		r.eng.SetTrace(traceLimit(r.world.Size()))
		defer r.eng.SetTrace(0)
	}
	if spec.Search != sweep.SearchNone {
		return r.search(ctx, spec, w, configs)
	}
	t0 := mpi.Wtime()
	tallies, err := newTallies(spec)
	if err != nil {
		return err
	}
	warnings := r.warnings
	if w, err := r.restoreCarried(spec, tallies); err != nil {
		return err
	} else if w != "" {
		warnings = append(slices.Clip(warnings), w)
	}
	sw := &sweepRun{r: r, spec: spec, w: w, tallies: tallies, total: len(configs),
		refMeans: make([]float64, len(configs)), refRuns: make([][]float64, len(configs))}
	if len(tallies) > 0 {
		sw.total *= len(tallies)
	}
	if len(spec.Runs) > 0 {
		sw.total = len(spec.Runs)
	}
	if err := r.send(sweep.Start{Type: sweep.TypeStart, V: sweep.ProtocolVersion, Spec: spec, Configs: configs,
		Runs: sw.total, Ranks: r.world.Size(), BLAS: r.backend.Name(), Warnings: warnings, CopyCostSPerB: r.copyCost()}); err != nil {
		return err
	}
	for i := range sw.refMeans {
		sw.refMeans[i] = math.NaN() // configurations not run (resumed sweeps) stay NaN
	}
	for i, c := range configs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if !spec.WantsConfig(i) {
			continue
		}
		if err := r.boundary(); err != nil {
			return err
		}
		if err := r.begin(sweep.RunStart{Index: i, Kind: sweep.RunSetup}); err != nil {
			return err
		}
		pc, err := r.prepare(w, c, spec.Seed)
		if err != nil {
			return err
		}
		err = sw.configuration(ctx, i, c, pc)
		pc.grid.Free()
		if errors.Is(err, errCancelled) {
			// Every rank stopped here (a boundary's verdict): the runs
			// reported before the stop carry their statistics too.
			if cerr := sw.carry(i); cerr != nil {
				return fmt.Errorf("configuration %s: %w", c.Label(), cerr)
			}
			return err
		}
		if err != nil {
			return fmt.Errorf("configuration %s: %w", c.Label(), err)
		}
		if err := sw.carry(i); err != nil {
			return fmt.Errorf("configuration %s: %w", c.Label(), err)
		}
	}
	return sw.summaries(configs, mpi.Wtime()-t0)
}

// newTallies makes a tally per policy x tolerance of spec (none for
// reference sweeps).
func newTallies(spec *sweep.Spec) ([]*tally, error) {
	if spec.Mode == sweep.ModeReference {
		return nil, nil
	}
	var tallies []*tally
	for _, p := range spec.Policies {
		pol, err := policy.Lookup(p)
		if err != nil {
			return nil, err
		}
		for _, tol := range spec.Tolerances {
			tallies = append(tallies, &tally{tr: selective.NewTrack(pol, float64(tol))})
		}
	}
	return tallies, nil
}

// sweepRun is the state of one sweep across its configurations.
type sweepRun struct {
	r        *runner
	spec     *sweep.Spec
	w        workloads.Workload
	tallies  []*tally
	done     int         // results sent so far
	total    int         // results the sweep is made of
	refMeans []float64   // each configuration's mean reference time (NaN: none)
	refRuns  [][]float64 // each configuration's reference times
	reported []*tally    // the tallies whose run of the current configuration was reported
}

// summaries sends the sweep's summary events.
func (sw *sweepRun) summaries(configs []sweep.Config, elapsed float64) error {
	tallies := make([]sweep.Tally, len(sw.tallies))
	for i, t := range sw.tallies {
		tallies[i] = sweep.Tally{Policy: t.tr.Policy().Name(), Tolerance: t.tr.Tolerance, Runs: t.runs}
	}
	for _, s := range sweep.Summaries(sw.w.Name(), sw.spec.Mode, configs, tallies, sw.refMeans, sw.refRuns, elapsed) {
		if err := sw.r.send(s); err != nil {
			return err
		}
	}
	return nil
}

// configuration runs one configuration: a selective run per wanted policy x
// tolerance and, unless tuning, its reference runs.
//
// The references are interleaved with the selective runs (sweep.ReferenceSlots)
// rather than all taken first: on a shared machine the speed of a whole run
// drifts over seconds, and references taken before all the selective runs
// would measure another machine than the last of them ran on, an error the
// same for every policy of the configuration. So the result lines of the runs made before a
// configuration's last reference (and the kernels and trace lines that
// follow them, taken as their runs end) wait for it, and a progress line
// tells of each such run as it ends; if the sweep stops or fails on the
// way, the runs done so far are still reported, judged against the
// references taken so far, if any.
func (sw *sweepRun) configuration(ctx context.Context, i int, c sweep.Config, pc *config) (err error) {
	cr := &configRun{sweepRun: sw, i: i, c: c, pc: pc}
	sw.reported = sw.reported[:0]
	for _, t := range sw.tallies {
		if sw.spec.Wants(i, t.tr.Policy().Name(), t.tr.Tolerance) {
			cr.wanted = append(cr.wanted, t)
		}
	}
	if sw.spec.Mode != sweep.ModeTune {
		cr.reps = sw.spec.ReferenceReps
		if known := sw.spec.References[i]; len(known) > 0 && len(sw.tallies) > 0 {
			// A resumed configuration whose earlier runs were judged
			// against these: its runs now are too.
			cr.refs, cr.reps, cr.known = slices.Clone(known), len(known), true
		}
		if err := sw.r.begin(sweep.RunStart{Index: i, Kind: sweep.RunWarmUp}); err != nil {
			return err
		}
		if err := sw.r.warmUp(ctx, pc, len(cr.wanted) > 0); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	cr.slots = sweep.ReferenceSlots(cr.reps, len(cr.wanted))
	defer func() {
		// Runs with no reference yet are left out: a resumed sweep runs
		// them again, with their configuration's references.
		if err != nil && len(cr.pending) > 0 && len(cr.refs) > 0 {
			_ = cr.report() // best effort: the sweep is ending with err anyway
		}
	}()
	if len(sw.tallies) == 0 {
		return cr.referencesOnly(ctx)
	}
	for j, t := range cr.wanted {
		if err := cr.referencesUpTo(ctx, j); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := sw.r.boundary(); err != nil {
			return err
		}
		if err := cr.selective(ctx, t); err != nil {
			return err
		}
	}
	if err := cr.referencesUpTo(ctx, len(cr.wanted)); err != nil {
		return err
	}
	return cr.report()
}

// configRun is the state of one configuration's runs.
type configRun struct {
	*sweepRun
	i      int
	c      sweep.Config
	pc     *config
	wanted []*tally // the policy x tolerance runs to make
	reps   int      // reference runs to take
	slots  []int    // where they go among the selective runs (sweep.ReferenceSlots)
	refs   []float64
	worst  float64 // the largest residual of the references
	known  bool    // refs came with the spec (sweep.Spec.References): no residual
	// pending are the selective runs made and not yet reported: they wait
	// for the configuration's last reference.
	pending []ran
}

// ran is a selective run waiting for its references.
type ran struct {
	t     *tally
	ev    sweep.Result
	o     outcome
	after []any // its kernels and trace events, sent after it
}

// referencesUpTo takes the references due before selective run j. Each
// starts at a run boundary, the first of a configuration's too, after its
// warm-up: a cancel that came during the warm-up had let the first full
// run start, seconds more of a sweep the user had stopped (a browser
// review's summa n=4096). An event sent since (a selective run's) is
// answered at the boundary, as a gated command needs.
func (cr *configRun) referencesUpTo(ctx context.Context, j int) error {
	for len(cr.refs) < cr.reps && cr.slots[len(cr.refs)] <= j {
		if err := cr.r.boundary(); err != nil {
			return err
		}
		if err := cr.r.begin(sweep.RunStart{Index: cr.i, Kind: sweep.RunReference, ReferenceS: cr.refs}); err != nil {
			return err
		}
		dt, res, err := cr.r.reference(ctx, cr.pc)
		if err != nil {
			return err
		}
		cr.refs = append(cr.refs, dt)
		if math.IsNaN(res) || res > cr.worst {
			cr.worst = res
		}
	}
	return nil
}

// referencesOnly takes a reference sweep's runs of the configuration and
// reports them.
func (cr *configRun) referencesOnly(ctx context.Context) error {
	if err := cr.referencesUpTo(ctx, 0); err != nil {
		return err
	}
	cr.refMeans[cr.i], cr.refRuns[cr.i] = stat.Mean(cr.refs, nil), cr.refs
	cr.done++
	return cr.r.send(sweep.Result{Type: sweep.TypeResult, V: sweep.ProtocolVersion, Workload: cr.w.Name(), Index: cr.i,
		Config: cr.c, ReferenceS: cr.refs, Residual: &cr.worst, Done: cr.done, Total: cr.total})
}

// selective makes the selective run of tally t and reports it, or tells of
// it with a progress event while references are still to come.
func (cr *configRun) selective(ctx context.Context, t *tally) error {
	name, tol := t.tr.Policy().Name(), t.tr.Tolerance
	if err := cr.r.begin(sweep.RunStart{Index: cr.i, Kind: sweep.RunSelective, Policy: name, Tolerance: &tol, ReferenceS: cr.refs}); err != nil {
		return err
	}
	o, err := cr.r.selectiveRun(ctx, cr.pc, t.tr, 0)
	if err != nil {
		return fmt.Errorf("%s at %s: %w", name, format.Tolerance(tol), err)
	}
	ev, after, err := cr.r.selectiveEvents(cr.spec, cr.w.Name(), cr.i, cr.c, t.tr, o)
	if err != nil {
		return err
	}
	ev.Total = cr.total
	p := ran{t: t, o: o, ev: ev, after: after}
	cr.pending = append(cr.pending, p)
	if len(cr.refs) == cr.reps { // every reference taken (or none to take)
		return cr.report()
	}
	return cr.r.send(sweep.ProgressEvent{Type: sweep.TypeProgress, V: sweep.ProtocolVersion, Index: cr.i,
		Pending: len(cr.pending)})
}

// selectiveEvents are the events of a selective run o of configuration i
// on track tr: its result (Done and Total left to the caller) and, as the
// spec asks, the kernels (rank 0's) and trace events that follow it
// (runEvents: call it right after the run).
func (r *runner) selectiveEvents(spec *sweep.Spec, workload string, i int, c sweep.Config, tr *selective.Track, o outcome) (sweep.Result, []any, error) {
	after, err := r.runEvents(spec, i, tr)
	return selectiveResult(workload, i, c, tr, o), after, err
}

// selectiveResult is the result event of a selective run o of
// configuration i on track tr (Done and Total left to the caller).
func selectiveResult(workload string, i int, c sweep.Config, tr *selective.Track, o outcome) sweep.Result {
	name, tol := tr.Policy().Name(), tr.Tolerance
	ev := sweep.Result{Type: sweep.TypeResult, V: sweep.ProtocolVersion,
		Workload: workload, Index: i, Config: c, Policy: name, Tolerance: &tol,
		PredictedS: ptr(o.predicted), PredictedSE: ptr(o.se), SelectiveS: ptr(o.wall), LocalS: ptr(o.local), Executed: &o.executed,
		Skipped: &o.skipped, Settled: &o.settled, Promised: &o.promised, Path: &o.path, CutShort: o.cut}
	if tr.NeedsCountingRun() {
		ev.CountingS = ptr(o.counting)
	}
	return ev
}

// runEvents are the events that follow the result of the selective run of
// configuration i on track tr that just ended, as the spec asks: the
// kernels (rank 0's, and those only other ranks measured) and the trace.
// They read the engine's state after that run, so they are taken before
// another run: collective over the world.
func (r *runner) runEvents(spec *sweep.Spec, i int, tr *selective.Track) ([]any, error) {
	name, tol := tr.Policy().Name(), tr.Tolerance
	var after []any
	if spec.Kernels {
		others, err := r.eng.Others(tr) // collective
		if err != nil {
			return nil, fmt.Errorf("%s at %s: %w", name, format.Tolerance(tol), err)
		}
		if r.root() {
			after = append(after, sweep.KernelsEvent{Type: sweep.TypeKernels, V: sweep.ProtocolVersion, Index: i,
				Policy: name, Tolerance: tol, Rank: 0, Kernels: r.eng.Report(tr), Others: others})
		}
	}
	if spec.Trace {
		tev, err := r.gatherTrace(i, name, tol)
		if err != nil {
			return nil, fmt.Errorf("%s at %s: trace: %w", name, format.Tolerance(tol), err)
		}
		if tev != nil {
			after = append(after, tev)
		}
	}
	return after, nil
}

// report sends the runs waiting for their references.
func (cr *configRun) report() error {
	m := math.NaN()
	if len(cr.refs) > 0 {
		m = stat.Mean(cr.refs, nil)
		cr.refMeans[cr.i], cr.refRuns[cr.i] = m, cr.refs
	}
	for _, p := range cr.pending {
		cr.reported = append(cr.reported, p.t)
		cr.done++
		p.ev.Done = cr.done
		run := p.t.record(cr.i, p.o, m)
		if len(cr.refs) > 0 {
			p.ev.ReferenceS, p.ev.Error = cr.refs, ptr(run.Error())
			if !cr.known {
				res := cr.worst
				p.ev.Residual = &res
			}
		}
		if err := cr.r.send(p.ev); err != nil {
			return err
		}
		for _, ev := range p.after {
			if err := cr.r.send(ev); err != nil {
				return err
			}
		}
	}
	cr.pending = nil
	return nil
}

// Caps of a run's timeline: spans per rank, and over all ranks, so that one
// trace event stays well under the protocol's 64 MiB line (about 110 bytes
// a span in JSON).
const (
	traceSpansPerRank = 20000
	traceSpansTotal   = 200000
)

// traceLimit is how many spans each process keeps per run, in a world of
// ranks processes.
func traceLimit(ranks int) int {
	return max(100, min(traceSpansPerRank, traceSpansTotal/max(ranks, 1)))
}

// traceTag is the tag of the timeline messages on the world communicator;
// they are sent at a run boundary, when no other world message is pending.
const traceTag = 7401

// spanLen is the number of float64 a span travels as: op, skipped, start,
// end, predicted, size, procs.
const spanLen = 7

// gatherTrace gathers the last run's timeline of every rank on rank 0 and
// returns it there as one trace event (nil elsewhere). It is collective over
// the world, and runs after the run's timed region.
func (r *runner) gatherTrace(index int, policy string, tol float64) (*sweep.TraceEvent, error) {
	spans, dropped := r.eng.Trace()
	size := r.world.Size()
	heads := make([]int64, 2*size)
	if err := mpi.Gather(r.world, []int64{int64(len(spans)), dropped}, heads, 0); err != nil {
		return nil, fmt.Errorf("gather span counts: %w", err)
	}
	if !r.root() {
		if len(spans) == 0 {
			return nil, nil
		}
		buf := make([]float64, 0, spanLen*len(spans))
		for _, s := range spans {
			skipped := 0.0
			if s.Skipped {
				skipped = 1
			}
			buf = append(buf, float64(s.Op), skipped, s.Start, s.End, s.Predicted, s.Size, float64(s.Procs))
		}
		if err := mpi.Send(r.world, buf, 0, traceTag); err != nil {
			return nil, fmt.Errorf("send spans: %w", err)
		}
		return nil, nil
	}
	ev := sweep.TraceEvent{Type: sweep.TypeTrace, V: sweep.ProtocolVersion, Index: index, Policy: policy, Tolerance: tol,
		Ranks: make([]sweep.RankTrace, size)}
	ev.Ranks[0] = sweep.RankTrace{Rank: 0, Events: make([]sweep.Span, 0, len(spans)), Dropped: dropped}
	for _, s := range spans {
		ev.Ranks[0].Events = append(ev.Ranks[0].Events, toSpan(s.Op, s.Skipped, s.Start, s.End, s.Predicted, s.Size, s.Procs))
	}
	for p := 1; p < size; p++ {
		n := int(heads[2*p])
		rt := sweep.RankTrace{Rank: p, Events: make([]sweep.Span, 0, n), Dropped: heads[2*p+1]}
		if n > 0 {
			buf := make([]float64, spanLen*n)
			if _, err := mpi.Recv(r.world, buf, p, traceTag); err != nil {
				return nil, fmt.Errorf("receive rank %d's spans: %w", p, err)
			}
			for k := 0; k < n; k++ {
				b := buf[spanLen*k : spanLen*(k+1)]
				rt.Events = append(rt.Events, toSpan(selective.Op(b[0]), b[1] != 0, b[2], b[3], b[4], b[5], int(b[6])))
			}
		}
		ev.Ranks[p] = rt
	}
	return &ev, nil
}

// toSpan converts a span for the event. Its times are rounded to 0.1 µs,
// finer than any figure shows, which makes the JSON about a third shorter.
// Rounding keeps the order: spans that did not overlap still do not.
func toSpan(op selective.Op, skipped bool, start, end, predicted, size float64, procs int) sweep.Span {
	round := func(t float64) float64 { return math.Round(t*1e7) / 1e7 }
	return sweep.Span{Routine: op.String(), StartS: round(start), EndS: round(end), PredictedS: round(predicted),
		Skipped: skipped, Comm: op.IsComm(), Size: size, Procs: procs}
}

func ptr(f float64) *float64 { return &f }
