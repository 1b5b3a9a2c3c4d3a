package kernels

import (
	"fmt"
	"strconv"
	"strings"
)

// Routine identifies a kernel routine. The zero value is not a valid routine.
type Routine uint8

// The kernel routines.
const (
	Gemm  Routine = iota + 1 // general matrix multiply (dgemm)
	Syrk                     // symmetric rank-k update (dsyrk)
	Trsm                     // triangular solve with multiple right-hand sides (dtrsm)
	Trmm                     // triangular matrix multiply (dtrmm)
	Potrf                    // Cholesky factorization (dpotrf)
	Trtri                    // triangular inverse (dtrtri)
	Geqrf                    // QR factorization (dgeqrf)
	Larft                    // triangular factor of a block reflector (dlarft)
	Larfb                    // application of a block reflector (dlarfb)
	Spin                     // busy-wait for a given time (the synthetic workload's kernel)

	lastRoutine = Spin
	numRoutines = int(lastRoutine) + 1
)

// routineNames is a read-only lookup table indexed by Routine.
var routineNames = [numRoutines]string{
	Gemm:  "gemm",
	Syrk:  "syrk",
	Trsm:  "trsm",
	Trmm:  "trmm",
	Potrf: "potrf",
	Trtri: "trtri",
	Geqrf: "geqrf",
	Larft: "larft",
	Larfb: "larfb",
	Spin:  "spin",
}

// validRoutines is the comma-separated list of routine names used in error
// messages.
const validRoutines = "gemm, syrk, trsm, trmm, potrf, trtri, geqrf, larft, larfb, spin"

// String returns the lower-case routine name ("gemm", "syrk", ...), or
// "Routine(N)" for an invalid value.
func (r Routine) String() string {
	if r.Valid() {
		return routineNames[r]
	}
	return "Routine(" + strconv.Itoa(int(r)) + ")"
}

// Valid reports whether r is one of the defined routines.
func (r Routine) Valid() bool {
	return r >= Gemm && r <= lastRoutine
}

// ParseRoutine returns the routine named s (as returned by Routine.String;
// case and surrounding space are ignored).
func ParseRoutine(s string) (Routine, error) {
	name := strings.ToLower(strings.TrimSpace(s))
	for r := Gemm; r <= lastRoutine; r++ {
		if routineNames[r] == name {
			return r, nil
		}
	}
	return 0, fmt.Errorf("kernels: unknown routine %q (valid routines: %s)", s, validRoutines)
}

// Flag bits of Signature.Flags. Each routine uses only the bits that
// correspond to its flag arguments; the others are zero.
const (
	// FlagTransA: the (first) transpose argument is blas.Trans (or
	// blas.ConjTrans). gemm: tA; syrk: t; trsm, trmm: tA; larfb: t.
	FlagTransA uint8 = 1 << iota
	// FlagTransB: gemm's tB is blas.Trans (or blas.ConjTrans).
	FlagTransB
	// FlagRight: side is blas.Right. trsm, trmm, larfb.
	FlagRight
	// FlagLower: uplo is blas.Lower. syrk, trsm, trmm, potrf, trtri.
	FlagLower
	// FlagUnit: diag is blas.Unit. trsm, trmm, trtri.
	FlagUnit
	// FlagBackward: direct is lapack.Backward. larft, larfb.
	FlagBackward
	// FlagRowWise: store is lapack.RowWise. larft, larfb.
	FlagRowWise
)

// Signature identifies a kernel invocation for statistics: the routine, its
// dimensions and its flags. It is comparable and can be used as a map key.
//
// Dimensions per routine (unused ones are 0):
//
//	gemm   M, N, K  (C is M×N, inner dimension K)
//	syrk   N, K     (C is N×N, inner dimension K)
//	trsm   M, N     (B is M×N)
//	trmm   M, N     (B is M×N)
//	potrf  N        (A is N×N)
//	trtri  N        (A is N×N)
//	geqrf  M, N     (A is M×N)
//	larft  N, K     (V holds K reflectors of order N)
//	larfb  M, N, K  (C is M×N, K reflectors)
//
// Flags is a combination of the Flag* bits; see their documentation for which
// apply to which routine.
type Signature struct {
	Routine Routine
	Flags   uint8
	M, N, K int32
}

