package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/sweep"
)

// recentShown is how many session ids an error lists.
const recentShown = 5

// cmdLoad is the 'load' verb: another session's sweeps become this
// session's latest, for reading (tables, figures, exports, analyses); it
// runs nothing.
func cmdLoad(s *Session, ctx context.Context, c *Command, out Output) error {
	var arg *Arg
	only, onlyCol := 0, 0 // sweep=N: that sweep alone, and where it was given
	for i := range c.Args {
		a := c.Args[i]
		switch a.Key {
		case "":
			if arg != nil {
				return errAt(a.Col, "load takes one session: load SESSION [sweep=N] (e.g. load %s)", exampleID())
			}
			arg = &c.Args[i]
		case "sweep":
			n, err := strconv.Atoi(a.Value)
			if err != nil || n < 1 {
				return errAt(a.ValueCol, "%q is not a sweep number: want an integer from 1, as the session numbered its sweeps", a.Value)
			}
			only, onlyCol = n, a.ValueCol
		default:
			return errAt(a.Col, "load has no option %q: want sweep=N", a.Key)
		}
	}
	if arg == nil {
		return errAt(c.VerbCol, "load takes a session: its directory, or its id under %s%s", DefaultSessionsDir(), recentList(s.Dir()))
	}
	dir, err := findSession(s, *arg)
	if err != nil {
		return err
	}
	sws, err := ReadJournal(filepath.Join(dir, JournalName))
	if err != nil {
		return errAt(arg.Col, "load: %v", err)
	}
	if len(sws) == 0 {
		return errAt(arg.Col, "the journal in %s holds no sweep: its session never started one", dir)
	}
	lastOld := sws[len(sws)-1].ID
	if only > 0 {
		var pick []*Sweep
		for _, sw := range sws {
			if sw.ID == only {
				pick = append(pick, sw)
			}
		}
		if pick == nil {
			return errAt(onlyCol, "session %s has no sweep %d: its sweeps are %s", filepath.Base(dir), only, sweepIDs(sws))
		}
		sws = pick
	}
	abs, err := filepath.Abs(dir) // the origin 'model sweeps=all' tells copies by
	if err != nil {
		abs = dir
	}
	held, pid := lockHolder(dir)
	var loaded []*Sweep
	var again []string
	for _, old := range sws {
		if !held {
			// No approxtune has the session open: a sweep its journal
			// leaves running ended as reopening it would say (load had
			// said running).
			settleRunning(old)
		}
		origin := fmt.Sprintf("loaded from %s, sweep %d", abs, old.ID)
		if k := s.loadedAs(origin); k > 0 {
			again = append(again, fmt.Sprintf("its sweep %d (loaded before as sweep %d)", old.ID, k))
		}
		sw, err := s.adopt(old, origin)
		if err != nil {
			return fmt.Errorf("load %s: %w", dir, err)
		}
		loaded = append(loaded, sw)
	}
	text := describeLoad(dir, sws, loaded, lastOld, pid)
	if len(again) > 0 {
		// Loading again makes a sweep the last one, which tables and
		// figures read; analyses over every sweep count a copy once.
		text += fmt.Sprintf("loaded again: %s; 'model sweeps=all' counts each once\n", strings.Join(again, ", "))
	}
	out.Print(text)
	return nil
}

// loadedAs is the number of this session's first sweep loaded from origin,
// or 0.
func (s *Session) loadedAs(origin string) int {
	for _, sw := range s.sweeps {
		if sw.origin == origin {
			return sw.ID
		}
	}
	return 0
}

