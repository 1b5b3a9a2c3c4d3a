package selective

import (
	"math"
	"slices"

	"github.com/approxtune/approxtune/internal/mpi"
)

// Request is a pending non-blocking operation started through the engine.
// A workload's request (Isend, Irecv) is completed by Wait; a program's
// (StartSend, StartRecv: the preload library) by Complete, because the
// program completes its own MPI request.
type Request struct {
	c      *Comm
	user   *mpi.Request // a workload's message; nil for a program's
	inner  *mpi.Request // a send's record, which travels ahead of its message
	st     *kstat       // a receive's: nil until it completes (its sender may be any)
	send   bool
	rec    []float64
	done   bool
	direct bool   // not through the engine (it was off)
	bytes  int    // the message's size (a receive's: its buffer's until it takes the record)
	peer   int    // the partner's rank in c (a wildcard receive: mpi.AnySource until it completes)
	tag    int    // the message's tag (mpi.AnyTag likewise)
	seq    int64  // a receive's number from peer with tag, a send's to peer with tag (the critical-path log)
	rdv    bool   // a send that waits for its receive in a full run (rendezvous)
	op     Op     // a receive's operation, for its key once its sender is known
	gen    uint64 // the run it started in

	cancel bool // the program asked MPI to cancel it (Cancelling)
	early  bool // a receive whose record a later receive's completion took (takeInOrder)
	fresh  bool // the record early took is of this run

	emptied int // a received message's size in bytes where its sender skipped it and sent it empty (always over EagerLimit); 0 otherwise

	elided   bool    // left out: no MPI call at all (elide.go)
	fallback float64 // a left-out receive's estimate where the receiver has none of its own
}

// EagerLimit is the largest message (bytes) a send completes without its
// receive posted: Open MPI's eager limit on one node (btl_vader_eager_limit).
// Larger sends wait for their receiver, and the simulation at End makes them
// (sim.go). Skipping a message or collective within it saves next to
// nothing: its record costs as much as it does.
const EagerLimit = 4096

// StartSend intercepts the start of a send of bytes to dest with tag, as
// op (OpSend for a blocking send, OpIsend for a non-blocking one), which
// start performs: start(true) sends the message, start(false) the empty
// message that stands for a skipped one, so that the receive still
// matches. A record travels ahead of it on the engine's communicator, so
// every receive of the message, in whichever form, learns the sender's
// path and decision. A message that may carry what the program computes
// with (integers, indices) is passed with skippable false: the engine then
// always sends it. The caller completes its request and then the engine's
// (Complete). It panics with Failure when MPI fails.
func (c *Comm) StartSend(op Op, bytes, dest, tag int, skippable bool, start func(full bool) error) *Request {
	e := c.e
	if !e.on {
		must(start(true))
		return &Request{c: c, direct: true, send: true}
	}
	e.gap()
	n := (bytes + 7) / 8
	st := e.stat(c.p2pKey(op, n, dest))
	exec := !skippable || e.execMessages || !e.skeleton && !e.skippable(st)
	r := &Request{c: c, st: st, send: true, rec: make([]float64, e.recLen), bytes: bytes, peer: dest, tag: tag,
		rdv: bytes > EagerLimit, gen: e.gen}
	e.fill(r.rec, c.shape, exec, e.mean(st, 0))
	r.rec[recBytes] = float64(bytes)
	r.seq = c.logP2P(evSend, dest, tag, 0)
	c.noteSend(n, dest, exec, st)
	var err error
	r.inner, err = mpi.Isend(c.in, r.rec, dest, tag)
	must(err)
	if !exec {
		must(start(false))
		if e.skeleton {
			e.skeletal(st, 0) // the receiver is charged the transfer
		} else {
			e.skippedFor(st, 0)
		}
		e.resume()
		return r
	}
	// The send's time is its start; its wait is for the receiver (the
	// replay's evAck), and the receive carries the transfer.
	c0 := e.smallStart(bytes)
	t0 := mpi.Clock()
	must(start(true))
	t1 := mpi.Clock()
	e.executedFor(st, min(t1-t0, e.cpuSince(c0)), t0, t1)
	e.resumeAt(t1)
	return r
}

