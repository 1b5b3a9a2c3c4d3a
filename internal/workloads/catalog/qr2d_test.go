package catalog

import (
	"strings"
	"testing"

	"github.com/approxtune/approxtune/sweep"
)

// qrConfig builds a qr2d configuration.
func qrConfig(m, n int, grid sweep.GridShape, b, la int) sweep.Config {
	return sweep.NewConfig(QR2D{}.Params(), map[string]any{"m": m, "n": n, "grid": grid, "b": b, "lookahead": la})
}

// Check accepts the defaults and rejects what the layout cannot run, saying
// what is valid.
func TestQR2DCheck(t *testing.T) {
	w := QR2D{}
	if err := w.Check(sweep.NewConfig(w.Params(), nil), 4); err != nil {
		t.Fatalf("defaults rejected: %v", err)
	}
	if w.Name() != "qr2d" || w.Doc() == "" {
		t.Fatalf("name %q doc %q", w.Name(), w.Doc())
	}
	g22 := sweep.GridShape{2, 2}
	for _, c := range []struct {
		cfg  sweep.Config
		want []string
	}{
		{qrConfig(256, 512, g22, 32, 0), []string{"m=256 < n=512", "m >= n"}},
		{qrConfig(1000, 512, g22, 32, 0), []string{"b=32 must divide", "m=1000", "want b in 1, 2, 4, 8"}},
		// The valid sizes on this grid: the gcd, 1024, had been offered,
		// which leaves processes of 2x2 empty.
		{qrConfig(1024, 1024, g22, 48, 0), []string{"b=48 must divide", "want b in 1, 2, 4, 8, 16, 32, 64, 128, 256, 512"}},
		{qrConfig(1024, 500, g22, 32, 0), []string{"b=32 must divide", "n=500"}},
		{qrConfig(1024, 512, sweep.GridShape{4, 2}, 32, 0), []string{"grid 4x2 needs 8 processes", "at most 4"}},
		{qrConfig(1024, 512, sweep.GridShape{8, 1}, 32, 0), []string{"needs 8 processes"}},
		{qrConfig(1024, 256, sweep.GridShape{1, 4}, 128, 0), []string{"process columns without a block column", "want b <= n/pc=64"}},
		{qrConfig(256, 256, sweep.GridShape{4, 1}, 128, 0), []string{"process rows without a block row", "want b <= m/pr=64"}},
		{qrConfig(1024, 512, g22, 32, 2), []string{"lookahead=2", "0 or 1"}},
	} {
		err := w.Check(c.cfg, 4)
		if err == nil {
			t.Errorf("%s accepted", c.cfg.Label())
			continue
		}
		for _, s := range c.want {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: error %q does not say %q", c.cfg.Label(), err, s)
			}
		}
	}
	// The tallest and widest valid block sizes for a grid.
	for _, c := range []sweep.Config{qrConfig(1024, 256, sweep.GridShape{1, 4}, 64, 1), qrConfig(256, 256, sweep.GridShape{4, 1}, 64, 0)} {
		if err := w.Check(c, 4); err != nil {
			t.Errorf("%s rejected: %v", c.Label(), err)
		}
	}
}
