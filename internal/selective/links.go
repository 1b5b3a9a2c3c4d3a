package selective

// Matching the meeting points of the logs. The replay (replayPaths), the
// simulation (simulate) and chargePromised all meet the entries of several
// processes at one point: the members of a collective, a record sent and its
// receive, a receive posted and the large send that waits for it. linkLogs
// names every such point once, before any of them runs, by a small number
// given to every entry that meets there (its link), so that they keep their
// state in slices indexed by link rather than in maps keyed by what the
// entries logged: rank 0 at End replays some 100,000 entries (cholesky2d
// n=4096 at b=32 on 4 ranks), where hashing each message's numbers three to
// five times over cost more than the rest of the replay.
//
// Entries meet where they name the same point: a collective by its
// communicator and number; a record by its communicator, sender, receiver,
// tag and number (the sender logs the receiver as its peer, the receiver
// the sender); a posted receive likewise, with the receiver in the sender's
// place (the large send waits for its receiver's post). A record is sent
// and received once, a receive posted once and waited for by one large send
// at most: an entry of a record or a posted receive pairs with one of the
// other side that names the same point and is not paired yet (of two such,
// which only logs that number two messages alike could hold, the first
// linkLogs met), and the pair shares a link. Every member of a collective
// meets its point, and the replay fails on one with more members than its
// size.

// Classes of meeting points; each numbers its links from 0.
const (
	linkColl   = iota // a collective: evColl
	linkRecord        // a record: evSend gives it, evRecv takes it
	linkPost          // a posted receive: evPost gives it, evAck takes it
	linkClasses
)

// noLink is the link of an entry that meets no one (evEnd).
const noLink = -1

// links is the matching of a set of logs.
type links struct {
	logs [][]event
	of   [][]int32          // per process, per entry: its meeting point's link in its class, or noLink
	n    [linkClasses]int32 // per class: links given
}

// pointKey names a meeting point: its class, its communicator, for a record
// its sender and receiver (for a posted receive the receiver and the
// sender; 0 for a collective), its tag and its number.
type pointKey struct {
	class    int64
	c        commID
	src, dst int64
	tag, seq int64
}

// classOf returns the class of an entry of kind k and whether it gives the
// point (its process is the key's src) rather than takes it; ok is false for
// an entry that meets no one.
func classOf(k int) (class int, gives, ok bool) {
	switch k {
	case evColl:
		return linkColl, false, true
	case evSend:
		return linkRecord, true, true
	case evRecv:
		return linkRecord, false, true
	case evPost:
		return linkPost, true, true
	case evAck:
		return linkPost, false, true
	}
	return 0, false, false
}

// linkLogs matches the meeting points of logs (one log per world rank).
func linkLogs(logs [][]event) *links {
	return linkLogsWith(logs, maxWaiting, len(logs) <= maxChannelWorld)
}

// linkLogsWith is linkLogs with queues of at most wait entries, and without
// channels (every record and posted receive in the table) unless channels.
func linkLogsWith(logs [][]event, wait int, channels bool) *links {
	total, longest := 0, 0
	for _, log := range logs {
		total += len(log)
		longest = max(longest, len(log))
	}
	lk := &links{logs: logs, of: make([][]int32, len(logs))}
	flat := make([]int32, total)
	for r, log := range logs {
		lk.of[r], flat = flat[:len(log):len(log)], flat[len(log):]
	}
	m := &matcher{n: len(logs), wait: wait, table: pointTable{slots: make([]pointSlot, 64)}}
	if channels {
		m.chans = make([]int32, 2*len(logs)*len(logs))
	}
	// Side by side, entry i of each log in turn: a record's two entries
	// are logged about as far into their logs, so few wait for their
	// partner (at most 127 per channel, 1,200 in all, of cholesky2d's
	// 24,000 records at n=4096, b=32, 1x4).
	for i := range longest {
		for r, log := range logs {
			if i < len(log) {
				lk.of[r][i] = m.link(r, &log[i], &lk.n)
			}
		}
	}
	return lk
}

