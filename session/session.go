package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/internal/protocol"
	"github.com/approxtune/approxtune/sweep"
)

// Options configure a Session.
type Options struct {
	// Dir is the session directory (journal and exports); default
	// $XDG_DATA_HOME/approxtune/sessions/ID, or $APPROXTUNE_SESSION_DIR.
	Dir string
	// Binary is the approxtune executable that agents run (and beside
	// which the preload library for programs is found); default approxtune
	// on PATH. The approxtune command passes itself; a Go program that
	// drives sessions sets it or has approxtune on its PATH (its own
	// executable would be started as the agent).
	Binary string
	// HelloTimeout bounds the wait for a local agent's hello (default 60 s),
	// and for a Slurm job's agent from the job's start.
	HelloTimeout time.Duration
	// JobPoll is how often the state of an agent's Slurm job is asked
	// (default 2 s).
	JobPoll time.Duration
	// HoldQuiet is how long the Slurm job that holds a program sweep's
	// nodes waits without word from the session (a file it touches)
	// before it ends itself: a session killed outright had left it
	// running to its time limit. Default $APPROXTUNE_HOLD_QUIET (a
	// duration, for tests), else 3 minutes; at least 1 s.
	HoldQuiet time.Duration
	// SyncEvery is the least time between two syncs of the journal
	// during a sweep (default 1 s): an event syncs it when that much has
	// passed since the last sync, and a sweep's end always does. Every
	// record is written to the file as it comes, so only a crash of the
	// machine itself loses what was not synced; a sync per configuration
	// made a sweep of 3000 configurations of microseconds spend 32 s in
	// fsync.
	SyncEvery time.Duration
	// Grace is how long a cancelled sweep may take to reach a run boundary
	// before mpirun is interrupted (default 15 s).
	Grace time.Duration
	// Notebook writes the transcript for 'export notebook FILE'; without
	// it that command fails and says so. The REPL, the kernel and
	// 'approxtune run' set approxtune's (see SetDefaultNotebook).
	Notebook NotebookFunc
}

// Output receives what commands print and how sweeps progress.
type Output interface {
	// Print shows a block of text (a command's answer), one or more lines
	// without the last one's newline, which the Output adds.
	Print(text string)
	// Update reports a sweep's progress: when it starts, after every run
	// (its result, or in evaluate mode the progress event that precedes it),
	// and at its end (Final).
	Update(p Progress)
}

// LiveOutput is an Output that may draw a running sweep's figures as its
// results arrive, in Update (the Jupyter kernel's cell output), found by a
// type assertion as net/http's optional interfaces are. When LiveFigures
// reports true and the agent runs on this machine (Agent.Local), the
// session runs its sweeps gated (Agent.RunGated): the agent starts no run
// before Update has returned for every event it sent, so no drawing
// shares the cores with a timed run. Update draws only for updates without
// a note: a note may come while a run is timed.
type LiveOutput interface {
	Output
	LiveFigures() bool
}

// ClockedOutput is an Output whose display of a running sweep shows its
// elapsed time going on between events (a terminal's live area): while
// Clocked reports true, the session reports the sweep's state to it every
// second that brings no event. A run may last minutes, and a display that
// moves only with events looks hung.
type ClockedOutput interface {
	Output
	Clocked() bool
}

// drawsLive reports whether out draws a running sweep's figures.
func drawsLive(out Output) bool {
	lo, ok := out.(LiveOutput)
	return ok && lo.LiveFigures()
}

// Progress is a running sweep's state.
type Progress struct {
	Sweep       *Sweep
	Done, Total int
	Elapsed     time.Duration
	Final       bool
	Note        string // what is happening besides results, e.g. a cancel under way
	// Running is the run under way, from the agent's announcement of its
	// start ("grid=2x2 b=64: full run 2 of 3"), or "" when none was
	// announced; a long run then shows what it is.
	Running string
}

// Session holds a user's state, agent and journal. It is driven from one
// goroutine: Exec, Run and the other methods do not lock against each
// other, so a caller must not run two at once. Cancel and Stop may be
// called from any goroutine, to end what Exec or Run is running.
type Session struct {
	opts    Options
	st      State
	journal *Journal
	lastOut Output // the last command's, for what Close has to say
	agent   *Agent
	ln      *Listener
	sweeps  []*Sweep
	closed  bool   // Close ran
	live    string // 'plot live FILE': the file each sweep's figures are drawn to ("": none)
	// reopened says what the directory's journal held when the session
	// opened ("" for a new session): see reopen.
	reopened string
	// chosen: the session's directory is one the user named (--dir,
	// $APPROXTUNE_SESSION_DIR), outside the sessions directory: its
	// settings are kept from the first, to come back when it is reopened
	// (a user's typed settings, with no sweep, had been lost).
	chosen bool
	// previous points a fresh session at the sweep the session before it
	// left unfinished (see Previous); nil until asked.
	previous *string

	mu         sync.Mutex
	cancels    chan bool // the running sweep's cancel requests (true: stop now)
	transcript []Step    // what Exec ran (see Step)
	// exported are the files 'export notebook' wrote: it replaces those,
	// and no other file.
	exported map[string]bool
}

