package session

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/internal/programs"
	"github.com/approxtune/approxtune/sweep"
)

// Deadline bounds how long a run may take before the session calls it
// hung: a rank that stops making progress is no death (rank 0 still
// answers), so nothing else would end the wait. The zero Deadline is the
// default, 10 times the run's configuration's reference time.
type Deadline struct {
	Off    bool          // no deadline
	Fixed  time.Duration // a fixed time per run, when set
	Factor float64       // else this many times the run's scale (0: 10): see watchdog.limitNow
}

// DeadlineFloor is the least a multiple-of-runs deadline allows: short runs
// on a shared machine now and then wait seconds for the scheduler.
const DeadlineFloor = 5 * time.Second

const defaultFactor = 10

func (d Deadline) String() string {
	switch {
	case d.Off:
		return "off"
	case d.Fixed > 0:
		return d.Fixed.String()
	case d.Factor > 0:
		return strconv.FormatFloat(d.Factor, 'g', -1, 64) + "x"
	}
	return strconv.Itoa(defaultFactor) + "x"
}

// factor is the multiple the deadline applies, its default filled in.
func (d Deadline) factor() float64 {
	if d.Factor == 0 {
		return defaultFactor
	}
	return d.Factor
}

// Explain says what the deadline does, for 'deadline' alone and status.
func (d Deadline) Explain() string {
	switch {
	case d.Off:
		return "off: a run that stops making progress is waited for until you interrupt it"
	case d.Fixed > 0:
		return fmt.Sprintf("%s: a run that has not ended after %s is stopped as hung", d.Fixed, d.Fixed)
	}
	f := d.factor()
	return fmt.Sprintf("%s: a run that has not ended after %g times its configuration's reference time (the mean of its reference runs so far, in this sweep or the results it resumes) is stopped as hung; "+
		"while the configuration has none (tune, or its first runs), %g times its latest predicted time, or before it has one %g times the sweep's longest run so far; at least %s. The first run of a fresh sweep has none to go by", d, f, f, f, DeadlineFloor)
}

