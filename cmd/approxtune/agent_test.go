package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/sweep"
)

type event struct {
	Type       string          `json:"type"`
	V          int             `json:"v"`
	Config     map[string]any  `json:"config"`
	ReferenceS []float64       `json:"reference_s"`
	Residual   *float64        `json:"residual"`
	Configs    json.RawMessage `json:"configs"` // a list in "start", a count in "summary"
	Best       map[string]any  `json:"best"`
	RefError   *float64        `json:"reference_error"` // summary
}

func decodeEvents(t *testing.T, out string) []event {
	t.Helper()
	var evs []event
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var e event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("stdout line is not JSON: %q: %v", line, err)
		}
		if e.V != sweep.ProtocolVersion {
			t.Fatalf("event without protocol version %d: %q", sweep.ProtocolVersion, line)
		}
		evs = append(evs, e)
	}
	return evs
}

// The README's main job: 9 SUMMA configurations, each verified.
func TestAgentReferenceSweepSUMMA(t *testing.T) {
	bin := testenv.Build(t)
	spec := filepath.Join(testenv.Root(t), "examples", "summa-reference.json")
	r := testenv.MPIRun(t, 3*time.Minute, 4, nil, "", bin, "agent", "--sweep", spec)
	if r.ExitCode != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", r.ExitCode, r.Stderr)
	}
	evs := decodeEvents(t, r.Stdout)
	var results []event
	for _, e := range evs {
		if e.Type == "result" {
			results = append(results, e)
		}
	}
	if len(results) != 9 {
		t.Fatalf("%d results, want 9:\n%s", len(results), r.Stdout)
	}
	seen := map[string]bool{}
	for _, e := range results {
		key := jsonString(e.Config["grid"]) + "/" + jsonString(e.Config["b"])
		seen[key] = true
		if len(e.ReferenceS) != 3 {
			t.Errorf("%v: %d reference times, want 3", e.Config, len(e.ReferenceS))
		}
		for _, s := range e.ReferenceS {
			if !(s > 0 && s < 60) {
				t.Errorf("%v: reference time %v", e.Config, s)
			}
		}
		if e.Residual == nil || !(*e.Residual < 1e-10) {
			t.Errorf("%v: residual %v, want < 1e-10", e.Config, e.Residual)
		}
	}
	if len(seen) != 9 {
		t.Errorf("configurations not distinct: %v", seen)
	}
	last := evs[len(evs)-1]
	if last.Type != "summary" || string(last.Configs) != "9" || last.Best == nil {
		t.Errorf("last event %+v, want a summary of 9 configurations with a best one", last)
	}
	var refs [][]float64
	for _, e := range results {
		refs = append(refs, e.ReferenceS)
	}
	if want, n := sweep.RunError(refs); n != 27 || last.RefError == nil || math.Abs(*last.RefError-want) > 1e-9 || !(want > 0) {
		t.Errorf("summary reference_error %v, want %v over the 27 reference runs (%d)", last.RefError, want, n)
	}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Bad specs end the job before any run, with status 2 and one line naming the problem.
