package catalog

import (
	"fmt"

	"github.com/approxtune/approxtune/sweep"
)

// Cholesky3D describes cholesky3d, Capital's recursive Cholesky factorization
// with triangular inverse on a c x c x c grid (package workloads runs it).
type Cholesky3D struct{}

// Name is what specs and users call the workload.
func (Cholesky3D) Name() string { return "cholesky3d" }

// Doc describes the workload in a line.
func (Cholesky3D) Doc() string {
	return "Cholesky factorization and triangular inverse on a c x c x c grid (Capital): recursive, 3D products, base case of size b by strategy 1-3"
}

// Params lists the workload's parameters, in expansion order.
func (Cholesky3D) Params() []sweep.Param {
	return []sweep.Param{
		{Name: "n", Kind: sweep.Int, Doc: "matrix dimension (b times a power of two)", Default: 1024, Min: 1, Max: 1 << 16},
		{Name: "grid", Kind: sweep.Grid, Doc: "processor grid CxCxC (a cube; layers are replicas)", Default: sweep.GridShape{2, 2, 2}, Dims: 3},
		{Name: "b", Kind: sweep.Int, Doc: "base-case size (a multiple of c)", Default: 64, Min: 1, Max: 1 << 16},
		{Name: "strategy", Kind: sweep.Choice, Doc: "base case: 1 gather/factor/scatter in one layer + depth broadcast; 2 all-gather and factor in every layer; 3 all-gather and factor in one layer + depth broadcast",
			Default: "1", Choices: []string{"1", "2", "3"}},
	}
}

// Grid is the processor grid a configuration runs on: its grid parameter.
func (Cholesky3D) Grid(c sweep.Config) sweep.GridShape { return c.Grid("grid") }

// Check validates the constraints between a configuration's parameters
// for an agent of ranks processes, naming what is valid.
func (Cholesky3D) Check(c sweep.Config, ranks int) error {
	n, g, b := c.Int("n"), c.Grid("grid"), c.Int("b")
	if len(g) != 3 || g[0] != g[1] || g[1] != g[2] {
		return fmt.Errorf("grid %s is not a cube: cholesky3d needs a c x c x c grid, like 2x2x2 (each of the c layers holds a copy cyclic over its c x c face)", g)
	}
	cc := g[0]
	if p := cc * cc * cc; p > ranks {
		return fmt.Errorf("grid %s needs %d processes, the agent has %d", g, p, ranks)
	}
	if b%cc != 0 {
		return fmt.Errorf("b=%d must be a multiple of the grid edge c=%d, so every base-case block splits evenly over the c x c face", b, cc)
	}
	if b > n {
		return fmt.Errorf("b=%d exceeds n=%d: the base case cannot be larger than the matrix", b, n)
	}
	if q := n / b; n%b != 0 || q&(q-1) != 0 {
		return fmt.Errorf("n=%d must be b=%d times a power of two, so that halving the matrix at each level of the recursion ends exactly in base cases of size b (every split then stays a multiple of c, keeping each half cyclic)", n, b)
	}
	return nil
}
