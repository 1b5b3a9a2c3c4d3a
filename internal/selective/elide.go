package selective

// Left-out messages. In a selective run that skips a point-to-point message,
// the sender still sends an empty message and a record, the receiver still
// waits for both, and the two processes meet as they would with the data.
// On a b=32 Cholesky that is tens of thousands of meetings a run, and once
// every kernel is known they are most of what a selective run costs.
//
// A message whose every instance in earlier runs of the track was skipped,
// on both sides, with an estimate to charge on both sides, is left out
// altogether: neither side calls MPI, each charges its estimate and logs the
// meeting, and the replay at End puts the sender's path on the receiver's
// exactly as the record would have (replay.go). Both sides must decide the
// same without a word, so the decision is a set that rank 0 computes from
// every process's report at End and broadcasts with the paths: the same on
// every process for the whole next run. A message is named in it by what
// both of its sides know: the communicator's shape, the sender's world rank
// relative to the receiver's, and its length. The receiver knows the length
// only from its buffer, so only communicators whose receives are exactly as
// long as their messages take part (Comm.ExactReceives), and only a
// policy.Sharer that carries its statistics (eager), whose decisions to skip
// are agreed across the grid and kept.

// pairKey names a point-to-point message as both of its sides know it.
type pairKey struct {
	sh   Shape
	d, m int64 // the receiver's world rank minus the sender's; the message's length (float64)
}

// What a process saw of a pairKey's messages in a run (pairNote.bits).
const (
	pairSendExec = 1 << iota // a send executed
	pairSendSkip             // a send skipped, with an estimate to charge
	pairRecvExec             // a receive of an executed message
	pairRecvSkip             // a receive of a skipped message, with an estimate to charge
	pairBlind                // a skipped side without an estimate of its own (charged what the record carried)
)

// pairNote is what a process saw of one pairKey's messages in a run, and the
// estimates its sides charged.
type pairNote struct {
	bits               int64
	sendMean, recvMean float64
}

// pairLen is the number of float64 a pairNote takes when gathered: shape
// size and hash, d, m, bits, the two means.
const pairLen = 7

// elideTag is added to a left-out message's tag in the log, so that its
// numbering never mixes with that of the records of messages that were sent.
const elideTag = 1 << 40

// ExactReceives declares that every receive posted on c through Irecv and
// Recv has exactly the length of the message it gets. The engine may then
// leave out of a selective run the messages that both sides know are
// skipped. Call it on every member.
func (c *Comm) ExactReceives() { c.exact = true }

// pair is the pairKey of a message of n elements that the process of rank
// src in c sends to the one of rank dst.
func (c *Comm) pair(n, src, dst int) pairKey {
	return pairKey{sh: c.shape, d: c.ranks[dst] - c.ranks[src], m: int64(n)}
}

// learns reports whether this run leaves messages on c out, or notes what
// it sees of them (elide.go).
func (c *Comm) learns() bool { return c.e.on && c.e.elides && c.exact }

// leftOut reports whether the message of n elements from src to dst (ranks
// in c) is left out of this run, and the estimates to charge when a side
// has none of its own.
func (c *Comm) leftOut(n, src, dst int) (pairNote, bool) {
	if !c.learns() {
		return pairNote{}, false
	}
	est, ok := c.e.tr.elide[c.pair(n, src, dst)]
	return est, ok
}

// noteSend and noteRecv record what this process saw of a message of n
// elements to dest or from src, executed or skipped, in a run that can
// learn left-out messages (see note).
func (c *Comm) noteSend(n, dest int, exec bool, st *kstat) {
	if c.learns() {
		c.note(c.pair(n, c.c.Rank(), dest), exec, pairSendExec, pairSendSkip, st)
	}
}

func (c *Comm) noteRecv(n, src int, exec bool, st *kstat) {
	if c.learns() {
		c.note(c.pair(n, src, c.c.Rank()), exec, pairRecvExec, pairRecvSkip, st)
	}
}

// note adds to pk's note this side's bit (execBit or skipBit) and, for a
// skipped side, the estimate it charged (blind when it had none of its own).
func (c *Comm) note(pk pairKey, exec bool, execBit, skipBit int64, st *kstat) {
	e := c.e
	if e.pairs == nil {
		e.pairs = map[pairKey]pairNote{}
	}
	n := e.pairs[pk]
	if exec {
		n.bits |= execBit
	} else {
		n.bits |= skipBit
		mean, own := e.estimate(st)
		if !own {
			n.bits |= pairBlind
		}
		if skipBit == pairSendSkip {
			n.sendMean = mean
		} else {
			n.recvMean = mean
		}
	}
	e.pairs[pk] = n
}

