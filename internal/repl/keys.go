package repl

import (
	"bytes"
	"io"
)

// keyAliases are the Home and End keys as terminals other than xterm send
// them (tmux, screen, the Linux console: ESC[1~ and ESC[4~; rxvt: ESC[7~
// and ESC[8~), with the xterm form line editing knows (ESC[H, ESC[F).
var keyAliases = [...]struct{ from, to string }{
	{"\x1b[1~", "\x1b[H"},
	{"\x1b[7~", "\x1b[H"},
	{"\x1b[4~", "\x1b[F"},
	{"\x1b[8~", "\x1b[F"},
}

// keyReader passes the terminal's input through, with the Home and End
// keys of keyAliases rewritten to xterm's. A read that ends partway into
// one of them holds that part back until the next read completes or
// breaks it; every other byte, Ctrl-C included, goes through as it came.
type keyReader struct {
	r    io.Reader
	held []byte // the start of an alias, from the last read
	out  []byte // translated, not yet returned
}

func newKeyReader(r io.Reader) *keyReader { return &keyReader{r: r} }

// Read returns translated input.
func (k *keyReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for len(k.out) == 0 {
		buf := make([]byte, len(p)+len(k.held))
		n, err := k.r.Read(buf[len(k.held):])
		copy(buf, k.held)
		in := buf[:len(k.held)+n]
		k.held = nil
		if err != nil {
			// Nothing more comes: what came with the error is
			// translated, and a part of an alias held goes out as it is.
			out, held := translateKeys(k.out, in)
			k.out = append(out, held...)
			if len(k.out) == 0 {
				return 0, err
			}
			break
		}
		k.out, k.held = translateKeys(k.out, in)
	}
	n := copy(p, k.out)
	k.out = k.out[n:]
	return n, nil
}

// translateKeys appends in to out with the aliases rewritten, and returns
// the tail of in that may be the start of an alias, to be completed by
// the next read.
func translateKeys(out, in []byte) (_, held []byte) {
	for i := 0; i < len(in); {
		if in[i] != 0x1b {
			out = append(out, in[i])
			i++
			continue
		}
		rest, matched, partial := in[i:], false, false
		for _, a := range keyAliases {
			switch {
			case bytes.HasPrefix(rest, []byte(a.from)):
				out = append(out, a.to...)
				i += len(a.from)
				matched = true
			case bytes.HasPrefix([]byte(a.from), rest):
				partial = true
			}
			if matched {
				break
			}
		}
		if matched {
			continue
		}
		if partial {
			return out, append([]byte(nil), rest...)
		}
		out = append(out, in[i])
		i++
	}
	return out, nil
}

// Close closes the underlying reader when it is an io.Closer.
func (k *keyReader) Close() error {
	if c, ok := k.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
