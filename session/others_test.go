package session

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// An agent's rank is told by its command line, a program's rank by
// APPROXTUNE_RUN in its environment; anything else is not another sweep's
// work. A live process with APPROXTUNE_RUN set is found on this machine
// and named in the warning, unless it is the session's own.
func TestOtherSweeps(t *testing.T) {
	proc := func(cmdline, environ string) string {
		d := t.TempDir()
		os.WriteFile(filepath.Join(d, "cmdline"), []byte(cmdline), 0o644)
		os.WriteFile(filepath.Join(d, "environ"), []byte(environ), 0o644)
		return d
	}
	for _, c := range []struct {
		cmdline, environ string
		want             bool
	}{
		{"/usr/local/bin/approxtune\x00agent\x00--connect\x00h:1\x00", "PATH=/bin\x00", true},
		{"./solver\x00-nb\x0064\x00", "PATH=/bin\x00APPROXTUNE_RUN={\"policy\":\"eager\"}\x00", true},
		{"./solver\x00", "APPROXTUNE_RUN={}\x00PATH=/bin\x00", true},
		{"/usr/local/bin/approxtune\x00repl\x00", "PATH=/bin\x00", false},
		{"mpirun\x00-n\x004\x00approxtune\x00agent\x00", "PATH=/bin\x00", false},
		{"./solver\x00", "MY_APPROXTUNE_RUN=1\x00", false},
	} {
		if got := isSweepWork(proc(c.cmdline, c.environ)); got != c.want {
			t.Errorf("%q with %q: %v, want %v", c.cmdline, c.environ, got, c.want)
		}
	}
	cmd := exec.Command("sleep", "30")
	cmd.Env = append(os.Environ(), "APPROXTUNE_RUN={}")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	time.Sleep(100 * time.Millisecond) // exec'd: its environment is sleep's
	pid := cmd.Process.Pid
	if w := othersWarning(nil, "as this sweep starts"); !slices.Contains(otherSweeps(nil), pid) || !strings.Contains(w, "another approxtune session's agent or program runs on this machine") {
		t.Errorf("process %d with APPROXTUNE_RUN not found: %v; warning %q", pid, otherSweeps(nil), w)
	}
	if slices.Contains(otherSweeps([]int{pid}), pid) {
		t.Errorf("the session's own process %d counted as another's", pid)
	}
}
