package workloads

import (
	"context"
	"math"

	"gonum.org/v1/gonum/blas"

	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/selective"
	"github.com/approxtune/approxtune/internal/workloads/catalog"
	"github.com/approxtune/approxtune/sweep"
)

// summa is C = A·B on a pr x pc grid with a block distribution: process (i, j)
// owns rows [i·n/pr, (i+1)·n/pr) and columns [j·n/pc, (j+1)·n/pc) of each
// matrix. Step k broadcasts the b columns of A from the owning process column
// along every process row, and the b rows of B from the owning process row
// along every process column, then each process multiplies them into its C.
type summa struct{ catalog.SUMMA }

type summaRun struct {
	env          *Env
	n, b, mr, mc int
	pr, pc       int
	i, j         int // grid coordinates
	a, bm, c     []float64
	ap, bp       []float64 // panel buffers
}

func (summa) Setup(env *Env, c sweep.Config) (Instance, error) {
	n, g, b := c.Int("n"), c.Grid("grid"), c.Int("b")
	s := &summaRun{env: env, n: n, b: b, pr: g[0], pc: g[1], mr: n / g[0], mc: n / g[1],
		i: env.Grid.Coords[0], j: env.Grid.Coords[1]}
	s.a = buffer(s.mr * s.mc)
	s.bm = buffer(s.mr * s.mc)
	s.c = buffer(s.mr * s.mc)
	s.ap = buffer(s.mr * b)
	s.bp = buffer(b * s.mc)
	return s, nil
}

func (s *summaRun) Init() {
	r0, c0 := s.i*s.mr, s.j*s.mc
	for r := 0; r < s.mr; r++ {
		for q := 0; q < s.mc; q++ {
			s.a[r*s.mc+q] = entry(s.env.Seed, 1, r0+r, c0+q)
			s.bm[r*s.mc+q] = entry(s.env.Seed, 2, r0+r, c0+q)
			s.c[r*s.mc+q] = 0
		}
	}
}

func (s *summaRun) Run(ctx context.Context) error {
	row, col := s.env.Grid.Along(1), s.env.Grid.Along(0)
	for k := 0; k < s.n; k += s.b {
		// A's columns k..k+b live on process column k/mc.
		if owner := k / s.mc; owner == s.j {
			off := k % s.mc
			for r := 0; r < s.mr; r++ {
				copy(s.ap[r*s.b:(r+1)*s.b], s.a[r*s.mc+off:r*s.mc+off+s.b])
			}
			row.Bcast(s.ap, owner)
		} else {
			row.Bcast(s.ap, owner)
		}
		// B's rows k..k+b live on process row k/mr, contiguous in row-major.
		bp := s.bp
		if owner := k / s.mr; owner == s.i {
			off := k % s.mr
			bp = s.bm[off*s.mc : (off+s.b)*s.mc]
		}
		col.Bcast(bp, k/s.mr)
		s.env.K.Gemm(blas.NoTrans, blas.NoTrans, s.mr, s.mc, s.b, 1, s.ap, s.b, bp, s.mc, 1, s.c, s.mc)
	}
	return nil
}

// Verify compares C·x with A·(B·x) for a random vector x, relative to
// ‖A‖_F‖B‖_F‖x‖_2.
func (s *summaRun) Verify() float64 {
	row, col, all := s.env.Grid.Along(1).Raw(), s.env.Grid.Along(0).Raw(), s.env.Grid.Comm.Raw()
	x := make([]float64, s.n)
	for q := range x {
		x[q] = entry(s.env.Seed, 3, q, 0)
	}
	xs := x[s.j*s.mc : (s.j+1)*s.mc]
	y := matvec(s.c, s.mr, s.mc, xs)
	z := matvec(s.bm, s.mr, s.mc, xs)
	mustMPI(mpi.Allreduce(row, y, y, mpi.Sum))
	mustMPI(mpi.Allreduce(row, z, z, mpi.Sum))
	full := make([]float64, s.n) // B·x, gathered along the process column
	mustMPI(mpi.Allgather(col, z, full))
	w := matvec(s.a, s.mr, s.mc, full[s.j*s.mc:(s.j+1)*s.mc])
	mustMPI(mpi.Allreduce(row, w, w, mpi.Sum))
	var d2 float64
	for r := range y {
		d := y[r] - w[r]
		d2 += d * d
	}
	var na, nb float64
	for q := range s.a {
		na += s.a[q] * s.a[q]
		nb += s.bm[q] * s.bm[q]
	}
	// Each row's difference is replicated across the process row: count it once.
	if s.j != 0 {
		d2 = 0
	}
	sums := []float64{d2, na, nb}
	mustMPI(mpi.Allreduce(all, sums, sums, mpi.Sum))
	var nx float64
	for _, v := range x {
		nx += v * v
	}
	return math.Sqrt(sums[0]) / (math.Sqrt(sums[1]) * math.Sqrt(sums[2]) * math.Sqrt(nx))
}

// matvec returns a·x for a row-major m x n block.
func matvec(a []float64, m, n int, x []float64) []float64 {
	y := make([]float64, m)
	for r := 0; r < m; r++ {
		var sum float64
		for q, v := range a[r*n : (r+1)*n] {
			sum += v * x[q]
		}
		y[r] = sum
	}
	return y
}

func mustMPI(err error) {
	if err != nil {
		panic(selective.Failure{Err: err})
	}
}
