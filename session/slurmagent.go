package session

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/approxtune/approxtune/internal/launch"
	"github.com/approxtune/approxtune/internal/programs"
	"github.com/approxtune/approxtune/internal/protocol"
	"github.com/approxtune/approxtune/internal/slurm"
)

// starter starts an agent for the session and waits for its hello: one
// for each kind of launcher.
type starter interface {
	// start starts an agent of the session's ranks; it says what it does
	// on out, and the news of a job that waits or runs through note.
	start(ctx context.Context, s *Session, out Output, note func(string)) (*Agent, error)
}

// starter is the launcher's way of starting agents.
func (l *Launcher) starter() starter {
	if l.Slurm() {
		return slurmStarter{l}
	}
	return localStarter{}
}

// localStarter runs agents under this machine's mpirun.
type localStarter struct{}

func (localStarter) start(ctx context.Context, s *Session, out Output, note func(string)) (*Agent, error) {
	out.Print(fmt.Sprintf("starting a local agent: %d ranks under mpirun", s.st.Ranks))
	return StartLocal(ctx, s.opts.Binary, s.st.Ranks, s.opts.HelloTimeout)
}

// slurmStarter submits agents to Slurm: a batch job whose srun runs the
// agent's ranks, or, when the session itself runs inside an allocation, a
// job step of it. The agent dials back to the session; its token travels
// in the job's environment (the environment of sbatch or srun), never on a
// command line or in a file.
type slurmStarter struct{ l *Launcher }

func (st slurmStarter) start(ctx context.Context, s *Session, out Output, note func(string)) (*Agent, error) {
	l := st.l
	host, port := s.dialHost(l)
	if l.Address == "" {
		if _, err := net.DefaultResolver.LookupHost(ctx, host); err != nil {
			return nil, fmt.Errorf("this machine's name %q does not resolve (%v): set 'launcher slurm address=HOST' to a name or address of this machine that the compute nodes reach%s", host, err, ownAddresses())
		}
	}
	token, err := NewToken()
	if err != nil {
		return nil, err
	}
	if port == "" {
		port = "0"
	}
	ln, err := Listen(net.JoinHostPort("", port), token)
	if err != nil {
		return nil, fmt.Errorf("%v: set another port with 'launcher slurm address=%s:PORT', or none for a free one", err, host)
	}
	defer ln.Close()
	_, port, _ = net.SplitHostPort(ln.Addr())
	dial := net.JoinHostPort(host, port)
	env := []string{protocol.TokenEnv + "=" + token}
	opts := slurm.Options{Nodes: l.Nodes, TasksPerNode: l.TasksPerNode, Tasks: s.st.Ranks, Partition: l.Partition, Time: l.Time,
		Account: l.Account, Extra: l.Extra, MPI: l.MPI, OutputDir: l.Output}
	if id, ok := slurm.Allocation(os.Getenv); ok {
		// A step of the session's own allocation: partition and account
		// are the allocation's.
		out.Print(fmt.Sprintf("starting the agent as a job step of Slurm job %s (the session's allocation): srun, %d ranks, dialing %s", id, s.st.Ranks, dial))
		opts.Extra = append([]string{"--kill-on-bad-exit=1"}, opts.Extra...)
		cmd := slurm.Srun(context.Background(), opts, env, s.opts.Binary, "agent", "--connect", dial)
		a, err := startProcess(ctx, cmd, "srun", fmt.Sprintf("the agent's job step (srun in Slurm job %s)", id), ln, s.opts.HelloTimeout)
		if a != nil {
			a.job = id
		}
		return a, err
	}
	job, err := slurm.Submit(ctx, opts, batchScript(s.opts.Binary, dial, l.MPI), env)
	if err != nil {
		return nil, submitError("the agent's job", err)
	}
	out.Print(fmt.Sprintf("submitted the agent as Slurm job %s: %s; it dials %s; its output goes to %s", job.ID, describeJob(opts), dial, job.Output))
	b := watchJob(job, opts, dial, s.opts.JobPoll, note)
	a, err := b.waitHello(ctx, ln, s.opts.HelloTimeout)
	if err != nil {
		if msg := err.Error(); l.MPI != "pmix" && strings.Contains(msg, "MPI_Init") &&
			(strings.Contains(msg, "Open MPI") && strings.Contains(msg, "PMI") || strings.Contains(msg, "MPI_ERRORS_ARE_FATAL")) {
			// Open MPI's banner about Slurm's PMI is longer than the
			// output's end shown, and its first line, the one that says
			// what failed, is cut off; with two ranks' aborts after it,
			// so was every line naming Open MPI or PMI (CI runs), where
			// its MPI_ERRORS_ARE_FATAL abort in MPI_Init remains.
			with := "the site's default --mpi"
			if l.MPI != "" {
				with = "--mpi=" + l.MPI
			}
			err = fmt.Errorf("%w\nOpen MPI could not start the agent's ranks under srun's %s: set 'launcher slurm mpi=pmix' ('srun --mpi=list' shows what the cluster offers)", err, with)
		}
		return nil, err
	}
	a.proc, a.job = b, job.ID
	return a, nil
}

