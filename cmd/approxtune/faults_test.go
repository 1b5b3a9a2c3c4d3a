package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/session"
	"github.com/approxtune/approxtune/sweep"
)

// The fault campaign (issue 30, "Nothing lost, nobody let in"): trials of a
// small evaluate sweep in the REPL, each with one fault at a random moment
// of the sweep: a rank other than 0, rank 0 of the agent, mpirun, or the
// REPL itself killed with SIGKILL (then started again on the same session
// directory). After each fault the journal reads back, 'resume' runs
// exactly the runs that have no result, the final results are the spec's
// (configuration, policy, tolerance) set, each once, every result seen
// before the fault unchanged, and no process the trial started is left.
//
// APPROXTUNE_FAULT_TRIALS sets the number of trials (default 30: 7 or 8 of
// each kind), APPROXTUNE_FAULT_KINDS the kinds drawn (a comma-separated
// subset of rank, rank0, mpirun, session), APPROXTUNE_FAULT_SEED the seed of the draws (kinds, moments, torn
// journal lines), printed so a failing campaign can be drawn again.
func TestFaultCampaign(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	trials := envInt(t, "APPROXTUNE_FAULT_TRIALS", 30)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("APPROXTUNE_FAULT_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("APPROXTUNE_FAULT_SEED=%q: want an unsigned integer", v)
		}
		seed = n
	}
	parallel := envInt(t, "APPROXTUNE_FAULT_PARALLEL", 1)
	kinds := faultKinds
	if v := os.Getenv("APPROXTUNE_FAULT_KINDS"); v != "" {
		kinds = strings.Split(v, ",")
		for _, k := range kinds {
			if !slices.Contains(faultKinds, k) {
				t.Fatalf("APPROXTUNE_FAULT_KINDS=%q: %q is not one of %s", v, k, strings.Join(faultKinds, ", "))
			}
		}
	}
	t.Logf("fault campaign: %d trials, %d at a time, seed %d (APPROXTUNE_FAULT_SEED=%d draws them again)", trials, parallel, seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x6661756c7473))
	camp := &campaign{t: t, bin: bin, seed: seed, mark: fmt.Sprintf("%d-%d", os.Getpid(), seed), tally: map[string]*kindTally{}}
	start := time.Now()
	var order []string
	slots := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := 0; i < trials && !t.Failed(); i++ {
		if len(order) == 0 {
			for _, j := range rng.Perm(len(kinds)) {
				order = append(order, kinds[j])
			}
		}
		kind := order[0]
		order = order[1:]
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			camp.trial(i+1, kind)
		}()
	}
	wg.Wait()
	camp.summary(time.Since(start))
}

// faultKinds are what a trial kills.
var faultKinds = []string{"rank", "rank0", "mpirun", "session"}

// The sweep of every trial: 6 configurations x 2 policies x 1 tolerance =
// 12 selective runs of tens of milliseconds, with 2 full runs each.
var faultSetup = []string{
	"workload synthetic steps=4 count=4",
	"space slow_rank=-1,0,1 slow_pct=200,300",
	"policy conditional,eager",
	"tolerance 2^-2",
	"reps 2",
}

const (
	faultRuns      = 12
	faultPerConfig = 2 // runs per configuration: policies x tolerances
)

// campaign holds the trials' common parts and their figures.
type campaign struct {
	t    *testing.T
	bin  string
	seed uint64
	mark string // the environment mark of the campaign's processes

	mu    sync.Mutex // the figures below: trials run in parallel
	tally map[string]*kindTally
	late  int // draws whose kill came after the sweep's end, drawn again
	// unstarted counts trials drawn again because their agent did not
	// start (before any fault: mpirun failing on a loaded machine).
	unstarted int
	torn      int // torn journal lines written after a session was killed
}

// kindTally is the figures of one kind of fault.
type kindTally struct {
	trials, faults, lost int
	// report is the time from the kill to the user seeing the fault (a
	// killed session: from its restart to the state it found).
	report []time.Duration
	// agentGone is, for a killed session, the time from the kill to the
	// end of its agent's last process.
	agentGone []time.Duration
}