// New opens a session (creating its directory and journal). A directory
// whose journal holds sweeps, or settings, is reopened: its sweeps and its
// last state are restored, so 'resume' finishes a sweep the session before
// left (Reopened says what was found).
func New(o Options) (*Session, error) {
	if o.Dir == "" {
		o.Dir = os.Getenv("APPROXTUNE_SESSION_DIR")
	}
	if o.Dir == "" {
		o.Dir = filepath.Join(DefaultSessionsDir(), NewSessionID())
	}
	if o.Binary == "" {
		// Unset where approxtune is not on PATH: starting an agent then
		// says so (binary).
		o.Binary, _ = exec.LookPath("approxtune")
	}
	if o.HelloTimeout == 0 {
		o.HelloTimeout = 60 * time.Second
	}
	if o.Grace == 0 {
		o.Grace = 15 * time.Second
	}
	if o.JobPoll == 0 {
		o.JobPoll = 2 * time.Second
	}
	if o.SyncEvery == 0 {
		o.SyncEvery = time.Second
	}
	if o.HoldQuiet == 0 {
		o.HoldQuiet = 3 * time.Minute
		if d, err := time.ParseDuration(os.Getenv("APPROXTUNE_HOLD_QUIET")); err == nil && d > 0 {
			o.HoldQuiet = d
		}
	}
	// The session beats every sixth of it, and the job reads whole
	// seconds: less than a second is a second (5ns had made the
	// heartbeat's ticker panic).
	o.HoldQuiet = max(o.HoldQuiet, time.Second)
	j, err := OpenJournal(o.Dir)
	if err != nil {
		return nil, err
	}
	s := &Session{opts: o, st: DefaultState(), journal: j, chosen: !sameDir(filepath.Dir(o.Dir), DefaultSessionsDir())}
	if err := s.reopen(); err != nil {
		return nil, err
	}
	return s, nil
}

// Dir is the session directory.
func (s *Session) Dir() string { return s.opts.Dir }

// State returns a copy of the current state.
func (s *Session) State() State { return s.st.clone() }

// Last is the most recent sweep, or nil.
func (s *Session) Last() *Sweep {
	if len(s.sweeps) == 0 {
		return nil
	}
	return s.sweeps[len(s.sweeps)-1]
}

// Agent is the connected agent, or nil.
func (s *Session) Agent() *Agent { return s.agent }

// Close shuts the agent down cleanly and closes the journal. Its error
// also says when the agent's job or mpirun could not be stopped (it may
// still hold its nodes). Calls after the first do nothing.
func (s *Session) Close() error {
	if s.closed {
		return nil
	}
	s.closed = true
	var stopErr error // an agent's job or mpirun that may outlive the session
	if s.agent != nil {
		stopErr = s.agent.Shutdown(5 * time.Second)
		s.agent = nil
	}
	if s.ln != nil {
		s.ln.Close()
	}
	// A journal deleted since the last command is written again, and the
	// last command's output (the REPL's terminal) says so.
	n, err := s.journal.Recover()
	if n != "" && s.lastOut != nil {
		s.lastOut.Print("warning: " + n)
	}
	return errors.Join(stopErr, err, s.journal.Close())
}

// recoverJournal puts the journal back when its file went away
// (Journal.Recover), and says so on out.
func (s *Session) recoverJournal(out Output) {
	n, err := s.journal.Recover()
	if n != "" {
		out.Print("warning: " + n)
	}
	if err != nil {
		out.Print(fmt.Sprintf("warning: %v: this session's records since are not in a file, and are lost when it ends; 'export csv FILE' keeps its results", err))
	}
}

// schemas are the workloads to validate against: the agent's, or this binary's.
func (s *Session) schemas() schemaSet {
	ss := localSchemas()
	if s.agent != nil {
		ss = schemaSet(s.agent.Hello.Workloads)
	}
	if s.st.Program != nil {
		ss = append(ss, programSchema(s.st))
	}
	return ss
}

// Exec parses and runs one command line. A wrong command changes nothing and
// returns an *Error naming what was wrong, where, and what is valid.
// A blank line does nothing; a comment line ('#' ...) does nothing but go
// into the transcript, as every command that succeeds does (see Step).
func (s *Session) Exec(ctx context.Context, line string, out Output) error {
	c, err := Parse(line)
	if err != nil {
		return err
	}
	if c == nil {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "#") {
			s.record(Step{Line: t, Comment: true})
		}
		return nil
	}
	v, ok := findVerb(c.Verb)
	if !ok && (c.Verb == "exit" || c.Verb == "quit") {
		return errAt(c.VerbCol, "%s: in the REPL, 'exit' or Ctrl-D leaves; in Jupyter, shut the kernel down (jupyter console: Ctrl-D; a notebook: Kernel > Shut Down)", c.Verb)
	}
	if !ok {
		if n := format.Nearest(c.Verb, Verbs()); n != "" {
			return errAt(c.VerbCol, "unknown command %q: did you mean %s? The commands are %s (try 'help')", c.Verb, n, verbList())
		}
		return errAt(c.VerbCol, "unknown command %q: the commands are %s (try 'help')", c.Verb, verbList())
	}
	if err := onceEach(c); err != nil {
		return err
	}
	if err := s.takeSweep(c); err != nil {
		return err
	}
	rec, rout := newRecorder(out)
	prev := s.Last()
	var prevResults, prevSkipped int // what a resume that fails may have changed
	if prev != nil {
		prevResults, prevSkipped = len(prev.Results), len(prev.Skipped)
	}
	before := s.st.clone()
	s.lastOut = out
	s.recoverJournal(out)
	defer s.recoverJournal(out)
	if err := v.run(s, ctx, c, rout); err != nil {
		// A command that made a sweep, or a resume that ran some of one
		// (results, configurations left out) before it failed, is
		// recorded where it ran: a notebook exported from the session
		// repeats what the session did.
		sw := s.Last()
		made := sw != nil && sw != prev
		resumed := sw != nil && sw == prev && c.Verb == "resume" && (len(sw.Results) != prevResults || len(sw.Skipped) != prevSkipped)
		if made || resumed {
			st := rec.step(c.Line, sw)
			st.Failed = err.Error()
			s.record(st)
		}
		return err
	}
	if !isExportNotebook(c) {
		// c.Line is the line as typed, unless the verb wrote it out in
		// full (launcher, with its defaults).
		s.record(rec.step(c.Line, s.Last()))
	}
	s.keepState(before, out)
	return nil
}

