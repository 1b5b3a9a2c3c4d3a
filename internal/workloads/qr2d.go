package workloads

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/lapack"

	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/selective"
	"github.com/approxtune/approxtune/internal/workloads/catalog"
	"github.com/approxtune/approxtune/sweep"
)

// qr2d is the blocked Householder QR factorization A = QR of an m x n matrix
// (m >= n) in a 2D block-cyclic layout over a pr x pc grid, after CANDMC's 2D
// QR (see docs/workloads.md). Block (I, J) of b x b elements lives on
// process (I mod pr, J mod pc). For each block column K (a panel of width b):
//
//  1. Panel (process column K mod pc only), TSQR with Householder
//     reconstruction (Ballard et al.): every process geqrf's its local rows
//     of the panel; the b x b R factors are gathered on the process owning
//     the diagonal block, stacked and re-factored (geqrf), which also gives
//     the stack's Q (larft, larfb on [I; 0]); its b x b pieces are scattered
//     back, and each process forms its rows of the panel's explicit
//     orthonormal Q (larft, larfb). The diagonal owner computes the LU
//     factorization of Q1 - S (Q1 the top b x b block, S = diag(±1) chosen
//     pivot by pivot so that no pivot is below 1 in magnitude; in plain Go,
//     panel bookkeeping), which gives Y1 = L1, the factor's T = -U·S·L1⁻ᵀ
//     (trsm) and R = S·R_tsqr; U and T are broadcast down the process column
//     and every process gets its rows of Y = Q·U⁻¹ (trsm). The panel then
//     holds what a geqrf would leave: R above the diagonal, the Householder
//     vectors below (with the implicit unit diagonal).
//  2. Y and T are broadcast along the process rows (bcast; with lookahead,
//     isend/irecv posted as soon as the panel is factored).
//  3. Trailing update, Qᵀ·A = A - Y·Tᵀ·(Yᵀ·A): W = Yᵀ·A (local gemm, then
//     allreduce along the process column), W = Tᵀ·W (trmm), A -= Y·W (gemm).
//
// With lookahead=1 the process column that owns panel K+1 first updates that
// block column with panel K, factors it and sends it on, and only then
// updates the rest of its trailing matrix, so the next panel's factorization
// overlaps the other columns' updates.
type qr2d struct{ catalog.QR2D }

// qrFirstLocal is the number of global block indices J < k with J mod p == me:
// the local index of the first block at or after global index k, for the
// process at coordinate me of a dimension of extent p.
func qrFirstLocal(k, me, p int) int {
	if k <= me {
		return 0
	}
	return (k - me + p - 1) / p
}

type qrRun struct {
	env          *Env
	m, n, b, la  int
	pr, pc, p, q int // grid extents and this process's coordinates
	mb, nb       int // global block rows, block columns
	mbLoc, nbLoc int // local block rows, block columns
	mloc, nloc   int // local rows, columns (nloc is the leading dimension of a)
	grow, gcol   []int
	a            []float64 // local part of A, row-major mloc x nloc; R and Y after Run

	tau, tauTop  []float64 // b
	pan          []float64 // mloc x b: the panel's active rows, contiguous
	rbuf, qpiece []float64 // b x b
	stack, e     []float64 // pr·b x b: the stacked R factors; its explicit Q
	ttop, tloc   []float64 // b x b triangular factors of the TSQR steps
	ut           []float64 // U then T (2·b·b), broadcast down the panel column
	sign         []float64 // b: S
	slots        [2][]float64
	w            []float64 // b x nloc
	ts           []float64 // nb x b x b: every panel's T (for Verify)
	pending      []*selective.Request
}

