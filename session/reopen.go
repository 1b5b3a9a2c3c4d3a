package session

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/approxtune/approxtune/sweep"
)

// settleRunning gives a sweep its session's journal leaves running, when
// no approxtune has the session open any more, the status it ended with:
// ok when every run came back (only the end was not recorded), else died.
// It reports whether the sweep was running.
func settleRunning(sw *Sweep) bool {
	switch {
	case sw.Status != StatusRunning:
		return false
	case sw.Spec != nil && sw.Spec.Search == sweep.SearchNone && len(sw.Missing()) == 0:
		sw.Status, sw.Message = StatusOK, "every run came back; the session ended before it recorded the sweep's end"
	default:
		sw.Status, sw.Message = StatusDied, "the session ended during the sweep (it was stopped, killed or crashed)"
	}
	return true
}

// briefWhy is the first line of a sweep's message, without what introduced
// the lines after it (mpirun's messages, a Slurm job's output): said in
// parentheses, mpirun's banner had filled them.
func briefWhy(msg string) string {
	why, _, _ := strings.Cut(msg, "\n")
	why = strings.TrimSpace(why)
	for _, cut := range []string{"; its last messages:", "; the end of its output ("} {
		if i := strings.LastIndex(why, cut); i >= 0 && strings.HasSuffix(why, ":") {
			why = why[:i]
		}
	}
	return why
}

// reopen restores what the journal in the session directory holds, when it
// has one: a session started again on the directory of one that ended, or
// was killed, goes on where that one stopped. Its sweeps are this session's
// (the last one is what 'resume', 'table' and the analyses use), and its
// state is the one the last sweep ran with (workload, space, policies,
// tolerances, ranks, deadline). A sweep the journal leaves running (the
// session died during it) is marked died, and 'resume' runs its missing
// runs; ok if it misses none.
func (s *Session) reopen() error {
	path := filepath.Join(s.opts.Dir, JournalName)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := s.journal.Lock(); err != nil {
		return err
	}
	sws, err := ReadJournal(path)
	if err != nil {
		return fmt.Errorf("session directory %s: %w", s.opts.Dir, err)
	}
	if len(sws) == 0 {
		// Settings typed in a directory of the user's choosing, and no
		// sweep yet (keepState): they come back.
		st, err := lastState(path)
		if err != nil {
			return fmt.Errorf("session directory %s: %w", s.opts.Dir, err)
		}
		if st != nil {
			s.st = restoreState(*st, s.schemas())
			s.reopened = fmt.Sprintf("reopened session %s: no sweep yet; its settings are back ('status' shows them)", s.opts.Dir)
		}
		return nil
	}
	for _, sw := range sws {
		if settleRunning(sw) {
			// Journaled, so that another session's 'load' or 'resume'
			// of this one reads it as it is, not as running here (best
			// effort: a journal that cannot be written says so at the
			// next sweep).
			_ = s.journal.append(record{Kind: "end", Sweep: sw.ID, Status: sw.Status, Message: sw.Message})
		}
	}
	st, err := lastState(path)
	if err != nil {
		return fmt.Errorf("session directory %s: %w", s.opts.Dir, err)
	}
	if st != nil {
		s.st = restoreState(*st, s.schemas())
	}
	s.sweeps = sws
	s.reopened = describeReopen(s.opts.Dir, sws)
	return nil
}

// Reopened says what the session found in its directory when it opened:
// the sweeps a session before it left and what 'resume' would run, or ""
// for a new session.
func (s *Session) Reopened() string { return s.reopened }

// describeReopen words what reopen restored.
func describeReopen(dir string, sws []*Sweep) string {
	last := sws[len(sws)-1]
	head := fmt.Sprintf("reopened session %s: %s", dir, loadCount(len(sws), "sweep"))
	mode := "sweep"
	if last.Spec != nil {
		mode = string(last.Spec.Mode)
	}
	what := fmt.Sprintf("sweep %d (%s %s)", last.ID, mode, last.Workload)
	missing := len(last.Missing())
	switch {
	case last.Spec != nil && last.Spec.Search != sweep.SearchNone && last.Status != StatusOK:
		return fmt.Sprintf("%s; the last, %s, is a search that stopped after %s (%s): a search cannot be resumed run by run, '%s' runs it again", head, what, loadRuns(len(last.Results)), last.Status, searchCommand(last.Spec))
	case missing > 0:
		why := briefWhy(last.Message)
		resume := fmt.Sprintf("'resume' runs the %d missing", missing)
		if last.Status == StatusHung && last.Hung != nil {
			resume += fmt.Sprintf(", 'resume hung=skip' all but configuration %d, which hung", *last.Hung)
		}
		return fmt.Sprintf("%s; the last, %s, stopped after %d of %d runs (%s: %s): %s", head, what, len(last.Results), last.Total(), last.Status, why, resume)
	default:
		return fmt.Sprintf("%s; the last, %s, is complete (%s): 'table best' shows it", head, what, loadRuns(len(last.Results)))
	}
}

// lastState is the state the journal's last sweep ran with (nil when no
// sweep record holds one).
func lastState(path string) (*State, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read journal: %w", err)
	}
	defer f.Close()
	var st *State
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var r struct {
			Kind  string `json:"kind"`
			State *State `json:"state"`
		}
		if json.Unmarshal(sc.Bytes(), &r) == nil && (r.Kind == "sweep" || r.Kind == "state") && r.State != nil {
			st = r.State
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read journal %s: %w", path, err)
	}
	return st, nil
}

// restoreState makes a state read back from JSON the one the commands had
// set: the space's values as the workload's parameters hold them (JSON gave
// numbers and strings), and defaults where the journal had nothing.
func restoreState(st State, ss schemaSet) State {
	def := DefaultState()
	if st.Space == nil {
		st.Space = map[string][]any{}
	}
	if st.Ranks < 1 {
		st.Ranks = def.Ranks
	}
	if st.Confidence == 0 {
		st.Confidence = def.Confidence
	}
	w, known := ss.find(st.Workload)
	for k, vs := range st.Space {
		p, ok := param(w, k)
		for i, v := range vs {
			if ok && known {
				if c, err := p.Convert(v); err == nil {
					vs[i] = c
				}
			} else if f, isNum := v.(float64); isNum && f == math.Trunc(f) {
				vs[i] = int(f)
			}
		}
	}
	return st
}
