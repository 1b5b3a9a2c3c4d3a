package selective

import (
	"runtime"
	"strings"
	"testing"

	"github.com/approxtune/approxtune/internal/mpitest"
)

// Two processes on one CPU that compute at once take turns: each ends when
// both are done. Fixed-duration time (communication, spins) passes for both
// at once, and on CPUs of their own they do not wait for each other.
func TestSimulateSharesACore(t *testing.T) {
	logs := [][]event{
		{{kind: evEnd, dt: 1, dc: 1}},
		{{kind: evEnd, dt: 1.5, dc: 1, dm: 0.5, df: 0.5}},
	}
	cases := []struct {
		name  string
		place placement
		want  []float64
	}{
		// 0-0.5: rank 0 computes alone (rank 1 is in its fixed part);
		// then they share: rank 0's last 0.5 s of work takes until 1.5,
		// rank 1 gets 0.5 s of its work done by then and the rest alone.
		{"one CPU", placement{group: []int{0, 0}, capacity: []float64{1}, members: []int{2}}, []float64{1.5, 2}},
		{"two CPUs", placement{group: []int{0, 0}, capacity: []float64{2}, members: []int{2}}, []float64{1, 1.5}},
		{"own CPUs", placement{group: []int{0, 1}, capacity: []float64{1, 1}, members: []int{1, 1}}, []float64{1, 1.5}},
	}
	for _, c := range cases {
		ends, err := simulate(logs, c.place)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for r := range c.want {
			if !near(ends[r], c.want[r]) {
				t.Errorf("%s: rank %d ends at %v, want %v", c.name, r, ends[r], c.want[r])
			}
		}
	}
}

// A process waiting at a meeting point leaves its core to the others: a
// receiver blocked on a record does not slow its sender down, and a
// collective releases its members when the last arrives.
func TestSimulateWaitingYieldsTheCore(t *testing.T) {
	w := commID{id: 0, low: 0}
	logs := [][]event{
		{{kind: evSend, dt: 1, dc: 1, comm: w, peer: 1, tag: 4}, {kind: evColl, dt: 2, dc: 2, comm: w, size: 2, seq: 0}, {kind: evEnd}},
		{{kind: evRecv, comm: w, peer: 0, tag: 4}, {kind: evColl, dt: 1, dc: 1, comm: w, size: 2, seq: 0}, {kind: evEnd, dt: 0.5, dc: 0.5}},
	}
	place := placement{group: []int{0, 0}, capacity: []float64{1}, members: []int{2}}
	ends, err := simulate(logs, place)
	if err != nil {
		t.Fatal(err)
	}
	// 0-1: rank 0 alone (rank 1 waits for the record). 1-3: both compute,
	// rank 1's 1 s is done at 3, rank 0 has 1 s left, alone: 4. The
	// collective completes at 4; rank 1's 0.5 s alone ends at 4.5.
	if !near(ends[0], 4) || !near(ends[1], 4.5) {
		t.Errorf("ends %v, want [4 4.5]", ends)
	}
	// With every process on a CPU of its own the simulation is the replay.
	paths, err := replayPaths(logs)
	if err != nil {
		t.Fatal(err)
	}
	own := placement{group: []int{0, 1}, capacity: []float64{1, 1}, members: []int{1, 1}}
	ends, err = simulate(logs, own)
	if err != nil {
		t.Fatal(err)
	}
	for r := range ends {
		if !near(ends[r], paths[r].total) {
			t.Errorf("rank %d: simulated %v, replayed %v", r, ends[r], paths[r].total)
		}
	}
}

// Logs that could not have completed are an error, not a hang.
func TestSimulateReportsStall(t *testing.T) {
	w := commID{id: 0, low: 0}
	logs := [][]event{
		{{kind: evRecv, dt: 1, comm: w, peer: 1, tag: 2}, {kind: evEnd}},
		{{kind: evEnd, dt: 1}},
	}
	_, err := simulate(logs, placement{group: []int{0, 0}, capacity: []float64{1}, members: []int{2}})
	if err == nil || !strings.Contains(err.Error(), "process 0 waits forever") {
		t.Fatalf("err = %v, want process 0 waiting forever", err)
	}
}

