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
	return linkLogs(logs).simulate(place)
}

// simulate is simulate on the matched logs.
func (lk *links) simulate(place placement) ([]float64, error) {
	logs := lk.logs
	n := len(logs)
	for r, log := range logs {
		if len(log) == 0 || log[len(log)-1].kind != evEnd {
			return nil, fmt.Errorf("core-sharing replay: the log of process %d does not end with the run's end", r)
		}
		for i := range log {
			ev := &log[i]
			if !finite(ev.dt) || !finite(ev.df) || !finite(ev.db) {
				return nil, fmt.Errorf("core-sharing replay: process %d entry %d adds %v s (%v fixed, %v bytes moved)", r, i, ev.dt, ev.df, ev.db)
			}
		}
	}
	s := &sim{links: lk, place: place, ps: make([]proc, n), end: make([]float64, n), arrivals: make([]int64, lk.n[linkColl]),
		rate: make([]float64, len(place.members)), computing: make([]int, len(place.members)), least: make([]float64, len(place.members))}
	for c := range s.given {
		s.given[c] = make([]bool, lk.n[linkRecord+c])
		s.waiter[c] = make([]int32, lk.n[linkRecord+c])
	}
	ps := s.ps
	for r := range ps {
		ps[r].group = place.group[r]
		s.load(r)
	}
	rate, computing, least := s.rate, s.computing, s.least
	// ready: some process may be at its meeting point.
	for ready := true; ; {
		// Processes whose entry's work is done reach its meeting point,
		// which may release others at once.
		for moved := ready; moved; {
			moved = false
			for r := range ps {
				if p := &ps[r]; p.state == running && p.fixed <= 0 && p.work <= 0 {
					if err := s.meet(r); err != nil {
						return nil, err
					}
					moved = true
				}
			}
		}
		// The first end of a fixed part, and per group the least work
		// left to a computing process.
		active := false
		firstFixed := math.Inf(1)
		clear(computing)
		for r := range ps {
			p := &ps[r]
			if p.state != running {
				continue
			}
			active = true
			if p.fixed > 0 {
				firstFixed = min(firstFixed, p.fixed)
				continue
			}
			if computing[p.group] == 0 || p.work < least[p.group] {
				least[p.group] = p.work
			}
			computing[p.group]++
		}
		if !active {
			// Sends waiting for a receive that was never posted (a
			// record the receiver took in a way the log cannot pair)
			// do not wait: the records already gave them their path.
			if s.acks == 0 {
				break
			}
			for r := range ps {
				if p := &ps[r]; p.state == blocked && logs[r][p.cur].kind == evAck {
					s.waiter[1][s.of[r][p.cur]] = 0
					s.acks--
					s.next(r)
				}
			}
			ready = true
			continue
		}
		// Advance to the first end of a fixed part or of a share of work
		// (each group's pace is the same for all its processes: the least
		// work ends first).
		step := firstFixed
		for g, k := range computing {
			rate[g] = 1
			if float64(k) > place.capacity[g] {
				rate[g] = place.capacity[g] / float64(k)
			}
			if k > 0 {
				step = min(step, least[g]/rate[g])
			}
		}
		s.now += step
		ready = false
		for r := range ps {
			p := &ps[r]
			if p.state != running {
				continue
			}
			if p.fixed > 0 {
				if p.fixed <= step {
					p.fixed = 0
				} else {
					p.fixed -= step
				}
			} else {
				if rt := rate[p.group]; p.work/rt <= step {
					p.work = 0
				} else {
					p.work -= step * rt
				}
			}
			ready = ready || p.fixed <= 0 && p.work <= 0
		}
	}
	for r := range ps {
		if ps[r].state != finished {
			return nil, waitsForever("core-sharing replay", r, ps[r].cur, logs[r][ps[r].cur])
		}
	}
	return s.end, nil
}

// finite reports whether x is a number and not infinite.
func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// States of a simulated process.
const (
	running  = iota // working through its current entry
	blocked         // at a meeting point that is not complete
	finished        // past its end
)

// sim is simulate's state.
type sim struct {
	*links
	place     placement
	now       float64
	ps        []proc
	end       []float64
	arrivals  []int64    // per collective (its link): members arrived at the meeting now open
	given     [2][]bool  // per record, per posted receive (its link): sent, posted, and not yet taken
	waiter    [2][]int32 // per record, per posted receive: 1 + the process blocked until it is given, or 0
	acks      int        // processes blocked until a receive is posted (evAck)
	rate      []float64  // per group: pace of computing processes
	computing []int      // per group: processes computing now
	least     []float64  // per group: the least work left to a process computing now
}

// proc is a simulated process.
type proc struct {
	fixed, work float64 // what is left of the current entry
	state       int
	group       int // its placement group
	cur         int // its current entry
}

// load starts process r's current entry.
func (s *sim) load(r int) {
	p := &s.ps[r]
	ev := &s.logs[r][p.cur]
	fixed := max(ev.df, 0)
	copyWork := min(fixed, s.place.copyCost*max(ev.db, 0))
	p.fixed = fixed - copyWork
	p.work = max(ev.dt-ev.df, 0) + copyWork
	p.state = running
}

// next moves process r past its meeting point.
func (s *sim) next(r int) {
	s.ps[r].cur++
	s.load(r)
}

// meet brings process r to its current entry's meeting point.
func (s *sim) meet(r int) error {
	i := s.ps[r].cur
	ev := &s.logs[r][i]
	l := s.of[r][i]
	switch ev.kind {
	case evEnd:
		s.ps[r].state, s.end[r] = finished, s.now
	case evColl:
		a := s.arrivals[l] + 1
		if a > ev.size {
			return fmt.Errorf("core-sharing replay: collective %d on communicator %v has more than its %d members", ev.seq, ev.comm, ev.size)
		}
		if a < ev.size {
			s.arrivals[l] = a
			s.ps[r].state = blocked
			return nil
		}
		// The last member: every member leaves.
		s.arrivals[l] = 0
		for q := range s.ps {
			if p := &s.ps[q]; p.state == blocked && s.logs[q][p.cur].kind == evColl && s.of[q][p.cur] == l {
				s.next(q)
			}
		}
		s.next(r)
	case evSend, evPost: // a record sent to peer, a receive from peer posted
		c := 0
		if ev.kind == evPost {
			c = 1
		}
		if q := s.waiter[c][l]; q > 0 {
			s.waiter[c][l] = 0
			if c == 1 {
				s.acks--
			}
			s.next(int(q - 1))
		} else {
			s.given[c][l] = true
		}
		s.next(r)
	case evRecv, evAck: // a record from peer awaited, a large send to peer waiting for its receive
		c := 0
		if ev.kind == evAck {
			c = 1
		}
		if s.given[c][l] {
			s.given[c][l] = false
			s.next(r)
		} else {
			s.waiter[c][l] = int32(r + 1)
			if c == 1 {
				s.acks++
			}
			s.ps[r].state = blocked
		}
	}
	return nil
}