// keepState journals the settings when a command changed them, once the
// journal exists or, in a directory of the user's choosing, from the
// first (a new session in the sessions directory that never sweeps leaves
// nothing): a sweep's record holds the settings it ran with, and a
// reopened session came back with those, losing what was typed after the
// last sweep, or without any when none had run.
// A journal that cannot take them is said at once (the settings of a
// session whose journal was read-only had been dropped unsaid, until a
// sweep could not start).
func (s *Session) keepState(before State, out Output) {
	if reflect.DeepEqual(before, s.st) {
		return
	}
	if _, err := os.Stat(filepath.Join(s.opts.Dir, JournalName)); err != nil && !s.chosen {
		return // a new session in the sessions directory: made by its first sweep
	}
	st := s.st.clone()
	var je *JournalError
	if err := s.journal.append(record{Kind: "state", State: &st}); errors.As(err, &je) {
		out.Print(fmt.Sprintf("note: the settings could not be written to the journal (%v): they wait in memory, written with the next record the journal takes (%s); a reopened session would come back without them", je.Err, je.Fix()))
	}
}

// Cancel asks the running sweep to stop at the next run boundary; a second
// call, or no answer within the grace period, interrupts mpirun. It returns
// what it did, or "" when no sweep is running.
func (s *Session) Cancel() string {
	return s.request(false)
}

// Stop stops the running sweep now, as two calls of Cancel would, but
// without the advice a first interrupt prints (what SIGTERM or SIGHUP
// asks of a session). It returns what it did, or "" when no sweep is
// running.
func (s *Session) Stop() string {
	if s.request(true) == "" {
		return ""
	}
	return s.request(true)
}

// request sends a cancel request to the running sweep, if any.
func (s *Session) request(now bool) string {
	s.mu.Lock()
	ch := s.cancels
	s.mu.Unlock()
	if ch == nil {
		return ""
	}
	select {
	case ch <- now:
	default:
	}
	return "cancel requested"
}

// ensureAgent returns a live agent: the current one, one that dials in to
// the listener, or one the launcher starts now (note shows the news of
// its Slurm job meanwhile).
func (s *Session) ensureAgent(ctx context.Context, out Output, note func(string)) (*Agent, error) {
	if s.agent != nil {
		select {
		case <-s.agent.Gone():
			if job, ok := s.agent.proc.(*batchJob); ok && job.timedOutIdle(ctx) {
				// Its job's time ran out between sweeps: nothing was
				// lost, and mpirun's lines had read as a failure (a
				// Slurm review).
				out.Print(fmt.Sprintf("the previous agent's %s reached its time limit between sweeps; starting a new one ('launcher slurm time=' sets the limit)", job.name()))
			} else {
				out.Print(fmt.Sprintf("the previous agent is gone (%v); starting a new one", s.agent.deathError()))
			}
			s.agent = nil
		default:
			return s.agent, nil
		}
	}
	if s.ln != nil {
		out.Print(fmt.Sprintf("waiting for an agent to dial in at %s (interrupt to stop waiting)", s.ln.Addr()))
		a, err := s.ln.Accept(ctx)
		if err != nil {
			return nil, fmt.Errorf("no agent dialed in: %w", err)
		}
		s.agent = a
		out.Print("agent connected: " + describeAgent(a))
		printWarnings(a, out)
		return a, nil
	}
	if err := s.binary(); err != nil {
		return nil, err
	}
	a, err := s.st.Launcher.starter().start(ctx, s, out, note)
	if err != nil {
		return nil, err
	}
	printWarnings(a, out)
	s.agent = a
	return a, nil
}

// printWarnings shows what the agent found wrong with its environment.
func printWarnings(a *Agent, out Output) {
	for _, w := range a.Warnings() {
		out.Print("warning: " + w)
	}
}

// stopAgent shuts the current agent down (ranks or the launcher changed,
// a program's job needs its nodes). It reports whether the agent's job or
// mpirun is over; when not, it says so on out as a warning.
func (s *Session) stopAgent(out Output) bool {
	if s.agent == nil {
		return true
	}
	err := s.agent.Shutdown(5 * time.Second)
	s.agent = nil
	if err != nil {
		out.Print("warning: " + err.Error())
	}
	return err == nil
}

// Run runs a sweep of the current state in mode ("evaluate", "tune" or
// "reference"), streaming progress to out, and returns it. It is the Go API
// behind the evaluate and tune commands.
func (s *Session) Run(ctx context.Context, mode sweep.Mode, out Output) (*Sweep, error) {
	return s.RunSearch(ctx, mode, Search{}, out)
}

// RunSearch runs a sweep of the current state in mode that searches the
// space as se says (the tune and evaluate commands' search= options); a
// zero Search runs every configuration, as Run does.
func (s *Session) RunSearch(ctx context.Context, mode sweep.Mode, se Search, out Output) (*Sweep, error) {
	if err := ctx.Err(); err != nil { // no sweep for a context already done
		return nil, err
	}
	sp, configs, err := validateSearch(s.schemas(), s.st, mode, se, s.st.Ranks)
	if err != nil {
		return nil, err
	}
	sw := &Sweep{ID: len(s.sweeps) + 1, Spec: sp, Configs: configs, Workload: sp.Workload, Status: StatusRunning, Started: time.Now(), ranOn: ranOn(s.st.Launcher)}
	var connected *Launcher
	if s.ln != nil && sp.Program == nil {
		// Its agent dialled in ('listen'): it runs where that agent is.
		sw.ranOn = &Launcher{Kind: launcherConnected}
		connected = sw.ranOn
	}
	if err := s.journal.append(record{Kind: "sweep", Sweep: sw.ID, Spec: sp, State: &s.st, Configs: configs, RanOn: connected}); err != nil {
		var je *JournalError
		if errors.As(err, &je) {
			// Not started: nothing to resume, and its record is not
			// written later (a review's retyped evaluate had left two
			// sweep 1 records, after advice to 'resume' that had nothing
			// to resume).
			s.journal.dropLast()
			return nil, &Error{Msg: fmt.Sprintf("the sweep did not start: %v: %s, then run it again", je.Err, je.Fix())}
		}
		return nil, err
	}
	s.sweeps = append(s.sweeps, sw)
	return sw, s.drive(ctx, sw, sp, out)
}

