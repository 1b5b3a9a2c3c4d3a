// Package slurmtest runs a private, real, single-node Slurm cluster for a
// test: its own slurm.conf, state and spool directories, free ports, and its
// own slurmctld and slurmd (Debian's slurmctld, slurmd and slurm-client
// packages). Nothing is faked: jobs are real sbatch/srun jobs that run on
// this machine, as the user running the test (root or not).
//
// The configuration was measured on Debian 12 (Slurm 22.05, Open MPI 4.1
// with PMIx) in a container without systemd: no authentication daemon
// (auth/none, cred/none), proctrack/linuxproc and task/none because cgroups
// do not work in a container (proctrack/cgroup drains the node), PMIx as
// the default MPI plugin, and a node that claims DefaultCPUs CPUs whatever
// the machine has (SlurmdParameters=config_overrides), so that a test can
// run a 4-rank job on a 2-core machine. A cluster is ready about 1 s after
// Start and stopped in well under 1 s.
package slurmtest

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/approxtune/approxtune/internal/testenv"
)

// Install is the command that installs what a Cluster needs.
const Install = "apt-get install -y --no-install-recommends slurmctld slurmd slurm-client"

// Partition is the name of the cluster's only partition (the default one).
const Partition = "debug"

// Node is the name of the cluster's only node.
const Node = "localhost"

// DefaultCPUs is the number of CPUs the node claims when Options.CPUs is 0:
// enough for a 4-rank job, whatever the machine has.
const DefaultCPUs = 8

// Options shape a Cluster. The zero value is what most tests want.
type Options struct {
	// CPUs is the number of CPUs the node claims (DefaultCPUs when 0); more
	// than the machine has oversubscribes it. A job asking for more stays
	// PENDING with Reason=PartitionConfig.
	CPUs int
	// KeepEnv leaves SLURM_CONF unset in the test's environment: the caller
	// passes Cluster.Env to the commands it runs itself.
	KeepEnv bool
}

// Cluster is a running private Slurm cluster.
type Cluster struct {
	// Dir is the cluster's private directory: slurm.conf, state/, spool/,
	// log/ (slurmctld.log, slurmd.log, jobcomp.txt).
	Dir string
	// Conf is the path of slurm.conf.
	Conf string
	// Env holds the environment entries ("SLURM_CONF=...") every Slurm
	// client command needs to reach this cluster.
	Env []string
	// CPUs is the number of CPUs the node claims.
	CPUs int
	// MemoryMB is the node's RealMemory: a job asking for more is refused
	// at submission.
	MemoryMB int

	t      testing.TB
	ctld   *daemon
	slurmd *daemon
}

// daemon is a started slurmctld or slurmd; done is closed when it exits.
type daemon struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
}

func (d *daemon) exited() bool {
	select {
	case <-d.done:
		return true
	default:
		return false
	}
}

// Tools returns the paths of slurmctld and slurmd after checking that the
// client commands are on PATH too, or skips t (fails it under
// APPROXTUNE_REQUIRE_ALL=1) naming the packages to install.
func Tools(t testing.TB) (slurmctld, slurmd string) {
	t.Helper()
	find := func(name string) string {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
		for _, dir := range []string{"/usr/sbin", "/usr/local/sbin"} {
			p := filepath.Join(dir, name)
			if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
				return p
			}
		}
		testenv.Missing(t, "%s (%s)", name, Install)
		return ""
	}
	slurmctld, slurmd = find("slurmctld"), find("slurmd")
	for _, c := range []string{"sbatch", "srun", "squeue", "scontrol", "scancel", "sinfo"} {
		find(c)
	}
	return slurmctld, slurmd
}

