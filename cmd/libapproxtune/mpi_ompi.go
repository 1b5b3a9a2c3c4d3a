//go:build !mpich && !mpicustom

package main

// Open MPI, the default (one #cgo pkg-config line per file, as in internal/mpi).

// #cgo pkg-config: ompi
import "C"
