package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/preload"
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
		t.Run("UnknownMPIPlugin", func(t *testing.T) {
			t.Parallel()
			// A plugin srun lacks is refused when set, naming those it
			// has: every launch had failed "Invalid MPI type", each
			// blamed on its configuration.
			s, out := slurmSession(t, bin)
			err := s.Exec(context.Background(), "launcher slurm mpi=pmi3", out)
			if err == nil || !strings.Contains(err.Error(), `srun here has no MPI plugin "pmi3": it has `) || !strings.Contains(err.Error(), "pmix") {
				t.Errorf("launcher slurm mpi=pmi3: %v", err)
			}
		})
		t.Run("StepRefused", func(t *testing.T) {
			t.Parallel()
			// What srun itself prints when it starts no step is told
			// apart from a program's failure (programs.StartChecker):
			// here a plugin it lacks, as a spec written by hand may ask.
			sl := stepLauncher{opts: slurm.Options{MPI: "pmi3", Time: "1"}}
			cmd, err := sl.Command(context.Background(), 1, nil, "/bin/true")
			if err != nil {
				t.Fatal(err)
			}
			b, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("srun --mpi=pmi3 succeeded: %s", b)
			}
			if why := sl.NotStarted(string(b)); !strings.Contains(why, "srun refused the launch: Invalid MPI type 'pmi3'") {
				t.Errorf("srun's output %q read as %q", b, why)
			}
			if why := sl.NotStarted("srun: error: task 0: Exited with exit code 1\n"); why != "" {
				t.Errorf("a program's failure read as srun's: %q", why)
			}
			// A job past its time limit refuses new steps, still RUNNING.
			refused := "srun: error: Unable to create step for job 5: Job/step already completing or completed\n"
			if why := sl.NotStarted(refused); !strings.Contains(why, "the job has reached its time limit or was ended") {
				t.Errorf("%q read as %q", refused, why)
			}
		})
		t.Run("WrongMPIPlugin", func(t *testing.T) {
			t.Parallel()
			// Open MPI under srun --mpi=pmi2 fails in MPI_Init, and the
			// end of the job's output shown has lost the line that says
			// why: the error says what to set.
			s, out := slurmSession(t, bin, append([]string{"launcher slurm mpi=pmi2 output=" + t.TempDir()}, tinySweep...)...)
			err := s.Exec(context.Background(), "evaluate", out)
			if err == nil || !strings.Contains(err.Error(), "Open MPI could not start the agent's ranks under srun's --mpi=pmi2: set 'launcher slurm mpi=pmix'") {
				t.Errorf("evaluate with mpi=pmi2: %v", err)
			}
		})
	})
	// The program the program sweeps launch, built once when first
	// wanted.
	progDir := t.TempDir()
	var once sync.Once
	var built *testProgram
	program := func(t *testing.T) *testProgram {
		once.Do(func() { built = buildTestProgram(t, progDir) })
		if built == nil {
			t.Fatal("building the test program failed")
		}
		return built
	}
	// Holds every CPU of the node: after the parallel ones.
	t.Run("PendingInterrupted", func(t *testing.T) { testSlurmPendingInterrupted(t, bin, c) })
	// Set PATH, APPROXTUNE_LIB and SLURM_JOB_ID: after the parallel ones.
	t.Run("ProgramSweep", func(t *testing.T) { testSlurmProgram(t, bin, c, program(t)) })
	t.Run("SrunInAllocation", func(t *testing.T) { testSlurmSrun(t, bin, program(t)) })
	t.Run("ProgramAfterAgent", func(t *testing.T) { testSlurmProgramAfterAgent(t, bin, c, program(t)) })
}

