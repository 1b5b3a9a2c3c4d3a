package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/preload"
	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/sweep"
)

// buildPreload builds the preload library into a temporary directory.
func buildPreload(t *testing.T) string {
	t.Helper()
	lib := filepath.Join(t.TempDir(), preload.LibName)
	cmd := exec.Command("go", "build", "-tags", "noopenblas", "-buildmode=c-shared", "-o", lib, "./cmd/libapproxtune")
	cmd.Dir = testenv.Root(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildmode=c-shared ./cmd/libapproxtune: %v\n%s", err, out)
	}
	return lib
}

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
	want := map[string]int{"dgemm_": 5, "cblas_dgemm": 3, "dpotrf_": 1, "MPI_Bcast": 4, "MPI_Allreduce": 2, "MPI_Barrier": 1}
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
// skipped and every rank still completes. Apriori, which needs a counting
// run first, is refused.
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
	selective := func(pol string, tol float64) (sweep.Result, testenv.Result) {
		t.Helper()
		out := filepath.Join(t.TempDir(), "result.json")
		cfg := fmt.Sprintf(`{"policy":%q,"tolerance":%g,"out":%q}`, pol, tol, out)
		r := testenv.MPIRun(t, 2*time.Minute, ranks, []string{"LD_PRELOAD=" + lib, preload.EnvRun + "=" + cfg}, "", prog, strconv.Itoa(iter))
		var res sweep.Result
		if b, err := os.ReadFile(out); err != nil || json.Unmarshal(resultLine(b), &res) != nil || res.Executed == nil {
			t.Fatalf("%s at %g: no result (%v); exit %d\n%s%s", pol, tol, err, r.ExitCode, r.Stdout, r.Stderr)
		}
		return res, r
	}
	for _, pol := range []string{"conditional", "eager"} {
		res, r := selective(pol, 0)
		if *res.Executed != calls || *res.Skipped != 0 || r.Stdout != alone.Stdout {
			t.Errorf("%s at 0: executed %d skipped %d, output %q; want %d, 0 and the program's own %q", pol, *res.Executed, *res.Skipped, r.Stdout, calls, alone.Stdout)
		}
		if !(*res.PredictedS > 0) || !(*res.SelectiveS > 0) {
			t.Errorf("%s at 0: predicted %v s, run %v s", pol, *res.PredictedS, *res.SelectiveS)
		}
		res, r = selective(pol, 0.5)
		if r.ExitCode != 0 || *res.Skipped == 0 || *res.Executed+*res.Skipped != calls {
			t.Errorf("%s at 0.5: exit %d, executed %d skipped %d; want 0, some skipped, %d calls in all", pol, r.ExitCode, *res.Executed, *res.Skipped, calls)
		}
	}
	out := filepath.Join(t.TempDir(), "result.json")
	r := testenv.MPIRun(t, time.Minute, 2, []string{"LD_PRELOAD=" + lib, preload.EnvRun + `={"policy":"apriori","tolerance":0.5,"out":"` + out + `"}`}, "", prog, "2")
	if r.ExitCode == 0 || !strings.Contains(r.Stderr, "counting run") {
		t.Errorf("apriori: exit %d, stderr %q; want a refusal naming the counting run", r.ExitCode, r.Stderr)
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
	if err == nil || !strings.Contains(string(out), "{nb} is not a parameter of the space: want one of {n}, {ranks}") {
		t.Errorf("a placeholder the space lacks: %v\n%s", err, out)
	}
}

// A Fortran program's MPI calls (mpif.h), which Open MPI's Fortran layer
// makes through PMPI_* past the C interposers, are counted through the
// Fortran entry points, once each; its broadcasts and barrier go through
// the engine in a selective run, and MPI_Init and MPI_Finalize still start
// and end it.
func TestProgramFortran(t *testing.T) {
	mpifort := testenv.Tool(t, "mpifort")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	prog := compile(t, mpifort, filepath.Join("testdata", "program", "fortran.f90"))
	stdout, stderr, code := runCheck(t, bin, lib, "--ranks", "2", prog)
	if code != 0 {
		t.Fatalf("program --check: exit %d\n%s%s", code, stdout, stderr)
	}
	for name, want := range map[string]string{"MPI_Bcast": "6", "MPI_Allreduce": "2", "MPI_Barrier": "2"} {
		if !regexp.MustCompile(`(?m)^\s*` + name + `\s+` + want + `\s`).MatchString(stdout) {
			t.Errorf("%s: want %s calls over 2 ranks in\n%s", name, want, stdout)
		}
	}
	out := filepath.Join(t.TempDir(), "result.json")
	cfg := fmt.Sprintf(`{"policy":"conditional","tolerance":0,"out":%q}`, out)
	r := testenv.MPIRun(t, time.Minute, 2, []string{"LD_PRELOAD=" + lib, preload.EnvRun + "=" + cfg}, "", prog)
	var res sweep.Result
	if b, err := os.ReadFile(out); err != nil || json.Unmarshal(resultLine(b), &res) != nil || res.Executed == nil || *res.Executed != 8 {
		t.Fatalf("selective run: exit %d, result %s (%v), want 8 executed (3 broadcasts and a barrier a rank)\n%s%s", r.ExitCode, out, err, r.Stdout, r.Stderr)
	}
	if !strings.Contains(r.Stdout, "sum    2.0") {
		t.Errorf("the program's output changed: %q", r.Stdout)
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
		"conditional       2^-1", "eager          0", "best configuration (least reference time): iter=10 n=", "kernels of configuration 1", "gemm[NN] 64x64x64"} {
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
// sweep goes on with the next runs and ends well.
func TestProgramSelectiveFailureRecorded(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	t.Setenv(preload.EnvLib, lib)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "fails.c"))
	out, errs, code := runScript(t, bin, fmt.Sprintf("program %s\nspace x=1,2 ranks=2\npolicy conditional\ntolerance 2^-1\nreps 1\nevaluate\ntable configs\n", prog))
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	for _, want := range []string{
		"a selective run failed and has no result ('resume' tries it again): configuration ranks=2 x=1: conditional at 2^-1: fails exited: exit status 3",
		"a selective run failed and has no result ('resume' tries it again): configuration ranks=2 x=2"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
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