// ranInJob records that sw's runs run in Slurm job id (none when id is
// ""), in the sweep and its journal, once: the job's id had been in the
// sweep's output alone, lost with the session (a Slurm review's note).
func (s *Session) ranInJob(sw *Sweep, id string, out Output) {
	if !sw.addJob(id) {
		return
	}
	if err := s.journal.append(record{Kind: "job", Sweep: sw.ID, Message: id}); err != nil {
		// The sweep goes on: its results are what the journal must keep.
		out.Print(fmt.Sprintf("warning: the journal could not record Slurm job %s: %v", id, err))
	}
}

// Resume reruns the runs of sw that have no result yet.
func (s *Session) Resume(ctx context.Context, sw *Sweep, out Output) error {
	return s.resume(ctx, sw, nil, out)
}

// ResumeSkipping is Resume with the configurations configs (indexes, as
// 'table configs' numbers them) left out for good: a configuration whose
// full run fails every time (a program that crashes at that size) would
// otherwise end every resume.
func (s *Session) ResumeSkipping(ctx context.Context, sw *Sweep, configs []int, out Output) error {
	if err := checkSkip(sw, configs); err != nil {
		return err
	}
	var skip []int
	for _, i := range configs {
		if !slices.Contains(skip, i) && !sw.Skipped[i] {
			skip = append(skip, i)
		}
	}
	return s.resume(ctx, sw, skip, out)
}

// checkSkip says what is wrong with leaving configs out of sw, or nil.
func checkSkip(sw *Sweep, configs []int) error {
	for _, i := range configs {
		if i < 0 || i >= len(sw.Configs) {
			return &Error{Msg: fmt.Sprintf("skip=%d: sweep %d has configurations 0 to %d ('table configs' numbers them)", i, sw.ID, len(sw.Configs)-1)}
		}
	}
	missing := sw.Missing()
	if len(configs) > 0 && len(missing) == 0 {
		return &Error{Msg: fmt.Sprintf("sweep %d is complete: nothing to skip or resume", sw.ID)}
	}
	for _, i := range configs {
		if !slices.ContainsFunc(missing, func(r sweep.RunRef) bool { return r.Config == i }) {
			return &Error{Msg: fmt.Sprintf("skip=%d: configuration %d has all its runs: nothing to skip", i, i)}
		}
	}
	return nil
}

// resume runs sw's missing runs, with the configurations skip left out for
// good.
func (s *Session) resume(ctx context.Context, sw *Sweep, skip []int, out Output) error {
	if sw.Spec != nil && sw.Spec.Search != sweep.SearchNone {
		if sw.Status == StatusOK {
			out.Print(fmt.Sprintf("sweep %d is complete: nothing to resume", sw.ID))
			return nil
		}
		return &Error{Msg: fmt.Sprintf("sweep %d is a search (search=%s): its rounds depend on each other, so it cannot be resumed run by run; run it again", sw.ID, sw.Spec.Search)}
	}
	if sw.Spec != nil && sw.Spec.Program == nil && s.ln == nil && sw.Ranks > 0 && sw.Ranks != s.st.Ranks {
		// The rest of a sweep runs on the ranks its first runs had: its
		// grids were checked against them, and its runs are compared.
		// Another count had failed on a grid that no longer fit, or run
		// the rest on another machine than the first.
		out.Print(fmt.Sprintf("ranks %d, as sweep %d ran (they were %d)", sw.Ranks, sw.ID, s.st.Ranks))
		s.setRanks(sw.Ranks, out)
	}
	for _, i := range skip {
		sw.leaveOut(i)
		why := "as asked"
		if sw.Hung != nil && *sw.Hung == i {
			why = "which hung"
		}
		out.Print(fmt.Sprintf("skipping %s, %s", describeConfig(sw, i), why))
	}
	missing := sw.Missing()
	if len(missing) == 0 && len(skip) > 0 {
		// What was skipped was all that was left: the sweep ends here.
		sw.Status, sw.Message = StatusOK, "complete without the configurations skipped"
		err := errors.Join(s.journal.append(record{Kind: "resume", Sweep: sw.ID, Spec: sw.Spec, Skip: sw.skippedList()}),
			s.journal.append(record{Kind: "end", Sweep: sw.ID, Status: sw.Status, Message: sw.Message}))
		out.Print(fmt.Sprintf("sweep %d is complete without the configurations skipped: nothing else to run", sw.ID))
		s.dropCarried(sw)
		return err
	}
	if len(missing) == 0 {
		out.Print(fmt.Sprintf("sweep %d is complete: nothing to resume", sw.ID))
		return nil
	}
	if ran := sw.ranOn; s.ln == nil && ran != nil && ran.Kind != launcherConnected && ran.Slurm() != s.st.Launcher.Slurm() {
		// The rest runs where the first runs did: a Slurm sweep resumed
		// from another session had run the rest under this machine's
		// mpirun (a login node's), its configurations then compared
		// across machines (a Slurm review). A sweep of this session's
		// own keeps the launcher set since, said.
		if sw.origin != "" {
			was := s.st.Launcher.Command()
			s.switchLauncher(ran.clone(), out)
			out.Print(fmt.Sprintf("%s, as sweep %d ran (it was %s; a 'launcher' command before 'resume' keeps the session's own kind)", s.st.Launcher.Command(), sw.ID, was))
		} else {
			out.Print(fmt.Sprintf("note: sweep %d ran with %s; its rest runs with %s, set since, so its configurations compare across machines ('%s' first runs the rest where it ran)",
				sw.ID, ran.Command(), s.st.Launcher.Command(), ran.Command()))
		}
	}
	sp := *sw.Spec
	sp.Runs = missing
	sp.References = sw.takenReferences(missing)
	// The rest runs with the launcher as it is now: a later resume's note
	// names it, not the first one's (a Slurm review's had advised the
	// time limit its first job ran out of).
	var now *Launcher
	if ran := sw.ranOn; s.ln == nil && (ran == nil || ran.Kind != launcherConnected) {
		now = ranOn(s.st.Launcher)
	}
	if err := s.journal.append(record{Kind: "resume", Sweep: sw.ID, Spec: &sp, Skip: sw.skippedList(), RanOn: now}); err != nil {
		return err
	}
	if now != nil {
		sw.ranOn = now
	}
	var aside []string
	sp.Carried, aside = sw.carriedFor(missing) // to the agent only: the journal's line has none (carriedName)
	have := "have"
	if len(missing) == 1 {
		have = "has"
	}
	out.Print(fmt.Sprintf("resuming sweep %d: %d of %d runs %s no result", sw.ID, len(missing), sw.Total(), have))
	if n := carriedNote(sw, missing, sp.Carried, aside); n != "" {
		out.Print(n)
	}
	sw.Status, sw.resumedAt = StatusRunning, len(sw.Results)
	return s.drive(ctx, sw, &sp, out)
}