// Processes group by host and CPU set; a group is shared when it has more
// processes than CPUs; one with an unknown set stands alone.
func TestGroupPlacement(t *testing.T) {
	p := groupPlacement([]int64{
		7, 100, 1, // rank 0: host 7, core set 100 (1 CPU)
		7, 200, 1, // rank 1: another core
		7, 100, 1, // rank 2: shares rank 0's core
		7, 0, 0, // rank 3: set unknown
	})
	if p.group[0] != p.group[2] || p.group[0] == p.group[1] || p.group[3] == p.group[0] || p.group[3] == p.group[1] {
		t.Fatalf("groups %v", p.group)
	}
	if !p.shared(p.group[0]) || p.shared(p.group[1]) || p.shared(p.group[3]) || !p.anyShared() || !p.oneHost {
		t.Errorf("shared: %v %v %v, any %v, one host %v", p.shared(p.group[0]), p.shared(p.group[1]), p.shared(p.group[3]), p.anyShared(), p.oneHost)
	}
	if q := groupPlacement([]int64{1, 5, 2, 2, 5, 2}); q.oneHost || q.group[0] == q.group[1] {
		t.Errorf("two hosts: %+v", q)
	}
}

// A large non-blocking send's wait ends when its receive is posted, which
// the records cannot tell the sender: the simulation makes it wait.
func TestSimulateLargeSendWaitsForItsReceive(t *testing.T) {
	w := commID{id: 0, low: 0}
	logs := [][]event{
		{{kind: evSend, dt: 1, dc: 1, comm: w, peer: 1, tag: 3}, {kind: evAck, comm: w, peer: 1, tag: 3}, {kind: evEnd, dt: 0.5, dc: 0.5}},
		{{kind: evPost, dt: 2, dc: 2, comm: w, peer: 0, tag: 3}, {kind: evRecv, comm: w, peer: 0, tag: 3}, {kind: evEnd, dt: 0.25, dm: 0.25, df: 0.25}},
	}
	own := placement{group: []int{0, 1}, capacity: []float64{1, 1}, members: []int{1, 1}}
	ends, err := simulate(logs, own)
	if err != nil {
		t.Fatal(err)
	}
	// Rank 0 sends at 1 and waits until rank 1 posts at 2: ends at 2.5.
	// The replay, which follows the records only, has it end at 1.5.
	if !near(ends[0], 2.5) || !near(ends[1], 2.25) {
		t.Errorf("ends %v, want [2.5 2.25]", ends)
	}
	paths, err := replayPaths(logs)
	if err != nil || !near(paths[0].total, 1.5) {
		t.Errorf("replay: %v, %v; want rank 0 at 1.5", paths, err)
	}
}

// Under mpirun on one host the engine learns where its processes run: with
// more ranks than CPUs some share a CPU set, and those time computation in
// CPU time.
func placementScenario(r *mpitest.R) {
	e := newEngine(r)
	p := e.place
	size := r.World.Size()
	if !p.oneHost || !e.sameClock || len(p.group) != size {
		r.Fatalf("placement %+v: want %d processes on one host", p, size)
	}
	members := 0
	for g := range p.members {
		members += p.members[g]
	}
	if members != size {
		r.Errorf("groups hold %d processes, want %d", members, size)
	}
	if ncpu := runtime.NumCPU(); ncpu < size && !p.anyShared() {
		r.Errorf("%d ranks on %d CPUs and no group shared: %+v", size, ncpu, p)
	}
	if e.CPUTime() != p.shared(p.group[r.Rank]) {
		r.Errorf("CPU time %v on a group shared=%v", e.CPUTime(), p.shared(p.group[r.Rank]))
	}
}

func TestPlacementUnderMPI(t *testing.T) { mpitest.Run(t, "placement", 4) }

// A CPU-clock read costs something and not much: the engine takes it off
// every interval it measures.
func TestCPUReadCost(t *testing.T) {
	if !cpuClockWorks() {
		t.Fatal("the process CPU clock cannot be read")
	}
	c := cpuReadCost()
	if c <= 0 || c > 20e-6 {
		t.Errorf("one CPU-clock read costs %v s, want between 0 and 20 us", c)
	}
	a := processCPU()
	deadline := a + 2e-3
	for processCPU() < deadline { // spin: 2 ms of CPU
	}
	if d := processCPU() - a; d < 2e-3 || d > 0.5 {
		t.Errorf("2 ms of spinning read as %v s of CPU", d)
	}
}
