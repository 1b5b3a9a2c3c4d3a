package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Start events' specs of the benchmarks' sweeps (as the agent normalizes
// them, tolerances as numbers).
const (
	summaSpec     = `{"workload":"summa","mode":"evaluate","policies":["conditional","local","online","apriori","eager"],"tolerances":[0.5,0.125,0.03125]}`
	c3dSpec       = `{"workload":"cholesky3d","mode":"evaluate","policies":["conditional","local","online","apriori","eager"],"tolerances":[0.5,0.125,0.03125]}`
	eagerSpec     = `{"workload":"cholesky3d","mode":"evaluate","policies":["eager"],"tolerances":[0.5,0.125,0.03125]}`
	aprioriSpec   = `{"workload":"cholesky3d","mode":"evaluate","policies":["conditional","apriori"],"tolerances":[0.5]}`
	modelsOffSpec = `{"workload":"cholesky3d","mode":"evaluate","policies":["eager"],"tolerances":["2^-1"]}`
	modelsOnSpec  = `{"workload":"cholesky3d","mode":"evaluate","policies":["eager"],"tolerances":["2^-1"],"models":true}`
)

// sweepFile writes one sweep's events to a file: its start (with spec),
// a configuration with two references (noise floor |1.1-1.0|/1.0 and
// /1.1, 9.5%), and per policy and tolerance a result (with its error and
// counting_s when given) and a summary. Each file's summaries have their
// own elapsed_s, so that no two files are the same.
func sweepFile(t *testing.T, dir, name, spec string, sums []sum) string {
	t.Helper()
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `{"type":"start","v":2,"spec":%s,"runs":%d,"ranks":4}`+"\n", spec, len(sums))
	for _, s := range sums {
		counting := ""
		if s.counting > 0 {
			counting = fmt.Sprintf(`,"counting_s":%g`, s.counting)
		}
		fmt.Fprintf(&b, `{"type":"result","v":2,"index":0,"config":{"b":32},"policy":%q,"tolerance":%g,"reference_s":[1,1.1],"predicted_s":1,"selective_s":0.5,"error":%g%s}`+"\n",
			s.policy, s.tol, s.err, counting)
	}
	for _, s := range sums {
		fmt.Fprintf(&b, `{"type":"summary","v":2,"mode":"evaluate","policy":%q,"tolerance":%g,"speedup":%g,"mean_error":%g,"max_error":%g,"quality":%g,"elapsed_s":%d}`+"\n",
			s.policy, s.tol, s.speedup, s.err, s.err, s.quality, len(files))
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

type sum struct {
	policy                     string
	tol, speedup, err, quality float64
	counting                   float64
}

func bench(t *testing.T, name string, args []string) string {
	t.Helper()
	var out bytes.Buffer
	if err := benchMain(name, args, &out); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out.String()
}

func wantLines(t *testing.T, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("output lacks %q:\n%s", w, got)
		}
	}
}

// Eager at 2^-3 fast and accurate in every sweep; conditional's quality at
// 2^-5 under 0.95 in every sweep; eager's error at 2^-5 far above its 2^-1
// error in every sweep, conditional's below.
func TestBenchSumma(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i := range 3 {
		d := 0.001 * float64(i)
		files = append(files, sweepFile(t, dir, fmt.Sprintf("summa-%d.jsonl", i), summaSpec, []sum{
			{policy: "eager", tol: tol1, speedup: 6, err: 0.02 + d, quality: 1},
			{policy: "eager", tol: tol3, speedup: 5 + float64(i)/10, err: 0.03 + d, quality: 1},
			{policy: "eager", tol: tol5, speedup: 4, err: 0.08 + d, quality: 0.99 + d},
			{policy: "conditional", tol: tol1, speedup: 4, err: 0.04 + d, quality: 1},
			{policy: "conditional", tol: tol5, speedup: 2, err: 0.02 + 2*d, quality: 0.9 + d},
		}))
	}
	got := bench(t, "summa", files)
	wantLines(t, got,
		"| eager | 2^-3 | 5.10x ± 0.25 | - | 3.1% ± 0.2 |",
		"Noise floor (reference_error) of each sweep: 9.5%, 9.5%, 9.5%",
		"- eager 2^-3 speed-up >= 3x: 5.10x (4.85 to 5.35): **holds**",
		"- eager 2^-3 mean error <= 5%: 3.1% (2.9 to 3.3): **holds**",
		// Sweeps noisier than the target cannot show it (a review's, at
		// floors of 44% and 58%, read "fails" and nothing more).
		"  (the noise floor, 9.5%, is above this target's 5%: one full run misses its configuration's others by more, so these sweeps cannot show it holds; run them on a quieter machine)",
		"- conditional 2^-5 quality >= 0.95: 0.901 (0.899 to 0.903): **fails**",
		"- eager 2^-5 quality >= 0.95: 0.991 (0.989 to 0.993): **holds**",
		"- conditional mean error at 2^-5 not above its error at 2^-1 beyond the interval: -1.90 points",
		"- eager mean error at 2^-5 not above its error at 2^-1 beyond the interval: +6.00 points (+6.00 to +6.00): **fails**",
	)
	if !strings.Contains(got, "- conditional mean error at 2^-5 not above its error at 2^-1 beyond the interval: -1.90 points (-2.15 to -1.65): **holds**") {
		t.Errorf("conditional's paired line:\n%s", got)
	}
}

