package selective

import (
	"math"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/mpitest"
	"github.com/approxtune/approxtune/internal/selective/policy"
)

func TestMain(m *testing.M) {
	mpitest.Main(m, map[string]func(*mpitest.R){
		"comm-agreement": commAgreement,
		"eager-spread":   eagerSpread,
		"eager-once":     eagerOncePerRun,
		"p2p-skip":       p2pSkip,
		"placement":      placementScenario,
		"p2p-large":      p2pLarge,
		"cpu-kernels":    cpuKernels,
		"settled-replay": settledReplay,
		"trace-timeline": traceTimeline,
		"promised-runs":  promisedRuns,
		"stale-input":    staleInput,
		"extra-policy":   extraPolicy,
		"prediction-se":  predictionSE,
		"models-gemm":    modelsGemm,
		"p2p-elide":      p2pElide,
		"small-turns":    smallMessagesTakingTurns,
		"cold-first":     coldFirstCalls,
		"collective-v":   collectiveV,
		"msgs-executed":  messagesExecuted,
	})
}

func newEngine(r *mpitest.R) *Engine {
	b, err := kernels.NewBackend(kernels.Gonum)
	if err != nil {
		r.Fatalf("backend: %v", err)
	}
	e, err := New(r.World, kernels.New(b))
	if err != nil {
		r.Fatalf("engine: %v", err)
	}
	return e
}

// predictable is a sample that any tolerance of 1% accepts.
var predictable = Stat{N: 50, Mean: 1e-3, M2: 49 * 1e-12}

// A communication predictable on three ranks but not the fourth runs on all
// four; predictable on all four, it is skipped on all four.
func commAgreement(r *mpitest.R) {
	e := newEngine(r)
	tr := NewTrack(policy.Conditional{}, 0.01)
	w := e.World()
	buf := make([]float64, 16)
	key := Key{Op: OpBcast, M: 16, Shape: w.Shape()}
	for round, predictOn := range []int{3, 4} { // ranks 0..predictOn-1 find it predictable
		e.Begin(tr, Selective)
		if r.Rank < predictOn {
			tr.stats[key] = &kstat{key: key, hash: key.hash(), Stat: predictable}
		}
		for i := range buf {
			buf[i] = -1
			if r.Rank == 0 {
				buf[i] = float64(100*round + i)
			}
		}
		w.Bcast(buf, 0)
		rs, err := e.End()
		if err != nil {
			r.Fatalf("end: %v", err)
		}
		if predictOn < 4 {
			if rs.Executed != 1 || rs.Skipped != 0 || buf[5] != float64(100*round+5) {
				r.Errorf("predictable on %d of 4: executed %d skipped %d buf[5]=%v, want executed everywhere", predictOn, rs.Executed, rs.Skipped, buf[5])
			}
		} else {
			want := -1.0
			if r.Rank == 0 {
				want = float64(100*round + 5)
			}
			if rs.Executed != 0 || rs.Skipped != 1 || buf[5] != want {
				r.Errorf("predictable on all 4: executed %d skipped %d buf[5]=%v, want skipped everywhere", rs.Executed, rs.Skipped, buf[5])
			}
			if rs.Total < 1e-3 {
				r.Errorf("skipped bcast charged %v, want its mean 1e-3 on the path", rs.Total)
			}
		}
	}
}

// Eager: a kernel predictable on rank 0 alone reaches every rank of a 2x2
// grid through the grid's row and column messages and is skipped everywhere;
// in the next configuration it is skipped from its first call.
func eagerSpread(r *mpitest.R) {
	e := newEngine(r)
	g, err := e.NewGrid([]int{2, 2})
	if err != nil {
		r.Fatalf("grid: %v", err)
	}
	tr := NewTrack(policy.Eager{}, 0.05)
	k := e.Kernels()
	spinKey := compKey(kernels.Signature{Routine: kernels.Spin, M: 5})
	e.Begin(tr, Selective)
	if r.Rank == 0 {
		tr.stats[spinKey] = &kstat{key: spinKey, hash: spinKey.hash(), Stat: predictable}
		k.Spin(5, 2) // found predictable: skipped, and queued to share
	}
	buf := make([]float64, 4)
	g.Along(1).Bcast(buf, 0) // the row carries rank 0's share to rank 1
	g.Along(0).Bcast(buf, 0) // the columns carry it to ranks 2 and 3
	g.Along(1).Bcast(buf, 0) // and rows again: every rank has seen it along both axes
	// A 2 s spin that is skipped costs nothing, and one that ran would take
	// 2 s: a bound of 1 s tells them apart however the ranks are scheduled.
	t0 := time.Now()
	k.Spin(5, 2)
	took := time.Since(t0)
	rs, err := e.End()
	if err != nil {
		r.Fatalf("end: %v", err)
	}
	if took > time.Second || rs.Skipped < 1 {
		r.Errorf("eager: spin 5 took %v and %d kernels were skipped; want it skipped on every rank", took, rs.Skipped)
	}
	// Next configuration: same track, statistics kept.
	e.Begin(tr, Selective)
	t0 = time.Now()
	k.Spin(5, 2)
	took = time.Since(t0)
	rs, _ = e.End()
	if took > time.Second || rs.Skipped != 1 || rs.Executed != 0 {
		r.Errorf("eager, next configuration: first spin 5 took %v (executed %d, skipped %d); want skipped from the first call", took, rs.Executed, rs.Skipped)
	}
	g.Free()
}

