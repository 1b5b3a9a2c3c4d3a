package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/approxtune/approxtune/internal/launch"
	"github.com/approxtune/approxtune/internal/testenv"
)

// xdlltGlob finds the Open MPI build of ScaLAPACK's Cholesky test program
// that Debian's scalapack-mpi-test installs.
const xdlltGlob = "/usr/lib/*/scalapack/openmpi-tests/xdllt"

// The runs testdata/scalapack/LLT.dat asks xdllt for: two matrix sizes times
// two block sizes, one right-hand side, on one 2x2 process grid. Condition
// estimation and iterative refinement are off: with them ScaLAPACK 2.2.1's
// pdporfs can leave ranks in different collectives and hang
// (Reference-ScaLAPACK/scalapack#121).
const (
	lltRanks = 4
	lltGrids = 1
	lltNs    = 2
	lltNBs   = 2
	lltTests = lltGrids * lltNs * lltNBs
)

// approxtune program --check runs Debian's unmodified ScaLAPACK test program
// xdllt (Fortran, calling BLACS in C, calling MPI) with the preload library:
// its residual checks still pass, and the check lists the BLAS its PBLAS
// calls and the MPI its BLACS calls.
func TestProgramCheckScaLAPACK(t *testing.T) {
	xdllt, _ := filepath.Glob(xdlltGlob)
	if len(xdllt) == 0 {
		testenv.Missing(t, "ScaLAPACK's test program %s (apt-get install scalapack-mpi-test)", xdlltGlob)
	}
	if l := testenv.Launcher(t); l.Flavor != launch.OpenMPI {
		testenv.Missing(t, "Open MPI's mpirun for %s (%s is %s)", xdllt[0], l.Path, l.Flavor)
	}
	bin, lib := testenv.Build(t), buildPreload(t)
	dat, err := os.ReadFile(filepath.Join("testdata", "scalapack", "LLT.dat"))
	if err != nil {
		t.Fatal(err)
	}
	// xdllt reads LLT.dat from its working directory, which mpirun and
	// approxtune pass on from theirs.
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "LLT.dat"), dat, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	stdout, stderr, code := runCheck(t, bin, lib, "--ranks", strconv.Itoa(lltRanks), xdllt[0])
	if code != 0 {
		t.Fatalf("program --check xdllt: exit %d\n%s%s", code, stdout, stderr)
	}

	summary := regexp.MustCompile(`Finished\s+(\d+) tests[^\n]*\n\s+(\d+) tests completed and passed residual checks\.\n\s+(\d+) tests completed and failed residual checks\.\n\s+(\d+) tests skipped`)
	m := summary.FindStringSubmatch(stdout)
	want := []string{strconv.Itoa(lltTests), strconv.Itoa(lltTests), "0", "0"}
	if m == nil || !slices.Equal(m[1:], want) {
		t.Errorf("xdllt's summary: got %q, want %v tests run, passed, failed, skipped\n%s", m, want, stdout)
	}
	results := regexp.MustCompile(`(?m)^WALL .* (PASSED|FAILED)$`).FindAllStringSubmatch(stdout, -1)
	passed := 0
	for _, r := range results {
		if r[1] == "PASSED" {
			passed++
		}
	}
	if len(results) != lltTests || passed != lltTests {
		t.Errorf("xdllt's result lines: %d, %d PASSED; want %d, all PASSED\n%s", len(results), passed, lltTests, stdout)
	}

	calls := checkTable(t, stdout, lltRanks)
	// Each BLACS_GRIDINIT (one in xdllt's input reader, one per process
	// grid) creates one communicator, duplicates it and splits it into rows
	// and columns; BLACS_GRIDEXIT frees the four. xdllt calls BLACS_BARRIER
	// before each factorization and before each solve. ScaLAPACK's pdpotrf
	// factors its diagonal blocks in pdpotf2 with level-1 and level-2 BLAS,
	// never with dpotrf_.
	grids := 1 + lltGrids
	exact := map[string]int64{
		"MPI_Comm_create": lltRanks * int64(grids),
		"MPI_Comm_dup":    lltRanks * int64(grids),
		"MPI_Comm_split":  2 * lltRanks * int64(grids),
		"MPI_Comm_free":   4 * lltRanks * int64(grids),
		"MPI_Barrier":     2 * lltRanks * lltTests,
		"dpotrf_":         0,
	}
	for name, n := range exact {
		if calls[name] != n {
			t.Errorf("%s: %d calls over %d ranks, want %d", name, calls[name], lltRanks, n)
		}
	}
	// The local updates of pdtrsm and pdsyrk, and BLACS's point-to-point
	// messages, broadcasts and combines.
	for _, name := range []string{"dgemm_", "dsyrk_", "dtrsm_", "MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Bcast", "MPI_Reduce", "MPI_Allreduce"} {
		if calls[name] <= 0 {
			t.Errorf("%s: %d calls, want some\n%s", name, calls[name], stdout)
		}
	}
}

// checkTable reads the table `approxtune program --check` ends its output
// with: the calls of each routine listed, which ran on ranks ranks.
func checkTable(t *testing.T, stdout string, ranks int) map[string]int64 {
	t.Helper()
	head := "intercepted calls over " + strconv.Itoa(ranks) + " ranks:\n"
	_, table, ok := strings.Cut(stdout, head)
	if !ok {
		t.Fatalf("no %q in the output:\n%s", head, stdout)
	}
	calls := map[string]int64{}
	for _, l := range strings.Split(table, "\n")[1:] {
		f := strings.Fields(l)
		if len(f) != 3 {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			t.Fatalf("check table row %q: %v", l, err)
		}
		calls[f[0]] = n
	}
	return calls
}
