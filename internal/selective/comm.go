package selective

import (
	"fmt"
	"math"
	"slices"

	"github.com/approxtune/approxtune/internal/mpi"
)

// Failure is the panic value with which Comm methods report an MPI error. The
// agent's runner recovers it at the run boundary and turns it back into an
// error, so workload code reads like the algorithm it implements instead of
// checking an error after every message.
type Failure struct{ Err error }

// Error is the MPI error's message.
func (f Failure) Error() string { return f.Err.Error() }

// Unwrap is the MPI error, for errors.Is and errors.As.
func (f Failure) Unwrap() error { return f.Err }

func must(err error) {
	if err != nil {
		panic(Failure{err})
	}
}

// Comm is a communicator as workloads see it. Every call goes through the
// engine, which executes it, or skips it (only when every process of the
// communicator agrees; for point-to-point, when the sender decides) and
// charges its predicted time. The engine's own messages travel on a duplicate
// communicator, so the workload's messages are never changed or mismatched.
// Create communicators only through Split/Dup (or Engine.NewGrid), so the
// engine knows each one's shape. Methods panic with Failure on MPI errors.
type Comm struct {
	e       *Engine
	c       *mpi.Comm
	in      *mpi.Comm // the engine's messages
	shape   Shape
	ranks   []int64 // world rank of each member
	scratch []float64
	id      commID // the communicator's name in the critical-path log
	exact   bool   // every receive is as long as its message (ExactReceives)

	// State of this run (gen): collectives so far; records received per
	// (source, tag) in posting order, as MPI matches them; this process's
	// executed-kernel count at its last records here; whether at the last
	// records every member had executed nothing since its previous ones here.
	gen      uint64
	colls    int64
	recvSeq  map[[2]int64]int64
	sendSeq  map[[2]int64]int64 // records sent per (destination, tag): the log numbers them
	postSeq  map[[2]int64]int64 // receives posted per (source, tag), for the simulation's large sends
	execMark int64
	quiet    bool
	promised map[uint64]int64 // collectives' calls left that run without records on a member's promise
	timed    map[uint64]int64 // never-skipped collectives executed here after records, per key

	// open are the receives started through the engine (StartRecv: a
	// program's, and a workload's Irecv) and not yet completed, in
	// posting order (Request.takeInOrder).
	open []*Request
}

// refresh is how often (in collectives on a communicator) a quiet
// communicator exchanges records on a settled collective anyway: a Sharer's
// statistics keep travelling along the grid's axes, and a member that starts
// executing kernels again is heard of.
const refresh = 8

// count restarts the communicator's state at a new run.
func (c *Comm) count() {
	if c.gen != c.e.gen {
		c.gen, c.colls, c.execMark, c.quiet = c.e.gen, 0, 0, false
		clear(c.promised)
		clear(c.timed)
		clear(c.recvSeq)
		clear(c.sendSeq)
		clear(c.postSeq)
	}
}

// number returns the next number of (partner, tag) in seqs, a run's count
// of the records received from or sent to each partner with each tag.
func (c *Comm) number(seqs *map[[2]int64]int64, partner, tag int) int64 {
	c.count()
	if *seqs == nil {
		*seqs = map[[2]int64]int64{}
	}
	k := [2]int64{c.ranks[partner], int64(tag)}
	n := (*seqs)[k]
	(*seqs)[k] = n + 1
	return n
}

// nextRecv numbers a record about to be received from partner with tag.
func (c *Comm) nextRecv(partner, tag int) int64 { return c.number(&c.recvSeq, partner, tag) }

// logPost logs a receive from partner with tag posted (evPost), numbered
// among the receives posted from partner with tag in this run.
func (c *Comm) logPost(partner, tag int) {
	c.logP2P(evPost, partner, tag, c.number(&c.postSeq, partner, tag))
}

// logP2P logs a record sent to (evSend) or received from (evRecv, with its
// number) partner, a receive posted (evPost, with its number) or a send
// waiting for its receive (evAck, with the send's number). In a selective
// run it numbers an evSend among the records sent to partner with tag in this
// run (posting order, as MPI matches them) and returns the number, else 0.
func (c *Comm) logP2P(kind, partner, tag int, seq int64) int64 {
	if kind == evSend && c.e.skip {
		seq = c.number(&c.sendSeq, partner, tag)
	}
	c.e.logEvent(event{kind: kind, comm: c.id, peer: c.ranks[partner], tag: int64(tag), seq: seq})
	return seq
}

