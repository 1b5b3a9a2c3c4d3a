package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/testenv"
)

// The load tests (issue 30): a sweep of 10,000 tiny runs through the REPL
// and through the kernel, then the tables and figures of its result, the
// journal read back, and a kernel session of 1,000 small cells. What they
// promise, with the margins a loaded 2-core CI machine needs (the figures
// measured are logged, and in docs/reliability.md):
const (
	// loadRuns is the sweep's size: 250 configurations x 5 policies x 8
	// tolerances, each configuration's one reference besides.
	loadRuns = 10000
	// loadRunKB bounds the session's resident memory per run stored,
	// between 2,000 runs and the end: what it keeps of each result (about
	// 2.3 kB of Go heap with its kernel statistics) and the collector's
	// slack, but no copy of every event, update or drawing.
	loadRunKB = 6
	// loadPeakMB bounds the session's peak resident memory over the sweep.
	loadPeakMB = 160
	// loadCommandCPU bounds the session's processor time in 'table' and
	// 'plot' on the 10,000 runs: the promise, under a second (measured
	// 0.02-0.3 s); loadCommand bounds their wall time, with the margin a
	// loaded machine needs (measured 0.01-0.4 s, 1.3 s for 'table configs'
	// in the kernel with the machine at a load of 30 on 2 cores).
	loadCommandCPU = time.Second
	loadCommand    = 3 * time.Second
	// loadReplayCPU and loadReplay bound 'load' of the sweep's journal
	// (10,000 results with their kernel statistics, 25,000 lines): the
	// session's processor time (measured 1.4 s) and wall time (measured
	// 1.5 s, 6 s at a load of 54 on 2 cores).
	loadReplayCPU = 3 * time.Second
	loadReplay    = 10 * time.Second
	// loadCells is the kernel session's length after the sweep.
	loadCells = 1000
)

// loadSetup is the sweep: synthetic runs of two kernels of about 10 µs
// and two messages of one double on 2 ranks, under every policy at eight
// tolerances; the configurations differ in slow_pct (unused without a
// slow rank) and mean_us.
func loadSetup() string {
	var slow []string
	for p := 100; p < 125; p++ {
		slow = append(slow, strconv.Itoa(p))
	}
	return strings.Join([]string{
		"workload synthetic",
		"ranks 2",
		"space grid=1x2 steps=1 count=2 kinds=2 msg=1 mean_us=10,11,12,13,14,15,16,17,18,19 slow_pct=" + strings.Join(slow, ","),
		"policy conditional,local,online,apriori,eager",
		"tolerance 2^-1..2^-8",
		"reps 1",
	}, "\n")
}

