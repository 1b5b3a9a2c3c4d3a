package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/internal/launch"
	"github.com/approxtune/approxtune/internal/preload"
	"github.com/approxtune/approxtune/internal/programs"
	"github.com/approxtune/approxtune/internal/protocol"
	"github.com/approxtune/approxtune/sweep"
)

// cmdProgram is the program verb: program CMD ARGS... [deck FILE=TEMPLATE ...].
func cmdProgram(s *Session, ctx context.Context, c *Command, out Output) error {
	if len(c.Args) == 0 {
		if s.st.Program == nil {
			out.Print("no program: sweeps run the workload " + s.st.Workload)
			return nil
		}
		out.Print(describeProgram(s.st.Program))
		return nil
	}
	p := &sweep.Program{}
	for i := 0; i < len(c.Args); i++ {
		a := c.Args[i]
		if a.Key == "" && a.Value == "deck" && len(p.Command) > 0 {
			if i+1 == len(c.Args) || c.Args[i+1].Key == "" {
				return errAt(a.Col, "deck wants FILE=TEMPLATE: the file the program reads, and the template it is written from")
			}
			d := c.Args[i+1]
			d.Key = typedKey(c, d)
			if strings.ContainsRune(d.Key, '/') {
				return errAt(d.Col, "deck %s: want a file name, written in each run's directory", d.Key)
			}
			tmpl, err := filepath.Abs(d.Value)
			if err != nil {
				return errAt(d.ValueCol, "%v", err)
			}
			if _, err := os.Stat(tmpl); err != nil {
				return errAt(d.ValueCol, "deck template: %v", err)
			}
			if p.Decks == nil {
				p.Decks = map[string]string{}
			}
			p.Decks[d.Key] = tmpl
			i++
			continue
		}
		a.Key = typedKey(c, a)
		p.Command = append(p.Command, a.String())
	}
	if strings.ContainsRune(p.Command[0], '/') {
		abs, err := filepath.Abs(p.Command[0])
		if err != nil {
			return errAt(c.Args[0].Col, "%v", err)
		}
		p.Command[0] = abs
	}
	if _, err := os.Stat(p.Command[0]); err != nil && strings.ContainsRune(p.Command[0], '/') {
		return errAt(c.Args[0].Col, "program: %v", err)
	}
	if err := p.CheckBraces(); err != nil {
		return &Error{Msg: err.Error()}
	}
	next := s.st.clone()
	kept := s.st.Program != nil && len(s.st.Space) > 0
	next.Workload, next.Program = sweep.ProgramWorkload, p
	if !kept {
		next.Space = map[string][]any{}
	}
	dropped := droppedSpace(s.st.Space, next.Space)
	s.st = next
	// The transcript keeps the paths made absolute: a notebook exported
	// elsewhere (or run from another directory) finds the same program.
	c.Line = programLine(p)
	msg := describeProgram(p)
	if kept {
		// One program for another (a typo fixed): the space stays, as
		// the parameters likely do; it had been reset each time.
		msg += fmt.Sprintf("\nthe space stays: %s ('space reset' clears it)", spaceLine(next.Space))
		if note := p.UnusedNote(next.Space); note != "" {
			msg += "\n" + note
		}
	} else {
		msg += "\nset its parameters with 'space' (e.g. space b=32,64 grid=2x2,1x4) and the rank count with a grid or ranks=N"
		if dropped != "" {
			msg += fmt.Sprintf("\nthe space set before (%s) is back to the defaults: 'space' sets it again", dropped)
		}
	}
	if path, err := exec.LookPath(p.Command[0]); err == nil {
		if note := preload.StaticKernelsNote(path); note != "" {
			msg += "\n" + note
		}
	}
	for _, w := range p.Command[1:] {
		if len(w) >= 2 && w[0] == '\'' && w[len(w)-1] == '\'' {
			// A shell's quotes, which the command language does not
			// know: the program had received them.
			msg += fmt.Sprintf("\nnote: the argument %s keeps its single quotes (only double quotes group words here): the program receives them", w)
			break
		}
	}
	out.Print(msg)
	return nil
}

// programLine is the program command that sets p, its words quoted where
// the parser needs it.
func programLine(p *sweep.Program) string {
	words := []string{"program"}
	for _, a := range p.Command {
		words = append(words, quoteWord(a))
	}
	for _, f := range slices.Sorted(maps.Keys(p.Decks)) {
		words = append(words, "deck", f+"="+quoteWord(p.Decks[f])) // a quoted '=' is no key's
	}
	return strings.Join(words, " ")
}

