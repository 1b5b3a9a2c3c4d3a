package selective

import (
	"fmt"
	"math"
	"sort"

	"github.com/approxtune/approxtune/internal/mpi"
)

// The record is what every intercepted communication carries between
// processes, on the engine's duplicate communicator (docs/design.md §2):
// the sender's path and its parts, its decision, its mean for a
// point-to-point kernel, a policy.Sharer's shares and the path counts.

// Sizes of the internal record that travels with every communication.
const (
	recTotal   = iota // path time
	recComp           // its computation part
	recComm           // its communication part
	recExec           // 1 if the sender/process wants the kernel executed
	recMean           // the sender's mean for the kernel (point-to-point)
	recCounts         // number of (hash, count) pairs that follow the shares
	recShares         // number of shares (policy.Sharer)
	recClock          // the sender's mpi.Clock when it sent (point-to-point), or reached the collective
	recBusy           // 1 if the process executed a kernel since its previous records on this communicator (collectives)
	recPromise        // calls of the collective after this one that the process will execute whatever it learns (promise)
	recGen            // the sender's run number (Engine.gen): a record sent in an earlier run is not on this run's path
	recBytes          // a point-to-point message's size in bytes, as the program sent it (a skipped one travels empty)
	recBase
	shareLen  = 4   // hash, n, mean, m2
	maxShares = 4   // shares per message
	maxCounts = 128 // path counts per message (policy.PathCounter, counting runs)
)

// fill writes this process's record for a message on a communicator of shape
// sh: path, decision, shares and path counts.
func (e *Engine) fill(rec []float64, sh Shape, exec bool, mean float64) {
	rec[recTotal], rec[recComp], rec[recComm] = e.total, e.comp, e.comm
	rec[recExec] = 0
	if exec {
		rec[recExec] = 1
	}
	rec[recMean] = mean
	rec[recClock] = mpi.Clock()
	rec[recBusy] = 0
	rec[recPromise] = 0
	rec[recGen] = float64(e.gen)
	rec[recBytes] = 0 // StartSend sets a message's
	off := recBase
	rec[recShares] = 0
	if e.tr.shares {
		var buf [maxShares]uint64
		hs := e.tr.toShare(sh, buf[:0])
		for _, h := range hs {
			g := e.tr.global[h]
			rec[off], rec[off+1], rec[off+2], rec[off+3] = math.Float64frombits(h), float64(g.N), g.Mean, g.M2
			off += shareLen
		}
		rec[recShares] = float64(len(hs))
		off = recBase + maxShares*shareLen
	}
	rec[recCounts] = 0
	if e.counts {
		rec[recCounts] = float64(e.packCounts(rec[off : off+2*maxCounts]))
	}
}

// absorb takes in another process's record, received over a communicator of
// shape sh: its shares (Sharer) always, and its path (with its counts) if
// that is longer than this process's.
func (e *Engine) absorb(r []float64, sh Shape) {
	if e.tr.shares {
		for i := 0; i < int(r[recShares]); i++ {
			o := recBase + i*shareLen
			e.tr.learn(math.Float64bits(r[o]), Stat{N: int64(r[o+1]), Mean: r[o+2], M2: r[o+3]}, sh)
		}
	}
	if r[recTotal] <= e.total {
		return
	}
	e.total, e.comp, e.comm = r[recTotal], r[recComp], r[recComm]
	if e.counts {
		off := recBase
		if e.tr.shares {
			off += maxShares * shareLen
		}
		clear(e.pathCounts)
		for i := 0; i < int(r[recCounts]); i++ {
			e.pathCounts[math.Float64bits(r[off+2*i])] = r[off+2*i+1]
		}
	}
}

// packCounts writes up to maxCounts (hash, count) pairs, the largest counts
// first, and returns how many it wrote.
func (e *Engine) packCounts(dst []float64) int {
	hs := make([]uint64, 0, len(e.pathCounts))
	for h := range e.pathCounts {
		hs = append(hs, h)
	}
	if len(hs) > maxCounts {
		sort.Slice(hs, func(i, j int) bool { return e.pathCounts[hs[i]] > e.pathCounts[hs[j]] })
		hs = hs[:maxCounts]
	}
	for i, h := range hs {
		dst[2*i], dst[2*i+1] = math.Float64frombits(h), e.pathCounts[h]
	}
	return len(hs)
}

// criticalCounts broadcasts the counts of the process with the longest path
// and stores them as the track's alphas.
func (e *Engine) criticalCounts() error {
	w := e.world.c
	_, who, err := mpi.AllreduceMaxLoc(w, e.total)
	if err != nil {
		return fmt.Errorf("critical-path counts: %w", err)
	}
	n := []int64{int64(len(e.pathCounts))}
	if err := mpi.Bcast(w, n, who); err != nil {
		return fmt.Errorf("critical-path counts: %w", err)
	}
	buf := make([]float64, 2*n[0])
	if w.Rank() == who {
		i := 0
		for h, c := range e.pathCounts {
			buf[i], buf[i+1] = math.Float64frombits(h), c
			i += 2
		}
	}
	if err := mpi.Bcast(w, buf, who); err != nil {
		return fmt.Errorf("critical-path counts: %w", err)
	}
	alphas := make(map[uint64]float64, n[0])
	for i := 0; i < len(buf); i += 2 {
		alphas[math.Float64bits(buf[i])] = buf[i+1]
	}
	e.tr.setAlphas(alphas)
	return nil
}

// setAlphas makes alphas the track's critical-path counts, its kernels'
// included: those met before (a Rehearser that carried them from an
// earlier configuration) as well as those met next (stat).
func (tr *Track) setAlphas(alphas map[uint64]float64) {
	tr.alphas = alphas
	for _, st := range tr.stats {
		st.alpha = alphas[st.hash]
	}
}
