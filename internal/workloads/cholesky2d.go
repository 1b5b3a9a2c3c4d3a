package workloads

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"

	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/selective"
	"github.com/approxtune/approxtune/internal/workloads/catalog"
	"github.com/approxtune/approxtune/sweep"
)

// cholesky2d is the tile Cholesky factorization A = L·Lᵀ of an n x n SPD
// matrix (SLATE-like, right-looking) on a pr x pc grid. The matrix is cut into
// nt = ⌈n/b⌉ tiles per dimension (the last one partial when b does not divide
// n); tile (I, J), I >= J, lives on process (I mod pr, J mod pc) as a
// row-major block, and only the lower triangle of tiles is stored.
//
// Step k: the owner of (k, k) factors it (potrf) and sends L_kk down its
// process column to the owners of the panel tiles (i, k), i > k; they solve
// L_ik = A_ik·L_kk⁻ᵀ (trsm) and send each L_ik along their process row to
// the process columns that update a tile (i, j), k < j <= i. The owner of the
// diagonal tile (i, i), which has L_ik for its syrk, forwards it down its
// process column to the processes that update a tile (i', i), i' > i. Then
// every process updates its trailing tiles: A_ii -= L_ik·L_ikᵀ (syrk),
// A_ij -= L_ik·L_jkᵀ (gemm). Every message is a non-blocking point-to-point
// message on the row or column communicator.
//
// With lookahead 0 the steps are bulk-synchronous: panel, messages, whole
// trailing update. With lookahead d >= 1, step k first updates the look-ahead
// columns k+1..k+d, then factors panel k+1 and posts its messages, and only
// then does the rest of its trailing update, so panel k+1's messages travel
// while the bulk of step k's update computes.
type cholesky2d struct{ catalog.Cholesky2D }

// chol2dRun is one configuration on one process.
type chol2dRun struct {
	env            *Env
	n, b, nt       int
	pr, pc, la     int
	myr, myc       int
	mt, ntl        int         // local tile rows (I ≡ myr mod pr) and columns (J ≡ myc mod pc)
	tiles          [][]float64 // tiles[li*ntl+lj]: tile (myr+li·pr, myc+lj·pc), nil above the diagonal
	row, col       *selective.Comm
	diag           [2][]float64   // L_kk received by a panel process, per slot k%2
	rowbuf, colbuf [2][][]float64 // L_ik received along the row (by local row) and the column (by local column)
	rdiag          [2]*selective.Request
	rrow, rcol     [2][]*selective.Request
	sends          [2][]*selective.Request // sends of panel k, completed at the end of step k
	failed         error                   // a potrf that failed in the last run
	cuts           []bool                  // steps at which a run may be cut short (cutPoints)
}

// Calls is about how many kernels a run makes: one per tile of the
// trailing updates, nt³/6 for nt tiles a side (CallCounter).
func (cholesky2d) Calls(c sweep.Config) float64 {
	nt := float64((c.Int("n") + c.Int("b") - 1) / c.Int("b"))
	return nt * nt * nt / 6
}

func (cholesky2d) Setup(env *Env, c sweep.Config) (Instance, error) {
	n, g, b := c.Int("n"), c.Grid("grid"), c.Int("b")
	s := &chol2dRun{env: env, n: n, b: b, nt: (n + b - 1) / b, pr: g[0], pc: g[1], la: c.Int("lookahead"),
		myr: env.Grid.Coords[0], myc: env.Grid.Coords[1]}
	s.cuts = cutPoints(s.nt)
	s.mt = chol2dCount(s.nt, s.myr, s.pr)
	s.ntl = chol2dCount(s.nt, s.myc, s.pc)
	s.tiles = make([][]float64, s.mt*s.ntl)
	for li := 0; li < s.mt; li++ {
		I := s.myr + li*s.pr
		for lj := 0; lj < s.ntl; lj++ {
			if J := s.myc + lj*s.pc; I >= J {
				s.tiles[li*s.ntl+lj] = buffer(s.sz(I) * s.sz(J))
			}
		}
	}
	for sl := 0; sl < 2; sl++ {
		s.diag[sl] = buffer(b * b)
		s.rowbuf[sl] = make([][]float64, s.mt)
		for li := range s.rowbuf[sl] {
			s.rowbuf[sl][li] = buffer(s.sz(s.myr+li*s.pr) * b)
		}
		s.colbuf[sl] = make([][]float64, s.ntl)
		for lj := range s.colbuf[sl] {
			s.colbuf[sl][lj] = buffer(s.sz(s.myc+lj*s.pc) * b)
		}
		s.rrow[sl] = make([]*selective.Request, s.mt)
		s.rcol[sl] = make([]*selective.Request, s.ntl)
	}
	return s, nil
}

