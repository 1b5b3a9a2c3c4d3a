package mpi_test

import (
	"math"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/mpi"
)

func TestWtimeVersion(t *testing.T) { runScenarios(t, "wtime") }

func TestThreadLevel(t *testing.T) { runScenarios(t, "threadlevel") }

func init() {
	scenario("wtime", wtime)
	scenario("threadlevel", threadLevel)
}

// TestLibraryVersionBeforeInit runs in the test process itself, which never
// initialises MPI.
func TestLibraryVersionBeforeInit(t *testing.T) {
	if mpi.Initialized() || mpi.Finalized() {
		t.Fatalf("Initialized() = %v, Finalized() = %v in a process that never called Init; want false, false",
			mpi.Initialized(), mpi.Finalized())
	}
	v := mpi.LibraryVersion()
	first, _, _ := strings.Cut(v, "\n")
	t.Logf("LibraryVersion() = %q...", first)
	if strings.TrimSpace(v) == "" || v == "unknown MPI library" {
		t.Fatalf("LibraryVersion() = %q before Init", v)
	}
	if !strings.Contains(v, libName) {
		t.Errorf("LibraryVersion() = %q, want it to mention %q (the library this binary is built against)", v, libName)
	}
}

// TestLibraryVersionHasNoNUL: Open MPI counts the terminating NUL in the
// length MPI_Get_library_version returns; the string must not carry it.
func TestLibraryVersionHasNoNUL(t *testing.T) {
	if v := mpi.LibraryVersion(); strings.ContainsRune(v, 0) {
		t.Errorf("LibraryVersion() = %q contains a NUL", v)
	}
}

func TestOpString(t *testing.T) {
	for op, want := range map[mpi.Op]string{mpi.Sum: "sum", mpi.Max: "max", mpi.Min: "min", mpi.Op(7): "Op(7)"} {
		if got := op.String(); got != want {
			t.Errorf("Op(%d).String() = %q, want %q", int(op), got, want)
		}
	}
}

func TestThreadLevelString(t *testing.T) {
	levels := []mpi.ThreadLevel{mpi.ThreadSingle, mpi.ThreadFunneled, mpi.ThreadSerialized, mpi.ThreadMultiple}
	for i, l := range levels {
		if want := []string{"single", "funneled", "serialized", "multiple"}[i]; l.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(l), l.String(), want)
		}
		if i > 0 && levels[i-1] >= l {
			t.Errorf("thread levels out of order: %v = %d, %v = %d", levels[i-1], levels[i-1], l, l)
		}
	}
	if got := mpi.ThreadLevel(-42).String(); got != "ThreadLevel(-42)" {
		t.Errorf("ThreadLevel(-42).String() = %q", got)
	}
}

func TestErrorString(t *testing.T) {
	e := &mpi.Error{Op: "MPI_Bcast", Code: 8, Msg: "MPI_ERR_ROOT: invalid root"}
	if got, want := e.Error(), "MPI_Bcast: MPI_ERR_ROOT: invalid root (code 8)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func wtime(r *R) {
	t0 := mpi.Wtime()
	time.Sleep(50 * time.Millisecond)
	t1 := mpi.Wtime()
	if d := t1 - t0; d < 0.04 || d > 10 {
		r.Errorf("Wtime went from %v to %v across a 50ms sleep (%.4fs)", t0, t1, d)
	}
	if t2 := mpi.Wtime(); t2 < t1 {
		r.Errorf("Wtime went backwards: %v then %v", t1, t2)
	}
	hostClock(r)

	v := mpi.LibraryVersion()
	if strings.TrimSpace(v) == "" || !strings.Contains(v, libName) {
		r.Errorf("LibraryVersion() = %q, want it to mention %q", v, libName)
	}
	name, err := mpi.ProcessorName()
	r.Must(err, "ProcessorName")
	if strings.TrimSpace(name) == "" || strings.ContainsRune(name, 0) {
		r.Errorf("ProcessorName() = %q", name)
	}
	if !mpi.Initialized() || mpi.Finalized() {
		r.Errorf("after Init: Initialized() = %v, Finalized() = %v; want true, false", mpi.Initialized(), mpi.Finalized())
	}
}

func threadLevel(r *R) {
	if r.Level < mpi.ThreadFunneled || r.Level > mpi.ThreadMultiple {
		r.Errorf("mpi.Init returned thread level %v (%d), want funneled or better", r.Level, int(r.Level))
	}
	if strings.HasPrefix(r.Level.String(), "ThreadLevel(") {
		r.Errorf("mpi.Init returned an unknown thread level %v", r.Level)
	}
	// Init locked this goroutine to its thread: it stays there however the
	// scheduler is stirred.
	tid := syscall.Gettid()
	done := make(chan bool)
	for i := 0; i < 8; i++ {
		go func() {
			for j := 0; j < 100; j++ {
				runtime.Gosched()
			}
			done <- true
		}()
	}
	for i := 0; i < 8; i++ {
		runtime.Gosched()
		runtime.GC()
		<-done
		if got := syscall.Gettid(); got != tid {
			r.Fatalf("the MPI goroutine moved from thread %d to %d", tid, got)
		}
	}
	// And MPI still works from it.
	x := []int64{1}
	r.Must(mpi.Allreduce(r.W, x, x, mpi.Sum), "Allreduce")
	eq(r, "Allreduce", x, []int64{4})
}

// hostClock checks that Clock reads one clock on every rank of the host:
// its offset from the system's wall clock is the same on every rank (to
// 20 ms, in case a rank is descheduled between the two readings), whereas
// each rank's Wtime may count from its own origin.
func hostClock(r *R) {
	c0 := mpi.Clock()
	time.Sleep(20 * time.Millisecond)
	if d := mpi.Clock() - c0; d < 0.015 || d > 10 {
		r.Errorf("Clock went from %v to %v across a 20ms sleep", c0, c0+d)
	}
	// The largest of a few paired readings: a rank descheduled between the
	// two reads of one pair reads the wall clock late, which only lowers
	// that pair's offset.
	off := math.Inf(-1)
	for range 5 {
		off = max(off, mpi.Clock()-float64(time.Now().UnixNano())/1e9)
	}
	all := make([]float64, r.Size)
	r.Must(mpi.Allgather(r.W, []float64{off}, all), "Allgather")
	lo, hi := all[0], all[0]
	for _, c := range all {
		lo, hi = min(lo, c), max(hi, c)
	}
	if hi-lo > 0.02 {
		r.Errorf("Clock's offset from the wall clock differs by %.3f s across ranks (%v): not one host clock", hi-lo, all)
	}
}
