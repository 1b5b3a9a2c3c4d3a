// Package slurm submits, watches and cancels Slurm jobs through Slurm's own
// client commands (sbatch, srun, squeue, scontrol, scancel): approxtune never
// talks to slurmctld directly, so whatever the site's Slurm accepts from its
// users works here too.
//
// The commands find their cluster as they do for the user: through
// SLURM_CONF (or the site's default configuration) in this process's
// environment.
package slurm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// Options are the resources and placement of a job, as a user writes them
// after `launcher slurm`. Zero values leave the choice to Slurm (or the
// site's defaults).
type Options struct {
	Nodes        int    // --nodes
	TasksPerNode int    // --ntasks-per-node
	Tasks        int    // --ntasks (the agent's ranks)
	Partition    string // --partition (sbatch only)
	Time         string // --time, Slurm's format (e.g. 00:30:00)
	Account      string // --account (sbatch only)
	// Extra are further sbatch/srun options, one per element
	// (e.g. "--constraint=haswell"), passed through unchanged.
	Extra []string
	// JobName is --job-name (default "approxtune").
	JobName string
	// MPI is srun's --mpi plugin (e.g. "pmix", what Open MPI needs); empty
	// leaves the site's MpiDefault. sbatch has no such option.
	MPI string
	// OutputDir is the directory of the batch job's output file; Submit
	// creates it (mode 0700) when missing. Empty means DefaultOutputDir().
	// Compute nodes write the file, so on a cluster it must be on a
	// file system they share with the submitting host (the home directory
	// usually is; /tmp usually is not).
	OutputDir string
}

// Job is a submitted batch job.
type Job struct {
	ID string
	// Output is the path of the job's standard output and error (the tail
	// shown when the job fails).
	Output string
}

// State is what Slurm says of a job now.
type State struct {
	// Name is Slurm's state: PENDING, RUNNING, COMPLETING, COMPLETED,
	// FAILED, CANCELLED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY, PREEMPTED, ...
	Name string
	// Reason is Slurm's reason for a pending (or failed) job, e.g.
	// "Resources", "Priority", "PartitionConfig", "NonZeroExitCode"; "None"
	// or "" when there is none.
	Reason string
	// Nodes lists the nodes a running or finished job ran on (Slurm's
	// hostlist form, e.g. "node[01-02]").
	Nodes string
	// ExitCode is Slurm's "exit:signal" form, e.g. "0:0", "3:0", "0:9".
	ExitCode string
}

// terminal are the states of a job that has ended, whatever the outcome
// (Slurm's job_state_string of the base states past JOB_SUSPENDED).
var terminal = map[string]bool{
	"COMPLETED": true, "CANCELLED": true, "FAILED": true, "TIMEOUT": true,
	"NODE_FAIL": true, "PREEMPTED": true, "BOOT_FAIL": true, "DEADLINE": true,
	"OUT_OF_MEMORY": true, "REVOKED": true,
}

// Done reports whether the job has finished, whatever the outcome.
// COMPLETING (the job's processes are still being cleaned up) is not done.
func (s State) Done() bool { return terminal[s.Name] }

// Failed reports whether the job finished in any state but COMPLETED.
func (s State) Failed() bool { return s.Done() && s.Name != "COMPLETED" }

// String is the state as a person reads it: "PENDING (PartitionConfig)",
// "RUNNING on node[01-02]", "FAILED (NonZeroExitCode, exit 3:0)".
func (s State) String() string {
	var b strings.Builder
	b.WriteString(s.Name)
	var why []string
	switch {
	case s.Reason == "" || s.Reason == "None":
	case s.Name == "CANCELLED" && s.Nodes == "":
		// Cancelled while pending, the reason is what it had waited
		// for: "CANCELLED (Resources)" had read as cancelled for want
		// of resources (a Slurm review).
		b.WriteString(" while pending")
		why = append(why, "it had waited for "+s.Reason)
	default:
		why = append(why, s.Reason)
	}
	if s.Failed() && s.ExitCode != "" && s.Name != "CANCELLED" {
		// A cancelled job's code says only how scancel ended it (0:0
		// pending, 143:0 for its SIGTERM).
		why = append(why, "exit "+s.ExitCode)
	}
	if len(why) > 0 {
		b.WriteString(" (" + strings.Join(why, ", ") + ")")
	}
	if s.Nodes != "" && !s.Done() {
		b.WriteString(" on " + s.Nodes)
	}
	return b.String()
}

