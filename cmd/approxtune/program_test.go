package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/preload"
	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/session"
	"github.com/approxtune/approxtune/sweep"
)

// buildPreload builds the preload library into a temporary directory.
func buildPreload(t *testing.T) string { return testenv.Preload(t) }

// compile builds a C test program with cc and extra flags.
func compile(t *testing.T, cc, src string, flags ...string) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), strings.TrimSuffix(filepath.Base(src), ".c"))
	args := append([]string{"-O2", "-o", exe, src}, flags...)
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", cc, strings.Join(args, " "), err, out)
	}
	return exe
}

// approxtune program --check counts exactly the calls a program makes, the
// Fortran and CBLAS forms of dgemm both, and not the BLAS calls a LAPACK
// routine makes inside itself; the program's own results are unchanged.
func TestProgramCheckCounts(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "counts.c"), "-lopenblas")
	const ranks = 3
	stdout, stderr, code := runCheck(t, bin, lib, "--ranks", strconv.Itoa(ranks), prog)
	if code != 0 {
		t.Fatalf("program --check: exit %d\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, "info 0 sum 3 c00 8") {
		t.Errorf("the program's own output changed under the library:\n%s", stdout)
	}
	want := map[string]int{"dgemm_": 5, "cblas_dgemm": 3, "dpotrf_": 1, "MPI_Bcast": 4, "MPI_Allreduce": 2, "MPI_Barrier": 1, "cblas_dtrsm": 2}
	rows := map[string][]string{}
	for _, l := range strings.Split(stdout, "\n") {
		if f := strings.Fields(l); len(f) == 3 {
			rows[f[0]] = f[1:]
		}
	}
	for name, per := range want {
		got, ok := rows[name]
		if !ok || got[0] != strconv.Itoa(per*ranks) {
			t.Errorf("%s: got %v, want %d calls over %d ranks", name, got, per*ranks, ranks)
		}
	}
	if len(rows) != len(want) {
		t.Errorf("routines listed: %v, want exactly %v", rows, want)
	}
	// What a selective run does not skip: the routines only counted, and
	// those the library never sees.
	for _, line := range []string{"counted only, run as they are in selective runs (never skipped): cblas_dtrsm\n",
		"counts also calls routines the library does not intercept: they run as they are in every launch, their time part of the time between kernels: MPI_Iprobe, cblas_dgemv\n",
		"timed: each launch whole, from MPI_Init to MPI_Finalize (no region marked)"} {
		if !strings.Contains(stdout, line) {
			t.Errorf("the check does not say %q:\n%s", line, stdout)
		}
	}
	// What is timed, of a program that marks its region.
	setup := compile(t, mpicc, filepath.Join("testdata", "program", "setup.c"), "-I"+filepath.Join(testenv.Root(t), "include"))
	stdout, stderr, code = runCheck(t, bin, lib, "--ranks", "2", setup, "3")
	if code != 0 || !strings.Contains(stdout, "timed: the region from approxtune_begin to approxtune_end, marked on every rank\n") || strings.Contains(stdout, "timed: each launch whole") {
		t.Errorf("program --check of a program that marks its region: exit %d\n%s%s", code, stdout, stderr)
	}
	// Whether a search may cut its launches short.
	if !strings.Contains(stdout, "searches: each launch runs whole; to let a search's round cut short") {
		t.Errorf("program --check of a program that never asks to be cut short:\n%s", stdout)
	}
	iterate := compile(t, mpicc, filepath.Join("testdata", "program", "iterate.c"), "-I"+filepath.Join(testenv.Root(t), "include"), "-lopenblas")
	stdout, stderr, code = runCheck(t, bin, lib, "--ranks", "2", iterate, "2", "32")
	if code != 0 || !strings.Contains(stdout, "searches: it calls APPROXTUNE_CUT_SHORT()") {
		t.Errorf("program --check of iterate.c, which asks to be cut short: exit %d\n%s%s", code, stdout, stderr)
	}
}

// A program that never calls MPI, and a statically linked one, are refused
// with what to do.
func TestProgramCheckRefuses(t *testing.T) {
	cc := testenv.Tool(t, "gcc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	src := filepath.Join(t.TempDir(), "plain.c")
	if err := os.WriteFile(src, []byte("#include <stdio.h>\nint main(void) { puts(\"no MPI here\"); return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"no MPI", nil, "never reached MPI_Finalize"},
		{"static", []string{"-static"}, "is statically linked"},
	} {
		prog := compile(t, cc, src, c.flags...)
		_, stderr, code := runCheck(t, bin, lib, prog)
		if code != 1 || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want 1 and a refusal saying %q", c.name, code, stderr, c.want)
		}
	}
}

// runCheck runs `approxtune program --check` with args, with the preload
// library lib, and returns its output and exit status.
func runCheck(t *testing.T, bin, lib string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"program", "--check"}, args...)...)
	cmd.Env = append(os.Environ(), preload.EnvLib+"="+lib)
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("approxtune program --check %v: timed out\n%s%s", args, so.String(), se.String())
	}
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("approxtune program --check: %v", err)
	}
	return so.String(), se.String(), code
}

// A launch of an unmodified program with the preload library and
// $APPROXTUNE_RUN is a selective run through the engine: at tolerance 0
// every modelled call of the region the program marks (dgemm_,
// cblas_dgemm, and the broadcasts along a communicator the program split
// off; not the set-up's dgemm_ before approxtune_begin) executes and the
// program computes what it computes alone; at a loose tolerance kernels and collectives are
// skipped and every rank still completes. Apriori's counting launch, a
// skeleton, executes no dgemm (the broadcast and allreduce, within the
// eager limit, always run) and leaves every rank the same critical-path counts,
// which its selective launch reads; without them (none named, missing or
// corrupt) the selective launch stops with what is wrong.
func TestProgramSelectiveRun(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	lib := buildPreload(t)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "iterate.c"), "-I"+filepath.Join(testenv.Root(t), "include"), "-lopenblas")
	const ranks, iter = 4, 30
	calls := int64(ranks * iter * (4 + 2 + 1 + 1)) // per step: 4 dgemm_, 2 cblas_dgemm, a bcast, an allreduce
	alone := testenv.MPIRun(t, 2*time.Minute, ranks, nil, "", prog, strconv.Itoa(iter))
	if alone.ExitCode != 0 || !strings.HasPrefix(alone.Stdout, "checksum ") {
		t.Fatalf("the program alone: exit %d\n%s%s", alone.ExitCode, alone.Stdout, alone.Stderr)
	}
	launch := func(n, iter int, cfg preload.Run) (string, testenv.Result) {
		t.Helper()
		cfg.Out = filepath.Join(t.TempDir(), "result.json")
		b, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return cfg.Out, testenv.MPIRun(t, 2*time.Minute, n, []string{"LD_PRELOAD=" + lib, preload.EnvRun + "=" + string(b)}, "", prog, strconv.Itoa(iter))
	}
	selective := func(cfg preload.Run) (sweep.Result, testenv.Result) {
		t.Helper()
		out, r := launch(ranks, iter, cfg)
		var res sweep.Result
		if b, err := os.ReadFile(out); err != nil || json.Unmarshal(resultLine(b), &res) != nil || res.Executed == nil {
			t.Fatalf("%s at %g (counting %v): no result (%v); exit %d\n%s%s", cfg.Policy, cfg.Tolerance, cfg.Counting, err, r.ExitCode, r.Stdout, r.Stderr)
		}
		return res, r
	}
	for _, pol := range []string{"conditional", "eager", "apriori"} {
		counts := ""
		if pol == "apriori" {
			counts = filepath.Join(t.TempDir(), "counts")
		}
		for _, tol := range []float64{0, 0.5} {
			if counts != "" {
				res, r := selective(preload.Run{Policy: pol, Tolerance: tol, Counting: true, Counts: counts})
				comm := int64(ranks * iter * 2)
				if r.ExitCode != 0 || *res.Executed != comm || *res.Skipped != calls-comm || !(*res.SelectiveS > 0) {
					t.Errorf("%s's counting run at %g: exit %d, executed %d skipped %d in %v s; want 0, %d (the bcast and allreduce) and %d",
						pol, tol, r.ExitCode, *res.Executed, *res.Skipped, *res.SelectiveS, comm, calls-comm)
				}
				checkCounts(t, counts, ranks, 4*iter)
			}
			res, r := selective(preload.Run{Policy: pol, Tolerance: tol, Counts: counts})
			if tol == 0 {
				if *res.Executed != calls || *res.Skipped != 0 || r.Stdout != alone.Stdout {
					t.Errorf("%s at 0: executed %d skipped %d, output %q; want %d, 0 and the program's own %q", pol, *res.Executed, *res.Skipped, r.Stdout, calls, alone.Stdout)
				}
				if !(*res.PredictedS > 0) || !(*res.SelectiveS > 0) {
					t.Errorf("%s at 0: predicted %v s, run %v s", pol, *res.PredictedS, *res.SelectiveS)
				}
				continue
			}
			if r.ExitCode != 0 || *res.Skipped == 0 || *res.Executed+*res.Skipped != calls {
				t.Errorf("%s at 0.5: exit %d, executed %d skipped %d; want 0, some skipped, %d calls in all", pol, r.ExitCode, *res.Executed, *res.Skipped, calls)
			}
		}
	}
	corrupt := filepath.Join(t.TempDir(), "corrupt")
	for rank := range 2 {
		if err := os.WriteFile(fmt.Sprintf("%s.%d", corrupt, rank), []byte("{\"counts\": [{\"hash\": 1, \"count\": "), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ name, counts, want string }{
		{"no counts named", "", `has no "counts" files`},
		{"counts missing", filepath.Join(t.TempDir(), "missing"), "no such file or directory (its counting launch writes them)"},
		{"counts corrupt", corrupt, "critical-path counts: unexpected end of JSON input"},
	} {
		out, r := launch(2, 2, preload.Run{Policy: "apriori", Tolerance: 0.5, Counts: c.counts})
		_, err := os.Stat(out)
		if r.ExitCode == 0 || err == nil || !strings.Contains(r.Stderr, c.want) {
			t.Errorf("apriori, %s: exit %d, result file %v, stderr %q; want a failure saying %q", c.name, r.ExitCode, err, r.Stderr, c.want)
		}
	}
}

