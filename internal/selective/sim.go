package selective

import (
	"fmt"
	"math"
)

// simulate runs the logged work of every process on the node's cores and
// returns the time at which each process ends. Each log entry's work is its
// fixed-duration part (spins, and transfers less their copy work: CopyCost
// per byte moved), which passes at its own pace, then the rest
// (computation, the code between kernels, in CPU time, messages within the
// eager limit (Engine.add) and the transfers' copy work),
// which the processes of a placement group share: while k of them compute,
// each advances at min(1, CPUs/k) (processor sharing; a waiting process
// yields its core, as the agent makes Open MPI's waiting ranks do). Meeting
// points complete as in the replay: a collective when its last member
// arrives, a received record once it was sent; and a large send's wait once
// its receive was posted, which the records cannot carry (the sender does not
// wait for the receiver's record: in a selective run it may be anywhere).
// With every group at or under its CPUs and no large non-blocking send, this
// is the replay's longest path; on a shared core it adds the turns the
// processes take, which per-kernel CPU times leave out.
func simulate(logs [][]event, place placement) ([]float64, error) {
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
	s := &sim{logs: logs, place: place, cur: make([]int, n), fixed: make([]float64, n), work: make([]float64, n),
		state: make([]int, n), end: make([]float64, n), colls: map[collKey][]int{}, records: newSignals(), posts: newSignals(),
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
				if s.state[r] == running && s.fixed[r] <= 0 && s.work[r] <= 0 {
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
			if s.state[r] == running {
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
			if s.state[r] == running {
				step = math.Min(step, s.left(r))
			}
		}
		s.now += step
		for r := range logs {
			if s.state[r] != running {
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
		if s.state[r] != finished {
			return nil, waitsForever("core-sharing replay", r, s.cur[r], logs[r][s.cur[r]])
		}
	}
	return s.end, nil
}

// States of a simulated process.
const (
	running  = iota // working through its current entry
	blocked         // at a meeting point that is not complete
	finished        // past its end
)

// sim is simulate's state.
type sim struct {
	logs        [][]event
	place       placement
	now         float64
	cur         []int
	fixed, work []float64 // what is left of the current entry
	state       []int
	end         []float64
	colls       map[collKey][]int // members arrived at a collective
	records     signals           // records sent, and receivers waiting for them
	posts       signals           // receives posted, and large sends waiting for them
	rate        []float64         // per group: pace of computing processes
	computing   []int             // per group: processes computing now
}

// signals pairs one process's signal (a record sent, a receive posted) with
// another's wait for it, by key, whichever comes first.
type signals struct {
	ready  map[msgKey]bool // given and not yet taken
	waiter map[msgKey]int  // the process blocked until it is given
}

func newSignals() signals { return signals{ready: map[msgKey]bool{}, waiter: map[msgKey]int{}} }

// give signals k and returns the process that was waiting for it, if any.
func (g signals) give(k msgKey) (int, bool) {
	if q, ok := g.waiter[k]; ok {
		delete(g.waiter, k)
		return q, true
	}
	g.ready[k] = true
	return 0, false
}

// take consumes k if it was given, or else records r as waiting for it.
func (g signals) take(k msgKey, r int) bool {
	if g.ready[k] {
		delete(g.ready, k)
		return true
	}
	g.waiter[k] = r
	return false
}

// left is the time process r needs to finish its fixed part, or else its
// work at its group's current pace.
func (s *sim) left(r int) float64 {
	if s.fixed[r] > 0 {
		return s.fixed[r]
	}
	return s.work[r] / s.rate[s.place.group[r]]
}

// load starts process r's current entry.
func (s *sim) load(r int) {
	ev := s.logs[r][s.cur[r]]
	fixed := math.Max(ev.df, 0)
	copyWork := math.Min(fixed, s.place.copyCost*math.Max(ev.db, 0))
	s.fixed[r] = fixed - copyWork
	s.work[r] = math.Max(ev.dt-ev.df, 0) + copyWork
	s.state[r] = running
}

// next moves process r past its meeting point.
func (s *sim) next(r int) {
	s.cur[r]++
	s.load(r)
}

// meet brings process r to its current entry's meeting point.
func (s *sim) meet(r int) error {
	ev := &s.logs[r][s.cur[r]]
	switch ev.kind {
	case evEnd:
		s.state[r], s.end[r] = finished, s.now
	case evColl:
		k := collKey{ev.comm, ev.seq}
		m := append(s.colls[k], r)
		if int64(len(m)) > ev.size {
			return fmt.Errorf("core-sharing replay: collective %d on communicator %v has more than its %d members", ev.seq, ev.comm, ev.size)
		}
		if int64(len(m)) < ev.size {
			s.colls[k] = m
			s.state[r] = blocked
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
		if q, ok := g.give(msgKey{c: ev.comm, src: int64(r), dst: ev.peer, tag: ev.tag, seq: ev.seq}); ok {
			s.next(q)
		}
		s.next(r)
	case evRecv, evAck: // a record from peer awaited, a large send to peer waiting for its receive
		g := s.records
		if ev.kind == evAck {
			g = s.posts
		}
		if g.take(msgKey{c: ev.comm, src: ev.peer, dst: int64(r), tag: ev.tag, seq: ev.seq}, r) {
			s.next(r)
		} else {
			s.state[r] = blocked
		}
	}
	return nil
}