// StartRecv intercepts the start of a receive of at most bytes from src
// with tag, as op (OpRecv or OpIrecv), which start performs. src may be
// mpi.AnySource and tag mpi.AnyTag. The record is taken when the receive
// completes, from the source and with the tag of the message it got: MPI
// matches a wildcard receive posted before a specific one to the first
// message, so a record posted at the start could take another message's
// record and wait for one the sender has yet to send. The caller
// completes its request and then the engine's (Complete). It panics with
// Failure when MPI fails.
func (c *Comm) StartRecv(op Op, bytes, src, tag int, start func() error) *Request {
	e := c.e
	if !e.on {
		must(start())
		return &Request{c: c, direct: true}
	}
	e.gap()
	r := &Request{c: c, rec: make([]float64, e.recLen), bytes: bytes, peer: src, tag: tag, op: op, gen: e.gen}
	if src != mpi.AnySource && tag != mpi.AnyTag {
		// For the simulation of large sends: the receive is posted now.
		c.logPost(src, tag)
	}
	must(start())
	c.open = append(c.open, r)
	e.resume()
	return r
}

// Cancelling tells r that the program asks MPI to cancel it (MPI_Cancel):
// a receive so asked may match no message, so no record is taken for it
// before its own completion says whether it got one.
func (r *Request) Cancelling() { r.cancel = true }

// closeOpen forgets r among its communicator's open receives.
func (r *Request) closeOpen() {
	c := r.c
	if i := slices.Index(c.open, r); i >= 0 {
		c.open = slices.Delete(c.open, i, i+1)
	}
}

// takeInOrder takes r's record, as take, after those of the receives
// posted before it that matched earlier messages of its source and tag:
// records arrive in the order their messages were sent, which is the order
// MPI matched the messages to receives (in posting order), not the order
// the program completes them. A program that waits for its second receive
// of a source and tag first had given it the first message's record: the
// first's size and skip, so MPI_Get_count said the second message's buffer
// held the first's 8192 doubles and the first none. Every receive posted
// before r that can match r's message has matched one by now (MPI gives a
// message to the earliest such receive); the records of those of r's
// source and tag are taken first and kept for their completions. A
// wildcard receive among them may have matched either a message of r's
// source and tag or another: from there on the records are taken in
// completion order, which is the best there is to go on.
func (r *Request) takeInOrder() bool {
	if r.early {
		return r.fresh
	}
	for _, p := range r.c.open {
		if p == r {
			break
		}
		if p.done || p.early || p.gen != r.gen || p.cancel {
			// A receive being cancelled may match no message: given a
			// record, it took a later receive's, which then waited for
			// one never sent.
			continue
		}
		if (p.peer == mpi.AnySource || p.peer == r.peer) && (p.tag == mpi.AnyTag || p.tag == r.tag) {
			if p.peer != r.peer || p.tag != r.tag {
				break // a wildcard: which message it matched is unknown
			}
			p.early = true
			p.fresh = p.take()
		}
	}
	return r.take()
}

// take receives the record of the message the receive got from r.peer
// with r.tag, and logs it if it was sent in this run. It reports whether
// it was. The receive's kernel is the message's size, which the record
// says: a program may receive into a buffer larger than the message (an
// upper bound, read with MPI_Get_count), and keyed by its buffer, messages
// of every size shared one kernel, unlike their sends.
func (r *Request) take() bool {
	c, e := r.c, r.c.e
	_, err := mpi.Recv(c.in, r.rec, r.peer, r.tag)
	must(err)
	r.bytes = int(r.rec[recBytes]) // every record a receive takes is a send's (StartSend)
	r.st = e.stat(c.p2pKey(r.op, (r.bytes+7)/8, r.peer))
	if uint64(r.rec[recGen]) != e.gen {
		return false
	}
	r.seq = c.nextRecv(r.peer, r.tag)
	return true
}

// Isend starts sending buf to dest. The sender decides whether it is skipped.
func (c *Comm) Isend(buf []float64, dest, tag int) *Request {
	if est, ok := c.leftOut(len(buf), c.c.Rank(), dest); ok {
		return c.elideSend(OpIsend, len(buf), dest, tag, est)
	}
	var q *mpi.Request
	r := c.StartSend(OpIsend, 8*len(buf), dest, tag, true, func(full bool) (err error) {
		b := buf
		if !full {
			b = buf[:0]
		}
		q, err = mpi.Isend(c.c, b, dest, tag)
		return err
	})
	r.user = q
	return r
}

// Irecv starts receiving into buf from src (a rank, not AnySource).
func (c *Comm) Irecv(buf []float64, src, tag int) *Request {
	if est, ok := c.leftOut(len(buf), src, c.c.Rank()); ok {
		return c.elideRecv(OpIrecv, len(buf), src, tag, est)
	}
	var q *mpi.Request
	r := c.StartRecv(OpIrecv, 8*len(buf), src, tag, func() (err error) {
		q, err = mpi.Irecv(c.c, buf, src, tag)
		return err
	})
	r.user = q
	return r
}

