package notebook

import "unicode/utf8"

// SplitLines splits s into lines, each keeping its line break, as Python's
// str.splitlines(True) does (what nbformat stores multi-line strings as):
// the breaks are \n, \r\n, \r, \v, \f, \x1c, \x1d, \x1e, U+0085, U+2028 and
// U+2029. The empty string has no lines; text after the last break is the
// last line.
func SplitLines(s string) []string {
	lines := []string{}
	start := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		end := -1
		switch r {
		case '\r':
			end = i + 1
			if i+1 < len(s) && s[i+1] == '\n' {
				end = i + 2
			}
		case '\n', '\v', '\f', '\x1c', '\x1d', '\x1e', '\u0085', '\u2028', '\u2029':
			end = i + size
		}
		if end < 0 {
			i += size
			continue
		}
		lines = append(lines, s[start:end])
		start, i = end, end
	}
	if start < len(s) {
		lines = append(lines, s[start:])
	}
	return lines
}
