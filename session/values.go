package session

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/sweep"
)

// splitList splits "a,b,c" into its items with their columns; empty items are errors.
func splitList(s string, col int) ([]string, []int, error) {
	var items []string
	var cols []int
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			it := s[start:i]
			if it == "" {
				return nil, nil, errAt(col+start, "empty item in the list %q: write a,b,c", s)
			}
			items = append(items, it)
			cols = append(cols, col+start)
			start = i + 1
		}
	}
	return items, cols, nil
}

// parseTolerances reads "0.125", "2^-3", lists "2^-1,2^-3" and ranges of
// powers of two "2^0..2^-6" (every power in between, largest first).
func parseTolerances(s string, col int) ([]float64, error) {
	items, cols, err := splitList(s, col)
	if err != nil {
		return nil, err
	}
	var out []float64
	for k, it := range items {
		if a, b, ok := strings.Cut(it, ".."); ok {
			ea, erra := pow2Exp(a)
			eb, errb := pow2Exp(b)
			if erra != nil || errb != nil {
				return nil, errAt(cols[k], "%q is not a range of powers of two: write 2^0..2^-6", it)
			}
			step := -1
			if eb > ea {
				step = 1
			}
			if abs(eb-ea) > 64 {
				return nil, errAt(cols[k], "%q spans %d powers of two: at most 64", it, abs(eb-ea)+1)
			}
			for e := ea; ; e += step {
				v := math.Ldexp(1, e)
				if math.IsInf(v, 0) {
					return nil, errAt(cols[k], "%q reaches 2^%d, beyond a float64: write 2^0..2^-6", it, e)
				}
				if slices.Contains(out, v) {
					return nil, errAt(cols[k], "%q repeats %s, already in the list: give each tolerance once", it, format.Tolerance(v))
				}
				out = append(out, v)
				if e == eb {
					break
				}
			}
			continue
		}
		v, err := sweep.ParseTolerance(it)
		if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, errAt(cols[k], "%q is not a tolerance: want a number >= 0 like 0.125, a power of two like 2^-3, or a range 2^0..2^-6", it)
		}
		if slices.Contains(out, v) {
			return nil, errAt(cols[k], "%q repeats %s, already in the list: give each tolerance once", it, format.Tolerance(v))
		}
		out = append(out, v)
	}
	return out, nil
}

func pow2Exp(s string) (int, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), "2^")
	if !ok {
		return 0, fmt.Errorf("not a power of two")
	}
	return strconv.Atoi(rest)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