// ErrNotFound is returned by Query for a job Slurm no longer knows (or never
// knew).
var ErrNotFound = errors.New("slurm: no such job")

// DefaultOutputDir is where batch jobs write their output unless
// Options.OutputDir says otherwise: $XDG_STATE_HOME/approxtune/slurm, or
// ~/.local/state/approxtune/slurm.
func DefaultOutputDir() (string, error) {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("slurm: output directory: %w", err)
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "approxtune", "slurm"), nil
}

// Submit runs sbatch with opts and the batch script script (given on sbatch's
// standard input, never written to a file others can read). env entries
// ("NAME=value") are added to sbatch's environment, from which Slurm passes
// them into the job: secrets travel this way, never on a command line. When
// sbatch refuses the job, the error carries Slurm's own message.
func Submit(ctx context.Context, opts Options, script string, env []string) (*Job, error) {
	cmd, pattern, err := sbatchCommand(ctx, opts, env)
	if err != nil {
		return nil, err
	}
	cmd.Stdin = strings.NewReader(script)
	out, err := run(cmd)
	if err != nil {
		return nil, err
	}
	// --parsable prints "ID" or "ID;CLUSTER".
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return nil, fmt.Errorf("sbatch printed %q, not a job ID", strings.TrimSpace(out))
	}
	return &Job{ID: id, Output: strings.ReplaceAll(pattern, "%j", id)}, nil
}

// sbatchCommand returns the sbatch command Submit runs (without its
// standard input) and the --output pattern, after creating the output
// directory.
func sbatchCommand(ctx context.Context, opts Options, env []string) (*exec.Cmd, string, error) {
	dir := opts.OutputDir
	if dir == "" {
		d, err := DefaultOutputDir()
		if err != nil {
			return nil, "", err
		}
		dir = d
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, "", fmt.Errorf("slurm: output directory: %w", err)
	}
	if strings.Contains(dir, "%") {
		// sbatch would read it as a file name pattern.
		return nil, "", fmt.Errorf("slurm: output directory %q: a %% in it is not supported", dir)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, "", fmt.Errorf("slurm: output directory: %w", err)
	}
	// The submission's time beside the job ID: a home shared by clusters,
	// or private clusters on one machine, see the same IDs again, and
	// one job's output must not overwrite another's.
	pattern := filepath.Join(dir, "approxtune-%j-"+time.Now().Format("20060102T150405")+".out")
	args := []string{"--parsable"}
	// Extra first: sbatch takes an option's last value (measured with
	// --output, --export and --ntasks), so the options below, which Submit
	// relies on, win over a conflicting Extra.
	args = append(args, opts.Extra...)
	args = append(args, resourceArgs(opts)...)
	if opts.Partition != "" {
		args = append(args, "--partition="+opts.Partition)
	}
	if opts.Account != "" {
		args = append(args, "--account="+opts.Account)
	}
	args = append(args, "--job-name="+jobName(opts), "--output="+pattern, "--export=ALL")
	cmd := exec.CommandContext(ctx, "sbatch", args...)
	cmd.Env = append(os.Environ(), env...)
	return cmd, pattern, nil
}

func jobName(opts Options) string {
	if opts.JobName == "" {
		return "approxtune"
	}
	return opts.JobName
}

// resourceArgs are the options sbatch and srun share.
func resourceArgs(opts Options) []string {
	var a []string
	if opts.Nodes > 0 {
		a = append(a, "--nodes="+strconv.Itoa(opts.Nodes))
	}
	if opts.Tasks > 0 {
		a = append(a, "--ntasks="+strconv.Itoa(opts.Tasks))
	}
	if opts.TasksPerNode > 0 {
		a = append(a, "--ntasks-per-node="+strconv.Itoa(opts.TasksPerNode))
	}
	if opts.Time != "" {
		a = append(a, "--time="+opts.Time)
	}
	return a
}

