package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// FuzzReader reads a stream of protocol lines, as both ends do with what
// the other sends. Properties: the lines returned are the stream's lines,
// in order, each a JSON object of this version whose type is the one
// returned; reading stops at the first line that is not, with an error
// that says why (a *VersionError for another version); and what was read,
// written again by a Writer, reads back equal. The seeds in
// testdata/fuzz/FuzzReader are conversations of the session's tests.
func FuzzReader(f *testing.F) {
	f.Add([]byte(`{"type":"run","v":2,"id":1,"spec":{"workload":"synthetic"},"gate":true}` + "\n" + `{"type":"ping","v":2,"id":3}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lines := strings.SplitAfter(string(data), "\n")
		rd := NewReader(bytes.NewReader(data))
		var buf bytes.Buffer
		w := NewWriter(&buf)
		var read []map[string]any
		for i := 0; ; i++ {
			line, typ, err := rd.Next()
			if errors.Is(err, io.EOF) {
				if i < len(lines) && strings.TrimRight(lines[i], "\n") != "" {
					t.Fatalf("EOF at line %d of %q", i+1, data)
				}
				break
			}
			if i >= len(lines) {
				t.Fatalf("line %d read from %d lines: %q", i+1, len(lines), line)
			}
			want := strings.TrimSuffix(strings.TrimSuffix(lines[i], "\n"), "\r")
			head, ok := decodeHead(want)
			if err != nil {
				switch {
				case !ok && !strings.Contains(err.Error(), "not JSON"):
					t.Fatalf("line %q: error %v does not say it is not JSON", want, err)
				case ok && head.V != Version && !IsVersion(err):
					t.Fatalf("line %q of version %d: error %v is not a version error", want, head.V, err)
				case ok && head.V == Version:
					t.Fatalf("line %q refused: %v", want, err)
				}
				break
			}
			if string(line) != want {
				t.Fatalf("line %d: read %q, the stream has %q", i+1, line, want)
			}
			if !ok || head.V != Version || head.Type != typ {
				t.Fatalf("line %.200q accepted as type %q: its head is %+v (decodes: %v)", line, typ, head, ok)
			}
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				continue // an object with values Go's maps do not take (null at top): head decoding accepted it
			}
			read = append(read, m)
			if err := w.Write(m); err != nil {
				t.Fatalf("write back %v: %v", m, err)
			}
		}
		// What was written reads back the same.
		back := NewReader(&buf)
		for i, m := range read {
			line, _, err := back.Next()
			if err != nil {
				t.Fatalf("reading back message %d (%v): %v", i+1, m, err)
			}
			var got map[string]any
			if err := json.Unmarshal(line, &got); err != nil || !reflect.DeepEqual(got, m) {
				t.Fatalf("written %v, read back %s (%v)", m, line, err)
			}
		}
		if _, _, err := back.Next(); !errors.Is(err, io.EOF) {
			t.Fatalf("more written than read: %v", err)
		}
	})
}

// head is a line's type and version as an independent decoding reads them.
type head struct {
	Type string
	V    int
}

// decodeHead decodes a line's "type" and "v" (Go's JSON matches keys
// without regard to case, the last duplicate winning) and reports whether
// it is a JSON value that carries them.
func decodeHead(line string) (head, bool) {
	var h head
	if err := json.Unmarshal([]byte(line), &h); err != nil {
		return h, false
	}
	return h, true
}
