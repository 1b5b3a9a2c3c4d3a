// Package testenv holds what approxtune's tests share: finding the tools a test
// needs (skipping when one is missing, failing instead under
// APPROXTUNE_REQUIRE_ALL=1), building the approxtune binary, and running it
// under mpirun.
package testenv

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/launch"
	"github.com/approxtune/approxtune/internal/preload"
)

// RequireAll reports whether APPROXTUNE_REQUIRE_ALL=1, under which a missing
// tool fails a test instead of skipping it.
func RequireAll() bool { return os.Getenv("APPROXTUNE_REQUIRE_ALL") == "1" }

// Missing skips t, or fails it under APPROXTUNE_REQUIRE_ALL=1, saying what is missing.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if RequireAll() {
		t.Fatalf("APPROXTUNE_REQUIRE_ALL=1 and a required tool is missing: "+format, args...)
	}
	t.Skipf("skipped, missing: "+format, args...)
}

// Tool returns the path of an executable on PATH, or skips/fails t.
func Tool(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "%s (%v)", name, err)
	}
	return p
}

// Launcher returns the local mpirun launcher, or skips/fails t.
func Launcher(t testing.TB) *launch.Launcher {
	t.Helper()
	l, err := launch.Find()
	if err != nil {
		Missing(t, "%v", err)
	}
	return l
}

// Root returns the repository's root directory.
func Root(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("testenv: cannot locate source")
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Build builds the approxtune binary into a temporary directory and returns its path.
func Build(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "approxtune")
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/approxtune")
	cmd.Dir = Root(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/approxtune: %v\n%s", err, out)
	}
	return bin
}

// Preload builds approxtune's preload library (cmd/libapproxtune, what
// program sweeps run programs with) into a temporary directory and returns
// its path: a test sets APPROXTUNE_LIB to it.
func Preload(t testing.TB) string {
	t.Helper()
	lib := filepath.Join(t.TempDir(), preload.LibName)
	cmd := exec.Command("go", "build", "-tags", "noopenblas", "-buildmode=c-shared", "-o", lib, "./cmd/libapproxtune")
	cmd.Dir = Root(t)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildmode=c-shared ./cmd/libapproxtune: %v\n%s", err, out)
	}
	return lib
}

// Result is what a finished command printed.
type Result struct {
	Stdout, Stderr string
	ExitCode       int
}

// MPIRun runs n ranks of prog with args under mpirun, with stdin as standard
// input, and waits at most timeout. Extra environment entries go in env.
func MPIRun(t testing.TB, timeout time.Duration, n int, env []string, stdin string, prog string, args ...string) Result {
	t.Helper()
	l := Launcher(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := l.Command(ctx, n, prog, args...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("mpirun -n %d %s %v: timed out after %v\nstdout:\n%s\nstderr:\n%s", n, prog, args, timeout, so.String(), se.String())
	}
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("mpirun: %v", err)
		}
		code = ee.ExitCode()
	}
	return Result{Stdout: so.String(), Stderr: se.String(), ExitCode: code}
}

// NoneLeft fails t if a process of bin running one of the sub-commands is
// still alive 10 s after the test's end (each one is then killed): tests
// that start kernels or agents check that everything they started stopped.
func NoneLeft(t testing.TB, bin string, subcommands ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []string
		ps, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range ps {
			b, err := os.ReadFile(p)
			if err != nil {
				continue
			}
			args := strings.Split(string(b), "\x00")
			if len(args) > 1 && args[0] == bin && slices.Contains(subcommands, args[1]) {
				left = append(left, filepath.Base(filepath.Dir(p))+" "+args[1])
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, l := range left {
				if pid, err := strconv.Atoi(strings.Fields(l)[0]); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			}
			t.Errorf("still running after the test: %v (killed)", left)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// CPUFlags returns the feature flags /proc/cpuinfo lists for the first
// processor (avx2, fma, avx512f ...), or fails t when it cannot be read:
// tests compare what the code under test detects with what the kernel says.
func CPUFlags(t testing.TB) map[string]bool {
	t.Helper()
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		t.Fatalf("CPU flags: %v", err)
	}
	flags := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if ok && strings.TrimSpace(k) == "flags" {
			for _, f := range strings.Fields(v) {
				flags[f] = true
			}
			break
		}
	}
	return flags
}

// SingleCopyVar is the Open MPI setting whose value none draws the agent's
// transport warning.
const SingleCopyVar = "OMPI_MCA_btl_vader_single_copy_mechanism"

// WarnedEnv returns the environment entries that make an agent warn twice:
// Open MPI's single-copy transfers off, and OpenBLAS forced onto its
// SSE-only Prescott kernels. It removes the other single-copy variable from
// this process's environment for the test, so that no third warning comes
// from outside.
func WarnedEnv(t testing.TB) []string {
	t.Helper()
	const other = "OMPI_MCA_btl_sm_single_copy_mechanism"
	t.Setenv(other, "")
	os.Unsetenv(other)
	return []string{SingleCopyVar + "=none", "OPENBLAS_CORETYPE=Prescott"}
}

// WantedWarnings returns how the warnings of an agent started with
// WarnedEnv begin, in order, given the BLAS library its hello or start
// event names: the transport's always; the kernels' where OpenBLAS took the
// forced kernels (a DYNAMIC_ARCH build) and the CPU has AVX2 and FMA
// (/proc/cpuinfo).
func WantedWarnings(t testing.TB, blas string) []string {
	t.Helper()
	want := []string{SingleCopyVar + "=none:"}
	f := CPUFlags(t)
	if strings.Contains(blas, "Prescott") && f["avx2"] && f["fma"] {
		want = append(want, "OPENBLAS_CORETYPE=Prescott gives OpenBLAS's Prescott kernels")
	}
	return want
}

// PNGSize decodes a PNG image and returns its size, or fails t naming what.
func PNGSize(t testing.TB, what string, data []byte) image.Point {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s is not a PNG image: %v", what, err)
	}
	return img.Bounds().Size()
}

// SyncBuffer is an output a process or a goroutine writes while the test
// reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String is what was written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