// run runs a Slurm client command and returns its standard output; on
// failure the error names the command and carries what it printed on
// standard error (Slurm's own message).
func run(cmd *exec.Cmd) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		name := filepath.Base(cmd.Path)
		if msg := slurmMessage(stderr.String()); msg != "" {
			return stdout.String(), &CommandError{Command: name, Message: msg, Err: err}
		}
		return stdout.String(), &CommandError{Command: name, Err: err}
	}
	return stdout.String(), nil
}

// CommandError is a Slurm client command's failure: Message is what it
// printed on standard error, its lines joined by "; ".
type CommandError struct {
	Command string // sbatch, scontrol, ...
	Message string
	Err     error // the exec error (exit status)
}

func (e *CommandError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("%s: %v", e.Command, e.Err)
	}
	return fmt.Sprintf("%s: %s (%v)", e.Command, e.Message, e.Err)
}

func (e *CommandError) Unwrap() error { return e.Err }

// slurmMessage joins a command's standard error into one line.
func slurmMessage(stderr string) string {
	var lines []string
	for _, l := range strings.Split(stderr, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "; ")
}

// notFound reports whether a client command's error says the job ID is
// unknown ("Invalid job id specified").
func notFound(err error) bool {
	var ce *CommandError
	return errors.As(err, &ce) && strings.Contains(strings.ToLower(ce.Message), "invalid job id")
}

// squeueFormat is the squeue --Format that Query falls back on: fields
// separated by "|", the exit code in the raw wait status form.
const squeueFormat = "JobID:|,State:|,Reason:|,NodeList:|,exit_code:|"

// Query returns the job's state (scontrol show job, falling back to squeue
// when scontrol fails). It returns an error wrapping ErrNotFound when
// neither knows the job: it never existed, or it ended longer ago than the
// cluster's MinJobAge.
func Query(ctx context.Context, id string) (State, error) {
	out, err := run(exec.CommandContext(ctx, "scontrol", "show", "job", "-o", id))
	if err == nil {
		if s, ok := parseScontrol(out, id); ok {
			return s, nil
		}
		err = fmt.Errorf("scontrol show job %s: no JobState in %q", id, out)
	}
	scontrolErr := err
	out, err = run(exec.CommandContext(ctx, "squeue", "-h", "-j", id, "-t", "all", "-O", squeueFormat))
	switch {
	case err == nil:
		if s, ok := parseSqueue(out, id); ok {
			return s, nil
		}
		return State{}, fmt.Errorf("job %s: %w", id, ErrNotFound)
	case notFound(err):
		return State{}, fmt.Errorf("job %s: %w", id, ErrNotFound)
	}
	return State{}, fmt.Errorf("job %s: %w; then %w", id, scontrolErr, err)
}

// parseScontrol reads the state of job id from `scontrol show job -o`
// output: one line per job (several for an array or heterogeneous job),
// "Key=value" fields separated by spaces. A value may itself hold spaces
// (JobName=my job): a word without "=" belongs to the value before it.
func parseScontrol(out, id string) (State, bool) {
	for _, line := range strings.Split(out, "\n") {
		f := scontrolFields(line)
		if f["JobId"] != id || f["JobState"] == "" {
			continue
		}
		return State{Name: f["JobState"], Reason: f["Reason"], Nodes: strings.TrimSuffix(f["NodeList"], "(null)"), ExitCode: f["ExitCode"]}, true
	}
	return State{}, false
}

// scontrolFields splits a line of `scontrol show -o` into its fields.
func scontrolFields(line string) map[string]string {
	f := map[string]string{}
	last := ""
	for _, w := range strings.Fields(line) {
		k, v, ok := strings.Cut(w, "=")
		if !ok || k == "" || strings.ContainsAny(k, "()") {
			if last != "" {
				f[last] += " " + w
			}
			continue
		}
		f[k], last = v, k
	}
	return f
}

// parseSqueue reads the state of job id from squeue output in
// squeueFormat.
func parseSqueue(out, id string) (State, bool) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) < 5 || f[0] != id {
			continue
		}
		return State{Name: f[1], Reason: f[2], Nodes: f[3], ExitCode: exitCode(f[4])}, true
	}
	return State{}, false
}

// exitCode turns squeue's raw wait status (768 for exit 3, 15 for SIGTERM)
// into Slurm's "exit:signal" form; anything else is returned as it is.
func exitCode(raw string) string {
	n, err := strconv.Atoi(raw)
	if err != nil || n < 0 {
		return raw
	}
	ws := syscall.WaitStatus(n)
	if ws.Signaled() {
		return fmt.Sprintf("0:%d", int(ws.Signal()))
	}
	return fmt.Sprintf("%d:0", n>>8&0xff)
}

