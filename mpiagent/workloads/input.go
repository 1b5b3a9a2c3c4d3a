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
