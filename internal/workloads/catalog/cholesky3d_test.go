package catalog

import (
	"strings"
	"testing"

	"github.com/approxtune/approxtune/sweep"
)

// Check accepts the defaults on 8 ranks and rejects what the recursion or the
// grid cannot do, saying why.
func TestCholesky3DCheck(t *testing.T) {
	w := Cholesky3D{}
	if err := w.Check(sweep.NewConfig(w.Params(), nil), 8); err != nil {
		t.Fatalf("defaults rejected: %v", err)
	}
	cfg := func(n, b int, grid sweep.GridShape) sweep.Config {
		return sweep.NewConfig(w.Params(), map[string]any{"n": n, "b": b, "grid": grid})
	}
	good := []struct {
		n, b  int
		grid  sweep.GridShape
		ranks int
	}{
		{1024, 64, sweep.GridShape{2, 2, 2}, 8},
		{2048, 512, sweep.GridShape{2, 2, 2}, 16},
		{96, 3, sweep.GridShape{3, 3, 3}, 27},
		{64, 64, sweep.GridShape{1, 1, 1}, 1},
		{12, 12, sweep.GridShape{2, 2, 2}, 8},
	}
	for _, g := range good {
		if err := w.Check(cfg(g.n, g.b, g.grid), g.ranks); err != nil {
			t.Errorf("n=%d b=%d grid %s on %d ranks rejected: %v", g.n, g.b, g.grid, g.ranks, err)
		}
	}
	bad := []struct {
		n, b  int
		grid  sweep.GridShape
		ranks int
		want  string
	}{
		{1024, 64, sweep.GridShape{2, 2, 1}, 8, "not a cube"},
		{1024, 64, sweep.GridShape{1, 2, 4}, 8, "not a cube"},
		{1024, 64, sweep.GridShape{2, 2, 2}, 4, "needs 8 processes, the agent has 4"},
		{1024, 64, sweep.GridShape{3, 3, 3}, 8, "needs 27 processes"},
		{1024, 63, sweep.GridShape{2, 2, 2}, 8, "multiple of the grid edge c=2"},
		{1024, 96, sweep.GridShape{2, 2, 2}, 8, "power of two"},
		{1000, 64, sweep.GridShape{2, 2, 2}, 8, "power of two"},
		{768, 128, sweep.GridShape{2, 2, 2}, 8, "power of two"},
		{64, 128, sweep.GridShape{2, 2, 2}, 8, "exceeds n=64"},
	}
	for _, b := range bad {
		err := w.Check(cfg(b.n, b.b, b.grid), b.ranks)
		if err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("n=%d b=%d grid %s on %d ranks: error %v, want one containing %q", b.n, b.b, b.grid, b.ranks, err, b.want)
		}
	}
}