// A program sweep after a workload's, on a node whose every CPU the idle
// agent's job holds: the session stops the agent first (a reviewer's
// program job waited for it until interrupted), and the program's
// deadline counts from when its job runs, not while it waits in the queue
// (a reviewer's resume was judged hung while its job was pending).
func testSlurmProgramAfterAgent(t *testing.T, bin string, c *slurmtest.Cluster, p *testProgram) {
	t.Setenv(preload.EnvLib, p.lib)
	jobs := filepath.Join(t.TempDir(), "jobs")
	// Every job starts 10 s after its submission: the program's job waits
	// past the deadline of 6 s below.
	s, out := slurmSession(t, bin, "launcher slurm time=00:05:00 output="+jobs+` extra="--begin=now+10"`, fmt.Sprintf("ranks %d", c.CPUs),
		fmt.Sprintf("workload synthetic grid=1x%d steps=2 count=2", c.CPUs), "policy eager", "tolerance 2^-1", "reps 1")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := s.Exec(ctx, "evaluate", out); err != nil {
		t.Fatalf("the workload's sweep: %v\n%s", err, out)
	}
	agentJob := regexp.MustCompile(`Slurm job (\d+): RUNNING`).FindStringSubmatch(out.String())
	if agentJob == nil || s.Agent() == nil {
		t.Fatalf("no agent's job running after the workload's sweep:\n%s", out)
	}
	for _, l := range []string{"program " + p.prog + " 99", "space iter=10 n=48 ranks=2", "policy conditional", "deadline 6s"} {
		if err := s.Exec(ctx, l, out); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	if err := s.Exec(ctx, "evaluate", out); err != nil {
		t.Fatalf("the program's sweep after the workload's: %v\n%s", err, out)
	}
	if !strings.Contains(out.String(), "stopping the agent (Slurm job "+agentJob[1]+") to free its nodes") ||
		!strings.Contains(out.String(), "PENDING (BeginTime)") || s.Last().Status != StatusOK {
		t.Errorf("want the agent stopped, the program's job pending, then the sweep ok (%s):\n%s", s.Last().Status, out)
	}
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
	// The journal keeps the job the sweep ran in, and its table names it
	// (sacct and the job's output file go by it).
	if got := tableBest(sw); !strings.Contains(got, "ran in Slurm job "+id+"\n") {
		t.Errorf("table best does not name job %s:\n%s", id, got)
	}
	if sws, err := ReadJournal(filepath.Join(s.Dir(), JournalName)); err != nil || len(sws) != 1 || !slices.Equal(sws[0].jobs, []string{id}) {
		t.Errorf("the journal's sweeps (%v): want one, run in job %s", err, id)
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
	jobOut, _ := filepath.Glob(filepath.Join(outDir, "approxtune-"+id+"-*.out"))
	if len(jobOut) != 1 {
		t.Errorf("job %s's output files in %s: %q, want one", id, outDir, jobOut)
	}
	for _, f := range append(cmdlines, jobOut...) {
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

	// 'launcher' alone names the job that holds the nodes between sweeps.
	lo := &textOut{}
	if err := s.Exec(context.Background(), "launcher", lo); err != nil || !strings.Contains(lo.b.String(), "the session's agent runs now as Slurm job "+id+", holding its nodes between sweeps") {
		t.Errorf("launcher: %v\n%s", err, lo.b.String())
	}

	// Closing the session shuts the agent down: its job completes, and its
	// output file, which says nothing the session did not, goes.
	s.Close()
	if st, err := slurm.Query(context.Background(), id); err != nil || st.Name != "COMPLETED" {
		t.Errorf("job %s after the session closed: %+v, %v; want COMPLETED", id, st, err)
	}
	for _, f := range jobOut {
		if _, err := os.Stat(f); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("job %s completed, yet its output file %s is left (%v)", id, f, err)
		}
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
	// Slurm says the job will never start as it is: the session cancels
	// it and says why, with what the partition offers (a script or a
	// stored notebook had waited with no one to interrupt it).
	ctx, stop := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stop()
	err := s.Exec(ctx, "evaluate", out)
	if ctx.Err() != nil {
		t.Fatalf("evaluate of a job that cannot start hung until the test's deadline\n%s", out)
	}
	for _, want := range []string{"cannot start: PENDING (PartitionConfig): the job asks for more than the partition has or allows",
		"the session cancelled it", fmt.Sprintf("the partitions: %s (the default: 1 node of %d CPUs, time limit infinite)", slurmtest.Partition, c.CPUs)} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("evaluate: %v\nwant %q in it", err, want)
		}
	}
	if sw := s.Last(); sw.Status != StatusFailed {
		t.Errorf("sweep %s, want failed", sw.Status)
	}
	m := regexp.MustCompile(`Slurm job (\d+): PENDING \(PartitionConfig\): the job asks for more`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no pending line with its explanation:\n%s", out)
	}
	if st, err := slurm.Query(context.Background(), m[1]); err != nil || st.Name != "CANCELLED" {
		t.Errorf("job %s after the sweep: %+v, %v; want CANCELLED", m[1], st, err)
	}
}

// A job that waits for nodes another job holds (PENDING, Resources) is
// waited for, and an interrupt cancels it.
func testSlurmPendingInterrupted(t *testing.T, bin string, c *slurmtest.Cluster) {
	hold, err := slurm.Submit(context.Background(), slurm.Options{Tasks: c.CPUs, OutputDir: t.TempDir()}, "#!/bin/sh\nexec sleep 300\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { slurm.Cancel(context.Background(), hold.ID) })
	s, out := slurmSession(t, bin, append([]string{"launcher slurm output=" + t.TempDir()}, tinySweep...)...)
	var once sync.Once
	out.onNote = func(note string) {
		if strings.Contains(note, "PENDING (Resources)") && strings.Contains(note, "interrupt to cancel it") {
			once.Do(func() { go func() { time.Sleep(2 * time.Second); s.Cancel() }() }) // a few polls: not given up meanwhile
		}
	}
	ctx, stop := context.WithTimeout(context.Background(), 2*time.Minute)
	defer stop()
	err = s.Exec(ctx, "evaluate", out)
	if ctx.Err() != nil {
		t.Fatalf("the interrupt did not end the wait\n%s", out)
	}
	if err == nil || !strings.Contains(err.Error(), "cancelled while PENDING (Resources)") {
		t.Fatalf("evaluate interrupted while pending: %v\n%s", err, out)
	}
	// The job it waits for is the user's own, named approxtune (as an
	// idle session's agent is): the pending line says so, where a second
	// session had read only "waiting for nodes to free up".
	if want := "waiting for nodes to free up (your approxtune job " + hold.ID + " is running: another session's agent holds its nodes"; !strings.Contains(out.String(), want) {
		t.Errorf("the pending line does not name job %s:\n%s", hold.ID, out)
	}
	m := regexp.MustCompile(`submitted the agent as Slurm job (\d+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no job submitted:\n%s", out)
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
		if !waitOver(id, time.Minute) {
			t.Errorf("job %s not over a minute after its end time", id)
		}
	}}
	err := s.Exec(context.Background(), "evaluate", held)
	sw := s.Last()
	if err == nil || sw.Status != StatusDied {
		t.Fatalf("evaluate past the time limit: %v, sweep %s\n%s", err, sw.Status, out)
	}
	t.Logf("evaluate past the time limit: %v", err)
	for _, want := range []string{"Slurm job " + id + " TIMEOUT", "DUE TO TIME LIMIT", "'resume'", "raise it before 'resume'"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("evaluate: %v\nwant %q in it", err, want)
		}
	}
	finished := len(sw.Results)
	if finished < 2 || finished == sw.Total() {
		t.Fatalf("%d of %d results before the time limit", finished, sw.Total())
	}
	// Resumed from another session, one of the local launcher, the rest
	// runs through Slurm as the first runs did: it had run under this
	// machine's mpirun (a Slurm review).
	other, out := slurmSession(t, bin)
	if err := other.Exec(context.Background(), "resume "+s.Dir(), out); err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if !strings.Contains(out.String(), "launcher slurm time=1 ") || !strings.Contains(out.String(), ", as sweep 1 ran (it was launcher local; ") {
		t.Errorf("resume from a local session: no launcher slurm taken from the sweep\n%s", out)
	}
	s, sw = other, other.Last()
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

// waitOver waits up to limit for Slurm to say job id is over, and reports
// whether it did.
func waitOver(id string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if st, err := slurm.Query(context.Background(), id); err == nil && st.Done() {
			return true
		}
		time.Sleep(200 * time.Millisecond)
	}
	return false
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
		{"launcher slurm partition=nosuch", "Invalid partition name specified; the partitions: " + slurmtest.Partition + " (the default: 1 node of "},
		{fmt.Sprintf("launcher slurm extra=--mem=%d", 2*c.MemoryMB), "Memory specification can not be satisfied"},
	} {
		s, out := slurmSession(t, bin, append([]string{tc.launcher + " output=" + t.TempDir()}, tinySweep...)...)
		err := s.Exec(context.Background(), "evaluate", out)
		if err == nil || !strings.Contains(err.Error(), "sbatch refused the agent's job") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: evaluate: %v; want sbatch's %q", tc.launcher, err, tc.want)
		}
	}
}

// Inside an allocation, the agent is a job step (srun), not a new job, as
// is each launch of a program.
func testSlurmSrun(t *testing.T, bin string, p *testProgram) {
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

	// A program's tune: one launch, a step of the allocation.
	log := logSlurmCommands(t, p)
	s, out = slurmSession(t, bin, "launcher slurm", "program "+p.prog+" 99 deck iterate.dat="+p.tmpl, "space iter=10 n=48 ranks=2",
		"policy conditional", "tolerance 2^-1")
	if err := s.Exec(context.Background(), "tune", out); err != nil {
		t.Fatalf("tune: %v\n%s", err, out)
	}
	sw := s.Last()
	if len(sw.Results) != 1 || sw.Results[0].Executed == nil || *sw.Results[0].Executed+*sw.Results[0].Skipped != 2*10*8 {
		t.Fatalf("tune of the program: %d results, want 1 of 160 calls\n%s", len(sw.Results), out)
	}
	sruns := launches(t, log)
	if len(sruns) != 1 || strings.Contains(sruns[0], "--jobid") || !strings.Contains(sruns[0], "--ntasks=2") ||
		!strings.Contains(out.String(), "each launch of the program is a job step of Slurm job "+hold.ID) {
		t.Errorf("the program's launches: %q\n%s", sruns, out)
	}
	if st, err := slurm.Query(context.Background(), hold.ID); err != nil || st.Name != "RUNNING" {
		t.Errorf("the allocation after the program's tune: %+v, %v; want it still RUNNING", st, err)
	}
}

// A program sweep with launcher slurm: the session submits a job that
// holds the nodes, runs each launch of the program as a job step of it
// (srun --jobid, the preload library's variables in srun's environment,
// never on its command line), and cancels the job at the sweep's end. A
// job that ends mid-sweep (here cancelled from outside, as a preemption
// would) fails the sweep with its state, and resume runs the rest in a
// new job. The results are checked as the local program tests check
// them (cmd/approxtune/program_test.go).
func testSlurmProgram(t *testing.T, bin string, c *slurmtest.Cluster, p *testProgram) {
	dir := t.TempDir()
	log := logSlurmCommands(t, p)

	// A job larger than the node would stay pending: the display says
	// why, and the session cancels it.
	n := 2 * c.CPUs
	s, out := slurmSession(t, bin, fmt.Sprintf("launcher slurm nodes=1 tasks-per-node=%d output=%s", n, filepath.Join(dir, "jobs")),
		"program "+p.prog+" 99", fmt.Sprintf("space iter=10 n=48 ranks=%d", n), "policy conditional", "tolerance 2^-1")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	err := s.Exec(ctx, "tune", out)
	cancel()
	m := regexp.MustCompile(`Slurm job (\d+): PENDING \(PartitionConfig\): the job asks for more`).FindStringSubmatch(out.String())
	if err == nil || !strings.Contains(err.Error(), "cannot start: PENDING (PartitionConfig)") || m == nil || s.Last().Status != StatusFailed {
		t.Fatalf("tune of a program whose job cannot start: %v\n%s", err, out)
	}
	if st, err := slurm.Query(context.Background(), m[1]); err != nil || st.Name != "CANCELLED" {
		t.Errorf("job %s after the sweep: %+v, %v; want CANCELLED", m[1], st, err)
	}
	s, out = slurmSession(t, bin, "launcher slurm time=00:05:00 output="+filepath.Join(dir, "jobs"),
		"program "+p.prog+" 99 deck iterate.dat="+p.tmpl, "space iter=10 n=48,64 ranks=2", "policy conditional", "tolerance 2^-1", "reps 1")
	submitted := regexp.MustCompile(`submitted Slurm job (\d+) to hold the nodes`)
	var first string
	held := &holdOut{noteOut: out, at: 1, hold: func() {
		m := submitted.FindStringSubmatch(out.String())
		if m == nil {
			t.Errorf("no holding job submitted:\n%s", out)
			return
		}
		first = m[1]
		if err := slurm.Cancel(context.Background(), first); err != nil {
			t.Error(err)
			return
		}
		if !waitOver(first, 30*time.Second) {
			t.Errorf("job %s not over 30 s after scancel", first)
		}
	}}
	ctx, cancel = context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = s.Exec(ctx, "evaluate", held)
	sw := s.Last()
	if err == nil || sw.Status != StatusFailed || first == "" {
		t.Fatalf("evaluate with its job cancelled mid-sweep: %v, sweep %s\n%s", err, sw.Status, out)
	}
	for _, want := range []string{"Slurm job " + first + " CANCELLED", "'resume'"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("evaluate: %v\nwant %q in it", err, want)
		}
	}
	if !regexp.MustCompile(`Slurm job ` + first + `: RUNNING on ` + slurmtest.Node).MatchString(out.String()) {
		t.Errorf("the display never showed job %s running:\n%s", first, out)
	}
	if len(sw.Results) != 1 {
		t.Fatalf("%d results before the job's end, want 1\n%s", len(sw.Results), out)
	}
	if err := s.Exec(ctx, "resume", out); err != nil {
		t.Fatalf("resume: %v\n%s", err, out)
	}
	if sw.Status != StatusOK || len(sw.Results) != 2 || len(sw.Missing()) != 0 {
		t.Fatalf("after resume: sweep %s, %d results, %d missing\n%s", sw.Status, len(sw.Results), len(sw.Missing()), out)
	}
	const calls = 2 * 10 * 8 // ranks x ITER (from the deck) x modelled calls per step
	for _, r := range sw.Results {
		if len(r.ReferenceS) != 1 || r.Error == nil || r.Executed == nil || r.Skipped == nil || r.LaunchS == nil || !(*r.LaunchS > 0) {
			t.Fatalf("result %+v: want a reference run, an error, counts and the launch time", r)
		}
		if n := *r.Executed + *r.Skipped; n != calls {
			t.Errorf("configuration %d: %d calls, want %d", r.Index, n, calls)
		}
	}

	// Two holding jobs, both over; every launch a step of one of them.
	jobs := submitted.FindAllStringSubmatch(out.String(), -1)
	if len(jobs) != 2 {
		t.Fatalf("%d holding jobs, want 2 (the sweep's, resume's)\n%s", len(jobs), out)
	}
	for _, m := range jobs {
		if st, err := slurm.Query(context.Background(), m[1]); err != nil || !st.Done() {
			t.Errorf("holding job %s after the sweep: %+v, %v; want it over", m[1], st, err)
		}
	}
	// The sweep ran in both, as its journal and table say.
	if ids := []string{jobs[0][1], jobs[1][1]}; !slices.Equal(sw.jobs, ids) || !strings.Contains(tableBest(sw), "ran in Slurm jobs "+ids[0]+", "+ids[1]+"\n") {
		t.Errorf("the sweep ran in jobs %v, table best says:\n%s", sw.jobs, tableBest(sw))
	}
	if !strings.Contains(out.String(), "released Slurm job "+jobs[1][1]) {
		t.Errorf("the session never said it released job %s:\n%s", jobs[1][1], out)
	}
	if q, err := slurmOutput("squeue", "-h", "-t", "running,pending", "-o", "%i %j"); err != nil || strings.Contains(q, "approxtune-program") {
		t.Errorf("squeue after the sweep: %v\n%s", err, q)
	}
	steps := 0
	for _, line := range launches(t, log) {
		steps++
		if !strings.Contains(line, "--ntasks=2") || !strings.Contains(line, "--export=ALL") || !strings.Contains(line, "--jobid="+first) && !strings.Contains(line, "--jobid="+jobs[1][1]) {
			t.Errorf("a launch not a 2-rank step of a holding job: %s", line)
		}
	}
	// The sweep: a reference and a selective launch; resume: the same.
	if steps != 4 {
		t.Errorf("%d launches as job steps, want 4", steps)
	}

	// A search of the program's space: every launch a step of the
	// holding job too, and the fastest chosen. n=32 computes for a tenth
	// of a millisecond, n=160 for some 14 ms: a loaded machine's waits
	// (6 ms in one run) had put n=96, some 3 ms, ahead of it.
	if err := s.Exec(ctx, "space iter=10 n=160,32,224 ranks=2", out); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, "tune search=halving", out); err != nil {
		t.Fatalf("tune search=halving: %v\n%s", err, out)
	}
	sw = s.Last()
	if sw.Status != StatusOK || sw.Search == nil || sw.Configs[sw.Search.Chosen].Int("n") != 32 {
		t.Fatalf("the search: %s, outcome %+v; want n=32 chosen\n%s", sw.Status, sw.Search, out)
	}
	if n := len(launches(t, log)) - steps; n < len(sw.Results) {
		t.Errorf("the search: %d launches as job steps for %d results", n, len(sw.Results))
	}
}

// testProgram is what a program sweep of the tests launches: the program
// of cmd/approxtune's program tests, its deck's template, and the preload
// library.
type testProgram struct{ prog, tmpl, lib string }

// buildTestProgram builds the preload library and the program into dir.
func buildTestProgram(t *testing.T, dir string) *testProgram {
	mpicc := testenv.Tool(t, "mpicc")
	root := testenv.Root(t)
	p := &testProgram{prog: filepath.Join(dir, "iterate"), tmpl: filepath.Join(dir, "iterate.template"), lib: filepath.Join(dir, preload.LibName)}
	// Out of the subtest's directory, which goes when the subtest ends.
	if err := os.Rename(testenv.Preload(t), p.lib); err != nil {
		t.Fatal(err)
	}
	if b, err := osexec.Command(mpicc, "-O2", "-o", p.prog, filepath.Join(root, "cmd", "approxtune", "testdata", "program", "iterate.c"),
		"-I"+filepath.Join(root, "include"), "-lopenblas").CombinedOutput(); err != nil {
		t.Fatalf("mpicc iterate.c: %v\n%s", err, b)
	}
	if err := os.WriteFile(p.tmpl, []byte("{iter} {n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// logSlurmCommands sets APPROXTUNE_LIB to p's library, and puts srun and
// sbatch on PATH as wrappers that log their command lines to the file
// it returns and run Slurm's own.
func logSlurmCommands(t *testing.T, p *testProgram) string {
	t.Setenv(preload.EnvLib, p.lib)
	dir := t.TempDir()
	log := filepath.Join(dir, "commands.log")
	for _, name := range []string{"srun", "sbatch"} {
		real, err := osexec.LookPath(name)
		if err != nil {
			t.Fatal(err)
		}
		script := fmt.Sprintf("#!/bin/sh\necho \"%s $*\" >> %s\nexec %s \"$@\"\n", name, log, real)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return log
}

// launches are the srun command lines logged (logSlurmCommands), after
// checking that no command line logged holds the run's settings (they
// travel in srun's environment) and that each srun loads the preload
// library into its tasks only, through env (preload.Ranks), never into
// srun itself or on any other command line.
func launches(t *testing.T, log string) []string {
	t.Helper()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lib := os.Getenv(preload.EnvLib)
	var sruns []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.Contains(line, preload.EnvRun) || strings.Contains(line, "conditional") {
			t.Errorf("a preload variable on a command line: %s", line)
		}
		if strings.HasPrefix(line, "srun ") {
			if !strings.Contains(line, " env LD_PRELOAD="+lib+" ") {
				t.Errorf("a launch that does not load the library in its tasks (env LD_PRELOAD=%s PROGRAM): %s", lib, line)
			}
			sruns = append(sruns, line)
		} else if strings.Contains(line, "LD_PRELOAD") || strings.Contains(line, lib) {
			t.Errorf("the preload library on a command line other than a launch: %s", line)
		}
	}
	return sruns
}
