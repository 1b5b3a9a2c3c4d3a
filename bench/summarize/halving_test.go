package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The two hand-written search sweeps of testdata share their references:
// b=32 2 s, b=64 1 s (the best), b=128 1.02 s, b=256 1 and 1.25 s. Their
// noise floor is (0.25/1.25 + 0.25/1)/8 = 5.625%, so the best class is
// b=64 and b=128 (1.02 <= 1.05625), not b=256 (1.125). The survivors' full
// runs in round 2 (b=128 at 0.7 s) are the search's own and change neither
// the floor nor the best.
func TestJudgeHalving(t *testing.T) {
	want := []struct {
		chosen  int
		inClass bool
		ratio   float64
		quality float64
	}{{2, true, 10, 1 / 1.02}, {3, false, 5, 1 / 1.125}}
	for i, w := range want {
		f := filepath.Join("testdata", []string{"halving-1.jsonl", "halving-2.jsonl"}[i])
		evs, err := readFile(f)
		if err != nil {
			t.Fatal(err)
		}
		h, err := judgeHalving(evs)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if h.configs != 4 || h.Best != 1 || !slices.Equal(h.BestClass, []int{1, 2}) || math.Abs(h.NoiseFloor-0.05625) > 1e-12 {
			t.Errorf("%s: %d configurations, best %d, class %v, floor %g; want 4, best 1, class [1 2], floor 0.05625", f, h.configs, h.Best, h.BestClass, h.NoiseFloor)
		}
		if math.Abs(h.FullS-5.145) > 1e-12 || h.chosen != w.chosen || h.InBestClass != w.inClass ||
			math.Abs(h.Ratio-w.ratio) > 1e-9 || math.Abs(h.Quality-w.quality) > 1e-12 {
			t.Errorf("%s: full runs %g, chosen %d in class %v, ratio %g, quality %g; want 5.145, %d %v, %g, %g", f, h.FullS, h.chosen, h.InBestClass, h.Ratio, h.Quality,
				w.chosen, w.inClass, w.ratio, w.quality)
		}
		if !slices.Equal(h.survivors, []int{4, 3}) || !slices.Equal(h.tolerances, []float64{0.5, 0}) {
			t.Errorf("%s: rounds %v at %v; want [4 3] at [0.5 0]", f, h.survivors, h.tolerances)
		}
		if h.labels[2] != "b=128" {
			t.Errorf("%s: label %q, want b=128 (n, grid and lookahead are the same everywhere)", f, h.labels[2])
		}
	}
}

// The pooled report: ratio 7.5 (10 and 5), one of two sweeps in the best
// class, and the targets read from the intervals.
func TestHalvingMain(t *testing.T) {
	files := []string{filepath.Join("testdata", "halving-1.jsonl"), filepath.Join("testdata", "halving-2.jsonl")}
	var out bytes.Buffer
	if err := halvingMain(files, 10, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		"| 1 | 4 | 5.6% | 5.14 | 0.51 | 10.00x | 4 at 2^-1, 3 full | b=128 (1.020 s) | b=64 (1.000 s) | 2 | yes | 0.980 |",
		"| 2 | 4 | 5.6% | 5.14 | 1.03 | 5.00x | 4 at 2^-1, 3 full | b=256 (1.125 s) | b=64 (1.000 s) | 2 | no | 0.889 |",
		"time ratio 7.50x ± 31.77, chosen in the best class in 1 (50%)",
		"- time ratio >= 10x: 7.50x (-24.27 to 39.27): **undecided",
		"- chosen in the best class in >= 90% of sweeps: 1 of 2 (50%): **fails**",
		"- quality >= 0.98: 0.935",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	out.Reset()
	if err := halvingMain(files[:1], 0, &out); err != nil || strings.Contains(out.String(), "Targets") {
		t.Errorf("no goal: err %v, want no targets in\n%s", err, out.String())
	}
}

// A sweep without a search event, or a tune search without references,
// is refused with what is missing.
func TestJudgeHalvingRefuses(t *testing.T) {
	lines, err := os.ReadFile(filepath.Join("testdata", "halving-1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var noSearch, noRefs []event
	evs, err := read(bytes.NewReader(lines))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Type != "search" {
			noSearch = append(noSearch, e)
		}
		if e.Type != "result" || e.Round > 0 {
			noRefs = append(noRefs, e)
		}
	}
	if _, err := judgeHalving(noSearch); err == nil || !strings.Contains(err.Error(), "no search event") {
		t.Errorf("no search event: got %v", err)
	}
	if _, err := judgeHalving(noRefs); err == nil || !strings.Contains(err.Error(), "no references in round 0") {
		t.Errorf("no references: got %v", err)
	}
}

// A target holds when its whole interval is on its side, fails when the
// whole interval is on the other, and is undecided across it.
func TestVerdict(t *testing.T) {
	for _, c := range []struct {
		e       estimate
		goal    float64
		atLeast bool
		want    string
	}{
		{estimate{mean: 4, half: 0.5}, 3, true, "holds"},
		{estimate{mean: 2, half: 0.5}, 3, true, "fails"},
		{estimate{mean: 3.2, half: 0.5}, 3, true, "undecided"},
		{estimate{mean: 0.03, half: 0.01}, 0.05, false, "holds"},
		{estimate{mean: 0.08, half: 0.01}, 0.05, false, "fails"},
		{estimate{mean: 0.045, half: 0.01}, 0.05, false, "undecided"},
		{estimate{mean: 4, half: math.NaN()}, 3, true, "undecided"},
	} {
		if got := verdict(c.e, c.goal, c.atLeast); !strings.HasPrefix(got, c.want) {
			t.Errorf("verdict(%+v, %g, %v) = %q, want %s", c.e, c.goal, c.atLeast, got, c.want)
		}
	}
	if got := within(estimate{mean: 0.01, half: 0.02}, 0.04); got != "holds" {
		t.Errorf("within ±4%%: %s", got)
	}
	if got := within(estimate{mean: -0.15, half: 0.05}, 0.04); got != "fails" {
		t.Errorf("-15%% ± 5 against ±4%%: %s", got)
	}
	if got := within(estimate{mean: -0.05, half: 0.05}, 0.04); got != "undecided" {
		t.Errorf("-5%% ± 5 against ±4%%: %s", got)
	}
}
