package workloads

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"gonum.org/v1/gonum/blas"

	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/selective"
	"github.com/approxtune/approxtune/internal/workloads/catalog"
	"github.com/approxtune/approxtune/sweep"
)

// cholesky3d is Capital's recursive Cholesky factorization with triangular
// inverse (the paper's §V.A) on a c x c x c grid. Element (i, j) of every
// n x n matrix lives on process (i mod c, j mod c) of every layer: each layer
// holds a whole copy, cyclic over its c x c face, and the c layers (the depth
// fibres) are replicas. A process (x, y, z) stores its m x m share, m = n/c,
// local (li, lj) being global (li·c+x, lj·c+y). A contiguous sub-block whose
// offset and size are multiples of c is again cyclic, stored at local
// offset/c, so the recursion works on local sub-blocks directly.
//
// cholinv(A) returns L and L⁻¹ with A = L·Lᵀ:
//
//	[L11, L11⁻¹] = cholinv(A11)
//	L21 = A21·L11⁻ᵀ               (trmm: square x triangular)
//	A22 = A22 − L21·L21ᵀ           (gemm; syrk on the face diagonal)
//	[L22, L22⁻¹] = cholinv(A22)
//	L⁻¹21 = −L22⁻¹·(L21·L11⁻¹)    (two trmm products)
//
// down to base cases of size b, collected and solved with sequential potrf +
// trtri by one of three strategies (see baseCase).
//
// Products use the 3D algorithm: for C = op(A)·op(B), depth z owns the inner
// indices ≡ z (mod c). Process (x, y, z) needs op(A)'s block [≡x, ≡z] and
// op(B)'s [≡z, ≡y]: an untransposed A block comes by one broadcast along the
// layer's row (root y = z), an untransposed B block along the column (root
// x = z). A transposed operand takes two broadcasts (its block lies on the
// other side of the face diagonal): first along the other face dimension, to
// bring it to the diagonal process, then from the diagonal. The local
// products (trmm where a factor is triangular; the local block of a
// triangular matrix is itself triangular because the upper triangle is kept
// at exact zeros) are summed along the depth with an allreduce, so every
// layer ends with the replicated result.
type cholesky3d struct{ catalog.Cholesky3D }

type chol3dRun struct {
	env      *Env
	n, b, c  int
	m        int // local dimension n/c
	x, y, z  int // grid coordinates: face row, face column, depth
	strategy int

	row, col, depth, layer *selective.Comm // Along(1) (ranked by y), Along(0) (by x), Along(2) (by z), Sub(0, 1)

	a, l, li []float64 // local m x m shares of A (overwritten), L and L⁻¹

	pa, pb, pc, pt []float64 // product operands and results, up to (m/2)²
	send, recv     []float64 // base case: own block (kb²) and own L, L⁻¹ blocks (2·kb²)
	gat, f, g, sc  []float64 // base case: gathered blocks, full L and L⁻¹ (b²), scatter buffer (2b²)

	failed error // a factorization that failed in the last run (see factor)
	// cuts are the base cases at which a run may be cut short (cutEvery);
	// cut: this run was, and the recursion unwinds.
	cuts []bool
	cut  bool
	// skel: this run is a skeleton (selective.Comm.Skeleton): no kernel
	// computes and no payload travels, so the copies between them, which
	// only move data, are left out too.
	skel bool
}

// Calls grows with the number of base cases, n/b: each level of the
// recursion makes a fixed number of calls per block (CallCounter).
func (cholesky3d) Calls(c sweep.Config) float64 { return float64(c.Int("n") / c.Int("b")) }