// quoteWord double-quotes a word that holds a space or '#', as Parse reads
// it back.
func quoteWord(w string) string {
	if strings.ContainsAny(w, " \t#") && !strings.Contains(w, `"`) {
		return `"` + w + `"`
	}
	return w
}

// typedKey is the key of a KEY=VALUE argument as typed: the parser lowers
// keys (parameter names), but a file name or a program's argument keeps
// its case.
func typedKey(c *Command, a Arg) string {
	rs := []rune(c.Line)
	start, n := a.Col-1, len([]rune(a.Key))
	if a.Key == "" || start < 0 || start+n > len(rs) {
		return a.Key
	}
	if k := string(rs[start : start+n]); strings.EqualFold(k, a.Key) {
		return k
	}
	return a.Key
}

// describeProgram says what a program sweep launches.
func describeProgram(p *sweep.Program) string {
	words := make([]string, len(p.Command))
	for i, w := range p.Command {
		words[i] = quoteWord(w) // "a b {n}" is one argument: shown so
	}
	s := "program " + strings.Join(words, " ")
	for _, f := range slices.Sorted(maps.Keys(p.Decks)) {
		s += fmt.Sprintf("\n  deck %s from %s", f, p.Decks[f])
	}
	return s
}

// programParam is a program's parameter as the space verb sets it: its
// kind read from the values typed.
func programParam(a Arg) sweep.Param {
	var raws []json.RawMessage
	for _, it := range strings.Split(a.Value, ",") {
		b, _ := json.Marshal(it)
		if json.Valid([]byte(it)) {
			b = []byte(it)
		}
		raws = append(raws, b)
	}
	raw, _ := json.Marshal(raws)
	return sweep.ProgramParam(a.Key, raw)
}

// programSchema is the program's workload as the space, grid and status
// verbs see it: the parameters its space has so far.
func programSchema(st State) protocol.Workload {
	w := protocol.Workload{Name: sweep.ProgramWorkload, Doc: describeProgram(st.Program)}
	// In name order: 'space' lists them so, the same each time (they had
	// come in the map's order).
	for _, k := range slices.Sorted(maps.Keys(st.Space)) {
		w.Params = append(w.Params, sweep.ProgramParam(k, raw(st.Space[k])))
	}
	return w
}