// trial runs trial n with a fault of kind, drawing its moment again when
// the sweep ended before the kill, and adds its figures to the campaign's.
// Its draws come from the campaign's seed and n alone, whatever runs
// beside it.
func (c *campaign) trial(n int, kind string) {
	rng := rand.New(rand.NewPCG(c.seed, uint64(n)))
	for try := 0; try < 5; try++ {
		o, late := c.once(n, kind, rng)
		c.mu.Lock()
		if late || o.unstarted {
			if o.unstarted {
				c.unstarted++
			} else {
				c.late++
			}
			c.mu.Unlock()
			continue
		}
		tl := c.tally[kind]
		if tl == nil {
			tl = &kindTally{}
			c.tally[kind] = tl
		}
		tl.trials++
		if o.faulted {
			tl.faults++
			tl.report = append(tl.report, o.seen)
			if o.agentGone > 0 {
				tl.agentGone = append(tl.agentGone, o.agentGone)
			}
		}
		tl.lost += o.lost
		if o.torn {
			c.torn++
		}
		c.mu.Unlock()
		return
	}
	c.t.Errorf("trial %d (%s): the sweep ended before the kill, or its agent did not start, five times", n, kind)
}

// outcome is what one trial measured.
type outcome struct {
	unstarted bool          // the agent did not start: no fault was made
	faulted   bool          // the kill landed in the sweep and was seen
	seen      time.Duration // from the kill to the user seeing it
	agentGone time.Duration // a killed session: from the kill to its agent's end
	torn      bool          // a torn line was left in the journal
	lost      int           // results lost
}

