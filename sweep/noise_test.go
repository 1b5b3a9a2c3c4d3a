package sweep

import (
	"math"
	"testing"
)

func TestRunError(t *testing.T) {
	// Configuration 1: 1.0 against 1.1 (0.1/1.1), 1.1 against 1.0 (0.1).
	// Configuration 2: 2, 2, 2.6: 2 against 2.3 twice (0.3/2.3 each),
	// 2.6 against 2 (0.3). Configuration 3 has one run and is left out.
	got, n := RunError([][]float64{{1.0, 1.1}, {2, 2, 2.6}, {5}})
	want := (0.1/1.1 + 0.1 + 2*0.3/2.3 + 0.3) / 5
	if n != 5 || math.Abs(got-want) > 1e-12 {
		t.Errorf("RunError = %v over %d runs; want %v over 5", got, n, want)
	}
	if got, n := RunError([][]float64{{3, 3, 3}}); n != 3 || got != 0 {
		t.Errorf("identical runs: RunError = %v over %d; want 0 over 3", got, n)
	}
	if got2, n := RunErrorByIndex(map[int][]float64{7: {2, 2, 2.6}, 2: {1.0, 1.1}, 9: {5}}); n != 5 || math.Abs(got2-want) > 1e-12 {
		t.Errorf("RunErrorByIndex = %v over %d runs; want %v over 5", got2, n, want)
	}
	if got, n := RunError([][]float64{{1}, nil}); n != 0 || !math.IsNaN(got) {
		t.Errorf("no configuration with two runs: RunError = %v over %d; want NaN over 0", got, n)
	}
}
