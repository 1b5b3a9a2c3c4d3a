package session

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/slurm"
)

// The launcher verb: its options checked with errors that name the valid
// ones, defaults from the defaults file, where each came from, and the
// transcript keeps the launcher written out in full.
func TestLauncherVerb(t *testing.T) {
	cfg := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", cfg)
	s := newSession(t)
	ctx := context.Background()
	out := &textOut{}
	if err := s.Exec(ctx, "launcher", out); err != nil || !strings.HasPrefix(out.b.String(), "launcher local\n") {
		t.Fatalf("launcher alone: %v\n%s", err, out.b.String())
	}
	for _, tc := range []struct{ line, want string }{
		{"launcher pbs", `no launcher "pbs": want local (this machine's mpirun) or slurm`},
		{"launcher slurm nodez=2", `launcher slurm has no option "nodez": the options are nodes, tasks-per-node, partition, time, account, extra, mpi, address, output`},
		{"launcher slurm nodes=0", `nodes: "0" is not a node count`},
		{"launcher slurm time=half-an-hour", `time: "half-an-hour" is not a Slurm time limit: want MINUTES, HH:MM:SS`},
		{"launcher slurm partition=a/b", `"a/b" is not a partition name`},
		{`launcher slurm extra="constraint=x"`, `"constraint=x" is not an sbatch option`},
		// Options approxtune sets itself had been echoed as passed, and ignored.
		{`launcher slurm extra="--job-name=mytune"`, "--job-name=mytune: approxtune sets that option itself: it names its jobs approxtune"},
		{`launcher slurm extra="--qos=x --output=/tmp/o-%j.txt"`, "--output=/tmp/o-%j.txt: approxtune sets that option itself: set output=DIR"},
		{`launcher slurm extra="-t10"`, "-t10: approxtune sets that option itself: set time="},
		{`launcher slurm extra="--part=debug"`, "--part=debug: approxtune sets that option itself: set partition="},
		{`launcher slurm extra="--error=e.txt"`, "--error=e.txt: approxtune sets that option itself: the job's errors go to its output file"},
		{`launcher slurm extra="--comment='hello world'"`, "quotes are not supported in extra="},
		{"launcher slurm address=host:99999", "the port is not a number"},
		{"launcher slurm 2", `"2" is not KEY=VALUE: the options of launcher slurm are nodes`},
		{"launcher local nodes=2", "launcher local takes no options"},
		{"launcher nodes=2", "launcher takes local or slurm first"},
	} {
		err := s.Exec(ctx, tc.line, out)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want %q", tc.line, err, tc.want)
		}
		if s.st.Launcher != nil {
			t.Fatalf("%s changed the launcher", tc.line)
		}
	}

	file := filepath.Join(cfg, "approxtune", "launcher.json")
	os.MkdirAll(filepath.Dir(file), 0o755)
	os.WriteFile(file, []byte(`{"slurm": {"partition": "debug", "time": "00:30:00", "nodes": 4}}`), 0o644)
	out.b.Reset()
	if err := s.Exec(ctx, `launcher slurm nodes=2 tasks-per-node=3 extra="--qos=short --constraint=haswell"`, out); err != nil {
		t.Fatal(err)
	}
	l := s.st.Launcher
	if !l.Slurm() || l.Nodes != 2 || l.TasksPerNode != 3 || l.Partition != "debug" || l.Time != "00:30:00" || !slices.Equal(l.Extra, []string{"--qos=short", "--constraint=haswell"}) {
		t.Fatalf("launcher %+v", l)
	}
	if s.st.Ranks != 6 {
		t.Errorf("ranks %d, want nodes x tasks-per-node = 6", s.st.Ranks)
	}
	shown := out.b.String()
	for _, want := range []string{"ranks 6 (nodes x tasks-per-node)", "nodes, tasks-per-node, extra: from the command", "partition, time: from " + file, "each agent is a batch job (sbatch) of 6 ranks"} {
		if !strings.Contains(shown, want) {
			t.Errorf("launcher shows\n%s\nwant %q in it", shown, want)
		}
	}
	// time=default goes back to the file's value, not to none (it had
	// dropped the file's too, a Slurm review).
	if err := s.Exec(ctx, "launcher slurm time=10", out); err != nil || s.st.Launcher.Time != "10" {
		t.Fatalf("time=10: %v, %+v", err, s.st.Launcher)
	}
	if err := s.Exec(ctx, "launcher slurm time=default", out); err != nil || s.st.Launcher.Time != "00:30:00" || s.st.Launcher.From["time"] != file {
		t.Errorf("time=default: %v, time %q from %q; want the file's 00:30:00", err, s.st.Launcher.Time, s.st.Launcher.From["time"])
	}
	full := `launcher slurm nodes=2 tasks-per-node=3 partition=debug time=00:30:00 extra="--qos=short --constraint=haswell"`
	steps := s.Transcript()
	if got := steps[len(steps)-1].Line; got != full {
		t.Errorf("transcript keeps %q, want %q", got, full)
	}
	// The line kept sets the same launcher without the file.
	os.Remove(file)
	if err := s.Exec(ctx, "launcher local", out); err != nil || s.st.Launcher.Slurm() {
		t.Fatalf("launcher local: %v", err)
	}
	if err := s.Exec(ctx, full, out); err != nil || s.st.Launcher.Command() != full {
		t.Fatalf("%s: %v, then %q", full, err, s.st.Launcher.Command())
	}
	// An option set to default goes back to Slurm's.
	if err := s.Exec(ctx, "launcher slurm partition=default", out); err != nil || s.st.Launcher.Partition != "" {
		t.Errorf("partition=default: %v, %+v", err, s.st.Launcher)
	}
	// The options set before stay when another is set (a reviewer's
	// account= dropped the time= set a command before).
	if err := s.Exec(ctx, "launcher slurm account=proj42", out); err != nil {
		t.Fatal(err)
	}
	if l := s.st.Launcher; l.Account != "proj42" || l.Time != "00:30:00" || l.Nodes != 2 || l.Partition != "" || len(l.Extra) != 2 {
		t.Errorf("after account=proj42: %+v; want it added to the options set before", l)
	}
	// ranks must agree with nodes x tasks-per-node (sbatch refused the
	// job with "Requested node configuration is not available").
	if err := s.Exec(ctx, "ranks 4", out); err == nil || !strings.Contains(err.Error(), "ranks 4, but the Slurm job is 2 node(s) x 3 tasks-per-node = 6 ranks") || s.st.Ranks != 6 {
		t.Errorf("ranks 4 under nodes=2 tasks-per-node=3: %v, ranks %d", err, s.st.Ranks)
	}
	out.b.Reset()
	if err := s.Exec(ctx, "ranks", out); err != nil || out.b.String() != "ranks 6 (the Slurm agent's)\n" {
		t.Errorf("ranks under Slurm: %v %q", err, out.b.String())
	}
	// The options set stay across 'launcher local' (a review's went).
	out.b.Reset()
	if err := s.Exec(ctx, "launcher local", out); err != nil || !strings.Contains(out.b.String(), "'launcher slurm' takes back the options") {
		t.Fatalf("launcher local: %v\n%s", err, out.b.String())
	}
	if err := s.Exec(ctx, "launcher slurm", out); err != nil {
		t.Fatal(err)
	}
	if l := s.st.Launcher; l.Account != "proj42" || l.Nodes != 2 || l.TasksPerNode != 3 {
		t.Errorf("launcher slurm after launcher local: %+v; want the options set before", l)
	}

	// A defaults file with a mistake says where, and what is valid.
	os.WriteFile(file, []byte(`{"slurm": {"partiton": "debug"}}`), 0o644)
	if err := s.Exec(ctx, "launcher slurm", out); err == nil || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), `"partiton" is not an option of launcher slurm: the options are nodes`) {
		t.Errorf("bad defaults file: %v", err)
	}
	os.WriteFile(file, []byte(`{"slurm": {"time": "soon"}}`), 0o644)
	if err := s.Exec(ctx, "launcher slurm", out); err == nil || !strings.Contains(err.Error(), `time: "soon" is not a Slurm time limit`) {
		t.Errorf("bad time in the defaults file: %v", err)
	}

	// Tab completion.
	if got, _ := s.Complete("launcher s", 10); !slices.Equal(got, []string{"slurm"}) {
		t.Errorf("complete 'launcher s': %q", got)
	}
	if got, _ := s.Complete("launcher slurm pa", 17); !slices.Equal(got, []string{"partition="}) {
		t.Errorf("complete 'launcher slurm pa': %q", got)
	}
	// help knows it.
	if h, ok := HelpFor("launcher"); !ok || !strings.Contains(h, "launcher slurm nodes=2") {
		t.Errorf("help launcher: %q", h)
	}
}

