package policy

import "math"

// Local is the paper's local propagation: alpha is this process's count c
// of calls of the kernel in the current run (skipped ones included), with
// no information from other processes,
//
//	h / (m · sqrt(c)) <= epsilon.
type Local struct{}

var _ Promiser = Local{}

// Name implements Policy.
func (Local) Name() string { return "local" }

// Doc implements Policy.
func (Local) Doc() string { return "alpha = this process's calls of the kernel in the run" }

// Significance implements Policy: alpha = the calls so far in this run.
func (Local) Significance(k Kernel) float64 { return float64(k.Calls) }

// Distance implements Promiser. Alpha is the calls c, which grow with the
// samples: the test holds after k more when (n+k)(c+k) >= q, that is
// k = (sqrt((n-c)² + 4q) - (n+c)) / 2.
func (Local) Distance(n, q float64, k Kernel) float64 {
	c := float64(k.Calls)
	return (math.Sqrt((n-c)*(n-c)+4*q) - (n + c)) / 2
}