func (cholesky3d) Setup(env *Env, c sweep.Config) (Instance, error) {
	n, gs, b := c.Int("n"), c.Grid("grid"), c.Int("b")
	cc := gs[0]
	s := &chol3dRun{env: env, n: n, b: b, c: cc, m: n / cc,
		x: env.Grid.Coords[0], y: env.Grid.Coords[1], z: env.Grid.Coords[2],
		row: env.Grid.Along(1), col: env.Grid.Along(0), depth: env.Grid.Along(2), layer: env.Grid.Sub(0, 1)}
	var err error
	if s.strategy, err = strconv.Atoi(c.String("strategy")); err != nil || s.strategy < 1 || s.strategy > 3 {
		return nil, fmt.Errorf("strategy %q: want 1, 2 or 3", c.String("strategy"))
	}
	s.cuts = cutEvery(n/b, 16)
	s.a = buffer(s.m * s.m)
	s.l = buffer(s.m * s.m)
	s.li = buffer(s.m * s.m)
	half := s.m / 2
	for _, p := range []*[]float64{&s.pa, &s.pb, &s.pc, &s.pt} {
		*p = buffer(half * half)
	}
	kb := b / cc
	s.send = buffer(kb * kb)
	s.recv = buffer(2 * kb * kb)
	s.gat = buffer(b * b)
	s.f = buffer(b * b)
	s.g = buffer(b * b)
	s.sc = buffer(2 * b * b)
	return s, nil
}

// chol3dA is element (i, j) of the input: symmetric, entries uniform in
// [-0.5, 0.5) with 2√n+1 added on the diagonal. A symmetric matrix of such
// entries has its eigenvalues within about ±0.58√n, so A is positive
// definite with a condition number of about 2, and (unlike a matrix dominated by
// its diagonal) its factor is far from diagonal, so every product of the
// recursion matters to the residual.
func chol3dA(seed int64, n, i, j int) float64 {
	if i < j {
		i, j = j, i
	}
	v := entry(seed, 4, i, j)
	if i == j {
		v += 2*math.Sqrt(float64(n)) + 1
	}
	return v
}

func (s *chol3dRun) Init() {
	for li := 0; li < s.m; li++ {
		for lj := 0; lj < s.m; lj++ {
			s.a[li*s.m+lj] = chol3dA(s.env.Seed, s.n, li*s.c+s.x, lj*s.c+s.y)
		}
	}
	clear(s.l)
	clear(s.li)
	s.failed = nil
}

func (s *chol3dRun) Run(ctx context.Context) error {
	s.failed, s.cut = nil, false
	s.skel = s.env.Grid.Comm.Skeleton()
	s.cholinv(0, s.n)
	return nil
}

