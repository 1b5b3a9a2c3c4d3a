package session

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/approxtune/approxtune/sweep"
)

// previousNote points a session started fresh in the sessions directory
// (a REPL started again, a kernel restarted: each opens a new session) at
// the sweep the most recent session there left unfinished, if it did and
// no approxtune has that session open: after a Kernel > Restart nothing
// had said where the sweep cut short went, nor that 'resume ID' finishes
// it. It is "" for a session in a directory of the user's choosing (which
// reopens its own sweeps instead), and where the most recent session's
// last sweep is complete.
func previousNote(dir string, now time.Time) string {
	base := DefaultSessionsDir()
	ids := recentSessions(dir)
	if len(ids) == 0 {
		return ""
	}
	id := ids[0]
	path := filepath.Join(base, id)
	if held, _ := lockHolder(path); held {
		return "" // open elsewhere: its own display says what it runs
	}
	sws, err := ReadJournal(filepath.Join(path, JournalName))
	if err != nil || len(sws) == 0 {
		return ""
	}
	last := sws[len(sws)-1]
	if strings.HasPrefix(last.origin, "loaded from ") {
		// Only read there ('load'): the session it came from is the
		// one to name, and a note had passed from session to session.
		return ""
	}
	settleRunning(last) // no one has it open: a running sweep died
	search := last.Spec != nil && last.Spec.Search != sweep.SearchNone
	missing := len(last.Missing())
	if last.Status == StatusOK || (!search && missing == 0) {
		return ""
	}
	mode := "sweep"
	if last.Spec != nil {
		mode = string(last.Spec.Mode)
	}
	head := fmt.Sprintf("note: the previous session, %s (%s), left sweep %d (%s %s) unfinished", id, ago(sessionTime(id), now), last.ID, mode, last.Workload)
	why := briefWhy(last.Message)
	if why == "" {
		why = string(last.Status)
	}
	if search {
		return fmt.Sprintf("%s, a search stopped after %s: %s. 'load %s' reads what it ran; '%s' runs it again", head, loadRuns(len(last.Results)), why, id, searchCommand(last.Spec))
	}
	return fmt.Sprintf("%s after %d of %d runs: %s. 'resume %s' runs the %d missing here; 'load %s' only reads them", head, len(last.Results), last.Total(), why, id, missing, id)
}

// Previous is a note for a new session in the sessions directory whose
// most recent session there, open in no approxtune, left its last sweep
// unfinished: which sweep, and that 'resume ID' finishes it. It is ""
// otherwise, and for a session that reopened its own directory (see
// Reopened) or one in a directory of the user's choosing. The REPL and
// the kernel ask for it as they start (it reads that session's journal,
// which other uses of a session need not): ask before the first sweep.
func (s *Session) Previous() string {
	if s.previous == nil {
		note := ""
		if s.reopened == "" && !s.chosen {
			note = previousNote(s.opts.Dir, time.Now())
		}
		s.previous = &note
	}
	return *s.previous
}

// sessionTime is when the session with id started (NewSessionID), or the
// zero time for an id not of that form.
func sessionTime(id string) time.Time {
	if len(id) < 15 {
		return time.Time{}
	}
	t, err := time.ParseInLocation("20060102-150405", id[:15], time.Local)
	if err != nil {
		return time.Time{}
	}
	return t
}

// ago words how long before now t was: "started 5 minutes ago", or that
// the id does not say for a zero t.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "started at a time its id does not say"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "started under a minute ago"
	case d < 2*time.Minute:
		return "started a minute ago"
	case d < 2*time.Hour:
		return fmt.Sprintf("started %d minutes ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("started %d hours ago", int(d/time.Hour))
	}
	return "started " + t.Format("2006-01-02 15:04")
}