// matcher gives links to entries as linkLogs meets them. The entries of a
// record or a posted receive mostly meet their partner in the order they
// were logged, per channel (class, sender, receiver): they wait for it in
// the channel's queues, and the partner looks there first (in
// cholesky2d's logs always at the front), hashing nothing. A queue past
// maxWaiting entries (receives posted for small messages, which no send
// waits for) moves its oldest to the table, where a partner that finds
// nothing in its channel looks next. The entries of a world too large for
// a channel per pair of processes (maxChannelWorld), or naming a process
// outside the world, wait in the table; collectives are there for good.
type matcher struct {
	n       int
	wait    int       // the most entries a queue holds: maxWaiting
	chans   []int32   // per class (record, post), sender and receiver: 1 + its index in queues, or 0
	queues  []channel // the channels met so far
	table   pointTable
	spilled int // entries of records and posted receives in the table
}

// maxWaiting is the most entries a channel's queue holds.
const maxWaiting = 128

// maxChannelWorld is the largest world that gets a channel per pair of
// processes (2·n² numbers).
const maxChannelWorld = 256

// channel is a channel's entries that wait for their partner, per side:
// those that give their point, those that take it.
type channel [2]queue

// queue is a channel's entries waiting on one side, oldest first.
type queue struct {
	items []waiting
	head  int // items before it have left
}

// waiting is an entry that waits for its partner: what names its point in
// its channel, and the point's link.
type waiting struct {
	c        commID
	tag, seq int64
	link     int32
}

// link returns the link of the meeting point of entry ev of process r's
// log, giving the point the next of its class (next) if it has none yet,
// or noLink.
func (m *matcher) link(r int, ev *event, next *[linkClasses]int32) int32 {
	class, gives, ok := classOf(ev.kind)
	if !ok {
		return noLink
	}
	if class == linkColl {
		k := pointKey{class: linkColl, c: ev.comm, seq: ev.seq}
		return m.table.meet(&k, &next[linkColl])
	}
	src, dst, side := int64(r), ev.peer, 0
	if !gives {
		src, dst, side = dst, src, 1
	}
	ch := m.channel(class, src, dst)
	if ch != nil {
		if l, ok := ch[1-side].take(ev.comm, ev.tag, ev.seq); ok {
			return l
		}
	}
	k := pointKey{class: int64(class), c: ev.comm, src: src, dst: dst, tag: ev.tag, seq: ev.seq}
	if m.spilled > 0 {
		if l, ok := m.table.take(&k, gives); ok {
			m.spilled--
			return l
		}
	}
	l := next[class]
	next[class]++
	if ch == nil {
		m.table.put(&k, gives, l)
		m.spilled++
		return l
	}
	if old, out := ch[side].push(waiting{c: ev.comm, tag: ev.tag, seq: ev.seq, link: l}, m.wait); out {
		ko := pointKey{class: int64(class), c: old.c, src: src, dst: dst, tag: old.tag, seq: old.seq}
		m.table.put(&ko, gives, old.link)
		m.spilled++
	}
	return l
}

// channel returns the channel of class from src to dst, or nil if it has
// none.
func (m *matcher) channel(class int, src, dst int64) *channel {
	n := int64(m.n)
	if m.chans == nil || src < 0 || src >= n || dst < 0 || dst >= n {
		return nil
	}
	i := (int64(class-linkRecord)*n+src)*n + dst
	if m.chans[i] == 0 {
		m.queues = append(m.queues, channel{})
		m.chans[i] = int32(len(m.queues))
	}
	return &m.queues[m.chans[i]-1]
}

// take removes the oldest entry waiting in q that names (c, tag, seq) and
// returns its link.
func (q *queue) take(c commID, tag, seq int64) (int32, bool) {
	live := q.items[q.head:]
	for j := range live {
		if w := &live[j]; w.c == c && w.tag == tag && w.seq == seq {
			l := w.link
			copy(live[1:j+1], live[:j])
			q.head++
			return l, true
		}
	}
	return 0, false
}