// sbatch without a configuration (SLURM_CONF unset off the cluster) is not
// blamed on the launcher's options, which the reviewer was sent to.
func TestSubmitErrorWithoutConfiguration(t *testing.T) {
	err := submitError("the agent", &slurm.CommandError{Command: "sbatch", Message: "error: fetch_config: DNS SRV lookup failed; fatal: Could not establish a configuration source"})
	if !strings.Contains(err.Error(), "set SLURM_CONF") || strings.Contains(err.Error(), "'launcher' shows its options") {
		t.Errorf("no configuration: %v", err)
	}
	err = submitError("the agent", &slurm.CommandError{Command: "sbatch", Message: "error: Batch job submission failed: Unable to contact slurm controller (connect failure)"})
	if !strings.Contains(err.Error(), "sbatch could not submit") || !strings.Contains(err.Error(), "'sinfo' checks it") || strings.Contains(err.Error(), "refused") {
		t.Errorf("no controller: %v", err)
	}
	err = submitError("the agent", &slurm.CommandError{Command: "sbatch", Message: "error: invalid partition specified: nope"})
	if !strings.Contains(err.Error(), "'launcher' shows its options") {
		t.Errorf("a refused option: %v", err)
	}
}

// A job the session could not cancel is reported with what to run (the
// session had ended quietly, the job holding its nodes). Here scancel is
// not on PATH.
func TestBatchJobStopFailureSaysWhatToRun(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	b := &batchJob{job: &slurm.Job{ID: "424242"}, done: make(chan struct{}), poll: time.Millisecond, stopW: func() {}}
	err := b.stop(time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "could not cancel Slurm job 424242") || !strings.Contains(err.Error(), "check 'squeue -j 424242', and cancel it with 'scancel 424242'") {
		t.Errorf("stop without scancel: %v", err)
	}
}

