package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/approxtune/approxtune/internal/selective"
	"github.com/approxtune/approxtune/sweep"
)

// kstat is a kernel's statistics as a selective run reports them.
func kstat(key string, count int64, mean, half float64) sweep.KernelStat {
	routine, _, _ := strings.Cut(key, " ")
	routine, _, _ = strings.Cut(routine, "[")
	return sweep.KernelStat{Key: key, Routine: routine, Count: count, MeanS: mean, HalfS: half, Calls: count}
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// kernelSweep is a tune sweep over block sizes b whose selective runs
// reported the given kernel statistics, one event per run.
func kernelSweep(runs ...sweep.KernelsEvent) *Sweep {
	params := []sweep.Param{{Name: "b", Kind: sweep.Int, Default: 64, Min: 1, Max: 4096}}
	sw := &Sweep{ID: 1, Status: "ok", Workload: "cholesky2d",
		Spec: &sweep.Spec{Mode: sweep.ModeTune, Policies: []string{"conditional"}, Tolerances: []sweep.Tolerance{0.125}}}
	sw.Configs = append(sw.Configs, sweep.NewConfig(params, map[string]any{"b": 64}))
	f := 0.01
	for _, r := range runs {
		if r.Policy == "" {
			r.Policy = "conditional"
		}
		r.Type, r.Index, r.Tolerance = sweep.TypeKernels, 0, 0.125
		sw.Kernels = append(sw.Kernels, r)
		sw.Results = append(sw.Results, sweep.Result{Index: 0, Config: sw.Configs[0], Policy: r.Policy, Tolerance: &r.Tolerance, PredictedS: &f})
	}
	return sw
}

// gemmGrid is a gemm[NN] on the 5 x 5 x 5 grid of m, n, k in 16..4096 (2.4
// decades, as analysis.TestFitModelNoisyMulti), its means 2e-9·m·n·k with
// 3% noise.
func gemmGrid(seed uint64) sweep.KernelsEvent {
	rng := rand.New(rand.NewPCG(seed, 27))
	vals := []int{16, 64, 256, 1024, 4096}
	var ks []sweep.KernelStat
	for _, m := range vals {
		for _, n := range vals {
			for _, k := range vals {
				v := 2e-9 * float64(m*n*k) * (1 + 0.03*rng.NormFloat64())
				ks = append(ks, kstat(fmt.Sprintf("gemm[NN] %dx%dx%d", m, n, k), 40, v, 0.02*v))
			}
		}
	}
	return sweep.KernelsEvent{Kernels: ks}
}

// tileRun is what a tile algorithm's rank reports: b x b x b gemms, b x b
// syrks and potrfs of b, for each block size, with 3% noise, and the
// synthetic workload's spin.
func tileRun(seed uint64, bs []int) sweep.KernelsEvent {
	rng := rand.New(rand.NewPCG(seed, 3))
	noisy := func(v float64) float64 { return v * (1 + 0.03*rng.NormFloat64()) }
	var ks []sweep.KernelStat
	for _, b := range bs {
		x := float64(b)
		ks = append(ks,
			kstat(fmt.Sprintf("gemm[NT] %dx%dx%d", b, b, b), 100, noisy(2e-9*x*x*x), 0.05*2e-9*x*x*x),
			kstat(fmt.Sprintf("potrf[L] %d", b), 10, noisy(4e-10*x*x*math.Log2(x)), -1),
		)
	}
	ks = append(ks, kstat("spin 1000", 50, 1e-3, 1e-5))
	return sweep.KernelsEvent{Kernels: ks}
}

// A gemm measured on a grid of sizes is modelled in m, n and k: the
// search finds the one product term of the planted 2e-9·m·n·k, and the
// model predicts a size never measured within 10%.
func TestModelGemmGrid(t *testing.T) {
	for seed := range uint64(3) {
		sw := kernelSweep(gemmGrid(seed))
		d := collectKernels([]*Sweep{sw})
		if len(d.families) != 1 || d.families[0].name != "gemm[NN]" || len(d.families[0].sizes) != 125 {
			t.Fatalf("families %+v", d.families)
		}
		km := fitFamily(d.families[0], "")
		if km.err != nil {
			t.Fatal(km.err)
		}
		m := km.model
		if km.via != "" || strings.Join(km.vars, ",") != "m,n,k" || len(m.Terms) != 1 || !strings.HasSuffix(m.String(), " * m * n * k") {
			t.Errorf("seed %d: model %v of %v (via %q), want c0 + c * m * n * k", seed, m, km.vars, km.via)
			continue
		}
		for _, f := range m.Terms[0].Factors {
			if f.I.Num != f.I.Den || f.J != 0 {
				t.Errorf("seed %d: factor %+v, want exponent 1 and no log", seed, f)
			}
		}
		if e := math.Abs(m.Terms[0].Coef/2e-9 - 1); e > 0.1 {
			t.Errorf("seed %d: %v: coefficient off by %.1f%%", seed, m, 100*e)
		}
		want := 2e-9 * 500 * 700 * 300
		if got := m.Predict([]float64{500, 700, 300}); math.Abs(got/want-1) > 0.1 {
			t.Errorf("seed %d: prediction at 500x700x300 %g, want %g within 10%%", seed, got, want)
		}
	}
	// The command prints the prediction with its band.
	s := newSession(t)
	s.sweeps = append(s.sweeps, kernelSweep(gemmGrid(0)))
	out := &textOut{}
	if err := s.Exec(context.Background(), "model gemm m=500 n=700 k=300", out); err != nil {
		t.Fatal(err)
	}
	got := out.b.String()
	// 2e-9·500·700·300 s = 210 ms, inside the band.
	pm := regexp.MustCompile(`^gemm\[NN\] at m=500 n=700 k=300: ([0-9.]+) ms, 95% prediction band ([0-9.]+) ms \.\. ([0-9.]+) ms   \[t\(m, n, k\) = .* \* m \* n \* k\]\n$`).FindStringSubmatch(got)
	if pm == nil {
		t.Fatalf("prediction:\n%s", got)
	}
	pred, lo, hi := atof(t, pm[1]), atof(t, pm[2]), atof(t, pm[3])
	if math.Abs(pred/210-1) > 0.1 || !(lo < 210 && 210 < hi) || !(lo < pred && pred < hi) {
		t.Errorf("prediction %g ms, band %g .. %g ms; want 210 ms within 10%% and inside the band", pred, lo, hi)
	}
	if strings.Contains(got, "extrapolation") {
		t.Errorf("500x700x300 lies inside the measured sizes:\n%s", got)
	}
	out.b.Reset()
	if err := s.Exec(context.Background(), "model gemm m=8192 n=16 k=16", out); err != nil || !strings.Contains(out.b.String(), "an extrapolation: the measured m run from 16 to 4096") {
		t.Errorf("extrapolation: %v\n%s", err, out.b.String())
	}
}

// A tile algorithm's kernels have m = n = k = b: the multi-parameter
// search has no line to separate them by, and the model is of flops. The
// planted 2e-9·b³ is 1e-9·flops; potrf's 4e-10·n²·log2(n) comes back with
// its exponents; spins are left out.
func TestModelTileSizes(t *testing.T) {
	bs := []int{16, 32, 64, 128, 256, 512, 1024, 2048}
	sw := kernelSweep(tileRun(1, bs), tileRun(2, bs))
	d := collectKernels([]*Sweep{sw})
	if !d.spins || len(d.families) != 2 {
		t.Fatalf("families %v, spins %v", d.families, d.spins)
	}
	gemm := fitFamily(d.families[0], "")
	if gemm.err != nil {
		t.Fatal(gemm.err)
	}
	if gemm.via != "flops" || len(gemm.model.Terms) != 1 || !strings.HasSuffix(gemm.model.String(), "* flops") {
		t.Errorf("gemm: %s (via %q), want c0 + c * flops", gemm.formula(), gemm.via)
	} else if e := math.Abs(gemm.model.Terms[0].Coef/1e-9 - 1); e > 0.1 {
		t.Errorf("gemm: %s: coefficient off by %.1f%% from 1e-9 s per flop", gemm.formula(), 100*e)
	}
	want := 2e-9 * 3000 * 3000 * 3000
	if got := gemm.model.Predict(gemm.coords([]float64{3000, 3000, 3000})); math.Abs(got/want-1) > 0.1 {
		t.Errorf("gemm at 3000^3: %g, want %g within 10%%", got, want)
	}
	potrf := fitFamily(d.families[1], "")
	if potrf.err != nil {
		t.Fatal(potrf.err)
	}
	if s := potrf.model.String(); potrf.via != "" || len(potrf.model.Terms) != 1 || !strings.HasSuffix(s, " * n^2 * log2(n)") {
		t.Errorf("potrf: %s, want c0 + c * n^2 * log2(n)", s)
	} else if e := math.Abs(potrf.model.Terms[0].Coef/4e-10 - 1); e > 0.1 {
		t.Errorf("potrf: %s: coefficient off by %.1f%%", s, 100*e)
	}

	s := newSession(t)
	s.sweeps = append(s.sweeps, sw)
	out := &textOut{}
	if err := s.Exec(context.Background(), "model", out); err != nil {
		t.Fatal(err)
	}
	got := out.b.String()
	for _, w := range []string{
		"kernel models of sweep 1: rank 0's mean time per call against size, 2 selective runs pooled\n",
		"gemm[NT]  8      ", "t(flops) = ",
		"potrf[L]  8      ", "t(n) = ",
		"gemm[NT]: m, n, k vary together: modelled against flops = 2*m*n*k\n",
		"left out: spin, the synthetic workload's kernel, has no size",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("model: no %q in\n%s", w, got)
		}
	}
	out.b.Reset()
	if err := s.Exec(context.Background(), "model gemm", out); err != nil {
		t.Fatal(err)
	}
	got = out.b.String()
	// The detail has a row per size: the measured mean against the model.
	if !strings.Contains(got, "  flops  samples     mean  95% interval    model") || !strings.Contains(got, "\n  2048x2048x2048  17179869184      200   17.2 s ") ||
		strings.Count(got, "\n") != 4+len(bs) {
		t.Errorf("model gemm:\n%s", got)
	}
	// sweeps=all pools the session's sweeps: a later one with other sizes
	// adds them; alone it has too few.
	later := kernelSweep(tileRun(3, []int{24, 48, 96}))
	later.ID = 2
	s.sweeps = append(s.sweeps, later)
	if err := s.Exec(context.Background(), "model gemm", out); err == nil || !strings.HasPrefix(err.Error(), "column 7: gemm[NT] has 3 sizes; a fit needs at least 5") {
		t.Errorf("model gemm of sweep 2: %v", err)
	}
	out.b.Reset()
	if err := s.Exec(context.Background(), "model sweeps=all", out); err != nil {
		t.Fatal(err)
	}
	if got := out.b.String(); !strings.HasPrefix(got, "kernel models of sweeps 1, 2: rank 0's mean time per call against size, 3 selective runs pooled\n") ||
		!strings.Contains(got, "gemm[NT]  11     ") {
		t.Errorf("model sweeps=all:\n%s", got)
	}
}

