package selective

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The replay, the simulation and chargePromised on matched logs give what
// the maps they used before gave (replay_ref_test.go), to the bit: on the
// logs of real runs (testdata/replay) and on generated ones, some of them
// corrupted (records and collectives that never complete). Logs that name a
// record twice, which the maps matched in the order they met its entries,
// must still replay to an end or an error.
func TestReplayMatchesReference(t *testing.T) {
	for _, name := range replayDumps {
		logs, place := loadDump(t, name)
		for _, sameClock := range []bool{true, false} {
			compareWithReference(t, fmt.Sprintf("%s, one clock %v", name, sameClock), logs, place, sameClock)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	errs := 0
	const cases = 400
	for c := range cases {
		logs, place := genLogs(rng)
		if c%4 == 3 {
			corrupt(rng, logs)
		}
		if compareWithReference(t, fmt.Sprintf("generated case %d", c), logs, place, c%2 == 0) {
			errs++
		}
	}
	// The generated runs must mostly complete, and some must not.
	if errs == 0 || errs > cases/4 {
		t.Errorf("%d of %d generated cases failed to replay, want some and at most a quarter", errs, cases)
	}
	for c := range 100 {
		logs, place := genLogs(rng)
		r := rng.IntN(len(logs))
		i := rng.IntN(len(logs[r]) - 1)
		logs[r] = slices.Insert(logs[r], i, logs[r][i])
		if paths, err := replayPaths(logs); err == nil && len(paths) != len(logs) {
			t.Errorf("entry logged twice, case %d: %d paths for %d processes", c, len(paths), len(logs))
		}
		if ends, err := simulate(logs, place); err == nil && len(ends) != len(logs) {
			t.Errorf("entry logged twice, case %d: %d ends for %d processes", c, len(ends), len(logs))
		}
	}
}

// compareWithReference runs chargePromised, replayPaths and simulate and
// their references on copies of logs and reports differences; it returns
// whether the replay or the simulation failed.
func compareWithReference(t *testing.T, name string, logs [][]event, place placement, sameClock bool) (failed bool) {
	t.Helper()
	got, want := copyLogs(logs), copyLogs(logs)
	chargePromised(got, sameClock)
	refChargePromised(want, sameClock)
	for r := range want {
		for i := range want[r] {
			if !sameEvent(got[r][i], want[r][i]) {
				t.Fatalf("%s: chargePromised: process %d entry %d is %+v, want %+v", name, r, i, got[r][i], want[r][i])
			}
		}
	}
	wpaths, werr := refReplayPaths(want)
	wends, wserr := refSimulate(want, place)
	// With the queues and channels linkLogs gives them, with queues of
	// 3 entries or none (the rest in the table), and without channels.
	for _, lk := range []*links{linkLogs(got), linkLogsWith(got, 3, true), linkLogsWith(got, 0, true), linkLogsWith(got, maxWaiting, false)} {
		if compareLinked(t, name, lk, place, wpaths, werr, wends, wserr) {
			failed = true
		}
	}
	return failed
}

// compareLinked compares the replay and the simulation on lk with what the
// reference gave, and returns whether they failed.
func compareLinked(t *testing.T, name string, lk *links, place placement, wpaths []pathVal, werr error, wends []float64, wserr error) bool {
	t.Helper()
	paths, err := lk.replayPaths()
	if fmt.Sprint(err) != fmt.Sprint(werr) {
		t.Fatalf("%s: replay: error %v, want %v", name, err, werr)
	}
	for r := range wpaths {
		g, w := paths[r], wpaths[r]
		if !sameBits(g.total, w.total) || !sameBits(g.comp, w.comp) || !sameBits(g.comm, w.comm) || !sameBits(g.v, w.v) {
			t.Fatalf("%s: replay: process %d path %+v, want %+v", name, r, g, w)
		}
	}
	ends, serr := lk.simulate(place)
	if fmt.Sprint(serr) != fmt.Sprint(wserr) {
		t.Fatalf("%s: simulate: error %v, want %v", name, serr, wserr)
	}
	for r := range wends {
		if !sameBits(ends[r], wends[r]) {
			t.Fatalf("%s: simulate: process %d ends at %v, want %v", name, r, ends[r], wends[r])
		}
	}
	return err != nil || serr != nil
}

func sameBits(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

func sameEvent(a, b event) bool {
	return a.kind == b.kind && sameBits(a.dt, b.dt) && sameBits(a.dc, b.dc) && sameBits(a.dm, b.dm) && sameBits(a.df, b.df) &&
		sameBits(a.dv, b.dv) && sameBits(a.db, b.db) && a.comm == b.comm && a.size == b.size && a.seq == b.seq &&
		a.peer == b.peer && a.tag == b.tag && sameBits(a.in, b.in) && sameBits(a.out, b.out)
}

// genLogs makes the logs of a run that completes: processes that compute,
// meet in collectives (some on promises), and exchange records, posting
// receives ahead and waiting for them in any order, some of them large
// sends that wait for their receive (some never posted), on a random
// placement.
func genLogs(rng *rand.Rand) ([][]event, placement) {
	n := 2 + rng.IntN(7)
	logs := make([][]event, n)
	// Time to add to each process's next entry.
	pending := make([]event, n)
	work := func(r int) {
		p := &pending[r]
		d := 0.0
		if rng.IntN(8) != 0 {
			d = float64(1+rng.IntN(50)) * 1e-6 // repeated values: ties
		}
		c := d * rng.Float64()
		f := (d - c) * rng.Float64()
		if rng.IntN(3) == 0 {
			f = 0
		}
		p.dt += d
		p.dc += c
		p.dm += d - c
		p.df += f
		p.dv += d * d
		p.db += float64(rng.IntN(1 << 16))
	}
	log := func(r int, ev event) {
		p := pending[r]
		ev.dt, ev.dc, ev.dm, ev.df, ev.dv, ev.db = p.dt, p.dc, p.dm, p.df, p.dv, p.db
		pending[r] = event{}
		logs[r] = append(logs[r], ev)
	}
	// Communicators: the world and a few subsets.
	type comm struct {
		id      commID
		members []int
		colls   int64
	}
	comms := []*comm{{id: commID{0, 0}, members: rng.Perm(n)}}
	for k := range 1 + rng.IntN(3) {
		m := rng.Perm(n)[:2+rng.IntN(n-1)]
		low := n
		for _, r := range m {
			low = min(low, r)
		}
		comms = append(comms, &comm{id: commID{int64(k + 1), int64(low)}, members: m})
	}
	type msg struct {
		c                       commID
		src, dst                int
		tag, seq                int64
		large                   bool
		posted, received, acked bool
	}
	var msgs []*msg
	type stream struct {
		c        commID
		src, dst int
		tag      int64
	}
	sends, posts := map[stream]int64{}, map[stream]int64{}
	clock := 1.0
	steps := 20 + rng.IntN(300)
	for range steps {
		switch op := rng.IntN(20); {
		case op < 6:
			work(rng.IntN(n))
		case op < 7: // a collective
			c := comms[rng.IntN(len(comms))]
			promised := rng.IntN(3) == 0
			for _, r := range c.members {
				work(r)
				ev := event{kind: evColl, comm: c.id, size: int64(len(c.members)), seq: c.colls}
				if promised {
					ev.in = clock + rng.Float64()*1e-4
					ev.out = ev.in + rng.Float64()*1e-4
				}
				log(r, ev)
			}
			c.colls++
			clock += 1e-3
		case op < 13: // a receive posted, or a record sent, for a new or an earlier message
			c := comms[rng.IntN(len(comms))]
			src, dst := c.members[rng.IntN(len(c.members))], c.members[rng.IntN(len(c.members))]
			if src == dst {
				continue
			}
			s := stream{c.id, src, dst, int64(rng.IntN(3))}
			if rng.IntN(4) == 0 {
				s.tag += elideTag
			}
			if rng.IntN(2) == 0 {
				work(dst)
				log(dst, event{kind: evPost, comm: s.c, peer: int64(src), tag: s.tag, seq: posts[s]})
				posts[s]++
			} else {
				work(src)
				m := &msg{c: s.c, src: src, dst: dst, tag: s.tag, seq: sends[s], large: rng.IntN(3) == 0}
				sends[s]++
				log(src, event{kind: evSend, comm: s.c, peer: int64(dst), tag: s.tag, seq: m.seq})
				msgs = append(msgs, m)
			}
		default: // a process waits for a record sent and posted, or a large send for its receive
			for _, m := range msgs {
				m.posted = posts[stream{m.c, m.src, m.dst, m.tag}] > m.seq
			}
			var ready []*msg
			for _, m := range msgs {
				if (!m.received && m.posted) || (m.large && !m.acked && (m.posted || rng.IntN(20) == 0)) {
					ready = append(ready, m)
				}
			}
			if len(ready) == 0 {
				continue
			}
			m := ready[rng.IntN(len(ready))]
			if !m.received && m.posted && (!m.large || m.acked || rng.IntN(2) == 0) {
				work(m.dst)
				log(m.dst, event{kind: evRecv, comm: m.c, peer: int64(m.src), tag: m.tag, seq: m.seq})
				m.received = true
			} else {
				work(m.src)
				log(m.src, event{kind: evAck, comm: m.c, peer: int64(m.dst), tag: m.tag, seq: m.seq})
				m.acked = true
			}
		}
	}
	for r := range logs {
		work(r)
		log(r, event{kind: evEnd})
	}
	groups := 1 + rng.IntN(2)
	place := placement{group: make([]int, n), capacity: make([]float64, groups), members: make([]int, groups), oneHost: true}
	for r := range n {
		place.group[r] = r % groups
		place.members[r%groups]++
	}
	for g := range place.capacity {
		place.capacity[g] = float64(1 + rng.IntN(place.members[g]))
	}
	if rng.IntN(2) == 0 {
		place.copyCost = CopyCost
	}
	return logs, place
}

// corrupt spoils one entry of logs: it drops it, gives it a number no other
// entry has or a peer outside the world, or logs it twice if it is a
// collective or the end.
func corrupt(rng *rand.Rand, logs [][]event) {
	r := rng.IntN(len(logs))
	log := logs[r]
	if len(log) < 2 {
		return
	}
	i := rng.IntN(len(log) - 1)
	switch k := log[i].kind; {
	case rng.IntN(3) == 0 && (k == evColl || k == evEnd):
		logs[r] = slices.Insert(log, i, log[i])
	case rng.IntN(2) == 0:
		logs[r] = slices.Delete(log, i, i+1)
	case rng.IntN(3) == 0 && k != evColl:
		log[i].peer = int64(len(logs) + rng.IntN(2)*(maxChannelWorld+1))
	default:
		log[i].seq += 1 << 30
	}
}
