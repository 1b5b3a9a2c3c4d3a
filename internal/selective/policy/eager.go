package policy

// Eager is the paper's eager propagation: alpha = 1, but a kernel that one
// process finds predictable,
//
//	h / m <= epsilon,
//
// is shared with its statistics along every axis of the processor grid and
// skipped on every process once all know it (on one host, beyond the
// paper, the processes' samples are also pooled after every run: see
// Sharer); the statistics carry over to the next configuration, so a
// kernel seen before need not run again. It is meant for bulk-synchronous
// algorithms. It makes no promises above tolerance 0: its records carry
// the shared statistics.
type Eager struct{}

var (
	_ Sharer  = Eager{}
	_ Carrier = Eager{}
)

// Name implements Policy.
func (Eager) Name() string { return "eager" }

// Doc implements Policy.
func (Eager) Doc() string {
	return "predictable anywhere: shared along the grid and skipped everywhere; kept across configurations"
}

// Significance implements Policy: alpha = 1.
func (Eager) Significance(Kernel) float64 { return 1 }

// SharesStatistics implements Sharer.
func (Eager) SharesStatistics() {}

// CarriesStatistics implements Carrier.
func (Eager) CarriesStatistics() {}
