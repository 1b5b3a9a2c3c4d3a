package selective

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
)

// A snapshot is what a policy.Carrier's track keeps from one configuration
// to the next, written down: when each configuration is a launch of its own
// (a user's program under the preload library), the track's statistics
// travel from one launch to the next in it. Settled collectives are left
// out: they name one launch's communicators.
type snapshot struct {
	Stats  []statEntry   `json:"stats"`
	Global []globalEntry `json:"global"`
}

type statEntry struct {
	Key   Key     `json:"key"`
	Stat  Stat    `json:"stat"`
	Alpha float64 `json:"alpha,omitempty"`
}

type globalEntry struct {
	Hash   uint64  `json:"hash"`
	Stat   Stat    `json:"stat"`
	SentOn []Shape `json:"sent_on,omitempty"`
	Agreed bool    `json:"agreed,omitempty"`
	Pooled bool    `json:"pooled,omitempty"`
}

// Snapshot writes down what the track carries to the next configuration
// (nothing for a track that is no policy.Carrier).
func (tr *Track) Snapshot() ([]byte, error) {
	var s snapshot
	if tr.carries {
		for _, st := range tr.stats {
			s.Stats = append(s.Stats, statEntry{Key: st.key, Stat: st.Stat, Alpha: st.alpha})
		}
		slices.SortFunc(s.Stats, func(a, b statEntry) int { return compareKeys(a.Key, b.Key) })
		for _, h := range tr.order {
			s.Global = append(s.Global, globalEntry{Hash: h, Stat: tr.global[h], SentOn: tr.sentOn[h], Agreed: tr.agreed[h], Pooled: tr.pooled[h]})
		}
	}
	return json.Marshal(s)
}

// Restore takes in a snapshot another track of the same policy wrote, as if
// this track had run that track's configurations. It is for a fresh track.
func (tr *Track) Restore(data []byte) error {
	var s snapshot
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("track snapshot: %w", err)
	}
	if !tr.carries {
		return nil
	}
	for _, e := range s.Stats {
		tr.stats[e.Key] = &kstat{key: e.Key, hash: e.Key.hash(), Stat: e.Stat, alpha: e.Alpha}
	}
	for _, g := range s.Global {
		if _, ok := tr.global[g.Hash]; !ok {
			tr.order = append(tr.order, g.Hash)
		}
		tr.global[g.Hash] = g.Stat
		tr.sentOn[g.Hash] = g.SentOn
		if g.Agreed {
			tr.agreed[g.Hash] = true
		}
		if g.Pooled {
			tr.markPooled(g.Hash)
		}
	}
	return nil
}

// compareKeys orders keys for a snapshot that reads the same every time.
func compareKeys(a, b Key) int {
	for _, d := range []int64{int64(a.Op) - int64(b.Op), int64(a.Flags) - int64(b.Flags), int64(a.M) - int64(b.M),
		int64(a.N) - int64(b.N), int64(a.K) - int64(b.K), int64(a.Shape.Size) - int64(b.Shape.Size),
		int64(a.Shape.Hash) - int64(b.Shape.Hash), int64(a.Partner) - int64(b.Partner)} {
		if d != 0 {
			if d < 0 {
				return -1
			}
			return 1
		}
	}
	return 0
}

// countsFile is a counting run's critical-path counts, written down.
type countsFile struct {
	Counts []countEntry `json:"counts"`
}

type countEntry struct {
	Hash  uint64  `json:"hash"`
	Count float64 `json:"count"`
}

// Counts writes down the critical-path counts the track's last counting run
// (mode Counting, policy.Rehearser) left: when the counting run and the
// selective run are launches of their own (a user's program under the
// preload library), they travel from the one to the other in it. It is an
// error when the track has none.
func (tr *Track) Counts() ([]byte, error) {
	if tr.alphas == nil {
		return nil, fmt.Errorf("critical-path counts: the track has had no counting run")
	}
	c := countsFile{Counts: make([]countEntry, 0, len(tr.alphas))}
	for h, n := range tr.alphas {
		c.Counts = append(c.Counts, countEntry{Hash: h, Count: n})
	}
	slices.SortFunc(c.Counts, func(a, b countEntry) int { return cmp.Compare(a.Hash, b.Hash) })
	return json.Marshal(c)
}

// SetCounts takes in the critical-path counts Counts wrote, as if this
// track had made that counting run: the selective run that follows reads
// them as its kernels' CriticalCount. Call it before the run begins.
func (tr *Track) SetCounts(data []byte) error {
	var c countsFile
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("critical-path counts: %w", err)
	}
	if c.Counts == nil {
		return fmt.Errorf("critical-path counts: no \"counts\" list")
	}
	alphas := make(map[uint64]float64, len(c.Counts))
	for _, e := range c.Counts {
		if !(e.Count >= 0) {
			return fmt.Errorf("critical-path counts: kernel %x has count %v", e.Hash, e.Count)
		}
		alphas[e.Hash] = e.Count
	}
	tr.setAlphas(alphas)
	return nil
}
