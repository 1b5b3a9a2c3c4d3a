package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// rres is a result of configuration {"b": b, "la": la} with its prediction
// and one reference.
func rres(policy string, tol float64, b, la int, pred, ref float64) event {
	e := pred/ref - 1
	return event{Type: "result", Policy: policy, Tolerance: &tol, Error: &e,
		Config:     []byte(`{"b":` + strconv.Itoa(b) + `,"la":` + strconv.Itoa(la) + `}`),
		PredictedS: pred, ReferenceS: []float64{ref}}
}

// Pairs are configurations of one sweep, policy and tolerance that differ
// only in the compared parameter; a pair counts as ordered when the
// predictions and the references put the two the same way round.
func TestRankValues(t *testing.T) {
	sweeps := [][]event{
		{
			rres("conditional", 0.5, 1, 0, 1.0, 1.1), rres("conditional", 0.5, 1, 1, 0.8, 1.0), // same order
			rres("conditional", 0.5, 2, 0, 1.0, 1.0), rres("conditional", 0.5, 2, 1, 1.1, 0.9), // reversed
			rres("eager", 0.5, 1, 0, 1.0, 1.0), // no partner
		},
		{
			rres("conditional", 0.5, 1, 0, 2.0, 2.0), rres("conditional", 0.5, 1, 1, 1.5, 1.5), // same order
		},
	}
	rows, vals, err := rankValues(sweeps, "la", rankFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Policy != "conditional" || rows[0].Pairs != 3 || rows[0].Same != 2 || rows[1].Pairs != 0 {
		t.Fatalf("rows %+v; want conditional with 3 pairs, 2 ordered as the references, then eager with none", rows)
	}
	if len(vals) != 2 || vals[0].Value != "0" || vals[0].Runs != 4 || vals[1].Value != "1" || vals[1].Runs != 3 {
		t.Fatalf("values %+v; want la=0 with 4 runs and la=1 with 3", vals)
	}
	// la=1: errors -0.2, +0.2222, 0: mean absolute 0.1407, median 0, one under.
	if v := vals[1]; math.Abs(v.MeanAbs-(0.2+0.2/0.9)/3) > 1e-12 || v.MedianSigned != 0 || v.Under != 1 {
		t.Fatalf("la=1: %+v; want mean absolute %.4f, median 0, 1 under", v, (0.2+0.2/0.9)/3)
	}
	// Keeping eager only leaves no pair and one value.
	f, err := parseRankFilter("eager", "2^-1")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := rankValues(sweeps, "la", f); err == nil || !strings.Contains(err.Error(), "1 value") {
		t.Fatalf("eager only: err %v; want one value of la, nothing to compare", err)
	}
}

func TestRankValuesErrors(t *testing.T) {
	sweeps := [][]event{{rres("conditional", 0.5, 1, 0, 1, 1), rres("conditional", 0.5, 1, 1, 1, 1)}}
	if _, _, err := rankValues(sweeps, "grid", rankFilter{}); err == nil || !strings.Contains(err.Error(), "they have b, la") {
		t.Fatalf("unknown parameter: err %v; want the parameters the configurations have", err)
	}
	if _, err := parseRankFilter("conditional,greedy", ""); err == nil || !strings.Contains(err.Error(), "conditional, local, online, apriori, eager") {
		t.Fatalf("unknown policy: err %v; want the valid ones named", err)
	}
	if _, err := parseRankFilter("", "2^-1,half"); err == nil || !strings.Contains(err.Error(), "-tolerances") {
		t.Fatalf("bad tolerance: err %v", err)
	}
}

// rankingMain reads saved sweeps (gzipped JSON lines) and prints both
// tables.
func TestRankingMain(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	for _, e := range []string{
		`{"type":"result","policy":"eager","tolerance":0.5,"config":{"b":64,"lookahead":0},"predicted_s":1.0,"reference_s":[1.2,1.0],"error":0.0909}`,
		`{"type":"result","policy":"eager","tolerance":0.5,"config":{"b":64,"lookahead":1},"predicted_s":0.9,"reference_s":[1.0],"error":0.1}`,
		`{"type":"summary","policy":"eager","tolerance":0.5}`,
	} {
		buf.WriteString(e + "\n")
	}
	name := filepath.Join(dir, "c2.jsonl")
	if err := os.WriteFile(name, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := rankingMain([]string{name}, "lookahead", rankFilter{}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| eager | 2^-1 | 1 | 1 |", "| **all** | | **1** | **1** |", "| 0 | 1 | 9.1% | -9.1% | 1 |", "| 1 | 1 | 10.0% | -10.0% | 1 |"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	if err := rankingMain(nil, "lookahead", rankFilter{}, &out); err == nil {
		t.Error("no files: want an error naming what to pass")
	}
}
