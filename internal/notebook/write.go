package notebook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/approxtune/approxtune/internal/atomicfile"
)

// Marshal returns the notebook as Jupyter writes it (see the package
// documentation), ending in a newline. Cells without an id get a fresh one
// in what is written (nb is not changed); an invalid or repeated id, an
// unknown cell or output type, or a NaN or infinite number is an error.
func Marshal(nb *Notebook) ([]byte, error) {
	tree, err := nb.tree()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := writeValue(&b, tree, 0); err != nil {
		return nil, fmt.Errorf("notebook: %w", err)
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// Write writes the notebook to w as Marshal makes it.
func Write(w io.Writer, nb *Notebook) error {
	b, err := Marshal(nb)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("notebook: write: %w", err)
	}
	return nil
}

// WriteFile writes the notebook to path through a temporary file in the
// same directory and a rename, so that a failure never leaves half a
// notebook (nor loses the one that was there).
func WriteFile(path string, nb *Notebook) error {
	b, err := Marshal(nb)
	if err != nil {
		return err
	}
	if path, err := atomicfile.Write(path, func(f *os.File) error {
		_, err := f.Write(b)
		return err
	}); err != nil {
		return fmt.Errorf("notebook: write %s: %w", path, err)
	}
	return nil
}

// tree is the notebook as the JSON values nbformat writes, lines split and
// transient metadata stripped.
func (nb *Notebook) tree() (map[string]any, error) {
	if nb.Format != 0 && nb.Format != Format {
		return nil, fmt.Errorf("notebook: nbformat %d: only nbformat 4 is written", nb.Format)
	}
	minor := max(nb.FormatMinor, FormatMinor)
	meta := copyMap(nb.Metadata)
	for _, k := range []string{"orig_nbformat", "orig_nbformat_minor", "signature"} {
		delete(meta, k)
	}
	seen := map[string]bool{}
	for _, c := range nb.Cells {
		if c.ID != "" {
			if !ValidID(c.ID) {
				return nil, fmt.Errorf("notebook: cell id %q: want 1 to 64 letters, digits, '-' or '_'", c.ID)
			}
			if seen[c.ID] {
				return nil, fmt.Errorf("notebook: cell id %q is used twice", c.ID)
			}
			seen[c.ID] = true
		}
	}
	cells := make([]any, 0, len(nb.Cells))
	for i, c := range nb.Cells {
		id := c.ID
		for id == "" || (c.ID == "" && seen[id]) {
			id = NewID()
		}
		seen[id] = true
		m := copyMap(c.Metadata)
		delete(m, "trusted")
		cell := map[string]any{"id": id, "cell_type": string(c.Type), "metadata": m, "source": SplitLines(c.Source)}
		switch c.Type {
		case Code:
			var n any
			if c.ExecutionCount != nil {
				n = *c.ExecutionCount
			}
			outs := make([]any, 0, len(c.Outputs))
			for j, o := range c.Outputs {
				t, err := o.tree()
				if err != nil {
					return nil, fmt.Errorf("notebook: cell %d, output %d: %w", i+1, j+1, err)
				}
				outs = append(outs, t)
			}
			cell["execution_count"], cell["outputs"] = n, outs
		case Markdown, Raw:
			if c.Attachments != nil {
				att := map[string]any{}
				for name, b := range c.Attachments {
					att[name] = splitBundle(b)
				}
				cell["attachments"] = att
			}
		default:
			return nil, fmt.Errorf("notebook: cell %d: cell type %q: want code, markdown or raw", i+1, c.Type)
		}
		cells = append(cells, cell)
	}
	return map[string]any{"cells": cells, "metadata": meta, "nbformat": Format, "nbformat_minor": minor}, nil
}

// tree is the output as nbformat writes it.
func (o Output) tree() (map[string]any, error) {
	t := map[string]any{"output_type": string(o.Type)}
	switch o.Type {
	case Stream:
		t["name"], t["text"] = o.Name, SplitLines(o.Text)
	case DisplayData, ExecuteResult:
		t["data"], t["metadata"] = splitBundle(o.Data), copyMap(o.Metadata)
		if o.Type == ExecuteResult {
			var n any
			if o.ExecutionCount != nil {
				n = *o.ExecutionCount
			}
			t["execution_count"] = n
		}
	case Error:
		tb := o.Traceback
		if tb == nil {
			tb = []string{}
		}
		t["ename"], t["evalue"], t["traceback"] = o.EName, o.EValue, tb
	default:
		return nil, fmt.Errorf("output type %q: want stream, display_data, execute_result or error", o.Type)
	}
	return t, nil
}

// splitMIME reports whether a MIME type's string value is stored as lines.
func splitMIME(mime string) bool {
	return strings.HasPrefix(mime, "text/") || mime == "image/svg+xml" || mime == "application/javascript"
}

// splitBundle is a bundle with its text values split into lines.
func splitBundle(b Bundle) map[string]any {
	out := make(map[string]any, len(b))
	for k, v := range b {
		if s, ok := v.(string); ok && splitMIME(k) {
			out[k] = SplitLines(s)
			continue
		}
		out[k] = v
	}
	return out
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// writeValue writes v as Python's json.dumps(v, indent=1, sort_keys=True,
// separators=(",", ": "), ensure_ascii=False) does, at nesting level depth.
func writeValue(b *bytes.Buffer, v any, depth int) error {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case string:
		writeString(b, x)
	case json.Number:
		return writeNumber(b, x)
	case float64:
		return writeFloat(b, x)
	case float32:
		return writeFloat(b, float64(x))
	case int:
		b.WriteString(strconv.Itoa(x))
	case int64:
		b.WriteString(strconv.FormatInt(x, 10))
	case int32:
		b.WriteString(strconv.FormatInt(int64(x), 10))
	case uint64:
		b.WriteString(strconv.FormatUint(x, 10))
	case map[string]any:
		return writeObject(b, x, depth)
	case Bundle:
		return writeObject(b, x, depth)
	case []any:
		return writeArray(b, len(x), func(i int) any { return x[i] }, depth)
	case []string:
		return writeArray(b, len(x), func(i int) any { return x[i] }, depth)
	default:
		// Other Go values (structs, typed maps and slices, other numbers):
		// through encoding/json, then as the JSON values they are.
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
			b.WriteString("null")
			return nil
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return err
		}
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		var g any
		if err := d.Decode(&g); err != nil {
			return err
		}
		return writeValue(b, g, depth)
	}
	return nil
}