// submitError is Submit's failure to submit what (the agent's job, ...):
// sbatch's own message when it refused the job.
func submitError(what string, err error) error {
	var ce *slurm.CommandError
	if errors.As(err, &ce) && ce.Command == "sbatch" && ce.Message != "" {
		if strings.Contains(ce.Message, "configuration source") || strings.Contains(ce.Message, "SRV") || strings.Contains(ce.Message, "configuration file") {
			// Not the job's options: the client found no slurm.conf.
			return fmt.Errorf("sbatch could not submit %s: %s (Slurm's commands find no configuration here: set SLURM_CONF to the cluster's slurm.conf, or run on a node where sbatch works)", what, ce.Message)
		}
		if strings.Contains(ce.Message, "Unable to contact slurm controller") {
			// Not the job's options either: Slurm itself is not there.
			return fmt.Errorf("sbatch could not submit %s: %s (Slurm's controller does not answer: 'sinfo' checks it; once it answers, the sweep can run again)", what, ce.Message)
		}
		why := ""
		if strings.Contains(strings.ToLower(ce.Message), "invalid partition") {
			why = partitionsNote(context.Background())
		}
		return fmt.Errorf("sbatch refused %s: %s%s ('launcher' shows its options, 'launcher slurm KEY=VALUE' changes them)", what, ce.Message, why)
	}
	return fmt.Errorf("submitting %s: %w", what, err)
}

// partitionsNote lists the cluster's partitions for an error about the
// one a job asked for ("" when sinfo does not answer within 10 s or ctx).
func partitionsNote(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ps, err := slurm.Partitions(ctx)
	if err != nil || len(ps) == 0 {
		return ""
	}
	var ls []string
	for _, p := range ps {
		ls = append(ls, p.String())
	}
	return "; the partitions: " + strings.Join(ls, ", ")
}

// neverStarts reports whether Slurm says the pending job will not start
// as it is: it asks for more than its partition has or allows. The
// session cancels such a job rather than wait for it without end (a
// script or a stored notebook has no one to interrupt it). Slurm also
// gives PartitionNodeLimit when nodes of the partition are down or
// drained, so that reason counts only when the job asks for more nodes
// than the partition has at all; and a job that may run in several
// partitions (partition=a,b) shows the reason of the last one tried, so
// none counts for it.
func (b *batchJob) neverStarts(ctx context.Context, st slurm.State) bool {
	if st.Name != "PENDING" || strings.Contains(b.opts.Partition, ",") {
		return false
	}
	switch st.Reason {
	case "PartitionConfig", "PartitionTimeLimit":
		return true
	case "PartitionNodeLimit":
		if b.opts.Nodes == 0 {
			return false
		}
		qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		ps, err := slurm.Partitions(qctx)
		if err != nil {
			return false
		}
		for _, p := range ps {
			if p.Name == b.opts.Partition || b.opts.Partition == "" && p.Default {
				return b.opts.Nodes > p.Nodes
			}
		}
	}
	return false
}

// stillNeverStarts asks Slurm again, confirm after a job was seen never to
// start, whether it still never starts (not a passing state), and returns
// its state.
func (b *batchJob) stillNeverStarts(ctx context.Context) (slurm.State, bool) {
	b.refresh(ctx)
	st, _ := b.current()
	return st, b.neverStarts(ctx, st)
}

// cannotStart cancels a job that neverStarts, and is the error that says
// so (or that it could not be cancelled).
func (b *batchJob) cannotStart(ctx context.Context, st slurm.State) error {
	cancelled := "the session cancelled it"
	if err := b.stop(5 * time.Second); err != nil {
		cancelled = err.Error()
	}
	return fmt.Errorf("Slurm job %s cannot start: %s: %s; %s%s ('launcher' shows the job's options, 'launcher slurm KEY=VALUE' and 'ranks' change them)",
		b.job.ID, st.String(), pendingWhy[st.Reason], cancelled, partitionsNote(ctx))
}