// checkCounts checks the critical-path counts a counting run wrote: one file
// per rank, the same on every rank, the most frequent kernel counted most
// times.
func checkCounts(t *testing.T, prefix string, ranks, most int) {
	t.Helper()
	var first []byte
	for rank := range ranks {
		b, err := os.ReadFile(fmt.Sprintf("%s.%d", prefix, rank))
		if err != nil {
			t.Fatalf("counting run: %v", err)
		}
		if rank == 0 {
			first = b
		} else if !bytes.Equal(b, first) {
			t.Errorf("counting run: rank %d's counts %s differ from rank 0's %s", rank, b, first)
		}
	}
	var c struct {
		Counts []struct {
			Hash  uint64
			Count float64
		}
	}
	if err := json.Unmarshal(first, &c); err != nil {
		t.Fatalf("counting run: counts %s: %v", first, err)
	}
	top := 0.0
	for _, k := range c.Counts {
		top = max(top, k.Count)
	}
	if top != float64(most) {
		t.Errorf("counting run: counts %s, want the most counted kernel at %d", first, most)
	}
}

// Each column-major routine the engine runs for a program (dgemm_, dsyrk_,
// dtrsm_, dtrmm_, dpotrf_, dtrtri_, with both triangles, sides and
// transposes) is handed to the program's own BLAS as it came: at tolerance
// 0 the program prints exactly what it prints alone.
func TestProgramKernelsMapped(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	lib := buildPreload(t)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "kernels.c"), "-lopenblas")
	alone := testenv.MPIRun(t, time.Minute, 1, nil, "", prog)
	out := filepath.Join(t.TempDir(), "result.json")
	cfg := fmt.Sprintf(`{"policy":"conditional","tolerance":0,"out":%q}`, out)
	r := testenv.MPIRun(t, time.Minute, 1, []string{"LD_PRELOAD=" + lib, preload.EnvRun + "=" + cfg}, "", prog)
	if alone.ExitCode != 0 || r.ExitCode != 0 || r.Stdout != alone.Stdout {
		t.Fatalf("through the engine (exit %d):\n%s\nalone (exit %d):\n%s%s", r.ExitCode, r.Stdout, alone.ExitCode, alone.Stdout, r.Stderr)
	}
	var res sweep.Result
	if b, err := os.ReadFile(out); err != nil || json.Unmarshal(resultLine(b), &res) != nil || res.Executed == nil || *res.Executed != 10 {
		t.Fatalf("result %s: %v, want 10 kernels executed", out, err)
	}
}

// approxtune program --sweep tunes a program as a workload: each run a
// launch in a directory holding the deck written from its template, the
// references timed by the library, the selective runs through the engine,
// and the same result and summary events as the agent's sweeps.
func TestProgramSweep(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	dir := t.TempDir()
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "iterate.c"), "-I"+filepath.Join(testenv.Root(t), "include"), "-lopenblas")
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("iterate.template", "{iter} {n}\n")
	// The deck, not the command line, sets ITER: the counts below come out
	// only if the deck was written and read.
	spec := write("sweep.json", fmt.Sprintf(`{"program": {"command": [%q, "99"], "decks": {"iterate.dat": "iterate.template"}},
 "space": {"iter": [10], "n": [48, 64], "ranks": [2]},
 "policies": ["conditional"], "tolerances": [0, "2^-1"], "mode": "evaluate", "reference_reps": 2}`, prog))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "program", "--sweep", spec)
	cmd.Env = append(os.Environ(), preload.EnvLib+"="+lib)
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Run(); err != nil {
		t.Fatalf("program --sweep: %v\n%s", err, se.String())
	}
	var results []sweep.Result
	var summaries []sweep.Summary
	for _, line := range strings.Split(strings.TrimSpace(so.String()), "\n") {
		var head struct{ Type string }
		if err := json.Unmarshal([]byte(line), &head); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		switch head.Type {
		case sweep.TypeResult:
			var r sweep.Result
			_ = json.Unmarshal([]byte(line), &r)
			results = append(results, r)
		case sweep.TypeSummary:
			var s sweep.Summary
			_ = json.Unmarshal([]byte(line), &s)
			summaries = append(summaries, s)
		}
	}
	if len(results) != 4 || len(summaries) != 2 {
		t.Fatalf("%d results and %d summaries, want 4 and 2:\n%s", len(results), len(summaries), so.String())
	}
	const calls = 2 * 10 * 8 // ranks x ITER x modelled calls per step
	for _, r := range results {
		if len(r.ReferenceS) != 2 || r.Error == nil || r.LaunchS == nil || !(*r.LaunchS > 0) || r.Executed == nil {
			t.Fatalf("result %+v: want 2 references, an error and the launch time", r)
		}
		if n := *r.Executed + *r.Skipped; n != calls {
			t.Errorf("config %d %s at %v: %d calls, want %d (ITER from the deck)", r.Index, r.Policy, *r.Tolerance, n, calls)
		}
		if *r.Tolerance == 0 && *r.Skipped != 0 {
			t.Errorf("config %d at 0: %d skipped", r.Index, *r.Skipped)
		}
	}
	for _, s := range summaries {
		if !(s.Speedup > 0) || s.MeanError == nil || s.Chosen == nil || s.Best == nil {
			t.Errorf("summary %+v: want speed-up, error, chosen and best", s)
		}
	}
	bad := write("bad.json", fmt.Sprintf(`{"program": {"command": [%q, "{nb}"]}, "space": {"n": [1], "ranks": [2]}}`, prog))
	out, err := exec.CommandContext(ctx, bin, "program", "--sweep", bad).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "{nb} in the command is not a parameter of the space: want one of {n}, {ranks}") {
		t.Errorf("a placeholder the space lacks: %v\n%s", err, out)
	}
}

