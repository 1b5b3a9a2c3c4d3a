package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/preload"
	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/sweep"
)

// edgeCases are the cases testdata/program/edges.c runs, in order; sendc
// (MPI_Send_c) only where the MPI is MPI 4.
var edgeCases = []string{"region-begin", "shift", "shiftr", "wild", "cancel", "rfree", "f90", "sendc", "region-end"}

// edgeLines is what edges.c prints when every case passes: "<case> ok" each.
func edgeLines(mpi4 bool) string {
	var b strings.Builder
	for _, c := range edgeCases {
		if c != "sendc" || mpi4 {
			b.WriteString(c + " ok\n")
		}
	}
	return b.String()
}

// edgesTimeout bounds each launch of edges.c, which takes under 2 s: one
// that runs out has hung.
const edgesTimeout = 60 * time.Second

// runEdges runs the command start makes under a context of edgesTimeout;
// on a timeout (hung) the launcher gets SIGTERM, to take its ranks down,
// and stdout holds what the program printed before it hung.
func runEdges(t *testing.T, what string, start func(ctx context.Context) *exec.Cmd) (stdout, stderr string, code int, hung bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), edgesTimeout)
	defer cancel()
	cmd := start(ctx)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ctx.Err() != nil {
		return so.String(), se.String(), -1, true
	}
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return so.String(), se.String(), code, false
}

// hangMessage says which case of edges.c hung: the one after the last it
// printed (of the cases that mpi4 says it runs).
func hangMessage(what, stdout, stderr string, mpi4 bool) string {
	cases := strings.Fields(strings.ReplaceAll(edgeLines(mpi4), " ok", ""))
	last, next := "none", cases[0]
	for _, l := range strings.Split(stdout, "\n") {
		for i, c := range cases {
			if strings.HasPrefix(l, c+" ") {
				last, next = l, "none (it hung at MPI_Finalize)"
				if i+1 < len(cases) {
					next = cases[i+1]
				}
			}
		}
	}
	return fmt.Sprintf("%s: timed out after %v, a hang in case %s (the last line printed: %q)\nstdout:\n%s\nstderr:\n%s",
		what, edgesTimeout, next, last, stdout, stderr)
}

// checkEdges runs edges.c alone (launch with no environment) and then under
// the preload library with conditional and eager at tolerances 0 and 2^-1:
// every launch exits 0 within edgesTimeout and prints the program's own
// lines, and the library's result counts the calls of the region (none
// skipped at 0, where the program checks its doubles exactly too). After a
// launch that hangs the others are left out (each would take the whole
// timeout).
func checkEdges(t *testing.T, lib string, mpi4 bool, launch func(ctx context.Context, env []string, args ...string) *exec.Cmd) {
	t.Helper()
	alone, stderr, code, hung := runEdges(t, "edges alone", func(ctx context.Context) *exec.Cmd { return launch(ctx, nil, "exact") })
	if hung {
		t.Fatal(hangMessage("edges alone", alone, stderr, mpi4))
	}
	if want := edgeLines(mpi4); code != 0 || alone != want {
		t.Fatalf("edges alone: exit %d, output\n%swant exit 0 and\n%s%s", code, alone, want, stderr)
	}
	hangs := 0
	for _, pol := range []string{"conditional", "eager"} {
		for _, tol := range []float64{0, 0.5} {
			if hangs > 0 {
				t.Logf("%s at %g: not run after a hang", pol, tol)
				continue
			}
			t.Run(fmt.Sprintf("%s/%g", pol, tol), func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "result.json")
				env := []string{"LD_PRELOAD=" + lib, preload.EnvRun + "=" + fmt.Sprintf(`{"policy":%q,"tolerance":%g,"out":%q}`, pol, tol, out)}
				var args []string
				if tol == 0 {
					args = []string{"exact"}
				}
				what := fmt.Sprintf("edges under the library, %s at %g", pol, tol)
				stdout, stderr, code, hung := runEdges(t, what, func(ctx context.Context) *exec.Cmd { return launch(ctx, env, args...) })
				if hung {
					hangs++
					t.Fatal(hangMessage(what, stdout, stderr, mpi4))
				}
				if code != 0 || stdout != alone {
					t.Fatalf("%s: exit %d, output\n%swant exit 0 and the program's own\n%sstderr:\n%s", what, code, stdout, alone, stderr)
				}
				var res sweep.Result
				b, err := os.ReadFile(out)
				if err != nil || json.Unmarshal(resultLine(b), &res) != nil || res.Executed == nil || res.Skipped == nil {
					t.Fatalf("%s: no result (%v)\n%s", what, err, stderr)
				}
				if *res.Executed+*res.Skipped == 0 || (tol == 0 && *res.Skipped != 0) {
					t.Errorf("%s: executed %d, skipped %d; want calls counted, none skipped at 0", what, *res.Executed, *res.Skipped)
				}
			})
		}
	}
}

// Point-to-point edge cases the preload library once hung on or failed
// (testdata/program/edges.c, 4 ranks under Open MPI's mpirun): a
// non-periodic shift with MPI_Sendrecv and MPI_Sendrecv_replace, a wildcard
// receive posted before a specific one, a cancelled receive, a freed active
// send, a derived type over an F90 real, and messages across
// approxtune_begin and approxtune_end. Under the library, conditional and
// eager at 0 and 2^-1, every case passes as it does alone.
func TestProgramEdges(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	l := testenv.Launcher(t)
	lib := buildPreload(t)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "edges.c"), "-I"+filepath.Join(testenv.Root(t), "include"))
	mpi4 := mpiVersion(t, mpicc) >= 4
	checkEdges(t, lib, mpi4, func(ctx context.Context, env []string, args ...string) *exec.Cmd {
		cmd := l.Command(ctx, 4, prog, args...)
		cmd.Env = append(cmd.Env, env...)
		return cmd
	})
}

// The same edge cases under MPICH (the library built with -tags mpich),
// with MPI_Send_c, an MPI-4 large-count send, received by MPI_Recv.
func TestProgramEdgesMPICH(t *testing.T) {
	lib, mpicc, mpiexec := mpichPreload(t)
	prog := compile(t, mpicc, filepath.Join("testdata", "program", "edges.c"), "-I"+filepath.Join(testenv.Root(t), "include"))
	v := mpiVersion(t, mpicc)
	if v < 4 {
		t.Logf("MPICH's MPI_VERSION is %d: no MPI_Send_c case", v)
	}
	checkEdges(t, lib, v >= 4, func(ctx context.Context, env []string, args ...string) *exec.Cmd {
		a := []string{"-n", "4"}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			a = append(a, "-genv", k, v)
		}
		return exec.CommandContext(ctx, mpiexec, append(append(a, prog), args...)...)
	})
}

// mpiVersion is the MPI_VERSION of mpi.h as the MPI compiler wrapper mpicc
// sees it.
func mpiVersion(t *testing.T, mpicc string) int {
	t.Helper()
	cmd := exec.Command(mpicc, "-E", "-P", "-x", "c", "-")
	cmd.Stdin = strings.NewReader("#include <mpi.h>\nmpi_version MPI_VERSION\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s -E: MPI_VERSION: %v", mpicc, err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		var v int
		if _, err := fmt.Sscanf(l, "mpi_version %d", &v); err == nil {
			return v
		}
	}
	t.Fatalf("%s -E: no MPI_VERSION in mpi.h", mpicc)
	return 0
}