// once runs one trial; late tells that the sweep ended before the kill,
// so that nothing was tested.
func (c *campaign) once(n int, kind string, rng *rand.Rand) (o outcome, late bool) {
	t := c.t
	dir := t.TempDir()
	sessDir := filepath.Join(dir, "session")
	mark := fmt.Sprintf("%s-%d", c.mark, n)
	env := append(os.Environ(), "XDG_STATE_HOME="+dir, "NO_COLOR=1", faultMarkVar+"="+mark)
	fail := func(format string, args ...any) (outcome, bool) {
		t.Errorf("trial %d (%s; seed %d): %s", n, kind, c.seed, fmt.Sprintf(format, args...))
		killMarked(mark)
		return o, false
	}
	t0 := time.Now()
	r, err := startREPL(c.bin, sessDir, env)
	if err != nil {
		return fail("%v", err)
	}
	defer r.close()
	if _, err := r.waitPrompt(0); err != nil {
		return fail("no prompt: %v", err)
	}
	for _, l := range faultSetup {
		if _, err := r.command(l); err != nil {
			return fail("%s: %v", l, err)
		}
	}
	journal := filepath.Join(sessDir, session.JournalName)
	// The moment: after k of the sweep's first 12 events (a run's progress,
	// or a configuration's results: 18 in all), then a random part of a
	// run's time.
	k := rng.IntN(12)
	extra := time.Duration(rng.IntN(60)) * time.Millisecond
	rank := 1 + rng.IntN(3)
	from := r.len()
	if err := r.send("evaluate"); err != nil {
		return fail("evaluate: %v", err)
	}
	failed := func() bool { return strings.Contains(r.text(from), "error: sweep 1") }
	if _, err := waitEvents(journal, 0, 2*time.Minute, failed); err != nil {
		if out := r.text(from); strings.Contains(out, "error: sweep 1 failed: the local agent") {
			// Nothing was killed yet: not what this test is about, but
			// said, and counted in the summary.
			t.Logf("trial %d (%s): the agent did not start; drawn again:\n%s", n, kind, r.tail(from))
			r.send("\x04")
			r.exit(time.Minute)
			waitMarked(mark, 30*time.Second)
			o.unstarted = true
			return o, false
		}
		return fail("%v\noutput:\n%s", err, r.tail(0))
	}
	procs, err := agentProcs(r.cmd.Process.Pid)
	if err != nil {
		return fail("%v\noutput:\n%s", err, r.tail(0))
	}
	target := map[string]int{"rank": procs.ranks[rank%len(procs.ranks)], "rank0": procs.ranks[0],
		"mpirun": procs.mpirun, "session": r.cmd.Process.Pid}[kind]
	if _, err := waitEvents(journal, k, 2*time.Minute, failed); err != nil {
		return fail("%v\noutput:\n%s", err, r.tail(0))
	}
	time.Sleep(extra)
	had, _ := waitEvents(journal, 0, 0, nil) // results journaled before the kill
	killed := time.Now()
	if err := syscall.Kill(target, syscall.SIGKILL); err != nil {
		return fail("kill %d: %v", target, err)
	}
	var seen time.Duration
	var before []sweep.Result
	if kind == "session" {
		r.cmd.Wait()
		r.close()
		if _, ok := ended(journal); ok {
			killMarked(mark)
			return o, true // the sweep ended before the kill
		}
		if rng.IntN(2) == 0 { // half the time, as if killed in a write
			if err := tearJournal(journal); err != nil {
				return fail("%v", err)
			}
			o.torn = true
		}
		if before, err = readResults(journal); err != nil {
			return fail("the journal of the killed session does not read back: %v", err)
		}
		restarted := time.Now()
		if r, err = startREPL(c.bin, sessDir, env); err != nil {
			return fail("start the REPL again: %v", err)
		}
		defer r.close()
		at, err := r.waitFor("'resume' runs the", 0, time.Minute)
		if err != nil {
			return fail("the restarted REPL did not say what it found: %v\noutput:\n%s", err, r.tail(0))
		}
		if !strings.Contains(r.text(0), "reopened session "+sessDir) {
			return fail("the restarted REPL did not say it reopened %s:\n%s", sessDir, r.tail(0))
		}
		seen = at.Sub(restarted)
		if _, err := r.waitPrompt(0); err != nil {
			return fail("no prompt after the restart: %v", err)
		}
		// The killed session's agent stops once it sees the session gone.
		if left := waitGone(procs.all(), time.Minute); len(left) > 0 {
			return fail("the agent of the killed session still runs a minute later: %v\n%s", left, stacks(procs))
		}
		o.agentGone = time.Since(killed)
	} else {
		at, which, err := r.waitAny([]string{"error: sweep 1 stopped after", "runs (ok)"}, from, 2*time.Minute)
		if err != nil {
			return fail("the fault was not reported: %v\noutput:\n%s", err, r.tail(from))
		}
		if which == 1 {
			// Only the last configuration's results may come after the
			// kill: its runs were all made, the agent had nothing left.
			if had >= faultRuns-faultPerConfig {
				r.send("\x04")
				r.exit(time.Minute)
				waitMarked(mark, 30*time.Second)
				return o, true // the sweep ended before the kill
			}
			return fail("the sweep ended ok after %s %d was killed with %d of %d results in: the fault went unseen\noutput:\n%s", kind, target, had, faultRuns, r.tail(from))
		}
		seen = at.Sub(killed)
		if _, err := r.waitPrompt(from); err != nil {
			return fail("no prompt after the fault: %v", err)
		}
		if left := waitGone(procs.all(), 30*time.Second); len(left) > 0 {
			return fail("processes of the dead agent still run 30 s after the fault was reported: %v", left)
		}
		if before, err = readResults(journal); err != nil {
			return fail("the journal does not read back after the fault: %v", err)
		}
	}
	o.faulted, o.seen = true, seen
	from = r.len()
	out, err := r.command("resume")
	if err != nil {
		return fail("resume: %v\noutput:\n%s", err, r.tail(from))
	}
	done := "(ok)"
	if len(before) == faultRuns { // the session was killed after the last result
		done = "sweep 1 is complete: nothing to resume"
	}
	if strings.Contains(out, "error:") || !strings.Contains(out, done) {
		return fail("resume did not finish the sweep (want %q):\n%s", done, out)
	}
	if err := r.send("\x04"); err != nil {
		return fail("Ctrl-D: %v", err)
	}
	if err := r.exit(time.Minute); err != nil {
		return fail("the REPL did not leave after Ctrl-D: %v\noutput:\n%s", err, r.tail(from))
	}
	if left := waitMarked(mark, 15*time.Second); len(left) > 0 {
		return fail("left running after the REPL ended: %v (killed)", left)
	}
	lost, err := checkJournal(journal, before)
	o.lost = lost
	if err != nil {
		return fail("%v", err)
	}
	t.Logf("trial %2d %-7s killed pid %d after %d events and %v: seen after %v; resume ran %d of %d runs; %v in all",
		n, kind, target, k, extra, seen.Round(time.Millisecond), faultRuns-len(before), faultRuns, time.Since(t0).Round(time.Millisecond))
	return o, false
}

