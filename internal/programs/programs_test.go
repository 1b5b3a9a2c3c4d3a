package programs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/sweep"
)

// A failed launch's tail is the program's last words, each once, not
// mpirun's banner (Open MPI 4.1's, as a rank's exit 1 printed it): the
// banner alone is 10 lines, which left none of the program's own.
func TestTailLeavesOutMpirunBanners(t *testing.T) {
	var tl Tail
	tl.Write([]byte(`rank 0: reading deck solver.dat
rank 0: error: the deck has no size
rank 0: error: the deck has no size
mpirun: Forwarding signal 23 to job
[vm:20036] [[8890,0],0] ORTE_ERROR_LOG: Data unpack would read past end of buffer in file ../../../orte/util/show_help.c at line 501
[vm:20036] 2 more processes have sent help message help-mpi-api.txt / mpi-abort
--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
--------------------------------------------------------------------------
mpirun noticed that process rank 1 with PID 4242 on node vm exited on signal 11 (Segmentation fault).
--------------------------------------------------------------------------
`))
	got := tl.Lines(10)
	want := "\n    rank 0: reading deck solver.dat\n    rank 0: error: the deck has no size\n    mpirun noticed that process rank 1 with PID 4242 on node vm exited on signal 11 (Segmentation fault)."
	if got != want {
		t.Errorf("tail:%s\nwant:%s", got, want)
	}
	// Only a banner: the banner, rather than nothing.
	var only Tail
	only.Write([]byte("-------------------------\nPrimary job  terminated normally\n-------------------------\n"))
	if got := only.Lines(10); !strings.Contains(got, "Primary job") {
		t.Errorf("a banner alone gave %q", got)
	}
	// A rank that ended without MPI_Finalize: one line that says so, not
	// the banner's last 10 of its three possible reasons.
	var nofin Tail
	nofin.Write([]byte("--------------------------------------------------------------------------\nmpirun has exited due to process rank 1 with PID 0 on\nnode vm exiting improperly. There are three reasons this could occur:\n\n1. this process did not call \"init\" before exiting, but others in\nthe job did.\n\n2. this process called \"init\", but exited without calling \"finalize\".\n\nYou can avoid this message by specifying -quiet on the mpirun command line.\n--------------------------------------------------------------------------\n"))
	if got, want := nofin.Lines(10), "\n    mpirun: process rank 1 exited without calling MPI_Finalize (or called MPI_Abort, or never called MPI_Init)"; got != want {
		t.Errorf("a rank without MPI_Finalize:%s\nwant:%s", got, want)
	}
	if got := (&Tail{}).Lines(10); got != "" {
		t.Errorf("no output gave %q", got)
	}
}

// A configuration's launches are compared by their calls of each routine:
// a difference in any but the timing-dependent ones (test loops, Waitany,
// Waitsome) is told once a sweep, naming the routine that differs most.
func TestSameCalls(t *testing.T) {
	var warned []string
	r := &Runner{Warn: func(msg string) { warned = append(warned, msg) }}
	l := &launcher{r: r, label: "b=32"}
	l.sameCalls("the full run", map[string]int64{"dgemm_": 80, "MPI_Allreduce": 40, "MPI_Test": 500})
	l.sameCalls("eager at 2^-1", map[string]int64{"dgemm_": 80, "MPI_Allreduce": 40, "MPI_Test": 90, "MPI_Waitany": 3})
	if len(warned) != 0 {
		t.Fatalf("the same calls but for tests and waits: warned %q", warned)
	}
	l.sameCalls("conditional at 2^-1", map[string]int64{"dgemm_": 20, "MPI_Allreduce": 30, "MPI_Test": 500})
	want := "configuration b=32: the full run called dgemm_ 80 times over its ranks, conditional at 2^-1 20 times"
	if len(warned) != 1 || !strings.HasPrefix(warned[0], want) || !strings.Contains(warned[0], "APPROXTUNE_SKIPPING()") {
		t.Fatalf("fewer calls: warned %q, want one warning starting %q", warned, want)
	}
	other := &launcher{r: r, label: "b=64"}
	other.sameCalls("the full run", map[string]int64{"dgemm_": 80})
	other.sameCalls("eager at 2^-1", map[string]int64{"dgemm_": 10})
	if len(warned) != 1 {
		t.Errorf("a second configuration that differs: %d warnings, want the sweep's one", len(warned))
	}
}