// Pooling: a policy that starts each run afresh contributes every run's
// statistics, weighted by their counts; eager, which carries them from one
// configuration to the next, only its last report of each kernel;
// messages of one size on different communicators are one size.
func TestCollectKernelsPooling(t *testing.T) {
	sw := kernelSweep(
		sweep.KernelsEvent{Policy: "conditional", Kernels: []sweep.KernelStat{kstat("potrf[L] 64", 10, 1e-5, 1e-6)}},
		sweep.KernelsEvent{Policy: "conditional", Kernels: []sweep.KernelStat{kstat("potrf[L] 64", 30, 2e-5, 2e-6)}},
		sweep.KernelsEvent{Policy: "eager", Kernels: []sweep.KernelStat{kstat("potrf[L] 64", 20, 4e-5, -1)}},
		sweep.KernelsEvent{Policy: "eager", Kernels: []sweep.KernelStat{kstat("potrf[L] 64", 40, 3e-5, 1e-6),
			kstat("isend 128 doubles on 2 ranks [0000aaaa] partner +1", 10, 1e-6, 1e-7),
			kstat("isend 128 doubles on 2 ranks [0000bbbb] partner -1", 30, 3e-6, -1)}},
	)
	d := collectKernels([]*Sweep{sw})
	if d.runs != 4 || len(d.families) != 2 {
		t.Fatalf("%d runs, families %v", d.runs, d.families)
	}
	isend, potrf := d.families[0], d.families[1]
	if len(potrf.sizes) != 1 || len(potrf.sizes[0].parts) != 3 {
		t.Fatalf("potrf parts %+v: want the two conditional runs and eager's last", potrf.sizes)
	}
	z := potrf.sizes[0]
	if z.count != 80 || math.Abs(z.mean-(10*1e-5+30*2e-5+40*3e-5)/80) > 1e-18 {
		t.Errorf("pooled potrf: %d samples, mean %g", z.count, z.mean)
	}
	wantHalf := math.Sqrt(math.Pow(10./80*1e-6, 2) + math.Pow(30./80*2e-6, 2) + math.Pow(40./80*1e-6, 2))
	if math.Abs(z.half-wantHalf) > 1e-18 {
		t.Errorf("pooled half-width %g, want %g", z.half, wantHalf)
	}
	if len(isend.sizes) != 1 || isend.sizes[0].params[0] != 1024 || isend.sizes[0].params[1] != 2 || isend.sizes[0].count != 40 ||
		math.Abs(isend.sizes[0].mean-2.5e-6) > 1e-18 || isend.sizes[0].half != 0.1e-6 {
		t.Errorf("isend: %+v, want one size of 1024 bytes on 2 ranks, 40 samples, mean 2.5e-6, half-width from the finite part", isend.sizes[0])
	}
}