// estimate is what a skipped kernel is charged from this process's own
// knowledge (skippedFor), and whether there is any.
func (e *Engine) estimate(st *kstat) (float64, bool) {
	if s := e.sample(st); s.N > 0 {
		return s.Mean, true
	}
	if st.pred != nil {
		return st.pred.mean, true
	}
	return 0, false
}

// encodePairs appends the notes to buf (in any order: decodePairs merges
// them).
func encodePairs(buf []float64, pairs map[pairKey]pairNote) []float64 {
	for k, n := range pairs {
		buf = append(buf, float64(k.sh.Size), float64(k.sh.Hash), float64(k.d), float64(k.m), float64(n.bits), n.sendMean, n.recvMean)
	}
	return buf
}

// decodePairs adds the notes in buf (encodePairs) to into, OR-ing the bits
// and keeping the estimates a side charged.
func decodePairs(buf []float64, into map[pairKey]pairNote) {
	for i := 0; i+pairLen <= len(buf); i += pairLen {
		k := pairKey{sh: Shape{Size: int(buf[i]), Hash: uint32(buf[i+1])}, d: int64(buf[i+2]), m: int64(buf[i+3])}
		n, o := into[k], int64(buf[i+4])
		if o&pairSendSkip != 0 {
			n.sendMean = buf[i+5]
		}
		if o&pairRecvSkip != 0 {
			n.recvMean = buf[i+6]
		}
		n.bits |= o
		into[k] = n
	}
}

// elidable reports whether the messages seen as n in a run may be left out
// of the next: every one was skipped, on both sides, and each side had an
// estimate of its own.
func elidable(n pairNote) bool {
	return n.bits&(pairSendExec|pairRecvExec|pairBlind) == 0 && n.bits&pairSendSkip != 0 && n.bits&pairRecvSkip != 0
}

// grow adds to the track's left-out messages those the run's merged notes
// allow (elidable), and returns the whole set encoded for the broadcast.
func (tr *Track) grow(notes map[pairKey]pairNote) []float64 {
	if tr.elide == nil {
		tr.elide = map[pairKey]pairNote{}
	}
	for k, n := range notes {
		if _, ok := tr.elide[k]; !ok && elidable(n) {
			tr.elide[k] = n
		}
	}
	return encodePairs(nil, tr.elide)
}

// setElide replaces the track's left-out messages by the broadcast set.
func (tr *Track) setElide(buf []float64) {
	m := make(map[pairKey]pairNote, len(buf)/pairLen)
	decodePairs(buf, m)
	tr.elide = m
}

// elideSend leaves out a send of n elements to dest with tag (see leftOut):
// the sender charges its estimate and logs the send for the replay.
func (c *Comm) elideSend(op Op, n, dest, tag int, est pairNote) *Request {
	e := c.e
	e.gap()
	st := e.stat(c.p2pKey(op, n, dest))
	// A large send waits for its receive to be posted (its Wait logs
	// that); a small one is done.
	r := &Request{c: c, st: st, send: true, elided: true, bytes: 8 * n, peer: dest, tag: tag + elideTag,
		rdv: 8*n > EagerLimit, done: 8*n <= EagerLimit, gen: e.gen}
	r.seq = c.logP2P(evSend, dest, r.tag, 0)
	e.skippedFor(st, est.sendMean)
	e.elided++
	e.resume()
	return r
}

// elideRecv leaves out a receive of n elements from src with tag: the
// receive is posted (for the simulation of large sends) and numbered now,
// in posting order as MPI would match it; its wait charges the estimate.
func (c *Comm) elideRecv(op Op, n, src, tag int, est pairNote) *Request {
	e := c.e
	e.gap()
	r := &Request{c: c, elided: true, fallback: est.recvMean, bytes: 8 * n, peer: src, tag: tag + elideTag, op: op, gen: e.gen}
	c.logPost(src, r.tag)
	r.seq = c.nextRecv(src, r.tag)
	e.resume()
	return r
}

// completeElided completes a left-out request (Wait).
func (r *Request) completeElided() {
	r.done = true
	c, e := r.c, r.c.e
	if !e.on || r.gen != e.gen { // a request of an earlier run: on no path of this one
		return
	}
	e.gap()
	if r.send { // a large send waits for its receive to be posted
		c.logP2P(evAck, r.peer, r.tag, r.seq)
		e.resume()
		return
	}
	r.st = e.stat(c.p2pKey(r.op, r.bytes/8, r.peer))
	c.logP2P(evRecv, r.peer, r.tag, r.seq)
	e.skippedFor(r.st, r.fallback)
	e.elided++
	e.resume()
}