// drive sends a spec to the agent and follows the sweep to its end,
// handling cancellation and the agent's death: it registers the sweep's
// cancel requests, finds an agent, runs the spec on it while reporting
// progress, and records how the sweep ended.
func (s *Session) drive(ctx context.Context, sw *Sweep, sp *sweep.Spec, out Output) error {
	if sp.Program != nil {
		return s.driveProgram(ctx, sw, sp, out)
	}
	// The cancel channel exists before the agent does, so a cancel also
	// stops a local agent's start or the wait for a cluster agent.
	requests := s.openCancels()
	defer s.closeCancels()
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	pr := newProgress(sw, out, s.live)
	stopClock := pr.clock()
	defer stopClock()
	c := &canceller{requests: requests, stop: stop, agent: make(chan *Agent, 1), ended: make(chan struct{}),
		grace: s.opts.Grace, note: pr.note}
	go c.run(ctx, runCtx)
	a, err := s.ensureAgent(runCtx, out, pr.note)
	if err != nil {
		close(c.ended)
		return s.endWithoutAgent(sw, runCtx, err)
	}
	c.agent <- a
	s.ranInJob(sw, a.job, out)
	pr.note("")
	if a.Local() && a.job == "" { // a Slurm job's nodes are not this machine's
		if w := othersWarning(a.Hello.PIDs, "as this sweep starts"); w != "" {
			out.Print(w)
		}
	}
	// The agent's job (if any) shows its changes of state in this sweep's
	// display, and nowhere once the sweep is over.
	a.notify(pr.note)
	defer a.notify(nil)
	gated := a.Local() && (s.live != "" || drawsLive(out))
	// A rank that stops making progress is no death: rank 0 still answers.
	// The watchdog stops the agent when a run does not end within the deadline.
	wd := newWatchdog(s.st.Deadline, sw.Results)
	cancelledFirst := wd.guard(runCtx, c.ended, pr, func() {
		stop()
		a.Interrupt(2 * time.Second)
	}, nil)
	done, err, jerr := s.runOn(runCtx, a, sw, sp, pr, gated, wd.seen, func() {
		pr.note("the journal could not be written: the sweep stops at the next run boundary")
		stop()
	})
	close(c.ended)
	wd.wait()
	stopClock()
	sw.Elapsed += time.Since(pr.start)
	if errors.Is(err, ErrAgentDied) || wd.fired > 0 {
		s.agent = nil
	}
	sw.Status, sw.Message = endStatus(done, err, runCtx.Err() != nil, a.runBy())
	return s.endSweep(sw, pr, wd.conclude(sw, cancelledFirst), jerr)
}

// endSweep journals and shows the end of a driven sweep whose status is
// set, hung naming the configuration that hung (if any), and returns what
// drive returns. jerr is the journal's first error during the sweep, which
// makes the sweep failed.
func (s *Session) endSweep(sw *Sweep, pr *progress, hung *int, jerr error) error {
	if jerr != nil {
		// Failed, not cancelled: the user cancelled nothing (a review read
		// "(cancelled)" after a full disk).
		sw.Status, sw.Message = StatusFailed, "stopped: the journal could not be written"
	}
	if e := s.journal.append(record{Kind: "end", Sweep: sw.ID, Status: sw.Status, Message: sw.Message, Hung: hung}); jerr == nil {
		jerr = e
	}
	if e := s.journal.Sync(); jerr == nil {
		jerr = e
	}
	var je *JournalError
	if errors.As(jerr, &je) {
		// What waits now: the events after the first failure, and the
		// end, wait too (the error had said 1 where 5 waited).
		je.Waiting = len(s.journal.backlog)
	}
	pr.final()
	s.dropCarried(sw)
	switch {
	case jerr != nil && sw.Status == StatusOK:
		return &Error{Msg: fmt.Sprintf("sweep %d made every run, but %v", sw.ID, jerr)}
	case jerr != nil:
		return &Error{Msg: fmt.Sprintf("sweep %d stopped after %d of %d runs: %v", sw.ID, len(sw.Results), pr.total, jerr)}
	}
	return endError(sw, pr.total)
}

// openCancels makes the channel Cancel sends the running sweep's cancel
// requests to.
func (s *Session) openCancels() <-chan bool {
	// Room for Stop's two requests.
	ch := make(chan bool, 2)
	s.mu.Lock()
	s.cancels = ch
	s.mu.Unlock()
	return ch
}

// closeCancels says no sweep is running any more.
func (s *Session) closeCancels() {
	s.mu.Lock()
	s.cancels = nil
	s.mu.Unlock()
}

