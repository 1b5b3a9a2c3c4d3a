package selective

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"time"

	"golang.org/x/sys/unix"

	"github.com/approxtune/approxtune/internal/mpi"
)

// Where processes run. On a node with more ranks than cores (our 2-core
// machines run 4-8 ranks) a kernel's wall time depends on what the ranks
// sharing its core do at the time: in a full run they compute at once and
// take turns (a 10 us gemm usually runs whole, now and then it waits out a
// neighbour's time slice of milliseconds), in a selective run most of them
// skip and the few kernels that execute run alone. Wall-time samples of the
// one do not predict the other. So where a process shares its cores, the
// engine times computation (kernels and the code between them) in the
// process's CPU time, what the work demands, and the replay at End runs the
// logged work on the node's cores, the processes of a core set sharing it
// (sim.go: simulate).

// CopyCost is the core time a process spends per byte it moves in a
// transfer above the eager limit, on a core it shares (s/B), where the
// engine cannot measure it (measureCopyCost). A transfer's measured time
// is then part work, which the processes of a shared core take turns at,
// and part waiting, which passes at its own pace (simulate): in a
// selective run most processes skip their work and a transfer measured
// there meets idle cores, which the full run's does not. With transfers
// all waiting, cholesky3d n=4096 at b >= 128 (8 processes on 2 cores) was
// predicted 6-12% short of its references at 2^-1 and 2^-3 (pooled over 5
// sweeps); with transfers all work, 58-97% over. 2e-10 s/B fitted the logs
// of 5 such sweeps on 2026-11-28 (sim_calibrate_test.go); on 2026-11-29
// the same machine's logs fitted 0.4e-10, and 2e-10 put every block size
// 9-14% over.
const CopyCost = 2e-10

// copyProbe is the message a process sends its partner in measureCopyCost
// (bytes): large enough that the transfer's time is its copy and its
// waits, not its latency (2-32 MB gave the same cost within 20%).
const copyProbe = 8 << 20

// copyReps is how many times measureCopyCost times each exchange; the
// median counts.
const copyReps = 5

// measureCopyCost measures the copy work of a large transfer on this
// node's shared cores (collective over world, the engine's own): the time per byte one pair
// of processes takes to exchange copyProbe bytes while the others wait
// (alone), and the time every pair takes exchanging at once (crowded).
// With k processes to a CPU, a transfer of fixed part F and work W takes
// F + W alone and F + k·W crowded (simulate's model), so
//
//	W = (crowded - alone) / (k - 1).
//
// On 8 processes on 2 cores (k = 4) it gave 0.37-0.59e-10 s/B on a day
// when the replay of cholesky3d's logs fitted 0.4-0.5e-10. It returns
// CopyCost where it cannot measure: processes on several hosts, no core
// shared, an odd number of processes, or a result that is not a cost.
func measureCopyCost(world *mpi.Comm, p placement) (float64, error) {
	n := world.Size()
	r := world.Rank()
	if !p.oneHost || n%2 != 0 || n < 4 {
		return CopyCost, nil
	}
	k := float64(p.members[p.group[0]]) / p.capacity[p.group[0]]
	for g := range p.members {
		if float64(p.members[g])/p.capacity[g] != k {
			return CopyCost, nil // uneven groups: no one k
		}
	}
	if k <= 1 {
		return CopyCost, nil
	}
	m := copyProbe / 8
	send, recv := make([]float64, m), make([]float64, m)
	peer := r ^ 1
	alone, crowded := make([]float64, copyReps), make([]float64, copyReps)
	exchange := func(tag int) (float64, error) {
		t := mpi.Wtime()
		if _, err := mpi.Sendrecv(world, send, peer, tag, recv, peer, tag); err != nil {
			return 0, err
		}
		return mpi.Wtime() - t, nil
	}
	for i := range copyReps {
		if err := world.Barrier(); err != nil {
			return 0, fmt.Errorf("copy cost: %w", err)
		}
		if r < 2 {
			t, err := exchange(copyTag)
			if err != nil {
				return 0, fmt.Errorf("copy cost: %w", err)
			}
			alone[i] = t
		}
		if err := world.Barrier(); err != nil {
			return 0, fmt.Errorf("copy cost: %w", err)
		}
		t, err := exchange(copyTag + 1)
		if err != nil {
			return 0, fmt.Errorf("copy cost: %w", err)
		}
		crowded[i] = t
	}
	// Summed over the world: the pair's two alone times, every crowded one.
	sum := []float64{0, median(crowded)}
	if r < 2 {
		sum[0] = median(alone)
	}
	if err := mpi.Allreduce(world, sum, sum, mpi.Sum); err != nil {
		return 0, fmt.Errorf("copy cost: %w", err)
	}
	return copyWork(sum[0]/2, sum[1]/float64(n), k, copyProbe), nil
}