// Send reports whether r is a send.
func (r *Request) Send() bool { return r.send }

// Wait completes a workload's request r (Isend, Irecv).
func (r *Request) Wait() {
	if r.done {
		return
	}
	if r.elided {
		r.completeElided()
		return
	}
	r.Complete(func() (int, int, error) {
		st, err := mpi.Wait(r.user)
		return st.Source, st.Tag, err
	})
}

// Complete completes r: wait completes the caller's own request (blocking,
// or at once after a test found it complete) and returns the message's
// source and tag, then the engine takes the record that travelled with it.
// A receive's wait is the kernel's time (less any wait for a late sender),
// and the receive takes the sender's path if that is longer. A send's wait
// is not: a large send waits for its receive to be posted, which the
// simulation at End makes it do (in a selective run the receiver may be far
// ahead of or behind where the full run has it).
func (r *Request) Complete(wait func() (source, tag int, err error)) {
	if r.done {
		return
	}
	r.done = true
	e := r.c.e
	if !r.send && !r.direct {
		defer r.closeOpen()
	}
	if r.direct || !e.on {
		_, _, err := wait()
		must(err)
		if r.inner != nil { // a send's record
			_, err = mpi.Wait(r.inner)
			must(err)
		}
		// A receive started in a run and completed after it leaves its
		// record unread: its sender may have sent none.
		return
	}
	e.gap()
	c0 := -1.0
	if !r.send {
		// A program's receive may be larger than its message, whose size,
		// which decides whether the CPU time bounds it, only the record
		// says (below): its CPU clock is read whatever the buffer's size.
		// Decided by the buffer, a small message in an upper-bound buffer
		// had been timed by the wall clock alone, under a kernel whose
		// other samples had the CPU bound. A workload's receives (Irecv:
		// r.user) are exactly their messages.
		size := r.bytes
		if r.user == nil {
			size = 0
		}
		c0 = e.smallStart(size)
	}
	t0 := mpi.Clock()
	source, tag, err := wait()
	must(err)
	t1 := mpi.Clock()
	cpu := e.cpuSince(c0) // not the record's receive (take) below
	if r.send {
		_, err = mpi.Wait(r.inner)
		must(err)
		if r.rdv && r.gen == e.gen {
			r.c.logP2P(evAck, r.peer, r.tag, r.seq)
		}
		e.resume()
		return
	}
	if source < 0 { // cancelled: no message, no record
		e.resume()
		return
	}
	if r.peer == mpi.AnySource || r.tag == mpi.AnyTag {
		r.c.logPost(source, tag)
	}
	r.peer, r.tag = source, tag
	taken := r.takeInOrder()
	if r.bytes > EagerLimit {
		cpu = math.Inf(1) // a large message: its wait is not the CPU's (smallStart)
	}
	if r.rec[recExec] == 0 {
		r.emptied = int(r.rec[recBytes])
	}
	if !taken { // a message of an earlier run: on no path of this one
		e.resume()
		return
	}
	// A receive ends when both sides are there plus the transfer: take the
	// longer path first, then add the transfer time. The wait itself also
	// holds the time spent waiting for a late sender, which is neither the
	// kernel's time nor, after max, on the path again; where the clocks
	// agree, the sender's send time separates it out.
	r.c.logP2P(evRecv, r.peer, r.tag, r.seq)
	e.absorb(r.rec, r.c.shape)
	exec := r.rec[recExec] != 0
	r.c.noteRecv((r.bytes+7)/8, r.peer, exec, r.st)
	if !exec {
		if e.skeleton {
			e.skeletal(r.st, messageCost(r.bytes))
		} else {
			e.skippedFor(r.st, r.rec[recMean])
		}
		e.resume()
		return
	}
	transfer := t1 - t0
	if e.sameClock {
		transfer = t1 - math.Max(t0, r.rec[recClock])
	}
	e.executedFor(r.st, min(math.Max(transfer, 0), cpu), t0, t1)
	e.resume()
}

// Emptied reports, of a receive Complete completed, the size in bytes of
// the message it matched where the sender skipped that message and sent an
// empty one in its place (StartSend): the size a program's MPI_Get_count
// would have said, had the message travelled. ok is false for a message
// that travelled whole, a send and a receive completed with the engine off.
func (r *Request) Emptied() (bytes int, ok bool) {
	if r.emptied == 0 {
		return 0, false
	}
	return r.emptied, true
}

// Waitall completes every request in rs (nil entries are ignored).
func Waitall(rs []*Request) {
	for _, r := range rs {
		if r != nil {
			r.Wait()
		}
	}
}
