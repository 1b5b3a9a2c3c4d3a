package notebook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// ReadFile reads a notebook file (see Read).
func ReadFile(path string) (*Notebook, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("notebook: %w", err)
	}
	nb, err := Unmarshal(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return nb, nil
}

// Read reads an nbformat 4 notebook. Multi-line strings stored as lists of
// lines are joined; numbers in metadata and JSON MIME data are
// json.Number holding the text Python writes for the value Python reads
// (2.50000 and 25e-1 read as 2.5, -0 as 0), so a notebook read, written and
// read again is the same value. Cells of a notebook older than 4.5 get fresh ids, as
// nbformat's upgrade gives them.
func Read(r io.Reader) (*Notebook, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("notebook: read: %w", err)
	}
	return Unmarshal(b)
}

// Unmarshal parses a notebook (see Read).
func Unmarshal(b []byte) (*Notebook, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var top map[string]any
	if err := d.Decode(&top); errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("notebook: not a JSON notebook: it ends before its JSON does (cut short?): %w", err)
	} else if err != nil {
		return nil, fmt.Errorf("notebook: not a JSON notebook: %w", err)
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("notebook: not a JSON notebook: data after the top-level object")
	}
	if _, err := canonicalNumbers(top); err != nil {
		return nil, fmt.Errorf("notebook: %w", err)
	}
	if _, ok := top["nbformat"]; !ok {
		return nil, errors.New("notebook: not a Jupyter notebook: no nbformat version")
	}
	major, err := intField(top, "nbformat")
	if err != nil {
		return nil, fmt.Errorf("notebook: %w", err)
	}
	if major != Format {
		return nil, fmt.Errorf("notebook: nbformat %d: only nbformat 4 notebooks are read (convert it: jupyter nbconvert --to notebook --nbformat 4)", major)
	}
	minor, err := intField(top, "nbformat_minor")
	if err != nil {
		return nil, fmt.Errorf("notebook: %w", err)
	}
	nb := &Notebook{Format: major, FormatMinor: minor}
	if nb.Metadata, err = objField(top, "metadata"); err != nil {
		return nil, fmt.Errorf("notebook: %w", err)
	}
	cells, ok := top["cells"].([]any)
	if !ok {
		return nil, errors.New("notebook: no list of cells")
	}
	seen := map[string]bool{}
	for i, raw := range cells {
		c, err := readCell(raw)
		if err != nil {
			return nil, fmt.Errorf("notebook: cell %d: %w", i+1, err)
		}
		// A cell without an id gets one: before nbformat 4.5 cells had
		// none, and a 4.5 notebook written by hand may lack them, which
		// Jupyter fills in too (nbformat's normalize).
		if c.ID == "" {
			for c.ID = NewID(); seen[c.ID]; c.ID = NewID() {
			}
		}
		if !ValidID(c.ID) {
			return nil, fmt.Errorf("notebook: cell %d: id %q: want 1 to 64 letters, digits, '-' or '_'", i+1, c.ID)
		}
		if seen[c.ID] {
			return nil, fmt.Errorf("notebook: cell %d: id %q is used twice", i+1, c.ID)
		}
		seen[c.ID] = true
		nb.Cells = append(nb.Cells, c)
	}
	return nb, nil
}

func readCell(raw any) (Cell, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return Cell{}, errors.New("not a JSON object")
	}
	var c Cell
	t, err := strField(m, "cell_type")
	if err != nil {
		return c, err
	}
	c.Type = CellType(t)
	if _, ok := m["id"]; ok {
		if c.ID, err = strField(m, "id"); err != nil {
			return c, err
		}
	}
	if c.Source, err = multiline(m, "source"); err != nil {
		return c, err
	}
	if c.Metadata, err = objField(m, "metadata"); err != nil {
		return c, err
	}
	switch c.Type {
	case Code:
		if c.ExecutionCount, err = countField(m, "execution_count"); err != nil {
			return c, err
		}
		outs, _ := m["outputs"].([]any)
		c.Outputs = make([]Output, 0, len(outs))
		for j, raw := range outs {
			o, err := readOutput(raw)
			if err != nil {
				return c, fmt.Errorf("output %d: %w", j+1, err)
			}
			c.Outputs = append(c.Outputs, o)
		}
	case Markdown, Raw:
		if a, ok := m["attachments"]; ok {
			am, ok := a.(map[string]any)
			if !ok {
				return c, errors.New("attachments: not a JSON object")
			}
			c.Attachments = map[string]Bundle{}
			for name, v := range am {
				b, err := readBundle(v)
				if err != nil {
					return c, fmt.Errorf("attachment %q: %w", name, err)
				}
				c.Attachments[name] = b
			}
		}
	default:
		return c, fmt.Errorf("cell type %q: want code, markdown or raw", t)
	}
	return c, nil
}