// summary prints a line per kind of fault: trials, faults, results lost,
// and the median and longest time from the kill to the user seeing it.
func (c *campaign) summary(took time.Duration) {
	c.t.Helper()
	total := 0
	for _, k := range faultKinds {
		tl := c.tally[k]
		if tl == nil {
			continue // not drawn (APPROXTUNE_FAULT_KINDS)
		}
		total += tl.trials
		line := fmt.Sprintf("%-8s trials %3d  faults %3d  results lost %d  fault to report: %s",
			k, tl.trials, tl.faults, tl.lost, medianMax(tl.report))
		if k == "session" {
			line += " (from the restart); its agent gone after " + medianMax(tl.agentGone)
		}
		c.t.Log(line)
	}
	c.t.Logf("%d trials in %v (drawn again: %d whose kill came after the sweep's end, %d whose agent did not start; %d killed sessions left a torn last journal line)",
		total, took.Round(time.Second), c.late, c.unstarted, c.torn)
}

// medianMax writes the median and the largest of ds.
func medianMax(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	ds = slices.Sorted(slices.Values(ds))
	n := len(ds)
	med := ds[n/2]
	if n%2 == 0 {
		med = (ds[n/2-1] + ds[n/2]) / 2
	}
	return fmt.Sprintf("median %v, max %v", med.Round(time.Millisecond), ds[n-1].Round(time.Millisecond))
}

// faultMarkVar marks the environment of every process a trial starts
// (the REPL, and through it mpirun and the ranks), to find any left over.
const faultMarkVar = "APPROXTUNE_FAULT_TRIAL"

// envInt reads a positive integer from the environment, or def.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// termREPL is an interactive 'approxtune repl' on a pseudo-terminal, with
// everything it wrote and when.
type termREPL struct {
	cmd    *exec.Cmd
	master *os.File
	mu     sync.Mutex
	out    []byte
	more   chan struct{} // a signal per read
	exited chan struct{}
}

// startREPL starts bin's REPL on a new pseudo-terminal (so it runs as a
// user at a terminal, not as a script) in session directory dir.
func startREPL(bin, dir string, env []string) (*termREPL, error) {
	return startREPLSized(bin, dir, env, 400)
}

// startREPLSized is startREPL on a terminal cols columns wide (0: a
// terminal nobody sized).
func startREPLSized(bin, dir string, env []string, cols uint16) (*termREPL, error) {
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, fmt.Errorf("pseudo-terminal: %w", err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, fmt.Errorf("unlock the pseudo-terminal: %w", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, fmt.Errorf("pseudo-terminal number: %w", err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, fmt.Errorf("pseudo-terminal: %w", err)
	}
	defer tty.Close()
	if cols > 0 {
		unix.IoctlSetWinsize(int(tty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 60, Col: cols})
	}
	cmd := exec.Command(bin, "repl", "--dir", dir, "--no-color")
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		master.Close()
		return nil, fmt.Errorf("start the REPL: %w", err)
	}
	r := &termREPL{cmd: cmd, master: master, more: make(chan struct{}, 1), exited: make(chan struct{})}
	go r.read()
	return r, nil
}

func (r *termREPL) read() {
	defer close(r.exited)
	buf := make([]byte, 64<<10)
	for {
		n, err := r.master.Read(buf)
		if n > 0 {
			r.mu.Lock()
			r.out = append(r.out, buf[:n]...)
			r.mu.Unlock()
			select {
			case r.more <- struct{}{}:
			default:
			}
		}
		if err != nil { // EIO once the REPL and its terminal are gone
			return
		}
	}
}

// len is how much the REPL has written so far.
func (r *termREPL) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.out)
}

// tail is the end of what the REPL wrote from offset from on, for a
// failure's message.
func (r *termREPL) tail(from int) string {
	s := r.text(from)
	if len(s) > 6000 {
		s = "..." + s[len(s)-6000:]
	}
	return s
}

// text is what the REPL wrote from offset from on.
func (r *termREPL) text(from int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return string(r.out[min(from, len(r.out)):])
}

// waitFor waits until the REPL has written want after offset from, and
// returns when the read that completed it came.
func (r *termREPL) waitFor(want string, from int, timeout time.Duration) (time.Time, error) {
	at, _, err := r.waitAny([]string{want}, from, timeout)
	return at, err
}

