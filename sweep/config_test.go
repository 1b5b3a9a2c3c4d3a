package sweep

import (
	"encoding/json"
	"strings"
	"testing"
)

// A configuration read back from JSON holds its grid as a string;
// Canonical gives it back as the schema holds it, defaults where it has
// nothing, and names a value the schema rejects.
func TestCanonical(t *testing.T) {
	params := []Param{
		{Name: "n", Kind: Int, Default: 64, Min: 1, Max: 1 << 16},
		{Name: "grid", Kind: Grid, Default: GridShape{2, 2}, Dims: 2},
		{Name: "b", Kind: Int, Default: 16, Min: 1, Max: 1 << 16},
	}
	var c Config
	if err := json.Unmarshal([]byte(`{"n":4096,"grid":"1x2"}`), &c); err != nil {
		t.Fatal(err)
	}
	got, err := Canonical(params, c)
	if err != nil {
		t.Fatal(err)
	}
	if g := got.Grid("grid"); g.Procs() != 2 || g.String() != "1x2" || got.Int("n") != 4096 || got.Int("b") != 16 {
		t.Errorf("canonical %s: want n=4096 grid=1x2 b=16", got.Label())
	}
	if err := json.Unmarshal([]byte(`{"grid":"2x2x2"}`), &c); err != nil {
		t.Fatal(err)
	}
	if _, err := Canonical(params, c); err == nil || !strings.Contains(err.Error(), "grid") {
		t.Errorf("a 3-D grid against a 2-D parameter: %v, want an error naming grid", err)
	}
}