// describeJob says what a job asks for, as sbatch options.
func describeJob(o slurm.Options) string {
	parts := []string{fmt.Sprintf("%d ranks", o.Tasks)}
	if o.Nodes == 1 {
		parts = append(parts, "1 node")
	} else if o.Nodes > 1 {
		parts = append(parts, fmt.Sprintf("%d nodes", o.Nodes))
	}
	if o.TasksPerNode > 0 {
		parts = append(parts, fmt.Sprintf("%d per node", o.TasksPerNode))
	}
	for _, kv := range [][2]string{{"partition", o.Partition}, {"time", o.Time}, {"account", o.Account}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" "+kv[1])
		}
	}
	if len(o.Extra) > 0 {
		parts = append(parts, strings.Join(o.Extra, " "))
	}
	return strings.Join(parts, ", ")
}

// batchScript is the batch job's script: srun runs the agent's ranks on
// the job's tasks. It holds no secret (the token is in the environment).
func batchScript(binary, dial, mpi string) string {
	args := slurm.SrunArgs(slurm.Options{MPI: mpi, Extra: []string{"--kill-on-bad-exit=1"}}, binary, "agent", "--connect", dial)
	for i, a := range args {
		args[i] = shellQuote(a)
	}
	return fmt.Sprintf("#!/bin/sh\n# An approxtune agent: its rank 0 dials the session at %s.\nexec srun %s\n", dial, strings.Join(args, " "))
}

// ownAddresses lists this machine's non-loopback addresses, for an error
// that asks for one.
func ownAddresses() string {
	ifs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	var as []string
	for _, a := range ifs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			as = append(as, n.IP.String())
		}
	}
	if len(as) == 0 {
		return ""
	}
	return " (this machine's addresses: " + strings.Join(as, ", ") + ")"
}

// batchJob is a Slurm batch job that runs an agent: the session watches
// it from its submission to its end, and cancels it to stop the agent.
type batchJob struct {
	job     *slurm.Job
	opts    slurm.Options // what it asked for
	dial    string        // the address its agent dials
	poll    time.Duration // how often its state is asked
	done    chan struct{} // closed when the job ended (or the watch stopped)
	changed chan struct{} // a new state came (capacity 1)
	stopW   context.CancelFunc

	mu    sync.Mutex
	state slurm.State
	lost  error // the watch ended without an end state: why
	notes func(string)
}

// watchJob starts watching job every poll, each change of state sent to
// notes.
func watchJob(job *slurm.Job, opts slurm.Options, dial string, poll time.Duration, notes func(string)) *batchJob {
	ctx, cancel := context.WithCancel(context.Background())
	b := &batchJob{job: job, opts: opts, dial: dial, poll: poll, done: make(chan struct{}), changed: make(chan struct{}, 1), stopW: cancel, notes: notes}
	go func() {
		defer close(b.done)
		defer cancel()
		for u := range slurm.Watch(ctx, job.ID, poll) {
			b.mu.Lock()
			seen := u.Err == nil && u.State == b.state // refresh said it
			if u.Err != nil {
				b.lost = u.Err
			} else {
				b.state = u.State
			}
			notes := b.notes
			b.mu.Unlock()
			if notes != nil && !seen {
				if u.Err != nil {
					notes(fmt.Sprintf("Slurm job %s: no longer known to Slurm (%v)", job.ID, u.Err))
				} else {
					notes(jobLine(job.ID, u.State, ownHolders(ctx, job.ID, u.State)))
				}
			}
			select {
			case b.changed <- struct{}{}:
			default:
			}
		}
	}()
	return b
}

// pendingWhy explains Slurm's commonest reasons for a pending job.
var pendingWhy = map[string]string{
	"Resources":              "waiting for nodes to free up",
	"Priority":               "jobs of higher priority go first",
	"PartitionConfig":        "the job asks for more than the partition has or allows (nodes, CPUs, time): it will never start as it is",
	"PartitionNodeLimit":     "the job asks for more nodes than the partition has or allows (nodes=), or nodes of it are down or drained",
	"PartitionTimeLimit":     "the job's time limit is above the partition's (time=): it will never start as it is",
	"ReqNodeNotAvail":        "a node it needs is down or reserved",
	"JobHeldUser":            "held: 'scontrol release' lets it go",
	"JobHeldAdmin":           "held by an administrator",
	"BeginTime":              "its start time has not come",
	"QOSMaxJobsPerUserLimit": "you have as many jobs running as your QOS allows",
	"AssocMaxJobsLimit":      "your account has as many jobs running as it may",
}