// Each missing piece of data or wrong word gets an error that says what
// is there and what to do.
func TestModelErrors(t *testing.T) {
	ctx := context.Background()
	s := newSession(t)
	out := &textOut{}
	if err := s.Exec(ctx, "model", out); err == nil || !strings.Contains(err.Error(), "no results yet") {
		t.Errorf("no sweep: %v", err)
	}
	s.sweeps = append(s.sweeps, knownSweep(t))
	if err := s.Exec(ctx, "model", out); err == nil || !strings.Contains(err.Error(), "sweep 1 has no kernel statistics") {
		t.Errorf("no kernels: %v", err)
	}
	s.sweeps = []*Sweep{kernelSweep(sweep.KernelsEvent{Kernels: []sweep.KernelStat{kstat("spin 1000", 5, 1e-3, 1e-5)}})}
	if err := s.Exec(ctx, "model", out); err == nil || !strings.Contains(err.Error(), "no kernel to model in sweep 1: the synthetic workload's spins have no size to model") {
		t.Errorf("spins only: %v", err)
	}
	var ks []sweep.KernelStat // gemm at 2 block sizes, potrf at 5
	for _, b := range []int{16, 32, 64, 128, 256} {
		if b == 32 || b == 64 {
			ks = append(ks, kstat(fmt.Sprintf("gemm[NT] %dx%dx%d", b, b, b), 5, 2e-9*float64(b*b*b), -1))
		}
		ks = append(ks, kstat(fmt.Sprintf("potrf[L] %d", b), 5, 1e-9*float64(b*b*b), -1))
	}
	s.sweeps = []*Sweep{kernelSweep(sweep.KernelsEvent{Kernels: ks})}
	for line, want := range map[string]string{
		"model gemm":                  "column 7: gemm[NT] has 2 sizes; a fit needs at least 5: sweep more block sizes, e.g. space b=16,32,64,128,256",
		"model":                       "", // potrf fits; gemm is listed as not modelled
		"model dgemm":                 `column 7: no kernel "dgemm" in sweep 1: the routines are gemm, potrf (families gemm[NT], potrf[L])`,
		"model spin":                  "column 7: spin, the synthetic workload's kernel, has no size to model",
		"model potrf m=4":             `column 13: potrf has no parameter "m": its parameters are n`,
		"model potrf n=x":             "column 15: n=x: want a positive number",
		"model potrf n=-3":            "column 15: n=-3: want a positive number",
		"model potrf n=3 n=4":         "column 17: n= is given twice: give each option once",
		"model n=3":                   "column 7: name the routine first",
		"model potrf gemm":            "column 13: one routine only",
		"model sweeps=some":           `column 14: sweeps= takes all or last, not "some"`,
		"plot model":                  "column 6: plot model takes a routine: plot model ROUTINE [FILE], ROUTINE one of gemm, potrf",
		"plot model x.png":            "column 6: plot model takes a routine",
		"plot model gemm x.png":       "column 6: gemm[NT] has 2 sizes; a fit needs at least 5",
		"export extrap":               "column 8: export extrap takes a file",
		"export extrap a.txt b c":     "column 23: export extrap FILE [ROUTINE] [sweeps=all]: one file and one routine",
		"export extrap a.txt dgemm":   `column 21: no kernel "dgemm"`,
		"export extrap a.txt depth=3": `column 21: export extrap has no option "depth"`,
		"export xml a.txt":            "column 8: export takes a format and a file: export csv FILE, export notebook FILE, or export extrap FILE [ROUTINE]",
	} {
		out.b.Reset()
		err := s.Exec(ctx, line, out)
		if want == "" {
			if err != nil || !strings.Contains(out.b.String(), "not modelled: gemm[NT] has 2 sizes; a fit needs at least 5") || !strings.Contains(out.b.String(), "potrf[L]  5") {
				t.Errorf("%s: %v\n%s", line, err, out.b.String())
			}
			continue
		}
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s:\n got %v\nwant %s...", line, err, want)
		}
	}
	// gemm's model is of flops, which needs all three dimensions.
	s.sweeps = []*Sweep{kernelSweep(tileRun(1, []int{16, 32, 64, 128, 256, 512}))}
	if err := s.Exec(ctx, "model gemm m=100 n=100", out); err == nil || !strings.HasPrefix(err.Error(), "column 18: gemm[NT]'s model needs flops: give k=") {
		t.Errorf("missing k: %v", err)
	}
}