// Communicators of the same shape that ranks belong to unequally (a chain
// of pair communicators: the middle ranks are in two, the ends in one)
// agree on which collectives exchange records: every selective run had
// hung, the middle ranks reducing without records where the ends waited
// for them.
func TestProgramPairCommunicators(t *testing.T) {
	so, se, err := sweepProgram(t, "pairs.c", `"command": [%q, "{steps}"]}, "space": {"steps": [40, 60], "ranks": [4]},
 "policies": ["conditional", "eager"]`)
	if err != nil {
		t.Fatalf("program --sweep (hung if killed): %v\n%s", err, se)
	}
	if n := strings.Count(so, `"type":"result"`); n != 4 {
		t.Errorf("%d results, want 4:\n%s\n%s", n, so, se)
	}
	// Rank 1 reduces over {0,1} and {1,2}: 1 and 3 a step, 4 x 60.
	if !strings.Contains(se, "rank 1 sum 240") {
		t.Errorf("no run printed rank 1's sum over 60 steps:\n%s", se)
	}
}

// A program that frees an active receive request (MPI allows it; the
// message still arrives) runs: the library completed the request to take
// its record, then freed the null request the wait left, an error MPI
// aborts on, and every launch failed, the full runs too.
func TestProgramFreesActiveReceive(t *testing.T) {
	so, se, err := sweepProgram(t, "rfree.c", `"command": [%q, "20"]}, "space": {"ranks": [2]}, "policies": ["conditional"]`)
	if err != nil || strings.Count(so, `"type":"result"`) != 1 || strings.Contains(se, "MPI_ERR_REQUEST") {
		t.Fatalf("program --sweep: %v; want one result\n%s\n%s", err, so, se)
	}
}

// A receive into a buffer larger than its messages (an upper bound, the
// size read from the status) is the kernel of the message it got, as its
// send is: keyed by its buffer, messages of 8192 and of 2048 doubles had
// shared one receive kernel of 16384 doubles, their times mixed. The
// program checks every status's count, skipped messages' included.
func TestProgramReceiveKeyedByMessage(t *testing.T) {
	so, se, err := sweepProgram(t, "upper.c", `"command": [%q, "40"]}, "space": {"ranks": [2]}, "policies": ["conditional"]`)
	if err != nil {
		t.Fatalf("program --sweep: %v\n%s\n%s", err, so, se)
	}
	recvs := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(so), "\n") {
		var k sweep.KernelsEvent
		if json.Unmarshal([]byte(line), &k) != nil || k.Type != sweep.TypeKernels {
			continue
		}
		for _, st := range k.Kernels {
			if st.Routine == "recv" {
				recvs[strings.SplitN(st.Key, " on ", 2)[0]] = true
			}
		}
	}
	if want := map[string]bool{"recv 8192 doubles": true, "recv 2048 doubles": true}; !maps.Equal(recvs, want) {
		t.Errorf("receive kernels %v, want %v\n%s", recvs, want, se)
	}
}

// Receives of one source and tag completed out of their posting order each
// take their own message's record: the program checks every status's count
// and exits 1 on a wrong one. Taken in completion order, the second
// receive had been given the first message's (its 8192 doubles, skipped)
// and the first none, and every selective launch failed once the large
// message was skipped.
func TestProgramReceivesCompletedOutOfOrder(t *testing.T) {
	so, se, err := sweepProgram(t, "order.c", `"command": [%q, "400"]}, "space": {"ranks": [2]}, "policies": ["conditional", "eager"]`)
	if err != nil || strings.Count(so, `"type":"result"`) != 2 {
		t.Fatalf("program --sweep: %v; want two results\n%s\n%s", err, so, se)
	}
	skipped := int64(0)
	for _, line := range strings.Split(strings.TrimSpace(so), "\n") {
		var r sweep.Result
		if json.Unmarshal([]byte(line), &r) == nil && r.Type == sweep.TypeResult && r.Skipped != nil {
			skipped += *r.Skipped
		}
	}
	if skipped == 0 {
		t.Errorf("no call was skipped: the test shows nothing\n%s", so)
	}
}

// A receive the program cancels is given no record ahead of its
// completion: it matched no message, and taking one for it (as for a
// receive posted before another of its source and tag) had taken the
// later receive's, which then waited for ever (a code review).
func TestProgramCancelledReceive(t *testing.T) {
	so, se, err := sweepProgram(t, "cancel.c", `"command": [%q, "20"]}, "space": {"ranks": [2]}, "policies": ["conditional", "eager"]`)
	if err != nil || strings.Count(so, `"type":"result"`) != 2 {
		t.Fatalf("program --sweep: %v; want two results\n%s\n%s", err, so, se)
	}
}

// sweepProgram compiles testdata/program/src and runs 'program --sweep'
// over it, spec being the spec's text from the program's command on, %q
// where the executable goes; at 2^-1, evaluate mode, one reference each.
// It returns the sweep's events, its standard error (with the program's
// output) and how it ended; a sweep past 90 s is killed.
func sweepProgram(t *testing.T, src, spec string, flags ...string) (string, string, error) {
	t.Helper()
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", src), append([]string{"-I" + filepath.Join(testenv.Root(t), "include")}, flags...)...)
	path := filepath.Join(t.TempDir(), "spec.json")
	text := `{"program": {` + fmt.Sprintf(spec, prog) + `, "tolerances": ["2^-1"], "mode": "evaluate", "reference_reps": 1}`
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "program", "--sweep", path)
	cmd.Env = append(os.Environ(), preload.EnvLib+"="+lib)
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	return so.String(), se.String(), err
}

// Each launch of a configuration runs in a fresh directory holding the
// decks: a program that appends to a file of its own finds only its own
// line there. A parameter of the space that the program never sees is
// noted. The launches had shared the configuration's directory, and
// hpcc's hpccoutf.txt held the earlier launches' output too (a review).
func TestProgramLaunchesFreshDirectory(t *testing.T) {
	tmpl := filepath.Join(t.TempDir(), "in.template")
	if err := os.WriteFile(tmpl, []byte("steps {steps}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	so, se, err := sweepProgram(t, "appends.c", `"command": [%q], "decks": {"in.txt": "`+tmpl+`"}}, "space": {"steps": [3], "q": [1], "ranks": [2]}, "policies": ["conditional", "eager"]`)
	if err != nil || strings.Count(so, `"type":"result"`) != 2 {
		t.Fatalf("program --sweep: %v; want two results\n%s\n%s", err, so, se)
	}
	// A parameter the program never sees is noted, as the REPL's 'space'
	// notes it (a review's "q": [1] had run unremarked).
	if !strings.Contains(se, "approxtune program: note: q appears in no argument or deck of the program") {
		t.Errorf("no note of the unused parameter q:\n%s", se)
	}
	if n := strings.Count(se, "lines 1, deck steps 3\n"); n != 3 || strings.Contains(se, "lines 2") {
		t.Errorf("%d launches found out.txt with their own line alone and the deck, want 3 (a reference, two selective runs):\n%s", n, se)
	}
}

// In a program sweep, apriori's selective run is two launches, as it is
// two runs in the agent: a counting launch (a skeleton), then the
// selective launch that reads its counts. Its result's time is both timed
// regions (each at least the program's sleep, so at least twice it, about
// twice conditional's one region), its launch time both launches'.
func TestProgramAprioriSweep(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "iterate.c"), "-I"+filepath.Join(testenv.Root(t), "include"), "-lopenblas")
	const iter, napS = 10, 0.005 // each step sleeps napS: a region lasts at least iter·napS
	spec := filepath.Join(t.TempDir(), "apriori.json")
	if err := os.WriteFile(spec, []byte(fmt.Sprintf(`{"program": {"command": [%q, "%d", "48", "%d"]},
 "space": {"ranks": [2]}, "policies": ["apriori", "conditional"], "tolerances": [0, "2^-1"], "mode": "evaluate", "reference_reps": 1}`,
		prog, iter, int(napS*1e6))), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "program", "--sweep", spec)
	cmd.Env = append(os.Environ(), preload.EnvLib+"="+lib)
	var se strings.Builder
	cmd.Stderr = &se
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("program --sweep: %v\n%s", err, se.String())
	}
	// Every launch prints a checksum: the reference, apriori's counting and
	// selective launches at both tolerances, conditional's two.
	if n := strings.Count(se.String(), "checksum "); n != 1+2*2+2 {
		t.Errorf("%d launches, want 7:\n%s", n, se.String())
	}
	results := map[string]sweep.Result{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r sweep.Result
		if json.Unmarshal([]byte(line), &r) == nil && r.Type == sweep.TypeResult {
			results[fmt.Sprintf("%s %g", r.Policy, *r.Tolerance)] = r
		}
	}
	const calls = 2 * iter * 8 // ranks x ITER x modelled calls per step
	a0, a1, c0 := results["apriori 0"], results["apriori 0.5"], results["conditional 0"]
	if len(results) != 4 || a0.Executed == nil || a1.Executed == nil || c0.Executed == nil {
		t.Fatalf("results %v, want apriori and conditional at 0 and 2^-1:\n%s", results, out)
	}
	if *a0.Executed != calls || *a0.Skipped != 0 || *a1.Skipped == 0 || *a1.Executed+*a1.Skipped != calls {
		t.Errorf("apriori: executed %d skipped %d at 0, %d and %d at 2^-1; want %d and 0, then some skipped of %d",
			*a0.Executed, *a0.Skipped, *a1.Executed, *a1.Skipped, calls, calls)
	}
	for _, r := range []sweep.Result{a0, a1} {
		if r.CountingS == nil || *r.CountingS < iter*napS || !(*r.CountingS < *r.SelectiveS) {
			t.Errorf("apriori at %g: counting launch's region %v s of %v s; want at least %v s and a part", *r.Tolerance, r.CountingS, *r.SelectiveS, iter*napS)
		}
		if *r.SelectiveS < 2*iter*napS || !(*r.PredictedS < *r.SelectiveS) {
			t.Errorf("apriori at %g: run %v s, predicted %v s; want the counting and selective regions, at least %v s, above the prediction",
				*r.Tolerance, *r.SelectiveS, *r.PredictedS, 2*iter*napS)
		}
	}
	// Its two regions are in its time (checked above against the naps,
	// which no load shortens); its two launches cost more than one. A
	// ratio of the regions' times to conditional's failed once in CI: a
	// loaded machine stretched conditional's one region by half.
	if !(*a0.LaunchS > *c0.LaunchS) {
		t.Errorf("at 0: apriori's launches %v s, conditional's %v s; want apriori's two more than conditional's one", *a0.LaunchS, *c0.LaunchS)
	}
}

