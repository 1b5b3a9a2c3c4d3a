package policy

// Online is the paper's online propagation: alpha is the kernel's count p
// along the current sub-critical path, propagated with the path (a process
// that takes a longer path from a message takes that path's counts),
//
//	h / (m · sqrt(p)) <= epsilon.
//
// It makes no promises: the records it would leave out carry the counts.
type Online struct{}

var _ PathCounter = Online{}

// Name implements Policy.
func (Online) Name() string { return "online" }

// Doc implements Policy.
func (Online) Doc() string { return "alpha = the kernel's count along the current sub-critical path" }

// Significance implements Policy: alpha = the count along the path.
func (Online) Significance(k Kernel) float64 { return k.PathCount }

// CountsPath implements PathCounter.
func (Online) CountsPath() {}
