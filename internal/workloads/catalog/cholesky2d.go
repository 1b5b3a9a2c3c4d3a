package catalog

import (
	"fmt"

	"github.com/approxtune/approxtune/sweep"
)

// Cholesky2D describes cholesky2d, the tile Cholesky factorization on a 2D
// block-cyclic grid with look-ahead (package workloads runs it).
type Cholesky2D struct{}

// MaxTag bounds cholesky2d's message tags: MPI guarantees tags up to 32767.
const MaxTag = 32767

// Name is what specs and users call the workload.
func (Cholesky2D) Name() string { return "cholesky2d" }

// Doc describes the workload in a line.
func (Cholesky2D) Doc() string {
	return "tile Cholesky A = L·Lᵀ, 2D block-cyclic on a pr x pc grid, tile size b, look-ahead depth (potrf, trsm, syrk, gemm; isend/irecv)"
}

// Params lists the workload's parameters, in expansion order.
func (Cholesky2D) Params() []sweep.Param {
	return []sweep.Param{
		{Name: "n", Kind: sweep.Int, Doc: "matrix dimension", Default: 1024, Min: 1, Max: 1 << 16},
		{Name: "grid", Kind: sweep.Grid, Doc: "processor grid PRxPC (tile (I,J) on process (I mod PR, J mod PC))", Default: sweep.GridShape{2, 2}, Dims: 2},
		{Name: "b", Kind: sweep.Int, Doc: "tile size (the last tile is partial when b does not divide n)", Default: 128, Min: 1, Max: 1 << 16},
		{Name: "lookahead", Kind: sweep.Int, Doc: "look-ahead depth: 0 bulk-synchronous; d >= 1 updates columns k+1..k+d and sends panel k+1 before the rest of step k's update", Default: 1, Min: 0, Max: 4},
	}
}

// Grid is the processor grid a configuration runs on: its grid parameter.
func (Cholesky2D) Grid(c sweep.Config) sweep.GridShape { return c.Grid("grid") }

// Check validates the constraints between a configuration's parameters
// for an agent of ranks processes, naming what is valid.
func (Cholesky2D) Check(c sweep.Config, ranks int) error {
	n, g, b := c.Int("n"), c.Grid("grid"), c.Int("b")
	if len(g) != 2 {
		return fmt.Errorf("grid %s has %d dimensions: want a 2D grid PRxPC", g, len(g))
	}
	if g.Procs() > ranks {
		return fmt.Errorf("grid %s needs %d processes, the agent has %d: want a grid of at most %d processes", g, g.Procs(), ranks, ranks)
	}
	if b > n {
		return fmt.Errorf("b=%d is larger than n=%d: want a tile size of at most n", b, n)
	}
	if nt := (n + b - 1) / b; nt > MaxTag {
		return fmt.Errorf("n=%d with b=%d makes %d tiles per dimension, more than the %d message tags allow: want b >= %d", n, b, nt, MaxTag, (n+MaxTag-1)/MaxTag)
	}
	return nil
}