// flagLetters lists, per routine, the flag arguments in BLAS/LAPACK argument
// order as (bit, letter if clear, letter if set). Read-only.
var flagLetters = [numRoutines][]struct {
	bit      uint8
	clr, set byte
}{
	Gemm:  {{FlagTransA, 'N', 'T'}, {FlagTransB, 'N', 'T'}},
	Syrk:  {{FlagLower, 'U', 'L'}, {FlagTransA, 'N', 'T'}},
	Trsm:  {{FlagRight, 'L', 'R'}, {FlagLower, 'U', 'L'}, {FlagTransA, 'N', 'T'}, {FlagUnit, 'N', 'U'}},
	Trmm:  {{FlagRight, 'L', 'R'}, {FlagLower, 'U', 'L'}, {FlagTransA, 'N', 'T'}, {FlagUnit, 'N', 'U'}},
	Potrf: {{FlagLower, 'U', 'L'}},
	Trtri: {{FlagLower, 'U', 'L'}, {FlagUnit, 'N', 'U'}},
	Larft: {{FlagBackward, 'F', 'B'}, {FlagRowWise, 'C', 'R'}},
	Larfb: {{FlagRight, 'L', 'R'}, {FlagTransA, 'N', 'T'}, {FlagBackward, 'F', 'B'}, {FlagRowWise, 'C', 'R'}},
}

// String formats the signature as the routine name, its flags in BLAS
// argument order in brackets (letters as in the BLAS/LAPACK character
// arguments), and its dimensions, for example "gemm[NT] 128x128x64",
// "syrk[LN] 256x64", "trsm[RLTN] 128x64", "potrf[L] 128", "geqrf 256x128",
// "larfb[LTFC] 256x192x64".
func (s Signature) String() string {
	if !s.Routine.Valid() {
		return fmt.Sprintf("%v flags=%#x %dx%dx%d", s.Routine, s.Flags, s.M, s.N, s.K)
	}
	var b strings.Builder
	b.WriteString(s.Routine.String())
	if fl := flagLetters[s.Routine]; len(fl) > 0 {
		b.WriteByte('[')
		for _, f := range fl {
			if s.Flags&f.bit != 0 {
				b.WriteByte(f.set)
			} else {
				b.WriteByte(f.clr)
			}
		}
		b.WriteByte(']')
	}
	b.WriteByte(' ')
	dims := s.dims()
	if s.Routine == Spin {
		dims = []int32{s.M}
	}
	for i, d := range dims {
		if i > 0 {
			b.WriteByte('x')
		}
		b.WriteString(strconv.Itoa(int(d)))
	}
	return b.String()
}

// SizeParams are the routine's size parameters, in the order String shows
// its dimensions: "m", "n", "k" for gemm, "n" for potrf. Nil for a spin,
// whose M is a label, not a size.
func (r Routine) SizeParams() []string {
	switch r {
	case Gemm, Larfb:
		return []string{"m", "n", "k"}
	case Syrk, Larft:
		return []string{"n", "k"}
	case Trsm, Trmm, Geqrf:
		return []string{"m", "n"}
	case Potrf, Trtri:
		return []string{"n"}
	}
	return nil
}

// Sizes are the signature's dimensions in the order of its routine's
// SizeParams.
func (s Signature) Sizes() []float64 {
	d := s.dims()
	out := make([]float64, len(d))
	for i, v := range d {
		out[i] = float64(v)
	}
	return out
}

// dims are the dimensions named by the routine's SizeParams.
func (s Signature) dims() []int32 {
	names := s.Routine.SizeParams()
	d := make([]int32, len(names))
	for i, n := range names {
		switch n {
		case "m":
			d[i] = s.M
		case "n":
			d[i] = s.N
		default:
			d[i] = s.K
		}
	}
	return d
}

// Flops returns the standard floating-point operation count of the kernel
// (multiplications plus additions), used to convert times into rates:
//
//	gemm   2·m·n·k
//	syrk   n·(n+1)·k
//	trsm   m·n² (side right), n·m² (side left)
//	trmm   m·n² (side right), n·m² (side left)
//	potrf  n³/3                      (leading term)
//	trtri  n³/3                      (leading term)
//	geqrf  2·m·n² − 2·n³/3 if m ≥ n, 2·n·m² − 2·m³/3 otherwise
//	larft  n·k²                      (approximation, exact for n ≫ k)
//	larfb  4·m·n·k                   (approximation: ignores the k² terms of
//	                                  the multiplication by T)
//
// Flops returns 0 for an invalid routine.
func (s Signature) Flops() float64 {
	m, n, k := float64(s.M), float64(s.N), float64(s.K)
	switch s.Routine {
	case Gemm:
		return 2 * m * n * k
	case Syrk:
		return n * (n + 1) * k
	case Trsm, Trmm:
		if s.Flags&FlagRight != 0 {
			return m * n * n
		}
		return n * m * m
	case Potrf, Trtri:
		return n * n * n / 3
	case Geqrf:
		if m >= n {
			return 2*m*n*n - 2*n*n*n/3
		}
		return 2*n*m*m - 2*m*m*m/3
	case Larft:
		return n * k * k
	case Larfb:
		return 4 * m * n * k
	}
	return 0
}
