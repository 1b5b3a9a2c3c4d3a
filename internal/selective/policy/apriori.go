package policy

import "math"

// Apriori is the paper's a priori propagation: one extra run of the
// configuration, a skeleton that executes no computation kernel, counts
// every kernel along the critical path first, and alpha is that count a,
//
//	h / (m · sqrt(a)) <= epsilon,
//
// applied from the selective run's first call. The counting run is charged
// to the selective run's time.
type Apriori struct{}

var (
	_ Rehearser = Apriori{}
	_ Promiser  = Apriori{}
)

// Name implements Policy.
func (Apriori) Name() string { return "apriori" }

// Doc implements Policy.
func (Apriori) Doc() string {
	return "alpha = the critical-path count of an extra counting run (a skeleton) first"
}

// Significance implements Policy: alpha = the counting run's critical-path count.
func (Apriori) Significance(k Kernel) float64 { return k.CriticalCount }

// CountingRun implements Rehearser.
func (Apriori) CountingRun() {}

// Distance implements Promiser: alpha is fixed, so n·a >= q after q/a - n
// more samples (a below 1 counts as 1).
func (Apriori) Distance(n, q float64, k Kernel) float64 { return q/math.Max(k.CriticalCount, 1) - n }