// ParseDeadline reads off, a duration (90s, 2m, 1h) or a multiple of the
// runs' reference time (10x).
func ParseDeadline(v string) (Deadline, error) {
	switch {
	case v == "off":
		return Deadline{Off: true}, nil
	case strings.HasSuffix(v, "x"):
		f, err := strconv.ParseFloat(strings.TrimSuffix(v, "x"), 64)
		if err != nil || f < 2 || f > 1e6 {
			return Deadline{}, fmt.Errorf("%q is not a multiple of 2x or more (e.g. 10x)", v)
		}
		return Deadline{Factor: f}, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Second {
		return Deadline{}, fmt.Errorf("%q is not a deadline: want off, a multiple of the reference time (10x, the default) or a time of 1s or more (90s, 5m, 2h)", v)
	}
	return Deadline{Fixed: d}, nil
}

// Limit is how long a run may take under d, given its scale (the time the
// multiple applies to; 0 when none is known yet) and the longest a launch
// took beyond its timed region (a program's; 0 for an agent's run): a
// fixed time as it is; a multiple of the scale, at least DeadlineFloor,
// plus twice the launch time. Zero is no limit: d off, or a multiple with
// no scale.
func (d Deadline) Limit(scale, launch time.Duration) (limit time.Duration, floored bool) {
	switch {
	case d.Off:
		return 0, false
	case d.Fixed > 0:
		return d.Fixed, false
	case scale == 0:
		return 0, false
	}
	limit = time.Duration(min(d.factor()*float64(scale), math.MaxInt64/2))
	if limit < DeadlineFloor {
		limit, floored = DeadlineFloor, true
	}
	return limit + 2*launch, floored
}

// MarshalText writes the deadline as ParseDeadline reads it (the session's
// state is journaled as JSON).
func (d Deadline) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText reads what MarshalText wrote.
func (d *Deadline) UnmarshalText(b []byte) error {
	v, err := ParseDeadline(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

func cmdDeadline(s *Session, ctx context.Context, c *Command, out Output) error {
	if len(c.Args) == 0 {
		out.Print("deadline " + s.st.Deadline.Explain())
		return nil
	}
	a, err := oneArg(c, "off, a multiple (10x) or a time (90s)")
	if err != nil {
		return err
	}
	d, err := ParseDeadline(a.Value)
	if err != nil {
		return errAt(a.Col, "%v", err)
	}
	s.st.Deadline = d
	return nil
}

// watchdog watches a driven sweep for a run that never ends: tick is
// called at every event and restarts the clock. The agent announces each
// run (sweep.RunStart): the wait that follows is judged by that run's
// configuration (limitNow). An agent that announces none (an older build)
// gets the longest wait that ended with a run's end as the scale.
type watchdog struct {
	d    Deadline
	mu   sync.Mutex
	last time.Time // the last event
	// run is the last run the agent announced (nil: none yet); inRun
	// tells that no event came since its announcement, ended that its
	// result or progress came (what follows is between runs).
	run          *sweep.RunStart
	inRun, ended bool
	refs         map[int]time.Duration // each configuration's reference time, by index
	// preds are each configuration's latest whole prediction (a selective
	// run's, not one cut short), by index: the scale of its runs while it
	// has no reference time. A search runs its finalists in full with no
	// references: judged by the sweep's first run, a selective one of
	// 23 ms, a full run of 5 s was stopped as hung.
	preds map[int]time.Duration
	// longest is the sweep's longest run so far (a resumed sweep's
	// results' too; 0: none ended yet), the scale of a configuration that
	// has no reference nor prediction yet and of an agent that announces
	// no runs.
	longest time.Duration
	// When the deadline passed: the wait judged hung, the deadline and
	// what it was made of, and the run (nil: not announced).
	fired, limit time.Duration
	basis        string
	hung         *sweep.RunStart
	// stopping is what a hang stops: the agent, or a program's launch.
	stopping string
	// pastResult: the program's launch that hung had written its result
	// (programs.ErrPastResult), set before conclude.
	pastResult bool
	// launch is, for a program, the longest a launch took beyond its timed
	// region so far (sweep.RunStart.LaunchS): a launch may take twice that
	// more than the deadline its timed region gives (mpirun starting on a
	// busy machine took over 5 s where the program ran for 1 ms).
	launch time.Duration
	// busy counts the events the session is handling (journaling,
	// drawing): that time is the session's, not the run's, and a slow
	// fsync had made a run of microseconds hang.
	busy int
	// watching counts guard's goroutine until it has returned: fired and
	// hung are read once it has (wait).
	watching sync.WaitGroup
}

// newWatchdog starts the clock; rs are the sweep's results known before
// (a resumed sweep's), whose references and longest run count.
func newWatchdog(d Deadline, rs []sweep.Result) *watchdog {
	w := &watchdog{d: d, last: time.Now(), refs: map[int]time.Duration{}, preds: map[int]time.Duration{}, longest: longestRun(rs),
		stopping: "the agent"}
	for _, r := range rs {
		w.reference(r.Index, r.ReferenceS)
		w.predicted(r.Index, r.PredictedS, r.CutShort)
		w.launch = max(w.launch, launchEach(r))
	}
	return w
}

// launchEach is what each launch of a program's result r took beyond its
// timed region, on average (its LaunchS is its launches' together: its
// references' and its selective run's); 0 for an agent's result. A resumed
// sweep's watchdog starts from it: it had allowed no launch time until a
// launch of the resume ended, and a program whose launches take seconds
// under Slurm was stopped as hung at its first (a Slurm review).
func launchEach(r sweep.Result) time.Duration {
	if r.LaunchS == nil {
		return 0
	}
	n := len(r.ReferenceS)
	if r.SelectiveS != nil {
		n++
	}
	return seconds(*r.LaunchS / float64(max(n, 1)))
}

// seconds converts an agent's time, kept within a year (a time from a
// broken agent must not overflow a Duration).
func seconds(s float64) time.Duration {
	return time.Duration(min(max(s, 0), 365*24*3600) * float64(time.Second))
}

// restart starts the wait for the next event now: what came before (a
// Slurm job waiting in the queue) is no run's.
func (w *watchdog) restart() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = time.Now()
}

// reference records configuration i's reference times, when there are any:
// their mean is its reference time.
func (w *watchdog) reference(i int, times []float64) {
	if len(times) == 0 {
		return
	}
	sum := 0.0
	for _, t := range times {
		sum += t
	}
	w.refs[i] = seconds(sum / float64(len(times)))
}

// predicted records configuration i's latest whole prediction s: none
// when s is nil or the run was cut short (its prediction is a lower bound).
func (w *watchdog) predicted(i int, s *float64, cut bool) {
	if s != nil && *s > 0 && !cut {
		w.preds[i] = seconds(*s)
	}
}

// longestRun is the longest run among a sweep's results: a reference run or
// a selective run.
func longestRun(rs []sweep.Result) time.Duration {
	var m float64
	for _, r := range rs {
		if r.SelectiveS != nil {
			m = max(m, *r.SelectiveS)
		}
		for _, x := range r.ReferenceS {
			m = max(m, x)
		}
	}
	return seconds(m)
}

// seen is tick for an event the session goes on to handle: until done is
// called the deadline cannot pass, and the clock restarts then.
func (w *watchdog) seen(e Event) (done func()) {
	w.tick(e)
	w.mu.Lock()
	w.busy++
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		w.busy--
		w.last = time.Now()
		w.mu.Unlock()
	}
}

// tick is called at every event of the sweep. The wait since an announced
// run's start ends at the next event: such a wait is a run's length.
// Without announcements, only an event that ends a run (a result, or the
// progress of a selective run whose result waits for its references)
// gives a run's length, the time since the event before; the
// agent's start and the lines that follow a result only restart the
// clock. (Counting the wait for the agent's start as a run gave a fresh
// sweep a deadline of 5 s before any run had ended.)
func (w *watchdog) tick(e Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	waited := now.Sub(w.last)
	w.last = now
	if w.inRun {
		w.longest = max(w.longest, waited)
	}
	w.inRun = false
	switch e.Type {
	case sweep.TypeResult, sweep.TypeProgress:
		var r struct {
			Index      int       `json:"index"`
			ReferenceS []float64 `json:"reference_s"`
			PredictedS *float64  `json:"predicted_s"`
			CutShort   bool      `json:"cut_short"`
		}
		if e.Decode(&r) == nil {
			w.reference(r.Index, r.ReferenceS)
			if e.Type == sweep.TypeResult {
				w.predicted(r.Index, r.PredictedS, r.CutShort)
			}
			w.ended = w.ended || (w.run != nil && w.run.Index == r.Index)
		}
		w.longest = max(w.longest, waited)
	case sweep.TypeRunStart:
		var rs sweep.RunStart
		if e.Decode(&rs) != nil {
			return
		}
		w.run, w.inRun, w.ended = &rs, rs.Kind != sweep.RunSetup, false
		w.reference(rs.Index, rs.ReferenceS)
		w.launch = max(w.launch, seconds(rs.LaunchS))
	}
}

// limitNow is the current deadline (0: none yet), and what it is made of.
// A run of configuration C (its set-up included) may take the factor times
// C's reference time, or while C has none (tune; C's first runs) the
// factor times C's latest prediction of its whole run, or while C has
// none either the factor times the sweep's longest run so far, and at
// least DeadlineFloor; the sweep's first run itself has no deadline,
// unless C has a reference time or a prediction.
func (w *watchdog) limitNow() (time.Duration, string) {
	switch {
	case w.d.Off:
		return 0, ""
	case w.d.Fixed > 0:
		return w.d.Fixed, ""
	}
	f := w.d.factor()
	var ref, pred time.Duration
	known, predicted := false, false
	if w.run != nil {
		ref, known = w.refs[w.run.Index]
		pred, predicted = w.preds[w.run.Index]
	}
	var scale time.Duration
	var what string
	switch {
	case w.run == nil:
		scale, what = w.longest, "the sweep's longest run"
	case known:
		scale, what = ref, "its configuration's reference time"
	case predicted:
		scale, what = pred, "its configuration's predicted time"
	default:
		// Not the first run alone: a sweep's later configurations are
		// often larger (a program's n=700 after n=384, resumed after a
		// Slurm time limit, had been stopped as hung at 10 times the
		// n=384 run, though n=640's had taken as long).
		scale, what = w.longest, "the sweep's longest run so far"
	}
	if scale == 0 && !known {
		return 0, ""
	}
	basis := fmt.Sprintf("%g times %s, %s", f, what, briefDuration(scale))
	limit, floored := w.d.Limit(max(scale, 1), w.launch)
	if floored {
		basis = fmt.Sprintf("%s is the least a multiple allows; %s, is less", DeadlineFloor, basis)
	}
	if w.launch > 0 {
		basis += fmt.Sprintf("; and twice the longest a launch took beyond its timed region, %s", briefDuration(w.launch))
	}
	return limit, basis
}

// briefDuration writes d to about three digits: 81ms, 8.12s, 12.3s, 2m05s.
func briefDuration(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return FormatDuration(d)
	case d >= 10*time.Second:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Second:
		return d.Round(10 * time.Millisecond).String()
	case d >= time.Millisecond:
		return d.Round(time.Millisecond).String()
	}
	return d.Round(time.Microsecond).String()
}

