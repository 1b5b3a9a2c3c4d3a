package session

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/approxtune/approxtune/internal/testenv"
)

// An eager sweep stopped and resumed by another session ('resume SESSION')
// starts its resumed runs from the kernel statistics eager had when the
// sweep stopped, as an uninterrupted sweep would: the first resumed
// configuration executes fewer kernels than the sweep's first, which began
// with none. The same resume from a copy of the session whose carried
// statistics' file is cut short starts afresh, executes as many as the
// first, and says so. Each resume runs on the sweep's 4 ranks, whatever
// ranks says. The statistics stay out of the journal, and the file goes
// once the sweep has every run.
func TestResumeCarriesEagerStatistics(t *testing.T) {
	bin := testenv.Build(t)
	testenv.Launcher(t)
	ctx := context.Background()
	first := filepath.Join(t.TempDir(), "first")
	a, err := New(Options{Dir: first, Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	execAll(t, a, &textOut{}, "workload synthetic", "space steps=6,7,8,9,10,11 count=4 kinds=4 mean_us=300", "policy eager", "tolerance 2^-1")
	if err := a.Exec(ctx, "tune", &limitAt{at: 2, set: func() { a.Cancel() }}); !errors.Is(err, context.Canceled) {
		t.Fatalf("tune cancelled after 2 runs: %v, want context.Canceled", err)
	}
	old := a.Last()
	done := len(old.Results)
	if done < 2 || len(old.Missing()) == 0 {
		t.Fatalf("the cancelled sweep: %d results, %d missing", done, len(old.Missing()))
	}
	first0, second := executed(t, old, 0), executed(t, old, 1)
	a.Close()
	if _, err := os.Stat(filepath.Join(first, carriedName(1))); err != nil {
		t.Fatalf("the stopped sweep's carried statistics: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(first, JournalName)); err != nil || strings.Contains(string(b), `"carried"`) {
		t.Fatalf("the journal holds the carried statistics (or did not read: %v)", err)
	}
	lost := filepath.Join(t.TempDir(), "lost")
	if out, err := exec.Command("cp", "-a", first, lost).CombinedOutput(); err != nil {
		t.Fatalf("copy the session: %v %s", err, out)
	}
	if fi, err := os.Stat(filepath.Join(first, carriedName(1))); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the carried statistics' file: %v, mode %v; want 0600, as the journal", err, fi.Mode().Perm())
	}
	// A file cut short (a crash mid-write of a copy): it does not read.
	if err := os.WriteFile(filepath.Join(lost, carriedName(1)), []byte(`[{"index":1,"pol`), 0o600); err != nil {
		t.Fatal(err)
	}

	resumed := func(from string) (resumed0 int64, said string, dir string) {
		dir = filepath.Join(t.TempDir(), "second")
		b, err := New(Options{Dir: dir, Binary: bin})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		out := &textOut{}
		// Another rank count set: resume takes the sweep's, and says so.
		execAll(t, b, out, "ranks 2", "resume "+from)
		if !strings.Contains(out.b.String(), "ranks 4, as sweep 1 ran (they were 2)") {
			t.Errorf("resume with ranks 2 of a sweep run on 4:\n%s", out.b.String())
		}
		sw := b.Last()
		if sw.Status != StatusOK || len(sw.Missing()) != 0 {
			t.Fatalf("resume of %s: status %s, %d runs missing", from, sw.Status, len(sw.Missing()))
		}
		if b, err := os.ReadFile(filepath.Join(dir, JournalName)); err != nil || strings.Contains(string(b), `"carried"`) {
			t.Errorf("the resuming session's journal holds carried statistics (or did not read: %v)", err)
		}
		return executed(t, sw, done), out.b.String(), dir
	}
	carried, said, dir := resumed(first)
	if !strings.Contains(said, "the resumed runs start from the kernel statistics carried from before the stop: eager at 2^-1 (after configuration ") {
		t.Errorf("resume did not say where eager starts:\n%s", said)
	}
	if _, err := os.Stat(filepath.Join(dir, carriedName(1))); !os.IsNotExist(err) {
		t.Errorf("the complete sweep's carried statistics are still there: %v", err)
	}
	afresh, said, _ := resumed(lost)
	if !strings.Contains(said, "note: eager carries its kernels' statistics from one configuration to the next, and those of the runs made before the sweep stopped were not kept") ||
		!strings.Contains(said, carriedName(1)+" does not read, and was left aside") {
		t.Errorf("resume without the statistics did not say it starts afresh:\n%s", said)
	}
	t.Logf("kernels executed: configuration 0 %d, 1 %d; configuration %d resumed with the statistics %d, without %d", first0, second, done, carried, afresh)
	if 2*carried > first0 {
		t.Errorf("configuration %d, resumed with eager's statistics, executed %d kernels; the sweep's first, which started with none, %d", done, carried, first0)
	}
	if 2*afresh < first0 {
		t.Errorf("configuration %d, resumed without eager's statistics, executed %d kernels: as few as with them? configuration 0 %d", done, afresh, first0)
	}
}

// executed is the number of kernels configuration i's run of sw executed.
func executed(t *testing.T, sw *Sweep, i int) int64 {
	t.Helper()
	for _, r := range sw.Results {
		if r.Index == i && r.Executed != nil {
			return *r.Executed
		}
	}
	t.Fatalf("sweep %d has no run of configuration %d with a count of executed kernels", sw.ID, i)
	return 0
}