// Cancel cancels the job (scancel). Cancelling a finished job is not an
// error (nor, as scancel has it, cancelling one Slurm no longer knows).
func Cancel(ctx context.Context, id string) error {
	_, err := run(exec.CommandContext(ctx, "scancel", id))
	if err != nil {
		// Slurm 22.05's scancel says nothing of either; others may.
		if ce := (*CommandError)(nil); notFound(err) || errors.As(err, &ce) && strings.Contains(ce.Message, "already completing or completed") {
			return nil
		}
		return fmt.Errorf("cancelling job %s: %w", id, err)
	}
	return nil
}

// Update is one report of Watch: the job's new state, or, on the last
// report only, the error that ended the watch before the job's end.
type Update struct {
	State
	Err error
}

// watchGiveUp is how long Query may keep failing (for another reason than
// an unknown job) before Watch gives up.
const watchGiveUp = time.Minute

// Watch polls the job's state (Query) at the given interval and sends an Update each time
// it differs from the last one sent (state, reason, nodes or exit code),
// the first one at once. The channel closes after the Update of a state
// that is Done, when ctx ends (without a further Update), or after an
// Update with Err: the job is unknown to Slurm (ErrNotFound: it ended
// longer ago than MinJobAge, or it never existed), or Query kept failing
// for a minute (slurmctld unreachable). A job can go from PENDING to its
// end between two polls: not every state is seen.
func Watch(ctx context.Context, id string, every time.Duration) <-chan Update {
	ch := make(chan Update)
	go func() {
		defer close(ch)
		send := func(u Update) bool {
			select {
			case ch <- u:
				return true
			case <-ctx.Done():
				return false
			}
		}
		var last State
		var failingSince time.Time
		first := true
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			s, err := Query(ctx, id)
			switch {
			case ctx.Err() != nil:
				return
			case errors.Is(err, ErrNotFound):
				send(Update{Err: err})
				return
			case err != nil:
				if failingSince.IsZero() {
					failingSince = time.Now()
				} else if time.Since(failingSince) >= watchGiveUp {
					send(Update{Err: fmt.Errorf("watching job %s: %w", id, err)})
					return
				}
			default:
				failingSince = time.Time{}
				if first || s != last {
					first, last = false, s
					if !send(Update{State: s}) || s.Done() {
						return
					}
				}
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}

// Tail returns the end of the job's output file, at most max bytes, from
// the start of a line when it is cut (or "" when the file cannot be read).
func (j *Job) Tail(max int) string {
	f, err := os.Open(j.Output)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := st.Size() - int64(max)
	if off < 0 {
		off = 0
	}
	b, err := io.ReadAll(io.NewSectionReader(f, off, st.Size()-off))
	if err != nil {
		return ""
	}
	if off > 0 {
		if i := bytes.IndexByte(b, '\n'); i >= 0 && i+1 < len(b) {
			b = b[i+1:]
		}
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return string(b)
}

// Allocation returns the ID of the job this process runs inside
// (SLURM_JOB_ID), if any: a session inside an allocation starts its agents
// with srun instead of submitting new jobs.
func Allocation(getenv func(string) string) (id string, ok bool) {
	id = getenv("SLURM_JOB_ID")
	if id == "" {
		id = getenv("SLURM_JOBID") // the older name
	}
	return id, id != ""
}

// Srun returns the command that runs prog with args as a job step of the
// current allocation with opts' tasks and placement; env entries are added to
// the current environment. Partition and Account belong to the allocation
// and are not passed. Cancelling ctx sends srun SIGTERM, which it passes on
// to the step's tasks; SIGKILL follows 10 s later if srun is still there.
func Srun(ctx context.Context, opts Options, env []string, prog string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "srun", SrunArgs(opts, prog, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// SrunArgs returns srun's arguments (without "srun") that run prog with args
// with opts' tasks, placement, time and MPI plugin: for a batch script that
// starts the agent with srun.
func SrunArgs(opts Options, prog string, args ...string) []string {
	a := append([]string{}, opts.Extra...)
	a = append(a, resourceArgs(opts)...)
	if opts.MPI != "" {
		a = append(a, "--mpi="+opts.MPI)
	}
	if opts.JobName != "" {
		a = append(a, "--job-name="+opts.JobName)
	}
	a = append(a, prog)
	return append(a, args...)
}

// MPIPlugins returns the MPI plugins srun offers (`srun --mpi=list`), e.g.
// pmix, pmi2, none: Open MPI's programs need pmix under srun (with pmi2 or
// none they fail in MPI_Init), while mpirun inside a batch job needs none.
func MPIPlugins(ctx context.Context) ([]string, error) {
	out, err := run(exec.CommandContext(ctx, "srun", "--mpi=list"))
	if err != nil {
		return nil, fmt.Errorf("listing MPI plugins: %w", err)
	}
	return parseMPIList(out), nil
}

// parseMPIList reads `srun --mpi=list`: a heading, one tab-indented plugin
// a line, then perhaps a line of plugin versions.
func parseMPIList(out string) []string {
	var plugins []string
	for _, l := range strings.Split(out, "\n") {
		if name, ok := strings.CutPrefix(l, "\t"); ok && strings.TrimSpace(name) != "" {
			plugins = append(plugins, strings.TrimSpace(name))
		}
	}
	return plugins
}

// Partition is one of the cluster's partitions, as sinfo lists it.
type Partition struct {
	Name    string
	Default bool // jobs that name no partition go to it
	Nodes   int
	// CPUs is the CPUs of a node: "8", or "4+" where the nodes differ.
	CPUs string
	// TimeLimit is the longest time a job may ask for: "infinite",
	// "1-00:00:00".
	TimeLimit string
}

// String is the partition as a person reads it: "debug (the default: 1
// node of 8 CPUs, time limit infinite)".
func (p Partition) String() string {
	def := ""
	if p.Default {
		def = "the default: "
	}
	nodes := "nodes"
	if p.Nodes == 1 {
		nodes = "node"
	}
	return fmt.Sprintf("%s (%s%d %s of %s CPUs, time limit %s)", p.Name, def, p.Nodes, nodes, p.CPUs, p.TimeLimit)
}

// Partitions lists the cluster's partitions (sinfo).
func Partitions(ctx context.Context) ([]Partition, error) {
	out, err := run(exec.CommandContext(ctx, "sinfo", "-h", "-o", "%P|%D|%c|%l"))
	if err != nil {
		return nil, fmt.Errorf("listing partitions: %w", err)
	}
	return parsePartitions(out), nil
}

// parsePartitions reads sinfo's "%P|%D|%c|%l" lines: a partition's nodes
// may come on several lines (nodes of different states or sizes), which
// are summed.
func parsePartitions(out string) []Partition {
	var ps []Partition
	at := map[string]int{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Split(strings.TrimSpace(l), "|")
		if len(f) != 4 || f[0] == "" {
			continue
		}
		name, def := strings.CutSuffix(f[0], "*")
		nodes, _ := strconv.Atoi(f[1])
		i, seen := at[name]
		if !seen {
			at[name] = len(ps)
			ps = append(ps, Partition{Name: name, Default: def, CPUs: f[2], TimeLimit: f[3]})
			i = len(ps) - 1
		} else if ps[i].CPUs != f[2] {
			a, _ := strconv.Atoi(strings.TrimSuffix(ps[i].CPUs, "+"))
			b, _ := strconv.Atoi(strings.TrimSuffix(f[2], "+"))
			ps[i].CPUs = strconv.Itoa(min(a, b)) + "+"
		}
		ps[i].Nodes += nodes
	}
	return ps
}

// RunningOwn lists the ids of this user's running jobs with one of names
// (as squeue gives them): approxtune's own agents and holding jobs, which
// a pending one may be waiting for.
func RunningOwn(ctx context.Context, names ...string) ([]string, error) {
	u, err := user.Current()
	if err != nil {
		return nil, fmt.Errorf("running jobs: %w", err)
	}
	out, err := run(exec.CommandContext(ctx, "squeue", "--noheader", "--states=RUNNING", "--user="+u.Username, "--name="+strings.Join(names, ","), "--format=%i"))
	if err != nil {
		return nil, err
	}
	return strings.Fields(out), nil
}
