package selective

import (
	"fmt"
	"math"

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
func replayPaths(logs [][]event) ([]pathVal, error) {
	rp := &replayer{logs: logs, p: make([]pathVal, len(logs)), cur: make([]int, len(logs)), arrived: make([]bool, len(logs)),
		colls: map[collKey]*meeting{}, msgs: map[msgKey]pathVal{}}
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

// collKey names a collective: its communicator and its number there.
type collKey struct {
	c   commID
	seq int64
}

// msgKey names a record: communicator, sender, receiver, tag and its number
// among the records with those.
type msgKey struct {
	c                  commID
	src, dst, tag, seq int64
}

// meeting is a collective as its members arrive: the longest path so far.
type meeting struct {
	best    pathVal
	arrived int64
}

// replayer walks the logs of every process at once.
type replayer struct {
	logs    [][]event
	p       []pathVal
	cur     []int  // each process's current entry
	arrived []bool // the current entry's time is added and the process is at its meeting point
	colls   map[collKey]*meeting
	msgs    map[msgKey]pathVal // records sent and not yet received
}

// arrive adds process r's time up to its current entry and brings it to the
// meeting point: a collective counts it in, a record leaves with its path.
func (rp *replayer) arrive(r int) error {
	ev := &rp.logs[r][rp.cur[r]]
	p := &rp.p[r]
	p.total += ev.dt
	p.comp += ev.dc
	p.comm += ev.dm
	p.v += ev.dv
	rp.arrived[r] = true
	switch ev.kind {
	case evColl:
		k := collKey{ev.comm, ev.seq}
		m := rp.colls[k]
		if m == nil {
			m = &meeting{best: *p}
			rp.colls[k] = m
		} else if p.total > m.best.total {
			m.best = *p
		}
		m.arrived++
		if m.arrived > ev.size {
			return fmt.Errorf("critical-path replay: collective %d on communicator %v has more than its %d members", ev.seq, ev.comm, ev.size)
		}
	case evSend:
		rp.msgs[msgKey{c: ev.comm, src: int64(r), dst: ev.peer, tag: ev.tag, seq: ev.seq}] = *p
	}
	return nil
}

// leave moves process r past its meeting point, taking the longer path it
// met there; it reports false while the meeting is not complete.
func (rp *replayer) leave(r int) bool {
	ev := &rp.logs[r][rp.cur[r]]
	var met pathVal
	switch ev.kind {
	case evColl:
		m := rp.colls[collKey{ev.comm, ev.seq}]
		if m.arrived < ev.size {
			return false
		}
		met = m.best
	case evRecv:
		k := msgKey{c: ev.comm, src: ev.peer, dst: int64(r), tag: ev.tag, seq: ev.seq}
		v, ok := rp.msgs[k]
		if !ok {
			return false
		}
		delete(rp.msgs, k)
		met = v
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

// encode writes a log as float64s (eventLen per entry).
func encodeLog(log []event) []float64 {
	out := make([]float64, 0, len(log)*eventLen)
	for _, ev := range log {
		out = append(out, float64(ev.kind), ev.dt, ev.dc, ev.dm, ev.df, float64(ev.comm.id), float64(ev.comm.low),
			float64(ev.size), float64(ev.seq), float64(ev.peer), float64(ev.tag), ev.in, ev.out, ev.dv, ev.db)
	}
	return out
}

// decodeLog reads what encodeLog wrote.
func decodeLog(buf []float64) []event {
	log := make([]event, len(buf)/eventLen)
	for i := range log {
		b := buf[i*eventLen : (i+1)*eventLen]
		log[i] = event{kind: int(b[0]), dt: b[1], dc: b[2], dm: b[3], df: b[4], comm: commID{int64(b[5]), int64(b[6])},
			size: int64(b[7]), seq: int64(b[8]), peer: int64(b[9]), tag: int64(b[10]), in: b[11], out: b[12], dv: b[13], db: b[14]}
	}
	return log
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
func chargePromised(logs [][]event, sameClock bool) {
	type span struct{ lastIn, least float64 }
	spans := map[collKey]span{}
	for _, log := range logs {
		for _, ev := range log {
			if ev.kind == evColl && ev.out > 0 {
				k := collKey{ev.comm, ev.seq}
				sp, ok := spans[k]
				if !ok {
					sp = span{lastIn: ev.in, least: ev.out - ev.in}
				}
				sp.lastIn, sp.least = math.Max(sp.lastIn, ev.in), math.Min(sp.least, ev.out-ev.in)
				spans[k] = sp
			}
		}
	}
	for _, log := range logs {
		for i, ev := range log[:len(log)-1] {
			if ev.kind != evColl || ev.out <= 0 {
				continue
			}
			sp := spans[collKey{ev.comm, ev.seq}]
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
	heads := make([]int64, 3*size)
	if err := mpi.Gather(w, []int64{int64(len(e.plog) * eventLen), e.settledSkips + e.promisedRuns + e.elided, int64(len(notes))}, heads, 0); err != nil {
		return fmt.Errorf("critical-path replay: %w", err)
	}
	final := make([]float64, 5*size+2)
	var elide []float64
	if w.Rank() == 0 {
		logs := make([][]event, size)
		logs[0] = e.plog
		final[5*size] = float64(heads[1])
		merged := map[pairKey]pairNote{}
		decodePairs(notes, merged)
		for r := 1; r < size; r++ {
			final[5*size] += float64(heads[3*r+1])
			b := make([]float64, heads[3*r]+heads[3*r+2])
			if _, err := mpi.Recv(w, b, r, replayTag); err != nil {
				return fmt.Errorf("critical-path replay: log of process %d: %w", r, err)
			}
			logs[r] = decodeLog(b[:heads[3*r]])
			decodePairs(b[heads[3*r]:], merged)
		}
		chargePromised(logs, e.sameClock)
		if e.simDump != "" {
			dumpLogs(e.simDump, logs, e.place)
		}
		paths, err := replayPaths(logs)
		var ends []float64
		if err == nil {
			ends, err = simulate(logs, e.place)
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
	} else if err := mpi.Send(w, append(encodeLog(e.plog), notes...), 0, replayTag); err != nil {
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
	me := 5 * w.Rank()
	if final[5*size] == 0 && math.Abs(final[me]-e.total) > 1e-9*math.Max(1, e.total) {
		return fmt.Errorf("critical-path replay: %.9f s where the records carried %.9f s", final[me], e.total)
	}
	e.total, e.comp, e.comm, e.pathVar = final[me+3], final[me+1], final[me+2], final[me+4]
	return nil
}
