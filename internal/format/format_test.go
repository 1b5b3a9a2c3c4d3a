package format

import (
	"math"
	"testing"
)

func TestTolerance(t *testing.T) {
	for _, tc := range []struct {
		t    float64
		want string
	}{
		{0.125, "2^-3"}, {0.5, "2^-1"}, {1, "2^0"}, {4, "2^2"}, {math.Ldexp(1, -40), "2^-40"},
		{0, "0"}, {0.3, "0.3"}, {0.1, "0.1"}, {1e-5, "1e-05"}, {3, "3"}, {-0.5, "-0.5"},
		{math.Inf(1), "+Inf"}, {math.NaN(), "NaN"},
	} {
		if got := Tolerance(tc.t); got != tc.want {
			t.Errorf("Tolerance(%v) = %q, want %q", tc.t, got, tc.want)
		}
	}
}

func TestFigures(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Pow2(-5), "2^-5"},
		{Fixed(0.98765, 3), "0.988"}, {Fixed(math.NaN(), 3), "-"},
		{Percent(0.125), "12.5%"}, {Percent(math.NaN()), "-"},
		{Seconds(1.5), "1.5000"}, {Seconds(math.NaN()), "-"}, {Seconds(0), "0.0000"},
		// Under a millisecond, three significant digits, trailing zeros
		// kept (four decimals wrote 0.0000).
		{Seconds(0.000123456), "0.000123"}, {Seconds(3.99795e-05), "0.0000400"}, {Seconds(0.00099999), "0.00100"}, {Seconds(-4.4967e-05), "-0.0000450"},
		{SecondsOrNone(0), "-"}, {SecondsOrNone(math.NaN()), "-"}, {SecondsOrNone(0.25), "0.2500"},
		{Speedup(2.5), "2.50x"}, {Speedup(math.NaN()), "-"}, {Speedup(math.Inf(1)), "-"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// An uncertainty below a tenth of a millisecond keeps three significant
// digits; larger ones read as Seconds.
func TestSmallSeconds(t *testing.T) {
	for x, want := range map[float64]string{2.94e-5: "2.94e-05", 0: "0", 0.0123: "0.0123", math.NaN(): "-"} {
		if got := SmallSeconds(x); got != want {
			t.Errorf("SmallSeconds(%v) = %q, want %q", x, got, want)
		}
	}
}

// Nearest suggests the name a typo or a plural was meant as, and nothing
// for a word far from every name.
func TestNearest(t *testing.T) {
	names := []string{"evaluate", "tune", "resume", "repl", "run", "policy", "tolerance"}
	for word, want := range map[string]string{"evalute": "evaluate", "Evaluat": "evaluate", "repel": "repl", "tume": "tune", "xyzzy": "", "r": "",
		"policies": "policy", "Tolerances": "tolerance", "runs": "run", "s": "", "ies": "", "tnue": "tune", "eavluate": "evaluate"} {
		if got := Nearest(word, names); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", word, got, want)
		}
	}
	// A singular for a plural name: a spec's "policy" for "policies".
	if got := Nearest("policy", []string{"workload", "policies", "tolerances"}); got != "policies" {
		t.Errorf("Nearest(policy) among plurals = %q, want policies", got)
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 policies", 1: "1 policy", 2: "2 policies"} {
		if got := Count(n, "policy", "policies"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
