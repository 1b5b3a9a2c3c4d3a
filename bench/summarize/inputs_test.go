package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// summaSweeps writes n SUMMA sweeps' files into dir.
func summaSweeps(t *testing.T, dir string, n int) []string {
	t.Helper()
	var files []string
	for i := range n {
		d := 0.001 * float64(i)
		files = append(files, sweepFile(t, dir, fmt.Sprintf("summa-%d.jsonl", i), summaSpec, []sum{
			{policy: "eager", tol: tol1, speedup: 6, err: 0.02 + d, quality: 1},
			{policy: "eager", tol: tol3, speedup: 5 + d, err: 0.03 + d, quality: 1},
			{policy: "eager", tol: tol5, speedup: 4, err: 0.04 + d, quality: 1},
		}))
	}
	return files
}

// wantErr runs f and wants an error that says each of wants.
func wantErr(t *testing.T, what string, err error, wants ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error; want one saying %q", what, wants)
		return
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("%s: error %q lacks %q", what, err, w)
		}
	}
}

// The same sweep named twice (the same path, another spelling of it, a
// copy under another name, or on both sides of vs) is refused, naming the
// file, in every mode that pools sweeps: pooled as two, it gave "2 sweeps"
// and intervals of zero width.
func TestDuplicateSweepsRefused(t *testing.T) {
	dir := t.TempDir()
	files := summaSweeps(t, dir, 2)
	a := files[0]
	other := filepath.Join(dir, ".", "sub", "..", filepath.Base(a))
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(dir, "copy.jsonl")
	if err := os.WriteFile(copied, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	wantErr(t, "-bench summa A A", benchMain("summa", []string{a, a}, &out), a, "named twice")
	wantErr(t, "-bench summa A ./sub/../A", benchMain("summa", []string{a, other}, &out), a, "named twice")
	wantErr(t, "-bench summa A copy-of-A", benchMain("summa", []string{a, copied}, &out), copied, a, "same events")
	wantErr(t, "-pooled A B A", pooledMain([]string{a, files[1], a}, &out), a, "named twice")
	wantErr(t, "-paired A A", pairedMain([]string{a, a}, &out), a, "named twice")
	wantErr(t, "-compare A B vs A C", compareMain([]string{a, files[1]}, []string{a, copied}, &out), a, "named twice")
	off := []string{sweepFile(t, dir, "off-1", modelsOffSpec, []sum{{policy: "eager", tol: tol1, speedup: 2, err: 0.05, quality: 1}})}
	wantErr(t, "-bench cholesky3d-models A vs A", benchMain("cholesky3d-models", []string{off[0], "vs", off[0]}, &out), off[0], "named twice")
	if out.Len() > 0 {
		t.Errorf("a refused report printed:\n%s", out.String())
	}
}

// A sweep's file cut short (its head, without the summaries that close
// a sweep) is refused, naming the file and why, rather than pooled with
// its partial references in the noise floor.
func TestCutShortSweepRefused(t *testing.T) {
	dir := t.TempDir()
	files := summaSweeps(t, dir, 2)
	data, err := os.ReadFile(files[1])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	head := filepath.Join(dir, "trunc.jsonl")
	if err := os.WriteFile(head, []byte(strings.Join(lines[:3], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	wantErr(t, "-bench summa with a head", benchMain("summa", []string{files[0], head}, &out), head, "cut short", "no summary or search event after its last result")
	wantErr(t, "-pooled with a head", pooledMain([]string{files[0], head}, &out), head, "cut short")
	// The start event alone: no results.
	start := filepath.Join(dir, "start.jsonl")
	if err := os.WriteFile(start, []byte(lines[0]), 0o644); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "-pooled with a start alone", pooledMain([]string{files[0], start}, &out), start, "no result events")
	if out.Len() > 0 {
		t.Errorf("a refused report printed:\n%s", out.String())
	}
	// The whole files pass.
	if err := benchMain("summa", files, &out); err != nil {
		t.Errorf("whole files: %v", err)
	}
}

// A benchmark refuses sweeps of another: SUMMA's files given to
// cholesky3d, a search's to summa, a sweep without models where
// cholesky3d-models wants them (after vs), cholesky3d-eager's to cholesky3d
// (one workload, other policies), and events without a start (no spec to
// tell).
func TestBenchRefusesAnotherBenchmarksSweeps(t *testing.T) {
	dir := t.TempDir()
	summa := summaSweeps(t, dir, 2)
	var out bytes.Buffer
	wantErr(t, "-bench cholesky3d on SUMMA", benchMain("cholesky3d", summa, &out), summa[0], "holds a sweep of workload summa", "want a sweep of workload cholesky3d", "bench/specs/cholesky3d.json")
	halving := []string{filepath.Join("testdata", "halving-1.jsonl"), filepath.Join("testdata", "halving-2.jsonl")}
	wantErr(t, "-bench summa on searches", benchMain("summa", halving, &out), halving[0], "workload cholesky2d, search halving", "want a sweep of workload summa, no search")
	wantErr(t, "-bench halving-cholesky3d on cholesky2d", benchMain("halving-cholesky3d", halving, &out), "workload cholesky2d", "want a sweep of workload cholesky3d, search halving")
	wantErr(t, "-bench apriori on SUMMA", benchMain("apriori", summa, &out), "want a sweep of workload cholesky3d, no search, policies conditional,apriori, tolerances 2^-1 (bench/specs/apriori.json)")
	sum1 := []sum{{policy: "eager", tol: tol1, speedup: 2, err: 0.05, quality: 1}}
	off := []string{sweepFile(t, dir, "off-1", modelsOffSpec, sum1), sweepFile(t, dir, "off-2", modelsOffSpec, sum1)}
	off2 := []string{sweepFile(t, dir, "off-3", modelsOffSpec, sum1), sweepFile(t, dir, "off-4", modelsOffSpec, sum1)}
	wantErr(t, "-bench cholesky3d-models off vs off", benchMain("cholesky3d-models", append(append(off, "vs"), off2...), &out), off2[0], "policies eager, tolerances 2^-1; want a sweep of workload cholesky3d, no search, policies eager, tolerances 2^-1, models on")
	// bench/out/cholesky3d-*.jsonl also matches cholesky3d-eager's and
	// cholesky3d-models' sweeps: of one workload, refused by their
	// policies and tolerances.
	c3d := []string{sweepFile(t, dir, "c3d-1", c3dSpec, sum1), sweepFile(t, dir, "c3d-2", c3dSpec, sum1)}
	eager := sweepFile(t, dir, "eager-1", eagerSpec, sum1)
	wantErr(t, "-bench cholesky3d over cholesky3d-eager's sweep", benchMain("cholesky3d", append(c3d, eager), &out), eager, "policies eager, tolerances 2^-1,2^-3,2^-5; want a sweep of workload cholesky3d, no search, policies conditional,local,online,apriori,eager")
	wantErr(t, "-bench cholesky3d-eager over a models sweep", benchMain("cholesky3d-eager", []string{eager, off[0]}, &out), off[0], "tolerances 2^-1; want a sweep of workload cholesky3d, no search, policies eager, tolerances 2^-1,2^-3,2^-5")
	bare := filepath.Join(dir, "bare.jsonl")
	if err := os.WriteFile(bare, []byte(`{"type":"result","index":0,"policy":"eager","tolerance":0.5,"reference_s":[1,1.1]}`+"\n"+`{"type":"summary","policy":"eager","tolerance":0.5,"mean_error":0.1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "-bench summa without a start", benchMain("summa", []string{summa[0], bare}, &out), bare, "no start event")
	if out.Len() > 0 {
		t.Errorf("a refused report printed:\n%s", out.String())
	}
	// The right benchmark's sweeps pass.
	if err := benchMain("cholesky3d", c3d, &out); err != nil {
		t.Errorf("cholesky3d on its sweeps: %v", err)
	}
	if err := benchMain("halving-cholesky2d", halving, &out); err != nil {
		t.Errorf("halving-cholesky2d on its sweeps: %v", err)
	}
}

// A search sweep as the agent writes it ends with its search event (the
// choice), not with summaries: it is finished, and -halving reads it.
// testdata/halving-agent.jsonl is an agent's halving search over four
// cholesky2d configurations at n=512 (approxtune agent --sweep under
// mpirun -n 4); the completeness check had refused every real one.
func TestSearchSweepIsComplete(t *testing.T) {
	var out bytes.Buffer
	if err := halvingMain([]string{filepath.Join("testdata", "halving-agent.jsonl")}, 0, &out); err != nil {
		t.Fatalf("-halving of an agent's search: %v", err)
	}
	if !strings.Contains(out.String(), "1 sweep") {
		t.Errorf("-halving of an agent's search:\n%s", out.String())
	}
}
