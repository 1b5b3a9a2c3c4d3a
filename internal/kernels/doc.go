// Package kernels provides the dense linear-algebra kernels (BLAS level 3 and
// the LAPACK factorization building blocks) used by the workloads of the MPI
// autotuning agent, together with the narrow entry point through which the
// autotuning engine intercepts every kernel invocation.
//
// # Matrix layout
//
// All matrices are float64 and stored in ROW-MAJOR order with a leading
// dimension (stride) ld that is at least the number of columns: element (i, j)
// of a matrix stored in s with leading dimension ld is s[i*ld+j]. A matrix
// with r rows and c columns therefore needs len(s) >= (r-1)*ld+c (when r and c
// are positive) and ld >= max(1, c). This is the convention of gonum's
// blas.Float64 and lapack.Float64 interfaces, whose flag types (blas.Transpose,
// blas.Uplo, blas.Side, blas.Diag, lapack.Direct, lapack.StoreV) this package
// uses, and whose semantics every routine follows.
//
// # Backends
//
// A [Backend] is a BLAS/LAPACK implementation. Two are provided: OpenBLAS
// through a thin cgo binding (compiled in when cgo is enabled and the
// noopenblas build tag is not set; it needs pkg-config packages openblas and
// lapacke) and gonum's pure-Go implementation, which is always available.
// [DefaultBackend] selects one, honouring the APPROXTUNE_BLAS environment
// variable. A Backend owns workspace and is not safe for concurrent use.
//
// # Interception
//
// Workloads call the methods of [Kernels]. Each method describes its
// invocation as a [Call] (with a [Signature] identifying the routine, its
// dimensions and flags) and hands it either straight to the backend or, when
// an [Interceptor] is installed, to the interceptor, which may run it (and
// time it) or skip it. This path is allocation free.
package kernels