// The Slurm options kept across 'launcher local' are kept in the journal
// too: a reopened session's 'launcher slurm' takes them back (they had
// been kept in memory only).
func TestLauncherSlurmOptionsSurviveReopen(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	dir := t.TempDir()
	again := reopenedAfter(t, dir, "launcher slurm nodes=2 tasks-per-node=2 account=proj42", "launcher local")
	ctx := context.Background()
	out := &textOut{}
	if err := again.Exec(ctx, "launcher", out); err != nil || !strings.Contains(out.b.String(), "'launcher slurm' takes back the options") {
		t.Errorf("launcher in the reopened session: %v\n%s", err, out.b.String())
	}
	if err := again.Exec(ctx, "launcher slurm", out); err != nil {
		t.Fatal(err)
	}
	if l := again.st.Launcher; l.Account != "proj42" || l.Nodes != 2 || l.TasksPerNode != 2 || again.st.Ranks != 4 {
		t.Errorf("launcher slurm in the reopened session: %+v, ranks %d; want the options set before", l, again.st.Ranks)
	}
}

// A program sweep whose launches take more ranks than the Slurm job's
// nodes x tasks-per-node is refused as 'ranks' refuses a workload's,
// before sbatch says "Requested node configuration is not available" (a
// Slurm review); a step srun refuses for want of CPUs in the session's
// allocation gets advice.
func TestSlurmProgramRanksCheck(t *testing.T) {
	t.Setenv("SLURM_JOB_ID", "")
	t.Setenv("SLURM_JOBID", "")
	s := newSession(t)
	s.st.Launcher = &Launcher{Kind: LauncherSlurm, Nodes: 1, TasksPerNode: 2}
	_, err := s.programLauncher(context.Background(), 4, &textOut{}, nil)
	if err == nil || !strings.Contains(err.Error(), "the program's launches take up to 4 ranks (its space's ranks=), but the Slurm job is 1 node(s) x 2 tasks-per-node = 2 ranks") {
		t.Errorf("4 ranks on 1 x 2: %v", err)
	}
	refused := "srun: error: Unable to create step for job 20: More processors requested than permitted"
	t.Setenv("SLURM_NTASKS", "2")
	if got := tooFewCPUs(refused); !strings.Contains(got, "the session's allocation has 2 tasks (SLURM_NTASKS), fewer than the ranks asked: take at most 2") {
		t.Errorf("advice: %q", got)
	}
	if got := (stepLauncher{}).NotStarted(refused + "\n"); !strings.Contains(got, "take at most 2") {
		t.Errorf("a launch refused so: %q", got)
	}
	if got := tooFewCPUs("srun: error: task 0: Exited with exit code 1"); got != "" {
		t.Errorf("a program's failure: %q", got)
	}
}