// fortran.f90's output on 2 ranks, and the calls its ranks make through
// the engine: 4 broadcasts, 2 allreduces and a barrier each.
const (
	fortranOutput = "sum    2.0\nin place    3.0\nsplit    2.0\n"
	fortranCalls  = 14
)

// A Fortran program's MPI calls (mpif.h), which Open MPI's Fortran layer
// makes through PMPI_* past the C interposers, are counted through the
// Fortran entry points, once each; its broadcasts, allreduces (one with
// MPI_IN_PLACE, which must reach MPI as C's) and barrier go through the
// engine in a selective run, a communicator split from Fortran is the
// engine's too (the broadcast on it is modelled), and MPI_Init and
// MPI_Finalize still start and end it.
func TestProgramFortran(t *testing.T) {
	mpifort := testenv.Tool(t, "mpifort")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	prog := compile(t, mpifort, filepath.Join("testdata", "program", "fortran.f90"), "-fallow-argument-mismatch")
	stdout, stderr, code := runCheck(t, bin, lib, "--ranks", "2", prog)
	if code != 0 {
		t.Fatalf("program --check: exit %d\n%s%s", code, stdout, stderr)
	}
	for name, want := range map[string]string{"MPI_Bcast": "8", "MPI_Allreduce": "4", "MPI_Barrier": "2", "MPI_Comm_split": "2", "MPI_Comm_free": "2"} {
		if !regexp.MustCompile(`(?m)^\s*` + name + `\s+` + want + `\s`).MatchString(stdout) {
			t.Errorf("%s: want %s calls over 2 ranks in\n%s", name, want, stdout)
		}
	}
	for _, tol := range []float64{0, 0.5} {
		out := filepath.Join(t.TempDir(), "result.json")
		cfg := fmt.Sprintf(`{"policy":"conditional","tolerance":%g,"out":%q}`, tol, out)
		r := testenv.MPIRun(t, time.Minute, 2, []string{"LD_PRELOAD=" + lib, preload.EnvRun + "=" + cfg}, "", prog)
		var res sweep.Result
		if b, err := os.ReadFile(out); err != nil || json.Unmarshal(resultLine(b), &res) != nil || res.Executed == nil || *res.Executed != fortranCalls {
			t.Fatalf("selective run at %g: exit %d, result %s (%v), want %d executed (every message is within the eager limit)\n%s%s", tol, r.ExitCode, out, err, fortranCalls, r.Stdout, r.Stderr)
		}
		if r.Stdout != fortranOutput {
			t.Errorf("at %g, the program's output changed: %q, want %q", tol, r.Stdout, fortranOutput)
		}
	}
}