func (qr2d) Setup(env *Env, c sweep.Config) (Instance, error) {
	g := c.Grid("grid")
	s := &qrRun{env: env, m: c.Int("m"), n: c.Int("n"), b: c.Int("b"), la: c.Int("lookahead"),
		pr: g[0], pc: g[1], p: env.Grid.Coords[0], q: env.Grid.Coords[1]}
	b := s.b
	s.mb, s.nb = s.m/b, s.n/b
	s.mbLoc, s.nbLoc = qrFirstLocal(s.mb, s.p, s.pr), qrFirstLocal(s.nb, s.q, s.pc)
	s.mloc, s.nloc = s.mbLoc*b, s.nbLoc*b
	if s.mloc == 0 || s.nloc == 0 {
		return nil, fmt.Errorf("qr2d: process (%d,%d) of grid %s owns no block (m/b=%d, n/b=%d); Check rejects this configuration", s.p, s.q, g, s.mb, s.nb)
	}
	s.grow = make([]int, s.mloc)
	for r := range s.grow {
		s.grow[r] = ((r/b)*s.pr+s.p)*b + r%b
	}
	s.gcol = make([]int, s.nloc)
	for c := range s.gcol {
		s.gcol[c] = ((c/b)*s.pc+s.q)*b + c%b
	}
	s.a = buffer(s.mloc * s.nloc)
	s.pan = buffer(s.mloc * b)
	s.tau, s.tauTop, s.sign = buffer(b), buffer(b), buffer(b)
	s.rbuf, s.qpiece = buffer(b*b), buffer(b*b)
	s.ttop, s.tloc = buffer(b*b), buffer(b*b)
	s.ut = buffer(2 * b * b)
	if s.pr > 1 {
		s.stack, s.e = buffer(s.pr*b*b), buffer(s.pr*b*b)
	}
	for i := range s.slots {
		s.slots[i] = buffer(s.mloc*b + b*b)
	}
	s.w = buffer(b * s.nloc)
	s.ts = buffer(s.nb * b * b)
	return s, nil
}

func (s *qrRun) Init() {
	for r, gr := range s.grow {
		row := s.a[r*s.nloc : (r+1)*s.nloc]
		for c, gc := range s.gcol {
			row[c] = entry(s.env.Seed, 1, gr, gc)
		}
	}
}

// active returns the number of this process's local rows in block rows >= k
// and the local index of the first of them.
func (s *qrRun) active(k int) (mp, r0 int) {
	i0 := qrFirstLocal(k, s.p, s.pr)
	return (s.mbLoc - i0) * s.b, i0 * s.b
}

// panel returns the slot that carries panel k's Y (mp x b) and T (b x b).
func (s *qrRun) panel(k int) (slot, y, t []float64) {
	mp, _ := s.active(k)
	bb := s.b * s.b
	slot = s.slots[k%2][:mp*s.b+bb]
	return slot, slot[:mp*s.b], slot[mp*s.b:]
}

func (s *qrRun) Run(ctx context.Context) error {
	row := s.env.Grid.Along(1)
	s.pending = s.pending[:0]
	if s.la == 1 && s.q == 0 {
		s.factor(0)
		s.post(0)
	}
	for k := 0; k < s.nb; k++ {
		qk := k % s.pc
		slot, _, t := s.panel(k)
		switch {
		case s.la == 0:
			if s.q == qk {
				s.factor(k)
			}
			if s.pc > 1 {
				row.Bcast(slot, qk)
			}
		case s.q != qk: // lookahead: the owner sent it during the previous step
			row.Irecv(slot, qk, k%32768).Wait()
		}
		copy(s.ts[k*s.b*s.b:(k+1)*s.b*s.b], t)
		j0 := qrFirstLocal(k+1, s.q, s.pc) // first local block column after k
		if s.la == 1 && k+1 < s.nb && s.q == (k+1)%s.pc {
			s.update(k, j0, j0+1) // block column k+1 is local block j0
			s.factor(k + 1)
			s.post(k + 1)
			s.update(k, j0+1, s.nbLoc)
		} else {
			s.update(k, j0, s.nbLoc)
		}
		selective.Waitall(s.pending)
		s.pending = s.pending[:0]
	}
	return nil
}

