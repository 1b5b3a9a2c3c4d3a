package session

import (
	"bytes"
	"context"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/protocol"
	"github.com/approxtune/approxtune/internal/slurm"
	"github.com/approxtune/approxtune/internal/slurmtest"
	"github.com/approxtune/approxtune/internal/testenv"
)

// noteOut keeps what a session printed and the notes of its sweeps'
// progress (the job's states among them), and calls onNote for each note.
type noteOut struct {
	mu      sync.Mutex
	text    strings.Builder
	notes   []string
	results int
	onNote  func(string)
}

func (o *noteOut) Print(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.text.WriteString(s + "\n")
}

func (o *noteOut) Update(p Progress) {
	o.mu.Lock()
	if p.Note != "" {
		o.notes = append(o.notes, p.Note)
	}
	o.results = len(p.Sweep.Results)
	f := o.onNote
	o.mu.Unlock()
	if f != nil && p.Note != "" {
		f(p.Note)
	}
}

func (o *noteOut) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.text.String() + "notes:\n  " + strings.Join(o.notes, "\n  ")
}

// jobID is the Slurm job of the session's agent.
func jobID(t *testing.T, s *Session) string {
	t.Helper()
	if s.agent == nil {
		t.Fatal("no agent")
	}
	b, ok := s.agent.proc.(*batchJob)
	if !ok {
		t.Fatalf("the agent is run by %s, not a batch job", s.agent.runBy())
	}
	return b.job.ID
}