// A Fortran program marks its timed region and asks whether kernels may be
// skipped through include/approxtune_fortran.c: --check reads the region
// as marked on every rank, a selective launch skips the program's check,
// and without the library the program runs as it is (Fortran cannot
// declare the header's weak symbols; a review's bind(C) interface had
// failed to link).
func TestProgramFortranRegion(t *testing.T) {
	mpifort := testenv.Tool(t, "mpifort")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	inc := filepath.Join(testenv.Root(t), "include")
	prog := compile(t, mpifort, filepath.Join("testdata", "program", "region.f90"), "-I"+inc, filepath.Join(inc, "approxtune_fortran.c"))
	stdout, stderr, code := runCheck(t, bin, lib, "--ranks", "2", prog)
	if code != 0 || !strings.Contains(stdout, "timed: the region from approxtune_begin to approxtune_end, marked on every rank") {
		t.Fatalf("program --check: exit %d, want the region marked on every rank\n%s%s", code, stdout, stderr)
	}
	// The binding imports approxtune_cut_short whether the program calls
	// it or not: the check cannot tell, and says so (it had said the
	// program called it).
	if !strings.Contains(stdout, "searches: it links include/approxtune_fortran.c, so whether it calls approxtune_cut_short() cannot be told here") {
		t.Errorf("program --check of a Fortran program with the binding: want the searches line to say it cannot tell\n%s", stdout)
	}
	if r := testenv.MPIRun(t, time.Minute, 2, nil, "", prog); r.ExitCode != 0 || r.Stdout != "sum    2.0\n" {
		t.Errorf("without the library: exit %d, %q, want the check's sum\n%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	out := filepath.Join(t.TempDir(), "result.json")
	cfg := fmt.Sprintf(`{"policy":"conditional","tolerance":0.5,"out":%q}`, out)
	r := testenv.MPIRun(t, time.Minute, 2, []string{"LD_PRELOAD=" + lib, preload.EnvRun + "=" + cfg}, "", prog)
	if r.ExitCode != 0 || r.Stdout != "check skipped\n" {
		t.Errorf("a selective launch: exit %d, %q, want the check skipped\n%s", r.ExitCode, r.Stdout, r.Stderr)
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("a selective launch wrote no result: %v", err)
	}
}

// A program using Fortran's mpi_f08 module is refused before it is
// launched, with a message that names the module and what to use instead:
// its MPI_Init and MPI_Finalize reach MPI past the library, and the check
// had said only that it never reached MPI_Finalize through the library.
func TestProgramF08Refused(t *testing.T) {
	mpifort := testenv.Tool(t, "mpifort")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	prog := compile(t, mpifort, filepath.Join("testdata", "program", "f08.f90"))
	stdout, stderr, code := runCheck(t, bin, lib, "--ranks", "2", prog)
	if code == 0 || !strings.Contains(stderr, "calls MPI through Fortran's mpi_f08 module") || !strings.Contains(stderr, "build it with `use mpi`") || strings.Contains(stdout, "sum ") {
		t.Errorf("program --check of an mpi_f08 program: exit %d; want a refusal before launching that names mpi_f08 and `use mpi`\n%s%s", code, stdout, stderr)
	}
}

// A program built with MPICH's mpicc, tuned with the library built for Open
// MPI (the default), is refused before it is launched, with both MPI
// libraries named and the two ways out: launched, it had failed inside
// MPICH with "Invalid communicator" (a review's program).
func TestProgramOtherMPIRefused(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc.mpich")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "exchange.c"), "-lopenblas")
	stdout, stderr, code := runCheck(t, bin, lib, "--ranks", "2", prog, "2", "64")
	if code == 0 || !strings.Contains(stderr, "links MPICH (libmpi") || !strings.Contains(stderr, "was built for Open MPI (libmpi.so.40)") ||
		!strings.Contains(stderr, "-tags mpich,noopenblas") || strings.Contains(stdout, "integers intact") {
		t.Errorf("program --check of an MPICH program with the Open MPI library: exit %d; want a refusal before launching that names both MPIs\n%s%s", code, stdout, stderr)
	}
}

// In the REPL, 'program' makes the user's program the workload: evaluate
// launches it for every run, journals the results and prints the same
// tables as for a built-in workload, its kernels' statistics too.
func TestProgramREPL(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	t.Setenv(preload.EnvLib, lib)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "iterate.c"), "-I"+filepath.Join(testenv.Root(t), "include"), "-lopenblas")
	tmpl := filepath.Join(t.TempDir(), "iterate.template")
	if err := os.WriteFile(tmpl, []byte("{iter} {n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`program %s 99 deck iterate.dat=%s
space iter=10 n=48,64 ranks=2
policy conditional,eager
tolerance 0,2^-1
reps 2
evaluate
table best
table kernels
`, prog, tmpl)
	out, errs, code := runScript(t, bin, script)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{"evaluate program, 8 of 8 runs (ok)", "policy  tolerance  speed-up  mean error  max error  quality",
		"conditional       2^-1", "eager          0", "best configuration (least reference time): iter=10 n=", "kernels of configuration 1", "gemm[NN] 64x64x64",
		"with each launch's start and end counted (about "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// resultLine is a run's result: the first line the library wrote (the
// kernel statistics follow).
func resultLine(b []byte) []byte {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return line
}

// A selective run that exits non-zero is told of and has no result; the
// sweep goes on with the next runs and ends failed, saying how many runs
// failed (it ended "ok", with no end line, when every one had failed).
func TestProgramSelectiveFailureRecorded(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	t.Setenv(preload.EnvLib, lib)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "fails.c"))
	out, errs, code := runScript(t, bin, fmt.Sprintf("program %s\nspace x=1,2 ranks=2\npolicy conditional\ntolerance 2^-1\nreps 1\nevaluate\ntable configs\n", prog))
	if code == 0 || !strings.Contains(errs, "sweep 1 failed: 2 selective runs failed (each told above) and have no result; 'resume' tries them again") {
		t.Fatalf("exit %d; want a failure that counts the runs that failed\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{
		"a selective run failed and has no result ('resume' tries it again): configuration 0 (ranks=2 x=1): conditional at 2^-1: fails exited: exit status 3",
		"a selective run failed and has no result ('resume' tries it again): configuration 1 (ranks=2 x=2)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// A program that sends the index it computes with inside floating-point
// data (packed.c, as HPL sends each swapped row's index with the row)
// reads a stale one once eager skips the message, and stops: the error
// event says what to try. With "messages": "run" every message runs, the
// kernels alone are skipped, and the program ends well. hpcc's eager
// launches had crashed (a segmentation fault in HPL_dlaswp03T, writing
// through a stale row index, or MPI_ERR_TRUNCATE), with nothing said.
func TestProgramStaleMessages(t *testing.T) {
	const spec = `"command": [%q, "2000", "8192"]}, "space": {"ranks": [2]}, "policies": ["eager"], "messages": `
	so, se, err := sweepProgram(t, "packed.c", spec+`"skip"`, "-lopenblas")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(so, `the message's index is`) ||
		!strings.Contains(so, `'messages run' (spec \"messages\": \"run\") runs every message and skips kernels alone`) {
		t.Fatalf("messages skipped: %v; want the launch stopped on a stale index, and the hint\n%s\n%s", err, so, se)
	}
	so, se, err = sweepProgram(t, "packed.c", spec+`"run"`, "-lopenblas")
	if err != nil || strings.Contains(so, `"type":"error"`) {
		t.Fatalf("messages run: %v\n%s\n%s", err, so, se)
	}
	var res sweep.Result
	var sent *sweep.KernelStat
	for _, l := range strings.Split(so, "\n") {
		switch {
		case strings.Contains(l, `"type":"result"`):
			if err := json.Unmarshal([]byte(l), &res); err != nil {
				t.Fatal(err)
			}
		case strings.Contains(l, `"type":"kernels"`):
			var k sweep.KernelsEvent
			if err := json.Unmarshal([]byte(l), &k); err != nil {
				t.Fatal(err)
			}
			for i, s := range k.Kernels {
				if s.Routine == "send" && k.Rank == 0 {
					sent = &k.Kernels[i]
				}
			}
		}
	}
	skipped := int64(0)
	if res.Skipped != nil {
		skipped = *res.Skipped
	}
	if skipped == 0 || sent == nil || sent.Calls != 2000 || sent.Skipped != 0 {
		t.Errorf("messages run: %d calls skipped, rank 0's send %+v; want kernels skipped and the 2000 sends run\n%s", skipped, sent, so)
	}
}

// 'program --sweep' ends with exit status 1 when selective runs failed, as
// the REPL's sweep ends failed: 3 of 4 configurations crashed had ended
// with 0 and a choice among the one left (a ScaLAPACK review).
func TestProgramSweepSelectiveFailureExit(t *testing.T) {
	so, se, err := sweepProgram(t, "fails.c", `"command": [%q, "{x}"]}, "space": {"x": [1, 2], "ranks": [2]}, "policies": ["conditional"]`)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(se, "2 selective runs failed and have no result (their error events are on standard output)") ||
		strings.Count(so, `"type":"error"`) != 2 {
		t.Fatalf("program --sweep with failing selective runs: %v\n%s\n%s", err, so, se)
	}
	// Each failure carries its configuration's full runs, which no result
	// carries here: they had been lost.
	for _, l := range strings.Split(so, "\n") {
		if !strings.Contains(l, `"type":"error"`) {
			continue
		}
		var ev sweep.ErrorEvent
		if err := json.Unmarshal([]byte(l), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Index == nil || len(ev.ReferenceS) != 1 || !strings.Contains(ev.Message, "the configuration's full runs: ") {
			t.Errorf("a failed run's error event without its configuration's full runs: %s", l)
		}
	}
}

// A program whose selective run deadlocks is stopped at the deadline, as
// an agent's run is: the sweep ends hung, naming the configuration and the
// run, and the launch is taken down (before, the sweep waited for ever).
func TestProgramHungRunStopped(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	t.Setenv(preload.EnvLib, lib)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "hangs.c"))
	t0 := time.Now()
	out, errs, code := runScript(t, bin, fmt.Sprintf("program %s {x}\nspace x=1,2 ranks=2\npolicy conditional\ntolerance 2^-1\nreps 1\nevaluate\n", prog))
	took := time.Since(t0)
	if code == 0 || took > time.Minute {
		t.Fatalf("exit %d after %v; want a failure within a minute\n%s\n%s", code, took, out, errs)
	}
	for _, want := range []string{"a run of configuration 0 has not ended after", "sweep 1 hung after",
		"configuration 0 (ranks=2 x=1) made no progress in a selective run (conditional at 2^-1)", "the program's launch was stopped",
		"'resume' retries the rest, 'resume hung=skip'"} {
		if !strings.Contains(out+errs, want) {
			t.Errorf("output lacks %q:\n%s\n%s", want, out, errs)
		}
	}
	if out, _ := exec.Command("pgrep", "-f", prog).Output(); len(out) > 0 {
		time.Sleep(5 * time.Second) // mpirun takes its ranks down after a moment
		if out, _ := exec.Command("pgrep", "-af", prog).Output(); len(out) > 0 {
			t.Errorf("ranks of the hung launch still run:\n%s", out)
		}
	}
}