// plot model draws the measurements, the model and its band: a curve
// for a model of one parameter, the model at each size for one of several.
func TestPlotModel(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	for _, c := range []struct {
		sw   *Sweep
		line string
		sum  string
	}{
		{kernelSweep(tileRun(1, []int{16, 32, 64, 128, 256, 512})), "plot model gemm " + filepath.Join(dir, "tile.png"), "gemm[NT]: t(flops) = "},
		{kernelSweep(gemmGrid(0)), "plot model gemm[NN] " + filepath.Join(dir, "grid.png"), "gemm[NN]: t(m, n, k) = "},
	} {
		s := newSession(t)
		s.sweeps = append(s.sweeps, c.sw)
		out := &textOut{}
		if err := s.Exec(ctx, c.line, out); err != nil {
			t.Fatalf("%s: %v", c.line, err)
		}
		file := c.line[strings.LastIndex(c.line, " ")+1:]
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if sz := img.Bounds().Size(); sz.X != 800 || sz.Y != 450 {
			t.Errorf("%s: %v", file, sz)
		}
		if got := out.b.String(); !strings.HasPrefix(got, c.sum) || !strings.HasSuffix(got, "wrote "+file+"\n") {
			t.Errorf("%s printed:\n%s", c.line, got)
		}
	}
	// The default file name has the routine.
	s := newSession(t)
	s.sweeps = append(s.sweeps, kernelSweep(tileRun(1, []int{16, 32, 64, 128, 256, 512})))
	wd, _ := os.Getwd()
	defer os.Chdir(wd)
	os.Chdir(dir)
	out := &textOut{}
	if err := s.Exec(ctx, "plot model gemm[NT]", out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "model-gemm-NT-sweep1.png")); err != nil {
		t.Errorf("default file: %v\n%s", err, out.b.String())
	}

	// sweeps=all fits every sweep's kernels, as model sweeps=all does:
	// the last sweep alone has too few sizes.
	s.sweeps = append(s.sweeps, kernelSweep(tileRun(1, []int{16, 32})))
	s.sweeps[1].ID = 2
	out.b.Reset()
	if err := s.Exec(ctx, "plot model gemm", out); err == nil || !strings.Contains(err.Error(), "gemm[NT] has 2 sizes") {
		t.Errorf("plot model gemm on the last sweep: %v", err)
	}
	if err := s.Exec(ctx, "plot model gemm sweeps=all", out); err != nil {
		t.Fatalf("plot model gemm sweeps=all: %v", err)
	}
	if got := out.b.String(); !strings.HasPrefix(got, "gemm[NT]: t(flops) = ") || !strings.Contains(got, "/model-gemm-sweeps-all.png\n") {
		t.Errorf("plot model gemm sweeps=all printed:\n%s", got)
	}
	for line, want := range map[string]string{
		"plot model gemm sweeps=some": `column 24: sweeps= takes all or last, not "some"`,
		"plot rank sweeps=all":        "column 11: sweeps= is plot model's",
	} {
		if err := s.Exec(ctx, line, out); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %s", line, err, want)
		}
	}
}

// export extrap writes Extra-P's text format: a file per routine (the
// families of one file share its points), a REGION per family and a DATA
// line per point with a value per selective run.
func TestExportExtrap(t *testing.T) {
	var runs []sweep.KernelsEvent
	for r := range 2 {
		var ks []sweep.KernelStat
		for i, n := range []int{32, 64, 128, 256, 512} {
			ks = append(ks, kstat(fmt.Sprintf("potrf[L] %d", n), 4, float64(10*(i+1)+r)/1e6, -1))
			ks = append(ks, kstat(fmt.Sprintf("isend %d doubles on 2 ranks [0000000%d] partner +1", n*n/8, r), 4, float64(i+2)/1e6, -1))
		}
		ks = append(ks, kstat("spin 1000", 5, 1e-3, 1e-5))
		runs = append(runs, sweep.KernelsEvent{Kernels: ks})
	}
	// trsm[RLTN] and trsm[LLNN] on the same 3 x 3 grid share a file.
	for i, fl := range []string{"RLTN", "LLNN"} {
		var ks []sweep.KernelStat
		for _, m := range []int{8, 16, 32} {
			for _, n := range []int{8, 16, 32} {
				ks = append(ks, kstat(fmt.Sprintf("trsm[%s] %dx%d", fl, m, n), 2, float64((2*i+1)*m*n*n)/1e9, -1))
			}
		}
		runs = append(runs, sweep.KernelsEvent{Kernels: ks})
	}
	s := newSession(t)
	s.sweeps = append(s.sweeps, kernelSweep(runs...))
	dir := t.TempDir()
	out := &textOut{}
	if err := s.Exec(context.Background(), "export extrap "+filepath.Join(dir, "k.txt"), out); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"k-potrf.txt": `# approxtune kernel times of sweep 1 (rank 0): seconds per call; a DATA value is the mean of one part pooled at its point (a selective run's kernel, or kernels of that size on other communicators); approxtune's model fits their mean weighted by their calls, Extra-P weighs them alike
PARAMETER n
POINTS (32) (64) (128) (256) (512)
METRIC time
REGION potrf[L]
DATA 0.00001 0.000011
DATA 0.00002 0.000021
DATA 0.00003 0.000031
DATA 0.00004 0.000041
DATA 0.00005 0.000051
`,
		"k-isend.txt": `# approxtune kernel times of sweep 1 (rank 0): seconds per call; a DATA value is the mean of one part pooled at its point (a selective run's kernel, or kernels of that size on other communicators); approxtune's model fits their mean weighted by their calls, Extra-P weighs them alike
# isend: constant at every measured size, so no parameter of the model: p = 2
PARAMETER bytes
POINTS (1024) (4096) (16384) (65536) (262144)
METRIC time
REGION isend
DATA 0.000002 0.000002
DATA 0.000003 0.000003
DATA 0.000004 0.000004
DATA 0.000005 0.000005
DATA 0.000006 0.000006
`,
		"k-trsm.txt": `# approxtune kernel times of sweep 1 (rank 0): seconds per call; a DATA value is the mean of one part pooled at its point (a selective run's kernel, or kernels of that size on other communicators); approxtune's model fits their mean weighted by their calls, Extra-P weighs them alike
PARAMETER m n
POINTS (8 8) (8 16) (8 32) (16 8) (16 16) (16 32) (32 8) (32 16) (32 32)
METRIC time
REGION trsm[LLNN]
DATA 0.000001536
DATA 0.000006144
DATA 0.000024576
DATA 0.000003072
DATA 0.000012288
DATA 0.000049152
DATA 0.000006144
DATA 0.000024576
DATA 0.000098304
REGION trsm[RLTN]
DATA 0.000000512
DATA 0.000002048
DATA 0.000008192
DATA 0.000001024
DATA 0.000004096
DATA 0.000016384
DATA 0.000002048
DATA 0.000008192
DATA 0.000032768
`,
	}
	for name, w := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("%v\n%s", err, out.b.String())
		}
		if string(b) != w {
			t.Errorf("%s:\n%s\nwant\n%s", name, b, w)
		}
	}
	if n := strings.Count(out.b.String(), "wrote "); n != 3 || !strings.Contains(out.b.String(), "k-trsm.txt: trsm[LLNN], trsm[RLTN] (9 points in m, n)") {
		t.Errorf("export printed:\n%s", out.b.String())
	}
	// One routine: one file, under the name given.
	out.b.Reset()
	if err := s.Exec(context.Background(), "export extrap "+filepath.Join(dir, "p.txt")+" potrf", out); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "p.txt")); err != nil || string(b) != want["k-potrf.txt"] {
		t.Errorf("export extrap p.txt potrf: %v\n%s", err, b)
	}
	// Exports are to be shared: 0644 (through a temporary file, they had
	// been 0600), and a file replaced keeps its mode.
	if fi, err := os.Stat(filepath.Join(dir, "p.txt")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("p.txt: %v, %v; want mode 0644", fi.Mode(), err)
	}
	if err := os.Chmod(filepath.Join(dir, "p.txt"), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(context.Background(), "export extrap "+filepath.Join(dir, "p.txt")+" potrf", out); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(dir, "p.txt")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("p.txt replaced: %v, %v; want its mode 0640 kept", fi.Mode(), err)
	}
	// A symbolic link is written through: it had been replaced by a file,
	// its target left as it was.
	if err := os.Symlink("p.txt", filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "p.txt"), nil, 0o640)
	if err := s.Exec(context.Background(), "export extrap "+filepath.Join(dir, "link.txt")+" potrf", out); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "link.txt")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("link.txt after the export: %v, %v; want the link kept", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "p.txt")); string(b) != want["k-potrf.txt"] {
		t.Errorf("the link's target was not written:\n%s", b)
	}
}