// chol2dCount is the number of t in [0, nt) with t mod p == r.
func chol2dCount(nt, r, p int) int {
	if r >= nt {
		return 0
	}
	return (nt - r + p - 1) / p
}

// sz is the dimension of tile row/column t.
func (s *chol2dRun) sz(t int) int { return min(s.b, s.n-t*s.b) }

// tile returns the local tile (I, J); the caller owns it.
func (s *chol2dRun) tile(I, J int) []float64 { return s.tiles[(I/s.pr)*s.ntl+J/s.pc] }

// a is element (i, j) of the input: symmetric, entries in [-0.5, 0.5) from
// the lower triangle's global indices, plus n on the diagonal (strictly
// diagonally dominant, hence SPD).
func (s *chol2dRun) a(i, j int) float64 {
	if i < j {
		i, j = j, i
	}
	v := entry(s.env.Seed, 4, i, j)
	if i == j {
		v += float64(s.n)
	}
	return v
}

func (s *chol2dRun) Init() {
	for li := 0; li < s.mt; li++ {
		I := s.myr + li*s.pr
		for lj := 0; lj < s.ntl; lj++ {
			J := s.myc + lj*s.pc
			t := s.tiles[li*s.ntl+lj]
			if t == nil {
				continue
			}
			m, w := s.sz(I), s.sz(J)
			for r := 0; r < m; r++ {
				for q := 0; q < w; q++ {
					t[r*w+q] = s.a(I*s.b+r, J*s.b+q)
				}
			}
		}
	}
	// Receive buffers start the same every run. A skipped message leaves its
	// buffer as it was, so L_kk's buffers hold the identity: a trsm by a
	// never-received L_kk is then harmless.
	for sl := 0; sl < 2; sl++ {
		clear(s.diag[sl])
		for i := 0; i < s.b; i++ {
			s.diag[sl][i*s.b+i] = 1
		}
		for _, buf := range s.rowbuf[sl] {
			clear(buf)
		}
		for _, buf := range s.colbuf[sl] {
			clear(buf)
		}
	}
	s.failed = nil
}

// tag names panel k's message of tile row i (i = k for L_kk). Within a step
// the tags of a communicator are distinct (nt <= catalog.MaxTag); tags that repeat
// across steps cannot be confused, because every process issues its sends and
// posts its receives in step order and MPI does not let messages between two
// processes overtake each other.
func (s *chol2dRun) tag(k, i int) int { return (k*s.nt + i) % catalog.MaxTag }

// hasRow reports whether some tile row t in [lo, nt) lies on process row r.
func (s *chol2dRun) hasRow(r, lo int) bool {
	return lo < s.nt && chol2dCount(s.nt-lo, (r-lo%s.pr+s.pr)%s.pr, s.pr) > 0
}

// hitsCol reports whether some tile column j in [lo, hi] lies on process column c.
func (s *chol2dRun) hitsCol(c, lo, hi int) bool {
	if hi-lo+1 >= s.pc {
		return hi >= lo
	}
	for j := lo; j <= hi; j++ {
		if j%s.pc == c {
			return true
		}
	}
	return false
}

// rowOp is L_ik on a process of row i mod pr that holds it: its own panel
// tile or what came along the row.
func (s *chol2dRun) rowOp(k, i int) []float64 {
	if s.myc == k%s.pc {
		return s.tile(i, k)
	}
	return s.rowbuf[k%2][i/s.pr][:s.sz(i)*s.sz(k)]
}

// colOp is L_jk on a process of column j mod pc that holds it.
func (s *chol2dRun) colOp(k, j int) []float64 {
	if s.myr == j%s.pr {
		return s.rowOp(k, j)
	}
	return s.colbuf[k%2][j/s.pc][:s.sz(j)*s.sz(k)]
}

// post posts the receives of panel k: L_kk for panel processes, L_ik along
// the row, forwarded L_jk down the column.
func (s *chol2dRun) post(k int) {
	sl, sk := k%2, s.sz(k)
	s.rdiag[sl] = nil
	if s.myc == k%s.pc && s.myr != k%s.pr && s.hasRow(s.myr, k+1) {
		s.rdiag[sl] = s.col.Irecv(s.diag[sl][:sk*sk], k%s.pr, s.tag(k, k))
	}
	for li := range s.rrow[sl] {
		s.rrow[sl][li] = nil
		if i := s.myr + li*s.pr; i > k && s.myc != k%s.pc && s.hitsCol(s.myc, k+1, i) {
			s.rrow[sl][li] = s.row.Irecv(s.rowbuf[sl][li][:s.sz(i)*sk], k%s.pc, s.tag(k, i))
		}
	}
	for lj := range s.rcol[sl] {
		s.rcol[sl][lj] = nil
		if j := s.myc + lj*s.pc; j > k && j%s.pr != s.myr && s.hasRow(s.myr, j+1) {
			s.rcol[sl][lj] = s.col.Irecv(s.colbuf[sl][lj][:s.sz(j)*sk], j%s.pr, s.tag(k, j))
		}
	}
}

