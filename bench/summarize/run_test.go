package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// benchRun runs bench/run with args and env added, without starting a
// sweep (every case here stops before one), and returns its exit code and
// standard error.
func benchRun(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	cmd := exec.Command(bash, append([]string{filepath.Join("..", "run")}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stderr.String()
	}
	t.Fatalf("bench/run %v: %v", args, err)
	return 0, ""
}

// bench/run's errors before a sweep: the command they ask for keeps the
// -o DIR given (following it had written elsewhere), a missing binary
// leaves no empty -o directory behind, and -o without a value says it
// needs a directory. None of these runs a sweep.
func TestBenchRunErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	code, msg := benchRun(t, nil, "summa", "-k", "2", "-o", empty, "-summarize-only")
	if code != 1 || !strings.Contains(msg, "run bench/run summa -k 2 -o "+empty+" first") {
		t.Errorf("-summarize-only over an empty -o: exit %d, %q; want 1 and the command with its -o", code, msg)
	}
	code, msg = benchRun(t, nil, "summa", "-k", "2", "-summarize-only", "-o", filepath.Join(dir, "none"))
	if code != 1 || !strings.Contains(msg, "no directory "+filepath.Join(dir, "none")+": run bench/run summa -k 2 -o ") {
		t.Errorf("-summarize-only over a missing -o: exit %d, %q", code, msg)
	}
	if _, err := os.Stat(filepath.Join(dir, "none")); err == nil {
		t.Error("-summarize-only made its missing -o directory")
	}
	fresh := filepath.Join(dir, "fresh")
	code, msg = benchRun(t, []string{"APPROXTUNE=" + filepath.Join(dir, "no-approxtune")}, "summa", "-k", "1", "-o", fresh)
	if code != 1 || !strings.Contains(msg, "no-approxtune not found") {
		t.Errorf("a missing binary: exit %d, %q", code, msg)
	}
	if _, err := os.Stat(fresh); err == nil {
		t.Error("a missing binary left an empty -o directory")
	}
	for _, c := range []struct{ flag, want string }{{"-o", "-o needs a directory"}, {"-k", "-k needs a number of sweeps"}, {"-anchor", "-anchor needs the paper tool's run script"}} {
		code, msg = benchRun(t, nil, "summa", c.flag)
		if code != 2 || !strings.Contains(msg, c.want) || !strings.Contains(msg, "usage:") {
			t.Errorf("summa %s without a value: exit %d, %q; want 2, %q and the usage", c.flag, code, msg, c.want)
		}
	}
}
