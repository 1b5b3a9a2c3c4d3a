//go:build cgo && !noopenblas && linux

package kernels

import (
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"gonum.org/v1/gonum/blas"
)

func cpuTime(t *testing.T) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestOpenBLASSingleThread checks that the OpenBLAS backend computes on one
// thread: OpenBLAS reports one thread, and a large dgemm consumes no more
// CPU time than wall-clock time (a multi-threaded dgemm on a machine with
// several cores consumes roughly threads × wall time).
func TestOpenBLASSingleThread(t *testing.T) {
	t.Setenv("OPENBLAS_NUM_THREADS", "4") // must not matter
	be, err := NewBackend(OpenBLAS)
	if err != nil {
		t.Fatal(err)
	}
	if n := openblasThreads(); n != 1 {
		t.Fatalf("openblas_get_num_threads() = %d, want 1", n)
	}
	t.Logf("Name() = %q", be.Name())
	if name := be.Name(); !strings.HasPrefix(name, "OpenBLAS ") || !strings.HasSuffix(name, "(cblas/lapacke, 1 thread)") {
		t.Errorf("Name() = %q", name)
	}
	if testing.Short() {
		return
	}
	n := 1024
	rng := rand.New(rand.NewPCG(1, 2))
	a, b, c := newMat(rng, n, n), newMat(rng, n, n), newMat(rng, n, n)
	be.Dgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a.d, a.ld, b.d, b.ld, 0, c.d, c.ld) // warm up
	cpu0, wall0 := cpuTime(t), time.Now()
	for range 3 {
		be.Dgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a.d, a.ld, b.d, b.ld, 0, c.d, c.ld)
	}
	cpu, wall := cpuTime(t)-cpu0, time.Since(wall0)
	t.Logf("3 dgemm n=%d: cpu %v, wall %v (ratio %.2f)", n, cpu, wall, cpu.Seconds()/wall.Seconds())
	if cpu.Seconds() > 1.3*wall.Seconds()+0.02 {
		t.Errorf("dgemm used %v CPU in %v wall time: more than one thread", cpu, wall)
	}
}
