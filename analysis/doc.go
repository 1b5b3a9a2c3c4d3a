// Package analysis holds approxtune's numerical analyses of timings: pure
// functions with no MPI, no user interface and no state between calls.
//
//   - Ranking (Sankaran & Bientinesi, "Discriminating Equivalent Algorithms
//     via Relative Performance"): Compare is the bootstrapped three-way
//     comparison of two timing samples, Rank sorts configurations into
//     performance classes by bubble sort with rank merging and gives each
//     its relative score.
//   - Models (Extra-P, as used by Copik et al., "Extracting Clean
//     Performance Models from Tainted Programs"): FitModel searches the
//     performance model normal form (PMNF) for the function of one or more
//     parameters that best explains measured means.
//   - Anomalies (Miletto et al., "Performance analysis of task-based
//     multi-frontal sparse linear solvers"): DetectAnomalies regresses
//     log(duration) on log(size) per routine and flags executions above the
//     prediction interval.
//
// Randomized functions take an explicit *rand.Rand (math/rand/v2) so that
// results are reproducible from a seed; none uses a global source.
package analysis
