// Package policy holds approxtune's skipping policies: the rules by which the
// engine (package selective) decides that a kernel's mean time is known well
// enough to stop executing it (docs/design.md §3; Hutter and Solomonik,
// "Accelerating Distributed-Memory Autotuning via Statistical Analysis of
// Execution Paths", §III and §IV-B).
//
// Every policy applies the same test to a kernel's running sample on one
// process: with n executions, mean m and confidence half-width h of the
// mean, the kernel is predictable when n >= n_min and
//
//	h / (m · sqrt(alpha)) <= epsilon
//
// where epsilon is the user's tolerance and alpha, the kernel's
// significance, is how many times the policy takes the kernel to lie on the
// critical path: a sum of alpha independent samples has a relative error
// sqrt(alpha) times smaller than one. Policies differ in alpha
// (Policy.Significance) and in what the engine does around the test, which
// a policy declares by implementing the optional interfaces below; the
// engine finds them by type assertion, as net/http finds a Flusher:
//
//   - PathCounter: alpha is read from kernel counts that travel with the
//     critical path (online);
//   - Rehearser: alpha comes from one extra run, a skeleton of the
//     program, that counts the critical path first (apriori);
//   - Sharer: a kernel predictable on one process is shared with all and
//     skipped everywhere once every process knows it (eager);
//   - Carrier: statistics are kept from one configuration to the next
//     (eager); other policies start every configuration afresh, so each of
//     their kernels runs at least once per configuration;
//   - Promiser: far from predictable, a process may promise to execute a
//     collective for some calls, so its members skip the records exchange.
//
// The engine never compares a policy by name: a new policy is one file with
// its type and one line in All.
package policy

import (
	"fmt"
	"strings"
)

// Kernel is what a policy reads of one kernel signature on one process when
// the engine asks for its significance.
type Kernel struct {
	// Calls is this process's calls of the kernel in the current run, the
	// call being decided included.
	Calls int64
	// PathCount is the kernel's count along the sub-critical path that
	// reaches this process, propagated with every message (filled only for
	// a PathCounter).
	PathCount float64
	// CriticalCount is the kernel's count on the critical path of the
	// configuration's counting run (zero unless a Rehearser's counting run
	// came first).
	CriticalCount float64
}

// Policy is a selective-execution policy.
type Policy interface {
	// Name is what the user types and events carry.
	Name() string
	// Doc is a one-line description for help text.
	Doc() string
	// Significance is alpha in the predictability test: how many times the
	// kernel is taken to lie on the critical path. Values below 1 count as 1.
	Significance(k Kernel) float64
}

// PathCounter is a policy whose significance is the kernel's count along
// the current sub-critical path: each process counts the kernels it runs,
// the counts travel with every message, and a receiver whose path is
// replaced by a longer one takes that path's counts too. Its collectives are
// never settled (skipped without records), since the records carry the counts.
type PathCounter interface {
	Policy
	// CountsPath marks the capability.
	CountsPath()
}

// Rehearser is a policy that runs each configuration once more before its
// selective run, a skeleton that executes no computation kernel (package
// selective, mode Counting), counting every kernel along the critical path; the counts
// of the process with the longest path become the kernels' CriticalCount.
// The counting run's time is part of the selective run's cost.
type Rehearser interface {
	Policy
	// CountingRun marks the capability.
	CountingRun()
}

// Sharer is a policy whose kernels, once predictable on any process, are
// shared along every axis of the processor grid (the paper's aggregate
// channels) with their statistics, and skipped on every process once the
// statistics have crossed every axis, so the decision is the same
// everywhere. A kernel predictable anywhere is predictable everywhere. On
// one host, the processes' samples of a computation kernel that none has
// yet measured to the tolerance, and that a run calls fewer times than
// the test needs samples, are also pooled at the end of every run (the
// engine's pool.go): a kernel each process calls once a run is then known
// after one run instead of two.
type Sharer interface {
	Policy
	// SharesStatistics marks the capability.
	SharesStatistics()
}

// Carrier is a policy that keeps its kernels' statistics from one
// configuration of a sweep to the next: a kernel seen before need not run
// again. Others start every selective run with empty statistics.
type Carrier interface {
	Policy
	// CarriesStatistics marks the capability.
	CarriesStatistics()
}

// Promiser is a policy under which a process far from finding a collective
// predictable may promise to execute it for a number of calls; while a
// member's promise lasts, the communicator's members run the collective
// without exchanging records (package selective, Engine.promise).
type Promiser interface {
	Policy
	// Distance is how many more samples the kernel needs before it passes
	// the predictability test, given its n samples so far and
	// q = (z·s / (mean·epsilon))², so that the test reads n·alpha >= q.
	// A result that is not a number promises nothing.
	Distance(n, q float64, k Kernel) float64
}

// All returns the registered policies in the order help lists them. This
// list is the registry: a new policy is one line here.
func All() []Policy {
	return []Policy{
		Conditional{},
		Local{},
		Online{},
		Apriori{},
		Eager{},
	}
}

// Names lists the registered policies' names, in registry order.
func Names() []string {
	var ns []string
	for _, p := range All() {
		ns = append(ns, p.Name())
	}
	return ns
}

// Lookup finds a registered policy by name; the error names the valid ones.
func Lookup(name string) (Policy, error) {
	for _, p := range All() {
		if p.Name() == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("unknown policy %q: want one of %s", name, strings.Join(Names(), ", "))
}