// jobLine is a job's state as the live display shows it; holders, for a
// pending one, what it may wait for (ownHolders).
func jobLine(id string, st slurm.State, holders string) string {
	s := "Slurm job " + id + ": " + st.String()
	if st.Name == "PENDING" {
		if why := pendingWhy[st.Reason]; why != "" {
			s += ": " + why
		}
		s += holders + "; interrupt to cancel it"
	}
	return s
}

// ownHolders names, for a job pending for nodes, the user's own approxtune
// jobs that run now: another session's agent (it holds its nodes while
// that session lives, idle between sweeps) or program sweep. A second
// session had read only "waiting for nodes to free up" (a Slurm review).
// "" when there are none, or for another state.
func ownHolders(ctx context.Context, id string, st slurm.State) string {
	if st.Name != "PENDING" || st.Reason != "Resources" && st.Reason != "Priority" {
		return ""
	}
	// An agent's job and a program sweep's holding job, each may wait for
	// the other kind.
	all, err := slurm.RunningOwn(ctx, "approxtune", programJobName)
	if err != nil {
		return ""
	}
	var ids []string
	for _, x := range all {
		if x != id {
			ids = append(ids, x)
		}
	}
	which := "jobs " + strings.Join(ids, ", ") + " are"
	switch len(ids) {
	case 0:
		return ""
	case 1:
		which = "job " + ids[0] + " is"
	}
	return fmt.Sprintf(" (your approxtune %s running: another session's agent holds its nodes while that session is open, idle or not ('launcher local' or closing it there frees them); a program sweep's, until its sweep ends)", which)
}

// refresh asks Slurm for the job's state now, between two polls, and
// says it when it changed: once the agent said hello, the display shows
// where its job runs even when the job started since the last poll.
func (b *batchJob) refresh(ctx context.Context) {
	st, err := slurm.Query(ctx, b.job.ID)
	if err != nil {
		return
	}
	b.mu.Lock()
	changed := st != b.state
	if changed {
		b.state = st
	}
	notes := b.notes
	b.mu.Unlock()
	if changed && notes != nil {
		notes(jobLine(b.job.ID, st, ""))
	}
}

func (b *batchJob) current() (slurm.State, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state, b.lost
}

func (b *batchJob) setNotes(f func(string)) {
	b.mu.Lock()
	b.notes = f
	b.mu.Unlock()
}

func (b *batchJob) ended() <-chan struct{} { return b.done }

func (b *batchJob) name() string { return "Slurm job " + b.job.ID }

// confirm is how long a pending reason that neverStarts must hold before
// the job is given up: a few polls.
func (b *batchJob) confirm() time.Duration { return 3*b.poll + time.Second }

// settle allows the watch a few polls to see the job's end once the
// agent's connection is lost.
func (b *batchJob) settle() time.Duration { return 3*b.poll + 10*time.Second }

