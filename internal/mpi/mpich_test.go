package mpi_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/approxtune/approxtune/internal/testenv"
)

// allScenarios are the scenarios a working build passes (the harness's
// self-tests, which fail on purpose, are not among them).
var allScenarios = []string{"collectives", "split", "p2p", "nonblocking", "errors", "wtime", "threadlevel"}

// TestBuildsAgainstMPICH compiles this package's test binary against MPICH
// (-tags mpich) and runs the scenarios under MPICH's own launcher.
func TestBuildsAgainstMPICH(t *testing.T) {
	pc := testenv.Tool(t, "pkg-config")
	if out, err := exec.Command(pc, "--exists", "--print-errors", "mpich").CombinedOutput(); err != nil {
		testenv.Missing(t, "MPICH's pkg-config file mpich.pc (apt-get install libmpich-dev): %v %s", err, out)
	}
	testenv.Tool(t, "mpiexec.mpich")
	goTool := testenv.Tool(t, "go")

	bin := filepath.Join(t.TempDir(), "mpi.test")
	build := exec.Command(goTool, "test", "-tags", "mpich", "-c", "-o", bin, "./internal/mpi/")
	build.Dir = testenv.Root(t)
	// The go command's build cache keys a cgo package by its files and
	// C flags, but not by which "#cgo <tags> pkg-config:" lines the tags
	// select (golang/go#73033): an MPICH build of this package would be
	// stored under the same key as the Open MPI build, and later default
	// builds would silently link MPICH. An extra C define gives the MPICH
	// build keys of its own.
	build.Env = append(os.Environ(), "CGO_CFLAGS="+cgoCFLAGS(t, goTool)+" "+mpichCacheSalt)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, out)
	}

	// The binary must really be linked against MPICH, not Open MPI.
	if ldd, err := exec.LookPath("ldd"); err == nil {
		out, err := exec.Command(ldd, bin).CombinedOutput()
		if err != nil {
			t.Fatalf("ldd %s: %v\n%s", bin, err, out)
		}
		if !strings.Contains(string(out), "libmpich") || strings.Contains(string(out), "libmpi.so") {
			t.Fatalf("%s built with -tags mpich is not linked against libmpich alone:\n%s", bin, out)
		}
	}

	env := []string{childEnv + "=" + strings.Join(allScenarios, ",")}
	res := mpichRun(t, launchTimeout, ranks, env, bin, "-test.run=^$")
	checkResult(t, res, allScenarios...)
}

// mpichCacheSalt is the C define that keeps MPICH builds apart from Open MPI
// builds in the go command's cache.
const mpichCacheSalt = "-DAPPROXTUNE_BUILD_FOR_MPICH=1"

// cgoCFLAGS returns the CGO_CFLAGS the go command uses now.
func cgoCFLAGS(t *testing.T, goTool string) string {
	t.Helper()
	out, err := exec.Command(goTool, "env", "CGO_CFLAGS").Output()
	if err != nil {
		t.Fatalf("go env CGO_CFLAGS: %v", err)
	}
	return strings.TrimSpace(string(out))
}
