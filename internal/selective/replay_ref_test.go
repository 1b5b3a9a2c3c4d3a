package selective

// replayPaths, chargePromised and simulate as they were before linkLogs
// (links.go) matched the logs' meeting points once: every meeting point
// found in maps, by what its entries logged, each time an entry meets it.
// TestReplayMatchesReference checks the current code against them, to the
// bit, on the logs of real runs and generated ones. The comments of the
// current code say what each part does.

import (
	"fmt"
	"math"
)

// refReplayPaths is replayPaths with maps.
func refReplayPaths(logs [][]event) ([]pathVal, error) {
	rp := &refReplayer{logs: logs, p: make([]pathVal, len(logs)), cur: make([]int, len(logs)), arrived: make([]bool, len(logs)),
		colls: map[collKey]*refMeeting{}, msgs: map[refMsgKey]pathVal{}}
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

// refMsgKey names a record: communicator, sender, receiver, tag and its number
// among the records with those.
type refMsgKey struct {
	c                  commID
	src, dst, tag, seq int64
}

// refMeeting is a collective as its members arrive: the longest path so far.
type refMeeting struct {
	best    pathVal
	arrived int64
}

// refReplayer walks the logs of every process at once.
type refReplayer struct {
	logs    [][]event
	p       []pathVal
	cur     []int  // each process's current entry
	arrived []bool // the current entry's time is added and the process is at its meeting point
	colls   map[collKey]*refMeeting
	msgs    map[refMsgKey]pathVal // records sent and not yet received
}

// arrive adds process r's time up to its current entry and brings it to the
// meeting point: a collective counts it in, a record leaves with its path.
func (rp *refReplayer) arrive(r int) error {
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
			m = &refMeeting{best: *p}
			rp.colls[k] = m
		} else if p.total > m.best.total {
			m.best = *p
		}
		m.arrived++
		if m.arrived > ev.size {
			return fmt.Errorf("critical-path replay: collective %d on communicator %v has more than its %d members", ev.seq, ev.comm, ev.size)
		}
	case evSend:
		rp.msgs[refMsgKey{c: ev.comm, src: int64(r), dst: ev.peer, tag: ev.tag, seq: ev.seq}] = *p
	}
	return nil
}