// endWithoutAgent ends a sweep for which no agent could be had: failed, or
// cancelled when the user stopped the wait.
func (s *Session) endWithoutAgent(sw *Sweep, runCtx context.Context, err error) error {
	sw.Status, sw.Message = StatusFailed, err.Error()
	if runCtx.Err() != nil {
		// The user stopped the wait: Go's "context canceled" says nothing
		// more to them.
		why := strings.TrimSuffix(strings.TrimSuffix(err.Error(), context.Canceled.Error()), ": ")
		sw.Status, sw.Message = StatusCancelled, "cancelled before an agent was ready"
		if why != "" {
			sw.Message += " (" + why + ")"
		}
	}
	msg := fmt.Sprintf("sweep %d %s: %s", sw.ID, sw.Status, sw.Message)
	if jerr := s.journal.append(record{Kind: "end", Sweep: sw.ID, Status: sw.Status, Message: sw.Message}); jerr != nil {
		msg += fmt.Sprintf("\n%v", jerr)
	}
	return &Error{Msg: msg}
}

// runOn runs sp on the agent, journaling every event and applying it to sw
// with progress reports (which may draw figures), gated when asked (see
// LiveOutput); seen (the deadline's) sees every event first and is told
// when the session has handled it, and a run's start goes to it and the
// display only. It returns the agent's answer, the run's error, and the
// first error writing the journal, which calls halt (the sweep stops at
// the next run boundary). The journal is synced at configurations' ends
// (journalEvent).
func (s *Session) runOn(ctx context.Context, a *Agent, sw *Sweep, sp *sweep.Spec, pr *progress, gated bool, seen func(Event) func(), halt func()) (done protocol.Done, runErr, journalErr error) {
	run := a.Run
	if gated {
		run = a.RunGated
	}
	done, runErr = run(ctx, sp, func(e Event) {
		// The deadline's clock stops while the session handles the
		// event (journal, display): see watchdog.seen.
		defer seen(e)()
		if e.Type == sweep.TypeRunStart {
			// A run's start matters only to the deadline and the
			// display's clock: the journal, which would grow by a line
			// per run, leaves it out.
			pr.started(e)
			return
		}
		err := s.journalEvent(sw, e)
		if err != nil && journalErr == nil {
			journalErr = err
			halt()
		}
		pr.event(e)
	})
	return done, runErr, journalErr
}

// journalEvent journals one of a sweep's events, and syncs the journal
// when SyncEvery has passed since the last sync.
func (s *Session) journalEvent(sw *Sweep, e Event) error {
	raw := e.Raw
	if e.Type == sweep.TypeStart && len(sw.Configs) > 0 {
		// The sweep's record holds the configurations: written twice,
		// a random search of 20 runs over 100,000 configurations added
		// 30 MB to the journal, and a reopen read them both. A resumed
		// sweep's carried statistics stay out of it too (carriedName).
		var st sweep.Start
		if json.Unmarshal(raw, &st) == nil && (len(st.Configs) > 0 || st.Spec != nil && len(st.Spec.Carried) > 0) {
			st.Configs = nil
			if st.Spec != nil {
				sp := *st.Spec
				sp.Carried = nil
				st.Spec = &sp
			}
			if b, err := json.Marshal(st); err == nil {
				raw = b
			}
		}
	}
	if e.Type == sweep.TypeCarried {
		s.keepCarried(sw, e) // beside the journal: see carriedName
		return nil
	}
	if err := s.journal.append(record{Kind: "event", Sweep: sw.ID, Event: raw}); err != nil {
		return err
	}
	if time.Since(s.journal.synced) >= s.opts.SyncEvery {
		return s.journal.Sync()
	}
	return nil
}

// binary says that the session has no approxtune executable to run agents
// with (Options.Binary), nil when it has one.
func (s *Session) binary() error {
	if s.opts.Binary == "" {
		return errors.New("no approxtune executable to run the agent: approxtune is not on PATH, and Options.Binary is not set")
	}
	return nil
}

// endStatus is how a run of a sweep ended, from the agent's answer done or
// the error of the run; cancelled tells that the user stopped it, by what
// ran the agent's ranks (Agent.runBy: "mpirun", "Slurm job 12").
func endStatus(done protocol.Done, err error, cancelled bool, by string) (Status, string) {
	switch {
	case errors.Is(err, errSessionClosed) && cancelled:
		// The user stopped it: how the agent then ended is no news (it
		// had read "the agent died: the session closed the connection;
		// mpirun: exit status 1").
		return StatusCancelled, "interrupted: " + by + " was stopped"
	case errors.Is(err, ErrAgentDied) && cancelled:
		return StatusCancelled, "interrupted: " + by + " was stopped (" + err.Error() + ")"
	case errors.Is(err, ErrAgentDied):
		return StatusDied, err.Error()
	case err != nil:
		return StatusFailed, err.Error()
	default:
		return Status(done.Status), done.Message
	}
}

// searchCommand is the command that runs a search spec's sweep again.
func searchCommand(sp *sweep.Spec) string {
	cmd := fmt.Sprintf("%s search=%s", sp.Mode, sp.Search)
	if sp.Budget > 0 {
		cmd += fmt.Sprintf(" budget=%d", sp.Budget)
	}
	return cmd
}