// Rank is the calling process's rank in c.
func (c *Comm) Rank() int { return c.c.Rank() }

// Size is the number of processes in c.
func (c *Comm) Size() int { return c.c.Size() }

// Shape is the communicator's shape (docs/design.md §2).
func (c *Comm) Shape() Shape { return c.shape }

// Raw returns the underlying MPI communicator, for code that must not be
// intercepted (verification, the engine's own use).
func (c *Comm) Raw() *mpi.Comm { return c.c }

func (e *Engine) wrap(c *mpi.Comm) (*Comm, error) {
	if c == nil {
		return nil, nil
	}
	ranks := make([]int64, c.Size())
	if err := mpi.Allgather(c, []int64{int64(e.worldRank)}, ranks); err != nil {
		return nil, fmt.Errorf("communicator shape: %w", err)
	}
	// An identifier no member has given out: two communicators that share
	// a member never share one.
	id := []int64{e.nextComm}
	if err := mpi.Allreduce(c, id, id, mpi.Max); err != nil {
		return nil, fmt.Errorf("communicator identifier: %w", err)
	}
	e.nextComm = id[0] + 1
	in, err := c.Dup()
	if err != nil {
		return nil, fmt.Errorf("engine communicator: %w", err)
	}
	return &Comm{e: e, c: c, in: in, shape: shapeOf(ranks, e.load), ranks: ranks, id: commID{id[0], slices.Min(ranks)}}, nil
}

// Split partitions c by color, ordering by key; mpi.Undefined as color gives nil.
func (c *Comm) Split(color, key int) *Comm {
	nc, err := c.c.Split(color, key)
	must(err)
	w, err := c.e.wrap(nc)
	must(err)
	return w
}

// Dup returns a communicator with the same group and its own message space.
func (c *Comm) Dup() *Comm {
	nc, err := c.c.Dup()
	must(err)
	w, err := c.e.wrap(nc)
	must(err)
	return w
}

// Adopt makes c, a communicator its members created outside the engine
// (a program's MPI_Comm_create, say), known to the engine: collective over
// c.
func (e *Engine) Adopt(c *mpi.Comm) *Comm {
	w, err := e.wrap(c)
	must(err)
	return w
}

// Release frees the engine's own resources of the communicator and leaves
// its MPI communicator to its owner (a program that frees it itself).
func (c *Comm) Release() { must(c.in.Free()) }

// Free releases the communicator.
func (c *Comm) Free() {
	must(c.in.Free())
	must(c.c.Free())
}

// Shape identifies a communicator's layout independent of its position: its
// size and a hash of its members' world ranks relative to the first and, on
// cores its grid's processes take turns at, of how crowded they are
// (shapeOf). The row communicators of a grid share a shape, so they share
// kernel statistics.
type Shape struct {
	Size int
	Hash uint32
}

// String is the shape as "size/hash".
func (s Shape) String() string { return fmt.Sprintf("%d/%08x", s.Size, s.Hash) }

// shapeOf is the shape of a communicator of the given world ranks, made
// while load processes take turns at a CPU (placement.load): a message
// between processes that wait for a core takes longer than one between
// processes that have one each, so the two are different kernels. Load 1
// leaves the shape as the ranks alone give it.
func shapeOf(ranks []int64, load int) Shape {
	h := uint32(2166136261) // FNV-1a over the offsets, then the load
	mix := func(v uint32) {
		for i := 0; i < 4; i++ {
			h ^= v & 0xff
			h *= 16777619
			v >>= 8
		}
	}
	for _, r := range ranks {
		mix(uint32(r - ranks[0]))
	}
	if load > 1 {
		mix(uint32(load) | 1<<31)
	}
	return Shape{Size: len(ranks), Hash: h}
}