// Models: twice the speed-up in both pairs at half a point more error;
// apriori: slower than conditional, its counting pass 5% of a full run
// (1.05 s) where reported.
func TestBenchModelsAndApriori(t *testing.T) {
	dir := t.TempDir()
	var off, on, ap []string
	for i := range 2 {
		x := float64(i) / 10
		off = append(off, sweepFile(t, dir, fmt.Sprintf("off-%d", i), modelsOffSpec, []sum{{policy: "eager", tol: tol1, speedup: 2 + x, err: 0.05 + x/10, quality: 1}}))
		on = append(on, sweepFile(t, dir, fmt.Sprintf("on-%d", i), modelsOnSpec, []sum{{policy: "eager", tol: tol1, speedup: 4 + 2*x, err: 0.055 + x/10, quality: 0.98}}))
		ap = append(ap, sweepFile(t, dir, fmt.Sprintf("ap-%d", i), aprioriSpec, []sum{
			{policy: "conditional", tol: tol1, speedup: 1.1 + x, err: 0.05, quality: 1},
			{policy: "apriori", tol: tol1, speedup: 1.0 + x, err: 0.05, quality: 1, counting: 0.0525},
		}))
	}
	got := bench(t, "cholesky3d-models", append(append(off, "vs"), on...))
	wantLines(t, got,
		"| speed-up | 2.05x ± 0.64 | 4.10x ± 1.27 | +2.05x ± 0.64 |",
		"- speed-up with models / without >= 1.5: 2.00x (2.00 to 2.00): **holds**",
		"- mean error with models minus without <= +1 point: +0.50 points (+0.50 to +0.50): **holds**",
	)
	got = bench(t, "apriori", ap)
	wantLines(t, got,
		"- apriori's speed-up / conditional's at 2^-1 >= 1: 0.91x",
		"- apriori's counting pass < 10% of a full run: 5.0% (5.0 to 5.0): **holds**",
	)
	if !strings.Contains(got, "**fails**") {
		t.Errorf("apriori slower than conditional in both sweeps: want fails\n%s", got)
	}
	// Without counting_s: n/a.
	var plain []string
	for i := range 2 {
		plain = append(plain, sweepFile(t, dir, fmt.Sprintf("plain-%d", i), aprioriSpec, []sum{
			{policy: "conditional", tol: tol1, speedup: 1.1, err: 0.05, quality: 1},
			{policy: "apriori", tol: tol1, speedup: 1.2, err: 0.05, quality: 1},
		}))
	}
	wantLines(t, bench(t, "apriori", plain), "counting pass < 10% of a full run: **n/a** (the results carry no counting_s)")
	var out bytes.Buffer
	if err := benchMain("cholesky3d-models", off, &out); err == nil || !strings.Contains(err.Error(), "the word vs") {
		t.Errorf("models without vs: %v", err)
	}
	if err := benchMain("nope", off, &out); err == nil || !strings.Contains(err.Error(), "want one of apriori, cholesky3d") {
		t.Errorf("unknown benchmark: %v", err)
	}
}

// Eager's signed error per block size: predicted 1 s against references of
// 1 and 1.1 s is -4.8% in both sweeps, within the 9.5% floor.
func TestBenchCholesky3d(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i := range 2 {
		files = append(files, sweepFile(t, dir, fmt.Sprintf("c3d-%d", i), c3dSpec, []sum{
			{policy: "eager", tol: tol1, speedup: 5, err: 0.048, quality: 1},
			{policy: "conditional", tol: tol1, speedup: 1, err: 0.048, quality: 1},
		}))
	}
	wantLines(t, bench(t, "cholesky3d", files),
		"| eager | 2^-1 | 5.00x ± 0.00 | - | 4.8% ± 0.0 | 1.000 ± 0.000 | 1.000, 1.000 |",
		"| 32 | 2^-1 | -4.8% ± 0.0 | -4.8%, -4.8% | holds |",
		"away from its references on average")
}

// A sweep with timelines on (trace) has trace events whose ranks are a
// list: summarize passes over them (and over kernels tables and run
// starts) instead of failing on the whole sweep, in an agent's output
// and in a session's journal alike.
func TestReadPassesOverTraces(t *testing.T) {
	in := `{"type":"start","v":1,"ranks":4}
{"type":"trace","v":1,"ranks":[{"rank":0,"events":[]}]}
{"kind":"event","sweep":1,"event":{"type":"trace","v":1,"ranks":[{"rank":1}]}}
{"type":"kernels","v":1,"kernels":[{"routine":"gemm"}]}
{"type":"result","v":1,"index":0,"policy":"eager","tolerance":0.5,"predicted_s":1,"selective_s":0.5,"reference_s":[1.1]}
`
	evs, err := read(strings.NewReader(in))
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if len(evs) != 2 || evs[0].Type != "start" || evs[1].Type != "result" {
		t.Errorf("events %+v, want the start and the result", evs)
	}
}