// resume takes the launcher kind an adopted sweep ran with only when it has
// runs to make (a complete one had switched the session's launcher for
// good); a sweep of the session's own keeps the launcher set since, with a
// note that its configurations then compare across machines.
func TestResumeLauncherKind(t *testing.T) {
	sw := plantedTune(true)
	sw.origin, sw.ranOn = "loaded from elsewhere, sweep 3", &Launcher{Kind: LauncherSlurm, Partition: "gpu"}
	s := sessionWith(t, sw)
	out := &textOut{}
	if err := s.Exec(context.Background(), "resume", out); err != nil || s.st.Launcher.Slurm() || !strings.Contains(out.b.String(), "complete: nothing to resume") {
		t.Errorf("resume of a complete sweep: %v, launcher %s\n%s", err, s.st.Launcher.Command(), out.b.String())
	}
	// A sweep of this session's own, a run missing: the note, no switch.
	sw.origin, sw.Status = "", StatusCancelled
	sw.Results = sw.Results[1:]
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the rest is not run
	out.b.Reset()
	_ = s.Exec(ctx, "resume", out)
	if s.st.Launcher.Slurm() || !strings.Contains(out.b.String(), "note: sweep 3 ran with launcher slurm partition=gpu; its rest runs with launcher local, set since") {
		t.Errorf("resume of the session's own sweep: launcher %s\n%s", s.st.Launcher.Command(), out.b.String())
	}
	// The rest ran with launcher local: a later resume's note no longer
	// names the launcher of the first runs (a Slurm review's had advised
	// the time limit its first job ran out of), nor does the journal.
	if sw.ranOn == nil || sw.ranOn.Slurm() {
		t.Errorf("after a resume with launcher local, the sweep's launcher: %+v", sw.ranOn)
	}
	out.b.Reset()
	_ = s.Exec(ctx, "resume", out)
	if strings.Contains(out.b.String(), "ran with launcher slurm") {
		t.Errorf("a second resume still names the first launcher:\n%s", out.b.String())
	}
	if sws, err := ReadJournal(filepath.Join(s.Dir(), JournalName)); err == nil && len(sws) > 0 {
		if got := sws[len(sws)-1].ranOn; got == nil || got.Slurm() {
			t.Errorf("the journal's launcher of the resumed sweep: %+v", got)
		}
	}
}

// An agent whose Slurm job ran out of time between sweeps is said to have
// done so at the next sweep, briefly: mpirun's lines had read as a failure
// (a Slurm review).
func TestIdleAgentTimedOut(t *testing.T) {
	s := newSession(t)
	closed := make(chan struct{})
	close(closed)
	job := &batchJob{job: &slurm.Job{ID: "7"}, done: closed, state: slurm.State{Name: "TIMEOUT", Reason: "TimeLimit"}}
	s.agent = &Agent{gone: closed, proc: job}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no new agent is started
	out := &textOut{}
	s.ensureAgent(ctx, out, func(string) {})
	if want := "the previous agent's Slurm job 7 reached its time limit between sweeps; starting a new one"; !strings.Contains(out.b.String(), want) || strings.Contains(out.b.String(), "is gone") {
		t.Errorf("an idle agent's job timed out:\n%s", out.b.String())
	}
}

// Inside an allocation, the options a job step cannot take are said to
// be unused (a Slurm review's partition= and time= had been shown as set).
func TestLauncherInsideAllocation(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("SLURM_JOB_ID", "77")
	s := newSession(t)
	out := &textOut{}
	// Options whose names begin like refused ones pass.
	execAll(t, s, out, `launcher slurm extra="--time-min=5 --nodelist=n1 -c4"`)
	execAll(t, s, out, `launcher slurm partition=short account=proj time=00:05:00 extra="--qos=x"`)
	out.b.Reset()
	if err := s.Exec(context.Background(), "launcher", out); err != nil || !strings.Contains(out.b.String(), "partition, account: for a batch job only, unused here") ||
		!strings.Contains(out.b.String(), "(extra= goes to each step's srun)") || !strings.Contains(out.b.String(), "this session runs inside Slurm job 77") {
		t.Errorf("launcher inside job 77: %v\n%s", err, out.b.String())
	}
}
