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
// memory are written before resume runs the rest.
func TestJournalWriteFailureStopsTheSweep(t *testing.T) {
	bin := testenv.Build(t)
	testenv.Launcher(t)
	dir := filepath.Join(t.TempDir(), "session")
	s, err := New(Options{Dir: dir, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := context.Background()
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
	steps := []string{}
	for i := 10; i < 30; i++ {
		steps = append(steps, itoa(i))
	}
	// The agent starts (and the journal opens) before the limit.
	execAll(t, s, &textOut{}, "workload synthetic", "space steps=5 count=2 mean_us=200", "policy conditional", "tolerance 2^-1", "tune",
		"space steps="+strings.Join(steps, ",")+" count=2 mean_us=200")
	path := filepath.Join(dir, JournalName)
	out := &limitAt{at: 3, set: func() {
		fi, err := os.Stat(path)
		if err != nil {
			t.Error(err)
			return
		}
		// Room for part of a line: the write that fails is torn.
		lim := syscall.Rlimit{Cur: uint64(fi.Size()) + 300, Max: old.Max}
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
			t.Error(err)
		}
	}}
	err = s.Exec(ctx, "tune", out)
	restore()
	sw := s.Last()
	if err == nil || !strings.Contains(err.Error(), "file too large") || !strings.Contains(err.Error(), "in memory, written as soon as the journal can be") || sw.Status != StatusCancelled {
		t.Fatalf("tune with a full journal: %v, status %s", err, sw.Status)
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
