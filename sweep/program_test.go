package sweep

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A program's space sets the rank count once: by a grid or by ranks. A
// grid and ranks both had launched the grid's ranks while {ranks} and the
// labels said the other count.
func TestProgramSchemaRankCount(t *testing.T) {
	p := &Program{Command: []string{"./solver", "{ranks}"}}
	for _, tc := range []struct{ space, want string }{
		{`{"b": [1]}`, "the space sets no rank count"},
		{`{"ranks": ["a"]}`, `ranks ["a"]: want rank counts`},
		{`{"grid": ["1x2"], "ranks": [4]}`, "the space has a grid (grid) and ranks: the grid sets the rank count (its product, also {ranks}); leave ranks out"},
		{`{"g": ["1x2"], "h": ["2x1"]}`, "the space has 2 grid parameters (g, h): want at most one"},
		{`{"grid": ["1x2", "2x2"]}`, ""},
		{`{"ranks": [2, 4]}`, ""},
		{`{"grid": ["2x2x"]}`, `program: grid: "2x2x" is not a grid: want positive integers separated by x`},
		{`{"grid": ["2x2", "x4"], "b": [1]}`, `program: grid: "x4" is not a grid`},
		{`{"ranks": [2], "mode": ["x", "xx", "fast"]}`, ""},
		{`{"proc_grid": ["2x2x"]}`, `program: proc_grid: "2x2x" is not a grid`},
		// Words with digits and x's, where no grid is meant.
		{`{"ranks": [2], "chunks": ["x1", 2], "addr": ["0x10", "0x20"]}`, ""},
	} {
		var space map[string]json.RawMessage
		if err := json.Unmarshal([]byte(tc.space), &space); err != nil {
			t.Fatal(err)
		}
		_, err := p.Schema(space)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.space, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v; want %q", tc.space, err, tc.want)
		}
	}
}

// A placeholder the space lacks is told with where it is: the command, or
// the template of which deck (a review's {zz} in a deck's template had been
// looked for on the command line).
func TestProgramPlaceholderWhere(t *testing.T) {
	tmpl := filepath.Join(t.TempDir(), "in.template")
	if err := os.WriteFile(tmpl, []byte("n {n}\nzz {zz}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	space := map[string]json.RawMessage{"n": json.RawMessage(`[1]`), "ranks": json.RawMessage(`[2]`)}
	for p, want := range map[*Program]string{
		{Command: []string{"./solver", "-b", "{b}"}}:                                     "program: {b} in the command is not a parameter of the space: want one of {n}, {ranks}",
		{Command: []string{"./solver", "{n}"}, Decks: map[string]string{"in.dat": tmpl}}: "program: {zz} in deck in.dat's template " + tmpl + " is not a parameter of the space",
	} {
		if _, err := p.Schema(space); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v; want %q", p.Command, err, want)
		}
	}
}
