package session

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A session started fresh in the sessions directory (a REPL started
// again, a kernel restarted) says which sweep the most recent session
// there left unfinished, and that 'resume ID' runs its missing runs; it
// says nothing where that sweep is complete, where that session is open
// in another approxtune, or for a session in a directory of the user's
// own.
func TestPreviousNote(t *testing.T) {
	home := sessionsHome(t)
	const id = "20261201-070000-aaaaaa"
	old := filepath.Join(home, id)
	sw := tracedSweep(t)
	sw.Results = sw.Results[:3]
	sw.Status, sw.Message = StatusDied, "the agent died: mpirun exited with status 137\nits last messages: ..."
	writeJournal(t, old, []*Sweep{sw})

	fresh := func(dir string) string {
		t.Helper()
		s, err := New(Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		return s.Previous()
	}
	got := fresh(filepath.Join(home, NewSessionID()))
	for _, want := range []string{
		"the previous session, " + id + " (started ",
		"left sweep 1 (evaluate synthetic) unfinished after 3 of 4 runs: the agent died: mpirun exited with status 137. ",
		"'resume " + id + "' runs the 1 missing here; 'load " + id + "' only reads them",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("a fresh session's note has no %q:\n%s", want, got)
		}
	}
	if got := fresh(t.TempDir()); got != "" {
		t.Errorf("a session in a directory of its own pointed at %s: %s", id, got)
	}

	// A session that only loaded the sweep is not named after it: the
	// note had passed from session to session.
	b, err := New(Options{Dir: filepath.Join(home, "20261201-071500-cccccc")})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Exec(context.Background(), "load "+id, &textOut{}); err != nil {
		t.Fatal(err)
	}
	b.Close()
	if got := fresh(filepath.Join(home, NewSessionID())); got != "" {
		t.Errorf("a session that only loaded the sweep was named: %s", got)
	}
	os.RemoveAll(filepath.Join(home, "20261201-071500-cccccc"))

	// Open in another approxtune: nothing to say (its sweep may be running).
	j, err := OpenJournal(old)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Lock(); err != nil {
		t.Fatal(err)
	}
	if got := fresh(filepath.Join(home, NewSessionID())); got != "" {
		t.Errorf("a session open elsewhere was pointed at: %s", got)
	}
	j.Close()

	// A newer session whose last sweep is complete hides the older one.
	done := tracedSweep(t)
	done.Status = StatusOK
	writeJournal(t, filepath.Join(home, "20261201-080000-bbbbbb"), []*Sweep{done})
	if got := fresh(filepath.Join(home, NewSessionID())); got != "" {
		t.Errorf("the most recent session is complete, yet: %s", got)
	}
}

func TestAgo(t *testing.T) {
	now := time.Date(2026, 12, 1, 9, 0, 0, 0, time.Local)
	for id, want := range map[string]string{
		"20261201-085930-aaaaaa": "started under a minute ago",
		"20261201-085850-aaaaaa": "started a minute ago",
		"20261201-081500-aaaaaa": "started 45 minutes ago",
		"20261130-210000-aaaaaa": "started 12 hours ago",
		"20261120-101500-aaaaaa": "started 2026-11-20 10:15",
		"mine":                   "started at a time its id does not say",
	} {
		if got := ago(sessionTime(id), now); got != want {
			t.Errorf("%s: %q, want %q", id, got, want)
		}
	}
}

// Settings typed in a session directory of the user's choosing come back
// when it is reopened, though no sweep ran (a user's 'workload qr2d' in
// --dir DIR had come back as summa); a new session in the sessions
// directory still leaves nothing until its first sweep.
func TestSettingsKeptWithoutSweep(t *testing.T) {
	home := sessionsHome(t)
	dir := filepath.Join(t.TempDir(), "mine")
	s, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(context.Background(), "workload qr2d n=512", &textOut{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	again, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again.State().Workload != "qr2d" || !strings.Contains(again.Reopened(), "no sweep yet; its settings are back") {
		t.Errorf("reopened: workload %s, %q", again.State().Workload, again.Reopened())
	}

	fresh := filepath.Join(home, NewSessionID())
	s, err = New(Options{Dir: fresh})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(context.Background(), "workload qr2d n=512", &textOut{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(fresh); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a new session in the sessions directory left %s with no sweep (%v)", fresh, err)
	}
}
