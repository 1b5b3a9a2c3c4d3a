package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"

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
	// stop, when set, is the collective check made at every run boundary:
	// true ends the sweep with errCancelled.
	stop func() (bool, error)
}

// boundary checks, collectively, whether the sweep must stop here.
func (r *runner) boundary() error {
	if r.stop == nil {
		return nil
	}
	stop, err := r.stop()
	if err != nil {
		return err
	}
	if stop {
		return errCancelled
	}
	return nil
}

func (r *runner) root() bool { return r.world.Rank() == 0 }

func (r *runner) send(ev any) error {
	if !r.root() || r.emit == nil {
		return nil
	}
	return r.emit(ev)
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
// the first time, and that cost used to land in the first selective run
// only. Otherwise (references only) it runs as they do, with the engine off.
func (r *runner) warmUp(ctx context.Context, pc *config, engine bool) error {
	if !engine {
		_, _, err := r.once(ctx, pc, nil, selective.Off)
		return err
	}
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

// referenceSlots says where the reps reference runs of a configuration go
// among its runs selective runs: reference k runs just before selective run
// slots[k] (runs: after the last). They sit at the middles of reps equal
// parts of the selective runs, so the references' mean is taken over the
// same stretch of time as the runs it judges.
func referenceSlots(reps, runs int) []int {
	slots := make([]int, reps)
	for k := range slots {
		slots[k] = (2*k + 1) * runs / (2 * reps)
	}
	return slots
}

// outcome is a selective run as the sweep sees it.
type outcome struct {
	wall      float64 // selective run, plus apriori's counting run
	predicted float64
	path      sweep.Path
	local     float64 // rank 0's time without propagation
	executed  int64
	skipped   int64
	settled   int64
	promised  int64
}

// selectiveRun runs a configuration under a track's policy (a
// policy.Rehearser first runs it once more in full, counting the critical
// path).
func (r *runner) selectiveRun(ctx context.Context, pc *config, tr *selective.Track) (outcome, error) {
	var o outcome
	if tr.NeedsCountingRun() {
		dt, _, err := r.once(ctx, pc, tr, selective.Counting)
		if err != nil {
			return o, err
		}
		o.wall += dt
	}
	dt, rs, err := r.once(ctx, pc, tr, selective.Selective)
	if err != nil {
		return o, err
	}
	o.wall += dt
	// The prediction is the longest path; report that process's breakdown.
	all := make([]float64, 3*r.world.Size())
	if err := mpi.Allgather(r.world, []float64{rs.Total, rs.Comp, rs.Comm}, all); err != nil {
		return o, err
	}
	for p := 0; p < r.world.Size(); p++ {
		if t := all[3*p]; t > o.predicted {
			o.predicted = t
			o.path = sweep.Path{CompS: all[3*p+1], CommS: all[3*p+2], IdleS: t - all[3*p+1] - all[3*p+2]}
		}
	}
	counts := []int64{rs.Executed, rs.Skipped, rs.Settled, rs.Promised}
	if err := mpi.Allreduce(r.world, counts, counts, mpi.Sum); err != nil {
		return o, err
	}
	o.executed, o.skipped, o.settled, o.promised = counts[0], counts[1], counts[2], counts[3]
	o.local = rs.Own
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
	w, ok := workloads.Lookup(spec.Workload)
	if !ok {
		return fmt.Errorf("unknown workload %q", spec.Workload)
	}
	r.eng.SetConfidence(spec.Confidence)
	r.eng.SetNMin(spec.NMin)
	if spec.Trace && len(spec.Policies) > 0 && spec.Mode != sweep.ModeReference {
		r.eng.SetTrace(traceLimit(r.world.Size()))
		defer r.eng.SetTrace(0)
	}
	t0 := mpi.Wtime()
	var tallies []*tally
	if spec.Mode != sweep.ModeReference {
		for _, p := range spec.Policies {
			pol, err := policy.Lookup(p)
			if err != nil {
				return err
			}
			for _, tol := range spec.Tolerances {
				tallies = append(tallies, &tally{tr: selective.NewTrack(pol, float64(tol))})
			}
		}
	}
	total := len(configs)
	if len(tallies) > 0 {
		total *= len(tallies)
	}
	if len(spec.Runs) > 0 {
		total = len(spec.Runs)
	}
	if err := r.send(sweep.Start{Type: sweep.TypeStart, V: sweep.ProtocolVersion, Spec: spec, Configs: configs,
		Runs: total, Ranks: r.world.Size(), BLAS: r.backend.Name(), Warnings: r.warnings}); err != nil {
		return err
	}
	done := 0
	var refTotal float64
	refMeans := make([]float64, len(configs))
	refRuns := make([][]float64, len(configs)) // each configuration's reference times
	for i := range refMeans {
		refMeans[i] = math.NaN() // configurations not run (resumed sweeps) stay NaN
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
		pc, err := r.prepare(w, c, spec.Seed)
		if err != nil {
			return err
		}
		err = r.configuration(ctx, spec, w, i, c, pc, tallies, &done, total, refMeans, refRuns)
		pc.grid.Free()
		if errors.Is(err, errCancelled) {
			return err
		}
		if err != nil {
			return fmt.Errorf("configuration %s: %w", c.Label(), err)
		}
		if !math.IsNaN(refMeans[i]) {
			refTotal += refMeans[i]
		}
	}
	elapsed := mpi.Wtime() - t0
	var runErr *float64
	if e, n := sweep.RunError(refRuns); n > 0 {
		runErr = &e
	}
	if len(tallies) == 0 {
		s := sweep.Summary{Type: sweep.TypeSummary, V: sweep.ProtocolVersion, Workload: w.Name(), Mode: spec.Mode,
			Configs: len(configs), ReferenceTotalS: refTotal, ReferenceError: runErr, ElapsedS: elapsed}
		if b := sweep.Least(refMeans); b >= 0 {
			s.Best = &configs[b]
		}
		return r.send(s)
	}
	for _, t := range tallies {
		if len(t.runs) == 0 {
			continue
		}
		s := t.summary(spec, w.Name(), configs, elapsed)
		if s.MeanError != nil {
			s.ReferenceError = runErr
		}
		if err := r.send(s); err != nil {
			return err
		}
	}
	return nil
}

// configuration runs one configuration: a selective run per wanted policy x
// tolerance and, unless tuning, its reference runs.
//
// The references are interleaved with the selective runs (referenceSlots)
// rather than all taken first. On a shared machine the speed of a whole run
// drifts by 10% and more over a few seconds; references taken before fifteen
// selective runs measured another machine than the last of them ran on, and
// that difference, the same for every policy of the configuration, was most
// of the prediction error. So the result lines of the runs made before a
// configuration's last reference (and the kernels and trace lines that
// follow them, taken as their runs end) wait for it, and a progress line
// tells of each such run as it ends; if the sweep stops or fails on the
// way, the runs done so far are still reported, judged against the
// references taken so far, if any.
func (r *runner) configuration(ctx context.Context, spec *sweep.Spec, w workloads.Workload, i int, c sweep.Config,
	pc *config, tallies []*tally, done *int, total int, refMeans []float64, refRuns [][]float64) (err error) {
	var wanted []*tally
	for _, t := range tallies {
		if spec.Wants(i, t.tr.Policy.Name(), t.tr.Tolerance) {
			wanted = append(wanted, t)
		}
	}
	reps := 0
	if spec.Mode != sweep.ModeTune {
		reps = spec.ReferenceReps
		if err := r.warmUp(ctx, pc, len(wanted) > 0); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
	}
	var refs []float64
	worst := 0.0
	slots := referenceSlots(reps, len(wanted))
	// referencesUpTo takes the references due before selective run j.
	referencesUpTo := func(j int) error {
		for len(refs) < reps && slots[len(refs)] <= j {
			if len(refs) > 0 {
				if err := r.boundary(); err != nil {
					return err
				}
			}
			dt, res, err := r.reference(ctx, pc)
			if err != nil {
				return err
			}
			refs = append(refs, dt)
			if math.IsNaN(res) || res > worst {
				worst = res
			}
		}
		return nil
	}
	type ran struct {
		t     *tally
		ev    sweep.Result
		o     outcome
		after []any // its kernels and trace events, sent after it
	}
	var pending []ran
	// report sends the runs waiting for their references.
	report := func() error {
		m := math.NaN()
		if len(refs) > 0 {
			m = stat.Mean(refs, nil)
			refMeans[i], refRuns[i] = m, refs
		}
		for _, p := range pending {
			*done++
			p.ev.Done = *done
			run := p.t.record(i, p.o, m)
			if len(refs) > 0 {
				res := worst
				p.ev.ReferenceS, p.ev.Residual, p.ev.Error = refs, &res, ptr(run.Error())
			}
			if err := r.send(p.ev); err != nil {
				return err
			}
			for _, ev := range p.after {
				if err := r.send(ev); err != nil {
					return err
				}
			}
		}
		pending = nil
		return nil
	}
	defer func() {
		// Runs with no reference yet are left out: a resumed sweep runs
		// them again, with their configuration's references.
		if err != nil && len(pending) > 0 && len(refs) > 0 {
			_ = report() // best effort: the sweep is ending with err anyway
		}
	}()
	if len(tallies) == 0 {
		if err := referencesUpTo(0); err != nil {
			return err
		}
		refMeans[i], refRuns[i] = stat.Mean(refs, nil), refs
		*done++
		return r.send(sweep.Result{Type: sweep.TypeResult, V: sweep.ProtocolVersion, Workload: w.Name(), Index: i,
			Config: c, ReferenceS: refs, Residual: &worst, Done: *done, Total: total})
	}
	for j, t := range wanted {
		if err := referencesUpTo(j); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := r.boundary(); err != nil {
			return err
		}
		o, err := r.selectiveRun(ctx, pc, t.tr)
		if err != nil {
			return fmt.Errorf("%s at %g: %w", t.tr.Policy.Name(), t.tr.Tolerance, err)
		}
		tol := t.tr.Tolerance
		p := ran{t: t, o: o, ev: sweep.Result{Type: sweep.TypeResult, V: sweep.ProtocolVersion,
			Workload: w.Name(), Index: i, Config: c, Policy: t.tr.Policy.Name(), Tolerance: &tol,
			PredictedS: ptr(o.predicted), SelectiveS: ptr(o.wall), LocalS: ptr(o.local), Executed: &o.executed,
			Skipped: &o.skipped, Settled: &o.settled, Promised: &o.promised, Path: &o.path, Total: total}}
		if spec.Kernels && r.root() {
			p.after = append(p.after, sweep.KernelsEvent{Type: sweep.TypeKernels, V: sweep.ProtocolVersion, Index: i,
				Policy: t.tr.Policy.Name(), Tolerance: tol, Rank: 0, Kernels: r.eng.Report(t.tr)})
		}
		if spec.Trace {
			ev, err := r.gatherTrace(i, t.tr.Policy.Name(), tol)
			if err != nil {
				return fmt.Errorf("%s at %g: trace: %w", t.tr.Policy.Name(), t.tr.Tolerance, err)
			}
			if ev != nil {
				p.after = append(p.after, ev)
			}
		}
		pending = append(pending, p)
		if len(refs) == reps { // every reference taken (or none to take)
			if err := report(); err != nil {
				return err
			}
		} else if err := r.send(sweep.ProgressEvent{Type: sweep.TypeProgress, V: sweep.ProtocolVersion, Index: i,
			Pending: len(pending)}); err != nil {
			return err
		}
	}
	if err := referencesUpTo(len(wanted)); err != nil {
		return err
	}
	return report()
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
// end, predicted.
const spanLen = 5

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
			buf = append(buf, float64(s.Op), skipped, s.Start, s.End, s.Predicted)
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
		ev.Ranks[0].Events = append(ev.Ranks[0].Events, toSpan(s.Op, s.Skipped, s.Start, s.End, s.Predicted))
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
				rt.Events = append(rt.Events, toSpan(selective.Op(b[0]), b[1] != 0, b[2], b[3], b[4]))
			}
		}
		ev.Ranks[p] = rt
	}
	return &ev, nil
}

