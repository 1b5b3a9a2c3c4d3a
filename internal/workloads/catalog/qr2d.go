package catalog

import (
	"fmt"

	"github.com/approxtune/approxtune/sweep"
)

// QR2D describes qr2d, the blocked Householder QR factorization on a 2D
// block-cyclic grid (package workloads runs it).
type QR2D struct{}

// Name is what specs and users call the workload.
func (QR2D) Name() string { return "qr2d" }

// Doc describes the workload in a line.
func (QR2D) Doc() string {
	return "Householder QR of an m x n matrix, 2D block-cyclic on pr x pc (CANDMC-like): TSQR panel with Householder reconstruction, Y/T row broadcasts, gemm trailing update, optional lookahead"
}

// Params lists the workload's parameters, in expansion order.
func (QR2D) Params() []sweep.Param {
	return []sweep.Param{
		{Name: "m", Kind: sweep.Int, Doc: "matrix rows (m >= n)", Default: 4096, Min: 1, Max: 1 << 20},
		{Name: "n", Kind: sweep.Int, Doc: "matrix columns", Default: 512, Min: 1, Max: 1 << 16},
		{Name: "grid", Kind: sweep.Grid, Doc: "processor grid PRxPC", Default: sweep.GridShape{2, 2}, Dims: 2},
		{Name: "b", Kind: sweep.Int, Doc: "block size (panel width) of the block-cyclic layout", Default: 32, Min: 1, Max: 1 << 16},
		{Name: "lookahead", Kind: sweep.Int, Doc: "1: the next panel is updated, factored and sent before the rest of the trailing update; 0: none", Default: 0, Min: 0, Max: 1},
	}
}

// Grid is the processor grid a configuration runs on: its grid parameter.
func (QR2D) Grid(c sweep.Config) sweep.GridShape { return c.Grid("grid") }

// Check validates the constraints between a configuration's parameters
// for an agent of ranks processes, naming what is valid.
func (QR2D) Check(c sweep.Config, ranks int) error {
	m, n, g, b, la := c.Int("m"), c.Int("n"), c.Grid("grid"), c.Int("b"), c.Int("lookahead")
	switch {
	case len(g) != 2 || g[0] < 1 || g[1] < 1:
		return fmt.Errorf("grid %s is not a 2D grid: want PRxPC with PR, PC >= 1", g)
	case g.Procs() > ranks:
		return fmt.Errorf("grid %s needs %d processes, the agent has %d: want a grid of at most %d processes", g, g.Procs(), ranks, ranks)
	case m < n:
		return fmt.Errorf("m=%d < n=%d: qr2d factors tall or square matrices, want m >= n", m, n)
	case b < 1 || m%b != 0 || n%b != 0:
		return fmt.Errorf("b=%d must divide both m=%d and n=%d, and leave every process of grid %s a block row and column: want b in %s", b, m, n, g, blockList(m, n, g[0], g[1]))
	case m/b < g[0]:
		return fmt.Errorf("b=%d leaves process rows without a block row on grid %s: m/b=%d block rows < pr=%d, want b <= m/pr=%d", b, g, m/b, g[0], m/g[0])
	case n/b < g[1]:
		return fmt.Errorf("b=%d leaves process columns without a block column on grid %s: n/b=%d block columns < pc=%d, want b <= n/pc=%d", b, g, n/b, g[1], n/g[1])
	case la != 0 && la != 1:
		return fmt.Errorf("lookahead=%d: want 0 or 1", la)
	}
	return nil
}