// push adds w to q; if q then holds more than wait entries, it returns its
// oldest, which leaves.
func (q *queue) push(w waiting, wait int) (waiting, bool) {
	if q.head > 0 && len(q.items) == cap(q.items) {
		q.items = q.items[:copy(q.items, q.items[q.head:])]
		q.head = 0
	}
	q.items = append(q.items, w)
	if len(q.items)-q.head <= wait {
		return waiting{}, false
	}
	q.head++
	return q.items[q.head-1], true
}

// pointTable is a hash table of meeting points (open addressing, linear
// probing, at most half full): collectives, and entries of records and
// posted receives that wait for their partner.
type pointTable struct {
	slots []pointSlot
	used  int
}

// pointSlot is a slot of a pointTable.
type pointSlot struct {
	k     pointKey
	hash  uint32 // k.hash()
	link  int32  // 1 + the point's link; 0: an empty slot
	gives bool   // a record's or posted receive's entry: it gives the point
}

// meet returns the link of collective k, giving it the next (*next) if it
// has none.
func (t *pointTable) meet(k *pointKey, next *int32) int32 {
	h := k.hash()
	mask := uint32(len(t.slots) - 1)
	for i := h & mask; t.slots[i].link != 0; i = (i + 1) & mask {
		if s := &t.slots[i]; s.hash == h && s.k == *k {
			return s.link - 1
		}
	}
	l := *next
	*next++
	t.put(k, false, l)
	return l
}

// take removes an entry that waits for one that gives (or takes, as gives
// says) point k, and returns its link.
func (t *pointTable) take(k *pointKey, gives bool) (int32, bool) {
	h := k.hash()
	mask := uint32(len(t.slots) - 1)
	for i := h & mask; t.slots[i].link != 0; i = (i + 1) & mask {
		if s := &t.slots[i]; s.hash == h && s.gives != gives && s.k == *k {
			l := s.link - 1
			t.remove(i)
			return l, true
		}
	}
	return 0, false
}

// put adds k with link l, for an entry that gives it or takes it.
func (t *pointTable) put(k *pointKey, gives bool, l int32) {
	if 2*(t.used+1) > len(t.slots) {
		t.grow()
	}
	h := k.hash()
	mask := uint32(len(t.slots) - 1)
	i := h & mask
	for t.slots[i].link != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = pointSlot{k: *k, hash: h, link: l + 1, gives: gives}
	t.used++
}

// remove empties slot i, moving back the slots after it that probing would
// no longer reach.
func (t *pointTable) remove(i uint32) {
	mask := uint32(len(t.slots) - 1)
	t.used--
	for j := i; ; {
		j = (j + 1) & mask
		s := &t.slots[j]
		if s.link == 0 {
			t.slots[i].link = 0
			return
		}
		// s may fill slot i if i lies between its home and j.
		if (j-s.hash)&mask >= (j-i)&mask {
			t.slots[i] = *s
			i = j
		}
	}
}

// grow doubles the slots.
func (t *pointTable) grow() {
	old := t.slots
	t.slots = make([]pointSlot, 2*len(old))
	mask := uint32(len(t.slots) - 1)
	for _, s := range old {
		if s.link == 0 {
			continue
		}
		i := s.hash & mask
		for t.slots[i].link != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
	}
}

// hash mixes every number of k.
func (k *pointKey) hash() uint32 {
	h := uint64(k.class)*0x9e3779b97f4a7c15 + uint64(k.c.id)*0xc2b2ae3d27d4eb4f + uint64(k.c.low)*0x165667b19e3779f9 +
		uint64(k.src)*0xd6e8feb86659fd93 + uint64(k.dst)*0xa0761d6478bd642f + uint64(k.tag)*0xe7037ed1a0b428db +
		uint64(k.seq)*0x8ebc6af09c88c6e3
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return uint32(h)
}