// collective intercepts a collective of n elements per process: the members
// exchange records (path, decision, shares), take the longest path, and run
// the collective unless every member can skip it. Once every member has
// skipped it, it is settled on this communicator; while the communicator is
// quiet (at its last records no member had executed a kernel since its
// previous ones) its members skip settled collectives without exchanging
// records, except every refresh-th collective, and End recovers the path
// from the log. The records are synchronisations: on a node with more ranks
// than cores, leaving them out while kernels still execute would let ranks
// that take turns on a core in a full run compute at once, and the kernels
// would be timed in a context the full run never has.
func (c *Comm) collective(op Op, n int, skippable bool, do func() error) {
	c.collectiveOf(op, n, skippable, false, do)
}

// collectiveOf is collective, and with varied a collective whose members
// may each move a different amount (CollectiveV): n is this member's
// share, and its key may not be the others'.
func (c *Comm) collectiveOf(op Op, n int, skippable, varied bool, do func() error) {
	e := c.e
	if !e.on {
		must(do())
		return
	}
	skippable = skippable && !e.execMessages
	e.gap()
	c.count()
	seq := c.colls
	c.colls++
	size := c.c.Size()
	st := e.stat(Key{Op: op, M: int32(n), Shape: c.shape})
	sk := settleKey{c.id, st.hash}
	coll := event{kind: evColl, comm: c.id, size: int64(size), seq: seq}
	promised := !varied && e.skip && c.promised[st.hash] > 0
	if promised {
		c.promised[st.hash]--
	}
	// Nothing to decide either for a collective never skipped (a program's
	// small or integer ones) once its cost is known: it runs without
	// records (but every refresh-th, so a Sharer's statistics still travel),
	// like a promised one. Every member must take this branch alike, so it
	// counts the ones timed on this communicator in this run, which every
	// member executed, not the key's samples: a rank in more communicators
	// of the same shape has more of those (each rank in two pair
	// communicators of a chain: the middle ranks ran without records where
	// the ends waited for them, and every selective run hung).
	if promised || (!skippable && !varied && e.skip && c.timed[st.hash] >= e.nmin && seq%refresh != 0) {
		e.logEvent(coll)
		t0 := mpi.Clock()
		must(do())
		t1 := mpi.Clock()
		ev := &e.plog[len(e.plog)-1]
		ev.in, ev.out = t0, t1
		e.promisedFor(st, t0, t1)
		e.resumeAt(t1)
		return
	}
	if skippable && e.skip && c.quiet && e.tr.settled[sk] && seq%refresh != 0 {
		e.logEvent(coll)
		e.settledSkips++
		e.skippedFor(st, 0)
		e.resume()
		return
	}
	want := !skippable || !e.skippable(st)
	if e.skeleton {
		want = !skippable
	}
	e.fill(e.rec, c.shape, want, 0)
	if e.executed > c.execMark {
		e.rec[recBusy] = 1
	}
	c.execMark = e.executed
	e.rec[recPromise] = 0
	if !varied {
		e.rec[recPromise] = e.promise(st)
	}
	e.logEvent(coll)
	if len(c.scratch) < size*e.recLen {
		c.scratch = make([]float64, size*e.recLen)
	}
	all := c.scratch[:size*e.recLen]
	must(mpi.Allgather(c.in, e.rec, all))
	exchanged := mpi.Clock()
	lastIn := 0.0 // when the last member reached the collective
	exec, busy := false, false
	promise := 0.0
	for r := 0; r < size; r++ {
		rec := all[r*e.recLen : (r+1)*e.recLen]
		lastIn = math.Max(lastIn, rec[recClock])
		promise = math.Max(promise, rec[recPromise])
		exec = exec || rec[recExec] != 0
		busy = busy || rec[recBusy] != 0
		if r != c.c.Rank() {
			e.absorb(rec, c.shape)
		}
	}
	// The first records of a run (seq 0: a run's first collective always
	// exchanges them) cannot tell: a member may not have reached its first
	// kernel yet.
	c.quiet = seq > 0 && !busy && !exec
	if !exec && e.skeleton {
		e.skeletal(st, collectiveCost(op, n, size))
		return
	}
	if !exec {
		if e.skip && !e.counts { // path counts travel with the records
			e.tr.settled[sk] = true
		}
		e.skippedFor(st, 0)
		e.resume()
		return
	}
	delete(e.tr.settled, sk)
	if promise >= 1 && !varied {
		if c.promised == nil {
			c.promised = map[uint64]int64{}
		}
		c.promised[st.hash] = int64(promise)
	}
	t0 := mpi.Clock()
	must(do())
	t1 := mpi.Clock()
	e.executedFor(st, collectiveTime(n, t1-t0, exchanged-lastIn), t0, t1)
	e.resumeAt(t1)
	if !skippable && !varied {
		if c.timed == nil {
			c.timed = map[uint64]int64{}
		}
		c.timed[st.hash]++
	}
}

