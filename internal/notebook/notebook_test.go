package notebook

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/approxtune/approxtune/internal/testenv"
)

// small is a notebook with one cell and output of every kind.
func small() *Notebook {
	nb := New()
	md := NewMarkdown("# Título\n\nA \"small\" sweep.")
	md.ID = "md-1"
	c := NewCode("workload summa n=256\nevaluate\n")
	c.ID, c.ExecutionCount = "code_2", Count(1)
	c.Outputs = []Output{
		{Type: Stream, Name: "stdout", Text: "starting\r\nagent\n"},
		{Type: DisplayData, Data: Bundle{"text/plain": "a<b\nc", "image/png": "iVBORw0KGgo=", "image/svg+xml": "<svg>\n</svg>\n"},
			Metadata: map[string]any{"image/png": map[string]any{"width": 800, "height": 450}}},
		{Type: ExecuteResult, Data: Bundle{"text/plain": "x\ty"}, ExecutionCount: Count(1)},
		{Type: Error, EName: "CommandError", EValue: "bad", Traceback: []string{"line 1: x", "CommandError: bad"}},
	}
	nb.Cells = []Cell{md, c}
	return nb
}

// smallJSON is what nbformat.writes makes of small() (Debian's nbformat 5.5).
const smallJSON = `{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "md-1",
   "metadata": {},
   "source": [
    "# Título\n",
    "\n",
    "A \"small\" sweep."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 1,
   "id": "code_2",
   "metadata": {},
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "starting\r\n",
      "agent\n"
     ]
    },
    {
     "data": {
      "image/png": "iVBORw0KGgo=",
      "image/svg+xml": [
       "<svg>\n",
       "</svg>\n"
      ],
      "text/plain": [
       "a<b\n",
       "c"
      ]
     },
     "metadata": {
      "image/png": {
       "height": 450,
       "width": 800
      }
     },
     "output_type": "display_data"
    },
    {
     "data": {
      "text/plain": [
       "x\ty"
      ]
     },
     "execution_count": 1,
     "metadata": {},
     "output_type": "execute_result"
    },
    {
     "ename": "CommandError",
     "evalue": "bad",
     "output_type": "error",
     "traceback": [
      "line 1: x",
      "CommandError: bad"
     ]
    }
   ],
   "source": [
    "workload summa n=256\n",
    "evaluate\n"
   ]
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "approxtune",
   "language": "approxtune",
   "name": "approxtune"
  },
  "language_info": {
   "name": "approxtune"
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5
}
`

// The bytes are Jupyter's: one-space indent, sorted keys, lines split,
// non-ASCII as is, the PNG one string, a final newline.
func TestMarshalJupyterBytes(t *testing.T) {
	b, err := Marshal(small())
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != smallJSON {
		t.Errorf("got:\n%s\nwant:\n%s", b, smallJSON)
	}
}

// Read undoes Write: the same notebook, and the same bytes written again.
func TestRoundTrip(t *testing.T) {
	nb := small()
	nb.Metadata["custom"] = map[string]any{"ratio": 0.25, "big": json.Number("12345678901234567890"), "list": []any{true, nil, "x"}}
	nb.Cells = append(nb.Cells, Cell{ID: "raw", Type: Raw, Source: "", Metadata: map[string]any{"format": "text/plain"},
		Attachments: map[string]Bundle{"a.png": {"image/png": "AAAA", "text/plain": "one\ntwo"}}})
	b, err := Marshal(nb)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	b2, err := Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, b2) {
		t.Errorf("written again, the bytes differ:\n%s\n---\n%s", b, b2)
	}
	if len(got.Cells) != 3 || got.Format != 4 || got.FormatMinor != 5 {
		t.Fatalf("read %d cells, nbformat %d.%d", len(got.Cells), got.Format, got.FormatMinor)
	}
	for i, c := range got.Cells {
		w := nb.Cells[i]
		if c.ID != w.ID || c.Type != w.Type || c.Source != w.Source || !reflect.DeepEqual(c.ExecutionCount, w.ExecutionCount) {
			t.Errorf("cell %d: got %+v, want %+v", i, c, w)
		}
	}
	outs := got.Cells[1].Outputs
	if len(outs) != 4 || outs[0].Text != "starting\r\nagent\n" || outs[1].Data["image/svg+xml"] != "<svg>\n</svg>\n" ||
		outs[1].Data["image/png"] != "iVBORw0KGgo=" || outs[2].Data["text/plain"] != "x\ty" || *outs[2].ExecutionCount != 1 ||
		outs[3].EName != "CommandError" || !reflect.DeepEqual(outs[3].Traceback, []string{"line 1: x", "CommandError: bad"}) {
		t.Errorf("outputs read back: %+v", outs)
	}
	if a := got.Cells[2].Attachments["a.png"]; a["text/plain"] != "one\ntwo" || a["image/png"] != "AAAA" {
		t.Errorf("attachments read back: %+v", got.Cells[2].Attachments)
	}
}

