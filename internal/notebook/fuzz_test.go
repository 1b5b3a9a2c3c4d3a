package notebook

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// FuzzUnmarshal reads notebook files, as 'open' and the kernel's export do.
// Properties: an error is one line that begins "notebook:"; a notebook
// read has valid, distinct cell ids and is nbformat 4; what is read writes
// (Marshal), and what is written reads back to the same cells and metadata
// and writes the same bytes again. The seeds in testdata/fuzz/FuzzUnmarshal
// are the notebooks in notebooks/ and the forms nbformat writes.
func FuzzUnmarshal(f *testing.F) {
	f.Add([]byte(`{"cells":[{"cell_type":"code","id":"a1","source":["workload summa\n","evaluate"],"metadata":{},"execution_count":null,"outputs":[]}],"metadata":{},"nbformat":4,"nbformat_minor":5}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		nb, err := Unmarshal(data)
		if err != nil {
			if msg := err.Error(); !strings.HasPrefix(msg, "notebook:") || strings.Contains(msg, "\n") {
				t.Fatalf("error %q: want one line that begins \"notebook:\"", msg)
			}
			return
		}
		if nb.Format != Format {
			t.Fatalf("read nbformat %d", nb.Format)
		}
		seen := map[string]bool{}
		for _, c := range nb.Cells {
			if !ValidID(c.ID) || seen[c.ID] {
				t.Fatalf("cell id %q read (invalid or repeated)", c.ID)
			}
			seen[c.ID] = true
		}
		out, err := Marshal(nb)
		if err != nil {
			t.Fatalf("a notebook read does not write: %v", err)
		}
		back, err := Unmarshal(out)
		if err != nil {
			t.Fatalf("written %s, which does not read: %v", out, err)
		}
		if !reflect.DeepEqual(back.Cells, nb.Cells) || !reflect.DeepEqual(back.Metadata, nb.Metadata) {
			t.Fatalf("read, written and read again, the notebook changed:\n%+v\n%+v", nb, back)
		}
		again, err := Marshal(back)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("written twice, different bytes (%v):\n%s\n%s", err, out, again)
		}
	})
}