// driveProgram runs a program sweep in this process, each run a launch of
// the program with the preload library (under the local mpirun, or as a
// Slurm job step with launcher slurm), and follows it as drive does an
// agent's: every event journaled and shown. The runner emits events
// between launches only, and waits for each to be shown (figures drawn),
// so no gate is needed. Interrupting ends the sweep when the launch under
// way ends, what its configuration finished reported (a second interrupt
// stops the launch; the first stops the wait for a Slurm job to start);
// resume runs what is missing.
func (s *Session) driveProgram(ctx context.Context, sw *Sweep, sp *sweep.Spec, out Output) error {
	requests := s.openCancels()
	defer s.closeCancels()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	pr := newProgress(sw, out, s.live)
	stopClock := pr.clock()
	defer stopClock()
	// The first interrupt stops the sweep at the end of the launch under
	// way, which is then reported with what its configuration finished;
	// a second stops the launch. The first had stopped the launch, and
	// its configuration's finished launches were lost (a review's 5 of 6).
	graceful := make(chan struct{})
	launching := new(atomic.Bool) // the launches can start (ready): a Slurm job's wait is over
	go func() {
		select {
		case <-requests:
			if !launching.Load() {
				pr.note("cancelling: stopping the wait for the launches to start")
				stop()
				return
			}
			pr.note("cancelling: the sweep stops when the program's launch under way ends (interrupt again to stop the launch now)")
			close(graceful)
		case <-runCtx.Done():
			return
		}
		select {
		case <-requests:
			pr.note("cancelling: stopping the program's launch")
			stop()
		case <-runCtx.Done():
		}
	}()
	// A program that stops making progress (a deadlock) is stopped at the
	// deadline as an agent's run is.
	// Its clock starts once the launches can start: a Slurm job that holds
	// the nodes may wait in the queue far longer than any run takes (a
	// reviewer's resume was judged hung while its job was pending).
	wd := newWatchdog(s.st.Deadline, sw.Results)
	wd.stopping = "the program's launch"
	// A search's selective launch or finalist's full launch that hangs
	// is stopped alone, and its configuration leaves the search (a search
	// cannot be resumed: a hang had ended it, everything it had measured
	// with it). Its references (an evaluate search's) end it.
	var spare func(*sweep.RunStart) bool
	stoppable := &launchStop{}
	if sp.Search != sweep.SearchNone {
		spare = func(hung *sweep.RunStart) bool { return hung.StoppableInSearch() && stoppable.stop() }
	}
	ended := make(chan struct{})
	cancelledFirst := new(atomic.Bool)
	ready := func() {
		launching.Store(true)
		wd.restart()
		cancelledFirst = wd.guard(runCtx, ended, pr, stop, spare)
	}
	failed, err, jerr := s.runProgram(runCtx, sw, sp, pr, out, wd.seen, ready, graceful, stoppable.set)
	close(ended)
	wd.wait()
	stopClock()
	sw.Elapsed += time.Since(pr.start)
	switch {
	case err == nil && failed > 0 && sp.Search != sweep.SearchNone:
		// The search chose among the rest ('table best' names those that
		// left it): a search cannot be resumed.
		sw.Status, sw.Message = StatusOK, ""
	case err == nil && failed > 0:
		what := "1 selective run failed (told above) and has no result; 'resume' tries it again"
		if failed > 1 {
			what = fmt.Sprintf("%d selective runs failed (each told above) and have no result; 'resume' tries them again", failed)
		}
		sw.Status, sw.Message = StatusFailed, what
	case err == nil:
		sw.Status, sw.Message = StatusOK, ""
	case errors.Is(err, programs.ErrStopped) && runCtx.Err() == nil:
		sw.Status, sw.Message = StatusCancelled, "cancelled at a run boundary (the end of a launch)"
		if failed > 0 {
			what := format.Count(failed, "selective run", "selective runs")
			if sp.Search != sweep.SearchNone {
				what = format.Count(failed, "launch", "launches") // a finalist's full one too
			}
			sw.Message += fmt.Sprintf("; %s failed before (told above)", what)
		}
	case runCtx.Err() != nil:
		sw.Status, sw.Message = StatusCancelled, "interrupted: "+err.Error()
		if ce := (*programs.ConfigError)(nil); errors.As(err, &ce) {
			// The launch's end (its exit status) followed from the
			// stop: it had read as if the program had failed.
			sw.Message = fmt.Sprintf("interrupted: the launch of configuration %d (%s) was stopped", ce.Index, ce.Label)
		}
	default:
		sw.Status, sw.Message = StatusFailed, err.Error()
		var ce *programs.ConfigError
		var le *programs.LaunchError
		if errors.As(err, &ce) && !errors.As(err, &le) && ce.Own() {
			// A configuration whose full run fails fails every resume
			// the same way: say how to go on without it, on the first
			// line (the program's last lines follow it).
			hint := fmt.Sprintf(" ('resume' tries configuration %d again; 'resume skip=%d' goes on without it%s)", ce.Index, ce.Index, sharedFailure(sw, ce.Index))
			if sp.Search != sweep.SearchNone {
				// A search cannot be resumed ('resume' had been offered,
				// and then refused).
				hint = fmt.Sprintf(" (a search cannot be resumed: leave configuration %d's values out of 'space', or fix what fails, and run it again)", ce.Index)
			}
			first, rest, _ := strings.Cut(sw.Message, "\n")
			sw.Message = first + hint
			if rest != "" {
				sw.Message += "\n" + rest
			}
		}
	}
	wd.pastResult = errors.Is(err, programs.ErrPastResult)
	hung := wd.conclude(sw, cancelledFirst)
	if _, last, ok := strings.Cut(fmt.Sprint(err), "\n"); hung != nil && ok && strings.TrimSpace(last) != "" {
		// What the stopped launch printed last: the library's word on
		// a rank waiting at the region's start for ranks that never
		// come (a hung launch had said nothing of why).
		sw.Message += "\nits last output:\n" + last
	}
	return s.endSweep(sw, pr, hung, jerr)
}

