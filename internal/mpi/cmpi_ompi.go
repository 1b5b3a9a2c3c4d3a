//go:build !mpich && !mpicustom

package mpi

// Open MPI, the default. The pkg-config line lives in its own file: Go's build
// cache does not tell apart builds that differ only in which tagged #cgo line
// applies (golang/go#73033), so one line per file keeps MPICH and Open MPI
// builds from reusing each other's objects.

// #cgo pkg-config: ompi
import "C"