// post starts sending panel k (factored here) to the rest of the process row.
func (s *qrRun) post(k int) {
	if s.pc == 1 {
		return
	}
	row := s.env.Grid.Along(1)
	slot, _, _ := s.panel(k)
	for dst := 0; dst < s.pc; dst++ {
		if dst != s.q {
			s.pending = append(s.pending, row.Isend(slot, dst, k%32768))
		}
	}
}

// factor factors panel k on its process column (see qr2d): afterwards the
// panel's storage in a holds R and the Householder vectors, and the panel's
// slot holds this process's rows of Y (explicit, unit lower on top) and T.
func (s *qrRun) factor(k int) {
	b, nloc, kr := s.b, s.nloc, s.env.K
	col := s.env.Grid.Along(0)
	mp, r0 := s.active(k)
	off := r0*nloc + (k/s.pc)*b // the panel's first active local element
	pk := k % s.pr
	root := s.p == pk
	_, y, t := s.panel(k)
	// The panel's active rows, contiguous: LAPACK's reflector loops then
	// stride by b rather than by the local width, which on tall panels
	// touches a new cache line (or page) per element.
	pan := s.pan[:mp*b]
	for r := 0; r < mp; r++ {
		copy(pan[r*b:(r+1)*b], s.a[off+r*nloc:off+r*nloc+b])
	}
	if mp > 0 {
		kr.Geqrf(mp, b, pan, b, s.tau)
	}
	// The panel's R (TSQR) and this process's b x b block of the explicit Q
	// of the stacked R factors.
	var rsrc []float64
	rld := 0
	if s.pr == 1 {
		qrIdentity(s.qpiece, b)
		rsrc, rld = pan, b
	} else {
		for i := 0; i < b; i++ {
			for j := 0; j < b; j++ {
				v := 0.0
				if mp > 0 && j >= i {
					v = pan[i*b+j]
				}
				s.rbuf[i*b+j] = v
			}
		}
		col.Gather(s.rbuf, s.stack, pk)
		if root {
			h := s.pr * b
			kr.Geqrf(h, b, s.stack, b, s.tauTop)
			kr.Larft(lapack.Forward, lapack.ColumnWise, h, b, s.stack, b, s.tauTop, s.ttop, b)
			clear(s.e)
			qrIdentity(s.e[:b*b], b)
			kr.Larfb(blas.Left, blas.NoTrans, lapack.Forward, lapack.ColumnWise, h, b, b, s.stack, b, s.ttop, b, s.e, b)
			rsrc, rld = s.stack, b
		}
		col.Scatter(s.e, s.qpiece, pk)
	}
	// This process's rows of the panel's explicit Q: Q_p·[qpiece; 0].
	if mp > 0 {
		copy(y[:b*b], s.qpiece)
		clear(y[b*b:])
		kr.Larft(lapack.Forward, lapack.ColumnWise, mp, b, pan, b, s.tau, s.tloc, b)
		kr.Larfb(blas.Left, blas.NoTrans, lapack.Forward, lapack.ColumnWise, mp, b, b, pan, b, s.tloc, b, y, b)
	}
	below := 0 // first of this process's rows that gets Y = Q·U⁻¹
	if root {
		below = b
		qrSignedLU(y[:b*b], b, s.sign)
		// T = -U·S·L1⁻ᵀ.
		for i := 0; i < b; i++ {
			for j := 0; j < b; j++ {
				u, v := 0.0, 0.0
				if j >= i {
					u = y[i*b+j]
					v = u * s.sign[j]
				}
				s.ut[i*b+j], t[i*b+j] = u, v
			}
		}
		kr.Trsm(blas.Right, blas.Lower, blas.Trans, blas.Unit, b, b, -1, y, b, t, b)
		copy(s.ut[b*b:], t)
		// The diagonal block: R = S·R_tsqr above, L1 below the diagonal;
		// Y's top block becomes the explicit unit lower L1.
		for i := 0; i < b; i++ {
			for j := 0; j < b; j++ {
				d := off + i*nloc + j
				switch {
				case j >= i:
					s.a[d] = s.sign[i] * rsrc[i*rld+j]
					if j == i {
						y[i*b+j] = 1
					} else {
						y[i*b+j] = 0
					}
				default:
					s.a[d] = y[i*b+j]
				}
			}
		}
	}
	if s.pr > 1 {
		col.Bcast(s.ut, pk)
	}
	if !root {
		copy(t, s.ut[b*b:])
	}
	if rows := mp - below; rows > 0 {
		kr.Trsm(blas.Right, blas.Upper, blas.NoTrans, blas.NonUnit, rows, b, 1, s.ut, b, y[below*b:], b)
		for r := below; r < mp; r++ {
			copy(s.a[off+r*nloc:off+r*nloc+b], y[r*b:(r+1)*b])
		}
	}
}

