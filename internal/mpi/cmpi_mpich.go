//go:build mpich

package mpi

// MPICH, with -tags mpich (see cmpi_ompi.go for why this is its own file).

// #cgo pkg-config: mpich
import "C"