// 'program --sweep' stops a launch that hangs, as the REPL does: past its
// deadline (by default 10 times its configuration's reference time, at
// least 5 s) the launch is stopped, its ranks with it, and the sweep ends
// with an error that names the configuration. It had waited for ever. With
// two policies the references' slots put a selective launch first, which
// had nothing to scale a deadline by: the sweep's first full run goes
// first.
func TestProgramSweepDeadline(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "hangs.c"))
	spec := filepath.Join(t.TempDir(), "hangs.json")
	if err := os.WriteFile(spec, []byte(fmt.Sprintf(`{"program": {"command": [%q, "{x}"]}, "space": {"x": [1, 2], "ranks": [2]},
 "policies": ["conditional", "eager"], "tolerances": ["2^-1"], "mode": "evaluate", "reference_reps": 1}`, prog)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t0 := time.Now()
	cmd := exec.CommandContext(ctx, bin, "program", "--sweep", spec)
	cmd.Env = append(os.Environ(), preload.EnvLib+"="+lib)
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if took := time.Since(t0); err == nil || took > time.Minute {
		t.Fatalf("program --sweep of a hanging program: %v after %v; want a failure within a minute\n%s", err, took, se.String())
	}
	want := "configuration 0 (ranks=2 x=1) made no progress in a selective launch: it had not ended after "
	if !strings.Contains(se.String(), want) || !strings.Contains(so.String(), `"type":"error"`) {
		t.Errorf("stderr lacks %q, or stdout an error event:\n%s\n%s", want, se.String(), so.String())
	}
	if out, _ := exec.Command("pgrep", "-f", prog).Output(); len(out) > 0 {
		time.Sleep(5 * time.Second)
		if out, _ := exec.Command("pgrep", "-af", prog).Output(); len(out) > 0 {
			t.Errorf("ranks of the hung launch still run:\n%s", out)
		}
	}
	// A bad value is refused, naming the valid ones.
	out, err := exec.Command(bin, "program", "--sweep", spec, "--deadline", "soon").CombinedOutput()
	if err == nil || !strings.Contains(string(out), `--deadline: "soon" is not a deadline: want off, a multiple`) {
		t.Errorf("--deadline soon: %v\n%s", err, out)
	}
	// --deadline off waits, until SIGTERM, which ends the sweep saying so
	// and leaves no temporary folder (killed at once, it had left them).
	tmp := t.TempDir()
	cmd = exec.CommandContext(ctx, bin, "program", "--sweep", spec, "--deadline", "off")
	cmd.Env = append(os.Environ(), preload.EnvLib+"="+lib, "TMPDIR="+tmp)
	var se2 strings.Builder
	cmd.Stderr = &se2
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(8 * time.Second) // into configuration 0's hung selective launch
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err == nil || !strings.Contains(se2.String(), "interrupted: the launch under way was stopped, and the sweep ended") {
		t.Errorf("SIGTERM: %v\n%s", err, se2.String())
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("temporary folders left after SIGTERM: %v", left)
	}
}

// What comes before a program's timed region runs in full in its selective
// launches, as in its reference launch: its set-up's data arrives (eager
// had skipped the set-up's broadcasts from MPI_Init on, the second
// configuration's from the first call, carrying its statistics, and the
// region started without the data and cold).
func TestProgramSetUpRunsInFull(t *testing.T) {
	so, se, err := sweepProgram(t, "setup.c", `"command": [%q, "{steps}"]}, "space": {"steps": [20, 30, 40], "ranks": [2]}, "policies": ["eager"]`)
	if err != nil || strings.Count(so, `"type":"result"`) != 3 {
		t.Fatalf("program --sweep: %v; want 3 results\n%s\n%s", err, so, se)
	}
	if n := strings.Count(se, "set-up arrived"); strings.Contains(se, "set-up lost") || n != 12 {
		t.Errorf("%d of 12 rank launches had their set-up (3 references, 3 selective runs, 2 ranks each):\n%s", n, se)
	}
}

// A region marked wrongly is told of: 'program --check' (which lived
// through it) names what a launch would fail at and exits 1, as it does a
// program calling MPI from a second thread; and a launch whose region is
// marked on rank 0 alone, which hangs, says why in its hung message (a
// user review's launch had hung unsaid, and --check passed it).
func TestProgramRegionMarks(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	t.Setenv(preload.EnvLib, lib)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "marks.c"), "-I"+filepath.Join(testenv.Root(t), "include"))
	threads := compile(t, mpicc, filepath.Join("testdata", "program", "threads.c"), "-lopenblas", "-lpthread")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{prog, "right"}, ""},
		{[]string{prog, "rank0"}, "approxtune_begin was called on 1 of the 2 ranks: mark the region on every rank"},
		{[]string{prog, "twice"}, "approxtune_begin was called more than once on 2 of the 2 ranks"},
		{[]string{prog, "never"}, "the program links approxtune_begin (approxtune.h) but called it on no rank"},
		{[]string{threads, "mpi"}, "MPI_Bcast was called from a thread other than the one that initialized MPI"},
	} {
		out, err := exec.Command(bin, append([]string{"program", "--check", "--ranks", "2"}, tc.args...)...).CombinedOutput()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("--check %s: %v\n%s", tc.args[1], err, out)
		case tc.want != "" && (err == nil || !strings.Contains(string(out), tc.want)):
			t.Errorf("--check %s: %v; want exit 1 and %q\n%s", tc.args[1], err, tc.want, out)
		}
	}
	out, errs, code := runScript(t, bin, fmt.Sprintf("program %s rank0\nspace ranks=2\npolicy conditional\ntolerance 2^-1\nreps 1\ndeadline 8s\nevaluate\n", prog))
	if code == 0 || !strings.Contains(out+errs, "made no progress in a reference run") ||
		!strings.Contains(out+errs, "its last output:") || !strings.Contains(out+errs, "libapproxtune: rank 0 has waited 5s in approxtune_begin for the other ranks") {
		t.Errorf("a region marked on rank 0 alone: exit %d; want a hang that says why\n%s\n%s", code, out, errs)
	}
	// A program that links the marks but makes none in a launch: its
	// selective launch ran in full up to a mark that never came, and
	// says so, failing (the sweep then exits 1).
	so, se, err := sweepProgram(t, "marks.c", `"command": [%q, "never"]}, "space": {"ranks": [2]}, "policies": ["conditional"]`)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(se, "libapproxtune: the program links approxtune_begin (approxtune.h) but did not call it in this launch") {
		t.Errorf("marks never made: %v\n%s\n%s", err, so, se)
	}
}

// A program that makes MPI calls from a second thread cannot be tuned (the
// engine runs on the thread that initialized MPI, and another thread's
// messages unmatch its records: a reviewer's such program was predicted
// 93-97% short, or crashed): its run ends at that call with a message that
// says so. A second thread that only calls BLAS runs as it is.
func TestProgramSecondThread(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	t.Setenv(preload.EnvLib, lib)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "threads.c"), "-lopenblas", "-lpthread")
	out, errs, code := runScript(t, bin, fmt.Sprintf("program %s {use}\nspace use=mpi ranks=2\npolicy conditional\ntolerance 2^-1\nreps 1\nevaluate\n", prog))
	if code == 0 || !strings.Contains(out+errs, "libapproxtune: MPI_Bcast was called from a thread other than the one that initialized MPI") ||
		strings.Count(out+errs, "libapproxtune: MPI_Bcast was called") != 1 {
		t.Errorf("MPI from a second thread: exit %d; want a failure that says why, once\n%s\n%s", code, out, errs)
	}
	out, errs, code = runScript(t, bin, fmt.Sprintf("program %s {use}\nspace use=blas ranks=2\npolicy conditional\ntolerance 2^-1\nreps 1\nevaluate\n", prog))
	if code != 0 || !strings.Contains(out, "evaluate program, 1 of 1 runs (ok)") {
		t.Errorf("BLAS from a second thread: exit %d\n%s\n%s", code, out, errs)
	}
}

