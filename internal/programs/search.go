package programs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/approxtune/approxtune/analysis"
	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/internal/preload"
	"github.com/approxtune/approxtune/internal/selective/policy"
	"github.com/approxtune/approxtune/sweep"
)

// search runs a searching sweep (spec.Search) over the program's space as
// a built-in workload's search does (internal/agent), each run a launch
// of its own: successive halving over the space, or over Budget
// configurations drawn at random (sweep.Spec.Candidates). Each round
// launches every surviving configuration once selectively under the
// spec's one policy at the round's tolerance (the spec's, loosest first),
// and keeps those analysis.Halving keeps: not slower than the round's best
// with the spec's confidence, at most the fastest 1/analysis.Eta of them,
// and every earlier round's leader. A policy that carries its statistics
// (policy.Carrier) carries them through a round from launch to launch,
// and into the next round as samples alone (preload.Run.Retune). A
// configuration whose launch settled kernels by executing them (settled)
// and could survive is launched a second time in the round, once the means
// it needs are known, and that launch predicts it (as the agent's round
// does: the first is predicted partly from its own cold executions, the
// rest from the means alone, and the two do not rank alike). A selective
// launch that fails is told of (an error event) and its configuration
// leaves the search, the launch's whole time counted in the search's
// cost.
//
// After the tightest round, or one before it that leaves
// sweep.SearchFullRuns or fewer, the finalists (sweep.Finalists, grouped
// by rank count) are launched once each in full, and the fastest is
// chosen. Each launch is a fresh process, so no finalist warms up: every
// full run starts as cold as the others. In evaluate mode every
// configuration of the space first runs its references, in passes (round
// 0), to judge the choice; they are not part of the search's cost, which
// is the timed regions of its launches (each launch's time beyond its
// region is in the results' LaunchS).
//
// Once a round has as many predictions as it keeps, each launch gets the
// round's cutoff (analysis.Halving.Cutoff, preload.Run.Cutoff): a program
// that asks (APPROXTUNE_CUT_SHORT(), approxtune.h) stops its work once its
// prediction has passed it, and is dropped, as a workload's run is cut
// short; one that does not ask runs whole.
func (r *Runner) search(ctx context.Context, spec *sweep.Spec, configs []sweep.Config) error {
	pol, err := policy.Lookup(spec.Policies[0])
	if err != nil {
		return err
	}
	state, err := os.MkdirTemp(r.Scratch, "approxtune-state")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	cand := spec.Candidates(len(configs))
	s := &programSearch{r: r, spec: spec, configs: configs, pol: pol, total: len(cand), state: state,
		h: &analysis.Halving{Confidence: spec.Confidence, Least: sweep.SearchFinalists}}
	if spec.Mode == sweep.ModeEvaluate {
		s.total += len(configs)
	}
	ranks := 0
	for _, i := range cand {
		ranks = max(ranks, spec.Program.Ranks(configs[i]))
	}
	if err := r.Emit(sweep.Start{Type: sweep.TypeStart, V: sweep.ProtocolVersion, Spec: spec, Configs: configs, Runs: s.total,
		Ranks: ranks, BLAS: "the program's own"}); err != nil {
		return err
	}
	if spec.Mode == sweep.ModeEvaluate {
		if err := s.references(ctx); err != nil {
			return err
		}
	}
	alive := cand
	tols := spec.RoundTolerances()
	for k, tol := range tols {
		cut, elapsed, err := s.round(ctx, k+1, tol, alive)
		if err != nil {
			return err
		}
		alive = cut.Kept
		s.h.Lead(cut.Best)
		last := len(alive) <= sweep.SearchFullRuns || k == len(tols)-1
		if !last {
			s.total += len(alive)
		}
		if err := r.Emit(sweep.RoundEvent(k+1, pol.Name(), tol, cut.ran, cut.Kept, cut.Dropped, cut.Capped, cut.Best, cut.Threshold, elapsed)); err != nil {
			return err
		}
		if last {
			s.rounds = k + 1
			break
		}
	}
	finalists := sweep.Finalists(alive, s.h.Leaders, func(i int) int { return spec.Program.Ranks(configs[i]) })
	s.total += len(finalists)
	// The survivors no finalist is: the fastest predicted first, each
	// launched in full only where every finalist's full launch failed.
	reserve := slices.DeleteFunc(slices.Clone(alive), func(i int) bool { return slices.Contains(finalists, i) })
	return s.final(ctx, finalists, reserve, len(cand))
}