// factor factors panel k: potrf of (k, k) and its sends down the column,
// trsm of the panel tiles and their sends along the rows.
func (s *chol2dRun) factor(k int) {
	sl, sk := k%2, s.sz(k)
	if s.myc != k%s.pc {
		return
	}
	var lkk []float64
	if s.myr == k%s.pr {
		lkk = s.tile(k, k)
		if err := s.env.K.Potrf(blas.Lower, sk, lkk, sk); err != nil {
			s.fail(k, err, lkk)
		}
		for r := 0; r < s.pr; r++ {
			if r != s.myr && s.hasRow(r, k+1) {
				s.sends[sl] = append(s.sends[sl], s.col.Isend(lkk[:sk*sk], r, s.tag(k, k)))
			}
		}
	} else if s.rdiag[sl] != nil {
		s.rdiag[sl].Wait()
		lkk = s.diag[sl][:sk*sk]
	}
	for li := 0; li < s.mt; li++ {
		i := s.myr + li*s.pr
		if i <= k {
			continue
		}
		t := s.tile(i, k)
		s.env.K.Trsm(blas.Right, blas.Lower, blas.Trans, blas.NonUnit, s.sz(i), sk, 1, lkk, sk, t, sk)
		for c := 0; c < s.pc; c++ {
			if c != s.myc && s.hitsCol(c, k+1, i) {
				s.sends[sl] = append(s.sends[sl], s.row.Isend(t, c, s.tag(k, i)))
			}
		}
	}
}

// fail replaces a tile whose potrf failed by the identity and remembers the
// failure, which Verify then reports. The run goes on, so that every message
// still matches. A full run of an SPD input cannot fail; a selective run can,
// on a process that skipped nothing itself but received data that another
// process's skipped kernels left stale, and its numbers do not matter.
func (s *chol2dRun) fail(k int, err error, t []float64) {
	if s.failed == nil {
		s.failed = fmt.Errorf("step %d: %w", k, err)
	}
	sk := s.sz(k)
	for r := 0; r < sk; r++ {
		row := t[r*sk : r*sk+r+1]
		clear(row)
		row[r] = 1
	}
}

// receive completes panel k's receives; the owner of each diagonal tile
// (i, i) forwards L_ik down its column as soon as it has it.
func (s *chol2dRun) receive(k int) {
	sl := k % 2
	if s.rdiag[sl] != nil {
		s.rdiag[sl].Wait()
	}
	for li := 0; li < s.mt; li++ {
		i := s.myr + li*s.pr
		if i <= k {
			continue
		}
		if q := s.rrow[sl][li]; q != nil {
			q.Wait()
		}
		if i%s.pc != s.myc {
			continue
		}
		buf := s.rowOp(k, i)
		for r := 0; r < s.pr; r++ {
			if r != s.myr && s.hasRow(r, i+1) {
				s.sends[sl] = append(s.sends[sl], s.col.Isend(buf, r, s.tag(k, i)))
			}
		}
	}
	for _, q := range s.rcol[sl] {
		if q != nil {
			q.Wait()
		}
	}
}

// update applies panel k to this process's tiles in columns [jlo, jhi).
func (s *chol2dRun) update(k, jlo, jhi int) {
	sk := s.sz(k)
	for lj := 0; lj < s.ntl; lj++ {
		j := s.myc + lj*s.pc
		if j < jlo || j >= jhi {
			continue
		}
		sj := s.sz(j)
		for li := 0; li < s.mt; li++ {
			i := s.myr + li*s.pr
			if i < j {
				continue
			}
			t := s.tile(i, j)
			if i == j {
				s.env.K.Syrk(blas.Lower, blas.NoTrans, sj, sk, -1, s.rowOp(k, i), sk, 1, t, sj)
			} else {
				s.env.K.Gemm(blas.NoTrans, blas.Trans, s.sz(i), sj, sk, -1, s.rowOp(k, i), sk, s.colOp(k, j), sk, 1, t, sj)
			}
		}
	}
}

