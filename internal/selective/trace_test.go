package selective

import (
	"testing"

	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/mpitest"
	"github.com/approxtune/approxtune/internal/selective/policy"
)

// The timeline: every intercepted kernel in time order, executed ones with
// their span, skipped ones as an instant with the time charged; the first
// spans up to the limit, the rest counted; nothing recorded, and nothing
// allocated for it, when tracing is off.
func traceTimeline(r *mpitest.R) {
	e := newEngine(r)
	tr := NewTrack(policy.Conditional{}, 0.01)
	w := e.World()
	k := e.Kernels()
	buf := make([]float64, 8)
	spin := compKey(kernels.Signature{Routine: kernels.Spin, M: 1})

	e.SetTrace(6)
	e.Begin(tr, Selective)
	k.Spin(0, 2e-4)
	w.Bcast(buf, 0)
	tr.stats[spin] = &kstat{key: spin, hash: spin.hash(), Stat: predictable}
	k.Spin(1, 0.05) // predictable: skipped, charged its mean 1e-3
	w.Allreduce(buf, buf, 0)
	for i := 0; i < 6; i++ {
		k.Spin(0, 1e-5) // spans 5 and 6, then 4 past the limit
	}
	if _, err := e.End(); err != nil {
		r.Fatalf("end: %v", err)
	}
	spans, dropped := e.Trace()
	if len(spans) != 6 || dropped != 4 {
		r.Fatalf("%d spans, %d dropped; want 6 and 4", len(spans), dropped)
	}
	wantOps := []Op{Op(kernels.Spin), OpBcast, Op(kernels.Spin), OpAllreduce, Op(kernels.Spin), Op(kernels.Spin)}
	prev := 0.0
	for i, s := range spans {
		if s.Op != wantOps[i] || s.Start < prev || s.End < s.Start {
			r.Errorf("span %d %+v: want op %v, after %v, end >= start", i, s, wantOps[i], prev)
		}
		prev = s.End
		if s.Skipped != (i == 2) {
			r.Errorf("span %d %+v: skipped %v, want %v", i, s, s.Skipped, i == 2)
		}
	}
	if s := spans[0]; s.End-s.Start < 1.5e-4 {
		r.Errorf("executed spin of 200 µs spans %v s", s.End-s.Start)
	}
	if s := spans[2]; s.Start != s.End || s.Predicted != predictable.Mean || s.Op.IsComm() {
		r.Errorf("skipped span %+v: want an instant charged %v", s, predictable.Mean)
	}
	if !spans[1].Op.IsComm() || spans[0].Op.IsComm() {
		r.Errorf("comm flags: bcast %v spin %v", spans[1].Op.IsComm(), spans[0].Op.IsComm())
	}
	// Sizes: a collective's bytes per process (8 doubles), none for a spin.
	for i, want := range []float64{0, 64, 0, 64, 0, 0} {
		if spans[i].Size != want {
			r.Errorf("span %d %+v: size %v, want %v", i, spans[i], spans[i].Size, want)
		}
	}

	// A new run starts a new timeline; tracing allocates nothing per kernel.
	run := func() {
		e.Begin(tr, Selective)
		for i := 0; i < 20; i++ {
			k.Spin(0, 1e-6)
		}
		e.End()
	}
	e.SetTrace(100)
	run()
	if spans, dropped := e.Trace(); len(spans) != 20 || dropped != 0 {
		r.Errorf("second run: %d spans, %d dropped; want 20 and 0", len(spans), dropped)
	}
	on := testing.AllocsPerRun(5, run)
	e.SetTrace(0)
	off := testing.AllocsPerRun(5, run)
	if on > off {
		r.Errorf("a run allocates %v with tracing on, %v off: tracing must allocate nothing per kernel", on, off)
	}
	if spans, dropped := e.Trace(); spans != nil || dropped != 0 {
		r.Errorf("tracing off: %d spans, %d dropped", len(spans), dropped)
	}
}

func TestTraceTimeline(t *testing.T) { mpitest.Run(t, "trace-timeline", 4) }

// A key's work: flops for a computation, bytes per process for a
// communication.
func TestKeyWork(t *testing.T) {
	for _, c := range []struct {
		k    Key
		want float64
	}{
		{compKey(kernels.Signature{Routine: kernels.Gemm, M: 2, N: 3, K: 4}), 48},
		{compKey(kernels.Signature{Routine: kernels.Potrf, N: 6}), 72},
		{compKey(kernels.Signature{Routine: kernels.Spin, M: 3}), 0},
		{Key{Op: OpBcast, M: 1024, Shape: Shape{Size: 4}}, 8192},
		{Key{Op: OpSend, M: 3, Partner: 1}, 24},
		{Key{Op: OpBarrier}, 0},
	} {
		if got := c.k.Work(); got != c.want {
			t.Errorf("%v: work %v, want %v", c.k, got, c.want)
		}
	}
}

// A communication's label counts its ranks in words ("on 1 rank"), as the
// session's kernel tables parse it back (commKeyRe).
func TestKeyLabel(t *testing.T) {
	for k, want := range map[Key]string{
		{Op: OpBcast, M: 1024, Shape: Shape{Size: 4, Hash: 0xab}}:       "bcast 1024 doubles on 4 ranks [000000ab]",
		{Op: OpAllreduce, M: 8, Shape: Shape{Size: 1, Hash: 1}}:         "allreduce 8 doubles on 1 rank [00000001]",
		{Op: OpBarrier, Shape: Shape{Size: 1, Hash: 2}}:                 "barrier on 1 rank [00000002]",
		{Op: OpRecv, M: 3, Shape: Shape{Size: 2, Hash: 3}, Partner: -1}: "recv 3 doubles on 2 ranks [00000003] partner -1",
	} {
		if got := k.String(); got != want {
			t.Errorf("label %q, want %q", got, want)
		}
	}
}
