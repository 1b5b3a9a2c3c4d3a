package selective

import (
	"math"
	"testing"

	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/mpitest"
	"github.com/approxtune/approxtune/internal/selective/policy"
)

// A process promises to execute a collective without records only where its
// statistics cannot become predictable soon: at tolerance 0 (every policy),
// or when the kernel is farCalls sampled calls or more from predictable
// (not eager or online, whose records carry what others decide by).
func TestPromise(t *testing.T) {
	qs := newQuantiles(0.95)
	noisy := Stat{N: 20, Mean: 3e-6, M2: 19 * 25e-12}  // CV 1.7: ~11,000 samples at 2^-5
	steady := Stat{N: 20, Mean: 3e-3, M2: 19 * 1e-10}  // CV 0.003: predictable already
	close := Stat{N: 20, Mean: 1e-3, M2: 19 * 0.01e-6} // CV 0.1: ~40 samples at 2^-5
	cases := []struct {
		name  string
		pol   policy.Policy
		tol   float64
		st    Stat
		calls int64
		want  func(float64) bool
		what  string
	}{
		{"tolerance 0", policy.Conditional{}, 0, Stat{}, 1, func(p float64) bool { return p == maxPromise }, "maxPromise"},
		{"hopeless kernel", policy.Conditional{}, 1.0 / 32, noisy, 20, func(p float64) bool { return p > 1000 && p < 2000 }, "an eighth of ~11,000 calls"},
		{"steady kernel", policy.Conditional{}, 1.0 / 32, steady, 20, func(p float64) bool { return p == 0 }, "0"},
		{"close to predictable", policy.Conditional{}, 1.0 / 32, close, 20, func(p float64) bool { return p == 0 }, "0 (under farCalls away)"},
		{"one sample", policy.Conditional{}, 1.0 / 32, Stat{N: 1, Mean: 1e-6}, 1, func(p float64) bool { return p == 0 }, "0"},
		{"no spread", policy.Conditional{}, 1.0 / 32, Stat{N: 20, Mean: 1e-6}, 20, func(p float64) bool { return p == 0 }, "0"},
		{"zero mean", policy.Conditional{}, 1.0 / 32, Stat{N: 20, M2: 1e-12}, 20, func(p float64) bool { return p == 0 }, "0"},
		{"local: its calls count too", policy.Local{}, 1.0 / 32, noisy, 20, func(p float64) bool { return p == 0 }, "0 (about 84 calls away)"},
		{"local, far", policy.Local{}, 1.0 / 128, noisy, 20, func(p float64) bool { return p > 30 && p < 70 }, "an eighth of ~400 calls"},
		{"local, many calls already", policy.Local{}, 1.0 / 2, noisy, 5000, func(p float64) bool { return p == 0 }, "0"},
		{"eager shares with its records", policy.Eager{}, 1.0 / 32, noisy, 20, func(p float64) bool { return p == 0 }, "0"},
		{"online counts with its records", policy.Online{}, 1.0 / 32, noisy, 20, func(p float64) bool { return p == 0 }, "0"},
		{"eager at tolerance 0", policy.Eager{}, 0, noisy, 20, func(p float64) bool { return p == maxPromise }, "maxPromise"},
		{"online at tolerance 0", policy.Online{}, 0, noisy, 20, func(p float64) bool { return p == maxPromise }, "maxPromise"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := &Engine{qs: qs, nmin: 2, skip: true, tr: NewTrack(c.pol, c.tol)}
			st := &kstat{Stat: c.st, calls: c.calls, alpha: 1}
			if got := e.promise(st); !c.want(got) {
				t.Fatalf("%v at %v: promise %v, want %s", c.pol.Name(), c.tol, got, c.what)
			}
		})
	}
	e := &Engine{qs: qs, nmin: 2, skip: false, tr: NewTrack(policy.Apriori{}, 0)}
	if p := e.promise(&kstat{Stat: noisy}); p != 0 {
		t.Fatalf("counting run: promise %v, want 0", p)
	}
	// Apriori's alpha (the kernel's count on the critical path) divides the
	// distance: ~11,000 samples at alpha 1, ~690 at 16, ~170 at 64.
	e = &Engine{qs: qs, nmin: 2, skip: true, tr: NewTrack(policy.Apriori{}, 1.0/32)}
	one, sixteen, sixtyFour := e.promise(&kstat{Stat: noisy, alpha: 1}), e.promise(&kstat{Stat: noisy, alpha: 16}), e.promise(&kstat{Stat: noisy, alpha: 64})
	if one < 1000 || sixteen < 70 || sixteen > 100 || sixtyFour != 0 {
		t.Fatalf("apriori: promises %v, %v, %v at alpha 1, 16, 64; want over 1000, 70-100 and 0", one, sixteen, sixtyFour)
	}
}

