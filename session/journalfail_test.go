package session

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/preload"
	"github.com/approxtune/approxtune/internal/testenv"
)

// limitAt lowers the process's file-size limit once a sweep has made at
// runs: the journal's next writes fail as on a full disk (EFBIG, Go
// ignores SIGXFSZ).
type limitAt struct {
	textOut
	at   int
	once sync.Once
	set  func()
}

func (o *limitAt) Update(p Progress) {
	if p.Done >= o.at {
		o.once.Do(o.set)
	}
}

// A journal that cannot be written stops the sweep at the next run
// boundary with the reason; the file keeps whole lines only, nothing
// written is lost, and once writing works again the records that waited in
// memory are written before resume runs the rest. Two ways to fail: a
// file-size limit (EFBIG) and a full filesystem (ENOSPC, a small tmpfs).
// EIO takes the same way through the journal (no error is told apart).
func TestJournalWriteFailureStopsTheSweep(t *testing.T) {
	bin := testenv.Build(t)
	testenv.Launcher(t)
	t.Run("file size limit", func(t *testing.T) {
		var old syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
			t.Fatal(err)
		}
		restore := func() {
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
				t.Fatal(err)
			}
		}
		t.Cleanup(restore)
		dir := filepath.Join(t.TempDir(), "session")
		journalFailure(t, bin, dir, func() {
			fi, err := os.Stat(filepath.Join(dir, JournalName))
			if err != nil {
				t.Error(err)
				return
			}
			// Room for part of a line: the write that fails is torn.
			lim := syscall.Rlimit{Cur: uint64(fi.Size()) + 300, Max: old.Max}
			if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
				t.Error(err)
			}
		}, restore, "file too large")
	})
	t.Run("full filesystem", func(t *testing.T) {
		// Fill what is left: the journal's next write fills the rest of
		// its last page, then fails (torn).
		fs, fill, free := smallFS(t, "256k")
		journalFailure(t, bin, filepath.Join(fs, "session"), fill, free, "no space left on device")
	})
}