// cholinv factors the diagonal block of global offset off and size h (both
// multiples of c; h is b times a power of two) into L and L⁻¹.
func (s *chol3dRun) cholinv(off, h int) {
	if h <= s.b {
		// Every collective before a base case has completed: a run cut
		// short here leaves nothing in flight.
		if s.cuts[off/s.b] && s.env.Grid.Comm.CutShort() {
			s.cut = true
			return
		}
		s.baseCase(off, h)
		return
	}
	h2 := h / 2
	r1, r2, k := off/s.c, (off+h2)/s.c, h2/s.c
	s.cholinv(off, h2)
	if s.cut {
		return
	}

	// L21 = A21·L11⁻ᵀ: A21[≡x,≡z] along the row; L11⁻¹[≡y,≡z] (transposed
	// operand) along the row, then from the face diagonal down the column.
	s.fetchA(s.a, r2, r1, k, s.pa)
	s.fetchBT(s.li, r1, r1, k, s.pb)
	s.env.K.Trmm(blas.Right, blas.Lower, blas.Trans, blas.NonUnit, k, k, 1, s.pb, k, s.pa, k)
	s.depth.Allreduce(s.pa[:k*k], s.pa[:k*k], mpi.Sum)
	s.unpack(s.l, r2, r1, k, s.pa)

	// A22 −= L21·L21ᵀ: the row broadcast of L21[≡x,≡z] is both the A
	// operand and the first step of the transposed B operand L21[≡y,≡z].
	s.fetchA(s.l, r2, r1, k, s.pa)
	if !s.skel {
		copy(s.pb[:k*k], s.pa[:k*k])
	}
	s.col.Bcast(s.pb[:k*k], s.y)
	if s.x == s.y { // the diagonal blocks of a symmetric update: syrk
		s.env.K.Syrk(blas.Lower, blas.NoTrans, k, k, 1, s.pa, k, 0, s.pc, k)
		for i := 0; i < k && !s.skel; i++ {
			for j := i + 1; j < k; j++ {
				s.pc[i*k+j] = s.pc[j*k+i]
			}
		}
	} else {
		s.env.K.Gemm(blas.NoTrans, blas.Trans, k, k, k, 1, s.pa, k, s.pb, k, 0, s.pc, k)
	}
	s.depth.Allreduce(s.pc[:k*k], s.pc[:k*k], mpi.Sum)
	for i := 0; i < k && !s.skel; i++ {
		ar := s.a[(r2+i)*s.m+r2 : (r2+i)*s.m+r2+k]
		for j, v := range s.pc[i*k : (i+1)*k] {
			ar[j] -= v
		}
	}

	s.cholinv(off+h2, h2)
	if s.cut {
		return
	}

	// T = L21·L11⁻¹, then L⁻¹21 = −L22⁻¹·T.
	s.fetchA(s.l, r2, r1, k, s.pa)
	s.fetchB(s.li, r1, r1, k, s.pb)
	s.env.K.Trmm(blas.Right, blas.Lower, blas.NoTrans, blas.NonUnit, k, k, 1, s.pb, k, s.pa, k)
	s.depth.Allreduce(s.pa[:k*k], s.pt[:k*k], mpi.Sum)
	s.fetchA(s.li, r2, r2, k, s.pa)
	if s.x == s.z && !s.skel {
		copy(s.pb[:k*k], s.pt[:k*k])
	}
	s.col.Bcast(s.pb[:k*k], s.z)
	s.env.K.Trmm(blas.Left, blas.Lower, blas.NoTrans, blas.NonUnit, k, k, -1, s.pa, k, s.pb, k)
	s.depth.Allreduce(s.pb[:k*k], s.pb[:k*k], mpi.Sum)
	s.unpack(s.li, r2, r1, k, s.pb)
}

// fetchA brings the block [≡x, ≡z] of the k x k block at local (r, q) of
// mat into buf: one broadcast along the row from the process with y = z.
func (s *chol3dRun) fetchA(mat []float64, r, q, k int, buf []float64) {
	if s.y == s.z {
		s.pack(buf, mat, r, q, k)
	}
	s.row.Bcast(buf[:k*k], s.z)
}

// fetchB brings the block [≡z, ≡y] into buf: one broadcast along the column
// from the process with x = z.
func (s *chol3dRun) fetchB(mat []float64, r, q, k int, buf []float64) {
	if s.x == s.z {
		s.pack(buf, mat, r, q, k)
	}
	s.col.Bcast(buf[:k*k], s.z)
}

// fetchBT brings the block [≡y, ≡z], to be used transposed as the B operand:
// along the row from y = z (each process then holds [≡x, ≡z]), then along
// the column from the diagonal process x = y.
func (s *chol3dRun) fetchBT(mat []float64, r, q, k int, buf []float64) {
	s.fetchA(mat, r, q, k, buf)
	s.col.Bcast(buf[:k*k], s.y)
}

