package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/notebook"
	"github.com/approxtune/approxtune/internal/preload"
	"github.com/approxtune/approxtune/internal/slurm"
	"github.com/approxtune/approxtune/internal/slurmtest"
	"github.com/approxtune/approxtune/internal/testenv"
)

// Both faces on a real private Slurm: notebooks/slurm.ipynb executed
// headless (the kernel's display: the job's states in the sweep's live
// display), and the REPL as a user on a login node types it; leaving the
// REPL ends the agent's job.
func TestSlurmFaces(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	slurmtest.Start(t) // SLURM_CONF for the commands below
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state")) // the jobs' output

	running := regexp.MustCompile(`Slurm job (\d+): RUNNING on ` + slurmtest.Node)
	src, err := os.ReadFile(filepath.Join("..", "..", "notebooks", "slurm.ipynb"))
	if err != nil {
		t.Fatal(err)
	}
	in, ran := filepath.Join(dir, "slurm.ipynb"), filepath.Join(dir, "ran.ipynb")
	if err := os.WriteFile(in, src, 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs, code := runApproxtune(t, dir, bin, "run", in, "-o", ran, "--dir", filepath.Join(dir, "nb-session"))
	if code != 0 {
		t.Fatalf("approxtune run notebooks/slurm.ipynb: exit %d\n%s", code, errs)
	}
	validate(t, ran)
	nb := readNotebook(t, ran)
	var display, status string
	for _, c := range nb.Cells {
		switch {
		case strings.Contains(c.Source, "evaluate"):
			display = text(outputOf(t, c, notebook.DisplayData).Data["text/plain"])
		case c.Source == "status":
			status = text(outputOf(t, c, notebook.ExecuteResult).Data["text/plain"])
		}
	}
	m := running.FindStringSubmatch(display)
	if m == nil || !strings.Contains(display, "16/16 runs") || !strings.Contains(display, "(ok)") {
		t.Errorf("the sweep's display does not show the job running and the sweep done:\n%s", display)
	} else if !strings.Contains(status, "run by Slurm job "+m[1]) {
		t.Errorf("status does not name job %s:\n%s", m[1], status)
	}

	// The REPL, as the README's login-node transcript has it.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	repl := exec.CommandContext(ctx, bin, "repl", "--dir", filepath.Join(dir, "repl-session"))
	repl.Stdin = strings.NewReader("launcher slurm time=00:10:00\nranks 2\nworkload synthetic grid=1x2 steps=5 count=4\ntolerance 2^-1\nreps 1\nevaluate\n")
	out, err := repl.CombinedOutput()
	if err != nil {
		t.Fatalf("approxtune repl: %v\n%s", err, out)
	}
	m = running.FindStringSubmatch(string(out))
	if m == nil || !strings.Contains(string(out), "2 of 2 runs (ok)") {
		t.Fatalf("the REPL does not show the job running and the sweep done:\n%s", out)
	}
	if st, err := slurm.Query(context.Background(), m[1]); err != nil || st.Name != "COMPLETED" {
		t.Errorf("job %s after the REPL ended: %+v, %v; want COMPLETED", m[1], st, err)
	}
}

// A REPL told to end (SIGTERM; a dropped SSH connection's SIGHUP takes the
// same path, but a test run under nohup would pass its REPL SIGHUP
// ignored) while its agent's job is pending cancels the job and exits
// 128+15: a reviewer's hung-up REPL left its pending jobs behind, which
// later started to dial a session that was gone.
func TestSlurmTerminatedREPLCancelsPendingJob(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	slurmtest.Start(t)
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	repl := exec.CommandContext(ctx, bin, "repl", "--dir", filepath.Join(dir, "session"))
	repl.Stdin = strings.NewReader("launcher slurm time=00:10:00 extra=\"--begin=now+1hour\"\nranks 2\nworkload synthetic grid=1x2 steps=5 count=4\ntolerance 2^-1\nreps 1\nevaluate\n")
	var out testenv.SyncBuffer
	repl.Stdout, repl.Stderr = &out, &out
	if err := repl.Start(); err != nil {
		t.Fatal(err)
	}
	pending := regexp.MustCompile(`Slurm job (\d+): PENDING`)
	var job string
	for deadline := time.Now().Add(time.Minute); job == "" && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if m := pending.FindStringSubmatch(out.String()); m != nil {
			job = m[1]
		}
	}
	if job == "" {
		repl.Process.Kill()
		repl.Wait()
		t.Fatalf("no pending job within a minute:\n%s", out.String())
	}
	repl.Process.Signal(syscall.SIGTERM)
	err := repl.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 || !strings.Contains(out.String(), "terminated: ending the session") {
		t.Errorf("after SIGTERM: %v; want exit 143 and the session ended\n%s", err, out.String())
	}
	st, err := slurm.Query(context.Background(), job)
	if err != nil || st.Name != "CANCELLED" {
		t.Errorf("job %s after SIGTERM: %+v, %v; want CANCELLED", job, st, err)
	}
}

// A REPL killed outright (SIGKILL) during a program sweep under Slurm:
// the job that held the program's nodes ends itself once the session has
// not touched its heartbeat for APPROXTUNE_HOLD_QUIET (here 6 s; 3 minutes
// by default). It had run on to its time limit, and a review's resume
// queued a new job behind it.
func TestSlurmKilledREPLEndsHoldingJob(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	testenv.Launcher(t)
	bin, lib := testenv.Build(t), buildPreload(t)
	slurmtest.Start(t)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "hangs.c"))
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	repl := exec.CommandContext(ctx, bin, "repl", "--dir", filepath.Join(dir, "session"))
	repl.Env = append(os.Environ(), preload.EnvLib+"="+lib, "APPROXTUNE_HOLD_QUIET=6s")
	repl.Stdin = strings.NewReader(fmt.Sprintf("launcher slurm time=00:10:00 output=%s\nprogram %s {x}\nspace x=1 ranks=2\npolicy conditional\ntolerance 2^-1\nreps 1\ndeadline off\nevaluate\n", filepath.Join(dir, "jobs"), prog))
	var out testenv.SyncBuffer
	repl.Stdout, repl.Stderr = &out, &out
	if err := repl.Start(); err != nil {
		t.Fatal(err)
	}
	held := regexp.MustCompile(`submitted Slurm job (\d+) to hold the nodes`)
	var job string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if m := held.FindStringSubmatch(out.String()); m != nil {
			if st, err := slurm.Query(context.Background(), m[1]); err == nil && st.Name == "RUNNING" {
				job = m[1]
				break
			}
		}
	}
	if job == "" {
		repl.Process.Kill()
		repl.Wait()
		t.Fatalf("no running job holding the program's nodes within a minute:\n%s", out.String())
	}
	time.Sleep(3 * time.Second) // the launches run in it
	repl.Process.Kill()
	repl.Wait()
	state := ""
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(time.Second) {
		if st, err := slurm.Query(context.Background(), job); err == nil {
			if state = st.Name; state != "RUNNING" && state != "COMPLETING" {
				break
			}
		}
	}
	if state != "COMPLETED" {
		t.Errorf("job %s a minute after its session was killed: %s, want COMPLETED (ended itself)\n%s", job, state, out.String())
	}
}
