package slurm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/slurmtest"
	"github.com/approxtune/approxtune/internal/testenv"
)

// These tests run real jobs on a private real Slurm (internal/slurmtest):
// one cluster for all of them, each subtest its own jobs, in parallel.
func TestCluster(t *testing.T) {
	c := slurmtest.Start(t)
	t.Run("jobs", func(t *testing.T) {
		t.Run("Completed", func(t *testing.T) { t.Parallel(); testCompleted(t) })
		t.Run("PendingCancelled", func(t *testing.T) { t.Parallel(); testPendingCancelled(t, c) })
		t.Run("Failed", func(t *testing.T) { t.Parallel(); testFailed(t) })
		t.Run("Timeout", func(t *testing.T) { t.Parallel(); testTimeout(t, c) })
		t.Run("Refused", func(t *testing.T) { t.Parallel(); testRefused(t, c) })
		t.Run("NotFound", func(t *testing.T) { t.Parallel(); testNotFound(t) })
		t.Run("MPIPlugins", func(t *testing.T) {
			t.Parallel()
			got, err := MPIPlugins(context.Background())
			if err != nil || !slices.Contains(got, "pmix") || !slices.Contains(got, "none") {
				t.Errorf("MPIPlugins: %q, %v; want pmix and none among them", got, err)
			}
		})
		t.Run("Partitions", func(t *testing.T) {
			t.Parallel()
			got, err := Partitions(context.Background())
			if err != nil || len(got) != 1 || !got[0].Default || got[0].Nodes != 1 || got[0].CPUs != fmt.Sprint(c.CPUs) || got[0].TimeLimit != "infinite" {
				t.Errorf("Partitions: %+v, %v; want the one default partition of 1 node of %d CPUs, no time limit", got, err, c.CPUs)
			}
		})
		t.Run("SrunInAllocation", func(t *testing.T) { t.Parallel(); testSrunInAllocation(t) })
		t.Run("MPIInBatchJob", func(t *testing.T) { t.Parallel(); testMPIInBatchJob(t) })
	})
	// Changes PATH: after the parallel ones.
	t.Run("SqueueFallback", testSqueueFallback)
}

// Where scontrol cannot be run, Query asks squeue.
func testSqueueFallback(t *testing.T) {
	job, want := runJob(t, Options{}, "#!/bin/sh\nexit 3\n", 30*time.Second)
	// A PATH with Slurm's commands but scontrol.
	bin := t.TempDir()
	for _, name := range []string{"squeue", "sbatch", "scancel"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(p, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin)
	if _, err := exec.LookPath("scontrol"); err == nil {
		t.Fatal("scontrol still on PATH")
	}
	got, err := Query(context.Background(), job.ID)
	if err != nil || got != want || got.ExitCode != "3:0" {
		t.Errorf("Query through squeue: %+v, %v; want %+v", got, err, want)
	}
	if _, err := Query(context.Background(), "987654"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Query of an unknown job through squeue: %v; want ErrNotFound", err)
	}
}

// watch collects a job's updates until the end, failing t after limit.
func watch(t *testing.T, id string, limit time.Duration) []Update {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var ups []Update
	for u := range Watch(ctx, id, 200*time.Millisecond) {
		ups = append(ups, u)
	}
	if ctx.Err() != nil {
		t.Fatalf("job %s not done after %v: %v", id, limit, ups)
	}
	return ups
}

// waitFor returns the first update of the job's in state name.
func waitFor(t *testing.T, id, name string, limit time.Duration) State {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var seen []Update
	for u := range Watch(ctx, id, 200*time.Millisecond) {
		if u.Name == name {
			return u.State
		}
		seen = append(seen, u)
	}
	t.Fatalf("job %s never %s within %v: %v", id, name, limit, seen)
	return State{}
}

// runJob submits script with opts (its output in a temporary directory)
// and returns the job and its final state.
func runJob(t *testing.T, opts Options, script string, limit time.Duration) (*Job, State) {
	t.Helper()
	if opts.OutputDir == "" {
		opts.OutputDir = t.TempDir()
	}
	job, err := Submit(context.Background(), opts, script, nil)
	if err != nil {
		t.Fatal(err)
	}
	return job, last(t, watch(t, job.ID, limit))
}

func last(t *testing.T, ups []Update) State {
	t.Helper()
	if len(ups) == 0 {
		t.Fatal("no updates")
	}
	u := ups[len(ups)-1]
	if u.Err != nil {
		t.Fatalf("watch ended on %v after %v", u.Err, ups)
	}
	return u.State
}

// A job runs, its output arrives in the private output directory, and a
// secret given in env reaches the job without being on sbatch's command
// line.
func testCompleted(t *testing.T) {
	const secret = "s3cr3t-token-4f9a"
	env := []string{"APPROXTUNE_TEST_SECRET=" + secret}
	dir := filepath.Join(t.TempDir(), "out")
	opts := Options{Tasks: 2, OutputDir: dir, JobName: "approxtune-test"}

	cmd, _, err := sbatchCommand(context.Background(), opts, env)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.Join(cmd.Args, " "), secret) {
		t.Errorf("the secret is on sbatch's command line: %q", cmd.Args)
	}
	if !slices.Contains(cmd.Env, env[0]) || !slices.Contains(cmd.Args, "--export=ALL") {
		t.Errorf("the secret is not in sbatch's environment, exported to the job: %q", cmd.Args)
	}

	script := "#!/bin/sh\necho \"secret=$APPROXTUNE_TEST_SECRET tasks=$SLURM_NTASKS\"\nsleep 1\necho bye\n"
	job, err := Submit(context.Background(), opts, script, env)
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("output directory: %v, mode %v, want 0700", err, st.Mode().Perm())
	}
	if want := regexp.MustCompile(`^` + regexp.QuoteMeta(filepath.Join(dir, "approxtune-"+job.ID+"-")) + `\d{8}T\d{6}\.out$`); !want.MatchString(job.Output) {
		t.Errorf("Output %q, want %s", job.Output, want)
	}
	ups := watch(t, job.ID, 30*time.Second)
	s := last(t, ups)
	if s.Name != "COMPLETED" || s.ExitCode != "0:0" || s.Nodes != slurmtest.Node || !s.Done() || s.Failed() {
		t.Errorf("final state %+v, want COMPLETED 0:0 on %s", s, slurmtest.Node)
	}
	if want := fmt.Sprintf("secret=%s tasks=2\nbye\n", secret); job.Tail(1000) != want {
		t.Errorf("output %q, want %q", job.Tail(1000), want)
	}
	if job.Tail(4) != "bye\n" {
		t.Errorf("Tail(4) = %q", job.Tail(4))
	}
	// Slurm's record of the job does not show the secret either.
	out, err := exec.Command("scontrol", "show", "job", job.ID).CombinedOutput()
	if err != nil || strings.Contains(string(out), secret) || !strings.Contains(string(out), "JobName=approxtune-test") {
		t.Errorf("scontrol show job (%v):\n%s", err, out)
	}
	for i, u := range ups[1:] {
		if u.State == ups[i].State {
			t.Errorf("update %d repeats the one before: %+v", i+1, u)
		}
	}
}