// stop cancels the job (scancel) and waits up to grace and a few polls for
// its end.
func (b *batchJob) stop(grace time.Duration) error {
	select {
	case <-b.done:
		b.tidy()
		return nil
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	err := slurm.Cancel(ctx, b.job.ID)
	cancel()
	check := fmt.Sprintf("it may still hold its nodes: check 'squeue -j %s', and cancel it with 'scancel %s'", b.job.ID, b.job.ID)
	if err != nil {
		return fmt.Errorf("could not cancel Slurm job %s (%v): %s", b.job.ID, err, check)
	}
	select {
	case <-b.done:
		b.tidy()
	case <-time.After(grace + 3*b.poll):
		b.stopW()
		if st, _ := b.current(); st.Name == "COMPLETING" {
			return nil // its processes are gone; the epilog frees the nodes
		}
		return fmt.Errorf("Slurm job %s was not over %v after scancel: %s", b.job.ID, grace+3*b.poll, check)
	}
	return nil
}

// finish waits up to grace for the job to end once its agent was told to
// shut down (srun and the script then end), and cancels it otherwise.
func (b *batchJob) finish(grace time.Duration) error {
	select {
	case <-b.done:
		b.tidy()
		return nil
	case <-time.After(grace):
	}
	return b.stop(grace)
}

// tidy removes the output file of a job whose agent shut down when told
// (COMPLETED), or that wrote nothing: it holds nothing the session did
// not say, and a user's output folder had piled up 23 of them, several
// empty (a Slurm review). A job that ended otherwise keeps its file: its
// end is what the session's errors quote.
func (b *batchJob) tidy() {
	if b.job.Output == "" {
		return
	}
	st, _ := b.current()
	if st.Name == "COMPLETED" || onlySlurmsLines(b.job.Output) {
		os.Remove(b.job.Output)
	}
}

// onlySlurmsLines says whether the file at path holds nothing but Slurm's
// own lines ("slurmstepd: error: *** JOB 12 ON node CANCELLED AT ...",
// what a job cancelled when done, a program sweep's holding one, holds),
// or nothing.
func onlySlurmsLines(path string) bool {
	b, err := os.ReadFile(path)
	if err != nil || len(b) > 64<<10 {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.Contains(l, "*** JOB ") {
			return false
		}
	}
	return true
}

// describe says how the job ended, or where it stands, with the end of its
// output.
func (b *batchJob) describe() string {
	st, lost := b.current()
	var s string
	select {
	case <-b.done:
		if lost != nil && !st.Done() {
			s = fmt.Sprintf("Slurm job %s: its end is unknown (%v)", b.job.ID, lost)
		} else {
			s = "Slurm job " + b.job.ID + " " + st.String()
		}
	default:
		s = "Slurm job " + b.job.ID + " is " + st.String()
	}
	if st.Name == "TIMEOUT" {
		// 'resume' alone would time out again (a Slurm review).
		s += " (its time limit is 'launcher slurm time=': raise it before 'resume' where the sweep needs longer)"
	}
	tail := lastLines(b.job.Tail(8<<10), 15)
	if tail != "" {
		s += "; the end of its output (" + b.job.Output + "):\n" + tail
	}
	if strings.Contains(tail, "execve(): ") && strings.Contains(tail, "No such file or directory") {
		// srun could not start the agent: the binary is not where the
		// compute nodes look (a Slurm review's deleted copy).
		s += "\nthe compute nodes could not find the approxtune binary the job runs: install it where they see it (a file system they share, the same path), as README.md's \"On a cluster\" says"
	}
	if strings.Contains(tail, "connect to the session at") {
		s += fmt.Sprintf("\nthe compute nodes could not reach the session at %s: set 'launcher slurm address=HOST' to a name or address of this machine that they reach%s", b.dial, ownAddresses())
	}
	return s
}

// lastLines is the last n lines of s, each indented.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	if len(lines) == 1 && lines[0] == "" {
		return ""
	}
	return "  " + strings.Join(lines, "\n  ")
}

// waitHello waits for the job's agent to dial ln and say hello. It gives
// up when the job ends first (an error that says how it ended, with the
// end of its output), when its agent says nothing within timeout of the
// job's start, or when ctx ends; the job is then cancelled. A pending job
// is waited for as long as ctx lasts (the display shows why it waits),
// unless Slurm says it will never start as it is (neverStarts).
func (b *batchJob) waitHello(ctx context.Context, ln *Listener, timeout time.Duration) (*Agent, error) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	type accepted struct {
		a   *Agent
		err error
	}
	got := make(chan accepted, 1)
	go func() {
		a, err := ln.Accept(actx)
		got <- accepted{a, err}
	}()
	// stopWaiting ends the wait for an agent; one that said hello
	// meanwhile is kept.
	stopWaiting := func() *Agent {
		cancel()
		return (<-got).a
	}
	var hello, giveUp <-chan time.Time
	for {
		select {
		case r := <-got:
			if r.err == nil {
				b.refresh(ctx)
				return r.a, nil
			}
			st, _ := b.current()
			b.stop(5 * time.Second)
			if ctx.Err() != nil {
				return nil, fmt.Errorf("Slurm job %s cancelled while %s", b.job.ID, st.String())
			}
			return nil, fmt.Errorf("waiting for the agent of Slurm job %s: %w; the job is cancelled", b.job.ID, r.err)
		case <-b.changed:
			st, _ := b.current()
			if st.Name == "RUNNING" && hello == nil {
				hello = time.After(timeout)
			}
			if giveUp == nil && b.neverStarts(ctx, st) {
				giveUp = time.After(b.confirm())
			}
		case <-giveUp:
			giveUp = nil
			if st, never := b.stillNeverStarts(ctx); never {
				if a := stopWaiting(); a != nil {
					return a, nil
				}
				return nil, b.cannotStart(ctx, st)
			}
		case <-b.done:
			if a := stopWaiting(); a != nil {
				return a, nil
			}
			return nil, fmt.Errorf("the agent's job ended before its agent said hello: %s", b.describe())
		case <-hello:
			if a := stopWaiting(); a != nil {
				return a, nil
			}
			b.stop(5 * time.Second)
			return nil, fmt.Errorf("the agent of Slurm job %s did not say hello within %v of the job's start; the job is cancelled: %s", b.job.ID, timeout, b.describe())
		}
	}
}