// overdue reports whether the wait since the last event has passed the
// deadline, and records it when it has.
func (w *watchdog) overdue() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.busy > 0 {
		return false
	}
	limit, basis := w.limitNow()
	if waited := time.Since(w.last); limit > 0 && waited > limit {
		w.fired, w.limit, w.basis = waited, limit, basis
		if w.run != nil && !w.ended {
			r := *w.run
			w.hung = &r
		}
		return true
	}
	return false
}

// watch checks every tenth of a second until ended closes; when the
// deadline passes it calls hung once and returns.
func (w *watchdog) watch(ended <-chan struct{}, hung func()) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ended:
			return
		case <-t.C:
			select {
			case <-ended: // both ready: the sweep is over, nothing to stop
				return
			default:
			}
			if w.overdue() {
				hung()
				return
			}
		}
	}
}

// guard watches a driven sweep until ended closes: past the deadline it
// says so on pr and calls stop (which stops w.stopping). The flag it
// returns tells, once ended closed, that the user had cancelled before the
// deadline passed: the sweep then ends cancelled, not hung (the run was
// only waited for). After ended closes, wait waits for it.
//
// spare, when set, is tried first: it stops the hung run alone where it
// can (a program search's selective launch, whose configuration then
// leaves the search) and says so, and the sweep goes on, watched again.
func (w *watchdog) guard(runCtx context.Context, ended <-chan struct{}, pr *progress, stop func(), spare func(hung *sweep.RunStart) bool) *atomic.Bool {
	cancelledFirst := new(atomic.Bool)
	w.watching.Add(1)
	go func() {
		defer w.watching.Done()
		for again := true; again; {
			again = false
			w.watch(ended, func() {
				what := "no run has ended"
				if w.hung != nil {
					what = fmt.Sprintf("a run of configuration %d has not ended", w.hung.Index)
				}
				if w.hung != nil && spare != nil && runCtx.Err() == nil && spare(w.hung) {
					pr.note(fmt.Sprintf("%s after %s, past the deadline (%s): it hangs; stopping that launch alone (its configuration leaves the search, which goes on)", what, briefDuration(w.fired), briefDuration(w.limit)))
					w.forgive()
					again = true
					return
				}
				cancelledFirst.Store(runCtx.Err() != nil)
				pr.note(fmt.Sprintf("%s after %s, past the deadline (%s): it hangs; stopping %s", what, briefDuration(w.fired), briefDuration(w.limit), w.stopping))
				stop()
			})
		}
	}()
	return cancelledFirst
}

