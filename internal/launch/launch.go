// Package launch builds the mpirun command lines that start approxtune's MPI
// processes on the local machine: the right flags for Open MPI or MPICH, the
// environment an oversubscribed node needs, and one BLAS thread per rank.
package launch

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Flavor is the MPI implementation behind an mpirun.
type Flavor string

// Known flavors.
const (
	OpenMPI Flavor = "openmpi"
	MPICH   Flavor = "mpich"
	Unknown Flavor = "unknown"
)

// Launcher starts programs under an mpirun.
type Launcher struct {
	Path   string // the mpirun (or mpiexec) executable
	Flavor Flavor
	Cores  int // cores on this machine; more ranks than this means oversubscription
}

// Find locates mpirun: $APPROXTUNE_MPIRUN if set, else mpirun on PATH. It runs
// `mpirun --version` to learn the flavor.
func Find() (*Launcher, error) {
	path := os.Getenv("APPROXTUNE_MPIRUN")
	if path == "" {
		p, err := exec.LookPath("mpirun")
		if err != nil {
			return nil, fmt.Errorf("mpirun not found on PATH (install Open MPI: apt-get install openmpi-bin, or set APPROXTUNE_MPIRUN): %w", err)
		}
		path = p
	}
	return ForPath(path)
}

// versionTimeout bounds how long ForPath waits for mpirun --version.
const versionTimeout = 30 * time.Second