// update applies panel k's Qᵀ = I - Y·Tᵀ·Yᵀ to local block columns [j0, j1)
// of this process's active rows: W = Yᵀ·A summed over the process column, W =
// Tᵀ·W, A -= Y·W.
func (s *qrRun) update(k, j0, j1 int) {
	nt := (j1 - j0) * s.b
	if nt <= 0 {
		return // the same on the whole process column
	}
	b, kr := s.b, s.env.K
	mp, r0 := s.active(k)
	_, y, t := s.panel(k)
	w := s.w[:b*nt]
	var c []float64 // the active rows of the block columns
	if mp > 0 {
		c = s.a[r0*s.nloc+j0*b:]
		kr.Gemm(blas.Trans, blas.NoTrans, b, nt, mp, 1, y, b, c, s.nloc, 0, w, nt)
	} else {
		clear(w)
	}
	if s.pr > 1 {
		s.env.Grid.Along(0).Allreduce(w, w, mpi.Sum)
	}
	if mp > 0 {
		kr.Trmm(blas.Left, blas.Upper, blas.Trans, blas.NonUnit, b, nt, 1, t, b, w, nt)
		kr.Gemm(blas.NoTrans, blas.NoTrans, mp, nt, b, -1, y, b, w, nt, 1, c, s.nloc)
	}
}

func qrIdentity(a []float64, n int) {
	clear(a[:n*n])
	for i := 0; i < n; i++ {
		a[i*n+i] = 1
	}
}

// qrSignedLU factors the n x n a - S = L·U in place without pivoting (L unit
// lower below the diagonal, U on and above it), choosing S = diag(sign) pivot
// by pivot as minus the sign of the pivot, so every pivot has magnitude at
// least 1 when a has orthonormal columns' entries (Ballard et al.'s modified
// LU for Householder reconstruction).
func qrSignedLU(a []float64, n int, sign []float64) {
	for j := 0; j < n; j++ {
		d := a[j*n+j]
		sg := -1.0
		if d < 0 {
			sg = 1
		}
		sign[j] = sg
		d -= sg
		a[j*n+j] = d
		inv := 1 / d
		pivot := a[j*n+j+1 : j*n+n]
		for i := j + 1; i < n; i++ {
			l := a[i*n+j] * inv
			a[i*n+j] = l
			if l == 0 {
				continue
			}
			r := a[i*n+j+1 : i*n+n]
			for c, v := range pivot {
				r[c] -= l * v
			}
		}
	}
}