// programLaunch is how a program sweep launches its runs (see
// programLauncher), and what it holds meanwhile.
type programLaunch struct {
	launcher programs.Launcher
	scratch  string    // the runs' directories ("" for the system's temporary one)
	hold     *batchJob // the Slurm job whose steps the launches are, if the session submitted it
	stopBeat func()    // stops the heartbeat the hold job watches (holdScript)
	job      string    // the Slurm job whose steps the launches are (hold's, or the session's allocation); "" under mpirun
}

// programLauncher is how a program sweep of the session's launcher
// launches its runs, each of up to ranks ranks: under this machine's
// mpirun; with launcher slurm, as job steps (srun) of the session's own
// allocation, or, outside one, of a job it submits to hold the nodes for
// the sweep (a batch job that only waits) once that job runs. The wait
// for it shows its states through note, and ends when ctx does (the job
// cancelled). release cancels the job.
func (s *Session) programLauncher(ctx context.Context, ranks int, out Output, note func(string)) (*programLaunch, error) {
	l := s.st.Launcher
	if !l.Slurm() {
		m, err := launch.Find()
		if err != nil {
			return nil, err
		}
		return &programLaunch{launcher: programs.Mpirun{Launcher: m}}, nil
	}
	if _, in := slurm.Allocation(os.Getenv); !in && l.Nodes > 0 && l.TasksPerNode > 0 && ranks > l.Nodes*l.TasksPerNode {
		// As 'ranks' says of a workload's: sbatch had refused the job
		// with "Requested node configuration is not available".
		return nil, fmt.Errorf("the program's launches take up to %d ranks (its space's ranks=), but the Slurm job is %d node(s) x %d tasks-per-node = %d ranks: change those ('launcher slurm nodes=N tasks-per-node=M'), clear one ('launcher slurm tasks-per-node=default'), or take fewer ranks",
			ranks, l.Nodes, l.TasksPerNode, l.Nodes*l.TasksPerNode)
	}
	if s.agent != nil && s.agent.proc != nil {
		// An idle agent this session started holds its job's nodes (or,
		// in an allocation, its step's CPUs): the program's job would
		// wait for them, or its steps never start (a reviewer's sweep
		// waited on its own agent's job until interrupted).
		out.Print(fmt.Sprintf("stopping the agent (%s) to free its nodes for the program's launches; a workload's next sweep starts another", s.agent.runBy()))
		s.stopAgent(out)
	}
	// The ranks write the runs' results and read their decks: the
	// directories are on the file system the jobs' output goes to, which
	// the nodes share.
	scratch := l.Output
	if scratch == "" {
		d, err := slurm.DefaultOutputDir()
		if err != nil {
			return nil, err
		}
		scratch = d
	}
	scratch, err := filepath.Abs(filepath.Join(scratch, "runs"))
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		return nil, fmt.Errorf("the program's run directories: %w", err)
	}
	step := slurm.Options{MPI: l.MPI, Extra: []string{"--kill-on-bad-exit=1", "--export=ALL"}}
	if id, ok := slurm.Allocation(os.Getenv); ok {
		// As the agent's step: the allocation's options are its own.
		step.Extra = append(step.Extra, l.Extra...)
		out.Print(fmt.Sprintf("each launch of the program is a job step of Slurm job %s (the session's allocation): srun", id))
		return &programLaunch{launcher: stepLauncher{opts: step}, scratch: scratch, job: id}, nil
	}
	opts := slurm.Options{Nodes: l.Nodes, TasksPerNode: l.TasksPerNode, Tasks: ranks, Partition: l.Partition, Time: l.Time,
		Account: l.Account, Extra: l.Extra, OutputDir: l.Output, JobName: programJobName}
	alive := filepath.Join(scratch, "hold-"+NewSessionID()+".alive")
	stopBeat, err := heartbeat(alive, s.opts.HoldQuiet/6)
	if err != nil {
		return nil, fmt.Errorf("the program's job: %w", err)
	}
	job, err := slurm.Submit(ctx, opts, holdScript, []string{"APPROXTUNE_HOLD_ALIVE=" + alive,
		fmt.Sprintf("APPROXTUNE_HOLD_QUIET=%d", int(math.Ceil(s.opts.HoldQuiet.Seconds())))})
	if err != nil {
		stopBeat()
		return nil, submitError("the job for the program's launches", err)
	}
	out.Print(fmt.Sprintf("submitted Slurm job %s to hold the nodes of the program's launches: %s; each launch is a job step of it (srun); its output goes to %s", job.ID, describeJob(opts), job.Output))
	b := watchJob(job, opts, "", s.opts.JobPoll, note)
	pl := &programLaunch{scratch: scratch, hold: b, stopBeat: stopBeat, job: job.ID}
	if err := b.waitRunning(ctx); err != nil {
		pl.release(nil)
		return nil, err
	}
	step.Extra = append(step.Extra, "--jobid="+job.ID)
	pl.launcher = stepLauncher{opts: step, hold: b}
	return pl, nil
}