// Eager: a kernel called once per run on every process (the top of a
// recursion) is pooled over the processes at the run's end (pool.go), so
// the next run skips it from its first call, charged the pooled mean: it
// runs once, not twice. One called twice a run gathers its own samples in
// the run and is not pooled. One that a single process calls once per run
// has nothing to pool with: it is shared as soon as its second execution makes
// it predictable, and skipped from the third run.
func eagerOncePerRun(r *mpitest.R) {
	e := newEngine(r)
	g, err := e.NewGrid([]int{2, 2})
	if err != nil {
		r.Fatalf("grid: %v", err)
	}
	tr := NewTrack(policy.Eager{}, 1) // 200 ms spins within 15% (31 ms) of each other are predictable
	k := e.Kernels()
	spinKey := compKey(kernels.Signature{Routine: kernels.Spin, M: 6})
	aloneKey := compKey(kernels.Signature{Routine: kernels.Spin, M: 7})
	buf := make([]float64, 4)
	var took, alone [3]time.Duration
	for run := range took {
		e.Begin(tr, Selective)
		t0 := time.Now()
		k.Spin(6, 0.2)
		took[run] = time.Since(t0)
		if r.Rank == 0 {
			t0 = time.Now()
			k.Spin(7, 0.1)
			alone[run] = time.Since(t0)
		}
		k.Spin(8, 0.05)
		k.Spin(8, 0.05)
		g.Along(1).Bcast(buf, 0)
		g.Along(0).Bcast(buf, 0)
		if _, err := e.End(); err != nil {
			r.Fatalf("run %d: end: %v", run+1, err)
		}
	}
	// A skipped spin returns at once; one that ran takes its time (skips:
	// the last run's).
	st := tr.stats[spinKey]
	if st == nil || st.N != 1 || st.skips != 1 || took[1] > 100*time.Millisecond || took[2] > 100*time.Millisecond {
		r.Errorf("eager, a kernel once per run on every process: spin took %v in three runs, stats %+v; want it executed in the first run only", took, st)
	}
	if pooled := tr.global[spinKey.hash()]; !tr.pooled[spinKey.hash()] || !tr.agreed[spinKey.hash()] || pooled.N != int64(r.World.Size()) || math.Abs(pooled.Mean-0.2) > 0.05 {
		r.Errorf("pooled spin: %+v (pooled %v, agreed %v); want the %d processes' samples, mean about 0.2 s", pooled, tr.pooled[spinKey.hash()], tr.agreed[spinKey.hash()], r.World.Size())
	}
	if s := e.sample(st); s.N != int64(r.World.Size()) {
		r.Errorf("a pooled kernel is charged from %+v; want the pooled sample", s)
	}
	// Called twice a run, a kernel gathers its own samples: not pooled.
	twiceKey := compKey(kernels.Signature{Routine: kernels.Spin, M: 8})
	if st := tr.stats[twiceKey]; st == nil || st.N != 2 || tr.pooled[twiceKey.hash()] || st.skips != 2 {
		r.Errorf("eager, a kernel twice per run: stats %+v, pooled %v; want its own two samples, skipped in later runs", st, tr.pooled[twiceKey.hash()])
	}
	if r.Rank == 0 {
		st := tr.stats[aloneKey]
		if st == nil || st.N != 2 || st.skips != 1 || alone[1] < 80*time.Millisecond || alone[2] > 50*time.Millisecond || tr.pooled[aloneKey.hash()] {
			r.Errorf("eager, a kernel once per run on one process: spin took %v in three runs, stats %+v, pooled %v; want it executed in the first two runs and skipped in the third", alone, st, tr.pooled[aloneKey.hash()])
		}
	}
	g.Free()
}