// collectiveTime is what an executed collective of n elements per process
// costs this member on the path, given its timed run (ran) and the time from
// the last member's arrival to this member's end of the records exchange
// (exchange). A collective whose messages fit the eager limit is a latency:
// in a full run the last member to arrive finds the others' messages and
// leaves at once, and only the early members wait to get a core back. The
// records exchange is such a collective, over the same members arriving as
// the run brought them, so its time from the last arrival is the cost. The
// run that follows it is timed in a context the full run never has: the
// exchange has just made the members leave together, so on shared cores the
// run holds a member's wait for a core, which the full run does not pay. A
// larger collective is a transfer that needs every member on a core: its
// timed run is its cost.
func collectiveTime(n int, ran, exchange float64) float64 {
	if 8*n <= EagerLimit {
		return math.Max(exchange, 0)
	}
	return ran
}

// Collective intercepts a collective that moves bytes per process (the key's
// size, in float64 words rounded up) and that do performs: the engine
// executes it or, when every member agrees, skips it. A collective that may
// carry what the program computes with (integers, indices) is passed with
// skippable false: the engine then always executes it. The preload library
// calls it for the user's collectives; workloads call the typed methods
// below. It panics with Failure when MPI fails.
func (c *Comm) Collective(op Op, bytes int, skippable bool, do func() error) {
	c.collective(op, (bytes+7)/8, skippable, do)
}

// CollectiveV intercepts a collective whose members may each move a
// different amount (MPI_Allgatherv, MPI_Alltoallv, MPI_Gatherv,
// MPI_Scatterv): bytes is what this member moves (the whole of what it
// sends to every member, in MPI_Alltoallv), by which an executed call is
// charged its timed run or, within the eager limit, a latency
// (collectiveTime). It always executes, and the members exchange records
// at every call, so the path goes through it as through any collective:
// forwarded unseen, it had let a rank's path skip the wait for another's
// skipped kernels. A member's key is its own share,
// which another member's may differ from, so it takes none of the branches
// that follow a key's history (promises, settled skips, the records left
// out for a collective never skipped once its cost is known), which the
// members must take alike. It panics with Failure when MPI fails.
func (c *Comm) CollectiveV(op Op, bytes int, do func() error) {
	c.collectiveOf(op, (bytes+7)/8, false, true, do)
}

// Barrier synchronizes the communicator (never skipped).
func (c *Comm) Barrier() {
	if !c.e.on {
		must(c.c.Barrier())
		return
	}
	c.collective(OpBarrier, 0, true, c.c.Barrier)
}

// Bcast broadcasts buf from root.
func (c *Comm) Bcast(buf []float64, root int) {
	c.collective(OpBcast, len(buf), true, func() error { return mpi.Bcast(c.c, buf, root) })
}

// Reduce combines send into recv on root with op.
func (c *Comm) Reduce(send, recv []float64, op mpi.Op, root int) {
	c.collective(OpReduce, len(send), true, func() error { return mpi.Reduce(c.c, send, recv, op, root) })
}

// Allreduce combines send into recv on every process.
func (c *Comm) Allreduce(send, recv []float64, op mpi.Op) {
	c.collective(OpAllreduce, len(send), true, func() error { return mpi.Allreduce(c.c, send, recv, op) })
}

// Gather collects every process's send into recv on root, in rank order.
func (c *Comm) Gather(send, recv []float64, root int) {
	c.collective(OpGather, len(send), true, func() error { return mpi.Gather(c.c, send, recv, root) })
}

// Allgather collects every process's send into recv everywhere, in rank order.
func (c *Comm) Allgather(send, recv []float64) {
	c.collective(OpAllgather, len(send), true, func() error { return mpi.Allgather(c.c, send, recv) })
}