// toSpan converts a span for the event. Its times are rounded to 0.1 µs,
// finer than any figure shows, which makes the JSON about a third shorter.
// Rounding keeps the order: spans that did not overlap still do not.
func toSpan(op selective.Op, skipped bool, start, end, predicted float64) sweep.Span {
	round := func(t float64) float64 { return math.Round(t*1e7) / 1e7 }
	return sweep.Span{Routine: op.String(), StartS: round(start), EndS: round(end), PredictedS: round(predicted),
		Skipped: skipped, Comm: op.IsComm()}
}

// summary is the tally's summary event (sweep.Summarize's figures).
func (t *tally) summary(spec *sweep.Spec, workload string, configs []sweep.Config, elapsed float64) sweep.Summary {
	tol := t.tr.Tolerance
	f := sweep.Summarize(t.runs)
	s := sweep.Summary{Type: sweep.TypeSummary, V: sweep.ProtocolVersion, Workload: workload, Mode: spec.Mode,
		Policy: t.tr.Policy.Name(), Tolerance: &tol, Configs: len(configs), SelectiveTotalS: f.SelectiveTotalS, ElapsedS: elapsed}
	if f.Chosen >= 0 {
		s.Chosen = &configs[t.runs[f.Chosen].Config]
	}
	if f.Judged > 0 {
		s.ReferenceTotalS, s.Speedup = f.ReferenceTotalS, f.Speedup
		s.MeanError, s.MaxError, s.Quality = ptr(f.MeanError), ptr(f.MaxError), ptr(f.Quality)
		s.Best = &configs[t.runs[f.Best].Config]
	}
	return s
}

func ptr(f float64) *float64 { return &f }
