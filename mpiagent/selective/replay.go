package selective

import (
	"fmt"
	"math"

	"github.com/approxtune/approxtune/mpiagent/mpi"
)

// The critical-path log. Every process logs what its path went through in a
// selective run: the time added since the previous entry, then the point
// where paths meet (a collective, a record sent, a record received). A
// collective that every member has already agreed to skip on a communicator
// ("settled") is then skipped without exchanging records, and End replays the
// logs of all processes to recover the path exactly as the records would have
// carried it: the engine's messages cost as much as the small collectives
// they let a run skip on an oversubscribed node, and a settled collective
// needs none.

// Kinds of log entries.
const (
	evColl = iota // a collective: the members' paths meet (max)
	evSend        // a record sent to a peer: this path as it is now
	evRecv        // a record received from a peer: take its path if longer
	evEnd         // the end of the run
)

// event is one log entry: the path time (and its computation and
// communication parts) added since the previous entry, then the meeting point.
type event struct {
	kind       int
	dt, dc, dm float64
	comm       commID
	size       int64 // evColl: the communicator's size
	seq        int64 // evColl: the collective's number on comm in this run; evRecv: the receive's number from peer with tag (posting order, as MPI matches)
	peer, tag  int64 // evSend/evRecv: the peer's world rank, the tag
}

// eventLen is the number of float64 an event takes in the gathered log.
const eventLen = 10

// commID names a communicator across processes: an identifier agreed by its
// members when it was created, and its lowest world rank (two communicators
// that share a member never share an identifier).
type commID struct{ id, low int64 }

// logEvent appends an entry for the meeting point, with the time added since
// the previous one.
func (e *Engine) logEvent(ev event) {
	ev.dt, ev.dc, ev.dm = e.dT, e.dC, e.dM
	e.dT, e.dC, e.dM = 0, 0, 0
	e.plog = append(e.plog, ev)
}

// pathVal is a path as the records carry it.
type pathVal struct{ total, comp, comm float64 }

// replayPaths recovers every process's path at the end of a run from the
// logs. It fails if the logs do not describe a run that completed (a
// collective or a record whose partners never logged it).
func replayPaths(logs [][]event) ([]pathVal, error) {
	type collKey struct {
		c   commID
		seq int64
	}
	type msgKey struct {
		c                  commID
		src, dst, tag, seq int64
	}
	type meeting struct {
		best    pathVal
		arrived int64
	}
	n := len(logs)
	p := make([]pathVal, n)
	cur := make([]int, n)
	arrived := make([]bool, n) // the current entry's time is added and the process has arrived
	colls := map[collKey]*meeting{}
	msgs := map[msgKey]pathVal{}
	sendSeq := make([]map[msgKey]int64, n) // records sent so far, per destination and tag
	for r := range logs {
		sendSeq[r] = map[msgKey]int64{}
	}
	for {
		progress, done := false, true
		for r := 0; r < n; r++ {
			for cur[r] < len(logs[r]) {
				ev := &logs[r][cur[r]]
				if !arrived[r] {
					p[r].total += ev.dt
					p[r].comp += ev.dc
					p[r].comm += ev.dm
					arrived[r] = true
					progress = true
					switch ev.kind {
					case evColl:
						k := collKey{ev.comm, ev.seq}
						m := colls[k]
						if m == nil {
							m = &meeting{best: p[r]}
							colls[k] = m
						} else if p[r].total > m.best.total {
							m.best = p[r]
						}
						m.arrived++
						if m.arrived > ev.size {
							return nil, fmt.Errorf("critical-path replay: collective %d on communicator %v has more than its %d members", ev.seq, ev.comm, ev.size)
						}
					case evSend:
						k := msgKey{c: ev.comm, src: int64(r), dst: ev.peer, tag: ev.tag}
						s := sendSeq[r][k]
						sendSeq[r][k] = s + 1
						k.seq = s
						msgs[k] = p[r]
					}
				}
				switch ev.kind {
				case evColl:
					m := colls[collKey{ev.comm, ev.seq}]
					if m.arrived < ev.size {
						goto blocked
					}
					if m.best.total > p[r].total {
						p[r] = m.best
					}
				case evRecv:
					k := msgKey{c: ev.comm, src: ev.peer, dst: int64(r), tag: ev.tag, seq: ev.seq}
					v, ok := msgs[k]
					if !ok {
						goto blocked
					}
					delete(msgs, k)
					if v.total > p[r].total {
						p[r] = v
					}
				}
				cur[r]++
				arrived[r] = false
				progress = true
			}
			continue
		blocked:
			done = false
		}
		if done {
			return p, nil
		}
		if !progress {
			for r := 0; r < n; r++ {
				if cur[r] < len(logs[r]) {
					ev := logs[r][cur[r]]
					return nil, fmt.Errorf("critical-path replay: process %d waits forever at entry %d (kind %d, communicator %v, seq %d, peer %d, tag %d)",
						r, cur[r], ev.kind, ev.comm, ev.seq, ev.peer, ev.tag)
				}
			}
			return p, nil
		}
	}
}