// A job larger than the node waits with Reason=PartitionConfig until
// cancelled.
func testPendingCancelled(t *testing.T, c *slurmtest.Cluster) {
	job, err := Submit(context.Background(), Options{Tasks: 2 * c.CPUs, OutputDir: t.TempDir()}, "#!/bin/sh\ntrue\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	s := waitFor(t, job.ID, "PENDING", 10*time.Second)
	// The reason comes with the scheduler's first look at the job.
	deadline := time.Now().Add(10 * time.Second)
	for s.Reason != "PartitionConfig" && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
		if s, err = Query(context.Background(), job.ID); err != nil {
			t.Fatal(err)
		}
	}
	if s.Reason != "PartitionConfig" || s.Done() || s.String() != "PENDING (PartitionConfig)" {
		t.Errorf("state %+v (%s), want PENDING (PartitionConfig)", s, s)
	}
	if err := Cancel(context.Background(), job.ID); err != nil {
		t.Fatal(err)
	}
	s = last(t, watch(t, job.ID, 10*time.Second))
	if s.Name != "CANCELLED" || !s.Failed() {
		t.Errorf("after Cancel: %+v, want CANCELLED", s)
	}
	if err := Cancel(context.Background(), job.ID); err != nil {
		t.Errorf("cancelling a cancelled job: %v", err)
	}
}

// A job that exits 3 is FAILED with ExitCode 3:0, its output kept.
func testFailed(t *testing.T) {
	job, s := runJob(t, Options{}, "#!/bin/sh\necho about to fail >&2\nexit 3\n", 30*time.Second)
	if s.Name != "FAILED" || s.Reason != "NonZeroExitCode" || s.ExitCode != "3:0" || !s.Failed() {
		t.Errorf("state %+v, want FAILED NonZeroExitCode 3:0", s)
	}
	if got := job.Tail(100); got != "about to fail\n" {
		t.Errorf("output %q", got)
	}
	if err := Cancel(context.Background(), job.ID); err != nil {
		t.Errorf("cancelling a finished job: %v", err)
	}
}

