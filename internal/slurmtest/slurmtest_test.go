package slurmtest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A cluster starts with a node of DefaultCPUs CPUs, runs a job, and leaves
// nothing behind: daemons, job processes (even one that escaped its job's
// process tree) and directory all gone once its test ends.
func TestStartStop(t *testing.T) {
	var c *Cluster
	var pids []int
	var started, stopping time.Time
	t.Run("cluster", func(t *testing.T) {
		started = time.Now()
		c = Start(t)
		t.Logf("started in %v", time.Since(started).Round(time.Millisecond))
		if os.Getenv("SLURM_CONF") != c.Conf {
			t.Errorf("SLURM_CONF=%q, want %q", os.Getenv("SLURM_CONF"), c.Conf)
		}
		ctx := context.Background()
		out, err := c.Command(ctx, "sinfo", "-h", "-N", "-o", "%N %c %T %P").CombinedOutput()
		if want := Node + " " + strconv.Itoa(DefaultCPUs) + " idle " + Partition + "*"; err != nil || strings.TrimSpace(string(out)) != want {
			t.Errorf("sinfo: %q (%v), want %q", out, err, want)
		}
		pidFile := filepath.Join(t.TempDir(), "pid")
		// A 4-task job fits the node, whatever the machine's cores; its
		// background sleep must be killed at the end.
		out, err = c.Command(ctx, "sbatch", "--parsable", "-n", "4", "-o", "/dev/null",
			"--wrap", "setsid sleep 300 & echo $! > "+pidFile+"; sleep 300").CombinedOutput()
		if err != nil {
			t.Fatalf("sbatch: %v\n%s", err, out)
		}
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
				pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
				pids = append(pids, pid)
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if len(pids) == 0 {
			t.Fatal("the job did not start its sleep")
		}
		pids = append(pids, c.ctld.cmd.Process.Pid, c.slurmd.cmd.Process.Pid)
		stopping = time.Now()
	})
	t.Logf("stopped in %v", time.Since(stopping).Round(time.Millisecond))
	if c == nil {
		return
	}
	for _, pid := range pids {
		if Alive(pid) {
			t.Errorf("process %d still alive after the cluster's test", pid)
		}
	}
	if _, err := os.Stat(c.Dir); !os.IsNotExist(err) {
		t.Errorf("%s still there: %v", c.Dir, err)
	}
}

// With KeepEnv the test's environment is left alone; Env reaches the
// cluster.
func TestKeepEnv(t *testing.T) {
	before := os.Getenv("SLURM_CONF")
	c := StartWith(t, Options{CPUs: 2, KeepEnv: true})
	if os.Getenv("SLURM_CONF") != before {
		t.Errorf("SLURM_CONF changed to %q", os.Getenv("SLURM_CONF"))
	}
	out, err := c.Command(context.Background(), "sinfo", "-h", "-o", "%c %T").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "2 idle" {
		t.Errorf("sinfo: %q (%v), want \"2 idle\"", out, err)
	}
}

// TestHold starts a cluster and keeps it for SLURMTEST_HOLD seconds (for
// experiments by hand: its SLURM_CONF is logged); skipped otherwise.
func TestHold(t *testing.T) {
	hold := os.Getenv("SLURMTEST_HOLD")
	if hold == "" {
		t.Skip("SLURMTEST_HOLD not set")
	}
	d, err := time.ParseDuration(hold + "s")
	if err != nil {
		t.Fatal(err)
	}
	c := Start(t)
	t.Logf("SLURM_CONF=%s (holding %v)", c.Conf, d)
	time.Sleep(d)
}
