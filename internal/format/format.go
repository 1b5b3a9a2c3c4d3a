// Package format writes the numbers approxtune shows (tolerances,
// percentages, seconds, speed-ups) the same way in every face: the session's
// tables, the terminal, the notebook's displays and the figures.
package format

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Pow2 writes 2 to the power e as 2^e, the way the command language reads
// it. (Plot fonts have superscript digits but no superscript minus, so
// "2⁻⁵" would print as "2⁵".)
func Pow2(e int) string { return "2^" + strconv.Itoa(e) }

// Tolerance writes a tolerance: a power of two as 2^e (0.125 is "2^-3"),
// any other value in the shortest %g form that reads back the same ("0.3",
// "0").
func Tolerance(t float64) string {
	if t > 0 {
		if f, e := math.Frexp(t); f == 0.5 {
			return Pow2(e - 1)
		}
	}
	return strconv.FormatFloat(t, 'g', -1, 64)
}

// Percent writes a fraction as a percentage with one decimal ("12.5%"), or
// "-" for NaN (no figure yet).
func Percent(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}

// Fixed writes x with prec decimals, or "-" for NaN.
func Fixed(x float64, prec int) string {
	if math.IsNaN(x) {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

// Seconds writes a time in seconds with four decimals, or "-" for NaN;
// under a millisecond, to three significant digits ("0.000123"), where four
// decimals wrote the runs of a small sweep as 0.0000 and 0.0001.
func Seconds(x float64) string {
	if x != 0 && math.Abs(x) < 1e-3 && !math.IsNaN(x) {
		r, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
		// Decimals for three significant digits, trailing zeros kept
		// (0.0000400, not 0.00004).
		return strconv.FormatFloat(r, 'f', 2-int(math.Floor(math.Log10(math.Abs(r)))), 64)
	}
	return Fixed(x, 4)
}

// SmallSeconds is Seconds for an uncertainty, which may be far below a
// tenth of a millisecond: there three significant digits in exponent form
// ("2.94e-05"), and 0 as "0".
func SmallSeconds(x float64) string {
	if x == 0 {
		return "0" // a standard error of 0 (nothing skipped); "0.0000" read as rounded
	}
	if math.Abs(x) < 1e-3 && !math.IsNaN(x) {
		return strconv.FormatFloat(x, 'g', 3, 64)
	}
	return Seconds(x)
}

// SecondsOrNone is Seconds with "-" for 0 as well: a time that nothing has
// added to yet.
func SecondsOrNone(x float64) string {
	if x == 0 {
		return "-"
	}
	return Seconds(x)
}

// Speedup writes a ratio as "2.50x", or "-" when it is not a finite number.
func Speedup(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return fmt.Sprintf("%.2fx", x)
}

// Nearest is the name in names closest to word by edit distance (one
// insertion, deletion, substitution or swap of neighbours each), for a "did you mean" after a
// typo, or the name word is the plural or the singular of ("policies":
// policy; a spec's "policy": policies): "" where none is within 2 edits
// and under half of word's length.
func Nearest(word string, names []string) string {
	lower := strings.ToLower(word)
	for _, n := range names {
		ln := strings.ToLower(n)
		if one, ok := singular(lower); ok && ln == one {
			return n
		}
		if one, ok := singular(ln); ok && lower == one {
			return n
		}
	}
	best, bestD := "", 3
	w := []rune(lower)
	for _, n := range names {
		if d := editDistance(w, []rune(strings.ToLower(n))); d < bestD && 2*d < len(w) {
			best, bestD = n, d
		}
	}
	return best
}

// singular is the English singular of a plural word in "ies" or "s".
func singular(word string) (string, bool) {
	if w, ok := strings.CutSuffix(word, "ies"); ok && w != "" {
		return w + "y", true
	}
	if w, ok := strings.CutSuffix(word, "s"); ok && w != "" {
		return w, true
	}
	return "", false
}

// editDistance is the edit distance between a and b: insertions,
// deletions, substitutions and swaps of neighbouring runes.
func editDistance(a, b []rune) int {
	// Three rows: a transposition of neighbours ("bset" for best) is one
	// edit, as a typist makes it (the optimal string alignment distance).
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// Count is n with its noun, one for n = 1 and many otherwise: "1
// configuration", "2 policies".
func Count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