func TestAgentRejectsBadSpecs(t *testing.T) {
	bin := testenv.Build(t)
	cases := []struct{ name, spec, want string }{
		{"unknown workload", `{"workload":"lu","mode":"reference"}`, `workload "lu" is unknown: want one of cholesky2d, cholesky3d, `},
		{"grid too big", `{"workload":"summa","space":{"grid":["3x3"]},"mode":"reference"}`, "space.grid: 3x3 needs 9 processes, the agent has 4"},
		{"b zero", `{"workload":"summa","space":{"b":[0]},"mode":"reference"}`, "space.b: 0 is out of range: want an integer from 1 to 65536"},
		{"b not dividing", `{"workload":"summa","space":{"n":[1000],"b":[64]},"mode":"reference"}`, "b=64 must divide the local block sizes"},
		{"malformed", `{"workload":"summa", "space": {`, "sweep spec is not valid JSON"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".json")
			if err := os.WriteFile(f, []byte(c.spec), 0o644); err != nil {
				t.Fatal(err)
			}
			r := testenv.MPIRun(t, time.Minute, 4, nil, "", bin, "agent", "--sweep", f)
			if r.ExitCode != 2 {
				t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.Stdout, r.Stderr)
			}
			if r.Stdout != "" {
				t.Errorf("bad spec produced events: %s", r.Stdout)
			}
			var ours []string
			for _, l := range strings.Split(r.Stderr, "\n") {
				if strings.HasPrefix(l, "approxtune agent: ") {
					ours = append(ours, l)
				}
			}
			if len(ours) != 1 || !strings.Contains(ours[0], c.want) {
				t.Fatalf("want exactly one line containing %q, got %q\nstderr:\n%s", c.want, ours, r.Stderr)
			}
			// With --ranks the agent starts its own mpirun: the spec is
			// checked before it, so the line is all there is.
			cmd := exec.Command(bin, "agent", "--ranks", "4", "--sweep", f)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || out.Len() != 0 || strings.Count(errb.String(), "\n") != 1 || !strings.Contains(errb.String(), c.want) {
				t.Errorf("agent --ranks 4: %v, stdout %q, stderr %q; want status 2 and one line containing %q", err, out.String(), errb.String(), c.want)
			}
		})
	}
}

