package main

import (
	"bytes"
	"compress/gzip"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func res(policy string, index int, tol, err float64) event {
	return event{Type: "result", Policy: policy, Index: index, Tolerance: &tol, Error: &err}
}

// Errors pair by sweep, policy and configuration, at the loosest and the
// tightest tolerance of the pool; the middle one and tune results (no
// error) are left out.
func TestPairErrors(t *testing.T) {
	sweeps := [][]event{
		{res("conditional", 0, 0.5, 0.10), res("conditional", 0, 0.125, 0.50), res("conditional", 0, 0.03125, 0.04),
			res("conditional", 1, 0.5, 0.02), res("conditional", 1, 0.03125, 0.03),
			res("eager", 0, 0.5, 0.01), res("eager", 0, 0.03125, 0.05),
			{Type: "result", Policy: "eager", Index: 1, Tolerance: new(float64)}},
		{res("conditional", 0, 0.5, 0.06), res("conditional", 0, 0.03125, 0.06)},
	}
	rows, loose, tight, err := pairErrors(sweeps)
	if err != nil {
		t.Fatal(err)
	}
	if loose != 0.5 || tight != 0.03125 {
		t.Fatalf("tolerances %g, %g; want 0.5 and 0.03125", loose, tight)
	}
	if len(rows) != 2 || rows[0].Policy != "conditional" || rows[1].Policy != "eager" {
		t.Fatalf("rows %+v, want conditional then eager", rows)
	}
	c := rows[0]
	// Differences -0.06, +0.01, 0: mean -0.01667, standard deviation
	// 0.03786, standard error 0.02186.
	if c.Pairs != 3 || math.Abs(c.Loose-0.06) > 1e-12 || math.Abs(c.Tight-13.0/300) > 1e-12 ||
		math.Abs(c.Diff+0.05/3) > 1e-12 || math.Abs(c.SE-0.021858) > 1e-6 {
		t.Errorf("conditional %+v, want 3 pairs, loose 0.06, tight 0.04333, difference -0.01667, standard error 0.021858", c)
	}
	if e := rows[1]; e.Pairs != 1 || math.Abs(e.Diff-0.04) > 1e-12 || !math.IsNaN(e.SE) {
		t.Errorf("eager %+v, want 1 pair, difference 0.04, no standard error", e)
	}
}

func TestPairErrorsNeedsTwoTolerances(t *testing.T) {
	_, _, _, err := pairErrors([][]event{{res("eager", 0, 0.5, 0.1)}})
	if err == nil || !strings.Contains(err.Error(), "at least two tolerances") {
		t.Fatalf("err %v, want one asking for two tolerances", err)
	}
	_, _, _, err = pairErrors(nil)
	if err == nil || !strings.Contains(err.Error(), "no evaluate results") {
		t.Fatalf("err %v, want one saying there are no results", err)
	}
}

// pairedMain reads the files and gives each policy a verdict.
func TestPairedMain(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.jsonl")
	lines := `{"type":"start","v":1}
{"type":"result","v":1,"index":0,"policy":"local","tolerance":0.5,"error":0.02}
{"type":"result","v":1,"index":0,"policy":"local","tolerance":0.03125,"error":0.05}
{"type":"result","v":1,"index":1,"policy":"local","tolerance":0.5,"error":0.03}
{"type":"result","v":1,"index":1,"policy":"local","tolerance":0.03125,"error":0.04}
{"type":"result","v":1,"index":0,"policy":"online","tolerance":0.5,"error":0.09}
{"type":"result","v":1,"index":0,"policy":"online","tolerance":0.03125,"error":0.01}
{"type":"summary","v":1,"mode":"evaluate","policy":"local","tolerance":0.5}
`
	if err := os.WriteFile(a, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := pairedMain([]string{a}, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"| local | 2 | 2.50% | 4.50% | +2.00 points | 1.00 points | larger, within its 95% interval |", "| online | 1 | 9.00% | 1.00% | -8.00 points |", "no larger |"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	// The same events gzipped.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(lines))
	zw.Close()
	b := filepath.Join(dir, "b.jsonl.gz")
	if err := os.WriteFile(b, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out2 bytes.Buffer
	if err := pairedMain([]string{b}, &out2); err != nil || out2.String() != got {
		t.Errorf("gzipped: err %v, output\n%s\nwant\n%s", err, out2.String(), got)
	}
	if err := pairedMain(nil, &out); err == nil {
		t.Error("no files: want an error")
	}
	if err := pairedMain([]string{filepath.Join(dir, "missing")}, &out); err == nil {
		t.Error("missing file: want an error")
	}
}
