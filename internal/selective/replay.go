package selective

import (
	"fmt"
	"math"
	"slices"

	"github.com/approxtune/approxtune/internal/mpi"
)

// The critical-path log. Every process logs what its path went through in a
// selective run: the time added since the previous entry, then the point
// where paths meet (a collective, a record sent, a record received; and, for
// the simulation of sim.go only, a receive posted and a large send waiting
// for it). A collective that every member has already agreed to skip on a
// communicator ("settled") is then skipped without exchanging records, and
// End replays the logs of all processes to recover the path exactly as the
// records would have carried it: the engine's messages cost as much as the
// small collectives they let a run skip on an oversubscribed node, and a
// settled collective needs none.

// Kinds of log entries.
const (
	evColl = iota // a collective: the members' paths meet (max)
	evSend        // a record sent to a peer: this path as it is now
	evRecv        // a record received from a peer: take its path if longer
	evEnd         // the end of the run
	evPost        // a receive posted (simulate: a large send waits for it)
	evAck         // a large send waits for its receive to be posted (simulate)
)

// event is one log entry: the path time (and its computation, communication
// and fixed-duration parts) added since the previous entry, then the meeting
// point.
type event struct {
	kind       int
	dt, dc, dm float64
	df         float64
	dv         float64 // the prediction variance skipped kernels added (Engine.skippedFor)
	db         float64 // bytes the transfers in df moved (Engine.add): simulate's copy work
	comm       commID
	size       int64   // evColl: the communicator's size
	seq        int64   // evColl: the collective's number on comm in this run; evRecv/evPost: the receive's number from peer with tag (posting order, as MPI matches); evSend/evAck: the send's number to peer with tag
	peer, tag  int64   // point-to-point: the peer's world rank, the tag
	in, out    float64 // evColl run on a promise: when this process reached it and left it (mpi.Clock); else 0
}

// eventLen is the number of float64 an event takes in the gathered log.
const eventLen = 15

// commID names a communicator across processes: an identifier agreed by its
// members when it was created, and its lowest world rank (two communicators
// that share a member never share an identifier).
type commID struct{ id, low int64 }

// logEvent appends an entry for the meeting point, with the time added since
// the previous one. Only selective runs are replayed, so only they log.
func (e *Engine) logEvent(ev event) {
	if !e.skip {
		return
	}
	ev.dt, ev.dc, ev.dm, ev.df, ev.dv, ev.db = e.dT, e.dC, e.dM, e.dF, e.dV, e.dB
	e.dT, e.dC, e.dM, e.dF, e.dV, e.dB = 0, 0, 0, 0, 0, 0
	e.plog = append(e.plog, ev)
}

// pathVal is a path as the records carry it, and the variance of its
// prediction (the replay's alone: records do not carry it).
type pathVal struct{ total, comp, comm, v float64 }

// replayPaths recovers every process's path at the end of a run from the
// logs. It fails if the logs do not describe a run that completed (a
// collective or a record whose partners never logged it).
func replayPaths(logs [][]event) ([]pathVal, error) { return linkLogs(logs).replayPaths() }

// replayPaths is replayPaths on the matched logs.
func (lk *links) replayPaths() ([]pathVal, error) {
	logs := lk.logs
	rp := &replayer{links: lk, p: make([]pathVal, len(logs)), cur: make([]int, len(logs)), arrived: make([]bool, len(logs)),
		colls: make([]meeting, lk.n[linkColl]), msgs: make([]pathVal, lk.n[linkRecord]), sent: make([]bool, lk.n[linkRecord])}
	for {
		progress, done := false, true
		for r := range logs {
			for rp.cur[r] < len(logs[r]) {
				if !rp.arrived[r] {
					if err := rp.arrive(r); err != nil {
						return nil, err
					}
					progress = true
				}
				if !rp.leave(r) {
					done = false
					break
				}
				progress = true
			}
		}
		if done {
			return rp.p, nil
		}
		if !progress {
			return nil, rp.stall()
		}
	}
}

// meeting is a collective as its members arrive: the longest path so far.
type meeting struct {
	best    pathVal
	arrived int64
}