// Point-to-point: the sender decides; a skipped message arrives empty and
// leaves the receive buffer as it was; non-blocking requests complete.
func p2pSkip(r *mpitest.R) {
	e := newEngine(r)
	tr := NewTrack(policy.Conditional{}, 0.01)
	w := e.World()
	right, left := (r.Rank+1)%4, (r.Rank+3)%4
	for _, skip := range []bool{false, true} {
		e.Begin(tr, Selective)
		if skip {
			k := w.p2pKey(OpIsend, 8, right)
			tr.stats[k] = &kstat{key: k, hash: k.hash(), Stat: predictable}
		}
		out := make([]float64, 8)
		in := make([]float64, 8)
		for i := range out {
			out[i], in[i] = float64(10*r.Rank+i), -1
		}
		rq := w.Irecv(in, left, 3)
		sq := w.Isend(out, right, 3)
		Waitall([]*Request{sq, rq})
		rs, err := e.End()
		if err != nil {
			r.Fatalf("end: %v", err)
		}
		if !skip && (in[2] != float64(10*left+2) || rs.Executed != 2) {
			r.Errorf("executed exchange: in[2]=%v executed %d, want %v and 2", in[2], rs.Executed, 10*left+2)
		}
		if skip && (in[2] != -1 || rs.Skipped != 2) {
			r.Errorf("skipped exchange: in[2]=%v skipped %d, want the buffer untouched and both ends skipped", in[2], rs.Skipped)
		}
	}
	_ = mpi.Wtime
}

// With messages executed (SetMessagesExecuted), a message and a
// collective the policy would skip still deliver their data, while a
// kernel is skipped; without, all three are skipped.
func messagesExecuted(r *mpitest.R) {
	e := newEngine(r)
	k := e.Kernels()
	w := e.World()
	right, left := (r.Rank+1)%4, (r.Rank+3)%4
	spin := compKey(kernels.Signature{Routine: kernels.Spin, M: 1})
	for _, executed := range []bool{false, true} {
		e.SetMessagesExecuted(executed)
		tr := NewTrack(policy.Conditional{}, 0.01)
		e.Begin(tr, Selective) // the keys' shapes are the run's
		for _, key := range []Key{w.p2pKey(OpIsend, 8, right), w.p2pKey(OpSend, 8, right), {Op: OpBcast, M: 8, Shape: w.Shape()}, spin} {
			tr.stats[key] = &kstat{key: key, hash: key.hash(), Stat: predictable}
		}
		out, in, in2, bc := make([]float64, 8), make([]float64, 8), make([]float64, 8), make([]float64, 8)
		for i := range out {
			out[i], in[i], in2[i], bc[i] = float64(10*r.Rank+i), -1, -1, -1
			if r.Rank == 0 {
				bc[i] = float64(i)
			}
		}
		rq := w.Irecv(in, left, 3)
		sq := w.Isend(out, right, 3)
		Waitall([]*Request{sq, rq})
		if r.Rank%2 == 0 {
			w.Send(out, right, 4)
			w.Recv(in2, left, 4)
		} else {
			w.Recv(in2, left, 4)
			w.Send(out, right, 4)
		}
		w.Bcast(bc, 0)
		k.Spin(1, 0.004)
		rs, err := e.End()
		if err != nil {
			r.Fatalf("end: %v", err)
		}
		got := in[2] == float64(10*left+2) && in2[2] == float64(10*left+2) && bc[2] == 2
		if executed && (!got || rs.Skipped != 1) {
			r.Errorf("messages executed: received %v, %v, broadcast %v, %d skipped; want the data and the kernel alone skipped", in[2], in2[2], bc[2], rs.Skipped)
		}
		if !executed && (in[2] != -1 || in2[2] != -1 || (r.Rank != 0 && bc[2] != -1) || rs.Skipped < 4) {
			r.Errorf("messages skipped: received %v, %v, broadcast %v, %d skipped; want the buffers untouched and messages, broadcast and kernel skipped", in[2], in2[2], bc[2], rs.Skipped)
		}
	}
}

func TestMessagesExecuted(t *testing.T)           { mpitest.Run(t, "msgs-executed", 4) }
func TestCommKernelNeedsEveryRank(t *testing.T)   { mpitest.Run(t, "comm-agreement", 4) }
func TestEagerSpreadsAndCarriesOver(t *testing.T) { mpitest.Run(t, "eager-spread", 4) }
func TestEagerSharesOnExecution(t *testing.T)     { mpitest.Run(t, "eager-once", 4) }
func TestPointToPointSkip(t *testing.T)           { mpitest.Run(t, "p2p-skip", 4) }