const prompt = "approxtune> "

// waitAny waits until the REPL has written one of wants after offset
// from, and returns when, and which.
func (r *termREPL) waitAny(wants []string, from int, timeout time.Duration) (time.Time, int, error) {
	deadline := time.After(timeout)
	for {
		s := r.text(from)
		for i, w := range wants {
			if strings.Contains(s, w) {
				return time.Now(), i, nil
			}
		}
		select {
		case <-r.more:
		case <-r.exited:
			return time.Time{}, 0, fmt.Errorf("the REPL ended before writing any of %q", wants)
		case <-deadline:
			return time.Time{}, 0, fmt.Errorf("none of %q within %v", wants, timeout)
		}
	}
}

// waitPrompt waits for a prompt after the last line written from offset
// from on, which starts a line (a command's echo ends with a newline; the
// next prompt follows its output), and returns the offset after it.
func (r *termREPL) waitPrompt(from int) (int, error) {
	deadline := time.After(2 * time.Minute)
	for {
		s := "\n" + r.text(from) // from starts a line
		if nl := strings.LastIndex(s, "\n"); strings.Contains(s[nl:], prompt) {
			return from - 1 + nl + strings.Index(s[nl:], prompt) + len(prompt), nil
		}
		select {
		case <-r.more:
		case <-r.exited:
			return 0, fmt.Errorf("the REPL ended; it wrote:\n%s", r.tail(from))
		case <-deadline:
			return 0, fmt.Errorf("no prompt within 2 minutes; the REPL wrote:\n%s", r.tail(from))
		}
	}
}

// send types a line and Enter (a line of one control character is sent as
// it is).
func (r *termREPL) send(line string) error {
	if len(line) == 1 && line[0] < ' ' {
		_, err := r.master.Write([]byte(line))
		return err
	}
	_, err := r.master.Write([]byte(line + "\r"))
	return err
}

// command types a line, waits for the next prompt, and returns what the
// command wrote.
func (r *termREPL) command(line string) (string, error) {
	from := r.len()
	if err := r.send(line); err != nil {
		return "", err
	}
	// The echo of the line, then its output, then the prompt.
	if _, err := r.waitFor(line+"\r\n", from, time.Minute); err != nil {
		return "", err
	}
	s := r.text(from)
	start := from + strings.Index(s, line+"\r\n") + len(line) + 2
	end, err := r.waitPrompt(start)
	if err != nil {
		return "", err
	}
	return r.text(start)[:end-start-len(prompt)], nil
}

// exit waits for the REPL to end.
func (r *termREPL) exit(timeout time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout):
		r.cmd.Process.Kill()
		return fmt.Errorf("still running after %v", timeout)
	}
}

// close ends the REPL if it still runs, and its terminal.
func (r *termREPL) close() {
	if r.cmd.ProcessState == nil {
		r.cmd.Process.Kill()
	}
	r.master.Close()
}

// agentPIDs is the processes of a local agent: mpirun and its ranks, by rank.
type agentPIDs struct {
	mpirun int
	ranks  []int
}

func (a agentPIDs) all() []int { return append([]int{a.mpirun}, a.ranks...) }

// agentProcs finds the agent the REPL process shell started: its mpirun
// child and the processes under it that have an MPI rank.
func agentProcs(shell int) (agentPIDs, error) {
	kids := children()
	var a agentPIDs
	for _, p := range kids[shell] {
		if comm(p) == "mpirun" {
			a.mpirun = p
		}
	}
	if a.mpirun == 0 {
		return a, fmt.Errorf("no mpirun under the REPL (pid %d)", shell)
	}
	byRank := map[int]int{}
	var walk func(int)
	walk = func(p int) {
		for _, c := range kids[p] {
			if r, ok := environ(c)["OMPI_COMM_WORLD_RANK"]; ok {
				n, _ := strconv.Atoi(r)
				byRank[n] = c
			}
			walk(c)
		}
	}
	walk(a.mpirun)
	for i := 0; i < len(byRank); i++ {
		p, ok := byRank[i]
		if !ok {
			return a, fmt.Errorf("mpirun %d has no rank %d: %v", a.mpirun, i, byRank)
		}
		a.ranks = append(a.ranks, p)
	}
	if len(a.ranks) < 2 {
		return a, fmt.Errorf("mpirun %d has %d ranks", a.mpirun, len(a.ranks))
	}
	return a, nil
}