// model sweeps=all counts a sweep loaded twice once: its second copy would
// add the same samples again.
func TestModelSweepsLoadedTwice(t *testing.T) {
	s := newSession(t)
	ks := []sweep.KernelsEvent{{}}
	s.sweeps = []*Sweep{
		{ID: 1, Kernels: ks},
		{ID: 2, Kernels: ks, origin: "loaded from /a, sweep 1"},
		{ID: 3, Kernels: ks, origin: "loaded from /a, sweep 2"},
		{ID: 4, Kernels: ks, origin: "loaded from /a, sweep 1"},
		{ID: 5},
	}
	got, err := modelSweeps(s, &Command{Verb: "model"}, true, nil)
	var ids []int
	for _, sw := range got {
		ids = append(ids, sw.ID)
	}
	if err != nil || !slices.Equal(ids, []int{1, 2, 3}) {
		t.Errorf("model sweeps=all read sweeps %v (%v), want 1, 2 and 3", ids, err)
	}
}

// A size the model does not depend on, because it never varied, cannot be
// moved: gemm measured with m = n = 256 throughout and k varying predicts
// at other k, and refuses m=512 (it answered a quarter of the time, with a
// confident band).
func TestModelRefusesAFixedSizeMoved(t *testing.T) {
	s := newSession(t)
	var ks []sweep.KernelStat
	for _, k := range []int{16, 32, 64, 128, 256} {
		ks = append(ks, kstat(fmt.Sprintf("gemm[NN] 256x256x%d", k), 5, 2e-9*float64(256*256*k), -1))
	}
	s.sweeps = []*Sweep{kernelSweep(sweep.KernelsEvent{Kernels: ks})}
	out := &textOut{}
	ctx := context.Background()
	if err := s.Exec(ctx, "model gemm k=512", out); err != nil || !strings.Contains(out.b.String(), "gemm[NN] at k=512") {
		t.Errorf("model gemm k=512: %v\n%s", err, out.b.String())
	}
	if err := s.Exec(ctx, "model gemm m=256 k=512", out); err != nil {
		t.Errorf("model gemm m=256 k=512 (m as measured): %v", err)
	}
	err := s.Exec(ctx, "model gemm m=512 n=512 k=512", out)
	if want := "column 12: gemm[NN]: m was 256 at every measured size, so the model cannot tell what m=512 costs"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("model gemm m=512 n=512 k=512: %v, want %q", err, want)
	}
}

// A time is not negative: a model whose constant is below zero gives no
// time where it falls under zero (it had printed -2.86 µs with a band of
// -7.31 µs .. 1.6 µs), and no band reaches below zero.
func TestModelNoNegativeTimes(t *testing.T) {
	var ks []sweep.KernelStat
	for _, n := range []int{32, 64, 128, 256, 512} {
		x := float64(n)
		ks = append(ks, kstat(fmt.Sprintf("potrf[L] %d", n), 8, 1e-9*x*x*x/3-2e-6, 1e-8))
	}
	s := newSession(t)
	s.sweeps = append(s.sweeps, kernelSweep(sweep.KernelsEvent{Kernels: ks}))
	for line, want := range map[string]string{
		"model potrf n=8":  "no time: the model gives -",
		"model potrf n=64": "95% prediction band",
		"model potrf":      "potrf",
	} {
		out := &textOut{}
		if err := s.Exec(context.Background(), line, out); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		got := out.b.String()
		if !strings.Contains(got, want) {
			t.Errorf("%s: output lacks %q:\n%s", line, want, got)
		}
		if line != "model potrf n=8" && regexp.MustCompile(`-[\d.]+ (ns|µs|ms|s)\b`).MatchString(got) {
			t.Errorf("%s: a negative time:\n%s", line, got)
		}
		// A band cut at zero is said to be so, and only then.
		if cut, said := regexp.MustCompile(`\s0 \.\. `).MatchString(got), strings.Contains(got, "(a band from 0: its lower end lies below zero"); cut != said {
			t.Errorf("%s: a band from 0 %v, the note %v:\n%s", line, cut, said, got)
		}
	}
}

// A band whose lower end falls below zero is cut there, and the table
// says so: a user read its flat bottom as a lower bound the model knew.
func TestModelBandFromZeroSaid(t *testing.T) {
	var ks []sweep.KernelStat
	for i, n := range []int{32, 64, 96, 128, 192} {
		x := float64(n)
		noise := []float64{1.8, 0.5, 1.6, 0.6, 1.5}[i]
		ks = append(ks, kstat(fmt.Sprintf("potrf[L] %d", n), 8, noise*1e-9*x*x*x/3+5e-6, 1e-6))
	}
	s := newSession(t)
	s.sweeps = append(s.sweeps, kernelSweep(sweep.KernelsEvent{Kernels: ks}))
	out := &textOut{}
	if err := s.Exec(context.Background(), "model potrf", out); err != nil {
		t.Fatal(err)
	}
	got := out.b.String()
	if !regexp.MustCompile(`\s0 \.\. `).MatchString(got) || !strings.Contains(got, "(a band from 0: its lower end lies below zero, cut there; the model is as uncertain as its prediction at ") {
		t.Errorf("a band from 0 not said to be cut there:\n%s", got)
	}
}