// Lines split as Python's str.splitlines(True).
func TestSplitLines(t *testing.T) {
	for in, want := range map[string][]string{
		"":                   {},
		"a":                  {"a"},
		"a\n":                {"a\n"},
		"a\nb":               {"a\n", "b"},
		"\n\n":               {"\n", "\n"},
		"a\r\nb\rc\n":        {"a\r\n", "b\r", "c\n"},
		"a\r":                {"a\r"},
		"a\vb\fc\x1cd":       {"a\v", "b\f", "c\x1c", "d"},
		"é\u2028ü\u0085x":    {"é\u2028", "ü\u0085", "x"},
		"tab\tstays\x1fhere": {"tab\tstays\x1fhere"},
	} {
		if got := SplitLines(in); !reflect.DeepEqual(got, want) {
			t.Errorf("SplitLines(%q) = %q, want %q", in, got, want)
		}
	}
}

// Strings and numbers are written as Python's json module writes them.
func TestScalars(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{"a\"b\\c\x00\x1f\b\f\u007f<>&é\u2028", `"a\"b\\c\u0000\u001f\b\f` + "\u007f<>&é\u2028" + `"`},
		{"\xff", `"` + "\uFFFD" + `"`},
		{0.25, "0.25"}, {800.0, "800.0"}, {1e-5, "1e-05"}, {0.0001, "0.0001"}, {1e16, "1e+16"}, {1e15, "1000000000000000.0"},
		{-1.5e-7, "-1.5e-07"}, {123456789.125, "123456789.125"}, {0.0, "0.0"},
		{json.Number("7"), "7"}, {json.Number("1E5"), "100000.0"}, {json.Number("12345678901234567890"), "12345678901234567890"},
		{[]any{}, "[]"}, {map[string]any{}, "{}"}, {struct{ A int }{3}, "{\n \"A\": 3\n}"},
	} {
		var b bytes.Buffer
		if err := writeValue(&b, tc.v, 0); err != nil {
			t.Errorf("%v: %v", tc.v, err)
			continue
		}
		if b.String() != tc.want {
			t.Errorf("%#v: got %s, want %s", tc.v, b.String(), tc.want)
		}
	}
}

// Ids: a cell without one gets a fresh valid one; bad or repeated ids are
// errors; a 4.4 notebook read gets ids, and so does a 4.5 cell written
// without one (Jupyter fills them in too).
func TestIDs(t *testing.T) {
	nb := New()
	nb.Cells = []Cell{{Type: Code, Source: "status"}, {Type: Markdown, Source: "x"}}
	b, err := Marshal(nb)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if !ValidID(got.Cells[0].ID) || !ValidID(got.Cells[1].ID) || got.Cells[0].ID == got.Cells[1].ID {
		t.Errorf("ids %q %q", got.Cells[0].ID, got.Cells[1].ID)
	}
	for _, ids := range [][2]string{{"a b", "c"}, {"same", "same"}, {strings.Repeat("x", 65), "y"}} {
		nb.Cells[0].ID, nb.Cells[1].ID = ids[0], ids[1]
		if _, err := Marshal(nb); err == nil {
			t.Errorf("ids %q were written", ids)
		}
	}
	old := `{"nbformat": 4, "nbformat_minor": 4, "metadata": {}, "cells": [{"cell_type": "code", "source": ["a\n", "b"], "metadata": {}, "execution_count": null, "outputs": []}]}`
	nb4, err := Unmarshal([]byte(old))
	if err != nil {
		t.Fatal(err)
	}
	if !ValidID(nb4.Cells[0].ID) || nb4.Cells[0].Source != "a\nb" {
		t.Errorf("4.4 cell read as %+v", nb4.Cells[0])
	}
	noID := `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", "source": "", "metadata": {}, "outputs": []}, {"id": "b", "cell_type": "markdown", "source": "", "metadata": {}}]}`
	if nb5, err := Unmarshal([]byte(noID)); err != nil || !ValidID(nb5.Cells[0].ID) || nb5.Cells[0].ID == "b" {
		t.Errorf("4.5 cell without an id: %v", err)
	}
	for _, bad := range []string{
		`[]`, `{"nbformat": 3, "nbformat_minor": 0, "worksheets": []}`,
		`{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"id": "a", "cell_type": "heading", "source": "", "metadata": {}}]}`,
	} {
		if _, err := Unmarshal([]byte(bad)); err == nil {
			t.Errorf("read %s", bad)
		}
	}
}