// A program whose loop ends when what it computes converges
// (testdata/program/converge.c) makes fewer steps once its dgemm_ is
// skipped: the session compares each launch's calls with the
// configuration's full run and says that its control flow depends on
// computed values. A program that does the same work in every launch
// (iterate.c, under both policies) draws no such warning.
func TestProgramControlFlowWarned(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	t.Setenv(preload.EnvLib, lib)
	const warning = "the program's control flow depends on what it computes"
	conv := compile(t, mpicc, filepath.Join("testdata", "program", "converge.c"), "-lopenblas", "-lm")
	script := fmt.Sprintf("program %s\nspace ranks=2\npolicy conditional\ntolerance 2^-1\nreps 1\nevaluate\n", conv)
	out, errs, code := runScript(t, bin, script)
	if code == 0 && !strings.Contains(out, warning) {
		// A second sweep when the first drew no warning: on a loaded
		// machine one did not (a clean-clone CI run, whose selective run
		// took 9 times its full run's 5.8 ms), where its dgemm_ was not
		// skipped soon enough to change the steps.
		out, errs, code = runScript(t, bin, script)
	}
	if code != 0 || strings.Count(out, warning) != 1 || !regexp.MustCompile(`the full run called \S+ \d+ times over its ranks, conditional at 2\^-1 \d+ times`).MatchString(out) {
		t.Errorf("a loop until convergence: exit %d; want one warning naming the routine and both counts\n%s\n%s", code, out, errs)
	}
	iter := compile(t, mpicc, filepath.Join("testdata", "program", "iterate.c"), "-I"+filepath.Join(testenv.Root(t), "include"), "-lopenblas")
	out, errs, code = runScript(t, bin, fmt.Sprintf("program %s 10 64\nspace ranks=2\npolicy conditional,eager\ntolerance 2^-1\nreps 1\nevaluate\n", iter))
	if code != 0 || strings.Contains(out+errs, warning) || !strings.Contains(out, "2 of 2 runs (ok)") {
		t.Errorf("a fixed iteration count: exit %d; want both runs and no warning\n%s\n%s", code, out, errs)
	}
}

// Eager carries its statistics from one configuration's launch to the
// next, as the agent's eager does from one configuration to the next: in
// its later launches a kernel's samples include those of the launches
// before (more samples than the launch executed), and it executes fewer
// kernels than in its first; conditional starts every launch afresh.
func TestProgramEagerCarries(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "iterate.c"), "-I"+filepath.Join(testenv.Root(t), "include"), "-lopenblas")
	spec := filepath.Join(t.TempDir(), "carry.json")
	if err := os.WriteFile(spec, []byte(fmt.Sprintf(`{"program": {"command": [%q, "20", "64"]},
 "space": {"x": [1, 2, 3], "ranks": [2]}, "policies": ["conditional", "eager"], "tolerances": ["2^-1"], "mode": "tune"}`, prog)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "program", "--sweep", spec)
	cmd.Env = append(os.Environ(), preload.EnvLib+"="+lib)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("program --sweep: %v", err)
	}
	executed := map[string][]int64{}
	carried := map[string][]bool{} // per launch: some kernel has samples from before it
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var head struct{ Type string }
		_ = json.Unmarshal([]byte(line), &head)
		switch head.Type {
		case sweep.TypeResult:
			var r sweep.Result
			_ = json.Unmarshal([]byte(line), &r)
			executed[r.Policy] = append(executed[r.Policy], *r.Executed)
		case sweep.TypeKernels:
			var k sweep.KernelsEvent
			_ = json.Unmarshal([]byte(line), &k)
			before := false
			for _, st := range k.Kernels {
				before = before || st.Count > st.Calls-st.Skipped
			}
			carried[k.Policy] = append(carried[k.Policy], before)
		}
	}
	e, c := executed["eager"], executed["conditional"]
	if len(e) != 3 || len(c) != 3 || !(e[1] < e[0]) || !(e[2] < e[0]) {
		t.Errorf("executed per configuration: eager %v, conditional %v; want eager's later ones under its first", e, c)
	}
	if !slices.Equal(carried["eager"], []bool{false, true, true}) || !slices.Equal(carried["conditional"], []bool{false, false, false}) {
		t.Errorf("launches with samples from before them: eager %v, conditional %v; want eager's second and third only", carried["eager"], carried["conditional"])
	}
}

// The preload library goes into the program's ranks, not into mpirun:
// loaded there, the Go runtime sent itself preemption signals that mpirun
// forwarded to the job ("mpirun: Forwarding signal 23 to job" in a
// program's output). testdata/program/parent.c exits 3 when the process
// that started it has the library loaded; it must pass under
// 'program --check' and as a sweep's launches, while its MPI calls are
// still intercepted (counted by the check).
func TestProgramLibraryInRanksOnly(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "parent.c"))
	stdout, stderr, code := runCheck(t, bin, lib, "--ranks", "2", prog)
	if code != 0 || strings.Count(stdout, "approxtune's library not loaded") != 2 || !regexp.MustCompile(`MPI_Barrier\s+2\s`).MatchString(stdout) {
		t.Errorf("program --check: exit %d; want both ranks' parents without the library and 2 barriers counted\n%s%s", code, stdout, stderr)
	}
	t.Setenv(preload.EnvLib, lib)
	out, errs, code := runScript(t, bin, fmt.Sprintf("program %s\nspace ranks=2\npolicy conditional\ntolerance 2^-1\nreps 1\nevaluate\n", prog))
	if code != 0 || !strings.Contains(out, "1 of 1 runs (ok)") {
		t.Errorf("a sweep of the program: exit %d\n%s\n%s", code, out, errs)
	}
}

// evaluateFlaky evaluates flaky.c on 2 ranks under policies at 2^-1 with
// 2 references, its eager run failing, in a session directory it returns
// with the binary; then it lets eager's runs pass, for a resume.
func evaluateFlaky(t *testing.T, policies string) (bin, dir string) {
	t.Helper()
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	t.Setenv(preload.EnvLib, lib)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "flaky.c"))
	flag := filepath.Join(t.TempDir(), "fail")
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir = filepath.Join(t.TempDir(), "session")
	if out, code := replIn(t, bin, dir, fmt.Sprintf("program %s %s\nspace ranks=2\npolicy %s\ntolerance 2^-1\nreps 2\nevaluate\n", prog, flag, policies)); code == 0 || !strings.Contains(out, "1 selective run failed") {
		t.Fatalf("the sweep with eager failing: exit %d\n%s", code, out)
	}
	os.Remove(flag)
	return bin, dir
}

// A program sweep's configuration whose conditional run has its result
// and whose eager run failed: 'resume' judges the eager run against the
// references the conditional one was judged against, and takes none
// (sweep.Spec.References), so both rows of the configuration have one
// reference.
func TestProgramResumeKeepsReferences(t *testing.T) {
	bin, dir := evaluateFlaky(t, "conditional,eager")
	out, code := replIn(t, bin, dir, "resume\n")
	if code != 0 || !strings.Contains(out, "2 of 2 runs (ok)") {
		t.Fatalf("resume: exit %d\n%s", code, out)
	}
	sws, err := session.ReadJournal(filepath.Join(dir, session.JournalName))
	if err != nil || len(sws) != 1 || len(sws[0].Results) != 2 {
		t.Fatalf("journal: %v, %d sweeps", err, len(sws))
	}
	a, b := sws[0].Results[0], sws[0].Results[1]
	if len(a.ReferenceS) != 2 || !slices.Equal(a.ReferenceS, b.ReferenceS) {
		t.Errorf("%s judged against %v, %s against %v; want the same 2 references", a.Policy, a.ReferenceS, b.Policy, b.ReferenceS)
	}
}