// The families not modelled are listed with the hint to sweep more sizes
// once, at the end: it had been repeated on every line.
func TestNotModelledHintOnce(t *testing.T) {
	hint := "sweep more block sizes, e.g. space b=32,64,128,256,512"
	errs := []error{few("gemm[NT]", 2, hint), few("trsm[RLTN]", 3, hint), errors.New("bcast has no size")}
	var b strings.Builder
	writeNotModelled(&b, errs)
	want := "not modelled: gemm[NT] has 2 sizes; a fit needs at least 5\nnot modelled: trsm[RLTN] has 3 sizes; a fit needs at least 5\nnot modelled: bcast has no size\nto model them: " + hint + "\n"
	if b.String() != want {
		t.Errorf("listed:\n%s\nwant\n%s", b.String(), want)
	}
	if got := joinNotModelled(errs); strings.Count(got, hint) != 1 {
		t.Errorf("joined: %s", got)
	}
	if got, want := joinNotModelled(errs[:1]), "gemm[NT] has 2 sizes; a fit needs at least 5: "+hint; got != want {
		t.Errorf("one error: %s, want %s", got, want)
	}
}

// few is fitFamily's error for a family with n sizes.
func few(family string, n int, hint string) error {
	return &fitError{family: family, few: n, hint: hint, text: fmt.Sprintf("%s has %d size%s; a fit needs at least %d", family, n, plural(n), minModelSizes)}
}

// A barrier's key names no doubles (it moves none: it had read "barrier 0
// doubles"); its family and size are read from the new label and from
// the old one, which older journals hold.
func TestBarrierKey(t *testing.T) {
	k := selective.Key{Op: selective.OpBarrier, Shape: selective.Shape{Size: 4, Hash: 0xabcd}}
	if got := k.String(); got != "barrier on 4 ranks [0000abcd]" {
		t.Errorf("barrier key %q", got)
	}
	for _, key := range []string{k.String(), "barrier 0 doubles on 4 ranks [0000abcd]"} {
		f, sizes, ok := parseKernelKey(key)
		if !ok || f.name != "barrier" || !f.comm || len(sizes) != 2 || sizes[0] != 0 || sizes[1] != 4 {
			t.Errorf("%q: %+v %v %v", key, f, sizes, ok)
		}
	}
}

// 'model' completes the routines and families the last sweep's kernels
// have.
func TestCompleteModelRoutines(t *testing.T) {
	s := newSession(t)
	s.sweeps = append(s.sweeps, kernelSweep(sweep.KernelsEvent{Policy: "eager", Kernels: []sweep.KernelStat{kstat("potrf[L] 64", 40, 3e-5, 1e-6),
		kstat("isend 128 doubles on 2 ranks [0000aaaa] partner +1", 10, 1e-6, 1e-7)}}))
	if got, start := s.Complete("model po", 8); !reflect.DeepEqual(got, []string{"potrf", "potrf[L]"}) || start != 6 {
		t.Errorf("model po: %v at %d", got, start)
	}
	if got, _ := s.Complete("model i", 7); !reflect.DeepEqual(got, []string{"isend"}) {
		t.Errorf("model i: %v", got)
	}
	// plot model completes as model does.
	if got, start := s.Complete("plot model po", 13); !reflect.DeepEqual(got, []string{"potrf", "potrf[L]"}) || start != 11 {
		t.Errorf("plot model po: %v at %d", got, start)
	}
	if got, _ := s.Complete("plot model potrf sw", 19); !reflect.DeepEqual(got, []string{"sweeps=all"}) {
		t.Errorf("plot model potrf sw: %v", got)
	}
}

// A size the model fitted without it misses by more than half is told of:
// as one the model rests on where the model fitted with it follows it,
// and as one that stands apart (an outlier) where it misses it either way
// (a review's allreduce, 437 µs against 83 µs from the model with it,
// had been said to carry the model). One that follows every size has no
// note.
func TestModelRestsOnOneSize(t *testing.T) {
	run := func(odd float64, at ...int) string {
		var ks []sweep.KernelStat
		for i, n := range []int{16, 32, 64, 128, 256, 512, 1024, 2048} {
			v := 1e-6 + 1e-10*float64(n*n*n)*(1+0.02*float64(i%2))
			if slices.Contains(at, n) {
				v *= odd
			}
			ks = append(ks, kstat(fmt.Sprintf("potrf[L] %d", n), 40, v, v/20))
		}
		s := newSession(t)
		s.sweeps = []*Sweep{kernelSweep(sweep.KernelsEvent{Kernels: ks})}
		out := &textOut{}
		if err := s.Exec(context.Background(), "model", out); err != nil {
			t.Fatal(err)
		}
		return out.b.String()
	}
	if got := run(1, 0); strings.Contains(got, "rests on one size") || strings.Contains(got, "misses one size") {
		t.Errorf("a clean n³ family is said to rest on one size:\n%s", got)
	}
	// The largest size 8 times its trend: the model follows the others
	// (n³) and misses it, with it as without it.
	if got := run(8, 512); !strings.Contains(got, "potrf[L]: the model misses one size by more than half, n=512: it predicts ") || strings.Contains(got, "rests on one size") {
		t.Errorf("a family whose largest size is 8 times its trend:\n%s", got)
	}
	// A size in the middle 5 times its trend: the model follows the
	// others and misses it with it as without it. It stands apart; it
	// does not carry the model (it had been said to).
	if got := run(5, 128); !strings.Contains(got, "potrf[L]: the model misses one size by more than half, n=128: it predicts ") || strings.Contains(got, "rests on one size") {
		t.Errorf("a family with one size 5 times its trend in the middle:\n%s", got)
	}
	// Two sizes apart are counted, not one of them called an outlier.
	if got := run(5, 64, 256); !strings.Contains(got, "potrf[L]: the model misses 2 of its 8 sizes by more than half, the most at n=") || strings.Contains(got, "outlier") {
		t.Errorf("a family with two sizes 5 times their trend:\n%s", got)
	}
}