// endError is what drive returns for a sweep that ended with its status:
// nil when every run was made, otherwise what happened and what to do.
func endError(sw *Sweep, total int) error {
	// What to do next: a search's rounds depend on each other, so 'resume'
	// refuses it (cmdResume) and it is run again instead.
	cancelled, died, hung := "'resume' runs the rest", "'resume' starts a new agent and runs the rest",
		"'resume' retries the rest with a new agent, 'resume hung=skip' goes on without that configuration"
	if sw.Spec != nil && sw.Spec.Program != nil { // each run is a launch of its own: no agent
		hung = "'resume' retries the rest, 'resume hung=skip' goes on without that configuration"
	}
	if sw.Spec != nil && sw.Spec.Search != sweep.SearchNone {
		again := fmt.Sprintf("a search cannot be resumed run by run: '%s' runs it again", searchCommand(sw.Spec))
		cancelled, died, hung = again, again, again+" ('deadline' sets how long a run may take)"
	}
	switch sw.Status {
	case StatusOK:
		return nil
	case StatusCancelled:
		return &Error{Msg: fmt.Sprintf("sweep %d cancelled after %d of %d runs (%s); %s", sw.ID, len(sw.Results), total, sw.Message, cancelled), Err: context.Canceled}
	case StatusDied:
		return &Error{Msg: fmt.Sprintf("sweep %d stopped after %d of %d runs: %s\nthe finished runs are in the journal; %s", sw.ID, len(sw.Results), total, sw.Message, died), Err: ErrAgentDied}
	case StatusHung:
		return &Error{Msg: fmt.Sprintf("sweep %d hung after %d of %d runs: %s\nthe finished runs are in the journal; %s", sw.ID, len(sw.Results), total, sw.Message, hung)}
	default:
		return &Error{Msg: fmt.Sprintf("sweep %d failed: %s", sw.ID, sw.Message)}
	}
}

// progress reports a driven sweep's progress to its output. Its mutex
// orders the agent's events and the canceller's notes: both read the sweep
// and call Output.Update.
type progress struct {
	mu    sync.Mutex
	sw    *Sweep
	out   Output
	total int
	start time.Time
	// file is where the sweep's figures are drawn as results arrive
	// ('plot live'; "": nowhere), last drawn at drawn; failed tells that
	// writing it failed once (and was said).
	file   string
	drawn  time.Time
	failed bool
	shown  time.Time // the last report to out
	over   bool      // the final report was made
	// running is the run under way (Progress.Running); label names its
	// configuration (Sweep.Labeler, made at the first run's start).
	running string
	label   func(sweep.Config) string
}

// newProgress starts the progress of sw, drawing its figures to file
// unless it is "". Done counts the runs made: those reported and, in
// evaluate mode, those whose results wait for their configuration's last
// reference run.
func newProgress(sw *Sweep, out Output, file string) *progress {
	sw.pending, sw.refRuns = 0, 0
	return &progress{sw: sw, out: out, total: sw.Total(), start: time.Now(), file: file}
}

// update reports the sweep's state, and draws the live figure (drawFile)
// unless this is a note; the caller holds mu.
func (p *progress) update(final bool, note string) {
	if final {
		p.sw.pending = 0 // runs never reported are missing, for resume
		p.over = true
	}
	p.report(final, note)
	if note == "" {
		p.drawFile(final)
	}
}

// report sends the sweep's state to the output; the caller holds mu.
func (p *progress) report(final bool, note string) {
	if p.sw.Spec != nil && p.sw.Spec.Search != sweep.SearchNone {
		p.total = p.sw.Total() // grows as rounds end
	}
	p.shown = time.Now()
	p.out.Update(Progress{Sweep: p.sw, Done: len(p.sw.Results) + p.sw.pending, Total: p.total, Elapsed: time.Since(p.start), Final: final, Note: note,
		Running: p.running})
}

// started notes a run's start (sweep.RunStart): an evaluate search's
// references are counted as they start, since their results come only
// after the last of their passes, and the state is reported at most
// every second, so that the elapsed time moves on between results.
func (p *progress) started(e Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var rs sweep.RunStart
	if e.Decode(&rs) == nil && rs.Kind == sweep.RunReference && rs.Round == 0 && p.sw.Spec != nil && p.sw.Spec.Search != sweep.SearchNone {
		p.sw.refRuns++
	}
	p.running = p.describeRun(rs)
	if time.Since(p.shown) >= time.Second {
		p.report(false, "")
	}
}

// describeRun says what the run rs announced is, for Progress.Running:
// its configuration and kind ("grid=2x2 b=64: eager at 2^-3", "...: full
// run 2 of 3"); "" for a configuration the sweep does not have.
func (p *progress) describeRun(rs sweep.RunStart) string {
	if rs.Index < 0 || rs.Index >= len(p.sw.Configs) {
		return ""
	}
	if p.label == nil {
		p.label = p.sw.Labeler()
	}
	what := ""
	switch rs.Kind {
	case sweep.RunSetup:
		what = "setting up"
	case sweep.RunWarmUp:
		what = "warm-up run"
	case sweep.RunReference:
		what = "full run"
		if sp := p.sw.Spec; sp != nil && sp.ReferenceReps > 1 && rs.Round == 0 && len(rs.ReferenceS) < sp.ReferenceReps {
			what = fmt.Sprintf("full run %d of %d", len(rs.ReferenceS)+1, sp.ReferenceReps)
		}
	case sweep.RunSelective:
		what = rs.Policy
		if rs.Tolerance != nil {
			what += " at " + format.Tolerance(*rs.Tolerance)
		}
	default:
		return ""
	}
	return p.label(p.sw.Configs[rs.Index]) + ": " + what
}

// drawFile rewrites the 'plot live' file with the sweep's figures side by
// side (LiveFigures' row, in the file's format only), at most every LiveInterval, and always at the
// end. It runs where results are applied: a gated agent waits meanwhile.
func (p *progress) drawFile(final bool) {
	if p.file == "" || len(p.sw.Results) == 0 {
		return
	}
	now := time.Now()
	if !final && !p.drawn.IsZero() && now.Sub(p.drawn) < LiveInterval {
		return
	}
	p.drawn = now
	img, err := liveRow(p.sw, imageFormat(p.file))
	if err == nil {
		_, err = writeImage(img, p.file)
	}
	if err != nil && !p.failed {
		p.failed = true
		p.out.Print("plot live: " + err.Error())
	}
}

