package jupyter

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/approxtune/approxtune/internal/display"
	"github.com/approxtune/approxtune/session"
)

// Cursor positions. The protocol counts cursor_pos in Unicode code points;
// JupyterLab sends UTF-16 code units (JavaScript string offsets). The two
// differ only after a character outside the Basic Multilingual Plane (an
// emoji, say). A position past the end in code points but within the text
// in UTF-16 units can only be UTF-16; the kernel then remembers that the
// client session counts in UTF-16 and answers in the same units.

// utf16Len is the length of s in UTF-16 code units.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16Units(r)
	}
	return n
}

func utf16Units(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// toByte converts a cursor position (code points, or UTF-16 units) to a
// byte offset in s, on a rune boundary.
func toByte(s string, pos int, utf16 bool) int {
	if pos <= 0 {
		return 0
	}
	n := 0
	for i, r := range s {
		if n >= pos {
			return i
		}
		if utf16 {
			n += utf16Units(r)
		} else {
			n++
		}
	}
	return len(s)
}

// fromByte converts a byte offset of s to a cursor position.
func fromByte(s string, b int, utf16 bool) int {
	b = min(max(b, 0), len(s))
	if utf16 {
		return utf16Len(s[:b])
	}
	return utf8.RuneCountInString(s[:b])
}

// cursor returns the byte offset of a request's cursor_pos in code and
// whether the client counts in UTF-16 units. A missing cursor is the end.
func (k *Kernel) cursor(m *Message, code string, pos *int) (int, bool) {
	u16 := k.utf16[m.Header.Session]
	if pos == nil {
		return len(code), u16
	}
	if !u16 && *pos > utf8.RuneCountInString(code) && *pos <= utf16Len(code) {
		u16 = true
		if m.Header.Session != "" {
			k.utf16[m.Header.Session] = true
		}
	}
	return toByte(code, *pos, u16), u16
}

// lineAt returns the bounds of the line of code that holds byte offset b.
func lineAt(code string, b int) (int, int) {
	start := strings.LastIndexByte(code[:b], '\n') + 1
	end := len(code)
	if i := strings.IndexByte(code[b:], '\n'); i >= 0 {
		end = b + i
	}
	return start, end
}

type cursorRequest struct {
	Code        string `json:"code"`
	CursorPos   *int   `json:"cursor_pos"`
	DetailLevel int    `json:"detail_level"`
}

// complete answers a complete_request from the session's completions for
// the line under the cursor.
func (k *Kernel) complete(m *Message) (map[string]any, error) {
	var c cursorRequest
	if err := json.Unmarshal(m.Content, &c); err != nil {
		return nil, fmt.Errorf("complete_request: %w", err)
	}
	b, u16 := k.cursor(m, c.Code, c.CursorPos)
	ls, le := lineAt(c.Code, b)
	cands, start := k.sess.Complete(strings.TrimSuffix(c.Code[ls:le], "\r"), b-ls)
	if cands == nil {
		cands = []string{}
	}
	return map[string]any{
		"status": "ok", "matches": cands,
		"cursor_start": fromByte(c.Code, ls+start, u16), "cursor_end": fromByte(c.Code, b, u16),
		"metadata": map[string]any{},
	}, nil
}

// inspect answers an inspect_request with the help of the word under the
// cursor, or of the command of its line.
func (k *Kernel) inspect(m *Message) (map[string]any, error) {
	var c cursorRequest
	if err := json.Unmarshal(m.Content, &c); err != nil {
		return nil, fmt.Errorf("inspect_request: %w", err)
	}
	b, _ := k.cursor(m, c.Code, c.CursorPos)
	ls, le := lineAt(c.Code, b)
	line := c.Code[ls:le]
	at := b - ls
	ws := strings.LastIndexFunc(line[:at], unicode.IsSpace) + 1
	we := len(line)
	if i := strings.IndexFunc(line[at:], unicode.IsSpace); i >= 0 {
		we = at + i
	}
	word := line[ws:we]
	if i := strings.IndexByte(word, '='); i >= 0 {
		word = word[:i]
	}
	cands := []string{word}
	if f := strings.Fields(line); len(f) > 0 {
		cands = append(cands, f[0])
	}
	for _, w := range cands {
		if h, ok := session.HelpFor(w); ok && w != "" {
			return map[string]any{"status": "ok", "found": true, "data": display.TextBundle(h), "metadata": map[string]any{}}, nil
		}
	}
	return map[string]any{"status": "ok", "found": false, "data": map[string]any{}, "metadata": map[string]any{}}, nil
}

// isComplete answers an is_complete_request. Commands are one line each, so
// code is complete unless a line cannot be parsed (an unterminated quote:
// quotes do not span lines, so more lines would not help, and the answer
// is "invalid", which front ends execute at once to show the error).
func isComplete(m *Message) (map[string]any, error) {
	var c struct {
		Code string `json:"code"`
	}
	if err := json.Unmarshal(m.Content, &c); err != nil {
		return nil, fmt.Errorf("is_complete_request: %w", err)
	}
	for _, l := range splitLines(c.Code) {
		if _, err := session.Parse(l); err != nil {
			return map[string]any{"status": "invalid"}, nil
		}
	}
	return map[string]any{"status": "complete"}, nil
}

// historySession is the session number of this kernel's cells in history
// replies (0 in a request also means the current session).
const historySession = 1

// historyEntry is one executed cell.
type historyEntry struct {
	line   int
	input  string
	output any // the execute_result's text, or nil
}

// historyReply answers a history_request over this kernel's executed cells:
// tail (the last n), range (session 0 or 1, lines start to stop, stop
// excluded) and search (a glob pattern: * any text, ? any character).
func (k *Kernel) historyReply(m *Message) (map[string]any, error) {
	var c struct {
		Output  bool   `json:"output"`
		Raw     bool   `json:"raw"`
		Access  string `json:"hist_access_type"`
		Session int    `json:"session"`
		Start   int    `json:"start"`
		Stop    *int   `json:"stop"`
		N       *int   `json:"n"`
		Pattern string `json:"pattern"`
		Unique  bool   `json:"unique"`
	}
	if err := json.Unmarshal(m.Content, &c); err != nil {
		return nil, fmt.Errorf("history_request: %w", err)
	}
	var sel []historyEntry
	switch c.Access {
	case "tail", "":
		sel = k.history
	case "range":
		if c.Session == 0 || c.Session == historySession {
			for _, e := range k.history {
				if e.line >= c.Start && (c.Stop == nil || e.line < *c.Stop) {
					sel = append(sel, e)
				}
			}
		}
	case "search":
		pattern := c.Pattern
		if pattern == "" {
			pattern = "*"
		}
		seen := map[string]bool{}
		for i := len(k.history) - 1; i >= 0; i-- {
			e := k.history[i]
			if !glob(pattern, e.input) || (c.Unique && seen[e.input]) {
				continue
			}
			seen[e.input] = true
			sel = append([]historyEntry{e}, sel...)
		}
	default:
		return nil, fmt.Errorf("history_request: hist_access_type %q: want tail, range or search", c.Access)
	}
	if c.N != nil && c.Access != "range" && *c.N >= 0 && len(sel) > *c.N {
		sel = sel[len(sel)-*c.N:]
	}
	out := make([]any, 0, len(sel))
	for _, e := range sel {
		if c.Output {
			out = append(out, []any{historySession, e.line, []any{e.input, e.output}})
		} else {
			out = append(out, []any{historySession, e.line, e.input})
		}
	}
	return map[string]any{"status": "ok", "history": out}, nil
}

// glob matches s against pattern: * is any text (newlines included), ? any
// one character, everything else itself.
func glob(pattern, s string) bool {
	p, t := []rune(pattern), []rune(s)
	// Iterative matching with backtracking to the last star.
	pi, ti, star, mark := 0, 0, -1, 0
	for ti < len(t) {
		switch {
		case pi < len(p) && (p[pi] == '?' || p[pi] == t[ti]):
			pi++
			ti++
		case pi < len(p) && p[pi] == '*':
			star, mark = pi, ti
			pi++
		case star >= 0:
			pi = star + 1
			mark++
			ti = mark
		default:
			return false
		}
	}
	for pi < len(p) && p[pi] == '*' {
		pi++
	}
	return pi == len(p)
}