// Families with the same too few sizes are named in one error, not one
// each (a cancelled sweep's six families had repeated it six times).
func TestNotModelledGrouped(t *testing.T) {
	const hint = "sweep more block sizes"
	errs := []error{few("gemm[NT]", 1, hint), few("potrf[L]", 1, hint), errors.New("bcast has no size"), few("trsm[RLTN]", 1, hint), few("syrk[LN]", 3, hint)}
	got := joinNotModelled(errs)
	want := "gemm[NT], potrf[L] and trsm[RLTN] have 1 size each; a fit needs at least 5; bcast has no size; syrk[LN] has 3 sizes; a fit needs at least 5; to model them: sweep more block sizes"
	if got != want {
		t.Errorf("joined:\n got %s\nwant %s", got, want)
	}
	// The list says them on a line each, grouped alike.
	var b strings.Builder
	writeNotModelled(&b, errs)
	if want := "not modelled: gemm[NT], potrf[L] and trsm[RLTN] have 1 size each; a fit needs at least 5\nnot modelled: bcast has no size\nnot modelled: syrk[LN] has 3 sizes; a fit needs at least 5\nto model them: sweep more block sizes\n"; b.String() != want {
		t.Errorf("listed:\n%s\nwant\n%s", b.String(), want)
	}
}

// An allreduce measured at 5 sizes on 2 and on 4 ranks: p takes two
// values, and a fit along a parameter needs three. The model is fitted at
// one p (the larger, on a tie) and says so; a prediction at the other p is
// refused saying why, and one at the model's p is its own. Pooled into one
// derived size instead, p had been ignored, the fit missing each p by up
// to 250%, and the notes had said bytes and p "vary together" and that p
// was 2 at every measured size (a review).
func TestModelHoldsTwoValuedParameter(t *testing.T) {
	var ks []sweep.KernelStat
	for _, n := range []int{512, 1024, 2048, 4096, 8192} {
		for _, p := range []int{2, 4} {
			v := 2e-6 + float64(p)*1e-9*float64(n)
			ks = append(ks, kstat(fmt.Sprintf("allreduce %d doubles on %d ranks [0000%04x]", n, p, p), 20, v, 0.01*v))
		}
	}
	d := collectKernels([]*Sweep{kernelSweep(sweep.KernelsEvent{Kernels: ks})})
	if len(d.families) != 1 {
		t.Fatalf("families %+v", d.families)
	}
	km := fitFamily(d.families[0], "")
	if km.err != nil {
		t.Fatal(km.err)
	}
	notes := strings.Join(km.notes(true), "\n")
	if km.via != "" || len(km.points) != 5 || !strings.Contains(notes, "modelled at p = 4 (p takes two values, and a fit along one needs three: the sizes at p=2 are left out)") ||
		strings.Contains(notes, "vary together") || strings.Contains(notes, "constant at every measured size") {
		t.Errorf("model %v over %d points (via %q):\n%s", km.model, len(km.points), km.via, notes)
	}
	var b strings.Builder
	err := modelPrediction(&b, km, []Arg{{Key: "bytes", Value: "32768", Col: 1}, {Key: "p", Value: "2", Col: 14}})
	if err == nil || !strings.Contains(err.Error(), "allreduce's model is of p=4 alone (p took two values, and a fit along one needs three): give p=4, or measure a third p") {
		t.Errorf("a prediction at p=2: %v", err)
	}
	b.Reset()
	if err := modelPrediction(&b, km, []Arg{{Key: "bytes", Value: "32768", Col: 1}, {Key: "p", Value: "4", Col: 14}}); err != nil {
		t.Errorf("a prediction at p=4: %v", err)
	} else if pred := 2e-6 + 4e-9*4096; !strings.Contains(b.String(), "allreduce at bytes=32768 p=4") {
		t.Errorf("a prediction at p=4 (want near %v s):\n%s", pred, b.String())
	}
}

// Too few sizes in the last sweep, where the session's sweeps together
// have more: model and plot model say that sweeps=all pools them (they
// had said only to sweep more).
func TestModelFewSizesNamesSweepsAll(t *testing.T) {
	s := newSession(t)
	s.sweeps = []*Sweep{kernelSweep(tileRun(1, []int{32, 48, 96})), kernelSweep(tileRun(2, []int{64, 128}))}
	s.sweeps[1].ID = 2
	for _, line := range []string{"model gemm", "plot model gemm " + filepath.Join(t.TempDir(), "m.png")} {
		err := s.Exec(context.Background(), line, &textOut{})
		if err == nil || !strings.Contains(err.Error(), "or add sweeps=all, which pools the sizes of the session's 2 sweeps with kernel statistics") {
			t.Errorf("%s: %v", line, err)
		}
	}
	if err := s.Exec(context.Background(), "model gemm sweeps=all", &textOut{}); err != nil {
		t.Errorf("model gemm sweeps=all: %v", err)
	}
	// A routine only the last sweep ran has no more sizes in the others:
	// no sweeps=all (trmm, in the last of 3 sweeps, had been told it).
	last := s.sweeps[1].Kernels[0].Kernels
	for _, b := range []int{64, 128} {
		last = append(last, kstat(fmt.Sprintf("trmm[LLNN] %dx%d", b, b), 10, 1e-9*float64(b*b*b), -1))
	}
	s.sweeps[1].Kernels[0].Kernels = last
	for _, line := range []string{"model trmm", "plot model trmm " + filepath.Join(t.TempDir(), "t.png")} {
		err := s.Exec(context.Background(), line, &textOut{})
		if err == nil || !strings.Contains(err.Error(), "sweep more block sizes") || strings.Contains(err.Error(), "sweeps=all") {
			t.Errorf("%s, a routine of the last sweep only: %v", line, err)
		}
	}
	// model alone: sweeps=all is said for the families it helps, named.
	if err := s.Exec(context.Background(), "model", &textOut{}); err == nil || !strings.Contains(err.Error(), "with kernel statistics (more sizes of gemm[NT], potrf[L])") {
		t.Errorf("model alone, trmm in the last sweep only: %v", err)
	}
}

// Where k varies alone but m and n only together (512x512xk and
// 1024x256xk, whose flops coincide), the refusal names m and n, not all
// three: it had read "m, n, k vary together" (a review).
func TestModelSaysWhichVaryTogether(t *testing.T) {
	var ks []sweep.KernelStat
	for _, mn := range [][2]int{{512, 512}, {1024, 256}} {
		for _, k := range []int{32, 64, 128} {
			x := 2e-9 * float64(mn[0]*mn[1]*k)
			ks = append(ks, kstat(fmt.Sprintf("gemm[NN] %dx%dx%d", mn[0], mn[1], k), 20, x, 0.02*x))
		}
	}
	d := collectKernels([]*Sweep{kernelSweep(sweep.KernelsEvent{Kernels: ks})})
	km := fitFamily(d.families[0], "")
	if km.err == nil || !strings.Contains(km.err.Error(), "gemm[NN]: m, n never vary alone (no 3 sizes differ in one of them only; k does), and its 6 sizes have 3 distinct flops") {
		t.Errorf("the refusal: %v", km.err)
	}
}

