package workloads

// entry returns a deterministic pseudo-random value in [-0.5, 0.5) for element
// (i, j) of matrix id under seed. Every process computes the elements it owns
// from their global indices, so the matrices are the same for every grid,
// block size and rank count.
func entry(seed int64, id, i, j int) float64 {
	x := uint64(seed)*0x9e3779b97f4a7c15 ^ uint64(id)*0xbf58476d1ce4e5b9 ^ uint64(i)*0x94d049bb133111eb ^ uint64(j)*0x2545f4914f6cdd1d
	// splitmix64 finalizer
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11)/float64(1<<53) - 0.5
}

// pageFloats is how many float64 fill a 4 KiB memory page.
const pageFloats = 4096 / 8

// buffer returns n zeroed float64 with every memory page already in place.
// Memory fresh from the operating system is mapped only when first
// written, at a page fault (and its zeroing) per page; a buffer that Init
// does not write, such as a workspace, a factor or a receive buffer, would
// otherwise pay for its pages in the first timed run only, and a tune
// sweep has no untimed warm-up run to pay for them. Setup allocates
// through it.
func buffer(n int) []float64 {
	b := make([]float64, n)
	for i := 0; i < n; i += pageFloats {
		b[i] = 0
	}
	return b
}