// A job past its time limit ends in TIMEOUT. Slurm counts limits in
// minutes and slurmctld checks them every 30 s, so the job's end time is
// moved to one second from now (scontrol update EndTime, as an operator
// may): TIMEOUT comes at slurmctld's next check, within 30 s, instead of
// 60-90 s with --time=1.
func testTimeout(t *testing.T, c *slurmtest.Cluster) {
	job, err := Submit(context.Background(), Options{Time: "5", OutputDir: t.TempDir()}, "#!/bin/sh\necho started\nexec sleep 300\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, job.ID, "RUNNING", 20*time.Second)
	end := time.Now().Add(time.Second).Format("2006-01-02T15:04:05")
	if out, err := c.Command(context.Background(), "scontrol", "update", "JobId="+job.ID, "EndTime="+end).CombinedOutput(); err != nil {
		t.Fatalf("scontrol update EndTime: %v\n%s", err, out)
	}
	s := last(t, watch(t, job.ID, 45*time.Second))
	if s.Name != "TIMEOUT" || s.Reason != "TimeLimit" || !s.Failed() {
		t.Errorf("state %+v, want TIMEOUT (TimeLimit)", s)
	}
	if tail := job.Tail(1000); !strings.HasPrefix(tail, "started\n") || !strings.Contains(tail, "DUE TO TIME LIMIT") {
		t.Errorf("output %q", tail)
	}
}

// sbatch's refusals come back with Slurm's own message.
func testRefused(t *testing.T, c *slurmtest.Cluster) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Partition: "nosuch"}, "Invalid partition name specified"},
		{Options{Extra: []string{fmt.Sprintf("--mem=%d", 2*c.MemoryMB)}}, "Memory specification can not be satisfied"},
		{Options{Time: "bogus"}, "Invalid --time specification"},
	} {
		tc.opts.OutputDir = t.TempDir()
		job, err := Submit(context.Background(), tc.opts, "#!/bin/sh\ntrue\n", nil)
		var ce *CommandError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &ce) || ce.Command != "sbatch" {
			t.Errorf("%+v: job %v, error %v; want sbatch's %q", tc.opts, job, err, tc.want)
		}
	}
}

func testNotFound(t *testing.T) {
	if s, err := Query(context.Background(), "987654"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Query of an unknown job: %+v, %v; want ErrNotFound", s, err)
	}
	ups := watch(t, "987654", 10*time.Second)
	if len(ups) != 1 || !errors.Is(ups[0].Err, ErrNotFound) {
		t.Errorf("Watch of an unknown job: %v; want one ErrNotFound", ups)
	}
	if err := Cancel(context.Background(), "987654"); err != nil {
		t.Errorf("Cancel of an unknown job: %v", err)
	}
}

// Srun starts a step in an allocation (a running batch job, named by
// SLURM_JOB_ID as it is inside one), with env added; cancelling its context
// ends the step.
func testSrunInAllocation(t *testing.T) {
	job, err := Submit(context.Background(), Options{Tasks: 2, OutputDir: t.TempDir()}, "#!/bin/sh\nexec sleep 120\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { Cancel(context.Background(), job.ID) })
	waitFor(t, job.ID, "RUNNING", 20*time.Second)
	alloc := []string{"SLURM_JOB_ID=" + job.ID, "APPROXTUNE_TEST_VAR=x7"}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := Srun(ctx, Options{Tasks: 2}, alloc, "sh", "-c", `echo "rank $SLURM_PROCID of $SLURM_NTASKS in $SLURM_JOB_ID: $APPROXTUNE_TEST_VAR"`).Output()
	if err != nil {
		t.Fatalf("srun: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	slices.Sort(lines)
	want := []string{"rank 0 of 2 in " + job.ID + ": x7", "rank 1 of 2 in " + job.ID + ": x7"}
	if !slices.Equal(lines, want) {
		t.Errorf("srun printed %q, want %q", lines, want)
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	cmd := Srun(ctx2, Options{Tasks: 1}, alloc, "sleep", "100")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	start := time.Now()
	cancel2()
	err = cmd.Wait()
	if took := time.Since(start); took > 8*time.Second {
		t.Errorf("srun took %v to end after its context was cancelled (%v)", took, err)
	}
	if s, err := Query(context.Background(), job.ID); err != nil || s.Name != "RUNNING" {
		t.Errorf("the allocation after its step was cancelled: %+v, %v; want RUNNING", s, err)
	}
}

// The agent is an Open MPI program: it runs 4 ranks inside a batch job
// both under srun (PMIx) and under mpirun (which takes its slots from the
// job's tasks).
func testMPIInBatchJob(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	spec := filepath.Join(t.TempDir(), "tiny.json")
	os.WriteFile(spec, []byte(`{"workload": "summa", "space": {"n": [256], "grid": ["2x2"], "b": [64]}, "mode": "reference", "reference_reps": 1}`), 0o644)
	for _, launcher := range []string{
		"srun " + strings.Join(SrunArgs(Options{MPI: "pmix"}, bin), " "),
		"mpirun --allow-run-as-root " + bin,
	} {
		script := fmt.Sprintf("#!/bin/sh\n%s agent --sweep %s\n", launcher, spec)
		job, s := runJob(t, Options{Tasks: 4}, script, 60*time.Second)
		out := job.Tail(100000)
		if s.Name != "COMPLETED" || !strings.Contains(out, `"type":"summary"`) || !strings.Contains(out, `"ranks":4`) {
			t.Errorf("%s: %+v, output:\n%s", launcher, s, out)
		}
	}
}