// baseCase factors the h x h diagonal block at global offset off (local
// kb x kb blocks, kb = h/c) with sequential potrf and trtri:
//
//	strategy 1: layer 0 gathers the blocks on its process (0, 0), which
//	            factors and scatters L and L⁻¹ over the layer; then a
//	            broadcast along the depth;
//	strategy 2: every layer all-gathers and every process factors;
//	strategy 3: layer 0 all-gathers and its c² processes factor; then a
//	            broadcast along the depth.
func (s *chol3dRun) baseCase(off, h int) {
	kb, r := h/s.c, off/s.c
	kk := kb * kb
	send, recv := s.send[:kk], s.recv[:2*kk]
	gat := s.gat[:h*h]
	switch s.strategy {
	case 1:
		if s.z == 0 {
			s.pack(send, s.a, r, r, kb)
			root := s.layer.Rank() == 0
			var g, sc []float64
			if root {
				g, sc = gat, s.sc[:2*h*h]
			}
			s.layer.Gather(send, g, 0)
			if root {
				s.factor(h, gat)
				for px := 0; px < s.c; px++ {
					for py := 0; py < s.c; py++ {
						s.extract(h, px, py, sc[(px*s.c+py)*2*kk:])
					}
				}
			}
			s.layer.Scatter(sc, recv, 0)
		}
		s.depth.Bcast(recv, 0)
	case 2:
		s.pack(send, s.a, r, r, kb)
		s.layer.Allgather(send, gat)
		s.factor(h, gat)
		s.extract(h, s.x, s.y, recv)
	case 3:
		if s.z == 0 {
			s.pack(send, s.a, r, r, kb)
			s.layer.Allgather(send, gat)
			s.factor(h, gat)
			s.extract(h, s.x, s.y, recv)
		}
		s.depth.Bcast(recv, 0)
	}
	s.unpack(s.l, r, r, kb, recv[:kk])
	s.unpack(s.li, r, r, kb, recv[kk:])
}

// factor assembles the h x h matrix from the layer's blocks in gat (block
// (px, py), layer rank px·c+py, holds elements (i·c+px, j·c+py)) into s.f,
// factors it (s.f = L, s.g = L⁻¹, strict upper triangles zero).
//
// A factorization that fails is replaced by the identity and remembered:
// Verify then reports the run as wrong. It must not end the run early (the
// other processes would wait in the next collective), and under selective
// execution it can legitimately happen on a process that skipped nothing
// itself but received the stale output of a kernel another process skipped.
func (s *chol3dRun) factor(h int, gat []float64) {
	kb := h / s.c
	f, g := s.f[:h*h], s.g[:h*h]
	for px := 0; px < s.c && !s.skel; px++ {
		for py := 0; py < s.c; py++ {
			blk := gat[(px*s.c+py)*kb*kb:]
			for i := 0; i < kb; i++ {
				for j := 0; j < kb; j++ {
					f[(i*s.c+px)*h+j*s.c+py] = blk[i*kb+j]
				}
			}
		}
	}
	if err := s.env.K.Potrf(blas.Lower, h, f, h); err != nil {
		s.fail(err, h, f)
	}
	if !s.skel {
		chol3dZeroUpper(h, f)
		copy(g, f)
	}
	if err := s.env.K.Trtri(blas.Lower, blas.NonUnit, h, g, h); err != nil {
		s.fail(err, h, g)
	}
}

func (s *chol3dRun) fail(err error, h int, a []float64) {
	if s.failed == nil {
		s.failed = err
	}
	clear(a)
	for i := 0; i < h; i++ {
		a[i*h+i] = 1
	}
}

// extract writes process (px, py)'s blocks of L and L⁻¹ (kb x kb each,
// one after the other) from s.f and s.g into dst.
func (s *chol3dRun) extract(h, px, py int, dst []float64) {
	if s.skel {
		return
	}
	kb := h / s.c
	for i := 0; i < kb; i++ {
		for j := 0; j < kb; j++ {
			src := (i*s.c+px)*h + j*s.c + py
			dst[i*kb+j] = s.f[src]
			dst[kb*kb+i*kb+j] = s.g[src]
		}
	}
}

func chol3dZeroUpper(h int, a []float64) {
	for i := 0; i < h; i++ {
		clear(a[i*h+i+1 : (i+1)*h])
	}
}

// pack is chol3dPack on this process's m x m shares, left out in a skeleton.
func (s *chol3dRun) pack(buf, mat []float64, r, q, k int) {
	if !s.skel {
		chol3dPack(buf, mat, s.m, r, q, k)
	}
}

// unpack is chol3dUnpack on this process's m x m shares, left out in a
// skeleton.
func (s *chol3dRun) unpack(mat []float64, r, q, k int, buf []float64) {
	if !s.skel {
		chol3dUnpack(mat, s.m, r, q, k, buf)
	}
}