// encode writes a log as float64s (eventLen per entry).
func encodeLog(log []event) []float64 {
	out := make([]float64, 0, len(log)*eventLen)
	for _, ev := range log {
		out = append(out, float64(ev.kind), ev.dt, ev.dc, ev.dm, float64(ev.comm.id), float64(ev.comm.low),
			float64(ev.size), float64(ev.seq), float64(ev.peer), float64(ev.tag))
	}
	return out
}

// decodeLog reads what encodeLog wrote.
func decodeLog(buf []float64) []event {
	log := make([]event, len(buf)/eventLen)
	for i := range log {
		b := buf[i*eventLen : (i+1)*eventLen]
		log[i] = event{kind: int(b[0]), dt: b[1], dc: b[2], dm: b[3], comm: commID{int64(b[4]), int64(b[5])},
			size: int64(b[6]), seq: int64(b[7]), peer: int64(b[8]), tag: int64(b[9])}
	}
	return log
}

// replayTag is the tag of the log messages on the engine's world communicator.
const replayTag = 7402

// replay gathers every process's log to world rank 0, replays it there and
// sets each process's path to its replayed value. It is collective over the
// world. When no process skipped a settled collective, the records carried
// every path already and the replay must agree with them: a disagreement is
// reported as an error (it would be a bug in the engine).
func (e *Engine) replay() error {
	w := e.world.in
	e.logEvent(event{kind: evEnd})
	buf := encodeLog(e.plog)
	size := w.Size()
	lens := make([]int64, size)
	settled := []int64{e.settledSkips}
	if err := mpi.Allreduce(w, settled, settled, mpi.Sum); err != nil {
		return fmt.Errorf("critical-path replay: %w", err)
	}
	if err := mpi.Gather(w, []int64{int64(len(buf))}, lens, 0); err != nil {
		return fmt.Errorf("critical-path replay: %w", err)
	}
	final := make([]float64, 3*size)
	if w.Rank() == 0 {
		logs := make([][]event, size)
		logs[0] = e.plog
		for r := 1; r < size; r++ {
			b := make([]float64, lens[r])
			if _, err := mpi.Recv(w, b, r, replayTag); err != nil {
				return fmt.Errorf("critical-path replay: log of process %d: %w", r, err)
			}
			logs[r] = decodeLog(b)
		}
		paths, err := replayPaths(logs)
		if err != nil {
			// Keep the other processes from waiting on the broadcast.
			final[0] = math.NaN()
			if berr := mpi.Bcast(w, final, 0); berr != nil {
				return fmt.Errorf("%w (and %v)", err, berr)
			}
			return err
		}
		for r, v := range paths {
			final[3*r], final[3*r+1], final[3*r+2] = v.total, v.comp, v.comm
		}
	} else if err := mpi.Send(w, buf, 0, replayTag); err != nil {
		return fmt.Errorf("critical-path replay: %w", err)
	}
	if err := mpi.Bcast(w, final, 0); err != nil {
		return fmt.Errorf("critical-path replay: %w", err)
	}
	if math.IsNaN(final[0]) {
		return fmt.Errorf("critical-path replay failed on rank 0")
	}
	me := 3 * w.Rank()
	if settled[0] == 0 && math.Abs(final[me]-e.total) > 1e-9*math.Max(1, e.total) {
		return fmt.Errorf("critical-path replay: %.9f s where the records carried %.9f s", final[me], e.total)
	}
	e.total, e.comp, e.comm = final[me], final[me+1], final[me+2]
	return nil
}