// Two full runs of a configuration whose calls differ (HPL's look-ahead
// polls with MPI_Iprobe and updates meanwhile) are told as such, with
// timing as the likely cause: they had been told as "the full run called
// cblas_dtrsm 1128 times ..., the full run 1047 times: the program's
// control flow depends on what it computes" (a review).
func TestSameCallsTwoFullRuns(t *testing.T) {
	var warned []string
	r := &Runner{Warn: func(msg string) { warned = append(warned, msg) }}
	l := &launcher{r: r, label: "b=32 grid=1x4"}
	l.sameCalls("the full run", map[string]int64{"cblas_dtrsm": 1128})
	l.sameCalls("the full run", map[string]int64{"cblas_dtrsm": 1047})
	want := "configuration b=32 grid=1x4: two full runs called cblas_dtrsm 1128 and 1047 times over their ranks: the program's work depends on the timing of its messages"
	if len(warned) != 1 || !strings.HasPrefix(warned[0], want) || strings.Contains(warned[0], "the full run called") {
		t.Errorf("two full runs that differ: warned %q, want one warning starting %q", warned, want)
	}
}

// A configuration's failure is its own (and worth skipping) when its full
// run exited with an error or crashed, not when it was stopped from
// outside (SIGTERM, SIGKILL, or a launcher's 143 or 137 for them) nor when
// the program was refused before any run.
func TestConfigErrorOwn(t *testing.T) {
	exit := func(script string) error {
		err := exec.Command("/bin/sh", "-c", script).Run()
		if err == nil {
			t.Fatalf("%s: ended well", script)
		}
		return err
	}
	for script, own := range map[string]bool{
		"exit 3": true, "kill -SEGV $$": true, "kill -TERM $$": false, "kill -KILL $$": false, "exit 143": false, "exit 137": false,
	} {
		e := &ConfigError{Index: 1, Err: &referenceError{fmt.Errorf("prog exited: %w", exit(script))}}
		if e.Own() != own {
			t.Errorf("%s: Own() = %v, want %v", script, e.Own(), own)
		}
	}
	if (&ConfigError{Err: errors.New("refused: mpi_f08")}).Own() {
		t.Error("a refusal of the program: Own() = true")
	}
}