func readOutput(raw any) (Output, error) {
	m, ok := raw.(map[string]any)
	if !ok {
		return Output{}, errors.New("not a JSON object")
	}
	var o Output
	t, err := strField(m, "output_type")
	if err != nil {
		return o, err
	}
	o.Type = OutputType(t)
	switch o.Type {
	case Stream:
		if o.Name, err = strField(m, "name"); err != nil {
			return o, err
		}
		o.Text, err = multiline(m, "text")
	case DisplayData, ExecuteResult:
		if o.Data, err = readBundle(m["data"]); err != nil {
			return o, fmt.Errorf("data: %w", err)
		}
		if o.Metadata, err = objField(m, "metadata"); err != nil {
			return o, err
		}
		if o.Type == ExecuteResult {
			o.ExecutionCount, err = countField(m, "execution_count")
		}
	case Error:
		if o.EName, err = strField(m, "ename"); err != nil {
			return o, err
		}
		if o.EValue, err = strField(m, "evalue"); err != nil {
			return o, err
		}
		tb, _ := m["traceback"].([]any)
		o.Traceback = make([]string, 0, len(tb))
		for _, l := range tb {
			s, ok := l.(string)
			if !ok {
				return o, errors.New("traceback: not a list of strings")
			}
			o.Traceback = append(o.Traceback, s)
		}
	default:
		return o, fmt.Errorf("output type %q: want stream, display_data, execute_result or error", t)
	}
	return o, err
}

// readBundle reads a MIME bundle, joining the text values stored as lines
// (every list of strings but under a JSON MIME type, as nbformat does).
func readBundle(v any) (Bundle, error) {
	if v == nil {
		return Bundle{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	b := make(Bundle, len(m))
	for k, v := range m {
		if l, ok := v.([]any); ok && !jsonMIME(k) {
			if s, ok := joinStrings(l); ok {
				b[k] = s
				continue
			}
		}
		b[k] = v
	}
	return b, nil
}

// jsonMIME reports whether data of this MIME type is a JSON value.
func jsonMIME(mime string) bool {
	return mime == "application/json" || strings.HasPrefix(mime, "application/") && strings.HasSuffix(mime, "+json")
}

func joinStrings(l []any) (string, bool) {
	var b strings.Builder
	for _, x := range l {
		s, ok := x.(string)
		if !ok {
			return "", false
		}
		b.WriteString(s)
	}
	return b.String(), true
}

// multiline reads a string stored as a string or a list of lines.
func multiline(m map[string]any, key string) (string, error) {
	switch v := m[key].(type) {
	case string:
		return v, nil
	case []any:
		if s, ok := joinStrings(v); ok {
			return s, nil
		}
	case nil:
		return "", fmt.Errorf("no %s", key)
	}
	return "", fmt.Errorf("%s: want a string or a list of strings", key)
}

func strField(m map[string]any, key string) (string, error) {
	s, ok := m[key].(string)
	if !ok {
		return "", fmt.Errorf("%s: want a string", key)
	}
	return s, nil
}

func intField(m map[string]any, key string) (int, error) {
	n, ok := m[key].(json.Number)
	if !ok {
		return 0, fmt.Errorf("%s: want an integer", key)
	}
	i, err := n.Int64()
	if err != nil {
		return 0, fmt.Errorf("%s: want an integer, not %s", key, n)
	}
	return int(i), nil
}

// countField reads an execution count: an integer or null.
func countField(m map[string]any, key string) (*int, error) {
	if m[key] == nil {
		return nil, nil
	}
	i, err := intField(m, key)
	if err != nil {
		return nil, err
	}
	return &i, nil
}

// objField reads a JSON object; a missing one is empty.
func objField(m map[string]any, key string) (map[string]any, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return map[string]any{}, nil
	}
	o, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: want a JSON object", key)
	}
	return o, nil
}

// canonicalNumbers replaces, in place, every number under v by the text
// Python's json module writes for it, and returns v (a number: its
// replacement): an integer keeps its digits (but -0
// is 0), any other number is Python's float repr. A number beyond a 64-bit
// float's range is an error (Python would write it as Infinity, which is
// not JSON).
func canonicalNumbers(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		if x == "-0" {
			return json.Number("0"), nil
		}
		if !strings.ContainsAny(string(x), ".eE") {
			return x, nil
		}
		var b bytes.Buffer
		if err := writeNumber(&b, x); err != nil {
			return nil, fmt.Errorf("number %.40s is out of a 64-bit float's range", x)
		}
		return json.Number(b.String()), nil
	case map[string]any:
		for k, e := range x {
			c, err := canonicalNumbers(e)
			if err != nil {
				return nil, err
			}
			x[k] = c
		}
	case []any:
		for i, e := range x {
			c, err := canonicalNumbers(e)
			if err != nil {
				return nil, err
			}
			x[i] = c
		}
	}
	return v, nil
}
