package session

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

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
		fs := t.TempDir()
		if err := syscall.Mount("tmpfs", fs, "tmpfs", 0, "size=256k,mode=0700"); err != nil {
			testenv.Missing(t, "a small tmpfs to fill (mount: %v; the tests run as root)", err)
		}
		t.Cleanup(func() { syscall.Unmount(fs, syscall.MNT_DETACH) })
		filler := filepath.Join(fs, "filler")
		journalFailure(t, bin, filepath.Join(fs, "session"), func() {
			// Fill what is left: the journal's next write fills the rest of
			// its last page, then fails (torn).
			f, err := os.Create(filler)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			var st syscall.Statfs_t
			if err := syscall.Statfs(fs, &st); err != nil {
				t.Error(err)
				return
			}
			free := int64(st.Bavail) * st.Bsize
			f.Write(make([]byte, free))
			f.Sync()
		}, func() {
			if err := os.Remove(filler); err != nil {
				t.Fatal(err)
			}
		}, "no space left on device")
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
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "in memory, written as soon as the journal can be") || sw.Status != StatusCancelled {
		t.Fatalf("tune with a journal that cannot be written: %v, status %s", err, sw.Status)
	}
	if len(sw.Results) >= 20 || len(sw.Results) < 3 {
		t.Errorf("%d results: the sweep did not stop at the next run boundary after the 3rd", len(sw.Results))
	}
	t.Logf("stopped with %d of 20 results: %v", len(sw.Results), err)
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
	sws, err = ReadJournal(path)
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
	if last.Status != StatusOK || len(seen) != 20 {
		t.Errorf("the journal reads back status %s with %d configurations", last.Status, len(seen))
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
// as each configuration ends.
func TestJournalFlushedPerEventSyncedPerConfiguration(t *testing.T) {
	bin := testenv.Build(t)
	testenv.Launcher(t)
	dir := filepath.Join(t.TempDir(), "session")
	s, err := New(Options{Dir: dir, Binary: bin})
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