// programSearch is the state of a program's search across its rounds.
type programSearch struct {
	r       *Runner
	spec    *sweep.Spec
	configs []sweep.Config
	pol     policy.Policy
	h       *analysis.Halving
	state   string  // the directory of a policy.Carrier's statistics, a prefix a round
	done    int     // results emitted so far
	total   int     // results the sweep will emit, as far as known
	cost    float64 // the timed regions of the search's launches so far
	rounds  int     // selective rounds made
}

// roundCut is a round decided, with the configurations it ran (those
// whose launch failed left out).
type roundCut struct {
	analysis.Cut
	ran []int
}

// prepared prepares configuration i in a directory of its own, runs f on
// its launcher, and removes the directory.
func (s *programSearch) prepared(ctx context.Context, i int, f func(l *launcher) error) error {
	if err := s.stop(ctx); err != nil {
		return err
	}
	dir, err := os.MkdirTemp(s.r.Scratch, "approxtune-run")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	l, err := s.r.prepare(s.spec.Program, s.configs[i], dir)
	if err != nil {
		return &ConfigError{Index: i, Label: s.configs[i].Label(), Err: err}
	}
	return f(l)
}

// stop is the context's error, or ErrStopped once Stop asks the sweep to
// stop: a search stops at a launch's end.
func (s *programSearch) stop(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.r.stopping() {
		return ErrStopped
	}
	return nil
}

// alone runs a launch that may be stopped alone (Runner.Stoppable: a
// round's selective launch, a finalist's full one) on a context of its
// own, and says whether it was stopped so, as hung, rather than with ctx.
func (s *programSearch) alone(ctx context.Context, launch func(context.Context) error) (hung bool, err error) {
	lctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if s.r.Stoppable != nil {
		s.r.Stoppable(stop)
	}
	err = launch(lctx)
	if s.r.Stoppable != nil {
		s.r.Stoppable(nil)
	}
	return errors.Is(context.Cause(lctx), ErrHung) && ctx.Err() == nil, err
}

// tell passes msg to the runner's Warn, where set.
func (s *programSearch) tell(msg string) {
	if s.r.Warn != nil {
		s.r.Warn(msg)
	}
}

// full launches configuration i once in full in round (0: an evaluate
// search's references), announced with refs, its full runs so far, and
// returns its time and the launch's time beyond it.
func (s *programSearch) full(ctx context.Context, l *launcher, i, round int, refs []float64) (float64, float64, error) {
	s.r.started(sweep.RunStart{Index: i, Kind: sweep.RunReference, Round: round, ReferenceS: refs})
	res, extra, err := l.run(ctx, preload.Run{Reference: true})
	s.r.ended()
	if err == nil && len(res.ReferenceS) == 0 {
		err = errors.New("run result: no time")
	}
	if err != nil {
		return 0, 0, &ConfigError{Index: i, Label: s.configs[i].Label(), Err: &referenceError{err}}
	}
	return res.ReferenceS[0], extra, nil
}

// emitFull reports configuration i's full runs in round.
func (s *programSearch) emitFull(i, round int, refs []float64, launchS float64) error {
	s.done++
	return s.r.Emit(sweep.Result{Type: sweep.TypeResult, V: sweep.ProtocolVersion, Workload: s.spec.Workload, Index: i,
		Config: s.configs[i], ReferenceS: refs, LaunchS: &launchS, Round: round, Done: s.done, Total: s.total})
}

// references launches every configuration's references in full (an
// evaluate search, to judge its choice) and reports them in round 0, in
// passes (sweep.ReferencePasses).
func (s *programSearch) references(ctx context.Context) error {
	refs := make([][]float64, len(s.configs))
	launchS := make([]float64, len(s.configs))
	run := func(i int) error {
		return s.prepared(ctx, i, func(l *launcher) error {
			dt, extra, err := s.full(ctx, l, i, 0, refs[i])
			if err != nil {
				return err
			}
			refs[i], launchS[i] = append(refs[i], dt), launchS[i]+extra
			return nil
		})
	}
	return sweep.ReferencePasses(len(s.configs), s.spec.ReferenceReps, run, func(i int) bool { return len(refs[i]) > 0 },
		func(i int) error { return s.emitFull(i, 0, refs[i], launchS[i]) })
}

// outcome is a selective launch in a round.
type outcome struct {
	res   *launched
	extra float64 // the launch's time beyond its region
	wall  float64 // its timed region (a counting launch's included)
}