// holdScript is the script of the job that holds a program sweep's nodes:
// it waits until cancelled, its time limit, or a silence of the session
// (heartbeat).
const holdScript = `#!/bin/sh
# Holds the nodes of an approxtune program sweep: the session runs each
# launch of the program as a job step (srun --jobid), and cancels this job
# when the sweep ends. While it holds the job it touches the file
# $APPROXTUNE_HOLD_ALIVE; when it has not for $APPROXTUNE_HOLD_QUIET
# seconds (the session was killed), the job ends itself.
quiet=${APPROXTUNE_HOLD_QUIET:-180}
while :; do
	sleep 5
	[ -n "$APPROXTUNE_HOLD_ALIVE" ] || continue
	last=$(stat -c %Y "$APPROXTUNE_HOLD_ALIVE" 2>/dev/null || echo 0)
	if [ $(( $(date +%s) - last )) -gt "$quiet" ]; then
		echo "approxtune: no word from the session for more than $quiet s (it ended without releasing this job): ending the job that held its program's nodes"
		exit 0
	fi
done
`

// heartbeat touches the file path every interval until the function it
// returns is called, which removes the file.
func heartbeat(path string, interval time.Duration) (func(), error) {
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case now := <-t.C:
				os.Chtimes(path, now, now)
			case <-done:
				os.Remove(path)
				return
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }, nil
}

// release cancels the job that held the launches' nodes, if any, and
// says so on out (when not nil).
func (pl *programLaunch) release(out Output) {
	if pl.hold == nil {
		return
	}
	// The job is cancelled below: its heartbeat can stop. (Stopped
	// first, the job could end itself before the cancel; with 5 s
	// between its looks and a quiet of minutes it does not.)
	defer pl.stopBeat()
	b := pl.hold
	b.setNotes(nil)
	over := false
	select {
	case <-b.done:
		over = true
	default:
	}
	err := b.stop(10 * time.Second)
	switch {
	case out == nil:
	case err != nil:
		out.Print(fmt.Sprintf("cancelling Slurm job %s, which held the program's nodes: %v", b.job.ID, err))
	case over:
		out.Print(fmt.Sprintf("Slurm job %s, which held the program's nodes, is over: %s", b.job.ID, b.stateName()))
	default:
		out.Print(fmt.Sprintf("released Slurm job %s, which held the program's nodes (scancel)", b.job.ID))
	}
}

// explain adds to err, a launch's failure, how the job holding the
// launches ended when it did.
func (pl *programLaunch) explain(ctx context.Context, err error) error {
	var refused *programs.LaunchError
	if pl.hold == nil || errors.As(err, &refused) || !pl.hold.gone(ctx) {
		return err
	}
	return fmt.Errorf("%w\n%s; 'resume' runs the rest in a new job", err, pl.hold.describe())
}

// stepLauncher runs each launch of a program as a Slurm job step (srun)
// with opts, in the job hold when there is one; the ranks' environment
// (the preload library's variables) is srun's.
type stepLauncher struct {
	opts slurm.Options
	hold *batchJob
}

// Command is srun's command for n ranks of prog, or an error when the job
// holding the nodes has ended.
func (sl stepLauncher) Command(ctx context.Context, n int, env []string, prog string, args ...string) (*exec.Cmd, error) {
	if sl.hold != nil && sl.hold.gone(ctx) {
		return nil, fmt.Errorf("the job holding the program's nodes has ended: %s; 'resume' runs the rest in a new job", sl.hold.describe())
	}
	o := sl.opts
	o.Tasks = n
	// One BLAS thread a rank, as under mpirun (launch.Launcher.Env),
	// unless the user set the program's.
	env = append(append([]string{"OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1"}, programs.UserThreads()...), env...)
	cmd := slurm.Srun(ctx, o, env, prog, args...)
	// A session killed outright takes its step down (as
	// programs.Supervise does mpirun; srun stops on SIGTERM itself), and
	// a terminal's Ctrl-C is the session's alone (programs.Supervise).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	return cmd, nil
}