// WriteFile replaces a file whole.
func TestWriteFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.ipynb")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, small()); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != smallJSON {
		t.Fatalf("%v\n%s", err, b)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want the old file's 0600", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
	// Through a symbolic link, its target is written and the link kept.
	link := filepath.Join(filepath.Dir(path), "link.ipynb")
	if err := os.Symlink("a.ipynb", link); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(path, []byte("old"), 0o600)
	if err := WriteFile(link, small()); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link after the write: %v, %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(path); string(b) != smallJSON {
		t.Errorf("the link's target not written: %s", b)
	}
}

// nbformatPython is a Python with nbformat: jupyter's, or python3.
func nbformatPython(t *testing.T) string {
	t.Helper()
	var cands []string
	if j, err := exec.LookPath("jupyter"); err == nil {
		if f, err := os.Open(j); err == nil {
			line, _ := bufio.NewReader(f).ReadString('\n')
			f.Close()
			if fs := strings.Fields(strings.TrimPrefix(line, "#!")); strings.HasPrefix(line, "#!") && len(fs) == 1 {
				cands = append(cands, fs[0])
			}
		}
	}
	cands = append(cands, "/usr/bin/python3", "python3")
	for _, c := range cands {
		if exec.Command(c, "-c", "import nbformat").Run() == nil {
			return c
		}
	}
	testenv.Missing(t, "a Python with nbformat (python3-nbformat) among %v", cands)
	return ""
}

// Jupyter's own nbformat validates what Write makes and, writing it again,
// makes the same bytes.
func TestNbformatAgrees(t *testing.T) {
	py := nbformatPython(t)
	nb := small()
	nb.Cells[1].Outputs[3].EValue = "bad\u2028 \x1b[31mred\x1b[0m"
	nb.Cells = append(nb.Cells, NewMarkdown("tail\r\nwith\vbreaks\u0085and é"), NewCode(""))
	nb.Metadata["x"] = map[string]any{"f": 0.1, "g": 1e-7, "h": 3.0, "n": nil}
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.ipynb"), filepath.Join(dir, "out.ipynb")
	if err := WriteFile(in, nb); err != nil {
		t.Fatal(err)
	}
	script := `import nbformat, sys
nb = nbformat.read(sys.argv[1], as_version=4)
nbformat.validate(nb)
nbformat.write(nb, sys.argv[2])
`
	if o, err := exec.Command(py, "-c", script, in, out).CombinedOutput(); err != nil {
		t.Fatalf("nbformat: %v\n%s", err, o)
	}
	want, _ := os.ReadFile(out)
	got, _ := os.ReadFile(in)
	if !bytes.Equal(got, want) {
		t.Errorf("nbformat writes it otherwise:\n%s\n---\n%s", want, got)
	}
}

// Numbers read as the text Python writes for them, so reading what was
// written gives the same value; one beyond a float's range is an error.
func TestNumbersReadAsPythonWrites(t *testing.T) {
	nb, err := Unmarshal([]byte(`{"cells":[],"metadata":{"a":[2.50000,25e-1,-0,1E5,7,-0.0]},"nbformat":4,"nbformat_minor":5}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []any{json.Number("2.5"), json.Number("2.5"), json.Number("0"), json.Number("100000.0"), json.Number("7"), json.Number("-0.0")}
	if got := nb.Metadata["a"]; !reflect.DeepEqual(got, want) {
		t.Errorf("read %v, want %v", got, want)
	}
	_, err = Unmarshal([]byte(`{"cells":[],"metadata":{"a":1e999},"nbformat":4,"nbformat_minor":5}`))
	if err == nil || !strings.Contains(err.Error(), "1e999 is out of a 64-bit float's range") {
		t.Errorf("1e999 read with error %v", err)
	}
}