// rssKB reads a field of /proc/PID/status (VmRSS, VmHWM) in kB.
func rssKB(t *testing.T, pid int, field string) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read the memory of %d: %v", pid, err)
	}
	m := regexp.MustCompile(`(?m)^` + field + `:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("no %s in /proc/%d/status", field, pid)
	}
	kb, _ := strconv.Atoi(string(m[1]))
	return kb
}

// cpuTime is the processor time (user and system) process pid has used.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("read the times of %d: %v", pid, err)
	}
	// After the command's name in parentheses: state, then 10 fields, then
	// utime and stime in clock ticks (USER_HZ, 100 a second).
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// checkCost asserts the bounds on a command's wall and processor time.
func checkCost(t *testing.T, what string, wall, cpu, maxWall, maxCPU time.Duration) {
	t.Helper()
	t.Logf("%s: %v (processor %v)", what, wall.Round(time.Millisecond), cpu.Round(time.Millisecond))
	if cpu > maxCPU {
		t.Errorf("%s took %v of processor time, over %v", what, cpu, maxCPU)
	}
	if wall > maxWall {
		t.Errorf("%s took %v, over %v", what, wall, maxWall)
	}
}

// checkMemory asserts the bounds on the session's memory: rssA and rssB
// are its resident memory (kB) after runsA and runsB runs (runsA about
// 2,000, runsB the end), peak its high-water mark.
func checkMemory(t *testing.T, what string, runsA, rssA, runsB, rssB, peak int) {
	t.Helper()
	perRun := float64(rssB-rssA) / float64(runsB-runsA)
	t.Logf("%s: resident %d MB at %d runs, %d MB at %d (%.2f kB a run), peak %d MB", what, rssA/1024, runsA, rssB/1024, runsB, perRun, peak/1024)
	if perRun > loadRunKB {
		t.Errorf("%s: resident memory grew by %.2f kB a run from %d runs to %d (%d to %d MB), over %d kB: something keeps more than the results", what, perRun, runsA, runsB, rssA/1024, rssB/1024, loadRunKB)
	}
	if peak > loadPeakMB*1024 {
		t.Errorf("%s: peak resident memory %d MB, over %d MB", what, peak/1024, loadPeakMB)
	}
}

// checkRate asserts that events at the given times (seconds) came at most
// one per interval over span seconds, give or take the first and last.
func checkRate(t *testing.T, what string, at []float64, span float64, interval time.Duration) {
	t.Helper()
	limit := int(span/interval.Seconds()) + 2
	t.Logf("%s: %d in %.1f s (at most one per %v: %d)", what, len(at), span, interval, limit)
	if len(at) > limit {
		t.Errorf("%s: %d in %.1f s, more than one per %v (%d)", what, len(at), span, interval, limit)
	}
	if len(at) < 2 {
		t.Errorf("%s: %d in %.1f s: the live display did not keep up with the sweep", what, len(at), span)
	}
}

// replProc is `approxtune repl` with its standard input a pipe: the test
// writes a line at a time and reads what it prints as it comes.
type replProc struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
	errs  strings.Builder
	mu    sync.Mutex
	seen  []string // what it printed so far
}

func startREPL(t *testing.T, bin, dir string) *replProc {
	t.Helper()
	p := &replProc{t: t, lines: make(chan string, 1<<16)}
	p.cmd = exec.Command(bin, "repl", "--dir", dir)
	p.cmd.Dir = t.TempDir()
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.errs}
	var err error
	if p.in, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		p.cmd.Wait()
		testenv.NoneLeft(t, bin, "agent")
	})
	return p
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// send writes lines to the REPL's standard input.
func (p *replProc) send(lines ...string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, strings.Join(lines, "\n")+"\n"); err != nil {
		p.t.Fatalf("write to the REPL: %v", err)
	}
}

// until reads what the REPL prints, calling each (if not nil) with every
// line, up to the line want; it fails past timeout or if the REPL ends.
func (p *replProc) until(want string, timeout time.Duration, each func(string)) {
	p.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				p.mu.Lock()
				defer p.mu.Unlock()
				p.t.Fatalf("the REPL ended before printing %q; stderr:\n%s\nlast lines:\n%s", want, p.errs.String(), strings.Join(p.tail(), "\n"))
			}
			p.seen = append(p.seen, l)
			if each != nil {
				each(l)
			}
			if l == want {
				return
			}
		case <-deadline:
			p.t.Fatalf("the REPL did not print %q within %v; last lines:\n%s", want, timeout, strings.Join(p.tail(), "\n"))
		}
	}
}

func (p *replProc) tail() []string { return p.seen[max(0, len(p.seen)-20):] }

// timed runs a command and returns how long the REPL took from reading it
// to reading the marker comment after it, and the processor time it used.
func (p *replProc) timed(cmd string, n int) (wall, cpu time.Duration) {
	p.t.Helper()
	mark := fmt.Sprintf("# timed %d", n)
	c0, t0 := cpuTime(p.t, p.cmd.Process.Pid), time.Now()
	p.send(cmd, mark)
	p.until("> "+mark, time.Minute, nil)
	return time.Since(t0), cpuTime(p.t, p.cmd.Process.Pid) - c0
}

// close ends the script and waits for the REPL's exit status 0.
func (p *replProc) close() {
	p.t.Helper()
	p.in.Close()
	for l := range p.lines {
		p.seen = append(p.seen, l)
	}
	if err := p.cmd.Wait(); err != nil {
		p.t.Fatalf("the REPL: %v; stderr:\n%s", err, p.errs.String())
	}
}

// fileChanges counts the rewrites of path (a new inode, size or time), by
// looking every 20 ms, until stop is closed; it returns their times in
// seconds from start.
func fileChanges(path string, start time.Time, stop <-chan struct{}) <-chan []float64 {
	res := make(chan []float64, 1)
	go func() {
		var at []float64
		var last syscall.Stat_t
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				res <- at
				return
			case <-tick.C:
			}
			var st syscall.Stat_t
			if syscall.Stat(path, &st) != nil {
				continue
			}
			if st.Ino != last.Ino || st.Size != last.Size || st.Mtim != last.Mtim {
				at = append(at, time.Since(start).Seconds())
				last = st
			}
		}
	}()
	return res
}

var progressLine = regexp.MustCompile(`^  \[(\d+)/(\d+)\] `)

// A sweep of 10,000 tiny runs through the REPL, its figure drawn live:
// memory bounded, the live figure at most once a second, tables and
// figures of the result and the journal's replay fast.
func TestLoadREPL(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	dir := t.TempDir()
	sessDir, live := filepath.Join(dir, "session"), filepath.Join(dir, "live.png")
	p := startREPL(t, bin, sessDir)
	pid := p.cmd.Process.Pid
	p.send(loadSetup(), "plot live "+live, "# set")
	p.until("> # set", time.Minute, nil)

	start := time.Now()
	stop := make(chan struct{})
	redraws := fileChanges(live, start, stop)
	p.send("evaluate", "# swept")
	var rss2k, rssEnd, runs int
	p.until("> # swept", 4*time.Minute, func(l string) {
		m := progressLine.FindStringSubmatch(l)
		if m == nil {
			return
		}
		done, _ := strconv.Atoi(m[1])
		runs, _ = strconv.Atoi(m[2])
		switch {
		case done == 2000:
			rss2k = rssKB(t, pid, "VmRSS")
		case done == runs:
			rssEnd = rssKB(t, pid, "VmRSS")
		}
	})
	swept := time.Since(start)
	close(stop)
	draws := <-redraws
	if !slices.Contains(p.seen, fmt.Sprintf("sweep 1: evaluate synthetic, %d of %d runs (ok)", loadRuns, loadRuns)) {
		t.Fatalf("the sweep did not make its %d runs; last lines:\n%s", loadRuns, strings.Join(p.tail(), "\n"))
	}
	t.Logf("REPL: %d runs in %.1f s", runs, swept.Seconds())
	checkMemory(t, "REPL", 2000, rss2k, runs, rssEnd, rssKB(t, pid, "VmHWM"))
	checkRate(t, "REPL: rewrites of the live figure", draws, swept.Seconds(), time.Second)

	for i, cmd := range []string{"table configs", "table best", "plot speedup " + filepath.Join(dir, "speedup.png"),
		"plot error " + filepath.Join(dir, "error.svg"), "plot configs " + filepath.Join(dir, "configs.png")} {
		wall, cpu := p.timed(cmd, i)
		checkCost(t, "REPL: "+cmd, wall, cpu, loadCommand, loadCommandCPU)
	}
	p.close()

	// The journal read back by another session.
	q := startREPL(t, bin, filepath.Join(dir, "other"))
	wall, cpu := q.timed("load "+sessDir, 0)
	checkCost(t, "REPL: load of the sweep's journal", wall, cpu, loadReplay, loadReplayCPU)
	q.send("table best")
	q.close()
	if want := fmt.Sprintf("sweep 1: evaluate synthetic, %d of %d runs (ok)", loadRuns, loadRuns); !slices.Contains(q.seen, want) {
		t.Errorf("after load, table best lacks %q:\n%s", want, strings.Join(q.tail(), "\n"))
	}
}

// kernelLoad is what internal/jupyter/testdata/jupyter/load.py measured.
type kernelLoad struct {
	Runs     int                   `json:"runs"`
	SweepS   float64               `json:"sweep_s"`
	Updates  []float64             `json:"updates"`
	Figures  []float64             `json:"figures"`
	RSS      [][2]int              `json:"rss"`
	HWM      int                   `json:"hwm_kb"`
	HWMEnd   int                   `json:"hwm_end_kb"`
	Commands map[string][2]float64 `json:"commands"` // wall and processor seconds
	Cells    []float64             `json:"cells"`
}

// The same sweep through the kernel, driven by jupyter_client: memory
// bounded, the live display at its rates (an update at most every 250 ms,
// figures at most once a second), tables and figures of the result fast;
// then 1,000 small cells that keep their round trip.
func TestLoadKernel(t *testing.T) {
	testenv.Launcher(t)
	js := setupJupyter(t)
	res := filepath.Join(js.dir, "load.json")
	js.env = append(js.env, "APPROXTUNE_LOAD_SETUP="+loadSetup(), "APPROXTUNE_LOAD_CELLS="+strconv.Itoa(loadCells), "APPROXTUNE_LOAD_OUT="+res)
	js.script(t, 6*time.Minute, "load.py")
	b, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	var m kernelLoad
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m.Runs != loadRuns {
		t.Fatalf("the sweep showed %d runs, want %d", m.Runs, loadRuns)
	}
	t.Logf("kernel: %d runs in %.1f s", m.Runs, m.SweepS)
	i := slices.IndexFunc(m.RSS, func(x [2]int) bool { return x[0] >= 2000 })
	if i < 0 {
		t.Fatalf("no display update past 2,000 runs: %v", m.RSS)
	}
	// From the first update at 2,000 runs or more to the last.
	at, end := m.RSS[i], m.RSS[len(m.RSS)-1]
	checkMemory(t, "kernel", at[0], at[1], end[0], end[1], m.HWM)
	checkRate(t, "kernel: update_display_data", m.Updates, m.SweepS, 250*time.Millisecond)
	checkRate(t, "kernel: figures drawn", m.Figures, m.SweepS, time.Second)
	for _, cmd := range []string{"table configs", "table best", "plot speedup", "plot error", "plot configs"} {
		c, ok := m.Commands[cmd]
		if !ok {
			t.Fatalf("no figures for %s: %v", cmd, m.Commands)
		}
		sec := func(x float64) time.Duration { return time.Duration(x * float64(time.Second)) }
		checkCost(t, "kernel: "+cmd, sec(c[0]), sec(c[1]), loadCommand, loadCommandCPU)
	}

	// The cells' round trips: the last 100 as quick as the first 100
	// (medians, within 2x and 20 ms), none slow.
	if len(m.Cells) != loadCells {
		t.Fatalf("%d cells ran, want %d", len(m.Cells), loadCells)
	}
	median := func(xs []float64) float64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	first, last, worst := median(m.Cells[:100]), median(m.Cells[len(m.Cells)-100:]), slices.Max(m.Cells)
	total := 0.0
	for _, c := range m.Cells {
		total += c
	}
	t.Logf("kernel: %d cells in %.1f s: round trip median %.1f ms over the first 100, %.1f ms over the last 100, at most %.1f ms; peak resident memory %d MB",
		len(m.Cells), total, 1e3*first, 1e3*last, 1e3*worst, m.HWMEnd/1024)
	if last > 2*first+0.02 {
		t.Errorf("the round trip of a cell grew from %.1f ms (median of the first 100) to %.1f ms (the last 100)", 1e3*first, 1e3*last)
	}
	if worst > loadCommand.Seconds() {
		t.Errorf("a cell's round trip took %.1f ms, over %v", 1e3*worst, loadCommand)
	}
}
