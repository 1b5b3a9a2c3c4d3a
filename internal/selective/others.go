package selective

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/sweep"
)

// othersTag is the tag of the messages Others gathers.
const othersTag = 7403

// Others gathers, on world rank 0, the computation kernels of track tr
// that rank 0 has no samples of (it may have skipped them, predicted from
// the grid's sample or a model), each as the rank with the most samples of
// it measured it (sweep.KernelsEvent.Others): a kernel model reads what
// rank 0 never ran (on a 2x2 grid at n=1024, b=256, rank 0 runs no gemm,
// and a user's model of gemm lacked that size). Nil on the other ranks.
// It is collective over the world: every rank calls it after the run's
// End.
func (e *Engine) Others(tr *Track) ([]sweep.OtherKernel, error) {
	// The engine's own duplicate of the world: a program's receive left
	// pending with any tag (the preload library runs this at its
	// MPI_Finalize) cannot take these messages.
	w := e.world.in
	size := w.Size()
	var mine []byte
	if w.Rank() != 0 {
		own := e.report(tr, func(st *kstat) bool { return !st.key.IsComm() && st.N > 0 })
		if len(own) > 0 {
			b, err := json.Marshal(own)
			if err != nil {
				return nil, fmt.Errorf("other ranks' kernels: %w", err)
			}
			mine = b
		}
	}
	lens := make([]int64, size)
	if err := mpi.Gather(w, []int64{int64(len(mine))}, lens, 0); err != nil {
		return nil, fmt.Errorf("other ranks' kernels: %w", err)
	}
	if w.Rank() != 0 {
		if len(mine) > 0 {
			if err := mpi.Send(w, mine, 0, othersTag); err != nil {
				return nil, fmt.Errorf("other ranks' kernels: %w", err)
			}
		}
		return nil, nil
	}
	have := map[string]bool{}
	for _, st := range tr.stats {
		if st.N > 0 {
			have[st.key.String()] = true
		}
	}
	best := map[string]sweep.OtherKernel{}
	for p := 1; p < size; p++ {
		if lens[p] == 0 {
			continue
		}
		b := make([]byte, lens[p])
		if _, err := mpi.Recv(w, b, p, othersTag); err != nil {
			return nil, fmt.Errorf("rank %d's kernels: %w", p, err)
		}
		var ks []sweep.KernelStat
		if err := json.Unmarshal(b, &ks); err != nil {
			return nil, fmt.Errorf("rank %d's kernels: %w", p, err)
		}
		for _, k := range ks {
			if have[k.Key] {
				continue
			}
			if o, ok := best[k.Key]; !ok || k.Count > o.Count {
				best[k.Key] = sweep.OtherKernel{KernelStat: k, Rank: p}
			}
		}
	}
	out := make([]sweep.OtherKernel, 0, len(best))
	for _, o := range best {
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}
