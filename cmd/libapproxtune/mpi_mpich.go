//go:build mpich

package main

// MPICH, with -tags mpich.

// #cgo pkg-config: mpich
import "C"
