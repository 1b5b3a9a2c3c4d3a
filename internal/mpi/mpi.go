// Package mpi is a thin cgo binding to the system's MPI library (Open MPI by
// default; build with -tags mpich for MPICH, or -tags mpicustom with CGO_CFLAGS
// and CGO_LDFLAGS taken from `mpicc -show` for any other MPI).
//
// Threading: Init asks for MPI_THREAD_FUNNELED and locks the calling goroutine
// to its OS thread. Every later call must be made from that same goroutine;
// other goroutines talk to it through channels.
//
// Errors: Init installs MPI_ERRORS_RETURN on MPI_COMM_WORLD (communicators
// derived from it inherit it), so a failing call returns an *Error instead of
// aborting the job.
//
// Buffers are Go slices of float64, int64 or byte. Non-blocking calls pin their
// buffer until the request completes (Wait, Waitall or a successful Test).
package mpi

/*
#include <mpi.h>
#include <stdlib.h>
#include <stdint.h>
#include <time.h>

static double at_clock(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
MPI_Comm at_comm_world(void);
uintptr_t at_comm_handle(MPI_Comm c);
MPI_Comm at_comm_of(uintptr_t h);
MPI_Comm at_comm_null(void);
MPI_Datatype at_double(void);
MPI_Datatype at_int64(void);
MPI_Datatype at_byte(void);
MPI_Datatype at_double_int(void);
MPI_Op at_op(int k);
MPI_Request at_request_null(void);
int at_any_source(void);
int at_any_tag(void);
int at_undefined(void);
int at_reduce_in(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c, int inplace);
int at_allreduce_in(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, int inplace);
int at_set_errors_return(MPI_Comm c);
int at_waitall_ignore(int n, MPI_Request *q);
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Elem is the set of element types buffers may hold.
type Elem interface {
	float64 | int64 | byte
}

// Op is a reduction operation.
type Op int

// Reduction operations.
const (
	Sum Op = iota
	Max
	Min
)

func (o Op) String() string {
	switch o {
	case Sum:
		return "sum"
	case Max:
		return "max"
	case Min:
		return "min"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

func (o Op) c() C.MPI_Op { return C.at_op(C.int(o)) }

// Wildcards for Recv and Irecv.
var (
	// AnySource matches a message from any rank.
	AnySource = int(C.at_any_source())
	// AnyTag matches a message with any tag.
	AnyTag = int(C.at_any_tag())
	// Undefined as a Split color leaves the calling rank out of every new communicator.
	Undefined = int(C.at_undefined())
)

// Error is an MPI error code returned by an MPI call.
type Error struct {
	Op   string // the MPI routine, e.g. "MPI_Bcast"
	Code int    // the MPI error code
	Msg  string // MPI_Error_string of Code
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %s (code %d)", e.Op, e.Msg, e.Code) }

func check(op string, rc C.int) error {
	if rc == C.MPI_SUCCESS {
		return nil
	}
	var buf [C.MPI_MAX_ERROR_STRING + 1]C.char
	var n C.int
	msg := "unknown MPI error"
	if C.MPI_Error_string(rc, &buf[0], &n) == C.MPI_SUCCESS && n > 0 {
		msg = C.GoStringN(&buf[0], n)
	}
	return &Error{Op: op, Code: int(rc), Msg: msg}
}

// ThreadLevel is an MPI thread-support level.
type ThreadLevel int

// Thread-support levels, as MPI orders them.
const (
	ThreadSingle     ThreadLevel = C.MPI_THREAD_SINGLE
	ThreadFunneled   ThreadLevel = C.MPI_THREAD_FUNNELED
	ThreadSerialized ThreadLevel = C.MPI_THREAD_SERIALIZED
	ThreadMultiple   ThreadLevel = C.MPI_THREAD_MULTIPLE
)

func (t ThreadLevel) String() string {
	switch t {
	case ThreadSingle:
		return "single"
	case ThreadFunneled:
		return "funneled"
	case ThreadSerialized:
		return "serialized"
	case ThreadMultiple:
		return "multiple"
	}
	return fmt.Sprintf("ThreadLevel(%d)", int(t))
}

// Init initialises MPI with MPI_THREAD_FUNNELED, locks the calling goroutine to
// its OS thread for good, and makes errors on MPI_COMM_WORLD return. It returns
// the thread level the library provides.
func Init() (ThreadLevel, error) {
	runtime.LockOSThread()
	var provided C.int
	if err := check("MPI_Init_thread", C.MPI_Init_thread(nil, nil, C.MPI_THREAD_FUNNELED, &provided)); err != nil {
		return 0, err
	}
	if err := check("MPI_Comm_set_errhandler", C.at_set_errors_return(C.at_comm_world())); err != nil {
		return 0, err
	}
	return ThreadLevel(provided), nil
}

// Initialized reports whether Init has been called.
func Initialized() bool {
	var flag C.int
	C.MPI_Initialized(&flag)
	return flag != 0
}

// Finalized reports whether Finalize has been called.
func Finalized() bool {
	var flag C.int
	C.MPI_Finalized(&flag)
	return flag != 0
}

// Finalize shuts MPI down. No MPI call may follow.
func Finalize() error { return check("MPI_Finalize", C.MPI_Finalize()) }

// Abort terminates every process of comm's job with the given exit code.
func Abort(comm *Comm, code int) error { return check("MPI_Abort", C.MPI_Abort(comm.c, C.int(code))) }

// LibraryVersion returns MPI_Get_library_version; it may be called before Init.
func LibraryVersion() string {
	var buf [C.MPI_MAX_LIBRARY_VERSION_STRING + 1]C.char
	var n C.int
	if C.MPI_Get_library_version(&buf[0], &n) != C.MPI_SUCCESS {
		return "unknown MPI library"
	}
	// Some libraries count the terminating NUL in n; the buffer is zeroed and
	// one byte longer than MPI may fill, so it is always terminated.
	return C.GoString(&buf[0])
}

// Wtime returns MPI_Wtime, seconds since an arbitrary point in the past.
func Wtime() float64 { return float64(C.MPI_Wtime()) }

// Clock returns the host's monotonic clock (CLOCK_MONOTONIC) in seconds.
// Every process on a host reads the same clock, so times taken on different
// ranks of one host compare directly; MPI_Wtime does not promise that (Open
// MPI counts it from each process's first call), so use Wtime for
// durations only.
func Clock() float64 { return float64(C.at_clock()) }

// WtimeIsGlobal reports the MPI_WTIME_IS_GLOBAL attribute of
// MPI_COMM_WORLD: whether every process's Wtime reads one clock.
func WtimeIsGlobal() bool {
	var v *C.int
	var flag C.int
	if C.MPI_Comm_get_attr(C.at_comm_world(), C.MPI_WTIME_IS_GLOBAL, unsafe.Pointer(&v), &flag) != C.MPI_SUCCESS || flag == 0 || v == nil {
		return false
	}
	return *v != 0
}

// ProcessorName returns MPI_Get_processor_name (the host name, usually).
func ProcessorName() (string, error) {
	var buf [C.MPI_MAX_PROCESSOR_NAME + 1]C.char
	var n C.int
	if err := check("MPI_Get_processor_name", C.MPI_Get_processor_name(&buf[0], &n)); err != nil {
		return "", err
	}
	return C.GoStringN(&buf[0], n), nil
}

// Comm is a communicator. Its rank and size are read once at creation.
type Comm struct {
	c          C.MPI_Comm
	rank, size int
}

func newComm(c C.MPI_Comm) (*Comm, error) {
	var r, s C.int
	if err := check("MPI_Comm_rank", C.MPI_Comm_rank(c, &r)); err != nil {
		return nil, err
	}
	if err := check("MPI_Comm_size", C.MPI_Comm_size(c, &s)); err != nil {
		return nil, err
	}
	return &Comm{c: c, rank: int(r), size: int(s)}, nil
}

// World returns MPI_COMM_WORLD. Call it after Init.
func World() (*Comm, error) { return newComm(C.at_comm_world()) }

// Handle is the communicator's MPI handle as an integer, the same for every
// package of the process that holds it: C code that receives an MPI_Comm
// finds its Comm by it.
func (c *Comm) Handle() uintptr { return uintptr(C.at_comm_handle(c.c)) }

// FromHandle is the communicator whose Handle is h, one that C code
// created (a program's, in the preload library).
func FromHandle(h uintptr) (*Comm, error) { return newComm(C.at_comm_of(C.uintptr_t(h))) }

// Rank is the calling process's rank in c.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of processes in c.
func (c *Comm) Size() int { return c.size }

// Split partitions c by color, ordering each part by key (then by rank in c).
// A process that passes Undefined as its color gets a nil Comm.
func (c *Comm) Split(color, key int) (*Comm, error) {
	var nc C.MPI_Comm
	if err := check("MPI_Comm_split", C.MPI_Comm_split(c.c, C.int(color), C.int(key), &nc)); err != nil {
		return nil, err
	}
	if nc == C.at_comm_null() {
		return nil, nil
	}
	return newComm(nc)
}

// Dup returns a new communicator with the same group as c and a separate
// message space.
func (c *Comm) Dup() (*Comm, error) {
	var nc C.MPI_Comm
	if err := check("MPI_Comm_dup", C.MPI_Comm_dup(c.c, &nc)); err != nil {
		return nil, err
	}
	return newComm(nc)
}

// Free releases a communicator made by Split or Dup. Freeing World is an error.
func (c *Comm) Free() error {
	if c.c == C.at_comm_world() {
		return fmt.Errorf("mpi: Free of MPI_COMM_WORLD")
	}
	return check("MPI_Comm_free", C.MPI_Comm_free(&c.c))
}

// Barrier blocks until every process of c has entered it.
func (c *Comm) Barrier() error { return check("MPI_Barrier", C.MPI_Barrier(c.c)) }

// Ibarrier starts a barrier on c: the request completes once every member
// has started it.
func (c *Comm) Ibarrier() (*Request, error) {
	q := &Request{r: C.at_request_null(), count: func(*C.MPI_Status) (Status, error) { return Status{}, nil }}
	if err := check("MPI_Ibarrier", C.MPI_Ibarrier(c.c, &q.r)); err != nil {
		return nil, err
	}
	return q, nil
}

func dtype[T Elem]() C.MPI_Datatype {
	var z T
	switch any(z).(type) {
	case float64:
		return C.at_double()
	case int64:
		return C.at_int64()
	default:
		return C.at_byte()
	}
}

func ptr[T Elem](buf []T) unsafe.Pointer {
	if len(buf) == 0 {
		return nil
	}
	return unsafe.Pointer(unsafe.SliceData(buf))
}

func same[T Elem](a, b []T) bool {
	return len(a) > 0 && len(b) > 0 && unsafe.SliceData(a) == unsafe.SliceData(b)
}

// Bcast sends buf from root to every process of c.
func Bcast[T Elem](c *Comm, buf []T, root int) error {
	return check("MPI_Bcast", C.MPI_Bcast(ptr(buf), C.int(len(buf)), dtype[T](), C.int(root), c.c))
}

// Reduce combines send element-wise over c with op into recv on root. recv is
// only read on root; send and recv may be the same slice (in place).
func Reduce[T Elem](c *Comm, send, recv []T, op Op, root int) error {
	if c.rank == root && len(recv) < len(send) {
		return fmt.Errorf("mpi: Reduce: recv holds %d elements, send %d", len(recv), len(send))
	}
	// MPI_IN_PLACE is substituted in C: Open MPI's is (void *)1, which in a
	// Go pointer would be fatal when the runtime moves the stack.
	in := C.int(0)
	if c.rank == root && same(send, recv) {
		in = 1
	}
	return check("MPI_Reduce", C.at_reduce_in(ptr(send), ptr(recv), C.int(len(send)), dtype[T](), op.c(), C.int(root), c.c, in))
}

// Allreduce combines send element-wise over c with op into recv on every
// process; send and recv may be the same slice (in place).
func Allreduce[T Elem](c *Comm, send, recv []T, op Op) error {
	if len(recv) < len(send) {
		return fmt.Errorf("mpi: Allreduce: recv holds %d elements, send %d", len(recv), len(send))
	}
	in := C.int(0) // MPI_IN_PLACE substituted in C (Reduce)
	if same(send, recv) {
		in = 1
	}
	return check("MPI_Allreduce", C.at_allreduce_in(ptr(send), ptr(recv), C.int(len(send)), dtype[T](), op.c(), c.c, in))
}

// AllreduceMaxLoc returns the largest value over c and the rank that holds it
// (the lowest such rank on ties).
func AllreduceMaxLoc(c *Comm, v float64) (float64, int, error) {
	type pair struct {
		v float64
		i C.int
	}
	in := pair{v, C.int(c.rank)}
	var out pair
	if err := check("MPI_Allreduce", C.MPI_Allreduce(unsafe.Pointer(&in), unsafe.Pointer(&out), 1, C.at_double_int(), C.at_op(3), c.c)); err != nil {
		return 0, 0, err
	}
	return out.v, int(out.i), nil
}

// Gather collects len(send) elements from each process into recv on root, in
// rank order; recv must hold Size()*len(send) elements on root.
func Gather[T Elem](c *Comm, send, recv []T, root int) error {
	if c.rank == root && len(recv) < c.size*len(send) {
		return fmt.Errorf("mpi: Gather: recv holds %d elements, needs %d", len(recv), c.size*len(send))
	}
	return check("MPI_Gather", C.MPI_Gather(ptr(send), C.int(len(send)), dtype[T](), ptr(recv), C.int(len(send)), dtype[T](), C.int(root), c.c))
}

// Allgather collects len(send) elements from each process into recv on every
// process, in rank order; recv must hold Size()*len(send) elements.
func Allgather[T Elem](c *Comm, send, recv []T) error {
	if len(recv) < c.size*len(send) {
		return fmt.Errorf("mpi: Allgather: recv holds %d elements, needs %d", len(recv), c.size*len(send))
	}
	return check("MPI_Allgather", C.MPI_Allgather(ptr(send), C.int(len(send)), dtype[T](), ptr(recv), C.int(len(send)), dtype[T](), c.c))
}

// Scatter sends the i-th len(recv)-element piece of send on root to rank i.
func Scatter[T Elem](c *Comm, send, recv []T, root int) error {
	if c.rank == root && len(send) < c.size*len(recv) {
		return fmt.Errorf("mpi: Scatter: send holds %d elements, needs %d", len(send), c.size*len(recv))
	}
	return check("MPI_Scatter", C.MPI_Scatter(ptr(send), C.int(len(recv)), dtype[T](), ptr(recv), C.int(len(recv)), dtype[T](), C.int(root), c.c))
}

// Status describes a received message.
type Status struct {
	Source, Tag int
	Count       int // elements received
}

func status[T Elem](st *C.MPI_Status) (Status, error) {
	var n C.int
	if err := check("MPI_Get_count", C.MPI_Get_count(st, dtype[T](), &n)); err != nil {
		return Status{}, err
	}
	return Status{Source: int(st.MPI_SOURCE), Tag: int(st.MPI_TAG), Count: int(n)}, nil
}

// Send sends buf to rank dest of c with tag (blocking).
func Send[T Elem](c *Comm, buf []T, dest, tag int) error {
	return check("MPI_Send", C.MPI_Send(ptr(buf), C.int(len(buf)), dtype[T](), C.int(dest), C.int(tag), c.c))
}

// Recv receives at most len(buf) elements from src (or AnySource) with tag (or
// AnyTag) into buf (blocking).
func Recv[T Elem](c *Comm, buf []T, src, tag int) (Status, error) {
	var st C.MPI_Status
	if err := check("MPI_Recv", C.MPI_Recv(ptr(buf), C.int(len(buf)), dtype[T](), C.int(src), C.int(tag), c.c, &st)); err != nil {
		return Status{}, err
	}
	return status[T](&st)
}

// Sendrecv sends sbuf to dest and receives into rbuf from src in one call.
func Sendrecv[T Elem](c *Comm, sbuf []T, dest, stag int, rbuf []T, src, rtag int) (Status, error) {
	var st C.MPI_Status
	if err := check("MPI_Sendrecv", C.MPI_Sendrecv(ptr(sbuf), C.int(len(sbuf)), dtype[T](), C.int(dest), C.int(stag),
		ptr(rbuf), C.int(len(rbuf)), dtype[T](), C.int(src), C.int(rtag), c.c, &st)); err != nil {
		return Status{}, err
	}
	return status[T](&st)
}

// Request is a pending non-blocking operation.
type Request struct {
	r     C.MPI_Request
	pin   runtime.Pinner
	count func(*C.MPI_Status) (Status, error)
	done  bool
}

func newRequest[T Elem](buf []T) *Request {
	q := &Request{r: C.at_request_null(), count: status[T]}
	if len(buf) > 0 {
		q.pin.Pin(unsafe.SliceData(buf))
	}
	return q
}

func (q *Request) finish(st *C.MPI_Status) (Status, error) {
	q.done = true
	q.pin.Unpin()
	if st == nil {
		return Status{}, nil
	}
	return q.count(st)
}

// Isend starts sending buf to dest; buf must not change until the request completes.
func Isend[T Elem](c *Comm, buf []T, dest, tag int) (*Request, error) {
	q := newRequest(buf)
	if err := check("MPI_Isend", C.MPI_Isend(ptr(buf), C.int(len(buf)), dtype[T](), C.int(dest), C.int(tag), c.c, &q.r)); err != nil {
		q.pin.Unpin()
		return nil, err
	}
	return q, nil
}

// Irecv starts receiving into buf from src with tag.
func Irecv[T Elem](c *Comm, buf []T, src, tag int) (*Request, error) {
	q := newRequest(buf)
	if err := check("MPI_Irecv", C.MPI_Irecv(ptr(buf), C.int(len(buf)), dtype[T](), C.int(src), C.int(tag), c.c, &q.r)); err != nil {
		q.pin.Unpin()
		return nil, err
	}
	return q, nil
}

// Wait blocks until q completes. Waiting on a completed request returns at once.
func Wait(q *Request) (Status, error) {
	if q.done {
		return Status{}, nil
	}
	var st C.MPI_Status
	if err := check("MPI_Wait", C.MPI_Wait(&q.r, &st)); err != nil {
		q.done = true
		q.pin.Unpin()
		return Status{}, err
	}
	return q.finish(&st)
}

// Test reports whether q has completed, without blocking.
func Test(q *Request) (bool, Status, error) {
	if q.done {
		return true, Status{}, nil
	}
	var flag C.int
	var st C.MPI_Status
	if err := check("MPI_Test", C.MPI_Test(&q.r, &flag, &st)); err != nil {
		q.done = true
		q.pin.Unpin()
		return false, Status{}, err
	}
	if flag == 0 {
		return false, Status{}, nil
	}
	s, err := q.finish(&st)
	return true, s, err
}

// Waitall blocks until every request in qs has completed. Nil entries and
// completed requests are skipped.
func Waitall(qs []*Request) error {
	rs := make([]C.MPI_Request, 0, len(qs))
	live := make([]*Request, 0, len(qs))
	for _, q := range qs {
		if q != nil && !q.done {
			rs = append(rs, q.r)
			live = append(live, q)
		}
	}
	if len(rs) == 0 {
		return nil
	}
	// MPICH's MPI_STATUSES_IGNORE is (MPI_Status *)1: never in a Go pointer.
	err := check("MPI_Waitall", C.at_waitall_ignore(C.int(len(rs)), &rs[0]))
	for i, q := range live {
		q.r = rs[i]
		q.finish(nil)
	}
	return err
}