func indent(b *bytes.Buffer, depth int) {
	b.WriteByte('\n')
	for i := 0; i < depth; i++ {
		b.WriteByte(' ')
	}
}

func writeObject[M ~map[string]any](b *bytes.Buffer, m M, depth int) error {
	if len(m) == 0 {
		b.WriteString("{}")
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // byte order of UTF-8 is code point order, as Python sorts
	b.WriteByte('{')
	for i, k := range keys {
		if i > 0 {
			b.WriteByte(',')
		}
		indent(b, depth+1)
		writeString(b, k)
		b.WriteString(": ")
		if err := writeValue(b, m[k], depth+1); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	indent(b, depth)
	b.WriteByte('}')
	return nil
}

func writeArray(b *bytes.Buffer, n int, at func(int) any, depth int) error {
	if n == 0 {
		b.WriteString("[]")
		return nil
	}
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		indent(b, depth+1)
		if err := writeValue(b, at(i), depth+1); err != nil {
			return err
		}
	}
	indent(b, depth)
	b.WriteByte(']')
	return nil
}

// writeString writes s as a JSON string the way Python's json module does
// with ensure_ascii=False: only '"', '\\' and control characters are
// escaped (\n, \r, \t, \b, \f by name, the others as \u00XX). Invalid
// UTF-8 becomes U+FFFD.
func writeString(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch c {
			case '"':
				b.WriteString(`\"`)
			case '\\':
				b.WriteString(`\\`)
			case '\n':
				b.WriteString(`\n`)
			case '\r':
				b.WriteString(`\r`)
			case '\t':
				b.WriteString(`\t`)
			case '\b':
				b.WriteString(`\b`)
			case '\f':
				b.WriteString(`\f`)
			default:
				if c < 0x20 {
					fmt.Fprintf(b, `\u%04x`, c)
				} else {
					b.WriteByte(c)
				}
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}

// writeNumber writes a number read from JSON as Python writes the value it
// reads: integers as they are, other numbers as Python's float repr.
func writeNumber(b *bytes.Buffer, n json.Number) error {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		b.WriteString(s) // an integer: Python's are unbounded, keep every digit
		return nil
	}
	f, err := n.Float64()
	if err != nil {
		return fmt.Errorf("number %q: %w", s, err)
	}
	return writeFloat(b, f)
}

// writeFloat writes f as Python's repr(float): the shortest digits that
// read back as f, in positional notation with at least one decimal when
// the decimal exponent is from -4 to 15, in scientific notation (1e-05,
// 1.5e+16) otherwise.
func writeFloat(b *bytes.Buffer, f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("%v is not a JSON number", f)
	}
	if f == 0 {
		if math.Signbit(f) {
			b.WriteString("-0.0")
		} else {
			b.WriteString("0.0")
		}
		return nil
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // [-]d[.ddd]e±XX
	neg := strings.HasPrefix(e, "-")
	e = strings.TrimPrefix(e, "-")
	mant, exps, _ := strings.Cut(e, "e")
	exp, err := strconv.Atoi(exps)
	if err != nil {
		return fmt.Errorf("float %v: %w", f, err)
	}
	digits := strings.Replace(mant, ".", "", 1)
	if neg {
		b.WriteByte('-')
	}
	decpt := exp + 1 // digits before the decimal point
	switch {
	case decpt > -4 && decpt <= 16:
		switch {
		case decpt <= 0:
			b.WriteString("0." + strings.Repeat("0", -decpt) + digits)
		case decpt >= len(digits):
			b.WriteString(digits + strings.Repeat("0", decpt-len(digits)) + ".0")
		default:
			b.WriteString(digits[:decpt] + "." + digits[decpt:])
		}
	default:
		b.WriteString(digits[:1])
		if len(digits) > 1 {
			b.WriteString("." + digits[1:])
		}
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		fmt.Fprintf(b, "e%s%02d", sign, exp)
	}
	return nil
}
