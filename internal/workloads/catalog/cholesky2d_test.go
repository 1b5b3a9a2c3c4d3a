package catalog

import (
	"strings"
	"testing"

	"github.com/approxtune/approxtune/sweep"
)

// Check rejects configurations that cannot run, saying what is valid.
func TestCholesky2DCheck(t *testing.T) {
	w := Cholesky2D{}
	mk := func(set map[string]any) sweep.Config { return sweep.NewConfig(w.Params(), set) }
	if err := w.Check(mk(nil), 4); err != nil {
		t.Fatalf("defaults rejected: %v", err)
	}
	for _, ok := range []map[string]any{
		{"n": 1000, "b": 64}, // partial last tile
		{"n": 640, "b": 128, "grid": sweep.GridShape{4, 1}}, // 5 tiles on 4 rows
		{"n": 128, "b": 128, "grid": sweep.GridShape{1, 4}}, // one tile
		{"grid": sweep.GridShape{2, 1}, "lookahead": 4},
	} {
		if err := w.Check(mk(ok), 4); err != nil {
			t.Errorf("%v rejected: %v", ok, err)
		}
	}
	bad := []struct {
		set   map[string]any
		ranks int
		want  string
	}{
		{map[string]any{"grid": sweep.GridShape{2, 4}}, 4, "needs 8 processes, the agent has 4"},
		{map[string]any{"grid": sweep.GridShape{4, 1}}, 2, "needs 4 processes, the agent has 2"},
		{map[string]any{"n": 100, "b": 128}, 4, "b=128 is larger than n=100"},
		{map[string]any{"n": 65536, "b": 1}, 4, "want b >= 3"},
	}
	for _, c := range bad {
		err := w.Check(mk(c.set), c.ranks)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v on %d ranks: error %v, want one containing %q", c.set, c.ranks, err, c.want)
		}
	}
	// The parameter schema itself bounds the look-ahead depth and the sizes.
	for _, p := range w.Params() {
		if p.Name != "lookahead" {
			continue
		}
		if _, err := p.Convert(5.0); err == nil || !strings.Contains(err.Error(), "from 0 to 4") {
			t.Errorf("lookahead 5 accepted or unclear: %v", err)
		}
		if _, err := p.Convert(-1.0); err == nil {
			t.Errorf("lookahead -1 accepted")
		}
	}
}