// chol3dPack copies the k x k block at local (r, q) of the ld-wide mat into buf.
func chol3dPack(buf, mat []float64, ld, r, q, k int) {
	for i := 0; i < k; i++ {
		copy(buf[i*k:(i+1)*k], mat[(r+i)*ld+q:(r+i)*ld+q+k])
	}
}

// chol3dUnpack copies the contiguous k x k buf into the block at local (r, q) of mat.
func chol3dUnpack(mat []float64, ld, r, q, k int, buf []float64) {
	for i := 0; i < k; i++ {
		copy(mat[(r+i)*ld+q:(r+i)*ld+q+k], buf[i*k:(i+1)*k])
	}
}

// Verify checks every layer's copy with a random vector v: the factor by
// ‖L(Lᵀv) − Av‖ / (‖A‖_F‖v‖) and the inverse by ‖L(L⁻¹v) − v‖ /
// (‖L‖_F‖L⁻¹‖_F‖v‖), and returns the larger residual, the worst over the
// layers (so a layer whose replica diverged fails too). A failed
// factorization or a non-finite result reports math.MaxFloat64.
func (s *chol3dRun) Verify() float64 {
	v := make([]float64, s.n)
	for i := range v {
		v[i] = entry(s.env.Seed, 5, i, 0)
	}
	a0 := make([]float64, s.m*s.m)
	for li := 0; li < s.m; li++ {
		for lj := 0; lj < s.m; lj++ {
			a0[li*s.m+lj] = chol3dA(s.env.Seed, s.n, li*s.c+s.x, lj*s.c+s.y)
		}
	}
	av := s.matvec(a0, v, false)
	llv := s.matvec(s.l, s.matvec(s.l, v, true), false)
	liv := s.matvec(s.l, s.matvec(s.li, v, false), false)
	var dA, dI, nv float64
	for i := range v {
		dA += (llv[i] - av[i]) * (llv[i] - av[i])
		dI += (liv[i] - v[i]) * (liv[i] - v[i])
		nv += v[i] * v[i]
	}
	norms := []float64{0, 0, 0} // ‖A‖², ‖L‖², ‖L⁻¹‖² over the layer
	for q := range a0 {
		norms[0] += a0[q] * a0[q]
		norms[1] += s.l[q] * s.l[q]
		norms[2] += s.li[q] * s.li[q]
	}
	mustMPI(mpi.Allreduce(s.layer.Raw(), norms, norms, mpi.Sum))
	res := math.Max(math.Sqrt(dA/(norms[0]*nv)), math.Sqrt(dI/(norms[1]*norms[2]*nv)))
	if s.failed != nil || math.IsNaN(res) || math.IsInf(res, 0) {
		res = math.MaxFloat64
	}
	out := []float64{res}
	mustMPI(mpi.Allreduce(s.env.Grid.Comm.Raw(), out, out, mpi.Max))
	return out[0]
}

// matvec returns mat·v (or matᵀ·v) for a matrix distributed over this
// process's layer and a vector every process holds whole.
func (s *chol3dRun) matvec(mat, v []float64, trans bool) []float64 {
	// Sum along one face dimension, gather along the other.
	sum, gather := s.row.Raw(), s.col.Raw()
	if trans {
		sum, gather = s.col.Raw(), s.row.Raw()
	}
	part := make([]float64, s.m)
	for li := 0; li < s.m; li++ {
		for lj := 0; lj < s.m; lj++ {
			if trans {
				part[lj] += mat[li*s.m+lj] * v[li*s.c+s.x]
			} else {
				part[li] += mat[li*s.m+lj] * v[lj*s.c+s.y]
			}
		}
	}
	mustMPI(mpi.Allreduce(sum, part, part, mpi.Sum))
	all := make([]float64, s.c*s.m)
	mustMPI(mpi.Allgather(gather, part, all))
	out := make([]float64, s.n)
	for p := 0; p < s.c; p++ {
		for i := 0; i < s.m; i++ {
			out[i*s.c+p] = all[p*s.m+i]
		}
	}
	return out
}