// replayer walks the logs of every process at once.
type replayer struct {
	*links
	p       []pathVal
	cur     []int     // each process's current entry
	arrived []bool    // the current entry's time is added and the process is at its meeting point
	colls   []meeting // per collective (its link)
	msgs    []pathVal // per record (its link): the path it carries, once sent
	sent    []bool    // per record: sent and not yet received
}

// arrive adds process r's time up to its current entry and brings it to the
// meeting point: a collective counts it in, a record leaves with its path.
func (rp *replayer) arrive(r int) error {
	i := rp.cur[r]
	ev := &rp.logs[r][i]
	p := &rp.p[r]
	p.total += ev.dt
	p.comp += ev.dc
	p.comm += ev.dm
	p.v += ev.dv
	rp.arrived[r] = true
	switch ev.kind {
	case evColl:
		m := &rp.colls[rp.of[r][i]]
		if m.arrived == 0 || p.total > m.best.total {
			m.best = *p
		}
		m.arrived++
		if m.arrived > ev.size {
			return fmt.Errorf("critical-path replay: collective %d on communicator %v has more than its %d members", ev.seq, ev.comm, ev.size)
		}
	case evSend:
		l := rp.of[r][i]
		rp.msgs[l], rp.sent[l] = *p, true
	}
	return nil
}

// leave moves process r past its meeting point, taking the longer path it
// met there; it reports false while the meeting is not complete.
func (rp *replayer) leave(r int) bool {
	i := rp.cur[r]
	ev := &rp.logs[r][i]
	var met pathVal
	switch ev.kind {
	case evColl:
		m := &rp.colls[rp.of[r][i]]
		if m.arrived < ev.size {
			return false
		}
		met = m.best
	case evRecv:
		l := rp.of[r][i]
		if !rp.sent[l] {
			return false
		}
		rp.sent[l] = false
		met = rp.msgs[l]
	}
	if met.total > rp.p[r].total {
		rp.p[r] = met
	}
	rp.cur[r]++
	rp.arrived[r] = false
	return true
}

// stall describes the first process that can never leave its meeting point.
func (rp *replayer) stall() error {
	for r, log := range rp.logs {
		if rp.cur[r] < len(log) {
			return waitsForever("critical-path replay", r, rp.cur[r], log[rp.cur[r]])
		}
	}
	return fmt.Errorf("critical-path replay: no progress")
}

// waitsForever is the error of a replay (what) whose process r can never
// leave entry i of its log.
func waitsForever(what string, r, i int, ev event) error {
	return fmt.Errorf("%s: process %d waits forever at entry %d (kind %d, communicator %v, seq %d, peer %d, tag %d)",
		what, r, i, ev.kind, ev.comm, ev.seq, ev.peer, ev.tag)
}

// encodeLog writes a log as float64s (eventLen per entry).
func encodeLog(log []event) []float64 { return appendLog(nil, log) }

// appendLog appends what encodeLog writes to dst.
func appendLog(dst []float64, log []event) []float64 {
	dst = slices.Grow(dst, len(log)*eventLen)
	for i := range log {
		ev := &log[i]
		dst = append(dst, float64(ev.kind), ev.dt, ev.dc, ev.dm, ev.df, float64(ev.comm.id), float64(ev.comm.low),
			float64(ev.size), float64(ev.seq), float64(ev.peer), float64(ev.tag), ev.in, ev.out, ev.dv, ev.db)
	}
	return dst
}

// decodeLog reads what encodeLog wrote.
func decodeLog(buf []float64) []event { return decodeLogInto(nil, buf) }

// decodeLogInto reads what encodeLog wrote into dst's memory, or new memory
// if dst is too short.
func decodeLogInto(dst []event, buf []float64) []event {
	n := len(buf) / eventLen
	if cap(dst) < n {
		dst = make([]event, n)
	}
	log := dst[:n]
	for i := range log {
		b := buf[i*eventLen : (i+1)*eventLen]
		log[i] = event{kind: int(b[0]), dt: b[1], dc: b[2], dm: b[3], df: b[4], comm: commID{int64(b[5]), int64(b[6])},
			size: int64(b[7]), seq: int64(b[8]), peer: int64(b[9]), tag: int64(b[10]), in: b[11], out: b[12], dv: b[13], db: b[14]}
	}
	return log
}