// round launches the configurations alive once each selectively at tol
// and decides which survive (analysis.Halving.Decide). It returns the
// round's cut and the timed regions of its launches.
func (s *programSearch) round(ctx context.Context, n int, tol float64, alive []int) (roundCut, float64, error) {
	cfg := preload.Run{Policy: s.pol.Name(), Tolerance: tol, Confidence: s.spec.Confidence, NMin: s.spec.NMin,
		Models: s.spec.Models, RunMessages: s.spec.RunsMessages()}
	if _, ok := s.pol.(policy.Carrier); ok {
		cfg.State = filepath.Join(s.state, fmt.Sprintf("round%d", n))
		if n > 1 {
			cfg.Retune = filepath.Join(s.state, fmt.Sprintf("round%d", n-1))
		}
	}
	_, counts := s.pol.(policy.Rehearser)
	elapsed := 0.0
	run := func(i int, cutoff float64) (*outcome, error) {
		var o *outcome
		err := s.prepared(ctx, i, func(l *launcher) error {
			c := cfg
			c.Cutoff = cutoff
			if counts {
				c.Counts = filepath.Join(l.dir, "approxtune-counts")
			}
			t := tol
			s.r.started(sweep.RunStart{Index: i, Kind: sweep.RunSelective, Policy: c.Policy, Tolerance: &t, Round: n})
			t0 := time.Now()
			var res *launched
			var extra float64
			hung, err := s.alone(ctx, func(lctx context.Context) (err error) {
				res, extra, err = l.selective(lctx, c)
				return err
			})
			s.r.ended()
			var refused *LaunchError
			switch {
			case hung && err != nil && errors.Is(err, ErrPastResult) && !counts:
				// Its result was written at MPI_Finalize, whole: what
				// hung was the launch's end (a loaded machine), and the
				// configuration had left the search for it.
				if kept, rerr := l.result(preload.Run{Out: l.outFile()}); rerr == nil && kept.PredictedS != nil && kept.SelectiveS != nil {
					// The launch's time beyond its region, its slow end
					// included, as a finalist's is.
					res, err, extra = kept, nil, max(time.Since(t0).Seconds()-*kept.SelectiveS, 0)
					s.tell(fmt.Sprintf("configuration %d (%s): its launch had written its result at MPI_Finalize and was stopped past the deadline after it: the result stands (%s)",
						i, s.configs[i].Label(), PastResultHint))
				} else {
					err = fmt.Errorf("%w (%w)", ErrHung, err)
				}
			case hung && err != nil:
				err = fmt.Errorf("%w (%w)", ErrHung, err)
				if asks, _ := preload.AsksCutShort(l.path); asks && cutoff > 0 {
					// A collective the program makes: on some ranks
					// only, a launch with a cutoff waits in it for ever.
					err = fmt.Errorf("%w; the launch could be cut short: APPROXTUNE_CUT_SHORT() is a collective over MPI_COMM_WORLD, which every rank must call at the same points", err)
				}
			case err != nil && (ctx.Err() != nil || errors.As(err, &refused)):
				return &ConfigError{Index: i, Label: s.configs[i].Label(), Err: fmt.Errorf("%s at %s: %w", c.Policy, format.Tolerance(tol), err)}
			case err == nil && (res.PredictedS == nil || res.SelectiveS == nil):
				err = errors.New("run result: no prediction")
			}
			if err != nil {
				// Skipped kernels leave the program's data meaningless,
				// and a program may stop on it: the configuration leaves
				// the search, and the search goes on. The failed launch
				// counts whole in the search's cost: it was time spent.
				wall := time.Since(t0).Seconds()
				elapsed += wall
				s.cost += wall
				s.total-- // its result will not come: the progress's count had never been reached
				idx := i
				msg := fmt.Sprintf("configuration %d (%s): %s at %s in round %d: %v", i, s.configs[i].Label(), c.Policy, format.Tolerance(tol), n, err)
				h := failureHint(err, l.path, s.spec.RunsMessages(), true)
				if hung {
					// Stopped by its deadline, not from outside, nor by
					// its own check.
					h = ""
					if !s.spec.RunsMessages() {
						h = StaleMessagesSearchHint
					}
				}
				if h != "" {
					msg += "\n    " + h
				}
				msg += "\n    it leaves the search"
				return s.r.Emit(sweep.ErrorEvent{Type: sweep.TypeError, V: sweep.ProtocolVersion, Message: msg, Index: &idx})
			}
			o = &outcome{res: res, extra: extra, wall: *res.SelectiveS}
			return nil
		})
		if o != nil {
			elapsed += o.wall
			s.cost += o.wall
		}
		return o, err
	}
	var ests []analysis.Estimate
	var ran, pending []int
	outs := map[int]*outcome{}
	short := map[int]bool{} // cut short: dropped whatever the rest of the round gives
	keep := s.h.Keep(len(alive))
	// A round stopped early (an interrupt, a launch stopped as hung)
	// reports the first launches still waiting for their second: they
	// had been lost.
	reported := map[int]bool{}
	report := func(i int, o *outcome) error {
		reported[i] = true
		return s.report(n, i, o)
	}
	defer func() {
		for _, i := range pending {
			if !reported[i] {
				if report(i, outs[i]) != nil {
					return
				}
			}
		}
	}()
	for _, i := range alive {
		o, err := run(i, s.h.Cutoff(ests, keep, i))
		if err != nil {
			return roundCut{}, 0, err
		}
		if o == nil {
			continue // failed, and told of
		}
		ran = append(ran, i)
		outs[i] = o
		ests = append(ests, estimate(i, o))
		short[i] = o.res.CutShort
		if settled(o.res) && len(alive) > 1 && !o.res.CutShort {
			pending = append(pending, i)
			continue
		}
		if err := report(i, o); err != nil {
			return roundCut{}, 0, err
		}
	}
	if len(pending) > 0 { // each ran whole: Decide has an estimate to go by
		cut, err := s.h.Decide(ests, tol, len(ran), short)
		if err != nil {
			return roundCut{}, 0, err
		}
		// Those that cannot survive are reported first, so that every
		// result follows its own launch's announcement.
		for _, i := range pending {
			if !slices.Contains(cut.Kept, i) {
				if err := report(i, outs[i]); err != nil {
					return roundCut{}, 0, err
				}
			}
		}
		for _, i := range pending {
			if !slices.Contains(cut.Kept, i) {
				continue
			}
			again, err := run(i, 0)
			if err != nil {
				return roundCut{}, 0, err
			}
			if again == nil {
				// Its second launch failed, and was told of: the
				// configuration leaves the search, as the error said,
				// with no result, as when its first launch fails.
				reported[i] = true
				ran = slices.DeleteFunc(ran, func(x int) bool { return x == i })
				ests = slices.DeleteFunc(ests, func(e analysis.Estimate) bool { return e.Index == i })
				continue
			}
			again.wall += outs[i].wall
			again.extra += outs[i].extra
			k := slices.IndexFunc(ests, func(e analysis.Estimate) bool { return e.Index == i })
			ests[k] = estimate(i, again)
			if err := report(i, again); err != nil {
				return roundCut{}, 0, err
			}
		}
	}
	if !slices.ContainsFunc(ran, func(i int) bool { return !short[i] }) {
		// Every launch failed, or those left were cut short by the
		// predictions of those that failed since.
		return roundCut{}, 0, fmt.Errorf("round %d: every configuration's selective launches at %s failed or were cut short (each told above)", n, format.Tolerance(tol))
	}
	cut, err := s.h.Decide(ests, tol, len(ran), short)
	return roundCut{Cut: cut, ran: ran}, elapsed, err
}