// forgive forgets a hang that spare stopped alone: the sweep goes on, and
// the clock restarts.
func (w *watchdog) forgive() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.fired, w.hung, w.last = 0, nil, time.Now()
}

// wait returns once guard's watch is over (at once when guard was not
// called): what it found (fired, hung) is then read without the lock.
func (w *watchdog) wait() { w.watching.Wait() }

// conclude sets sw's end once its sweep is over, if the deadline passed:
// cancelled when the user had cancelled first, else hung. It returns the
// configuration that hung (nil: none), for the journal.
func (w *watchdog) conclude(sw *Sweep, cancelledFirst *atomic.Bool) *int {
	switch {
	case w.fired == 0:
		return nil
	case cancelledFirst.Load():
		sw.Status, sw.Message = StatusCancelled, "cancelled; its last run was stopped past the deadline"
		return nil
	}
	i := w.hungIndex(sw)
	sw.Status, sw.Hung = StatusHung, &i
	sw.Message = w.hungMessage(sw, i)
	return &i
}

// hungMessage says what hung in sw and why it was judged so, once w fired.
func (w *watchdog) hungMessage(sw *Sweep, config int) string {
	basis := "'deadline' sets it"
	if w.basis != "" {
		basis = w.basis + "; " + basis
	}
	if w.hung == nil { // an agent that announces no runs, or a wait between runs
		return fmt.Sprintf("%s made no progress: no run ended for %s, past the deadline of %s (%s); %s was stopped",
			describeConfig(sw, config), briefDuration(w.fired), briefDuration(w.limit), basis, w.stopping)
	}
	msg := fmt.Sprintf("%s made no progress in %s: it had not ended after %s, past the deadline of %s (%s); %s was stopped",
		describeConfig(sw, config), describeRun(w.hung), briefDuration(w.fired), briefDuration(w.limit), basis, w.stopping)
	if w.pastResult {
		// Its region and its result were done: what hung is no skipped
		// message of the region's.
		return msg + "; " + programs.PastResultHint + " ('deadline 30x')"
	}
	if sp := sw.Spec; sp != nil && sp.Program != nil && !sp.RunsMessages() && w.hung.Kind == sweep.RunSelective {
		// A review's hpcc launch hung where others crashed on the same
		// stale indices, and only the crashes said what to try.
		hint := programs.StaleMessagesHint
		if sp.Search != sweep.SearchNone {
			hint = programs.StaleMessagesSearchHint
		}
		msg += "; " + hint
	}
	return msg
}