// A collective run on a promise is charged at the end from every member's
// log: from the last member's arrival to its own end, on the entry after it;
// without one clock, every member is charged the shortest member's time.
// Collectives that exchanged records and other entries are left alone.
func TestChargePromised(t *testing.T) {
	c, d := commID{id: 1, low: 0}, commID{id: 2, low: 0}
	logs := func() [][]event {
		return [][]event{
			{{kind: evColl, comm: c, size: 2, seq: 0, in: 10.0, out: 10.5}, {kind: evSend, comm: d, peer: 1, dt: 0.25},
				{kind: evColl, comm: c, size: 2, seq: 1, in: 11.0, out: 11.4}, {kind: evColl, comm: d, size: 2, seq: 0, dt: 2}, {kind: evEnd, dt: 1}},
			{{kind: evColl, comm: c, size: 2, seq: 0, in: 10.2, out: 10.3}, {kind: evRecv, comm: d, peer: 0},
				{kind: evColl, comm: c, size: 2, seq: 1, in: 11.1, out: 11.3}, {kind: evColl, comm: d, size: 2, seq: 0, dt: 2}, {kind: evEnd, dt: 1}},
		}
	}
	check := func(name string, l [][]event, want [2][2]float64) {
		t.Helper()
		for r := range l {
			base := [5]float64{0, 0, 0, 2, 1}
			if r == 0 {
				base[1] = 0.25
			}
			for i, ev := range l[r] {
				add := 0.0
				switch i {
				case 1:
					add = want[r][0]
				case 3:
					add = want[r][1]
				}
				if !near(ev.dt, base[i]+add) || !near(ev.dm, add) || !near(ev.df, add) || ev.dc != 0 {
					t.Errorf("%s, rank %d, entry %d: %+v, want %v more communication than its %v", name, r, i, ev, add, base[i])
				}
			}
		}
	}
	l := logs()
	chargePromised(l, true)
	check("one clock", l, [2][2]float64{{0.3, 0.3}, {0.1, 0.2}})
	l = logs()
	chargePromised(l, false)
	check("several clocks", l, [2][2]float64{{0.1, 0.2}, {0.1, 0.2}})
}

// A promised transfer above the eager limit carries its bytes to the next
// entry, as an executed one does, so the simulation counts its copy work;
// a small one carries none.
func TestPromisedBytes(t *testing.T) {
	e := &Engine{}
	e.promisedFor(&kstat{key: Key{Op: OpBcast, M: 1 << 16}}, 0, 1)
	if want := 8.0 * (1 << 16); e.dB != want {
		t.Errorf("a promised broadcast of 64 Ki doubles: %v bytes moved, want %v", e.dB, want)
	}
	e.dB = 0
	e.promisedFor(&kstat{key: Key{Op: OpBcast, M: 16}}, 0, 1)
	if e.dB != 0 {
		t.Errorf("a promised broadcast of 16 doubles: %v bytes moved, want 0", e.dB)
	}
}

// At tolerance 0, after a collective's first call every call runs on a
// promise, without records, on every rank; the replay still follows the
// slow ranks, and the collectives' cost is on the path: each step's
// allreduce of 512 KiB costs every member its transfer after the last
// arrival, so the path holds about steps transfers (none without the
// charge at End but the first call's).
func promisedRuns(r *mpitest.R) {
	e := newEngine(r)
	w := e.World()
	buf, out := make([]float64, 1<<16), make([]float64, 1<<16)
	// The allreduce with every member there, at its fastest: with other
	// tests' processes on the cores, 5 tries once all came out 3-8 times
	// what the runs' allreduces then took.
	transfer := math.Inf(1)
	for i := 0; i < 20; i++ {
		if err := r.World.Barrier(); err != nil {
			r.Fatalf("barrier: %v", err)
		}
		t0 := mpi.Clock()
		if err := mpi.Allreduce(r.World, buf, out, mpi.Sum); err != nil {
			r.Fatalf("allreduce: %v", err)
		}
		transfer = math.Min(transfer, mpi.Clock()-t0)
	}
	tr := NewTrack(policy.Conditional{}, 0)
	// Two runs: promises end with a run, so the second starts with records.
	for run := 0; run < 2; run++ {
		promisedRun(r, e, tr, w, buf, out, transfer, run)
	}
}

func promisedRun(r *mpitest.R, e *Engine, tr *Track, w *Comm, buf, out []float64, transfer float64, run int) {
	const steps = 30
	if err := r.World.Barrier(); err != nil {
		r.Fatalf("barrier: %v", err)
	}
	e.Begin(tr, Selective)
	t0 := mpi.Clock()
	for s := 0; s < steps; s++ {
		spin := 2e-4
		if r.Rank == s%4 {
			spin = 3e-3
		}
		e.Kernels().Spin(0, spin)
		w.Allreduce(buf, out, mpi.Sum)
	}
	wall := mpi.Clock() - t0
	rs, err := e.End()
	if err != nil {
		r.Fatalf("end: %v", err)
	}
	if rs.Executed != 2*steps || rs.Skipped != 0 || rs.Promised != steps-1 {
		r.Errorf("run %d: executed %d skipped %d promised %d, want %d, 0, %d", run, rs.Executed, rs.Skipped, rs.Promised, 2*steps, steps-1)
	}
	// Each step waits for that step's slow rank: 30 spins of 3 ms.
	if rs.Total < steps*3e-3 || math.Abs(rs.Total-wall) > 0.08*wall {
		r.Errorf("run %d: path %.4fs, want at least %.3fs and within 8%% of the run's %.4fs", run, rs.Total, steps*3e-3, wall)
	}
	if rs.Comm < steps/4*transfer {
		r.Errorf("run %d: communication on the path %.4fs, want at least %d allreduces of %.6fs: the promised ones were not charged", run, rs.Comm, steps/4, transfer)
	}
}

func TestPromisedCollectivesReplayed(t *testing.T) { mpitest.Run(t, "promised-runs", 4) }