// journalFailure runs a sweep of 20 configurations in a session in dir,
// calls fail after its 3rd result to make the journal's writes fail with
// an error that says want, checks how the sweep stopped and what the
// journal holds, then calls heal and resumes it.
func journalFailure(t *testing.T, bin, dir string, fail, heal func(), want string) {
	s, err := New(Options{Dir: dir, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	steps := []string{}
	for i := 10; i < 30; i++ {
		steps = append(steps, itoa(i))
	}
	// The agent starts (and the journal opens) before the failure.
	execAll(t, s, &textOut{}, "workload synthetic", "space steps=5 count=2 mean_us=200", "policy conditional", "tolerance 2^-1", "tune",
		"space steps="+strings.Join(steps, ",")+" count=2 mean_us=200")
	path := filepath.Join(dir, JournalName)
	out := &limitAt{at: 3, set: fail}
	err = s.Exec(ctx, "tune", out)
	heal()
	sw := s.Last()
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "in memory, written as soon as the journal can be") || sw.Status != StatusFailed {
		t.Fatalf("tune with a journal that cannot be written: %v, status %s", err, sw.Status)
	}
	if len(sw.Results) >= 20 || len(sw.Results) < 3 {
		t.Errorf("%d results: the sweep did not stop at the next run boundary after the 3rd", len(sw.Results))
	}
	t.Logf("stopped with %d of 20 results: %v", len(sw.Results), err)
	// The count is what waits at the sweep's end, its end record among
	// them: it had been the count at the first failure (1, where 5 waited).
	if m := regexp.MustCompile(`\((\d+) records? waits? in memory`).FindStringSubmatch(err.Error()); m == nil || m[1] != itoa(len(s.journal.backlog)) || len(s.journal.backlog) < 2 {
		t.Errorf("the error says %v records wait; %d do", m, len(s.journal.backlog))
	}
	// Whole lines only, and every result journaled is one the session has.
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	lines := 0
	for sc.Scan() {
		lines++
		if !json.Valid(sc.Bytes()) {
			t.Errorf("line %d is torn: %.80s", lines, sc.Text())
		}
	}
	f.Close()
	b, _ := os.ReadFile(path)
	if len(b) == 0 || b[len(b)-1] != '\n' {
		t.Errorf("the journal does not end with a whole line")
	}
	sws, err := ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(sws[len(sws)-1].Results); got > len(sw.Results) {
		t.Errorf("the journal has %d results, the session %d", got, len(sw.Results))
	}
	// Writing works again: resume writes what waited, then runs the rest.
	if err := s.Exec(ctx, "resume", &textOut{}); err != nil || sw.Status != StatusOK || len(sw.Results) != 20 {
		t.Fatalf("resume: %v, status %s, %d results", err, sw.Status, len(sw.Results))
	}
	checkResumedJournal(t, path, 20)
}

// checkResumedJournal reads the journal at path back: its last sweep must
// be complete, with each of its n configurations' results once.
func checkResumedJournal(t *testing.T, path string, n int) {
	t.Helper()
	sws, err := ReadJournal(path)
	if err != nil {
		t.Fatal(err)
	}
	last := sws[len(sws)-1]
	seen := map[int]bool{}
	for _, r := range last.Results {
		if seen[r.Index] {
			t.Errorf("configuration %d twice in the journal", r.Index)
		}
		seen[r.Index] = true
	}
	if last.Status != StatusOK || len(seen) != n {
		t.Errorf("the journal reads back status %s with %d configurations of %d", last.Status, len(seen), n)
	}
}

// A torn last line (the process died writing it) is cut off when the
// journal opens, so the next record starts a line of its own.
func TestJournalCutsATornLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, JournalName)
	whole := `{"kind":"sweep","sweep":1}` + "\n"
	if err := os.WriteFile(path, []byte(whole+`{"kind":"ev`), 0o600); err != nil {
		t.Fatal(err)
	}
	j, err := OpenJournal(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.append(record{Kind: "end", Sweep: 1, Status: StatusOK}); err != nil {
		t.Fatal(err)
	}
	j.Close()
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 2 || lines[0]+"\n" != whole || !strings.HasPrefix(lines[1], `{"t":`) {
		t.Errorf("journal after a torn line and an append:\n%s", b)
	}
}

// flushCheck counts, at every progress report, the results the journal
// file holds, read through a file of its own: each event is written to the
// OS as it comes, before the user hears of it.
type flushCheck struct {
	textOut
	t       *testing.T
	path    string
	checked int
}

func (o *flushCheck) Update(p Progress) {
	if p.Done == 0 {
		return
	}
	b, err := os.ReadFile(o.path)
	if err != nil {
		o.t.Error(err)
		return
	}
	if n := strings.Count(string(b), `"type":"result"`); n < p.Done {
		o.t.Errorf("%d results reported, %d in the journal file", p.Done, n)
	}
	o.checked++
}

