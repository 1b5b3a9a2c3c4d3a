package analysis

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// powerLawRun simulates two routines on 8 ranks, 100 executions each per
// rank: durations a·size^b with log-normal noise (σ = 0.1), sizes
// log-uniform over four decades. Rank 5 is slowed down 3x during a burst,
// its executions 40..64 (the paper's "short temporal perturbations").
// planted[i] tells whether execution i was slowed.
func powerLawRun(rng *rand.Rand) (execs []Execution, planted []bool) {
	type law struct {
		name string
		a, b float64
	}
	for _, r := range []law{{"dgemm", 2e-11, 1.0}, {"dtrsm", 5e-9, 0.8}} {
		for rank := range 8 {
			for k := range 100 {
				size := math.Pow(10, 6+4*rng.Float64())
				d := r.a * math.Pow(size, r.b) * math.Exp(0.1*rng.NormFloat64())
				slow := rank == 5 && k >= 40 && k < 65
				if slow {
					d *= 3
				}
				execs = append(execs, Execution{Routine: r.name, Rank: rank, Size: size, Duration: d})
				planted = append(planted, slow)
			}
		}
	}
	return execs, planted
}

// TestDetectAnomaliesPlanted: executions slowed 3x on one rank are found
// with precision and recall >= 0.9, and the fits recover the power laws.
func TestDetectAnomaliesPlanted(t *testing.T) {
	for seed := range uint64(5) {
		rng := rand.New(rand.NewPCG(seed, 2))
		execs, planted := powerLawRun(rng)
		rep, err := DetectAnomalies(execs, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		tp, fp := 0, 0
		for _, a := range rep.Anomalies {
			if planted[a.Index] {
				tp++
			} else {
				fp++
			}
			if a.Execution != execs[a.Index] || !(a.Duration > a.Upper && a.Upper > a.Expected) ||
				math.Abs(a.Ratio-a.Duration/a.Expected) > 1e-12*a.Ratio {
				t.Fatalf("inconsistent anomaly %+v", a)
			}
		}
		nPlanted := 0
		for _, p := range planted {
			if p {
				nPlanted++
			}
		}
		precision := float64(tp) / float64(tp+fp)
		recall := float64(tp) / float64(nPlanted)
		t.Logf("seed %d: %d flagged, %d of %d planted; precision %.3f recall %.3f", seed, tp+fp, tp, nPlanted, precision, recall)
		if precision < 0.9 || recall < 0.9 {
			t.Errorf("seed %d: precision %.3f recall %.3f, want both >= 0.9", seed, precision, recall)
		}
		if len(rep.Fits) != 2 || rep.Fits[0].Routine != "dgemm" || rep.Fits[1].Routine != "dtrsm" {
			t.Fatalf("fits %+v, want dgemm and dtrsm", rep.Fits)
		}
		for i, b := range []float64{1.0, 0.8} {
			if f := rep.Fits[i]; math.Abs(f.Slope-b) > 0.03 || f.N != 800 {
				t.Errorf("seed %d: %s slope %.3f over %d executions, want %.1f over 800", seed, f.Routine, f.Slope, f.N, b)
			}
		}
		for k := 1; k < len(rep.Anomalies); k++ {
			if rep.Anomalies[k].Ratio > rep.Anomalies[k-1].Ratio {
				t.Fatal("anomalies not ordered by ratio")
			}
		}
	}
}

// TestPredictionIntervalCoverage: without anomalies the 95% interval's
// upper bound is exceeded by about 2.5% of new executions, at sizes in the
// middle and at the edge of the fitted range (where the leverage term
// widens it).
func TestPredictionIntervalCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	const a, b, sigma = 1e-9, 0.9, 0.2
	above, total := 0, 0
	for range 200 {
		var execs []Execution
		for range 12 {
			size := math.Pow(10, 5+3*rng.Float64())
			execs = append(execs, Execution{Routine: "k", Size: size, Duration: a * math.Pow(size, b) * math.Exp(sigma*rng.NormFloat64())})
		}
		rep, err := DetectAnomalies(execs, 0.95)
		if err != nil {
			t.Fatal(err)
		}
		f := rep.Fits[0]
		for _, size := range []float64{1e5, 1e6, 1e8} {
			draw := func() float64 { return a * math.Pow(size, b) * math.Exp(sigma*rng.NormFloat64()) }
			above += 20 - within(20, draw, 0, f.Upper(size, 0.95))
			total += 20
		}
	}
	share := float64(above) / float64(total)
	t.Logf("share above the 95%% upper bound: %.4f", share)
	if share < 0.015 || share > 0.035 {
		t.Errorf("share above the 95%% upper bound %.4f, want about 0.025", share)
	}
}

func TestDetectAnomaliesConstantSizeAndSkips(t *testing.T) {
	// 30 barriers of one size around 1 s, the 8th one 3 s; a routine run
	// twice is too rare to fit.
	var execs []Execution
	for i := range 30 {
		d := 1 + 0.02*math.Sin(float64(i))
		if i == 7 {
			d = 3
		}
		execs = append(execs, Execution{Routine: "barrier", Size: 8, Duration: d})
	}
	execs = append(execs, Execution{Routine: "rare", Size: 8, Duration: 1}, Execution{Routine: "rare", Size: 9, Duration: 1})
	rep, err := DetectAnomalies(execs, 0.95)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Skipped) != 1 || rep.Skipped[0] != "rare" {
		t.Errorf("skipped %v, want [rare]", rep.Skipped)
	}
	if len(rep.Fits) != 1 || !rep.Fits[0].Constant || rep.Fits[0].Slope != 0 {
		t.Errorf("fits %+v, want one constant fit", rep.Fits)
	}
	if len(rep.Anomalies) != 1 || rep.Anomalies[0].Index != 7 || math.Abs(rep.Anomalies[0].Ratio-3) > 0.15 {
		t.Errorf("anomalies %+v, want execution 7, about 3x", rep.Anomalies)
	}
	for _, c := range []struct {
		execs []Execution
		level float64
		want  string
	}{
		{execs, 1, "(0, 1)"},
		{[]Execution{{Routine: "x", Size: 0, Duration: 1}}, 0.95, "size 0"},
		{[]Execution{{Routine: "x", Size: 1, Duration: -1}}, 0.95, "duration -1"},
	} {
		if _, err := DetectAnomalies(c.execs, c.level); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one naming %q", err, c.want)
		}
	}
}

// Executions with no spread about their fit (one duration at one size, a
// small kernel timed at the clock's resolution; an exact power law) are
// none of them anomalous: their interval has no width, and compared as
// durations, exp(log d) rounding one ulp below d had flagged every one.
func TestNoSpreadNoAnomaly(t *testing.T) {
	for _, d := range []float64{1e-6, 3e-6, 0.1, 0.3, 0.7} {
		var same, law []Execution
		for i := range 100 {
			same = append(same, Execution{Routine: "tiny", Size: 64, Duration: d})
			s := float64(8 + i)
			law = append(law, Execution{Routine: "gemm", Size: s, Duration: d * s * s})
		}
		for _, execs := range [][]Execution{same, law} {
			rep, err := DetectAnomalies(execs, 0.95)
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Anomalies) > 0 {
				a := rep.Anomalies[0]
				t.Errorf("%s, no spread, %g s: %d of 100 anomalous (duration %.17g above %.17g)", execs[0].Routine, d, len(rep.Anomalies), a.Duration, a.Upper)
			}
		}
	}
}