// A configuration whose every selective run failed is resumed against the
// full runs its error events carry: resume had taken them again (a review
// of hpcc), where a configuration's runs are all judged against one set.
func TestProgramResumeKeepsFailedReferences(t *testing.T) {
	bin, dir := evaluateFlaky(t, "eager")
	journal, err := os.ReadFile(filepath.Join(dir, session.JournalName))
	if err != nil {
		t.Fatal(err)
	}
	var failed sweep.ErrorEvent
	for _, l := range strings.Split(string(journal), "\n") {
		if strings.Contains(l, `"type":"error"`) {
			var rec struct{ Event sweep.ErrorEvent } // {"kind": "event", "event": {...}}
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Fatalf("%v: %s", err, l)
			}
			failed = rec.Event
		}
	}
	if len(failed.ReferenceS) != 2 {
		t.Fatalf("the failure's error event: %+v; want the configuration's 2 full runs\n%s", failed, journal)
	}
	if out, code := replIn(t, bin, dir, "resume\n"); code != 0 {
		t.Fatalf("resume: exit %d\n%s", code, out)
	}
	sws, err := session.ReadJournal(filepath.Join(dir, session.JournalName))
	if err != nil || len(sws) != 1 || len(sws[0].Results) != 1 {
		t.Fatalf("journal: %v, %d sweeps", err, len(sws))
	}
	if got := sws[0].Results[0].ReferenceS; !slices.Equal(got, failed.ReferenceS) {
		t.Errorf("the resumed run judged against %v; want the full runs taken before, %v", got, failed.ReferenceS)
	}
}

// A program sweep's eager run that failed at its last configuration is
// resumed with the kernel statistics eager carried from the launches
// before it (sweep.Carried, kept beside the journal, after the last
// configuration with a result: the failed launch's carry none): its kernels have samples from before it, which the
// sweep's first launch, started with none, had not.
func TestProgramResumeCarriesEager(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	t.Setenv(preload.EnvLib, lib)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "iterate.c"), "-I"+filepath.Join(testenv.Root(t), "include"), "-lopenblas")
	flags := t.TempDir()
	if err := os.WriteFile(filepath.Join(flags, "fail-3"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "session")
	repl := func(script string) (string, int) { return replIn(t, bin, dir, script) }
	if out, code := repl(fmt.Sprintf("program %s 20 64 0 %s\nspace x=1,2,3 ranks=2\npolicy eager\ntolerance 2^-1\ntune\n", prog, filepath.Join(flags, "fail-{x}"))); code == 0 || !strings.Contains(out, "1 selective run failed") {
		t.Fatalf("the sweep with eager failing at x=3: exit %d\n%s", code, out)
	}
	os.Remove(filepath.Join(flags, "fail-3"))
	out, code := repl("resume\n")
	if code != 0 || !strings.Contains(out, "3 of 3 runs (ok)") ||
		!strings.Contains(out, "the resumed runs start from the kernel statistics carried from before the stop: eager at 2^-1 (after configuration 1)") {
		t.Fatalf("resume: exit %d\n%s", code, out)
	}
	sws, err := session.ReadJournal(filepath.Join(dir, session.JournalName))
	if err != nil || len(sws) != 1 || len(sws[0].Results) != 3 {
		t.Fatalf("journal: %v, %d sweeps", err, len(sws))
	}
	// As TestProgramEagerCarries reads it: a launch whose kernels have
	// more samples than it executed had samples from before it.
	before := map[int]bool{}
	for _, k := range sws[0].Kernels {
		for _, st := range k.Kernels {
			before[k.Index] = before[k.Index] || st.Count > st.Calls-st.Skipped
		}
	}
	if !before[2] || before[0] {
		t.Errorf("launches with samples from before them, by configuration: %v; want the resumed x=3's and not the first's", before)
	}
}

// A session killed outright (SIGKILL, no chance to clean up) during a
// program's launch takes the launch down: mpirun gets SIGTERM when the
// session's thread that started it dies, and takes its ranks with it. A
// hung launch had run on for ever, re-parented to init.
func TestProgramLaunchDiesWithSession(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "hangs.c"))
	cmd := exec.Command(bin, "repl", "--dir", filepath.Join(t.TempDir(), "s"))
	// Killed outright, the session cannot remove its launch's folders:
	// they go under the test's own, not the system's temporary folder.
	cmd.Env = append(os.Environ(), preload.EnvLib+"="+lib, "TMPDIR="+t.TempDir())
	cmd.Stdin = strings.NewReader(fmt.Sprintf("program %s {x}\nspace x=1 ranks=2\npolicy conditional\ntolerance 2^-1\nreps 1\ndeadline off\nevaluate\n", prog))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer exec.Command("pkill", "-9", "-f", prog).Run()
	running := func() string {
		out, _ := exec.Command("pgrep", "-af", prog).Output()
		return strings.TrimSpace(string(out))
	}
	// The selective run hangs: wait until its launch runs past the
	// reference (a launch of the program that does not end).
	hung := time.Now().Add(time.Minute)
	seen := time.Time{}
	for time.Now().Before(hung) {
		if running() == "" {
			seen = time.Time{}
		} else if seen.IsZero() {
			seen = time.Now()
		} else if time.Since(seen) > 3*time.Second {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if seen.IsZero() || time.Since(seen) < 3*time.Second {
		cmd.Process.Kill()
		t.Fatalf("no launch of the program ran for 3 s within a minute")
	}
	cmd.Process.Kill()
	cmd.Wait()
	gone := time.Now().Add(15 * time.Second)
	for running() != "" && time.Now().Before(gone) {
		time.Sleep(200 * time.Millisecond)
	}
	if ps := running(); ps != "" {
		t.Errorf("15 s after the session was killed, its launch still runs:\n%s", ps)
	}
}

// A configuration whose full run fails every time ends the sweep, and
// every resume, at it: the error says how to go on without it, and
// 'resume skip=N' does, completing the sweep without that configuration.
func TestProgramResumeSkipsFailingConfiguration(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "refails.c"))
	dir := filepath.Join(t.TempDir(), "session")
	t.Setenv(preload.EnvLib, lib)
	repl := func(script string) (string, int) { return replIn(t, bin, dir, script) }
	out, code := repl(fmt.Sprintf("program %s {x}\nspace x=1,2 ranks=2\npolicy conditional\ntolerance 2^-1\nreps 1\nevaluate\n", prog))
	if code == 0 || !strings.Contains(out, "'resume skip=1' goes on without it") {
		t.Fatalf("a configuration whose reference fails: exit %d; want the hint to skip it\n%s", code, out)
	}
	out, code = repl("resume skip=1\n")
	if code != 0 || !strings.Contains(out, "skipping configuration 1") || !strings.Contains(out, "sweep 1 is complete without the configurations skipped") {
		t.Fatalf("resume skip=1: exit %d\n%s", code, out)
	}
	sws, err := session.ReadJournal(filepath.Join(dir, session.JournalName))
	if err != nil || len(sws) != 1 || sws[0].Status != session.StatusOK || len(sws[0].Missing()) != 0 || len(sws[0].Results) != 1 {
		t.Errorf("journal after resume skip=1: %v; want sweep 1 ok with its one result", err)
	}
}

// replIn runs 'approxtune repl' on session directory dir with script on
// standard input, and returns what it wrote (standard output, then error)
// and its exit status.
func replIn(t *testing.T, bin, dir, script string) (string, int) {
	t.Helper()
	out, errs, code := runScriptIn(t, bin, dir, script)
	return out + errs, code
}

// What the check says a launch times follows the marks the check run saw,
// and says nothing where the marks are a problem (Problems tells): a
// program that links approxtune_begin but never called it had been told
// both that its launches fail without the mark and that they are timed
// whole.
func TestRegionLine(t *testing.T) {
	for _, tc := range []struct {
		c    preload.Check
		want string
	}{
		{preload.Check{Ranks: 2}, "timed: each launch whole"},
		{preload.Check{Ranks: 2, Begin: 2, End: 2}, "timed: the region from approxtune_begin to approxtune_end"},
		{preload.Check{Ranks: 2, Begin: 2}, "timed: from approxtune_begin, marked on every rank, to MPI_Finalize"},
		{preload.Check{Ranks: 2, LinksMarks: true}, ""},
		{preload.Check{Ranks: 2, Begin: 1, End: 1}, ""},
		{preload.Check{Ranks: 2, Begin: 2, BeginTwice: 1, End: 2}, ""},
	} {
		got := regionLine(&tc.c)
		if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%+v: %q, want %q", tc.c, got, tc.want)
		}
	}
}