// hungIndex is the configuration that hung: the announced run's, or (an
// agent that announces none, a wait between runs) the first with a run
// missing.
func (w *watchdog) hungIndex(sw *Sweep) int {
	if w.hung != nil {
		return w.hung.Index
	}
	i, _ := hungConfig(sw)
	return i
}

// describeRun says what kind of run r is: "a selective run (eager at
// 2^-3)".
func describeRun(r *sweep.RunStart) string {
	var s string
	switch r.Kind {
	case sweep.RunSetup:
		s = "its set-up (before its first run)"
	case sweep.RunWarmUp:
		s = "its warm-up run (untimed, before its references)"
	case sweep.RunReference:
		s = "a reference run (in full, the engine off)"
	case sweep.RunSelective:
		s = "a selective run"
		if r.Tolerance != nil {
			s += fmt.Sprintf(" (%s at %s)", r.Policy, format.Tolerance(*r.Tolerance))
		}
	default:
		s = "a run"
	}
	if r.Round > 0 {
		s += fmt.Sprintf(" of search round %d", r.Round)
	}
	return s
}

// hungConfig is the configuration a hung sweep was running: the first, in
// run order, with a run missing (the agent runs configurations in order).
func hungConfig(sw *Sweep) (int, bool) {
	m := sw.Missing()
	if len(m) == 0 {
		return 0, false
	}
	return m[0].Config, true
}

// describeConfig names configuration i of sw: its index and parameters.
func describeConfig(sw *Sweep, i int) string {
	if i < 0 || i >= len(sw.Configs) {
		return fmt.Sprintf("configuration %d", i)
	}
	return fmt.Sprintf("configuration %d (%s)", i, sw.Configs[i].Label())
}