// sharedFailure says, for configuration failed of sw whose full run
// failed, where a value of it is one that a configuration skipped before
// (resume skip=) had too, that no configuration with results has, and
// that configurations still to run have: how to leave them all out at
// once; else "". A value the program always refuses (nb=100, not dividing
// n) had been skipped one configuration, and one resume, at a time (a
// review).
func sharedFailure(sw *Sweep, failed int) string {
	if len(sw.Skipped) == 0 || failed < 0 || failed >= len(sw.Configs) {
		return ""
	}
	ran := map[int]bool{}
	for _, r := range sw.Results {
		ran[r.Index] = true
	}
	fc := sw.Configs[failed]
	for _, name := range fc.Names() {
		v, _ := fc.Value(name)
		same := func(i int) bool {
			w, ok := sw.Configs[i].Value(name)
			return ok && fmt.Sprint(w) == fmt.Sprint(v)
		}
		var before, rest []int
		clean := true
		for i := range sw.Configs {
			switch {
			case i == failed || !same(i):
			case ran[i]:
				clean = false
			case sw.Skipped[i]:
				before = append(before, i)
			default:
				rest = append(rest, i)
			}
		}
		if !clean || len(before) == 0 || len(rest) == 0 {
			continue
		}
		skip := []string{strconv.Itoa(failed)}
		for _, i := range rest {
			skip = append(skip, strconv.Itoa(i))
		}
		who, has := "configuration "+listInts(before), "has"
		if len(before) > 1 {
			who, has = "configurations "+listInts(before), "have"
		}
		return fmt.Sprintf("; %s, left out before, %s its %s=%v too, and no configuration with it has run: 'resume skip=%s' also leaves out the %s still to run with it",
			who, has, name, v, strings.Join(skip, ","), format.Count(len(rest), "other", "others"))
	}
	return ""
}

// listInts writes xs as "1", "1 and 4", "1, 4 and 5".
func listInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// runProgram runs the sweep's launches, journaling and showing each event;
// seen sees every event and each launch's start (the deadline) before the
// session handles it, and is told when it is done. It returns
// how many launches failed (each told of on out: selective ones, and in a
// search a finalist's full one), and the journal's
// first error, which stops the sweep after the event it could not journal.
// Once graceful is closed, the sweep stops at the end of the launch under
// way (programs.Runner.Stop).
func (s *Session) runProgram(ctx context.Context, sw *Sweep, sp *sweep.Spec, pr *progress, out Output, seen func(Event) func(), ready func(), graceful <-chan struct{}, stoppable func(context.CancelCauseFunc)) (nfailed int, runErr, journalErr error) {
	var failed []string // the selective runs that failed
	if s.opts.Binary == "" && os.Getenv(preload.EnvLib) == "" {
		// FindFor("") would look beside the running executable: a Go
		// program's own, not approxtune's.
		return 0, fmt.Errorf("no approxtune to find the preload library beside: approxtune is not on PATH, and neither Options.Binary nor %s is set", preload.EnvLib), nil
	}
	lib, err := preload.FindFor(s.opts.Binary)
	if err != nil {
		return 0, err, nil
	}
	configs, err := sp.Validate(nil, nil, 1<<30)
	if err != nil {
		return 0, err, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return 0, err, nil
	}
	ranks := 0
	for i, c := range configs {
		if sp.WantsConfig(i) {
			ranks = max(ranks, sp.Program.Ranks(c))
		}
	}
	pl, err := s.programLauncher(ctx, ranks, out, pr.note)
	if err != nil {
		return 0, err, nil
	}
	s.ranInJob(sw, pl.job, out)
	if pl.job == "" {
		var own []int // this session's idle agent
		if s.agent != nil {
			own = s.agent.Hello.PIDs
		}
		if w := othersWarning(own, "as this sweep starts"); w != "" {
			out.Print(w)
		}
	}
	if m, ok := pl.launcher.(programs.Mpirun); ok {
		if w := launch.Oversubscribed(m.Flavor, ranks, m.Cores); w != "" {
			out.Print("warning: " + w)
		}
	}
	ready()
	defer pl.release(out)
	// The program's own output (its residuals, its checksums) goes to the
	// session's program log, each launch under a heading; a failed
	// launch's error also ends with its last lines. It had been kept
	// nowhere (a Slurm review).
	logPath := filepath.Join(s.Dir(), ProgramLogName)
	logf, lerr := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if lerr != nil {
		out.Print(fmt.Sprintf("note: the program's output is not kept: %v", lerr))
	} else {
		defer logf.Close()
		out.Print("the program's output goes to " + logPath)
	}
	label := sw.Labeler()
	r := &programs.Runner{Launcher: pl.launcher, Lib: lib, Dir: dir, Scratch: pl.scratch, Carry: true, Stop: graceful, Stoppable: stoppable, Emit: func(ev any) error {
		line, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		var head struct{ Type string }
		_ = json.Unmarshal(line, &head)
		e := Event{Type: head.Type, Raw: line}
		defer seen(e)()
		// The sweep in memory takes the event even when the journal does
		// not (as an agent's sweep does): its record waits in the
		// journal's backlog, and resume would run it again otherwise.
		jerr := s.journalEvent(sw, e)
		pr.event(e)
		if head.Type == sweep.TypeError {
			var ev sweep.ErrorEvent
			_ = json.Unmarshal(line, &ev)
			failed = append(failed, ev.Message)
			// Said as it happens, in a line (in full at the sweep's
			// end): the progress had passed the configuration unsaid.
			first, _, _ := strings.Cut(ev.Message, "\n")
			goesOn := "the sweep goes on"
			if sp.Search != sweep.SearchNone {
				goesOn = "the search goes on without the configuration"
			}
			pr.note("failed, " + goesOn + " (told in full at its end): " + first)
		}
		if jerr != nil && journalErr == nil {
			journalErr = jerr
		}
		return jerr
	}, Warn: pr.note, Started: func(rs sweep.RunStart) {
		if logf != nil {
			c := ""
			if rs.Index >= 0 && rs.Index < len(configs) {
				c = label(configs[rs.Index])
			}
			fmt.Fprintf(logf, "== sweep %d, %s, %s ==\n", sw.ID, programs.Heading(rs, c), time.Now().Format(time.DateTime))
		}
		line, err := json.Marshal(rs)
		if err != nil {
			return
		}
		e := Event{Type: rs.Type, Raw: line}
		defer seen(e)()
		pr.started(e)
	}}
	notes := &libraryNotes{note: pr.note, quiet: 2 * time.Second}
	defer notes.ended()
	r.Output, r.Ended = notes, notes.ended
	if logf != nil {
		r.Output = io.MultiWriter(logf, notes)
	}
	err = r.Sweep(ctx, sp, configs)
	if err != nil && ctx.Err() == nil {
		err = pl.explain(ctx, err)
	}
	what := "a selective run failed and has no result ('resume' tries it again): "
	if sp.Search != sweep.SearchNone {
		what = "a launch failed, and its configuration left the search: "
	}
	for _, f := range failed {
		out.Print(what + f)
	}
	return len(failed), err, journalErr
}