// Start starts a cluster with the default Options: see StartWith.
func Start(t testing.TB) *Cluster {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith writes a slurm.conf for this machine into a fresh private
// directory, starts slurmctld and slurmd (each in a process group of its
// own), and returns once sinfo reports the node idle. Unless opts.KeepEnv,
// it sets SLURM_CONF in the test's environment (t.Setenv), so the slurm
// package's functions and any command the test starts reach this cluster.
// When the test ends, the cluster's jobs are cancelled, slurmd and
// slurmctld are stopped by PID, and any process still carrying this
// cluster's SLURM_CONF (a job's or a step daemon's) is killed; the daemons'
// logs are printed when the test failed.
func StartWith(t testing.TB, opts Options) *Cluster {
	t.Helper()
	ctldBin, slurmdBin := Tools(t)
	if opts.CPUs == 0 {
		opts.CPUs = DefaultCPUs
	}
	u, err := user.Current()
	if err != nil {
		t.Fatalf("slurmtest: current user: %v", err)
	}
	// A short path of its own, not t.TempDir(): slurmd puts each step's
	// Unix socket in its spool directory, and a socket's path is limited to
	// 108 bytes.
	dir, err := os.MkdirTemp("", "slurm")
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	c := &Cluster{Dir: dir, Conf: filepath.Join(dir, "slurm.conf"), CPUs: opts.CPUs, t: t}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for _, d := range []string{"", "state", "spool", "log"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatalf("slurmtest: %v", err)
		}
		// Jobs run as the submitting user, who must reach the spool.
		if err := os.Chmod(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatalf("slurmtest: %v", err)
		}
	}
	topo, mem, err := nodeTopology(slurmdBin, opts.CPUs)
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	c.MemoryMB = mem
	ports, err := freePorts(2)
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	conf, err := render(confData{
		Dir: dir, User: u.Username, CtldPort: ports[0], SlurmdPort: ports[1],
		Node: Node, Partition: Partition, CPUs: opts.CPUs, Hardware: topo, MemoryMB: mem,
	})
	if err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	if err := os.WriteFile(c.Conf, conf, 0o644); err != nil {
		t.Fatalf("slurmtest: %v", err)
	}
	c.Env = []string{"SLURM_CONF=" + c.Conf}
	if !opts.KeepEnv {
		t.Setenv("SLURM_CONF", c.Conf)
	}

	t.Cleanup(c.stop)
	c.ctld = c.start(ctldBin, "slurmctld")
	c.slurmd = c.start(slurmdBin, "slurmd")
	if err := c.waitIdle(30 * time.Second); err != nil {
		t.Fatalf("slurmtest: %v", err) // stop prints the logs
	}
	return c
}

// start starts a Slurm daemon in the foreground (-D) in its own process
// group, its output in log/NAME.out.
func (c *Cluster) start(bin, name string) *daemon {
	c.t.Helper()
	out, err := os.Create(filepath.Join(c.Dir, "log", name+".out"))
	if err != nil {
		c.t.Fatalf("slurmtest: %v", err)
	}
	defer out.Close()
	// -i ignores state left by an earlier run (there is none: the
	// directory is fresh) and lets slurmctld start without asking.
	args := []string{"-D", "-f", c.Conf}
	if name == "slurmctld" {
		args = append(args, "-i")
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Stdout, cmd.Stderr = out, out
	// Pdeathsig: a test binary that dies (a panic, -timeout) takes its
	// daemons with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		c.t.Fatalf("slurmtest: starting %s: %v", name, err)
	}
	d := &daemon{name: name, cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); close(d.done) }()
	return d
}

// Command returns a Slurm client command (sinfo, squeue, ...) aimed at this
// cluster.
func (c *Cluster) Command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), c.Env...)
	return cmd
}