// finish completes panel k's sends.
func (s *chol2dRun) finish(k int) {
	sl := k % 2
	selective.Waitall(s.sends[sl])
	clear(s.sends[sl])
	s.sends[sl] = s.sends[sl][:0]
}

func (s *chol2dRun) Run(ctx context.Context) error {
	s.row, s.col = s.env.Grid.Along(1), s.env.Grid.Along(0)
	s.row.ExactReceives() // every receive is posted with its message's exact length
	s.col.ExactReceives()
	s.failed = nil
	if s.la > 0 {
		s.post(0)
		s.factor(0)
	}
	for k := 0; k < s.nt; k++ {
		if s.cuts[k] && s.env.Grid.Comm.CutShort() {
			// Without look-ahead nothing is in flight here; with it,
			// panel k's messages are: they complete, and the run ends.
			if s.la > 0 {
				s.receive(k)
				s.finish(k)
			}
			return nil
		}
		if s.la == 0 {
			s.post(k)
			s.factor(k)
			s.receive(k)
			s.update(k, k+1, s.nt)
		} else {
			if k+1 < s.nt {
				s.post(k + 1) // slot (k+1)%2 was panel k-1's: done
			}
			s.receive(k)
			hi := min(k+s.la, s.nt-1)
			s.update(k, k+1, hi+1) // look-ahead columns
			if k+1 < s.nt {
				s.factor(k + 1) // its messages travel during the rest of the update
			}
			s.update(k, hi+1, s.nt)
		}
		s.finish(k)
	}
	return nil
}

// Verify compares L·(Lᵀ·x) with A·x for a random vector x, relative to
// ‖A‖_F‖x‖_2. A is regenerated from its definition; L is the lower triangle
// of the distributed tiles (the upper triangle of a diagonal tile still holds
// A and is ignored). A run in which a potrf failed anywhere gives +Inf.
func (s *chol2dRun) Verify() float64 {
	all := s.env.Grid.Comm.Raw()
	failed := []float64{0}
	if s.failed != nil {
		failed[0] = 1
	}
	mustMPI(mpi.Allreduce(all, failed, failed, mpi.Max))
	if failed[0] != 0 {
		return math.Inf(1)
	}
	n, b := s.n, s.b
	x := make([]float64, n)
	var nx float64
	for q := range x {
		x[q] = entry(s.env.Seed, 5, q, 0)
		nx += x[q] * x[q]
	}
	w := make([]float64, n) // Lᵀ·x
	s.eachL(func(gi, gj int, l float64) { w[gj] += l * x[gi] })
	mustMPI(mpi.Allreduce(all, w, w, mpi.Sum))
	acc := make([]float64, 2*n+1) // L·w, A·x, ‖A‖_F²
	v, ax := acc[:n], acc[n:2*n]
	s.eachL(func(gi, gj int, l float64) { v[gi] += l * w[gj] })
	for li := 0; li < s.mt; li++ {
		I := s.myr + li*s.pr
		for lj := 0; lj < s.ntl; lj++ {
			J := s.myc + lj*s.pc
			if I < J {
				continue
			}
			for r := 0; r < s.sz(I); r++ {
				gi := I*b + r
				for q := 0; q < s.sz(J); q++ {
					gj := J*b + q
					a := s.a(gi, gj)
					ax[gi] += a * x[gj]
					acc[2*n] += a * a
					if I != J { // the mirrored tile (J, I)
						ax[gj] += a * x[gi]
						acc[2*n] += a * a
					}
				}
			}
		}
	}
	mustMPI(mpi.Allreduce(all, acc, acc, mpi.Sum))
	var d2 float64
	for q := 0; q < n; q++ {
		d := v[q] - ax[q]
		d2 += d * d
	}
	return math.Sqrt(d2) / (math.Sqrt(acc[2*n]) * math.Sqrt(nx))
}

// eachL calls f for every element of L this process holds, with its global
// indices.
func (s *chol2dRun) eachL(f func(gi, gj int, l float64)) {
	for li := 0; li < s.mt; li++ {
		I := s.myr + li*s.pr
		for lj := 0; lj < s.ntl; lj++ {
			J := s.myc + lj*s.pc
			if I < J {
				continue
			}
			t, m, w := s.tile(I, J), s.sz(I), s.sz(J)
			for r := 0; r < m; r++ {
				hi := w
				if I == J {
					hi = r + 1
				}
				for q := 0; q < hi; q++ {
					f(I*s.b+r, J*s.b+q, t[r*w+q])
				}
			}
		}
	}
}