// TestAgentWarnsOfItsEnvironment: an agent whose environment turns Open
// MPI's single-copy transfers off and forces OpenBLAS onto its SSE-only
// Prescott kernels says so on its standard error and in its start event:
// the transport always, the kernels on a CPU with AVX2 and FMA.
func TestAgentWarnsOfItsEnvironment(t *testing.T) {
	bin := testenv.Build(t)
	spec := `{"workload":"summa","space":{"n":256,"grid":"2x2","b":64},"mode":"reference","reference_reps":1}`
	r := testenv.MPIRun(t, time.Minute, 4, testenv.WarnedEnv(t), spec, bin, "agent", "--sweep", "-")
	if r.ExitCode != 0 {
		t.Fatalf("exit %d\n%s", r.ExitCode, r.Stderr)
	}
	var start struct {
		BLAS     string   `json:"blas"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(r.Stdout, "\n", 2)[0]), &start); err != nil {
		t.Fatalf("first event: %v\n%s", err, r.Stdout)
	}
	want := testenv.WantedWarnings(t, start.BLAS)
	if len(start.Warnings) != len(want) {
		t.Fatalf("start event warnings %q (BLAS %q), want %d: %q", start.Warnings, start.BLAS, len(want), want)
	}
	for i, w := range want {
		if !strings.HasPrefix(start.Warnings[i], w) {
			t.Errorf("warning %d: %q, want it to start with %q", i, start.Warnings[i], w)
		}
		if line := "approxtune agent: warning: " + start.Warnings[i]; strings.Count(r.Stderr, line) != 1 {
			t.Errorf("stderr does not hold %q once:\n%s", line, r.Stderr)
		}
	}
}

// The spec can come on standard input, which mpirun forwards to rank 0.
func TestAgentSpecFromStdin(t *testing.T) {
	bin := testenv.Build(t)
	spec := `{"workload":"summa","space":{"n":256,"grid":"2x2","b":[32,64]},"mode":"reference","reference_reps":1}`
	r := testenv.MPIRun(t, time.Minute, 4, nil, spec, bin, "agent", "--sweep", "-")
	if r.ExitCode != 0 {
		t.Fatalf("exit %d\n%s", r.ExitCode, r.Stderr)
	}
	n := 0
	for _, e := range decodeEvents(t, r.Stdout) {
		if e.Type == "result" {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d results, want 2:\n%s", n, r.Stdout)
	}
	// With --ranks, the agent reads the spec itself (to check it) and
	// hands it on to its mpirun.
	cmd := exec.Command(bin, "agent", "--ranks", "4", "--sweep", "-")
	cmd.Stdin = strings.NewReader(spec)
	out, err := cmd.Output()
	if err != nil || strings.Count(string(out), `"type":"result"`) != 2 {
		t.Errorf("agent --ranks 4 --sweep -: %v\n%s", err, out)
	}
}

func TestVersionAndHelp(t *testing.T) {
	bin := testenv.Build(t)
	out := run(t, bin, 0, "version")
	for _, want := range []string{"approxtune ", "go:   go1.", "mpi:  Open MPI", "blas: OpenBLAS"} {
		if !strings.Contains(out, want) {
			t.Errorf("version output lacks %q:\n%s", want, out)
		}
	}
	out = run(t, bin, 0, "help")
	for _, want := range []string{"version", "agent", "help"} {
		if !strings.Contains(out, "approxtune "+want) {
			t.Errorf("help lacks %q:\n%s", want, out)
		}
	}
	out = run(t, bin, 0, "agent", "-h")
	for _, want := range []string{"-sweep FILE", "-ranks N", "exit status 2"} {
		if !strings.Contains(out, want) {
			t.Errorf("agent -h lacks %q:\n%s", want, out)
		}
	}
	out = run(t, bin, 2, "frobnicate")
	if !strings.Contains(out, `unknown command "frobnicate": want one of `+strings.Join(names(), ", ")) || !strings.Contains(out, "agent, help") {
		t.Errorf("unknown command message: %s", out)
	}
}

func run(t *testing.T, bin string, wantCode int, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != wantCode {
		t.Fatalf("approxtune %v: exit %d, want %d\n%s", args, code, wantCode, out)
	}
	return string(out)
}

// The agent also builds against MPICH and runs the SUMMA sweep under its launcher.
func TestAgentWithMPICH(t *testing.T) {
	if exec.Command("pkg-config", "--exists", "mpich").Run() != nil {
		testenv.Missing(t, "MPICH (pkg-config mpich; apt-get install libmpich-dev)")
	}
	mpiexec := testenv.Tool(t, "mpiexec.mpich")
	bin := filepath.Join(t.TempDir(), "approxtune-mpich")
	build := exec.Command("go", "build", "-tags", "mpich", "-o", bin, "./cmd/approxtune")
	build.Dir = testenv.Root(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build -tags mpich: %v\n%s", err, out)
	}
	if out := run(t, bin, 0, "version"); !strings.Contains(out, "mpi:  MPICH") {
		t.Fatalf("the -tags mpich build does not report MPICH:\n%s", out)
	}
	spec := filepath.Join(t.TempDir(), "spec.json")
	os.WriteFile(spec, []byte(`{"workload":"summa","space":{"n":512,"grid":["1x4","2x2"],"b":[64,128]},"mode":"reference","reference_reps":1}`), 0o644)
	cmd := exec.Command(mpiexec, "-n", "4", bin, "agent", "--sweep", spec)
	cmd.Env = append(os.Environ(), "OPENBLAS_NUM_THREADS=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mpiexec.mpich: %v\n%s", err, out)
	}
	n := 0
	for _, e := range decodeEvents(t, string(out)) {
		if e.Type == "result" {
			n++
			if e.Residual == nil || *e.Residual > 1e-10 {
				t.Errorf("%v: residual %v", e.Config, e.Residual)
			}
		}
	}
	if n != 4 {
		t.Fatalf("%d results under MPICH, want 4:\n%s", n, out)
	}
	// MPICH's ranks poll: more of them than cores draws a warning in the
	// start event (launch.OversubscribedWarnings).
	warned := strings.Contains(string(out), fmt.Sprintf("4 ranks on %d cores under MPICH", runtime.NumCPU()))
	if want := 4 > runtime.NumCPU(); warned != want {
		t.Errorf("4 ranks on %d cores under MPICH: warned %v, want %v:\n%s", runtime.NumCPU(), warned, want, out)
	}
}