// endBuffers are End's buffers, kept from one run to the next: a fully
// skipped run of cholesky2d n=4096 at b=32 on 4 ranks logs 1.5 M numbers,
// and fresh memory for them cost rank 0 some 2 ms of page faults a run.
// They keep the largest logs seen.
type endBuffers struct {
	out  []float64   // this process's log and left-out message notes, as sent (not rank 0)
	in   [][]float64 // rank 0: per process, what it sent
	logs [][]event   // rank 0: per process, its log decoded
}

// encode writes log and notes into out.
func (b *endBuffers) encode(log []event, notes []float64) []float64 {
	b.out = slices.Grow(b.out[:0], len(log)*eventLen+len(notes))
	b.out = append(appendLog(b.out, log), notes...)
	return b.out
}

// inOf returns the buffer, n long, to receive what process r (of size) sent.
func (b *endBuffers) inOf(size, r, n int) []float64 {
	if len(b.in) < size {
		b.in = slices.Grow(b.in, size)[:size]
		b.logs = slices.Grow(b.logs, size)[:size]
	}
	if cap(b.in[r]) < n {
		b.in[r] = make([]float64, n)
	}
	return b.in[r][:n]
}

// decode decodes process r's log from buf (inOf first).
func (b *endBuffers) decode(r int, buf []float64) []event {
	b.logs[r] = decodeLogInto(b.logs[r], buf)
	return b.logs[r]
}

// chargePromised gives every collective run on a promise (comm.go) its cost,
// now that every member's log is here: from the last member's arrival to
// this member's end (one host's clocks agree), the measure the records
// exchange gives a collective otherwise. The cost joins the entry after
// the collective, as an executed collective's time would have (the run's
// end entry follows every collective). Without one clock for all (members
// on several hosts) arrivals cannot be compared, and every member is
// charged the shortest time a member spent in the collective: the last to
// arrive waits for no one, so its time is the transfer alone (a member's
// own time would hold its wait, which the replay adds again).
func chargePromised(logs [][]event, sameClock bool) { linkLogs(logs).chargePromised(sameClock) }

// chargePromised is chargePromised on the matched logs.
func (lk *links) chargePromised(sameClock bool) {
	type span struct {
		lastIn, least float64
		seen          bool
	}
	var spans []span // per collective (its link)
	for r, log := range lk.logs {
		for i := range log {
			ev := &log[i]
			if ev.kind != evColl || ev.out <= 0 {
				continue
			}
			if spans == nil {
				spans = make([]span, lk.n[linkColl])
			}
			sp := &spans[lk.of[r][i]]
			if !sp.seen {
				*sp = span{lastIn: ev.in, least: ev.out - ev.in, seen: true}
			}
			sp.lastIn, sp.least = math.Max(sp.lastIn, ev.in), math.Min(sp.least, ev.out-ev.in)
		}
	}
	if spans == nil {
		return
	}
	for r, log := range lk.logs {
		for i := range log[:len(log)-1] {
			ev := &log[i]
			if ev.kind != evColl || ev.out <= 0 {
				continue
			}
			sp := spans[lk.of[r][i]]
			t := sp.least
			if sameClock {
				t = ev.out - math.Max(ev.in, sp.lastIn)
			}
			t = math.Max(t, 0)
			next := &log[i+1]
			next.dt += t
			next.dm += t
			next.df += t
		}
	}
}

// replayTag is the tag of the log messages on the engine's world communicator.
const replayTag = 7402

