package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
)

// BenchmarkGemm compares dgemm through the Kernels entry point, with a
// pass-through Interceptor (the least an autotuning engine adds), against
// calling the backend's Dgemm directly, for every compiled-in backend. It
// reports GFLOP/s; see docs/benchmarks.md.
func BenchmarkGemm(b *testing.B) {
	// entry and direct run back to back for each case, so that a change of
	// machine load affects both alike.
	for _, name := range Backends() {
		for _, n := range []int{256, 512} {
			for _, path := range []string{"entry", "direct"} {
				b.Run(fmt.Sprintf("%s/%s/n=%d", path, name, n), func(b *testing.B) {
					be, err := NewBackend(name)
					if err != nil {
						b.Fatal(err)
					}
					rng := rand.New(rand.NewPCG(1, uint64(n)))
					a, bb, c := newMat(rng, n, n), newMat(rng, n, n), newMat(rng, n, n)
					k := New(be)
					k.SetInterceptor(passThrough{})
					gemm := func() {
						be.Dgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a.d, a.ld, bb.d, bb.ld, 0, c.d, c.ld)
					}
					if path == "entry" {
						gemm = func() {
							k.Gemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, a.d, a.ld, bb.d, bb.ld, 0, c.d, c.ld)
						}
					}
					gemm() // warm up
					b.ReportAllocs()
					b.ResetTimer()
					for range b.N {
						gemm()
					}
					flops := Signature{Routine: Gemm, M: int32(n), N: int32(n), K: int32(n)}.Flops()
					b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				})
			}
		}
	}
}

// BenchmarkEntryOverhead measures the fixed cost of the entry point on a
// 2×2×2 dgemm (where the kernel itself costs almost nothing): direct backend
// call, entry point without interceptor, entry point with a pass-through
// interceptor.
func BenchmarkEntryOverhead(b *testing.B) {
	for _, name := range Backends() {
		for _, path := range []string{"direct", "entry-nil", "entry-passthrough"} {
			b.Run(name+"/"+path, func(b *testing.B) {
				be, err := NewBackend(name)
				if err != nil {
					b.Fatal(err)
				}
				x, y, z := []float64{1, 2, 3, 4}, []float64{5, 6, 7, 8}, make([]float64, 4)
				k := New(be)
				if path == "entry-passthrough" {
					k.SetInterceptor(passThrough{})
				}
				b.ReportAllocs()
				if path == "direct" {
					for range b.N {
						be.Dgemm(blas.NoTrans, blas.NoTrans, 2, 2, 2, 1, x, 2, y, 2, 0, z, 2)
					}
					return
				}
				for range b.N {
					k.Gemm(blas.NoTrans, blas.NoTrans, 2, 2, 2, 1, x, 2, y, 2, 0, z, 2)
				}
			})
		}
	}
}