// findSession is the directory of the session a 'load' argument names: a
// directory holding a journal, or an id under DefaultSessionsDir(). This
// session itself is refused.
func findSession(s *Session, a Arg) (string, error) {
	cands := []string{a.Value}
	if !strings.ContainsRune(a.Value, filepath.Separator) {
		cands = append(cands, filepath.Join(DefaultSessionsDir(), a.Value))
	}
	for _, d := range cands {
		if sameDir(d, s.Dir()) {
			return "", errAt(a.Col, "%s is this session: load reads another session's sweeps (this one's are here already; 'table best' shows the last)", a.Value)
		}
	}
	for _, d := range cands {
		if st, err := os.Stat(filepath.Join(d, JournalName)); err == nil && st.Mode().IsRegular() {
			return d, nil
		}
	}
	if len(cands) == 1 {
		if _, err := os.Stat(a.Value); errors.Is(err, fs.ErrNotExist) {
			return "", errAt(a.Col, "no session in %s: there is no such directory%s", a.Value, recentList(s.Dir()))
		}
		return "", errAt(a.Col, "no session in %s: it holds no journal (%s)%s", a.Value, JournalName, recentList(s.Dir()))
	}
	return "", errAt(a.Col, "no session %q under %s, nor a session directory of that name here%s", a.Value, DefaultSessionsDir(), recentList(s.Dir()))
}

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	if err1 == nil && err2 == nil && aa == bb {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// recentSessions lists the ids of the sessions under DefaultSessionsDir()
// that have a journal, the most recently written first, leaving out the
// session in dir skip ("" leaves none out).
func recentSessions(skip string) []string {
	base := DefaultSessionsDir()
	ents, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	type found struct {
		id  string
		mod int64
	}
	var fs []found
	for _, e := range ents {
		d := filepath.Join(base, e.Name())
		st, err := os.Stat(filepath.Join(d, JournalName))
		if err != nil || !st.Mode().IsRegular() || (skip != "" && sameDir(d, skip)) {
			continue
		}
		fs = append(fs, found{e.Name(), st.ModTime().UnixNano()})
	}
	sort.Slice(fs, func(i, j int) bool {
		if fs[i].mod != fs[j].mod {
			return fs[i].mod > fs[j].mod
		}
		return fs[i].id > fs[j].id
	})
	ids := make([]string, len(fs))
	for i, f := range fs {
		ids[i] = f.id
	}
	return ids
}

// recentList is the tail of an error naming the most recent sessions.
func recentList(skip string) string {
	ids := recentSessions(skip)
	if len(ids) == 0 {
		return fmt.Sprintf("; there is no other session under %s yet", DefaultSessionsDir())
	}
	more := ""
	if len(ids) > recentShown {
		more = fmt.Sprintf(" (and %d older)", len(ids)-recentShown)
		ids = ids[:recentShown]
	}
	return fmt.Sprintf("; the most recent sessions are %s%s", strings.Join(ids, ", "), more)
}

// exampleID is a session id for messages: the most recent one, or a made-up one.
func exampleID() string {
	if ids := recentSessions(""); len(ids) > 0 {
		return ids[0]
	}
	return "20261125-101500-a1b2c3"
}

func sweepIDs(sws []*Sweep) string {
	var ns []string
	for _, sw := range sws {
		ns = append(ns, strconv.Itoa(sw.ID))
	}
	return strings.Join(ns, ", ")
}

// adopt appends a copy of another session's sweep to this session's
// sweeps, under the next id, and writes it to this session's journal (the
// sweep with origin as its message, its results, kernel statistics and
// timelines, and its end when it had one), so ReadJournal of this session
// rebuilds it.
func (s *Session) adopt(old *Sweep, origin string) (*Sweep, error) {
	sw := &Sweep{ID: len(s.sweeps) + 1, Spec: old.Spec, Configs: old.Configs, Workload: old.Workload,
		Results: old.Results, Kernels: old.Kernels, Traces: old.Traces, Rounds: old.Rounds, Search: old.Search,
		Status: old.Status, Message: old.Message, Started: old.Started, Elapsed: old.Elapsed, Ranks: old.Ranks, BLAS: old.BLAS,
		CopyCost: old.CopyCost, Hung: old.Hung, Skipped: maps.Clone(old.Skipped), runs: old.runs, origin: origin,
		leftOut: old.leftOut, failedRefs: maps.Clone(old.failedRefs), leftSearch: slices.Clone(old.leftSearch), ranOn: old.ranOn.clone(),
		jobs: slices.Clone(old.jobs)}
	if err := s.journal.append(record{Kind: "sweep", Sweep: sw.ID, Spec: sw.Spec, Configs: sw.Configs, Message: origin, RanOn: sw.ranOn}); err != nil {
		return nil, err
	}
	event := func(v any) error { return s.journal.append(record{Kind: "event", Sweep: sw.ID, Event: raw(v)}) }
	var errs []error
	for _, id := range sw.jobs {
		errs = append(errs, s.journal.append(record{Kind: "job", Sweep: sw.ID, Message: id}))
	}
	// The results of configurations left out go in too, ahead of the
	// resume record that leaves them out again on reading.
	for _, r := range slices.Concat(sw.Results, old.leftOut) {
		r.Type = sweep.TypeResult
		errs = append(errs, event(r))
	}
	for _, k := range sw.Kernels {
		k.Type = sweep.TypeKernels
		errs = append(errs, event(k))
	}
	for _, t := range sw.Traces {
		t.Type = sweep.TypeTrace
		errs = append(errs, event(t))
	}
	for _, r := range sw.Rounds {
		r.Type = sweep.TypeRound
		errs = append(errs, event(r))
	}
	// The full runs of configurations whose selective runs all failed
	// come back from error events (apply): without them, the copy's best
	// table lost its note of a faster one, and its resume took them again.
	for _, i := range slices.Sorted(maps.Keys(old.failedRefs)) {
		idx := i
		errs = append(errs, event(sweep.ErrorEvent{Type: sweep.TypeError, V: sweep.ProtocolVersion, Index: &idx, ReferenceS: old.failedRefs[i],
			Message: fmt.Sprintf("configuration %d: every selective run failed (copied from the loaded sweep)", i)}))
	}
	for _, i := range old.leftSearch {
		if _, told := old.failedRefs[i]; told {
			continue
		}
		idx := i
		errs = append(errs, event(sweep.ErrorEvent{Type: sweep.TypeError, V: sweep.ProtocolVersion, Index: &idx,
			Message: fmt.Sprintf("configuration %d: a launch failed, and it left the search (copied from the loaded sweep)", i)}))
	}
	if sw.Search != nil {
		se := *sw.Search
		se.Type = sweep.TypeSearch
		errs = append(errs, event(se))
	}
	if len(sw.Skipped) > 0 { // what 'resume skip=N' left out, for good
		errs = append(errs, s.journal.append(record{Kind: "resume", Sweep: sw.ID, Spec: sw.Spec, Skip: sw.skippedList()}))
	}
	if sw.Status != StatusRunning {
		errs = append(errs, s.journal.append(record{Kind: "end", Sweep: sw.ID, Status: sw.Status, Message: sw.Message, Hung: sw.Hung}))
	}
	sw.carriedBad = old.carriedBad
	if sw.carried = old.carried; len(sw.carried) > 0 {
		// Not needed to rebuild the sweep: a failure costs a resume of a
		// later session its head start only.
		_ = writeCarried(filepath.Join(s.opts.Dir, carriedName(sw.ID)), sw.carried)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s.sweeps = append(s.sweeps, sw)
	return sw, nil
}

// describeLoad says what 'load' loaded from dir: each sweep (old, as the
// session numbered it, and loaded, as this one does), its data, and the
// analyses that data allows; lastOld is the number of that session's last
// sweep, the one 'resume SESSION' would finish, and pid the approxtune that
// has the session open, when one does (a sweep still running is running
// there).
func describeLoad(dir string, old, loaded []*Sweep, lastOld int, pid string) string {
	var b strings.Builder
	id := filepath.Base(dir)
	fmt.Fprintf(&b, "loaded %s of session %s (%s):\n", loadCount(len(loaded), "sweep"), id, dir)
	for i, sw := range loaded {
		mode := sweep.Mode("?")
		if sw.Spec != nil {
			mode = sw.Spec.Mode
		}
		fmt.Fprintf(&b, "  sweep %d (its sweep %d): %s %s, %s, %d of %d runs (%s); kernel statistics: %s; timelines: %s\n",
			sw.ID, old[i].ID, mode, sw.Workload, loadCount(len(sw.Configs), "configuration"), len(sw.Results), sw.Total(), sw.Status,
			loadRuns(kernelRuns(sw)), loadRuns(len(sw.Traces)))
		if j := sw.jobsLine(); j != "" {
			b.WriteString("    " + j)
		}
		if sw.Spec != nil {
			if missing := len(sw.Missing()); missing > 0 {
				how := "it ended " + string(sw.Status)
				running := sw.Status == StatusRunning
				switch {
				case running:
					how = fmt.Sprintf("its session is open in another approxtune%s, which may be running it now", pidNote(pid))
				case sw.Status == StatusDied:
					how = briefWhy(sw.Message)
				}
				finish := fmt.Sprintf("'resume %s' finishes it", id)
				if old[i].ID != lastOld {
					finish = fmt.Sprintf("'load %s sweep=%d' then 'resume' finishes it", id, old[i].ID)
				}
				if running {
					finish = "'load' it again once it ends there"
				}
				fmt.Fprintf(&b, "    incomplete: %s no result (%s); it is loaded as it is, and %s\n", format.Count(missing, "run has", "runs have"), how, finish)
			}
		}
		yes, no := analyses(sw)
		if len(yes) > 0 {
			fmt.Fprintf(&b, "    analyses: %s\n", strings.Join(yes, ", "))
		}
		for _, n := range no {
			fmt.Fprintf(&b, "    %s\n", n)
		}
	}
	last := loaded[len(loaded)-1]
	fmt.Fprintf(&b, "table, plot, save, export csv, rank, model and anomalies read sweep %d, the last", last.ID)
	if len(loaded) > 1 {
		fmt.Fprintf(&b, " ('load %s sweep=N' loads only its sweep N)", id)
	}
	b.WriteString("\n")
	return b.String()
}

// pidNote is " (pid N)", or "" for an unknown pid.
func pidNote(pid string) string {
	if pid == "" {
		return ""
	}
	return " (pid " + pid + ")"
}

// analyses lists the analyses a sweep's data allows, and for the others
// what data they miss.
func analyses(sw *Sweep) (yes, no []string) {
	mode := sweep.Mode("")
	if sw.Spec != nil {
		mode = sw.Spec.Mode
	}
	reps := 0
	configs := map[int]bool{}
	for _, r := range sw.Results {
		reps = max(reps, len(r.ReferenceS))
		configs[r.Index] = true
	}
	switch {
	case len(configs) < 2:
		no = append(no, fmt.Sprintf("rank: needs results of 2 configurations or more (this sweep has %d)", len(configs)))
	case mode == sweep.ModeTune || reps >= 2:
		yes = append(yes, "rank")
	default:
		no = append(no, fmt.Sprintf("rank: needs 2 full runs per configuration or more (this sweep has %d): evaluate with reps 2 or more, or tune", reps))
	}
	if len(sw.Kernels) > 0 {
		yes = append(yes, "model")
	} else {
		why := ""
		if mode == sweep.ModeReference {
			why = " (a reference sweep has none)"
		}
		no = append(no, "model: no kernel statistics"+why)
	}
	switch {
	case len(sw.Traces) > 0:
		yes = append(yes, "anomalies")
	case sw.Spec != nil && sw.Spec.Program != nil:
		// 'trace on' cannot help: a program's runs record none yet.
		no = append(no, "anomalies: no timelines: a program's selective runs record none yet")
	default:
		no = append(no, "anomalies: no timelines: run with trace on first")
	}
	return yes, no
}

// loadCount is "1 sweep", "2 sweeps".
func loadCount(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// loadRuns is "none", or how many runs a sweep's data covers.
func loadRuns(n int) string {
	if n == 0 {
		return "none"
	}
	return loadCount(n, "run")
}

// kernelRuns is the number of runs with kernel statistics (one event per
// process each).
func kernelRuns(sw *Sweep) int {
	runs := map[runKey]bool{}
	for _, k := range sw.Kernels {
		runs[runKey{k.Index, k.Policy, k.Tolerance}] = true
	}
	return len(runs)
}