// copyTag is the tag of measureCopyCost's messages on the engine's own
// world communicator.
const copyTag = 7400

// copyWork is the work per byte of a transfer of size bytes that takes
// alone seconds by itself and crowded seconds with k processes to a CPU
// (measureCopyCost), at most the alone time per byte (a transfer cannot
// be more work than it takes); CopyCost where the times do not give a
// cost.
func copyWork(alone, crowded, k float64, size int) float64 {
	w := (crowded - alone) / ((k - 1) * float64(size))
	if !(w >= 0) || math.IsInf(w, 0) || !(alone > 0) {
		return CopyCost
	}
	return math.Min(w, alone/float64(size))
}

// median is the middle of x (the upper middle for an even count); x is
// reordered.
func median(x []float64) float64 {
	slices.Sort(x)
	return x[len(x)/2]
}

// placement says which processes of the world share a set of cores: those
// on one host bound to the same CPU set.
type placement struct {
	group    []int     // per world rank: its group
	capacity []float64 // per group: CPUs in its set
	members  []int     // per group: processes
	oneHost  bool      // every process on one host (they read the same mpi.Clock)
	copyCost float64   // core time per byte of a transfer on a shared core (s/B): CopyCost
}

// shared reports whether group g has more processes than CPUs.
func (p placement) shared(g int) bool { return float64(p.members[g]) > p.capacity[g] }

// anyShared reports whether some group has more processes than CPUs.
func (p placement) anyShared() bool {
	for g := range p.members {
		if p.shared(g) {
			return true
		}
	}
	return false
}

// crowded reports whether rank r's group has more processes among the first
// procs world ranks (a grid's) than CPUs: the others wait outside the run.
func (p placement) crowded(r, procs int) bool {
	g := p.group[r]
	return float64(p.among(procs)[g]) > p.capacity[g]
}

// among counts, per group, its processes among the first procs world ranks.
func (p placement) among(procs int) []int {
	n := make([]int, len(p.members))
	for q := range min(procs, len(p.group)) {
		n[p.group[q]]++
	}
	return n
}

// load is how many of the first procs world ranks (a grid's) take turns at
// a CPU where they are most crowded: the most, over core sets, of their
// processes there over its CPUs, rounded up. Every process computes the
// same from the same placement.
func (p placement) load(procs int) int {
	most := 1
	for g, k := range p.among(procs) {
		most = max(most, int(math.Ceil(float64(k)/p.capacity[g])))
	}
	return most
}

