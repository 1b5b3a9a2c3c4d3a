package selective

import "testing"

func TestCollectiveTime(t *testing.T) {
	const ran, exchange = 150e-6, 4e-6
	eager := EagerLimit / 8 // elements per process at the eager limit
	cases := []struct {
		name          string
		n             int
		ran, exchange float64
		want          float64
	}{
		{"barrier", 0, ran, exchange, exchange},
		{"at the eager limit", eager, ran, exchange, exchange},
		{"one element over", eager + 1, ran, exchange, ran},
		{"large", 1 << 20, 7e-3, exchange, 7e-3},
		// Clocks of two processes may disagree by a little: never negative.
		{"exchange before the last arrival", 144, ran, -1e-6, 0},
	}
	for _, c := range cases {
		if got := collectiveTime(c.n, c.ran, c.exchange); got != c.want {
			t.Errorf("%s: collectiveTime(%d, %g, %g) = %g, want %g", c.name, c.n, c.ran, c.exchange, got, c.want)
		}
	}
}
