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
// at most: once both sides met a record's or a posted receive's point, an
// entry that names it again (which only logs that number two messages
// alike could hold) meets a new one. Every member of a collective meets
// its point, and the replay fails on one with more members than its size.

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
// It visits the logs side by side, entry i of each in turn: the two entries
// of a record are logged about as far into their logs, so the records
// waiting for their partner in the table are few (some 1,200 of 24,000 in
// the logs of cholesky2d n=4096, b=32, 1x4) and the table stays in the cache.
func linkLogs(logs [][]event) *links {
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
	t := newPointTable(1024)
	for i := range longest {
		for r, log := range logs {
			if i >= len(log) {
				continue
			}
			ev := &log[i]
			class, gives, ok := classOf(ev.kind)
			if !ok {
				lk.of[r][i] = noLink
				continue
			}
			k := pointKey{class: int64(class), c: ev.comm, tag: ev.tag, seq: ev.seq}
			switch {
			case class == linkColl:
			case gives:
				k.src, k.dst = int64(r), ev.peer
			default:
				k.src, k.dst = ev.peer, int64(r)
			}
			lk.of[r][i] = t.link(&k, gives, &lk.n[class])
		}
	}
	return lk
}

// pointTable gives each meeting point its link: a hash table (open
// addressing, linear probing, at most half full) of the collectives seen
// and of the records and posted receives seen on one side only.
type pointTable struct {
	slots []pointSlot
	used  int
}

// pointSlot is a slot of a pointTable.
type pointSlot struct {
	k     pointKey
	hash  uint32 // k.hash's low bits
	link  int32  // 1 + the point's link; 0: an empty slot
	gives bool   // a record or a posted receive: its entry seen gives it
}

// newPointTable returns a table of n slots (a power of 2).
func newPointTable(n int) *pointTable { return &pointTable{slots: make([]pointSlot, n)} }

// link returns the link of k, met by an entry that gives it (a send, a
// posted receive) or takes it, giving it the next of its class (*next) if
// it has none. A record or a posted receive then leaves the table once both
// sides met it; a second entry on the same side shares its link.
func (t *pointTable) link(k *pointKey, gives bool, next *int32) int32 {
	h := k.hash()
	mask := uint32(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.link == 0 {
			l := *next
			*next++
			*s = pointSlot{k: *k, hash: h, link: l + 1, gives: gives}
			t.used++
			if 2*t.used > len(t.slots) {
				t.grow()
			}
			return l
		}
		if s.hash == h && s.k == *k {
			l := s.link - 1
			if k.class != linkColl && s.gives != gives {
				t.remove(i)
			}
			return l
		}
	}
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