// clock reports the sweep's state every second that brings no report,
// to an output that asks for it (ClockedOutput), until the returned stop
// is called.
func (p *progress) clock() (stop func()) {
	c, ok := p.out.(ClockedOutput)
	if !ok || !c.Clocked() {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Second / 4)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.mu.Lock()
				if !p.over && time.Since(p.shown) >= time.Second {
					p.report(false, "")
				}
				p.mu.Unlock()
			case <-done:
				return
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}

// note reports what is happening besides results ("" for a plain update).
func (p *progress) note(n string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.update(false, n)
}

// event applies one of the agent's events to the sweep, and reports a
// result or a run's progress.
func (p *progress) event(e Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sw.apply(e)
	switch e.Type {
	case sweep.TypeResult, sweep.TypeProgress:
		p.update(false, "")
	case sweep.TypeRound:
		p.out.Print(roundLine(p.sw, p.sw.Rounds[len(p.sw.Rounds)-1]))
	}
}

// final reports the sweep's end.
func (p *progress) final() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.update(true, "")
}

// canceller escalates a driven sweep's cancel requests: the first request
// (or the end of the caller's context) cancels the run's context, which
// ends the wait for an agent or asks the agent to stop at the next run
// boundary; a second request, or the grace period, interrupts mpirun.
type canceller struct {
	requests <-chan bool        // Session.Cancel's (false) and Stop's (true)
	stop     context.CancelFunc // cancels the run's context
	agent    chan *Agent        // the agent, once there is one
	ended    chan struct{}      // closed when the run is over
	grace    time.Duration
	note     func(string)
}

// run escalates until the run ends; ctx is the caller's context, runCtx
// the run's.
func (c *canceller) run(ctx, runCtx context.Context) {
	now := false
	select {
	case now = <-c.requests:
	case <-ctx.Done():
	case <-runCtx.Done():
		return
	case <-c.ended:
		return
	}
	c.stop()
	var a *Agent
	select {
	case a = <-c.agent:
	case <-c.ended:
		return // no agent yet: the cancelled context ended the wait
	}
	if now {
		c.note("stopping: interrupting " + a.runBy())
		a.Interrupt(2 * time.Second)
		return
	}
	c.note(fmt.Sprintf("cancelling: the sweep stops at the next run boundary (interrupt again to stop %s now)", a.runBy()))
	select {
	case <-c.requests:
	case <-time.After(c.grace):
	case <-a.Gone():
		return
	case <-c.ended:
		return
	}
	c.note("interrupting " + a.runBy())
	a.Interrupt(2 * time.Second)
}

func describeAgent(a *Agent) string {
	h := a.Hello
	hosts := map[string]int{}
	var order []string
	for _, x := range h.Hosts {
		if hosts[x] == 0 {
			order = append(order, x)
		}
		hosts[x]++
	}
	hs := ""
	for i, x := range order {
		if i > 0 {
			hs += ", "
		}
		hs += fmt.Sprintf("%s (%d)", x, hosts[x])
	}
	return fmt.Sprintf("%d ranks on %s; %s; %s", h.Ranks, hs, h.MPI, h.BLAS)
}

// Line is the one-line state of a sweep: runs done, elapsed time, an
// estimate of the time left, and the status at the end.
func (p Progress) Line() string {
	sw := p.Sweep
	var mode sweep.Mode
	if sw.Spec != nil {
		mode = sw.Spec.Mode
	}
	if sw.Spec != nil && sw.Spec.Search != sweep.SearchNone {
		s := fmt.Sprintf("sweep %d %s search=%s %s: %s, %d runs, %s elapsed", sw.ID, mode, sw.Spec.Search, sw.Workload,
			sw.roundNow(), p.Done, FormatDuration(p.Elapsed))
		if p.Final {
			s += " (" + string(sw.Status) + ")"
		}
		return s
	}
	s := fmt.Sprintf("sweep %d %s %s: %d/%d runs, %s elapsed", sw.ID, mode, sw.Workload, p.Done, p.Total, FormatDuration(p.Elapsed))
	if left, ok := p.left(); ok {
		s += ", about " + FormatDuration(left) + " left"
	}
	if p.Running != "" && !p.Final {
		s += "; now " + p.Running
	}
	if p.Final {
		s += " (" + string(sw.Status) + ")"
	}
	return s
}

// left is the time the sweep's remaining runs should take at the pace of
// those done; ok is false where there is no pace or nothing left.
func (p Progress) left() (time.Duration, bool) {
	if p.Done <= 0 || p.Done >= p.Total || p.Final {
		return 0, false
	}
	return time.Duration(float64(p.Elapsed) / float64(p.Done) * float64(p.Total-p.Done)), true
}

// LineWithin is Line in at most n characters where it can be (n <= 0: no
// limit): what matters least goes first (the run under way, the workload
// and mode, the word elapsed), so that a narrow terminal keeps the counts
// and the time left whole; cut at n, it had read "..., about 3" at 60
// columns.
func (p Progress) LineWithin(n int) string {
	full := p.Line()
	if n <= 0 || utf8.RuneCountInString(full) <= n {
		return full
	}
	q := p
	q.Running = ""
	if s := q.Line(); utf8.RuneCountInString(s) <= n {
		return s
	}
	sw := p.Sweep
	s := fmt.Sprintf("sweep %d: %d/%d runs, %s", sw.ID, p.Done, p.Total, FormatDuration(p.Elapsed))
	if sw.Spec != nil && sw.Spec.Search != sweep.SearchNone {
		s = fmt.Sprintf("sweep %d: %s, %d runs, %s", sw.ID, sw.roundNow(), p.Done, FormatDuration(p.Elapsed))
	} else if left, ok := p.left(); ok {
		s += ", " + FormatDuration(left) + " left"
	}
	if p.Final {
		s += " (" + string(sw.Status) + ")"
	}
	return s
}

// FormatDuration writes a duration to the second: "42s", "3m05s", or from
// 10 hours to the minute: "11h00m".
func FormatDuration(d time.Duration) string {
	d = d.Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	if d < 10*time.Hour {
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
