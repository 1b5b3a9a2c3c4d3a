package session

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/approxtune/approxtune/sweep"
)

// Deadline bounds how long a sweep may go without a run ending before the
// session calls it hung: a rank that stops making progress is no death
// (rank 0 still answers), so nothing else would end the wait. The zero
// Deadline is the default, 10 times the sweep's longest run.
type Deadline struct {
	Off    bool          // no deadline
	Fixed  time.Duration // a fixed time per run, when set
	Factor float64       // else this many times the longest run so far (0: 10)
}

// deadlineFloor is the least a multiple-of-runs deadline allows: short runs
// on a shared machine now and then wait seconds for the scheduler.
const deadlineFloor = 5 * time.Second

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

// Explain says what the deadline does, for 'deadline' alone and status.
func (d Deadline) Explain() string {
	switch {
	case d.Off:
		return "off: a run that stops making progress is waited for until you interrupt it"
	case d.Fixed > 0:
		return fmt.Sprintf("%s: a sweep in which no run ends for %s is stopped as hung", d.Fixed, d.Fixed)
	}
	f := d.Factor
	if f == 0 {
		f = defaultFactor
	}
	return fmt.Sprintf("%s: a sweep in which no run ends for %g times its longest run so far (at least %s) is stopped as hung; the first run of a fresh sweep has none to go by", d, f, deadlineFloor)
}

// ParseDeadline reads off, a duration (90s, 2m, 1h) or a multiple of the
// longest run (10x).
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
		return Deadline{}, fmt.Errorf("%q is not a deadline: want off, a multiple of the longest run (10x, the default) or a time of 1s or more (90s, 5m, 2h)", v)
	}
	return Deadline{Fixed: d}, nil
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
// called at every event and restarts the clock; the longest wait that
// ended with a run's end is the scale a multiple applies to.
type watchdog struct {
	d       Deadline
	mu      sync.Mutex
	last    time.Time
	longest time.Duration
	fired   time.Duration // the wait that was judged hung (0: none)
	limit   time.Duration
}

// newWatchdog starts the clock; longest is the sweep's longest run known
// before (a resumed sweep's results).
func newWatchdog(d Deadline, longest time.Duration) *watchdog {
	return &watchdog{d: d, last: time.Now(), longest: longest}
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
	return time.Duration(m * float64(time.Second))
}

// tick is called at every event of the sweep. Only an event that ends a
// run (a result, or the progress of a selective run whose result waits for
// its references) gives a run's length, the time since the event before;
// the agent's start and the lines that follow a result only restart the
// clock. (Counting the wait for the agent's start as a run gave a fresh
// sweep a deadline of 5 s before any run had ended.)
func (w *watchdog) tick(e Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := time.Now()
	if e.Type == sweep.TypeResult || e.Type == sweep.TypeProgress {
		w.longest = max(w.longest, now.Sub(w.last))
	}
	w.last = now
}

// limitNow is the current deadline (0: none yet).
func (w *watchdog) limitNow() time.Duration {
	switch {
	case w.d.Off:
		return 0
	case w.d.Fixed > 0:
		return w.d.Fixed
	case w.longest == 0:
		return 0
	}
	f := w.d.Factor
	if f == 0 {
		f = defaultFactor
	}
	return max(deadlineFloor, time.Duration(f*float64(w.longest)))
}

// overdue reports whether the wait since the last event has passed the
// deadline, and records it when it has.
func (w *watchdog) overdue() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	limit := w.limitNow()
	if waited := time.Since(w.last); limit > 0 && waited > limit {
		w.fired, w.limit = waited, limit
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
			if w.overdue() {
				hung()
				return
			}
		}
	}
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