// children maps each process to its children (/proc).
func children() map[int][]int {
	out := map[int][]int{}
	ps, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range ps {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		ppid, _ := strconv.Atoi(f[1])
		out[ppid] = append(out[ppid], pid)
	}
	return out
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

func environ(pid int) map[string]string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	env := map[string]string{}
	for _, kv := range strings.Split(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}

// alive reports whether pid runs (a zombie is not running).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && !bytes.HasPrefix(bytes.TrimSpace(b[i+1:]), []byte("Z"))
}

// waitGone waits until none of pids runs, and returns those still running
// after timeout.
func waitGone(pids []int, timeout time.Duration) []int {
	deadline := time.Now().Add(timeout)
	for {
		var left []int
		for _, p := range pids {
			if alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// marked lists the processes whose environment holds the trial's mark,
// with their command names.
func marked(mark string) []string {
	var out []string
	ps, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range ps {
		pid, _ := strconv.Atoi(filepath.Base(p))
		if pid == os.Getpid() || !alive(pid) {
			continue
		}
		if environ(pid)[faultMarkVar] == mark {
			out = append(out, fmt.Sprintf("%d %s", pid, comm(pid)))
		}
	}
	return out
}

// waitMarked waits until no process of the trial runs; those still running
// after timeout are killed and returned.
func waitMarked(mark string, timeout time.Duration) []string {
	deadline := time.Now().Add(timeout)
	for {
		left := marked(mark)
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			killMarked(mark)
			return left
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// killMarked kills what a failed trial left.
func killMarked(mark string) {
	for _, l := range marked(mark) {
		pid, _ := strconv.Atoi(strings.Fields(l)[0])
		syscall.Kill(pid, syscall.SIGKILL)
	}
}

// journalLine is what the test reads of a journal line.
type journalLine struct {
	T     time.Time       `json:"t"`
	Kind  string          `json:"kind"`
	Sweep int             `json:"sweep"`
	Spec  *sweep.Spec     `json:"spec"`
	Event json.RawMessage `json:"event"`
}

// readLines reads a journal's lines; the last may be torn (nil).
func readLines(path string) ([]*journalLine, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*journalLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var l journalLine
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			out = append(out, nil)
			continue
		}
		out = append(out, &l)
	}
	return out, sc.Err()
}

// waitEvents waits until the journal holds the sweep's start and k of its
// progress and result events, and returns its results then; it stops
// waiting when stop (if not nil) reports true. It reads the journal as
// bytes, not JSON, to see events as soon as they come.
func waitEvents(path string, k int, timeout time.Duration, stop func() bool) (int, error) {
	deadline := time.Now().Add(timeout)
	progress, result, start := []byte(`"event":{"type":"progress"`), []byte(`"event":{"type":"result"`), []byte(`"event":{"type":"start"`)
	for {
		b, _ := os.ReadFile(path)
		n, results := bytes.Count(b, progress), bytes.Count(b, result)
		if bytes.Contains(b, start) && n+results >= k {
			return results, nil
		}
		if time.Now().After(deadline) || (stop != nil && stop()) {
			return results, fmt.Errorf("the journal holds %d of the sweep's events after %v, not %d", n+results, timeout, k)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// ended returns when the journal recorded the end of a sweep, if it did.
func ended(path string) (time.Time, bool) {
	ls, _ := readLines(path)
	for _, l := range ls {
		if l != nil && l.Kind == "end" {
			return l.T, true
		}
	}
	return time.Time{}, false
}

// tearJournal appends the first part of the journal's last line, without
// its end: what a session killed in the middle of a write leaves.
func tearJournal(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	last := lines[len(lines)-1]
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.Write(last[:len(last)/2])
	return err
}

// readResults reads the journal back (a torn last line is skipped) and
// returns its sweep's results.
func readResults(path string) ([]sweep.Result, error) {
	sws, err := session.ReadJournal(path)
	if err != nil {
		return nil, err
	}
	if len(sws) != 1 {
		return nil, fmt.Errorf("the journal holds %d sweeps, want 1", len(sws))
	}
	return sws[0].Results, nil
}

// runID names a run: configuration, policy, tolerance.
type runID struct {
	config    int
	policy    string
	tolerance float64
}

func idOf(r sweep.Result) runID {
	id := runID{config: r.Index, policy: r.Policy}
	if r.Tolerance != nil {
		id.tolerance = *r.Tolerance
	}
	return id
}

// checkJournal checks the journal of a finished trial: every line whole;
// one sweep, ok, with one result for each of the spec's runs; each result
// recorded before the fault (before) unchanged; and one resume that asked
// for exactly the runs before lacked. It returns the results lost: runs of
// the spec without a result, and results of before missing or changed.
func checkJournal(path string, before []sweep.Result) (lost int, err error) {
	ls, err := readLines(path)
	if err != nil {
		return 0, err
	}
	var resumes []*sweep.Spec
	var spec *sweep.Spec
	for i, l := range ls {
		if l == nil {
			return 0, fmt.Errorf("journal line %d of %d is not whole JSON after the session reopened it", i+1, len(ls))
		}
		switch l.Kind {
		case "sweep":
			spec = l.Spec
		case "resume":
			resumes = append(resumes, l.Spec)
		}
	}
	sws, err := session.ReadJournal(path)
	if err != nil {
		return 0, fmt.Errorf("read back: %w", err)
	}
	if len(sws) != 1 || spec == nil {
		return 0, fmt.Errorf("the journal holds %d sweeps, want 1", len(sws))
	}
	sw := sws[0]
	want := map[runID]bool{}
	for i := range sw.Configs {
		for _, p := range spec.Policies {
			for _, t := range spec.Tolerances {
				want[runID{i, p, float64(t)}] = true
			}
		}
	}
	if len(want) != faultRuns {
		return 0, fmt.Errorf("the spec has %d runs, want %d", len(want), faultRuns)
	}
	var problems []string
	got := map[runID]sweep.Result{}
	for _, r := range sw.Results {
		id := idOf(r)
		if !want[id] {
			problems = append(problems, fmt.Sprintf("a result for %v, which the spec does not have", id))
		}
		if _, dup := got[id]; dup {
			problems = append(problems, fmt.Sprintf("two results for %v", id))
		}
		if r.PredictedS == nil || len(r.ReferenceS) == 0 {
			problems = append(problems, fmt.Sprintf("the result for %v lacks its prediction or its full runs", id))
		}
		got[id] = r
	}
	for id := range want {
		if _, ok := got[id]; !ok {
			lost++
			problems = append(problems, fmt.Sprintf("no result for %v", id))
		}
	}
	had := map[runID]bool{}
	for _, b := range before {
		had[idOf(b)] = true
		g, ok := got[idOf(b)]
		if ok && (g.PredictedS == nil || *g.PredictedS != *b.PredictedS) {
			lost++
			problems = append(problems, fmt.Sprintf("the result for %v changed after the fault", idOf(b)))
		}
	}
	switch {
	case len(had) == faultRuns:
		if len(resumes) != 0 {
			problems = append(problems, fmt.Sprintf("%d resume records for a complete sweep, want none", len(resumes)))
		}
	case len(resumes) != 1 || resumes[0] == nil:
		problems = append(problems, fmt.Sprintf("%d resume records, want 1", len(resumes)))
	default:
		asked := map[runID]bool{}
		for _, r := range resumes[0].Runs {
			asked[runID{r.Config, r.Policy, r.Tolerance}] = true
		}
		for id := range want {
			switch {
			case asked[id] && had[id]:
				problems = append(problems, fmt.Sprintf("resume ran %v again, which had a result", id))
			case !asked[id] && !had[id]:
				problems = append(problems, fmt.Sprintf("resume left out %v, which had no result", id))
			}
		}
		if len(asked) != faultRuns-len(had) {
			problems = append(problems, fmt.Sprintf("resume asked for %d runs, want the %d missing", len(asked), faultRuns-len(had)))
		}
	}
	if sw.Status != session.StatusOK {
		problems = append(problems, fmt.Sprintf("the sweep ended %s (%s)", sw.Status, sw.Message))
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return lost, fmt.Errorf("journal %s:\n  %s", path, strings.Join(problems, "\n  "))
	}
	return 0, nil
}

// stacks describes where the processes of an agent that outlived its
// session wait: each one's state and sockets, the C stacks of every thread
// (gdb), and rank 0's goroutines (its SIGQUIT dump, read from its write to
// stderr with strace, since that stderr led to the killed session). It is
// for the failure message; tools missing here are said, not fatal.
func stacks(a agentPIDs) string {
	var b strings.Builder
	run := func(timeout time.Duration, name string, args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
		if err != nil {
			return fmt.Sprintf("%s\n(%s: %v)", out, name, err)
		}
		return string(out)
	}
	for _, p := range append([]int{a.mpirun}, a.ranks...) {
		st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
		state := ""
		for _, l := range strings.Split(string(st), "\n") {
			if strings.HasPrefix(l, "State:") || strings.HasPrefix(l, "PPid:") {
				state += " " + strings.TrimSpace(l)
			}
		}
		fmt.Fprintf(&b, "--- pid %d (%s):%s\n", p, comm(p), state)
		fds, _ := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", p))
		for _, fd := range fds {
			if l, err := os.Readlink(fd); err == nil && (strings.HasPrefix(l, "socket:") || strings.HasPrefix(l, "pipe:")) {
				fmt.Fprintf(&b, "  fd %s -> %s\n", filepath.Base(fd), l)
			}
		}
	}
	b.WriteString(run(20*time.Second, "ss", "-tanpe"))
	for _, p := range []int{a.mpirun, a.ranks[0]} {
		fmt.Fprintf(&b, "--- gdb, pid %d\n%s", p, run(60*time.Second, "gdb", "-batch", "-p", strconv.Itoa(p), "-ex", "thread apply all bt 12"))
	}
	// rank 0's goroutines: strace catches its SIGQUIT dump.
	tr := exec.Command("strace", "-f", "-e", "trace=write", "-s", "65536", "-p", strconv.Itoa(a.ranks[0]))
	var out bytes.Buffer
	tr.Stdout, tr.Stderr = &out, &out
	if err := tr.Start(); err != nil {
		return b.String() + fmt.Sprintf("(strace: %v)\n", err)
	}
	time.Sleep(time.Second)
	syscall.Kill(a.ranks[0], syscall.SIGQUIT)
	time.Sleep(3 * time.Second)
	tr.Process.Kill()
	tr.Wait()
	fmt.Fprintf(&b, "--- strace of rank 0 (pid %d) after SIGQUIT\n%s", a.ranks[0], out.String())
	return b.String()
}

// A session killed with SIGKILL while a run hangs takes its agent down:
// mpirun gets SIGTERM when the session dies (its parent-death signal) and
// stops its ranks. The agent notices a dead session only at its next run
// boundary, which a hung run never reaches: mpirun and its ranks had run
// on under init, the hung run's ranks at full CPU (a review's, 40 s after
// the kill).
func TestSessionKilledDuringHungRun(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	dir := t.TempDir()
	mark := fmt.Sprintf("%d-hung", os.Getpid())
	r, err := startREPL(bin, filepath.Join(dir, "session"), append(os.Environ(), "XDG_STATE_HOME="+dir, "NO_COLOR=1", faultMarkVar+"="+mark))
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	defer killMarked(mark)
	if _, err := r.waitPrompt(0); err != nil {
		t.Fatalf("no prompt: %v", err)
	}
	// Rank 1 stops in the first run's warm-up, for good.
	for _, l := range []string{"workload synthetic steps=10 mean_us=2000 hang_rank=1 hang_step=3", "policy conditional", "tolerance 2^-1", "reps 1"} {
		if _, err := r.command(l); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
	from := r.len()
	if err := r.send("evaluate"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.waitFor("starting a local agent", from, time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, r.tail(from))
	}
	var procs agentPIDs
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if procs, err = agentProcs(r.cmd.Process.Pid); err == nil && len(procs.ranks) == 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no agent of 4 ranks: %v %+v\n%s", err, procs, r.tail(from))
		}
	}
	time.Sleep(3 * time.Second) // well into the hang
	if err := syscall.Kill(r.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r.cmd.Wait()
	if left := waitGone(procs.all(), 20*time.Second); len(left) > 0 {
		t.Errorf("20 s after the session was killed, the agent's processes %v of %v still run", left, procs.all())
	}
}