func TestPredictionStandardError(t *testing.T) { mpitest.Run(t, "prediction-se", 4) }
func TestColdFirstCalls(t *testing.T)          { mpitest.Run(t, "cold-first", 2) }
func TestCollectiveV(t *testing.T)             { mpitest.Run(t, "collective-v", 2) }

// A skipped kernel's estimated mean adds its uncertainty to the path: rank
// r skips 3(r+1) calls of a kernel whose mean has standard error se (s/sqrt(n)
// widened by t_{n-1}/z, Engine.meanVar), so its
// own path's standard error is 3(r+1)·se (one estimate's error counted on
// every call, not sqrt(calls) of them). A collective then puts every rank
// on rank 3's path, and its variance with it; the prediction's standard
// error is rank 3's. At tolerance 0 nothing is skipped and it is 0.
func predictionSE(r *mpitest.R) {
	e := newEngine(r)
	k := e.Kernels()
	w := e.World()
	key := compKey(kernels.Signature{Routine: kernels.Spin, M: 9})
	sample := Stat{N: 50, Mean: 1e-3, M2: 49 * 4e-12} // s = 2e-6
	se := e.qs.HalfWidth(sample) / e.qs.z             // s/sqrt(n) widened by t_49/z
	if plain := math.Sqrt(sample.Var() / float64(sample.N)); !(se > plain) {
		r.Errorf("standard error %g, want it wider than s/sqrt(n) = %g (t with 49 degrees of freedom)", se, plain)
	}
	tr := NewTrack(policy.Conditional{}, 0.05)
	e.Begin(tr, Selective)
	tr.stats[key] = &kstat{key: key, hash: key.hash(), Stat: sample}
	calls := 3 * (r.Rank + 1)
	for range calls {
		k.Spin(9, 1e-3)
	}
	own := e.dV + e.pathVar
	if want := float64(calls*calls) * se * se; math.Abs(own-want) > 1e-9*want {
		r.Errorf("rank %d: variance %g after %d skips, want %g", r.Rank, own, calls, want)
	}
	w.Bcast(make([]float64, 4), 0)
	rs, err := e.End()
	if err != nil {
		r.Fatalf("end: %v", err)
	}
	p, err := e.Predict(rs)
	if err != nil {
		r.Fatalf("predict: %v", err)
	}
	want := 12 * se // rank 3's 12 skips
	if math.Abs(math.Sqrt(rs.Var)-want) > 1e-6*want || math.Abs(p.SE-want) > 1e-6*want {
		r.Errorf("rank %d: path standard error %g, prediction's %g; want both %g (rank 3's path)", r.Rank, math.Sqrt(rs.Var), p.SE, want)
	}

	zero := NewTrack(policy.Conditional{}, 0)
	for range 2 {
		e.Begin(zero, Selective)
		for range 5 {
			k.Spin(9, 1e-5)
		}
		w.Bcast(make([]float64, 4), 0)
		rs, err = e.End()
		if err != nil {
			r.Fatalf("end: %v", err)
		}
		if p, err = e.Predict(rs); err != nil {
			r.Fatalf("predict: %v", err)
		}
		if rs.Skipped != 0 || rs.Var != 0 || p.SE != 0 {
			r.Errorf("tolerance 0: %d skipped, variance %g, standard error %g; want all 0", rs.Skipped, rs.Var, p.SE)
		}
	}
}