// A program's ranks get the thread counts the user set (a hybrid MPI +
// OpenMP program had been tuned on one thread whatever the user had set),
// and one thread a rank when the user set none.
func TestUserThreads(t *testing.T) {
	l := testenv.Launcher(t)
	threads := func() string {
		cmd, err := Mpirun{Launcher: l}.Command(context.Background(), 1, nil, "sh", "-c", "echo $OMP_NUM_THREADS $OPENBLAS_NUM_THREADS")
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	t.Setenv("OMP_NUM_THREADS", "")
	t.Setenv("OPENBLAS_NUM_THREADS", "")
	if got := threads(); got != "1 1" {
		t.Errorf("no thread counts set: the rank has %q, want 1 1", got)
	}
	t.Setenv("OMP_NUM_THREADS", "3")
	if got := threads(); got != "3 1" {
		t.Errorf("OMP_NUM_THREADS=3: the rank has %q, want 3 1", got)
	}
}

// A failed selective launch's hint fits how it failed: none but that it was
// stopped from outside for SIGTERM or SIGKILL (a killed mpirun had been
// given the stale messages' hint); for an exit status the program chose,
// APPROXTUNE_SKIPPING() first unless the program asks it; the stale
// messages' hint while messages may be skipped.
func TestFailureHint(t *testing.T) {
	cc := testenv.Tool(t, "mpicc")
	dir := t.TempDir()
	src := filepath.Join(dir, "asks.c")
	if err := os.WriteFile(src, []byte("#include \"approxtune.h\"\nint main(void) { return APPROXTUNE_SKIPPING(); }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	asks := filepath.Join(dir, "asks")
	if out, err := exec.Command(cc, "-I"+filepath.Join(testenv.Root(t), "include"), "-o", asks, src).CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	prog := filepath.Join(dir, "run.sh") // a script: what it asks is unknown
	if err := os.WriteFile(prog, []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	exit := func(script string) error {
		return fmt.Errorf("prog exited: %w", exec.Command("/bin/sh", "-c", script).Run())
	}
	const skipping, stale, outside = "APPROXTUNE_SKIPPING() is 1", "'messages run'", "stopped from outside"
	const links, unknown = "the program links APPROXTUNE_SKIPPING(): if what failed is its own result check", "if the program checks its own results"
	for _, tc := range []struct {
		script, path string
		runs         bool
		want, not    []string
	}{
		{"exit 3", "/bin/sh", false, []string{skipping, stale}, []string{outside}},
		{"exit 3", "/bin/sh", true, []string{skipping}, []string{stale, outside}},
		{"exit 3", asks, false, []string{stale, links, skipping}, []string{unknown}},
		{"exit 3", asks, true, []string{links}, []string{stale, unknown}},
		{"exit 3", prog, true, []string{unknown, skipping}, []string{links, stale}},
		{"kill -SEGV $$", "/bin/sh", false, []string{stale}, []string{skipping}},
		{"kill -SEGV $$", "/bin/sh", true, nil, []string{stale, skipping, outside}},
		{"kill -KILL $$", "/bin/sh", false, []string{outside}, []string{stale, skipping}},
		{"exit 143", "/bin/sh", false, []string{outside}, []string{stale, skipping}},
	} {
		h := failureHint(exit(tc.script), tc.path, tc.runs, false)
		for _, w := range tc.want {
			if !strings.Contains(h, w) {
				t.Errorf("%s (%s, messages run %v): hint %q lacks %q", tc.script, filepath.Base(tc.path), tc.runs, h, w)
			}
		}
		for _, n := range tc.not {
			if strings.Contains(h, n) {
				t.Errorf("%s (%s, messages run %v): hint %q has %q", tc.script, filepath.Base(tc.path), tc.runs, h, n)
			}
		}
	}
}

// A failed launch names the arguments that are relative paths to files
// found from approxtune's working directory or the spec's, but not in the
// launch's fresh directory, where the program looks.
func TestRelativeFilesNamed(t *testing.T) {
	spec, launchDir := t.TempDir(), t.TempDir()
	for _, f := range []string{"rel.in", "deck.dat"} {
		if err := os.WriteFile(filepath.Join(spec, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(launchDir, "deck.dat"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l := &launcher{r: &Runner{Dir: spec}, argv: []string{"./prog", "-i", "rel.in", "--deck=deck.dat", "-o=rel.in", filepath.Join(spec, "rel.in"), "64"}}
	got := l.relativeFiles(launchDir)
	if !strings.Contains(got, "each launch runs in a fresh directory, where rel.in (found from") || strings.Contains(got, "deck.dat") || strings.Contains(got, "rel.in, rel.in") {
		t.Errorf("hint %q, want rel.in named once, deck.dat (in the launch's directory) not", got)
	}
	l.argv = []string{"./prog", "64", "-n"}
	if got := l.relativeFiles(launchDir); got != "" {
		t.Errorf("no relative file: %q", got)
	}
}

// A launch's heading names the configuration and the run; apriori's,
// which covers two launches, says so.
func TestHeading(t *testing.T) {
	tol := 0.5
	for _, tc := range []struct {
		rs   sweep.RunStart
		want string
	}{
		{sweep.RunStart{Index: 3, Kind: sweep.RunReference}, "configuration 3 (b=64): a full run"},
		{sweep.RunStart{Index: 3, Kind: sweep.RunSelective, Policy: "eager", Tolerance: &tol}, "configuration 3 (b=64): eager at 2^-1"},
		{sweep.RunStart{Index: 3, Kind: sweep.RunSelective, Policy: "apriori", Tolerance: &tol}, "configuration 3 (b=64): apriori at 2^-1, its counting launch and then its selective launch"},
	} {
		if got := Heading(tc.rs, "b=64"); got != tc.want {
			t.Errorf("Heading(%+v) = %q, want %q", tc.rs, got, tc.want)
		}
	}
}