// leave moves process r past its meeting point, taking the longer path it
// met there; it reports false while the meeting is not complete.
func (rp *refReplayer) leave(r int) bool {
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
		k := refMsgKey{c: ev.comm, src: ev.peer, dst: int64(r), tag: ev.tag, seq: ev.seq}
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
func (rp *refReplayer) stall() error {
	for r, log := range rp.logs {
		if rp.cur[r] < len(log) {
			return waitsForever("critical-path replay", r, rp.cur[r], log[rp.cur[r]])
		}
	}
	return fmt.Errorf("critical-path replay: no progress")
}

// refChargePromised is chargePromised with a map.
func refChargePromised(logs [][]event, sameClock bool) {
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

// refSimulate is simulate with maps.
func refSimulate(logs [][]event, place placement) ([]float64, error) {
	n := len(logs)
	for r, log := range logs {
		if len(log) == 0 || log[len(log)-1].kind != evEnd {
			return nil, fmt.Errorf("core-sharing replay: the log of process %d does not end with the run's end", r)
		}
		for i, ev := range log {
			if math.IsNaN(ev.dt) || math.IsInf(ev.dt, 0) || math.IsNaN(ev.df) || math.IsInf(ev.df, 0) {
				return nil, fmt.Errorf("core-sharing replay: process %d entry %d adds %v s (%v fixed)", r, i, ev.dt, ev.df)
			}
		}
	}
	s := &refSim{logs: logs, place: place, cur: make([]int, n), fixed: make([]float64, n), work: make([]float64, n),
		state: make([]int, n), end: make([]float64, n), colls: map[collKey][]int{}, records: newRefSignals(), posts: newRefSignals(),
		rate: make([]float64, len(place.members)), computing: make([]int, len(place.members))}
	for r := range logs {
		s.load(r)
	}
	for {
		// Processes whose entry's work is done reach its meeting point,
		// which may release others at once.
		for moved := true; moved; {
			moved = false
			for r := range logs {
				if s.state[r] == refRunning && s.fixed[r] <= 0 && s.work[r] <= 0 {
					if err := s.meet(r); err != nil {
						return nil, err
					}
					moved = true
				}
			}
		}
		active := false
		clear(s.computing)
		for r := range logs {
			if s.state[r] == refRunning {
				active = true
				if s.fixed[r] <= 0 {
					s.computing[place.group[r]]++
				}
			}
		}
		if !active {
			// Sends waiting for a receive that was never posted (a
			// record the receiver took in a way the log cannot pair)
			// do not wait: the records already gave them their path.
			if len(s.posts.waiter) == 0 {
				break
			}
			for k, q := range s.posts.waiter {
				delete(s.posts.waiter, k)
				s.next(q)
			}
			continue
		}
		for g, k := range s.computing {
			s.rate[g] = 1
			if float64(k) > place.capacity[g] {
				s.rate[g] = place.capacity[g] / float64(k)
			}
		}
		// Advance to the first end of a fixed part or of a share of work.
		step := math.Inf(1)
		for r := range logs {
			if s.state[r] == refRunning {
				step = math.Min(step, s.left(r))
			}
		}
		s.now += step
		for r := range logs {
			if s.state[r] != refRunning {
				continue
			}
			done := s.left(r) <= step
			switch {
			case s.fixed[r] > 0 && done:
				s.fixed[r] = 0
			case s.fixed[r] > 0:
				s.fixed[r] -= step
			case done:
				s.work[r] = 0
			default:
				s.work[r] -= step * s.rate[place.group[r]]
			}
		}
	}
	for r := range logs {
		if s.state[r] != refFinished {
			return nil, waitsForever("core-sharing replay", r, s.cur[r], logs[r][s.cur[r]])
		}
	}
	return s.end, nil
}

// States of a simulated process.
const (
	refRunning  = iota // working through its current entry
	refBlocked         // at a meeting point that is not complete
	refFinished        // past its end
)

// refSim is refSimulate's state.
type refSim struct {
	logs        [][]event
	place       placement
	now         float64
	cur         []int
	fixed, work []float64 // what is left of the current entry
	state       []int
	end         []float64
	colls       map[collKey][]int // members arrived at a collective
	records     refSignals        // records sent, and receivers waiting for them
	posts       refSignals        // receives posted, and large sends waiting for them
	rate        []float64         // per group: pace of computing processes
	computing   []int             // per group: processes computing now
}

// refSignals pairs one process's signal (a record sent, a receive posted) with
// another's wait for it, by key, whichever comes first.
type refSignals struct {
	ready  map[refMsgKey]bool // given and not yet taken
	waiter map[refMsgKey]int  // the process refBlocked until it is given
}

func newRefSignals() refSignals {
	return refSignals{ready: map[refMsgKey]bool{}, waiter: map[refMsgKey]int{}}
}

// give signals k and returns the process that was waiting for it, if any.
func (g refSignals) give(k refMsgKey) (int, bool) {
	if q, ok := g.waiter[k]; ok {
		delete(g.waiter, k)
		return q, true
	}
	g.ready[k] = true
	return 0, false
}

// take consumes k if it was given, or else records r as waiting for it.
func (g refSignals) take(k refMsgKey, r int) bool {
	if g.ready[k] {
		delete(g.ready, k)
		return true
	}
	g.waiter[k] = r
	return false
}

// left is the time process r needs to finish its fixed part, or else its
// work at its group's current pace.
func (s *refSim) left(r int) float64 {
	if s.fixed[r] > 0 {
		return s.fixed[r]
	}
	return s.work[r] / s.rate[s.place.group[r]]
}

// load starts process r's current entry.
func (s *refSim) load(r int) {
	ev := s.logs[r][s.cur[r]]
	fixed := math.Max(ev.df, 0)
	copyWork := math.Min(fixed, s.place.copyCost*math.Max(ev.db, 0))
	s.fixed[r] = fixed - copyWork
	s.work[r] = math.Max(ev.dt-ev.df, 0) + copyWork
	s.state[r] = refRunning
}

// next moves process r past its meeting point.
func (s *refSim) next(r int) {
	s.cur[r]++
	s.load(r)
}

// meet brings process r to its current entry's meeting point.
func (s *refSim) meet(r int) error {
	ev := &s.logs[r][s.cur[r]]
	switch ev.kind {
	case evEnd:
		s.state[r], s.end[r] = refFinished, s.now
	case evColl:
		k := collKey{ev.comm, ev.seq}
		m := append(s.colls[k], r)
		if int64(len(m)) > ev.size {
			return fmt.Errorf("core-sharing replay: collective %d on communicator %v has more than its %d members", ev.seq, ev.comm, ev.size)
		}
		if int64(len(m)) < ev.size {
			s.colls[k] = m
			s.state[r] = refBlocked
			return nil
		}
		delete(s.colls, k)
		for _, q := range m {
			s.next(q)
		}
	case evSend, evPost: // a record sent to peer, a receive from peer posted
		g := s.records
		if ev.kind == evPost {
			g = s.posts
		}
		if q, ok := g.give(refMsgKey{c: ev.comm, src: int64(r), dst: ev.peer, tag: ev.tag, seq: ev.seq}); ok {
			s.next(q)
		}
		s.next(r)
	case evRecv, evAck: // a record from peer awaited, a large send to peer waiting for its receive
		g := s.records
		if ev.kind == evAck {
			g = s.posts
		}
		if g.take(refMsgKey{c: ev.comm, src: ev.peer, dst: int64(r), tag: ev.tag, seq: ev.seq}, r) {
			s.next(r)
		} else {
			s.state[r] = refBlocked
		}
	}
	return nil
}