// slurmSession is a session whose agents run through the cluster's Slurm,
// after the commands given.
func slurmSession(t *testing.T, bin string, lines ...string) (*Session, *noteOut) {
	t.Helper()
	s, err := New(Options{Dir: t.TempDir(), Binary: bin, JobPoll: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	out := &noteOut{}
	for _, l := range lines {
		if err := s.Exec(context.Background(), l, out); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	return s, out
}

// tinySweep is a 2-rank sweep of a few seconds: one configuration, two
// policies at one tolerance, one reference run.
var tinySweep = []string{"ranks 2", "workload synthetic grid=1x2 steps=5 count=4", "tolerance 2^-1", "reps 1"}

// The Slurm launcher on a real private Slurm (internal/slurmtest): one
// cluster, each subtest its own sessions and jobs, in parallel.
func TestSlurmLauncher(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	c := slurmtest.Start(t)
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no defaults file
	t.Run("jobs", func(t *testing.T) {
		t.Run("Sweep", func(t *testing.T) { t.Parallel(); testSlurmSweep(t, bin) })
		t.Run("PendingCancelled", func(t *testing.T) { t.Parallel(); testSlurmPending(t, bin, c) })
		t.Run("FailingAgent", func(t *testing.T) { t.Parallel(); testSlurmFailingAgent(t) })
		t.Run("TimeLimitThenResume", func(t *testing.T) { t.Parallel(); testSlurmTimeLimit(t, bin, c) })
		t.Run("Refused", func(t *testing.T) { t.Parallel(); testSlurmRefused(t, bin, c) })
	})
	// Sets SLURM_JOB_ID: after the parallel ones.
	t.Run("SrunInAllocation", func(t *testing.T) { testSlurmSrun(t, bin) })
}

// A sweep submitted with sbatch: its results come back, the display shows
// the job running, the token is nowhere but in the job's environment, and
// closing the session ends the job.
func testSlurmSweep(t *testing.T, bin string) {
	outDir := filepath.Join(t.TempDir(), "jobs")
	s, out := slurmSession(t, bin, append([]string{"launcher slurm time=00:05:00 output=" + outDir}, tinySweep...)...)
	if err := s.Exec(context.Background(), "evaluate", out); err != nil {
		t.Fatalf("evaluate: %v\n%s", err, out)
	}
	sw := s.Last()
	if sw.Status != StatusOK || len(sw.Results) != 2 || len(sw.Missing()) != 0 {
		t.Fatalf("sweep %s with %d results, %d missing\n%s", sw.Status, len(sw.Results), len(sw.Missing()), out)
	}
	for _, r := range sw.Results {
		if r.PredictedS == nil || *r.PredictedS <= 0 || len(r.ReferenceS) != 1 || r.ReferenceS[0] <= 0 || r.Error == nil {
			t.Errorf("result %+v: want a prediction, a reference run and an error", r)
		}
	}
	id := jobID(t, s)
	if h := s.agent.Hello; h.Ranks != 2 {
		t.Errorf("agent of %d ranks, want 2", h.Ranks)
	}
	want := regexp.MustCompile(`Slurm job ` + id + `: RUNNING on ` + slurmtest.Node)
	if !want.MatchString(out.String()) || !strings.Contains(out.String(), "submitted the agent as Slurm job "+id) {
		t.Errorf("the display never showed job %s running:\n%s", id, out)
	}

	// The token: in the agent's environment, nowhere else.
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", s.agent.Hello.PIDs[0]))
	if err != nil {
		t.Fatal(err)
	}
	var token string
	for _, e := range bytes.Split(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(e, []byte(protocol.TokenEnv+"=")); ok {
			token = string(v)
		}
	}
	if len(token) < 32 {
		t.Fatalf("no token in the agent's environment")
	}
	script, err := slurmOutput("scontrol", "write", "batch_script", id, "-")
	if err != nil || !strings.Contains(script, "agent --connect") {
		t.Fatalf("batch script: %v\n%s", err, script)
	}
	cmdlines, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range append(cmdlines, filepath.Join(outDir, "approxtune-"+id+".out")) {
		if b, _ := os.ReadFile(f); bytes.Contains(b, []byte(token)) {
			t.Errorf("the token is in %s", f)
		}
	}
	if strings.Contains(script, token) || strings.Contains(out.String(), token) {
		t.Errorf("the token is in the batch script or the session's output")
	}
	if st, err := os.Stat(outDir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("the jobs' output directory: %v, %v; want mode 0700", st.Mode(), err)
	}

	// Closing the session shuts the agent down: its job completes.
	s.Close()
	if st, err := slurm.Query(context.Background(), id); err != nil || st.Name != "COMPLETED" {
		t.Errorf("job %s after the session closed: %+v, %v; want COMPLETED", id, st, err)
	}
}

// slurmOutput runs a Slurm client command and returns its output.
func slurmOutput(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := osexec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(b), err
}

// A job larger than the node stays pending: the display shows Slurm's
// reason, and an interrupt cancels the job.
func testSlurmPending(t *testing.T, bin string, c *slurmtest.Cluster) {
	n := c.CPUs * 2
	s, out := slurmSession(t, bin, fmt.Sprintf("launcher slurm nodes=1 tasks-per-node=%d output=%s", n, t.TempDir()),
		fmt.Sprintf("workload synthetic grid=2x%d steps=5 count=4", n/2), "tolerance 2^-1", "reps 1")
	if s.st.Ranks != n {
		t.Fatalf("ranks %d after launcher nodes=1 tasks-per-node=%d", s.st.Ranks, n)
	}
	var once sync.Once
	var cancelled time.Time
	out.onNote = func(note string) {
		if strings.Contains(note, "PENDING (PartitionConfig)") {
			once.Do(func() {
				cancelled = time.Now()
				s.Cancel()
			})
		}
	}
	ctx, stop := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stop()
	err := s.Exec(ctx, "evaluate", out)
	if ctx.Err() != nil {
		t.Fatalf("evaluate of a job that cannot start hung until the test's deadline\n%s", out)
	}
	if cancelled.IsZero() {
		t.Fatalf("the display never showed the pending reason (evaluate: %v)\n%s", err, out)
	}
	if took := time.Since(cancelled); took > 20*time.Second {
		t.Errorf("the cancel took %v", took)
	}
	if err == nil || !strings.Contains(err.Error(), "cancelled") || !strings.Contains(err.Error(), "PENDING (PartitionConfig)") {
		t.Errorf("evaluate: %v; want a cancelled sweep that names the pending reason", err)
	}
	if sw := s.Last(); sw.Status != StatusCancelled {
		t.Errorf("sweep %s, want cancelled", sw.Status)
	}
	m := regexp.MustCompile(`Slurm job (\d+): PENDING \(PartitionConfig\): the job asks for more`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no pending line with its explanation:\n%s", out)
	}
	if st, err := slurm.Query(context.Background(), m[1]); err != nil || st.Name != "CANCELLED" {
		t.Errorf("job %s after the interrupt: %+v, %v; want CANCELLED", m[1], st, err)
	}
}

// An agent that cannot run (a binary that is not there): the job fails and
// the sweep says so with the job's state, exit code and output.
func testSlurmFailingAgent(t *testing.T) {
	s, out := slurmSession(t, "/nonexistent/approxtune", append([]string{"launcher slurm output=" + t.TempDir()}, tinySweep...)...)
	err := s.Exec(context.Background(), "evaluate", out)
	if err == nil {
		t.Fatal("evaluate with an agent that cannot run succeeded")
	}
	for _, want := range []string{"ended before its agent said hello", "FAILED (NonZeroExitCode, exit ", "/nonexistent/approxtune", "the end of its output"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("evaluate: %v\nwant %q in it", err, want)
		}
	}
	if sw := s.Last(); sw.Status != StatusFailed {
		t.Errorf("sweep %s, want failed", sw.Status)
	}
	if !strings.Contains(out.String(), ": FAILED") {
		t.Errorf("the display never showed the job failed:\n%s", out)
	}
}

// A job that reaches its time limit mid-sweep: reported with its state
// and output, every finished run kept; resume runs the rest in a new job.
// slurmctld checks time limits every 30 s: the sweep's live display holds
// the agent at a run boundary (the gate) until the job has timed out, so
// the sweep cannot end first, and nothing spins meanwhile: the test takes
// 5 to 40 s.
func testSlurmTimeLimit(t *testing.T, bin string, c *slurmtest.Cluster) {
	s, out := slurmSession(t, bin, "launcher slurm time=1 output="+t.TempDir(), "ranks 2",
		"workload synthetic grid=1x2 steps=5 count=4", "space mean_us=1000,1100,1200,1300", "tolerance 2^-1", "reps 1",
		"deadline off") // the held agent makes no progress, and is no hang
	var id string
	held := &holdOut{noteOut: out, at: 2, hold: func() {
		id = jobID(t, s)
		end := time.Now().Add(time.Second).Format("2006-01-02T15:04:05")
		if b, err := c.Command(context.Background(), "scontrol", "update", "JobId="+id, "EndTime="+end).CombinedOutput(); err != nil {
			t.Errorf("scontrol update EndTime: %v\n%s", err, b)
			return
		}
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			if st, err := slurm.Query(context.Background(), id); err == nil && st.Done() {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Errorf("job %s not over a minute after its end time", id)
	}}
	err := s.Exec(context.Background(), "evaluate", held)
	sw := s.Last()
	if err == nil || sw.Status != StatusDied {
		t.Fatalf("evaluate past the time limit: %v, sweep %s\n%s", err, sw.Status, out)
	}
	t.Logf("evaluate past the time limit: %v", err)
	for _, want := range []string{"Slurm job " + id + " TIMEOUT", "DUE TO TIME LIMIT", "'resume'"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("evaluate: %v\nwant %q in it", err, want)
		}
	}
	finished := len(sw.Results)
	if finished < 2 || finished == sw.Total() {
		t.Fatalf("%d of %d results before the time limit", finished, sw.Total())
	}
	if err := s.Exec(context.Background(), "resume", out); err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if len(sw.Results) != sw.Total() || sw.Status != StatusOK {
		t.Fatalf("after resume: %d of %d results, %s", len(sw.Results), sw.Total(), sw.Status)
	}
	seen := map[runKey]int{}
	for _, r := range sw.Results {
		seen[keyOf(r)]++
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("run %+v has %d results: resume must run exactly the missing ones", k, n)
		}
	}
	if again := jobID(t, s); again == id {
		t.Errorf("resume ran on the job that timed out (%s)", id)
	}
}

// holdOut is a live display (LiveOutput: the session gates its agent's
// runs on it) that calls hold once, when the sweep has at results: the
// agent waits at the run boundary until hold returns.
type holdOut struct {
	*noteOut
	at   int
	hold func()
	once sync.Once
}

func (o *holdOut) LiveFigures() bool { return true }

func (o *holdOut) Update(p Progress) {
	o.noteOut.Update(p)
	if len(p.Sweep.Results) >= o.at {
		o.once.Do(o.hold)
	}
}

// sbatch's refusal is shown with Slurm's own message, and the sweep fails
// at once.
func testSlurmRefused(t *testing.T, bin string, c *slurmtest.Cluster) {
	for _, tc := range []struct{ launcher, want string }{
		{"launcher slurm partition=nosuch", "Invalid partition name specified"},
		{fmt.Sprintf("launcher slurm extra=--mem=%d", 2*c.MemoryMB), "Memory specification can not be satisfied"},
	} {
		s, out := slurmSession(t, bin, append([]string{tc.launcher + " output=" + t.TempDir()}, tinySweep...)...)
		err := s.Exec(context.Background(), "evaluate", out)
		if err == nil || !strings.Contains(err.Error(), "sbatch refused the agent's job") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: evaluate: %v; want sbatch's %q", tc.launcher, err, tc.want)
		}
	}
}