// libraryNotes passes on the lines the preload library writes among a
// program's output ("libapproxtune: ..."), to note, while the launch that
// wrote them runs on for quiet after them: that a launch waits for ever at
// a region mark some ranks never reach had gone to program.log alone, the
// REPL showing nothing for minutes (a review). A line of a launch that
// ends sooner is left to the launch's error, which ends with its last
// lines; each line is noted once. The rest of the output it drops.
type libraryNotes struct {
	note  func(string)
	quiet time.Duration
	mu    sync.Mutex
	line  []byte          // the last line's start, its end not written yet
	told  map[string]bool // the lines noted
	wait  map[string]*time.Timer
	gen   int // the launches' generation: ended moves it on
}

func (w *libraryNotes) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.line = append(w.line, p...)
	for {
		i := bytes.IndexByte(w.line, '\n')
		if i < 0 {
			break
		}
		if l := string(w.line[:i]); strings.HasPrefix(l, "libapproxtune: ") && !w.told[l] && w.wait[l] == nil {
			if w.wait == nil {
				w.told, w.wait = map[string]bool{}, map[string]*time.Timer{}
			}
			gen := w.gen
			w.wait[l] = time.AfterFunc(w.quiet, func() { w.tell(l, gen) })
		}
		w.line = w.line[i+1:]
	}
	if len(w.line) > 4096 && !bytes.HasPrefix(w.line, []byte("libapproxtune: ")) {
		w.line = w.line[:0] // a long line of the program's own
	}
	return len(p), nil
}

// tell notes line l, written by the launches of generation gen, unless
// they have ended since: under the lock, so that no note follows ended.
func (w *libraryNotes) tell(l string, gen int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if gen != w.gen {
		return
	}
	delete(w.wait, l)
	w.told[l] = true
	w.note(l)
}

// ended tells w that the launches under way have ended: the lines they
// wrote and that are not noted yet are not (their error ends with them);
// a later launch's same line is.
func (w *libraryNotes) ended() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.gen++
	for l, t := range w.wait {
		t.Stop()
		delete(w.wait, l)
	}
	w.line = w.line[:0]
}

// launchStop holds the stop of the program's launch under way that may be
// stopped alone (programs.Runner.Stoppable): a search's selective launch,
// or a finalist's full launch.
type launchStop struct {
	mu     sync.Mutex
	cancel context.CancelCauseFunc
}

// set is programs.Runner.Stoppable.
func (l *launchStop) set(cancel context.CancelCauseFunc) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cancel = cancel
}

// stop stops the launch under way alone, as hung, and says whether there
// was one to stop.
func (l *launchStop) stop() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cancel == nil {
		return false
	}
	l.cancel(programs.ErrHung)
	l.cancel = nil // once: the launch may take a while to end
	return true
}