// replay gathers every process's log to world rank 0, replays it there and
// sets each process's path to its replayed value. It is collective over the
// world. When no process skipped a settled collective, the records carried
// every path already and the replay must agree with them: a disagreement is
// reported as an error (it would be a bug in the engine). Each path's total
// is then the later of the replay's and the time simulate gives it, on shared
// cores and with large sends waiting for their receives (its computation and
// communication parts stay those of the longest path; the rest is waiting,
// for a partner or a core).
func (e *Engine) replay() error {
	w := e.world.in
	e.logEvent(event{kind: evEnd})
	size := w.Size()
	// Each process's log length and its collectives that exchanged no
	// records (settled skips, promised runs); rank 0 sends back every path
	// (total, computation, communication, simulated end, variance) and the sum of
	// those: when it is 0, the replay must give what the records carried.
	var notes []float64
	if e.elides {
		notes = encodePairs(nil, e.pairs)
	}
	var offer []float64
	if e.pools() {
		offer = e.poolOffer(nil)
	}
	nl := int64(len(notes))
	notes = append(notes, offer...)
	heads := make([]int64, 4*size)
	if err := mpi.Gather(w, []int64{int64(len(e.plog) * eventLen), e.settledSkips + e.promisedRuns + e.elided, nl, int64(len(offer))}, heads, 0); err != nil {
		return fmt.Errorf("critical-path replay: %w", err)
	}
	final := make([]float64, 5*size+3)
	var elide, pooled []float64
	if w.Rank() == 0 {
		logs := make([][]event, size)
		logs[0] = e.plog
		final[5*size] = float64(heads[1])
		merged := map[pairKey]pairNote{}
		decodePairs(notes[:nl], merged)
		offers := make([][]float64, size)
		offers[0] = offer
		for r := 1; r < size; r++ {
			final[5*size] += float64(heads[4*r+1])
			lg, no := heads[4*r], heads[4*r]+heads[4*r+2] // its log, then its notes, then its offer
			b := e.ends.inOf(size, r, int(no+heads[4*r+3]))
			if _, err := mpi.Recv(w, b, r, replayTag); err != nil {
				return fmt.Errorf("critical-path replay: log of process %d: %w", r, err)
			}
			logs[r] = e.ends.decode(r, b[:lg])
			decodePairs(b[lg:no], merged)
			offers[r] = b[no:]
		}
		if e.pools() {
			pooled = poolMerge(offers, e.known)
			final[5*size+2] = float64(len(pooled))
		}
		lk := linkLogs(logs)
		lk.chargePromised(e.sameClock)
		if e.simDump != "" {
			dumpLogs(e.simDump, logs, e.place)
		}
		paths, err := lk.replayPaths()
		var ends []float64
		if err == nil {
			ends, err = lk.simulate(e.place)
		}
		if err != nil {
			// Keep the other processes from waiting on the broadcast.
			final[0] = math.NaN()
			if berr := mpi.Bcast(w, final, 0); berr != nil {
				return fmt.Errorf("%w (and %v)", err, berr)
			}
			return err
		}
		for r, v := range paths {
			final[5*r], final[5*r+1], final[5*r+2], final[5*r+3], final[5*r+4] = v.total, v.comp, v.comm, math.Max(ends[r], v.total), v.v
		}
		if e.elides {
			elide = e.tr.grow(merged)
			final[5*size+1] = float64(len(elide))
		}
	} else if err := mpi.Send(w, e.ends.encode(e.plog, notes), 0, replayTag); err != nil {
		return fmt.Errorf("critical-path replay: %w", err)
	}
	if err := mpi.Bcast(w, final, 0); err != nil {
		return fmt.Errorf("critical-path replay: %w", err)
	}
	if math.IsNaN(final[0]) {
		return fmt.Errorf("critical-path replay failed on rank 0")
	}
	if n := int(final[5*size+1]); n > 0 {
		if w.Rank() != 0 {
			elide = make([]float64, n)
		}
		if err := mpi.Bcast(w, elide, 0); err != nil {
			return fmt.Errorf("critical-path replay: left-out messages: %w", err)
		}
		if w.Rank() != 0 {
			e.tr.setElide(elide)
		}
	}
	if n := int(final[5*size+2]); n > 0 {
		if w.Rank() != 0 {
			pooled = make([]float64, n)
		}
		if err := mpi.Bcast(w, pooled, 0); err != nil {
			return fmt.Errorf("critical-path replay: pooled samples: %w", err)
		}
		e.poolTake(pooled)
	}
	me := 5 * w.Rank()
	if final[5*size] == 0 && math.Abs(final[me]-e.total) > 1e-9*math.Max(1, e.total) {
		return fmt.Errorf("critical-path replay: %.9f s where the records carried %.9f s", final[me], e.total)
	}
	e.total, e.comp, e.comm, e.pathVar = final[me+3], final[me+1], final[me+2], final[me+4]
	return nil
}