// settled says whether a selective launch settled kernels by executing
// them: some kernel it executed is predictable (or modelled) at its end, so
// a second launch would skip it from its first call and predict it from
// the means. Its own executions, cold in a fresh process, weigh on its
// prediction meanwhile. A kernel executed and still executing at the end
// (a small message the engine runs every time) changes nothing in a
// second launch: a review's 30-configuration search had launched 9 of
// round 1's survivors and 6 of round 2's twice for that, each
// prediction unchanged. Without its kernels' statistics, any execution
// counts.
func settled(res *launched) bool {
	if res.kernels == nil {
		return res.Executed != nil && *res.Executed > 0
	}
	for _, k := range res.kernels.Kernels {
		if k.Calls > k.Skipped && k.State != sweep.KernelExecuting {
			return true
		}
	}
	return false
}

// estimate is configuration i's prediction in a round.
func estimate(i int, o *outcome) analysis.Estimate {
	se := 0.0
	if o.res.PredictedSE != nil {
		se = *o.res.PredictedSE
	}
	return analysis.Estimate{Index: i, Time: *o.res.PredictedS, SE: se}
}

// report emits configuration i's selective launch o in round n, and its
// kernels.
func (s *programSearch) report(n, i int, o *outcome) error {
	ev := o.res.Result
	wall, extra := o.wall, o.extra
	ev.Workload, ev.Index, ev.Config, ev.Round = s.spec.Workload, i, s.configs[i], n
	ev.SelectiveS, ev.LaunchS = &wall, &extra
	s.done++
	ev.Done, ev.Total = s.done, s.total
	if err := s.r.Emit(ev); err != nil {
		return err
	}
	if o.res.kernels != nil {
		k := *o.res.kernels
		k.Index = i
		return s.r.Emit(k)
	}
	return nil
}