// qr2dGemmSizes are the gemm[NN] sizes rank 0 of qr2d m=2048 n=512 ran
// over b = 16..128 on 2x2 and 4x1: m, n and k vary along lines of a few
// sizes each.
const qr2dGemmSizes = "" +
	"384x16x16 384x32x16 384x32x32 384x64x32 384x64x64 384x128x64 384x128x128 384x256x128 400x48x16 " +
	"400x64x16 400x80x16 400x96x16 416x96x32 416x112x16 416x128x16 416x128x32 416x144x16 416x160x16 " +
	"416x160x32 416x192x32 432x176x16 432x192x16 432x208x16 432x224x16 448x192x64 448x224x32 " +
	"448x240x16 448x256x16 448x256x32 448x256x64 448x272x16 448x288x16 448x288x32 448x320x32 " +
	"448x320x64 448x384x64 464x304x16 464x320x16 464x336x16 464x352x16 480x352x32 480x368x16 " +
	"480x384x16 480x384x32 480x400x16 480x416x16 480x416x32 480x448x32 496x432x16 496x448x16 " +
	"496x464x16 496x480x16 512x384x128 512x448x64 512x480x32 512x496x16 784x16x16 800x16x16 800x32x16 " +
	"800x32x32 816x32x16 816x48x16 832x32x32 832x48x16 832x64x16 832x64x32 832x64x64 848x64x16 " +
	"848x80x16 864x64x32 864x80x16 864x96x16 864x96x32 880x96x16 880x112x16 896x64x64 896x96x32 " +
	"896x112x16 896x128x16 896x128x32 896x128x64 896x128x128 912x128x16 912x144x16 928x128x32 " +
	"928x144x16 928x160x16 928x160x32 944x160x16 944x176x16 960x128x64 960x160x32 960x176x16 " +
	"960x192x16 960x192x32 960x192x64 976x192x16 976x208x16 992x192x32 992x208x16 992x224x16 " +
	"992x224x32 1008x224x16 1008x240x16 1024x128x128 1024x192x64 1024x224x32 1024x240x16"

// Where the multi-parameter search keeps no term of a parameter that
// varies (the constant winning along its few short lines) and the flops
// fit the sizes better, the model is of the flops, saying why: qr2d's
// gemm had been modelled in k alone, 106% SMAPE, most sizes missed by
// 50-91%, its prediction bands far from the sizes measured (a review).
func TestModelFallsBackToFlops(t *testing.T) {
	for seed := range uint64(3) {
		rng := rand.New(rand.NewPCG(seed, 9))
		var ks []sweep.KernelStat
		for _, z := range strings.Fields(qr2dGemmSizes) {
			var m, n, k int
			if _, err := fmt.Sscanf(z, "%dx%dx%d", &m, &n, &k); err != nil {
				t.Fatal(err)
			}
			v := 3e-6 + 2e-11*float64(m*n*k)*(1+0.15*rng.NormFloat64())
			ks = append(ks, kstat("gemm[NN] "+z, 1, v, -1))
		}
		s := newSession(t)
		s.sweeps = []*Sweep{kernelSweep(sweep.KernelsEvent{Kernels: ks})}
		out := &textOut{}
		if err := s.Exec(context.Background(), "model gemm", out); err != nil {
			t.Fatal(err)
		}
		got := out.b.String()
		m := regexp.MustCompile(`gemm\[NN\]: t\(flops\) = \S+ \+ (\S+) \* flops   .*\n  SMAPE ([0-9.]+)%`).FindStringSubmatch(got)
		if m == nil || !strings.Contains(got, "the search in m, n, k kept no term in") {
			t.Fatalf("seed %d: want a model linear in the flops, saying why:\n%s", seed, got)
		}
		// 2e-11·m·n·k is 1e-11 a flop (2mnk).
		if c, smape := atof(t, m[1]), atof(t, m[2]); math.Abs(c/1e-11-1) > 0.1 || smape > 20 {
			t.Errorf("seed %d: %g s a flop at %g%% SMAPE, want about 1e-11 within 10%%, under 20%%:\n%s", seed, c, smape, got)
		}
	}
}

// The block sizes 'model' suggests are the sweep's own with more below and
// above (powers of two, at least 8 and below n), enough for a fit: the
// hint had named 32..512 whatever was swept.
func TestSizeHintFromTheSweep(t *testing.T) {
	params := []sweep.Param{{Name: "n", Kind: sweep.Int, Default: 1024, Min: 1, Max: 65536}, {Name: "b", Kind: sweep.Int, Default: 64, Min: 1, Max: 4096}}
	sweepOf := func(n int, bs ...int) *Sweep {
		// As the agent writes it and the journal keeps it: an empty list
		// of other ranks' kernels is [], not left out.
		b, err := json.Marshal(sweep.KernelsEvent{Others: []sweep.OtherKernel{}})
		if err != nil {
			t.Fatal(err)
		}
		var ev sweep.KernelsEvent
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatal(err)
		}
		sw := &Sweep{Kernels: []sweep.KernelsEvent{ev}}
		for _, b := range bs {
			sw.Configs = append(sw.Configs, sweep.NewConfig(params, map[string]any{"n": n, "b": b}))
		}
		return sw
	}
	for _, c := range []struct {
		sw   *Sweep
		want string
	}{
		{sweepOf(1024, 16, 32, 64, 128, 256), "sweep more block sizes, e.g. space b=8,16,32,64,128,256,512"},
		{sweepOf(4096, 64), "sweep more block sizes, e.g. space b=16,32,64,128,256"},
		{sweepOf(256, 64, 128), "sweep more block sizes, e.g. space b=8,16,32,64,128"},
	} {
		if got := sizeHint(c.sw); got != c.want {
			t.Errorf("%q, want %q", got, c.want)
		}
	}
	old := sweepOf(1024, 64)
	old.Kernels[0].Others = nil // a journal from before the other ranks' kernels
	if got := sizeHint(old); !strings.HasSuffix(got, "(the sizes are rank 0's: one only other ranks ran is not among them)") {
		t.Errorf("an older journal's hint: %q", got)
	}
}
