// Package session is what a user talks to: the command language of
// docs/design.md §4 (parsed with positions, validated against the agent's
// workload schemas), the state it builds (workload, space, policies,
// tolerances...), the agents (a local mpirun started on demand, or cluster
// agents that dial in), sweeps streamed as they run, and a journal that
// keeps every event on disk.
package session

import (
	"fmt"
	"strings"
	"unicode"
)

// Command is one parsed line: a verb and its words, each with its column.
type Command struct {
	Verb    string
	VerbCol int
	Args    []Arg
	Line    string
	// Sweep is the sweep a command that reads one reads (sweep=N, taken
	// out of Args: readsSweep); 0 for the last.
	Sweep int
}

// Arg is one word after the verb: "value" or "key=value".
type Arg struct {
	Key, Value string
	Col        int // 1-based column of the word
	ValueCol   int // 1-based column of the value
	// marked is Value with each part typed in double quotes between NUL
	// bytes: which items of a list were quoted (quotedItem).
	marked string
}

// quotedItem says whether item i of the argument's comma list was typed
// whole in double quotes: a word to take as it is ("1..3" for a
// program's parameter, not a range); the other items of the list are
// read as usual.
func (a Arg) quotedItem(i int) bool {
	items := strings.Split(a.marked, ",")
	if i >= len(items) {
		return false
	}
	it := items[i]
	return len(it) >= 2 && it[0] == 0 && it[len(it)-1] == 0 && !strings.Contains(it[1:len(it)-1], "\x00")
}

// onceEach refuses a command that gives an option (KEY=VALUE) twice: the
// last had silently won ('space b=64,128 b=32' swept b=32 alone). A
// program's words are its own, and left alone.
func onceEach(c *Command) error {
	if c.Verb == "program" {
		return nil
	}
	seen := map[string]bool{}
	for _, a := range c.Args {
		k := strings.ToLower(a.Key)
		if k != "" && seen[k] {
			return errAt(a.Col, "%s= is given twice: give each option once", a.Key)
		}
		seen[k] = true
	}
	return nil
}

// String gives the argument as typed.
func (a Arg) String() string {
	if a.Key != "" {
		return a.Key + "=" + a.Value
	}
	return a.Value
}

// Error is a command's error: a command the session refuses, with the
// column it points at (0: the whole line), or a sweep that did not finish,
// with its cause in Err where there is one (ErrAgentDied for an agent that
// died, context.Canceled for a sweep that was cancelled), for errors.Is.
type Error struct {
	Col int
	Msg string
	Err error
}

// Unwrap returns the cause, if any.
func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	if e.Col > 0 {
		return fmt.Sprintf("column %d: %s", e.Col, e.Msg)
	}
	return e.Msg
}

func errAt(col int, format string, args ...any) error {
	return &Error{Col: col, Msg: fmt.Sprintf(format, args...)}
}

// Parse splits a line into a command. It returns nil for a blank line or a
// comment. Words are separated by spaces; "#" starts a comment; a value may be
// double-quoted to hold spaces or "#" (a file name, say).
func Parse(line string) (*Command, error) {
	var words []Arg
	rs := []rune(line)
	i := 0
	for i < len(rs) {
		if unicode.IsSpace(rs[i]) {
			i++
			continue
		}
		if rs[i] == '#' {
			break
		}
		start := i
		var b strings.Builder
		key, keyDone := "", false
		var marked strings.Builder
		valCol := start + 1
		for i < len(rs) && !unicode.IsSpace(rs[i]) {
			c := rs[i]
			if c == '#' {
				break
			}
			if c == '"' {
				j := i + 1
				for j < len(rs) && rs[j] != '"' {
					j++
				}
				if j == len(rs) {
					return nil, errAt(i+1, "unterminated quote: close it with \"")
				}
				b.WriteString(string(rs[i+1 : j]))
				marked.WriteString("\x00" + string(rs[i+1:j]) + "\x00")
				i = j + 1
				continue
			}
			if c == '=' && !keyDone {
				key, keyDone = b.String(), true
				b.Reset()
				marked.Reset()
				valCol = i + 2
				i++
				continue
			}
			b.WriteRune(c)
			marked.WriteRune(c)
			i++
		}
		if keyDone && key == "" {
			return nil, errAt(start+1, "%q has no name before =: write name=value", string(rs[start:i]))
		}
		if keyDone && b.Len() == 0 {
			return nil, errAt(start+1, "%s= has no value: write %s=VALUE", key, key)
		}
		words = append(words, Arg{Key: strings.ToLower(key), Value: b.String(), Col: start + 1, ValueCol: valCol, marked: marked.String()})
	}
	if len(words) == 0 {
		return nil, nil
	}
	v := words[0]
	if v.Key == "" && v.Value == "" {
		return nil, errAt(v.Col, "an empty command: a line starts with a command (try 'help')")
	}
	if v.Key != "" {
		return nil, errAt(v.Col, "a line starts with a command, not %s=...: try 'help'", v.Key)
	}
	verb := strings.ToLower(v.Value)
	args := words[1:]
	if verb != "program" { // a program's arguments are its own
		args = joinLists(args)
	}
	return &Command{Verb: verb, VerbCol: v.Col, Args: args, Line: line}, nil
}

// joinLists joins the words of a list typed with spaces after or before
// its commas ("b=32, 64", "conditional ,eager": Tab completion ends a word
// with a space), each list one argument as if typed without them.
func joinLists(words []Arg) []Arg {
	var out []Arg
	for _, w := range words {
		if n := len(out); n > 0 && w.Key == "" && w.Value != "" &&
			(strings.HasSuffix(out[n-1].Value, ",") || strings.HasPrefix(w.Value, ",")) {
			out[n-1].Value += w.Value
			out[n-1].marked += w.marked
			continue
		}
		out = append(out, w)
	}
	return out
}