// Verify returns the larger of two relative residuals for a random vector x,
// with A the original matrix (regenerated):
//
//	‖RᵀR·x - Aᵀ(A·x)‖₂ / (‖A‖_F²·‖x‖₂)      (AᵀA = RᵀR: R is A's R factor)
//	‖Qᵀ(A·x) - [R·x; 0]‖₂ / (‖A‖_F·‖x‖₂)   (Qᵀ applied from the stored Y and T)
//
// The first checks R alone; the second the implicit Q too (the Householder
// vectors in A's storage and every panel's T).
func (s *qrRun) Verify() float64 {
	g := s.env.Grid
	row, col, all := g.Along(1).Raw(), g.Along(0).Raw(), g.Comm.Raw()
	b, nloc := s.b, s.nloc
	x := make([]float64, s.n)
	var nx float64
	for j := range x {
		x[j] = entry(s.env.Seed, 3, j, 0)
		nx += x[j] * x[j]
	}
	nx = math.Sqrt(nx)
	a0 := make([]float64, s.mloc*nloc)
	var na float64
	for r, gr := range s.grow {
		for c, gc := range s.gcol {
			v := entry(s.env.Seed, 1, gr, gc)
			a0[r*nloc+c] = v
			na += v * v
		}
	}
	xl := make([]float64, nloc)
	for c, gc := range s.gcol {
		xl[c] = x[gc]
	}
	// A·x on the local rows, then Aᵀ(A·x) on the local columns.
	ax := matvec(a0, s.mloc, nloc, xl)
	mustMPI(mpi.Allreduce(row, ax, ax, mpi.Sum))
	atax := make([]float64, nloc)
	for r := 0; r < s.mloc; r++ {
		for c, v := range a0[r*nloc : (r+1)*nloc] {
			atax[c] += v * ax[r]
		}
	}
	mustMPI(mpi.Allreduce(col, atax, atax, mpi.Sum))
	// R·x on the local rows (zero below row n), then RᵀR·x.
	rx := make([]float64, s.mloc)
	for r, gr := range s.grow {
		if gr >= s.n {
			continue
		}
		var sum float64
		for c, gc := range s.gcol {
			if gc >= gr {
				sum += s.a[r*nloc+c] * x[gc]
			}
		}
		rx[r] = sum
	}
	mustMPI(mpi.Allreduce(row, rx, rx, mpi.Sum))
	rtrx := make([]float64, nloc)
	for r, gr := range s.grow {
		if gr >= s.n {
			continue
		}
		for c, gc := range s.gcol {
			if gc >= gr {
				rtrx[c] += s.a[r*nloc+c] * rx[r]
			}
		}
	}
	mustMPI(mpi.Allreduce(col, rtrx, rtrx, mpi.Sum))
	var d1 float64
	if s.p == 0 { // replicated down the process column: count once
		for c := range rtrx {
			d := rtrx[c] - atax[c]
			d1 += d * d
		}
	}
	// z = Qᵀ(A·x), panel by panel, on the owning process column, then shared
	// along the process rows.
	z := append([]float64(nil), ax...)
	w, tw := make([]float64, b), make([]float64, b)
	for k := 0; k < s.nb; k++ {
		qk := k % s.pc
		if s.q == qk {
			_, r0 := s.active(k)
			jc := (k / s.pc) * b
			yv := func(r, c int) float64 {
				switch d := s.grow[r] - k*b; {
				case d == c:
					return 1
				case d < c:
					return 0
				}
				return s.a[r*nloc+jc+c]
			}
			clear(w)
			for r := r0; r < s.mloc; r++ {
				for c := 0; c < b; c++ {
					w[c] += yv(r, c) * z[r]
				}
			}
			mustMPI(mpi.Allreduce(col, w, w, mpi.Sum))
			t := s.ts[k*b*b : (k+1)*b*b]
			for i := 0; i < b; i++ { // tw = Tᵀ·w, T upper triangular
				var sum float64
				for l := 0; l <= i; l++ {
					sum += t[l*b+i] * w[l]
				}
				tw[i] = sum
			}
			for r := r0; r < s.mloc; r++ {
				var sum float64
				for c := 0; c < b; c++ {
					sum += yv(r, c) * tw[c]
				}
				z[r] -= sum
			}
		}
		if s.pc > 1 {
			mustMPI(mpi.Bcast(row, z, qk))
		}
	}
	var d2 float64
	if s.q == 0 { // replicated along the process row: count once
		for r := range z {
			d := z[r] - rx[r] // rx is zero below row n
			d2 += d * d
		}
	}
	sums := []float64{d1, d2, na}
	mustMPI(mpi.Allreduce(all, sums, sums, mpi.Sum))
	r1 := math.Sqrt(sums[0]) / (sums[2] * nx)
	r2 := math.Sqrt(sums[1]) / (math.Sqrt(sums[2]) * nx)
	return math.Max(r1, r2)
}
