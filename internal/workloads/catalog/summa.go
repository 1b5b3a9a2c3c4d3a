package catalog

import (
	"fmt"

	"github.com/approxtune/approxtune/sweep"
)

// SUMMA describes summa, the matrix product C = A·B on a 2D grid (package
// workloads runs it).
type SUMMA struct{}

// Name is what specs and users call the workload.
func (SUMMA) Name() string { return "summa" }

// Doc describes the workload in a line.
func (SUMMA) Doc() string {
	return "C = A·B on a pr x pc grid (SUMMA): panel broadcasts along rows and columns, one gemm per step"
}

// Params lists the workload's parameters, in expansion order.
func (SUMMA) Params() []sweep.Param {
	return []sweep.Param{
		{Name: "n", Kind: sweep.Int, Doc: "matrix dimension", Default: 1024, Min: 1, Max: 1 << 16},
		{Name: "grid", Kind: sweep.Grid, Doc: "processor grid PRxPC", Default: sweep.GridShape{2, 2}, Dims: 2},
		{Name: "b", Kind: sweep.Int, Doc: "panel width (block size)", Default: 128, Min: 1, Max: 1 << 16},
	}
}

// Grid is the processor grid a configuration runs on: its grid parameter.
func (SUMMA) Grid(c sweep.Config) sweep.GridShape { return c.Grid("grid") }

// Check validates the constraints between a configuration's parameters
// for an agent of ranks processes, naming what is valid.
func (SUMMA) Check(c sweep.Config, ranks int) error {
	n, g, b := c.Int("n"), c.Grid("grid"), c.Int("b")
	if n%g[0] != 0 || n%g[1] != 0 {
		return fmt.Errorf("n=%d must be divisible by both grid dimensions of %s", n, g)
	}
	mr, mc := n/g[0], n/g[1]
	if err := divides(b, "the local block sizes n/pr and n/pc", mr, mc); err != nil {
		return fmt.Errorf("%w: with n=%d and grid %s, b must divide %d", err, n, g, gcd(mr, mc))
	}
	return nil
}
