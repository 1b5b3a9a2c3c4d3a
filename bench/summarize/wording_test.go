package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// noNaN fails when a report says NaN or "1 sweeps".
func noNaN(t *testing.T, what, got string) {
	t.Helper()
	for _, bad := range []string{"NaN", "1 sweeps", "1 pairs"} {
		if strings.Contains(got, bad) {
			t.Errorf("%s says %q:\n%s", what, bad, got)
		}
	}
}

// One sweep (or one pair of sweeps) has no interval: every figure is
// given alone with "(1 sweep)", never "± NaN" or "(NaN to NaN)", and the
// count is "1 sweep", not "1 sweeps".
func TestOneSweepWording(t *testing.T) {
	dir := t.TempDir()
	one := summaSweeps(t, dir, 1)
	got := bench(t, "summa", one)
	noNaN(t, "summa", got)
	wantLines(t, got,
		"\n1 sweep; mean ± half-width",
		"pooled 9.5% (1 sweep).",
		"Targets (noise floor 9.5% (1 sweep)):",
		"- eager 2^-3 speed-up >= 3x: 5.00x (1 sweep): **undecided (one sweep gives no interval)**",
		"- eager 2^-3 mean error <= 5%: 3.0% (1 sweep): **undecided",
		"| eager | 1 | 2.00% | 4.00% | +2.00 points | - (one pair) | larger in its one pair (no standard error) |",
		"- eager mean error at 2^-5 not above its error at 2^-1 beyond the interval: **n/a** (1 pair: no interval)",
	)
	var out bytes.Buffer
	if err := pooledMain(one, &out); err != nil {
		t.Fatal(err)
	}
	noNaN(t, "-pooled", out.String())
	wantLines(t, out.String(), "\n1 sweep; mean")

	c3d := []string{sweepFile(t, dir, "c3d", c3dSpec, []sum{{policy: "eager", tol: tol1, speedup: 5, err: 0.048, quality: 1}})}
	got = bench(t, "cholesky3d", c3d)
	noNaN(t, "cholesky3d", got)
	wantLines(t, got, "| 32 | 2^-1 | -4.8% (1 sweep) | -4.8% | undecided (no interval) |")

	s1 := []sum{{policy: "eager", tol: tol1, speedup: 2, err: 0.05, quality: 1}}
	s2 := []sum{{policy: "eager", tol: tol1, speedup: 4, err: 0.055, quality: 1}}
	got = bench(t, "cholesky3d-models", []string{sweepFile(t, dir, "off", modelsOffSpec, s1), "vs", sweepFile(t, dir, "on", modelsOnSpec, s2)})
	noNaN(t, "cholesky3d-models", got)
	wantLines(t, got, "\n1 pair of sweeps.", "- speed-up with models / without >= 1.5: 2.00x (1 sweep): **undecided", "+0.50 points (1 sweep): **undecided")

	got = bench(t, "halving-cholesky2d", []string{filepath.Join("testdata", "halving-1.jsonl")})
	noNaN(t, "halving-cholesky2d", got)
	wantLines(t, got, "\n1 sweep: time ratio 10.00x (1 sweep)", "- time ratio >= 10x: 10.00x (1 sweep): **undecided")
}

// Two modes together (-pooled -paired) are refused, naming both and the
// modes there are; one mode, or none, passes.
func TestOneModeAtATime(t *testing.T) {
	modes := func(on ...string) map[string]bool {
		m := map[string]bool{"-overhead": false, "-paired": false, "-pooled": false, "-compare": false, "-ranking": false, "-bench": false, "-halving": false}
		for _, o := range on {
			m[o] = true
		}
		return m
	}
	err := oneMode(modes("-pooled", "-paired"))
	if err == nil || !strings.Contains(err.Error(), "-paired and -pooled: one mode at a time: want one of -bench, -compare, -halving, -overhead, -paired, -pooled, -ranking") {
		t.Errorf("-pooled -paired: %v", err)
	}
	if err := oneMode(modes("-bench", "-halving", "-overhead")); err == nil || !strings.Contains(err.Error(), "-bench and -halving and -overhead") {
		t.Errorf("three modes: %v", err)
	}
	for _, ok := range [][]string{nil, {"-pooled"}, {"-bench"}} {
		if err := oneMode(modes(ok...)); err != nil {
			t.Errorf("%v: %v", ok, err)
		}
	}
}