// Inside an allocation, the agent is a job step (srun), not a new job.
func testSlurmSrun(t *testing.T, bin string) {
	hold, err := slurm.Submit(context.Background(), slurm.Options{Tasks: 2, OutputDir: t.TempDir()}, "#!/bin/sh\nexec sleep 300\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slurm.Cancel(context.Background(), hold.ID) })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for u := range slurm.Watch(ctx, hold.ID, 200*time.Millisecond) {
		if u.Name == "RUNNING" {
			cancel()
		}
	}
	t.Setenv("SLURM_JOB_ID", hold.ID)
	s, out := slurmSession(t, bin, append([]string{"launcher slurm"}, tinySweep...)...)
	if err := s.Exec(context.Background(), "evaluate", out); err != nil {
		st, qerr := slurm.Query(context.Background(), hold.ID)
		t.Fatalf("evaluate: %v\n%s\nthe allocation: %+v, %v", err, out, st, qerr)
	}
	if sw := s.Last(); len(sw.Results) != 2 {
		t.Fatalf("%d results", len(sw.Results))
	}
	if got := s.agent.runBy(); got != "srun" || !strings.Contains(out.String(), "job step of Slurm job "+hold.ID) {
		t.Errorf("agent run by %s\n%s", got, out)
	}
	s.Close()
	if st, err := slurm.Query(context.Background(), hold.ID); err != nil || st.Name != "RUNNING" {
		t.Errorf("the allocation after the session closed: %+v, %v; want it still RUNNING", st, err)
	}
}
