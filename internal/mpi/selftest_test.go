package mpi_test

import (
	"strings"
	"testing"
)

// The harness itself: a failed check on one rank must fail the job and say
// which rank and why, both for a check that lets the scenario go on and for
// one that abandons it while the other ranks wait in a collective.

func init() {
	scenario("selftest-error", func(r *R) {
		if r.Rank == 2 {
			r.Errorf("deliberate failure")
		}
	})
	scenario("selftest-fatal", func(r *R) {
		if r.Rank == 1 {
			r.Fatalf("deliberate fatal failure")
		}
		r.W.Barrier() // never completes: rank 1 does not come
	})
}

func TestHarnessReportsFailures(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"selftest-error", "rank 2: selftest-error: selftest_test.go:"},
		{"selftest-fatal", "rank 1: selftest-fatal: selftest_test.go:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := launchScenarios(t, c.name)
			if res.ExitCode == 0 {
				t.Fatalf("a job with a failing rank exited 0\nstderr:\n%s\nstdout:\n%s", res.Stderr, res.Stdout)
			}
			if !strings.Contains(res.Stderr, c.want) || !strings.Contains(res.Stderr, "deliberate") {
				t.Fatalf("stderr does not report the failure as %q...deliberate\nstderr:\n%s", c.want, res.Stderr)
			}
			if strings.Contains(res.Stdout, "ok "+c.name) {
				t.Errorf("a rank reported passing a scenario that failed:\n%s", res.Stdout)
			}
		})
	}
}