// placementOf learns every process's host and CPU set (collective over world).
func placementOf(world *mpi.Comm) (placement, error) {
	name, err := mpi.ProcessorName()
	if err != nil {
		return placement{}, fmt.Errorf("placement: %w", err)
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	host := int64(h.Sum64() >> 1)
	mask, ncpu := int64(0), int64(0)
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil {
		ncpu = int64(set.Count())
		m := fnv.New64a()
		for cpu := 0; cpu < len(set)*64; cpu++ {
			if set.IsSet(cpu) {
				fmt.Fprintf(m, "%d,", cpu)
			}
		}
		mask = int64(m.Sum64() >> 1)
	}
	all := make([]int64, 3*world.Size())
	if err := mpi.Allgather(world, []int64{host, mask, ncpu}, all); err != nil {
		return placement{}, fmt.Errorf("placement: %w", err)
	}
	return groupPlacement(all), nil
}

// groupPlacement groups processes by (host, CPU set) from their triples
// (host hash, CPU-set hash, CPUs). A process whose CPU set is unknown (0
// CPUs) is a group of its own with one CPU.
func groupPlacement(all []int64) placement {
	n := len(all) / 3
	p := placement{group: make([]int, n), oneHost: true, copyCost: CopyCost}
	ids := map[[2]int64]int{}
	for r := 0; r < n; r++ {
		host, mask, ncpu := all[3*r], all[3*r+1], all[3*r+2]
		p.oneHost = p.oneHost && host == all[0]
		k := [2]int64{host, mask}
		g, ok := ids[k]
		if !ok || ncpu == 0 {
			g = len(p.members)
			ids[k] = g
			p.members = append(p.members, 0)
			p.capacity = append(p.capacity, float64(max(ncpu, 1)))
		}
		p.group[r] = g
		p.members[g]++
	}
	return p
}

// processCPU is the process's CPU time in seconds: all its threads, so a
// kernel that spreads over goroutines (gonum's large products) counts whole.
func processCPU() float64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return float64(ts.Sec) + 1e-9*float64(ts.Nsec)
}

// cpuClockWorks reports whether the process CPU clock can be read.
func cpuClockWorks() bool {
	var ts unix.Timespec
	return unix.ClockGettime(unix.CLOCK_PROCESS_CPUTIME_ID, &ts) == nil
}

// cpuReadCost measures what one CPU-clock read costs in CPU time (a system
// call: about 0.7 us on our VMs, where a monotonic-clock read is 0.05 us).
// The least of a few batches: a batch that was interrupted costs more.
func cpuReadCost() float64 {
	const n = 100
	best := math.Inf(1)
	for b := 0; b < 5; b++ {
		t0 := processCPU()
		for i := 0; i < n; i++ {
			processCPU()
		}
		best = math.Min(best, (processCPU()-t0)/(n+1))
	}
	return best
}

// cpuDerive is how long after a reading of the CPU clock the next one is
// derived from the monotonic clock instead. A process that has to wait for
// its core usually waits out a neighbour's time slice, milliseconds; within
// a few microseconds of a reading its CPU time and wall time advance
// together. When they do not (a neighbour woken for a moment), a derived
// reading is off by at most this much, and the next real reading puts the
// clock right again: the error stays with one interval and does not add up.
const cpuDerive = 10e-6

// cpuClock is the process's CPU time at less than a system call a reading,
// without what reading it costs. The kernel's CPU clock is read only when
// cpuDerive or more has passed since its last reading (monotonic clock,
// a few tens of nanoseconds); a reading sooner is that one plus the time
// since. Back-to-back events (the end of one kernel, the start of the
// next; a non-blocking send posted) so share one system call: on ranks
// that share cores, a system call costs a wait for the core as well as
// its own CPU time.
// Every real reading is also lowered by the reads so far (half of the one
// it makes): the interval between two readings holds half of each, which
// is the engine's, not the work's. Readings never go back.
type cpuClock struct {
	cost   float64   // one real read, in CPU time
	base   time.Time // origin of the monotonic readings
	reads  int64     // real reads so far
	at     float64   // the last real reading, read costs taken off
	wallAt float64   // when it returned (since base)
	out    float64   // the last reading returned
}

// newCPUClock measures what a read of the kernel's clock costs and starts
// a clock (the zero cpuClock has no origin: use this). Its readings fall
// behind the process's CPU time by the reads' cost, so compare readings of
// one clock only.
func newCPUClock() *cpuClock { return &cpuClock{cost: cpuReadCost(), base: time.Now()} }

// now returns the CPU time in seconds (an origin of its own: use differences).
func (c *cpuClock) now() float64 {
	if d := time.Since(c.base).Seconds() - c.wallAt; c.reads > 0 && d < cpuDerive {
		c.out = max(c.at+d, c.out)
		return c.out
	}
	c.reads++
	c.at = processCPU() - (float64(c.reads)-0.5)*c.cost
	c.wallAt = time.Since(c.base).Seconds()
	if c.reads > 1 {
		// One read may cost less than the least batch's average: never
		// go back past the last reading.
		c.at = max(c.at, c.out)
	}
	c.out = c.at
	return c.out
}
