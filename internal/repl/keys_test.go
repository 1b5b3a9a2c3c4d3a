package repl

import (
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// chunks is a reader that returns its pieces one per Read, as a terminal
// delivers what arrives between two reads.
type chunks struct{ parts []string }

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	c.parts[0] = c.parts[0][n:]
	if c.parts[0] == "" {
		c.parts = c.parts[1:]
	}
	return n, nil
}

// TestKeyReaderHomeEnd checks that Home and End as tmux, screen and rxvt
// send them reach line editing as xterm's, whole or split across reads,
// and that every other byte (arrows, Delete, Ctrl-C, a lone Escape) goes
// through unchanged.
func TestKeyReaderHomeEnd(t *testing.T) {
	for _, c := range []struct {
		name  string
		parts []string
		want  string
	}{
		{"tmux home end", []string{"ab\x1b[1~c\x1b[4~"}, "ab\x1b[Hc\x1b[F"},
		{"rxvt home end", []string{"\x1b[7~x\x1b[8~"}, "\x1b[Hx\x1b[F"},
		{"split home", []string{"ab\x1b", "[", "1", "~cd"}, "ab\x1b[Hcd"},
		{"split end", []string{"\x1b[4", "~"}, "\x1b[F"},
		{"xterm keys kept", []string{"\x1b[H\x1b[F\x1b[3~\x1b[D\x1bb"}, "\x1b[H\x1b[F\x1b[3~\x1b[D\x1bb"},
		{"ctrl-c after partial", []string{"\x1b[1", "\x03"}, "\x1b[1\x03"},
		{"lone escape at the end", []string{"q\x1b"}, "q\x1b"},
		{"not an alias", []string{"\x1b[15~"}, "\x1b[15~"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := io.ReadAll(newKeyReader(&chunks{parts: append([]string(nil), c.parts...)}))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("read %q from %q, want %q", got, c.parts, c.want)
			}
		})
	}
}

// TestKeyReaderSmallBuffer reads one byte at a time, as a caller with a
// small buffer does: nothing is lost or reordered.
func TestKeyReaderSmallBuffer(t *testing.T) {
	k := newKeyReader(&chunks{parts: []string{"a\x1b[1~b", "\x1b[4~"}})
	var got []byte
	p := make([]byte, 1)
	for {
		n, err := k.Read(p)
		got = append(got, p[:n]...)
		if err != nil {
			break
		}
	}
	if want := "a\x1b[Hb\x1b[F"; string(got) != want {
		t.Errorf("read %q, want %q", got, want)
	}
}

// A Read into an empty buffer returns at once; input that comes with the
// end of input is translated too.
func TestKeyReaderEdges(t *testing.T) {
	k := newKeyReader(strings.NewReader("a\x1b[1~"))
	if n, err := k.Read(nil); n != 0 || err != nil {
		t.Errorf("Read(nil) = %d, %v", n, err)
	}
	got, err := io.ReadAll(k)
	if err != nil || string(got) != "a\x1b[H" {
		t.Errorf("read %q, %v; want %q", got, err, "a\x1b[H")
	}
	got, _ = io.ReadAll(newKeyReader(iotest.DataErrReader(strings.NewReader("b\x1b[4~"))))
	if string(got) != "b\x1b[F" {
		t.Errorf("data with the end of input: %q, want %q", got, "b\x1b[F")
	}
}