// NotStarted implements programs.StartChecker: srun's own refusals to
// start a job step, which no configuration is to blame for. A job past
// its time limit still reads RUNNING for a while, but refuses new steps
// ("Job/step already completing or completed"); the launch had been
// reported as the program's exit status 1, with advice to skip its
// configuration (a Slurm review).
func (sl stepLauncher) NotStarted(out string) string {
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		why, ok := strings.CutPrefix(l, "srun: error: ")
		if !ok {
			continue
		}
		switch {
		case strings.HasPrefix(why, "Unable to create step for job"):
			msg := "srun could not start the launch as a job step: " + why
			if strings.Contains(why, "already completing or completed") {
				msg += " (the job has reached its time limit or was ended: 'resume' runs the rest in a new job; 'launcher slurm time=' sets its limit)"
			}
			return msg + tooFewCPUs(why)
		case strings.HasPrefix(why, "Invalid MPI type"):
			return "srun refused the launch: " + why + " ('launcher slurm mpi=' takes one of them, or 'mpi=default')"
		case strings.HasPrefix(why, "Unable to allocate resources"):
			return "srun could not get the launch's resources: " + why
		}
	}
	return ""
}

// tooFewCPUs is advice for srun's output when it refused a step larger
// than the allocation ("More processors requested than permitted"), or "".
// srun's own line had been all a session in 'salloc -n 2' said of ranks 4.
func tooFewCPUs(srunOut string) string {
	if !strings.Contains(srunOut, "More processors requested than permitted") {
		return ""
	}
	has, take := "fewer CPUs than the ranks asked", "fewer"
	if n := os.Getenv("SLURM_NTASKS"); n != "" {
		has, take = n+" tasks (SLURM_NTASKS), fewer than the ranks asked", "at most "+n
	}
	return fmt.Sprintf("\nthe session's allocation has %s: take %s ('ranks', or a program's space's ranks=), or start the session in a larger allocation (salloc -n N)", has, take)
}

// waitRunning waits for the job to run. It gives up when the job ends
// first (an error that says how, with the end of its output) or when ctx
// ends (the job is then cancelled). A pending job is waited for as long as
// ctx lasts (the display shows why it waits), unless Slurm says it will
// never start as it is (neverStarts).
func (b *batchJob) waitRunning(ctx context.Context) error {
	var giveUp <-chan time.Time
	for {
		st, _ := b.current()
		if st.Name == "RUNNING" {
			return nil
		}
		if giveUp == nil && b.neverStarts(ctx, st) {
			giveUp = time.After(b.confirm())
		}
		select {
		case <-giveUp:
			giveUp = nil
			if st, never := b.stillNeverStarts(ctx); never {
				return b.cannotStart(ctx, st)
			}
		case <-b.changed:
		case <-b.done:
			return fmt.Errorf("the job for the program's launches ended before they ran: %s", b.describe())
		case <-ctx.Done():
			st, _ := b.current()
			b.stop(5 * time.Second)
			return fmt.Errorf("Slurm job %s cancelled while %s", b.job.ID, st.String())
		}
	}
}

// gone reports whether the job no longer runs, asking Slurm now; a job
// on its way out (COMPLETING, say) is given a few polls to reach its end
// state, so that describe says it.
func (b *batchJob) gone(ctx context.Context) bool {
	select {
	case <-b.done:
		return true
	default:
	}
	b.refresh(ctx)
	if st, _ := b.current(); st.Name == "RUNNING" {
		return false
	}
	select {
	case <-b.done:
	case <-time.After(b.settle()):
	case <-ctx.Done():
	}
	return true
}

// timedOutIdle says whether the job ended with its time limit reached
// (TIMEOUT): an agent's job that ran out of time between sweeps. A job
// still running (the agent lost otherwise) is not; one ending is waited
// for a few polls, or until ctx ends.
func (b *batchJob) timedOutIdle(ctx context.Context) bool {
	if !b.gone(ctx) {
		return false
	}
	st, _ := b.current()
	return st.Name == "TIMEOUT"
}

// stateName is the job's last known state.
func (b *batchJob) stateName() string {
	st, _ := b.current()
	return st.String()
}

// programJobName is the name of a program sweep's holding job (an agent's
// is slurm's default, approxtune).
const programJobName = "approxtune-program"