// waitIdle waits until sinfo reports the node idle, or a daemon exits.
func (c *Cluster) waitIdle(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var last string
	for time.Now().Before(deadline) {
		for _, d := range []*daemon{c.ctld, c.slurmd} {
			if d.exited() {
				return fmt.Errorf("%s exited while starting (logs in %s)", d.name, filepath.Join(c.Dir, "log"))
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, err := c.Command(ctx, "sinfo", "-h", "-o", "%T").CombinedOutput()
		cancel()
		last = strings.TrimSpace(string(out))
		if err == nil && last == "idle" {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("node not idle after %v (sinfo: %q)", limit, last)
}

// stop cancels the cluster's jobs, stops slurmd then slurmctld (SIGTERM,
// SIGKILL after 10 s), and kills any process left with this cluster's
// SLURM_CONF in its environment.
func (c *Cluster) stop() {
	if c.ctld != nil && !c.ctld.exited() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		c.Command(ctx, "scancel", "--partition", Partition).Run()
		cancel()
	}
	for _, d := range []*daemon{c.slurmd, c.ctld} {
		if d != nil {
			d.stop(10 * time.Second)
		}
	}
	killEnv("SLURM_CONF=" + c.Conf)
	if c.t.Failed() {
		c.dumpLogs()
	}
}

// stop sends SIGTERM to the daemon and waits for it, SIGKILLing it after
// grace; then it kills whatever the daemon left in its process group.
func (d *daemon) stop(grace time.Duration) {
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(grace):
		syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.done
	}
	syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
}

// killEnv kills every process (but this one) whose initial environment
// holds entry: the step daemons and job processes of a cluster, which
// leave the daemons' process groups. It waits (up to 5 s) until they are
// gone.
func killEnv(entry string) {
	want := []byte(entry)
	self := os.Getpid()
	var killed []int
	paths, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, p := range paths {
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil || pid == self {
			continue
		}
		env, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		for _, e := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(e, want) {
				syscall.Kill(pid, syscall.SIGKILL)
				killed = append(killed, pid)
				break
			}
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range killed {
		for Alive(pid) && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// Alive reports whether process pid exists and is not a zombie.
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) STATE ...: comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// dumpLogs logs the tail of the daemons' logs.
func (c *Cluster) dumpLogs() {
	for _, name := range []string{"slurmctld.log", "slurmd.log", "slurmctld.out", "slurmd.out"} {
		b, err := os.ReadFile(filepath.Join(c.Dir, "log", name))
		if err != nil {
			continue
		}
		if len(b) > 4000 {
			b = b[len(b)-4000:]
		}
		c.t.Logf("%s (tail):\n%s", name, b)
	}
}

// Log returns the contents of one of the cluster's logs: "slurmctld.log",
// "slurmd.log" or "jobcomp.txt".
func (c *Cluster) Log(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, "log", name))
	return string(b)
}

// nodeTopology returns the NodeName line's hardware fields for a node of
// cpus CPUs: `slurmd -C`'s own (Boards=... ThreadsPerCore=...) when cpus is
// what the machine has, else one socket of cpus single-thread cores; and
// 90% of the machine's memory in MiB (RealMemory).
func nodeTopology(slurmd string, cpus int) (topo string, memMB int, err error) {
	out, err := exec.Command(slurmd, "-C").Output()
	if err != nil {
		return "", 0, fmt.Errorf("slurmd -C: %w", err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	real := 0
	var keep []string
	for _, f := range strings.Fields(first) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "RealMemory":
			m, err := strconv.Atoi(v)
			if err != nil {
				return "", 0, fmt.Errorf("slurmd -C: RealMemory %q: %w", v, err)
			}
			memMB = m * 9 / 10
		case "CPUs":
			real, _ = strconv.Atoi(v)
		case "NodeName":
		default:
			keep = append(keep, f)
		}
	}
	if memMB == 0 || real == 0 {
		return "", 0, fmt.Errorf("slurmd -C gave no CPUs or RealMemory: %q", first)
	}
	if cpus != real {
		keep = []string{"Boards=1", "SocketsPerBoard=1", "CoresPerSocket=" + strconv.Itoa(cpus), "ThreadsPerCore=1"}
	}
	return fmt.Sprintf("CPUs=%d %s", cpus, strings.Join(keep, " ")), memMB, nil
}

// freePorts returns n TCP ports free on the loopback now.
func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

type confData struct {
	Dir, User, Node, Partition, Hardware string
	CtldPort, SlurmdPort, CPUs, MemoryMB int
}

var confTemplate = template.Must(template.New("slurm.conf").Parse(`# Written by approxtune's internal/slurmtest for one test.
ClusterName=approxtune-test
SlurmctldHost=localhost
SlurmctldPort={{.CtldPort}}
SlurmdPort={{.SlurmdPort}}
SlurmUser={{.User}}
SlurmdUser={{.User}}
AuthType=auth/none
CredType=cred/none
StateSaveLocation={{.Dir}}/state
SlurmdSpoolDir={{.Dir}}/spool
SlurmctldPidFile={{.Dir}}/slurmctld.pid
SlurmdPidFile={{.Dir}}/slurmd.pid
SlurmctldLogFile={{.Dir}}/log/slurmctld.log
SlurmdLogFile={{.Dir}}/log/slurmd.log
# cgroups do not work in a container: proctrack/cgroup drains the node.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=pmix
ReturnToService=2
SchedulerParameters=sched_interval=1
MinJobAge=300
MailProg=/bin/true
JobCompType=jobcomp/filetxt
JobCompLoc={{.Dir}}/log/jobcomp.txt
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
# The node claims {{.CPUs}} CPUs whatever the machine has.
SlurmdParameters=config_overrides
NodeName={{.Node}} NodeAddr=127.0.0.1 {{.Hardware}} RealMemory={{.MemoryMB}}
PartitionName={{.Partition}} Nodes={{.Node}} Default=YES MaxTime=INFINITE State=UP
`))

func render(d confData) ([]byte, error) {
	var b bytes.Buffer
	if err := confTemplate.Execute(&b, d); err != nil {
		return nil, fmt.Errorf("slurm.conf: %w", err)
	}
	return b.Bytes(), nil
}