// Scatter sends the i-th len(recv)-element piece of send on root to rank i.
func (c *Comm) Scatter(send, recv []float64, root int) {
	c.collective(OpScatter, len(recv), true, func() error { return mpi.Scatter(c.c, send, recv, root) })
}

func (c *Comm) p2pKey(op Op, n, partner int) Key {
	return Key{Op: op, M: int32(n), Shape: c.shape, Partner: int32(c.ranks[partner] - c.ranks[c.c.Rank()])}
}

// exchange swaps records with a partner for a blocking point-to-point call:
// both sides leave with the longer path. It returns the partner's record.
func (c *Comm) exchange(partner, tag int, exec bool, mean float64) []float64 {
	e := c.e
	e.fill(e.rec, c.shape, exec, mean)
	c.logP2P(evSend, partner, tag, 0)
	seq := c.nextRecv(partner, tag)
	c.logPost(partner, tag) // a large send the partner waits on may be matched by this record's receive
	_, err := mpi.Sendrecv(c.in, e.rec, partner, tag, e.peer, partner, tag)
	must(err)
	c.logP2P(evRecv, partner, tag, seq)
	e.absorb(e.peer, c.shape)
	return e.peer
}

// Send sends buf to dest (blocking). The sender decides whether it is skipped;
// a skipped message goes out empty, so the receive still matches. It pairs
// with the partner's Recv, not Irecv: the two exchange records both ways.
func (c *Comm) Send(buf []float64, dest, tag int) {
	e := c.e
	if !e.on {
		must(mpi.Send(c.c, buf, dest, tag))
		return
	}
	if est, ok := c.leftOut(len(buf), c.c.Rank(), dest); ok {
		c.elideSend(OpSend, len(buf), dest, tag, est).Wait()
		return
	}
	e.gap()
	st := e.stat(c.p2pKey(OpSend, len(buf), dest))
	exec := e.execMessages || !e.skeleton && !e.skippable(st)
	c.exchange(dest, tag, exec, e.mean(st, 0))
	c.noteSend(len(buf), dest, exec, st)
	if !exec {
		must(mpi.Send(c.c, buf[:0], dest, tag))
		if e.skeleton {
			e.skeletal(st, 0) // the receiver is charged the transfer
		} else {
			e.skippedFor(st, 0)
		}
		e.resume()
		return
	}
	c0 := e.smallStart(8 * len(buf))
	t0 := mpi.Clock()
	must(mpi.Send(c.c, buf, dest, tag))
	t1 := mpi.Clock()
	e.executedFor(st, min(t1-t0, e.cpuSince(c0)), t0, t1)
	e.resumeAt(t1)
}

// Recv receives into buf from src (blocking); src must be a rank, not AnySource.
// It pairs with the partner's Send, not Isend (see Send).
func (c *Comm) Recv(buf []float64, src, tag int) {
	e := c.e
	if !e.on {
		_, err := mpi.Recv(c.c, buf, src, tag)
		must(err)
		return
	}
	if est, ok := c.leftOut(len(buf), src, c.c.Rank()); ok {
		c.elideRecv(OpRecv, len(buf), src, tag, est).Wait()
		return
	}
	e.gap()
	st := e.stat(c.p2pKey(OpRecv, len(buf), src))
	peer := c.exchange(src, tag, true, e.mean(st, 0))
	exec, sent := peer[recExec] != 0, peer[recMean]
	c.noteRecv(len(buf), src, exec, st)
	c0 := -1.0 // a skipped message's time is its sender's mean: no clock to read
	if exec {
		c0 = e.smallStart(8 * len(buf))
	}
	t0 := mpi.Clock()
	_, err := mpi.Recv(c.c, buf, src, tag)
	must(err)
	t1 := mpi.Clock()
	cpu := e.cpuSince(c0)
	if !exec {
		if e.skeleton {
			e.skeletal(st, messageCost(8*len(buf)))
		} else {
			e.skippedFor(st, sent)
		}
		e.resume()
		return
	}
	e.executedFor(st, min(t1-t0, cpu), t0, t1)
	e.resumeAt(t1)
}
