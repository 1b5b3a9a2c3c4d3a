package policy

// Conditional is the paper's conditional execution, the most conservative
// policy: alpha = 1, so every kernel must be known to the tolerance on its
// own,
//
//	h / m <= epsilon.
//
// Each process decides its computation kernels alone; a communication is
// skipped only when every member of its communicator finds it predictable.
type Conditional struct{}

var _ Promiser = Conditional{}

// Name implements Policy.
func (Conditional) Name() string { return "conditional" }

// Doc implements Policy.
func (Conditional) Doc() string { return "alpha = 1: every kernel known to the tolerance on its own" }

// Significance implements Policy: alpha = 1.
func (Conditional) Significance(Kernel) float64 { return 1 }

// Distance implements Promiser: n·1 >= q after q - n more samples.
func (Conditional) Distance(n, q float64, _ Kernel) float64 { return q - n }
