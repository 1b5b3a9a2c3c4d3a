package selective

import (
	"math"
	"strings"
	"testing"

	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/mpitest"
	"github.com/approxtune/approxtune/internal/selective/policy"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// A collective gives every member the longest path of its members; time
// logged after it is added on top.
func TestReplayCollective(t *testing.T) {
	row := commID{id: 3, low: 0}
	logs := [][]event{
		{{kind: evColl, dt: 1, dc: 1, dv: 0.1, comm: row, size: 3}, {kind: evEnd, dt: 0.5, dm: 0.5, dv: 0.05}},
		{{kind: evColl, dt: 4, dc: 3, dm: 1, dv: 0.3, comm: row, size: 3}, {kind: evEnd, dt: 0.25, dc: 0.25}},
		{{kind: evColl, dt: 2, dc: 2, dv: 0.2, comm: row, size: 3}, {kind: evEnd}},
	}
	p, err := replayPaths(logs)
	if err != nil {
		t.Fatal(err)
	}
	// Every path leaves the collective with rank 1's, and its variance.
	want := []pathVal{{4.5, 3, 1.5, 0.35}, {4.25, 3.25, 1, 0.3}, {4, 3, 1, 0.3}}
	for r := range want {
		if !near(p[r].total, want[r].total) || !near(p[r].comp, want[r].comp) || !near(p[r].comm, want[r].comm) || !near(p[r].v, want[r].v) {
			t.Errorf("rank %d: %+v, want %+v", r, p[r], want[r])
		}
	}
}

// Records match in posting order, as MPI matches them, even when the
// receives complete in the other order; a record only raises a path.
func TestReplayRecordsMatchInPostingOrder(t *testing.T) {
	w := commID{id: 0, low: 0}
	logs := [][]event{
		// rank 0 sends twice to rank 1 with tag 9: at path 1, then at path 5.
		{{kind: evSend, dt: 1, comm: w, peer: 1, tag: 9}, {kind: evSend, dt: 4, comm: w, peer: 1, tag: 9, seq: 1}, {kind: evEnd}},
		// rank 1 posted receive 0 then receive 1, and waits for receive 1 first.
		{{kind: evRecv, dt: 2, comm: w, peer: 0, tag: 9, seq: 1}, {kind: evRecv, dt: 1, comm: w, peer: 0, tag: 9, seq: 0}, {kind: evEnd, dt: 1}},
	}
	p, err := replayPaths(logs)
	if err != nil {
		t.Fatal(err)
	}
	// rank 1: 2 -> max(2, 5) = 5 -> 6, max(6, 1) = 6 -> 7.
	if !near(p[0].total, 5) || !near(p[1].total, 7) {
		t.Errorf("paths %v, %v, want 5 and 7", p[0].total, p[1].total)
	}
}

// Logs of a run that could not have completed are an error naming the
// process that waits, not a hang or a made-up path.
func TestReplayReportsStall(t *testing.T) {
	c := commID{id: 1, low: 0}
	logs := [][]event{
		{{kind: evColl, dt: 1, comm: c, size: 2}, {kind: evEnd}},
		{{kind: evRecv, dt: 1, comm: c, peer: 0, tag: 1}, {kind: evEnd}},
	}
	_, err := replayPaths(logs)
	if err == nil || !strings.Contains(err.Error(), "waits forever") {
		t.Fatalf("error %v, want a stall reported", err)
	}
}

// The log travels as float64s and comes back the same.
func TestLogEncoding(t *testing.T) {
	in := []event{{kind: evColl, dt: 1.5, dc: 1, dm: 0.5, dv: 0.25, comm: commID{7, 2}, size: 4, seq: 11}, {kind: evRecv, comm: commID{1, 0}, peer: 3, tag: 42, seq: 5}}
	out := decodeLog(encodeLog(in))
	if len(out) != len(in) {
		t.Fatalf("%d events back, want %d", len(out), len(in))
	}
	for i := range in {
		if out[i] != in[i] {
			t.Errorf("event %d: %+v, want %+v", i, out[i], in[i])
		}
	}
}

// Collectives every member agreed to skip are settled: while nothing
// executes they are skipped without the engine's records, and the path
// recovered at the end still follows the slow rank. Every kernel here is
// predictable: rank 3's spin is charged 6 ms per step, the others' 2 ms, and
// each step ends with a row allreduce and a column broadcast charged 1 ms
// each. In a second run rank 1 also executes a kernel every step: its row and
// column are never quiet, so it exchanges records at every collective.
func settledReplay(r *mpitest.R) {
	e := newEngine(r)
	g, err := e.NewGrid([]int{2, 2})
	if err != nil {
		r.Fatalf("grid: %v", err)
	}
	row, col := g.Along(1), g.Along(0)
	spin := 2e-3
	if r.Rank == 3 {
		spin = 6e-3
	}
	tr := NewTrack(policy.Conditional{}, 0.01)
	const steps = 10
	buf, out := make([]float64, 4), make([]float64, 4)
	for _, busy := range []bool{false, true} {
		e.Begin(tr, Selective)
		spinKey := compKey(kernels.Signature{Routine: kernels.Spin, M: 0})
		preset := map[Key]float64{spinKey: spin, {Op: OpAllreduce, M: 4, Shape: row.Shape()}: 1e-3, {Op: OpBcast, M: 4, Shape: col.Shape()}: 1e-3}
		for k, mean := range preset {
			tr.stats[k] = &kstat{key: k, hash: k.hash(), Stat: Stat{N: 2000, Mean: mean, M2: 1999 * 1e-14}}
		}
		for s := 0; s < steps; s++ {
			e.Kernels().Spin(0, spin)
			if busy && r.Rank == 1 {
				e.Kernels().Spin(1, 1e-4*float64(1+s%3)) // spread too wide to predict: executed
			}
			row.Allreduce(buf, out, mpi.Sum)
			col.Bcast(buf, 0)
		}
		rs, err := e.End()
		if err != nil {
			r.Fatalf("end: %v", err)
		}
		if busy {
			if r.Rank == 1 && rs.Settled != 0 {
				r.Errorf("busy rank 1 skipped %d collectives without records, want 0", rs.Settled)
			}
			continue
		}
		// Each communicator exchanges records at its first two collectives
		// (quiet needs two) and at every refresh-th; the others go without.
		if want := int64(2*steps - 2*(2+(steps-1)/refresh)); rs.Executed != 0 || rs.Skipped != 3*steps || rs.Settled != want {
			r.Errorf("executed %d skipped %d (%d without records), want 0, %d (%d)", rs.Executed, rs.Skipped, rs.Settled, 3*steps, want)
		}
		all := make([]float64, 2*4)
		if err := mpi.Allgather(r.World, []float64{rs.Total, rs.Own}, all); err != nil {
			r.Fatalf("allgather: %v", err)
		}
		longest := 0.0
		for p := 0; p < 4; p++ {
			longest = math.Max(longest, all[2*p])
		}
		slow := all[2*3+1] // rank 3's own path: the critical path
		if math.Abs(longest-slow) > 0.05*slow || slow < steps*8e-3 {
			r.Errorf("longest replayed path %.4fs, want rank 3's own %.4fs (at least %.3fs) within 5%%", longest, slow, steps*8e-3)
		}
		// Rank 0 hears of rank 3 through settled collectives only.
		if r.Rank == 0 && (rs.Total < 0.8*slow || rs.Own > 0.6*rs.Total) {
			r.Errorf("rank 0: path %.4fs, own %.4fs; want the slow rank's %.4fs carried in (at least 80%%) and its own well below", rs.Total, rs.Own, slow)
		}
	}
	g.Free()
}

func TestSettledCollectivesReplayed(t *testing.T) { mpitest.Run(t, "settled-replay", 4) }
