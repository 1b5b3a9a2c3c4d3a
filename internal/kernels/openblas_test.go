//go:build cgo && !noopenblas && linux

package kernels

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/testenv"
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

// wantSIMD is what /proc/cpuinfo says OpenBLAS's kernels could use here.
func wantSIMD(t *testing.T) simd {
	f := testenv.CPUFlags(t)
	switch {
	case f["avx512f"] && f["avx512bw"] && f["avx512dq"] && f["avx512vl"]:
		return simdAVX512
	case f["avx2"] && f["fma"]:
		return simdAVX2
	}
	return simdNone
}

// coreChildEnv marks the process TestOpenBLASCoreWarning starts: it reports
// what its backend detected instead of testing.
const coreChildEnv = "APPROXTUNE_TEST_CORE_CHILD"

// TestOpenBLASCoreWarning: the extension the backend detects is the one
// /proc/cpuinfo lists; OpenBLAS's own choice draws a warning exactly when
// it is an SSE-only kernel set on a CPU with AVX2; OpenBLAS forced onto its
// Prescott kernels, the set it falls back to on new Intel models it does
// not know, draws one on such a CPU (naming the kernels, the variable and
// the value to set) and none on an older one. OpenBLAS reads
// OPENBLAS_CORETYPE when it is loaded, so a child process of this test
// binary runs with it. The forcing needs a DYNAMIC_ARCH OpenBLAS on x86-64.
func TestOpenBLASCoreWarning(t *testing.T) {
	if os.Getenv(coreChildEnv) == "1" {
		b, err := NewBackend(OpenBLAS)
		if err != nil {
			t.Fatal(err)
		}
		core, cpu, _ := b.(coreChooser).coreChoice()
		fmt.Printf("core=%s\nsimd=%d\n", core, cpu)
		for _, w := range Warnings(b) {
			fmt.Printf("warning=%s\n", w)
		}
		return
	}
	b, err := NewBackend(OpenBLAS)
	if err != nil {
		t.Fatal(err)
	}
	want := wantSIMD(t)
	core, cpu, dynamic := b.(coreChooser).coreChoice()
	if cpu != want {
		t.Errorf("detected %s, /proc/cpuinfo says %s", cpu, want)
	}
	wantOwn := 0
	if sseOnlyCore(core) && cpu != simdNone {
		wantOwn = 1
	}
	if own := Warnings(b); len(own) != wantOwn {
		t.Errorf("OpenBLAS's own choice %s on a CPU with %s: warnings %q, want %d", core, cpu, own, wantOwn)
	}
	t.Logf("OpenBLAS's own kernels: %s (DYNAMIC_ARCH %v); CPU: %s", core, dynamic, cpu)
	if runtime.GOARCH != "amd64" {
		return // no Prescott kernels to force
	}
	if !dynamic {
		testenv.Missing(t, "an OpenBLAS built with DYNAMIC_ARCH (OPENBLAS_CORETYPE has no effect on %q)", b.Name())
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenBLASCoreWarning$", "-test.count=1")
	cmd.Env = append(os.Environ(), coreChildEnv+"=1", "OPENBLAS_CORETYPE=Prescott")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	var gotCore string
	var warnings []string
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "core="); ok {
			gotCore = v
		} else if v, ok := strings.CutPrefix(line, "warning="); ok {
			warnings = append(warnings, v)
		}
	}
	if gotCore != "Prescott" {
		t.Fatalf("child with OPENBLAS_CORETYPE=Prescott reports kernels %q:\n%s", gotCore, out)
	}
	if want == simdNone {
		if len(warnings) != 0 {
			t.Errorf("Prescott kernels on a CPU without AVX2: warnings %q, want none", warnings)
		}
		return
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "OPENBLAS_CORETYPE=Prescott gives OpenBLAS's Prescott kernels") ||
		!strings.Contains(warnings[0], "set OPENBLAS_CORETYPE="+want.coreType()+" instead") {
		t.Errorf("Prescott kernels on a CPU with %s: warnings %q, want one naming them and OPENBLAS_CORETYPE=%s", want, warnings, want.coreType())
	}
}