// With cold first calls (the preload library's engine: a program's launches
// are fresh processes), a kernel's first call in the process, 40 ms where
// the others take 4, is charged as it ran but left out of the kernel's
// sample once the kernel is called again, so its skipped calls are charged
// about 4 ms; a kernel called once keeps its only sample. Without, the
// first call's 40 ms is among the samples. A spin called during a run the
// engine does not intercept (Off) is not cold in the next.
func coldFirstCalls(r *mpitest.R) {
	k1 := compKey(kernels.Signature{Routine: kernels.Spin, M: 1})
	k2 := compKey(kernels.Signature{Routine: kernels.Spin, M: 2})
	k3 := compKey(kernels.Signature{Routine: kernels.Spin, M: 3})
	for _, cold := range []bool{true, false} {
		e := newEngine(r)
		e.SetColdFirstCalls(cold)
		k := e.Kernels()
		e.Begin(nil, Off)
		k.Spin(3, 0.004)
		if _, err := e.End(); err != nil {
			r.Fatalf("end: %v", err)
		}
		tr := NewTrack(policy.Conditional{}, 0.5)
		e.Begin(tr, Selective)
		k.Spin(1, 0.04)
		// Held, the sample still counts as a measure of the kernel (not one
		// for its family's model to predict).
		if cold && !e.cold.holds(k1) {
			r.Errorf("cold first calls: spin 1's first sample not held after its first call")
		}
		for i := 0; i < 11; i++ {
			k.Spin(1, 0.004)
		}
		if cold && e.cold.holds(k1) {
			r.Errorf("cold first calls: spin 1's first sample still held after a second execution")
		}
		k.Spin(2, 0.006)
		k.Spin(3, 0.004)
		k.Spin(3, 0.004)
		k.Spin(3, 0.004)
		rs, err := e.End()
		if err != nil {
			r.Fatalf("end: %v", err)
		}
		s1, s2, s3 := tr.stats[k1], tr.stats[k2], tr.stats[k3]
		if cold {
			if s1.N < 2 || s1.Mean > 0.006 || s1.skips == 0 {
				r.Errorf("cold first calls: spin 1's sample %+v (%d skipped); want its 4 ms calls only, and some skipped", s1.Stat, s1.skips)
			}
			if s2.N != 1 || math.Abs(s2.Mean-0.006) > 0.003 {
				r.Errorf("cold first calls: spin 2, called once: sample %+v; want its one call's 6 ms", s2.Stat)
			}
			if s3.N+s3.skips != 3 {
				r.Errorf("cold first calls: spin 3, called before the run: sample %+v, %d skipped; want each of its 3 calls sampled or skipped", s3.Stat, s3.skips)
			}
			// The path: 40 + 11 x 4 + 6 + 12 ms, each skipped call at its mean.
			if rs.Total < 0.09 || rs.Total > 0.14 {
				r.Errorf("cold first calls: path %.3f s; want about 0.102 s", rs.Total)
			}
		} else if s1.N < 2 || s1.Mean < 0.006 {
			r.Errorf("without cold first calls: spin 1's sample %+v; want the 40 ms call among them", s1.Stat)
		}
	}
}

// A v-collective (CollectiveV) carries the path as any collective does: in
// the third run, where eager skips rank 0's spin of 50 ms (a kernel only
// rank 0 runs: executed in the first two runs), rank 1's path after the
// collective still holds it, though rank 1 waited for nothing. The
// members' keys differ (rank 0 moves another amount at each call, rank 1
// the same each time), and every call exchanges records on both: decided
// by each key's own history, as a collective never skipped is, rank 1
// would have stopped exchanging them while rank 0 went on.
func collectiveV(r *mpitest.R) {
	e := newEngine(r)
	tr := NewTrack(policy.Eager{}, 1)
	k := e.Kernels()
	w := e.World()
	spinKey := compKey(kernels.Signature{Routine: kernels.Spin, M: 9})
	var rs RunStats
	for run := 0; run < 3; run++ {
		e.Begin(tr, Selective)
		if r.Rank == 0 {
			k.Spin(9, 0.05)
		}
		for i := 0; i < 20; i++ {
			bytes := 800
			if r.Rank == 0 {
				bytes = 8 * (1 + i%3)
			}
			w.CollectiveV(OpAllgatherv, bytes, w.c.Barrier)
		}
		var err error
		if rs, err = e.End(); err != nil {
			r.Fatalf("run %d: end: %v", run+1, err)
		}
	}
	if r.Rank == 0 {
		if st := tr.stats[spinKey]; st == nil || st.skips != 1 {
			r.Errorf("rank 0's spin: %+v; want it skipped in the third run", st)
		}
		for i := 1; i <= 3; i++ {
			if st := tr.stats[Key{Op: OpAllgatherv, M: int32(i), Shape: w.Shape()}]; st == nil || st.N == 0 {
				r.Errorf("rank 0's allgatherv of %d doubles: %+v; want it executed", i, st)
			}
		}
	} else if st := tr.stats[Key{Op: OpAllgatherv, M: 100, Shape: w.Shape()}]; st == nil || st.N < 20 || st.skips != 0 {
		r.Errorf("rank 1's allgatherv of 100 doubles: %+v; want its calls executed, none skipped", st)
	}
	if rs.Total < 0.045 {
		r.Errorf("third run: path %.3f s; want the 50 ms spin on every rank's path", rs.Total)
	}
}