// ForPath returns a Launcher for the given mpirun executable. Its folder
// is taken with symbolic links resolved: Open MPI's mpirun run by an
// absolute path takes its installation prefix from it, and /bin/mpirun
// (PATH=/bin:/usr/bin, where /bin links to /usr/bin) gave the prefix "/",
// which it refuses ("a prefix ... that only contained slashes").
func ForPath(path string) (*Launcher, error) {
	if filepath.IsAbs(path) {
		if dir, err := filepath.EvalSymlinks(filepath.Dir(path)); err == nil {
			path = filepath.Join(dir, filepath.Base(path))
		}
	}
	// An mpirun that hangs (a broken installation, a wrapper waiting on
	// something) had left the session waiting without a word.
	ctx, cancel := context.WithTimeout(context.Background(), versionTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	// A wrapper whose child outlives it keeps the output open.
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return nil, fmt.Errorf("%s --version did not answer within %v: is it a working mpirun? (set APPROXTUNE_MPIRUN to another)", path, versionTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w (%s)", path, err, bytes.TrimSpace(out))
	}
	return &Launcher{Path: path, Flavor: flavorOf(string(out)), Cores: runtime.NumCPU()}, nil
}

// Name is the flavor's implementation as people name it ("Open MPI",
// "MPICH"), "" when unknown.
func (f Flavor) Name() string {
	switch f {
	case OpenMPI:
		return "Open MPI"
	case MPICH:
		return "MPICH"
	}
	return ""
}

func flavorOf(version string) Flavor {
	switch {
	case strings.Contains(version, "Open MPI"), strings.Contains(version, "OpenRTE"):
		return OpenMPI
	case strings.Contains(version, "HYDRA"), strings.Contains(version, "MPICH"):
		return MPICH
	}
	return Unknown
}

// Args returns the mpirun arguments that start n ranks of prog with args.
func (l *Launcher) Args(n int, prog string, args ...string) []string {
	a := []string{"-n", fmt.Sprint(n)}
	if l.Flavor == OpenMPI && n > l.Cores {
		// Ranks bound round-robin to cores time-share their core steadily;
		// unbound, the scheduler moves them around and run times vary
		// several times more (docs/benchmarks.md, "The machine and how to
		// read the figures").
		a = append(a, "--map-by", "core:OVERSUBSCRIBE", "--bind-to", "core:overload-allowed")
	}
	a = append(a, prog)
	return append(a, args...)
}

// Env returns the environment entries the ranks need, to be added to the
// caller's environment: permission to run as root for Open MPI, one BLAS
// thread per rank, and on an oversubscribed node ranks that yield the CPU
// while they wait and a broadcast algorithm that does not stall on them.
func (l *Launcher) Env(n int) []string {
	env := []string{"OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1"}
	if l.Flavor == OpenMPI {
		if os.Geteuid() == 0 {
			env = append(env, "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1")
		}
		if n > l.Cores {
			env = append(env, "OMPI_MCA_mpi_yield_when_idle=1")
			// Open MPI's default pipelined broadcast of large messages hands
			// segments back and forth between ranks; ranks that share a core
			// then wait for scheduler ticks, and a large broadcast's time
			// depends on what the neighbours did before. The binomial tree
			// does not hand segments back and forth.
			env = append(env, "OMPI_MCA_coll_tuned_use_dynamic_rules=1", "OMPI_MCA_coll_tuned_bcast_algorithm=6")
		}
	}
	return env
}

// TransportWarnings returns what in a rank's environment makes the engine's
// predictions unreliable on its node, one sentence each; lib names the MPI
// library (MPI_Get_library_version, or mpirun --version's output) and getenv
// reads the environment (os.Getenv). Open MPI's shared-memory transport
// with single-copy transfers turned off (container images often set it so)
// moves a message over its 4 KiB eager limit only while both processes are
// inside MPI calls; a full run then waits for senders that a selective run,
// skipping their computation, does not wait for (docs/benchmarks.md,
// "Settings the agent warns of").
func TransportWarnings(lib string, getenv func(string) string) []string {
	if flavorOf(lib) != OpenMPI {
		return nil
	}
	var w []string
	for _, v := range []string{"OMPI_MCA_btl_vader_single_copy_mechanism", "OMPI_MCA_btl_sm_single_copy_mechanism"} {
		if strings.EqualFold(strings.TrimSpace(getenv(v)), "none") {
			w = append(w, fmt.Sprintf("%s=none: messages over 4 KiB between ranks on this node move only while both ranks are inside MPI, which predictions of selective runs do not model (cholesky2d came out 14-62%% low); unset it, or set it to cma where processes may ptrace each other (docs/benchmarks.md, \"Settings the agent warns of\")", v))
		}
	}
	return w
}

// Oversubscribed returns why ranks ranks of an MPI of flavor f on a node
// of cores cores make the engine's predictions unreliable, or "". Open
// MPI's waiting ranks yield their core (Env sets it); MPICH's poll, and
// there is no setting that makes them yield, so ranks that share a core
// hold up each other's messages: a halo-exchange program of 4 ranks on 2
// cores ran 10 times Open MPI's time under MPICH 4.0.2 (ch4:ucx), and its
// prediction with nothing skipped came out 15% below its own launch's
// time, where 2 ranks on the 2 cores were predicted within 3%.
func Oversubscribed(f Flavor, ranks, cores int) string {
	if f != MPICH || ranks <= cores || cores < 1 {
		return ""
	}
	return fmt.Sprintf("%d ranks on %d cores under MPICH: its ranks poll while they wait instead of yielding the core, so ranks that share a core hold up each other's messages, runs take several times longer and predictions come out low (a halo exchange: 10x Open MPI's time, predicted 15%% low with nothing skipped); run at most %d ranks on this machine, or use Open MPI, whose ranks approxtune sets to yield", ranks, cores, cores)
}

// OversubscribedWarnings is Oversubscribed for the rank that calls it, in
// one sentence or none: lib names the MPI library (as TransportWarnings),
// getenv reads the environment, where MPICH's launcher says how many ranks
// share the node (MPI_LOCALNRANKS), and cores is the node's core count.
func OversubscribedWarnings(lib string, getenv func(string) string, cores int) []string {
	n, err := strconv.Atoi(strings.TrimSpace(getenv("MPI_LOCALNRANKS")))
	if err != nil {
		return nil
	}
	if w := Oversubscribed(flavorOf(lib), n, cores); w != "" {
		return []string{w}
	}
	return nil
}

// Command returns an *exec.Cmd that runs n ranks of prog with args, with the
// environment of Env added to the current one.
func (l *Launcher) Command(ctx context.Context, n int, prog string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, l.Path, l.Args(n, prog, args...)...)
	cmd.Env = append(os.Environ(), l.Env(n)...)
	return cmd
}
