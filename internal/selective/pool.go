package selective

import (
	"cmp"
	"math"
	"slices"
)

// Pooled samples (a policy.Sharer's, on one host). Each process measures
// its kernels alone, and under eager a kernel is shared once one process
// has measured it to the tolerance. A kernel that every process calls once
// a run, the top of a recursion, then needs as many runs as the test needs
// samples: on cholesky3d n=4096 (8 processes on 2 cores) the 1024x1024
// trmm, syrk and gemm executed in the first configuration and again in the
// second, 1.0 s of eager's 1.8-1.9 s at 2^-1.
//
// So at the end of a selective run (replay) every process sends, with its
// log, the samples of its computation kernels not yet known anywhere that
// the run called fewer times than the test needs samples (poolOffer), and
// rank 0 pools each kernel's samples over the processes (in rank order, so
// every run pools alike). A pooled sample that passes the predictability
// test, from at least two processes, comes back to every process, which
// shares it as known everywhere (global, agreed on every axis: every
// process learned it at once) and charges its skipped calls from it
// (sample). Processes on one host run the same cores, so their samples of
// one signature are samples of one time; across hosts they are not pooled.
// Communication kernels are not: a collective's members wait for one
// another, and their first samples overstate the mean (see Kernel).

// poolLen is the number of float64s a pooled kernel takes: its hash, and
// its sample's count, mean and M2 (appendPooled, pooledAt).
const poolLen = 4

// appendPooled appends kernel h's sample s to dst, as poolLen float64s.
func appendPooled(dst []float64, h uint64, s Stat) []float64 {
	return append(dst, math.Float64frombits(h), float64(s.N), s.Mean, s.M2)
}

// pooledAt is the kernel and sample at index i of an appendPooled encoding.
func pooledAt(buf []float64, i int) (uint64, Stat) {
	return math.Float64bits(buf[i]), Stat{N: int64(buf[i+1]), Mean: buf[i+2], M2: buf[i+3]}
}

// maxPool is the most kernels a process offers to the pool at the end of a
// run: enough for a run's new signatures, small beside its log.
const maxPool = 4096

// pools reports whether this run's end pools samples (see above).
func (e *Engine) pools() bool { return e.tr.shares && e.place.oneHost && e.world.in.Size() > 1 }

// poolOffer appends to dst this process's kernels that the pool may settle,
// in hash order: computation kernels not yet shared that this run called
// fewer times than the test needs samples (nmin), so that their own
// samples would take several runs to gather. A kernel called more often
// gathers its own in the run, and keeps to them.
func (e *Engine) poolOffer(dst []float64) []float64 {
	tr := e.tr
	var sts []*kstat
	for _, st := range tr.stats {
		if st.N == 0 || st.key.IsComm() || st.calls == 0 || st.calls >= e.nmin {
			continue
		}
		if _, ok := tr.global[st.hash]; ok {
			continue
		}
		sts = append(sts, st)
	}
	slices.SortFunc(sts, func(a, b *kstat) int { return cmp.Compare(a.hash, b.hash) })
	if len(sts) > maxPool {
		sts = sts[:maxPool]
	}
	for _, st := range sts {
		dst = appendPooled(dst, st.hash, st.Stat)
	}
	return dst
}

// poolMerge is rank 0's pooling of every process's offer (offers[r]: process
// r's, poolOffer's encoding): each kernel's samples merged over the
// processes in rank order, kept when at least two processes offered it and
// the merged sample passes the test (predictable); encoded as poolOffer
// encodes, in hash order.
func poolMerge(offers [][]float64, predictable func(Stat) bool) []float64 {
	type pooled struct {
		s     Stat
		procs int
	}
	m := map[uint64]*pooled{}
	for _, off := range offers {
		for i := 0; i+poolLen <= len(off); i += poolLen {
			h, s := pooledAt(off, i)
			p := m[h]
			if p == nil {
				p = &pooled{}
				m[h] = p
			}
			p.s.Merge(s)
			p.procs++
		}
	}
	hs := make([]uint64, 0, len(m))
	for h, p := range m {
		if p.procs >= 2 && predictable(p.s) {
			hs = append(hs, h)
		}
	}
	slices.Sort(hs)
	out := make([]float64, 0, poolLen*len(hs))
	for _, h := range hs {
		out = appendPooled(out, h, m[h].s)
	}
	return out
}

// poolTake shares the pooled kernels rank 0 sent back (poolMerge's
// encoding) on this process: known everywhere and agreed on, charged from
// the pooled sample.
func (e *Engine) poolTake(pooled []float64) {
	tr := e.tr
	for i := 0; i+poolLen <= len(pooled); i += poolLen {
		h, s := pooledAt(pooled, i)
		if _, ok := tr.global[h]; ok {
			continue
		}
		tr.global[h] = s
		tr.order = append(tr.order, h)
		tr.sentOn[h] = slices.Clone(e.axes)
		tr.agreed[h] = true
		tr.markPooled(h)
	}
}

// markPooled notes that kernel h is charged from its pooled sample: on the
// track, and on every signature of it this process has met (kstat.pooled,
// read per skipped call; a signature met later takes it in Engine.stat).
func (tr *Track) markPooled(h uint64) {
	tr.pooled[h] = true
	for _, st := range tr.stats {
		if st.hash == h {
			st.pooled = true
		}
	}
}