// Every event is in the journal file (written to the OS, no buffer of the
// session's) before its progress is reported, and the journal is synced
// as each configuration ends, at most once per Options.SyncEvery (here
// every time; by default once a second: TestJournalSyncedAtMostEvery).
func TestJournalFlushedPerEventSyncedPerConfiguration(t *testing.T) {
	bin := testenv.Build(t)
	testenv.Launcher(t)
	dir := filepath.Join(t.TempDir(), "session")
	s, err := New(Options{Dir: dir, Binary: bin, SyncEvery: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	out := &flushCheck{t: t, path: filepath.Join(dir, JournalName)}
	execAll(t, s, out, "workload synthetic", "space steps=5,6,7,8 count=2 mean_us=200", "policy conditional", "tolerance 2^-1,2^-3", "tune")
	if out.checked < 8 {
		t.Errorf("the journal was checked at %d reports, want one per result (8)", out.checked)
	}
	if s.journal.syncs < 4 {
		t.Errorf("%d syncs for a sweep of 4 configurations: want one as each ends", s.journal.syncs)
	}
}

// With the default SyncEvery (1 s), a sweep of many short configurations
// syncs about once a second, and at its end: a sync per configuration had
// made a sweep of 3000 configurations of microseconds spend 32 s in fsync.
func TestJournalSyncedAtMostEvery(t *testing.T) {
	bin := testenv.Build(t)
	testenv.Launcher(t)
	s, err := New(Options{Dir: filepath.Join(t.TempDir(), "session"), Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var counts []string
	for i := 1; i <= 40; i++ {
		counts = append(counts, itoa(i))
	}
	execAll(t, s, &textOut{}, "workload synthetic steps=1 mean_us=1 msg=1", "space count="+strings.Join(counts, ","), "policy conditional", "tolerance 2^-1")
	before, start := s.journal.syncs, time.Now()
	execAll(t, s, &textOut{}, "tune")
	took := time.Since(start)
	got := s.journal.syncs - before
	if most := int(took/time.Second) + 2; got < 1 || got > most {
		t.Errorf("%d syncs for a sweep of 40 configurations in %v: want at least the end's and at most %d", got, took, most)
	}
}

// The cost of the journal: a record written (no sync), and a record
// written and synced (as at a configuration's end). For the figures of
// docs/reliability.md: go test ./session/ -run '^$' -bench Journal -benchtime 2000x
func BenchmarkJournal(b *testing.B) {
	sws, err := ReadJournal(filepath.Join("testdata", "traced-journal.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	ev := raw(sws[0].Results[0]) // a selective run's result, 1 kB
	for _, sync := range []bool{false, true} {
		name := "write"
		if sync {
			name = "write+fsync"
		}
		b.Run(name, func(b *testing.B) {
			j, err := OpenJournal(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			b.SetBytes(int64(len(ev)))
			for b.Loop() {
				if err := j.append(record{Kind: "event", Sweep: 1, Event: ev}); err != nil {
					b.Fatal(err)
				}
				if sync {
					if err := j.Sync(); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

// smallFS mounts a tmpfs of size bytes for the test and returns it with a
// function that fills what is left of it and one that empties it again.
func smallFS(t *testing.T, size string) (dir string, fill, free func()) {
	t.Helper()
	dir = t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size+",mode=0700"); err != nil {
		testenv.Missing(t, "a small tmpfs to fill (mount: %v; the tests run as root)", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	filler := filepath.Join(dir, "filler")
	fill = func() { // called from a sweep's progress too: t.Error, not t.Fatal
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			t.Error(err)
			return
		}
		if err := os.WriteFile(filler, make([]byte, int64(st.Bavail)*st.Bsize), 0o600); err != nil && !strings.Contains(err.Error(), "no space") {
			t.Error(err)
		}
	}
	free = func() {
		if err := os.Remove(filler); err != nil {
			t.Fatal(err)
		}
	}
	return dir, fill, free
}

// Records waiting in memory when the session ends (a script or a notebook
// run ends at the error) go to a file of their own, which Close names with
// how to put them back; before, they were lost.
func TestJournalBacklogKeptAtClose(t *testing.T) {
	fs, fill, _ := smallFS(t, "64k")
	j, err := OpenJournal(filepath.Join(fs, "session"))
	if err != nil {
		t.Fatal(err)
	}
	if err := j.append(record{Kind: "state"}); err != nil {
		t.Fatal(err)
	}
	fill()
	ev := json.RawMessage(`{"type":"result","index":7,"pad":"` + strings.Repeat("x", 8000) + `"}`)
	var je *JournalError
	if err := j.append(record{Kind: "event", Sweep: 1, Event: ev}); !errors.As(err, &je) || je.Fix() != "free space" {
		t.Fatalf("append on a full disk: %v, want a JournalError whose fix is to free space", err)
	}
	err = j.Close()
	m := regexp.MustCompile(`1 journal record could not be written to \S+ \(.*no space left on device\): kept in (\S+); once the journal can be written, 'cat \S+ >> \S+', then reopen the session and 'resume'`).FindStringSubmatch(fmt.Sprint(err))
	if m == nil {
		t.Fatalf("Close with a record waiting: %v", err)
	}
	defer os.Remove(m[1])
	b, err := os.ReadFile(m[1])
	var r record
	if err != nil || json.Unmarshal(b, &r) != nil || r.Kind != "event" || !strings.Contains(string(r.Event), `"index":7`) {
		t.Errorf("the kept file %s: %v, %q", m[1], err, b)
	}
}

// A sweep whose start cannot be journaled does not start, says to run it
// again (not 'resume': there is nothing to resume), and its record is not
// written later: the journal then holds the sweep that ran, once.
func TestSweepNotStartedOnFullDisk(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	fs, fill, free := smallFS(t, "256k")
	// A new session in the sessions directory: its journal is made by its
	// first sweep (one in a directory of the user's choosing keeps the
	// settings typed before, and a full disk may still take a record in
	// the last block of their file).
	t.Setenv("XDG_DATA_HOME", fs)
	t.Setenv("APPROXTUNE_SESSION_DIR", "")
	dir := filepath.Join(DefaultSessionsDir(), NewSessionID())
	s, err := New(Options{Dir: dir, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	out := &textOut{}
	for _, l := range []string{"workload synthetic steps=4", "policy eager", "tolerance 2^-1"} {
		if err := s.Exec(ctx, l, out); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	fill()
	err = s.Exec(ctx, "tune", out)
	if err == nil || !strings.Contains(err.Error(), "the sweep did not start") || !strings.Contains(err.Error(), "free space, then run it again") {
		t.Fatalf("tune on a full disk: %v", err)
	}
	if s.Last() != nil {
		t.Errorf("a sweep that did not start is in the session: %d", s.Last().ID)
	}
	free()
	if err := s.Exec(ctx, "tune", out); err != nil {
		t.Fatalf("tune once there is room: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sws, err := ReadJournal(filepath.Join(dir, JournalName))
	if err != nil || len(sws) != 1 || sws[0].ID != 1 || len(sws[0].Results) != 1 {
		t.Fatalf("journal: %v; %d sweeps, want sweep 1 once with its result", err, len(sws))
	}
}

// A program sweep (launches of the user's program, run by the session)
// keeps its journal as an agent's sweep does: synced as each configuration
// ends, stopped after the run whose record could not be written, failed
// with the journal's reason, and its runs kept in memory, so that resume
// runs only the rest and writes each configuration once. It had never
// synced, ignored the end record's error, and left a run it could not
// journal out of the sweep, for resume to run twice.
func TestProgramJournalWriteFailure(t *testing.T) {
	bin, prog := iterateProgram(t)
	fs, fill, free := smallFS(t, "256k")
	dir := filepath.Join(fs, "session")
	s, err := New(Options{Dir: dir, Binary: bin, SyncEvery: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
	execAll(t, s, &textOut{}, "program "+prog+" {iter} {n}", "space iter=4 n=16 ranks=2", "policy conditional", "tolerance 2^-1",
		"deadline off", // a loaded machine's slow launch is no hang here
		"tune")
	syncs := s.journal.syncs
	execAll(t, s, &textOut{}, "space iter=4 n=16,20,24 ranks=2", "tune")
	if got := s.journal.syncs - syncs; got < 3 {
		t.Errorf("%d syncs for a program sweep of 3 configurations: want one as each ends", got)
	}
	ns := []string{}
	for n := 16; n < 40; n += 2 {
		ns = append(ns, itoa(n))
	}
	execAll(t, s, &textOut{}, "space iter=4 n="+strings.Join(ns, ",")+" ranks=2")
	err = s.Exec(ctx, "tune", &limitAt{at: 2, set: fill})
	free()
	sw := s.Last()
	if err == nil || !strings.Contains(err.Error(), "no space left on device") || sw.Status != StatusFailed {
		t.Fatalf("tune with a journal that cannot be written: %v, status %s", err, sw.Status)
	}
	if len(sw.Results) >= len(ns) || len(sw.Results) < 2 {
		t.Errorf("%d results of %d: the sweep did not stop after the run it could not journal", len(sw.Results), len(ns))
	}
	if err := s.Exec(ctx, "resume", &textOut{}); err != nil || sw.Status != StatusOK || len(sw.Results) != len(ns) {
		t.Fatalf("resume: %v, status %s, %d results", err, sw.Status, len(sw.Results))
	}
	checkResumedJournal(t, filepath.Join(dir, JournalName), len(ns))
}

// The configurations are journaled once, in the sweep's record: the
// agent's start event, which carries them too, is journaled without them
// (a random search over 100,000 configurations had added 30 MB a sweep),
// and the journal read back has them.
func TestJournalConfigsOnce(t *testing.T) {
	s := agentSession(t)
	execAll(t, s, &textOut{}, "workload synthetic steps=1 mean_us=1 msg=1", "space count=1,2,3,4", "policy conditional", "tolerance 2^-1", "tune")
	b, err := os.ReadFile(filepath.Join(s.Dir(), JournalName))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.Contains(line, `"type":"start"`) && strings.Contains(line, `"count":3`) {
			t.Errorf("the start event was journaled with the configurations: %.300s", line)
		}
	}
	sws, err := ReadJournal(filepath.Join(s.Dir(), JournalName))
	if err != nil || len(sws) != 1 || len(sws[0].Configs) != 4 || len(sws[0].Results) != 4 {
		t.Fatalf("read back: %v, %d sweeps", err, len(sws))
	}
}

// iterateProgram builds approxtune and the test program iterate.c
// (cmd/approxtune/testdata/program) and sets the preload library for the
// session's launches: it returns both binaries.
func iterateProgram(t *testing.T) (bin, prog string) {
	t.Helper()
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin = testenv.Build(t)
	t.Setenv(preload.EnvLib, testenv.Preload(t))
	prog = filepath.Join(t.TempDir(), "iterate")
	src := filepath.Join(testenv.Root(t), "cmd", "approxtune", "testdata", "program", "iterate.c")
	if out, err := exec.Command(mpicc, "-O2", "-o", prog, src, "-I"+filepath.Join(testenv.Root(t), "include"), "-lopenblas").CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", mpicc, err, out)
	}
	return bin, prog
}

// Settings the journal cannot take are said at once, and Close's advice for
// them alone is to reopen, not to 'resume' (a review's read-only journal
// had dropped a 'space' unsaid, and Close then advised a 'resume' of
// nothing).
func TestSettingsJournalFailureSaid(t *testing.T) {
	fs, fill, _ := smallFS(t, "64k")
	dir := filepath.Join(fs, "session")
	writeJournal(t, dir, []*Sweep{tracedSweep(t)})
	s, err := New(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	fill()
	// The journal's last page may hold a record or two more.
	out := &textOut{}
	for r := 5; r < 40 && !strings.Contains(out.b.String(), "note:"); r++ {
		if err := s.Exec(context.Background(), fmt.Sprintf("reps %d", r), out); err != nil {
			t.Fatal(err)
		}
	}
	if !strings.Contains(out.b.String(), "note: the settings could not be written to the journal (journal: write") || !strings.Contains(out.b.String(), "no space left on device): they wait in memory, written with the next record the journal takes (free space)") {
		t.Errorf("reps 5 on a full disk:\n%s", out.b.String())
	}
	err = s.Close()
	m := regexp.MustCompile(`journal records? could not be written to \S+ \(.*\): kept in (\S+); once the journal can be written, 'cat \S+ >> \S+', then reopen the session$`).FindStringSubmatch(fmt.Sprint(err))
	if m == nil {
		t.Fatalf("Close with a setting waiting: %v", err)
	}
	os.Remove(m[1])
}