// final launches the finalists once each in full, chooses the fastest,
// and reports the full round and the search's outcome. A finalist whose
// full launch fails, or hangs and is stopped alone at its deadline,
// leaves the search as a selective launch's would (an error event, its
// time counted), and the fastest of the rest is chosen. Where every
// finalist leaves, the other survivors (reserve, fastest predicted first)
// are launched in full one at a time until one ends well; only when none
// does is there no choice.
func (s *programSearch) final(ctx context.Context, finalists, reserve []int, considered int) error {
	n := s.rounds + 1
	var ran []int
	times := make([]float64, 0, len(finalists))
	elapsed := 0.0 // the round's launches, failed ones whole
	queue := slices.Clone(finalists)
	for k := 0; k < len(queue); k++ {
		i := queue[k]
		err := s.prepared(ctx, i, func(l *launcher) error {
			t0 := time.Now()
			var dt, extra float64
			hung, err := s.alone(ctx, func(lctx context.Context) (err error) {
				dt, extra, err = s.full(lctx, l, i, n, nil)
				return err
			})
			if hung && errors.Is(err, ErrPastResult) {
				// Its result was written at MPI_Finalize, whole: what
				// hung was the launch's end.
				if kept, rerr := l.result(preload.Run{Out: l.outFile()}); rerr == nil && len(kept.ReferenceS) > 0 {
					dt, extra, err = kept.ReferenceS[0], max(time.Since(t0).Seconds()-kept.ReferenceS[0], 0), nil
					s.tell(fmt.Sprintf("configuration %d (%s): its full launch in the finals had written its result at MPI_Finalize and was stopped past the deadline after it: the result stands (%s)",
						i, s.configs[i].Label(), PastResultHint))
				}
			}
			var refused *LaunchError
			switch {
			case err == nil:
				ran, times = append(ran, i), append(times, dt)
				elapsed += dt
				s.cost += dt
				return s.emitFull(i, n, []float64{dt}, extra)
			case !hung && (ctx.Err() != nil || errors.As(err, &refused)):
				return err
			}
			// The program failed, or hung, in full where its selective
			// launches had ended well: the configuration leaves the
			// search, and the finals go on. The launch counts whole in
			// the search's cost.
			wall := time.Since(t0).Seconds()
			elapsed += wall
			s.cost += wall
			s.total-- // its result will not come
			why := fmt.Sprintf("failed: %v", err)
			var re *referenceError
			switch {
			case hung:
				why = "did not end: " + ErrHung.Error()
			case errors.As(err, &re):
				why = fmt.Sprintf("failed: %v", re.err) // not a reference
			}
			idx := i
			return s.r.Emit(sweep.ErrorEvent{Type: sweep.TypeError, V: sweep.ProtocolVersion, Index: &idx,
				Message: fmt.Sprintf("configuration %d (%s): its full launch in the finals (round %d) %s\n    it leaves the search", i, s.configs[i].Label(), n, why)})
		})
		if err != nil {
			return err
		}
		if k == len(queue)-1 && len(ran) == 0 && len(reserve) > 0 {
			// Every finalist left: the next survivor runs in full.
			queue, reserve = append(queue, reserve[0]), reserve[1:]
			s.total++
			s.tell(fmt.Sprintf("every finalist left the search: configuration %d (%s), the next survivor, runs in full", queue[len(queue)-1], s.configs[queue[len(queue)-1]].Label()))
		}
	}
	if len(ran) == 0 {
		return fmt.Errorf("round %d: the full launch of every finalist and survivor failed (each told in its error event)", n)
	}
	round, outcome := sweep.FullRound(s.spec, s.pol.Name(), n, s.configs, ran, times, considered, s.cost, elapsed)
	if err := s.r.Emit(round); err != nil {
		return err
	}
	return s.r.Emit(outcome)
}
