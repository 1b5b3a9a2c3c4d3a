package plots

import (
	"bytes"
	"image/png"
	"math"
	"strings"
	"testing"
)

// The axes are log10 of the values, labelled with the values; a band or an
// interval reaching 0 is cut at the floor, not lost or NaN.
func TestModelMapping(t *testing.T) {
	s := ModelSeries{Label: "measured", ModelLabel: "model"}
	for _, x := range []float64{1e3, 1e4, 1e5, 1e6} {
		s.Points = append(s.Points, ModelPoint{X: x, Mean: x * 1e-9, Lo: -1, Hi: x * 1.2e-9})
	}
	for k := range 11 {
		x := math.Pow(10, 3+0.3*float64(k))
		s.Curve = append(s.Curve, ModelValue{X: x, Y: x * 1e-9, Lo: -x * 1e-9, Hi: x * 2e-9})
	}
	p, err := Model("Performance model of gemm[NT]", "flops", []ModelSeries{s})
	if err != nil {
		t.Fatal(err)
	}
	// x: 1e3/1.25 .. 10^6 · 1.25 (the curve's end); y: half the least
	// positive value (the means', 1e-6) .. twice the greatest (the band's).
	if math.Abs(p.X.Min-math.Log10(800)) > 1e-12 || math.Abs(p.X.Max-math.Log10(math.Pow(10, 6))-math.Log10(1.25)) > 1e-12 {
		t.Errorf("x range [%g, %g]", p.X.Min, p.X.Max)
	}
	if math.Abs(p.Y.Min-math.Log10(0.5e-6)) > 1e-12 || math.Abs(p.Y.Max-math.Log10(4*math.Pow(10, 6)*1e-9)) > 1e-12 {
		t.Errorf("y range [%g, %g]", p.Y.Min, p.Y.Max)
	}
	var labels []string
	for _, tk := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "1 µs 10 µs 100 µs 1 ms" {
		t.Errorf("time ticks %q", got)
	}
	labels = labels[:0]
	for _, tk := range p.X.Tick.Marker.Ticks(math.Log10(300), math.Log10(6000)) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, " "); got != "500 1k 2k 5k" {
		t.Errorf("size ticks over one decade %q", got)
	}
	b, err := Encode(p, "png")
	if err != nil {
		t.Fatal(err)
	}
	if img, err := png.Decode(bytes.NewReader(b)); err != nil || img.Bounds().Dx() != 800 {
		t.Errorf("png: %v", err)
	}
	empty, err := Model("Performance model of x", "n", nil)
	if err != nil || !strings.HasSuffix(empty.Title.Text, "(nothing to draw)") {
		t.Errorf("empty: %v %q", err, empty.Title.Text)
	}
	if _, err := Encode(empty, "svg"); err != nil {
		t.Error(err)
	}
}

func TestDurationAndSizes(t *testing.T) {
	for v, want := range map[float64]string{2.7373e-6: "2.74 µs", 83.84e-6: "83.8 µs", 1.2e-3: "1.2 ms", 1.049: "1.05 s",
		0: "0", 4.2e-8: "42 ns", math.NaN(): "-", 1e-3: "1 ms"} {
		if got := Duration(v); got != want {
			t.Errorf("Duration(%g) = %q, want %q", v, got, want)
		}
	}
	for v, want := range map[float64]string{512: "512", 65536: "65.5k", 1e6: "1M", 1.07e9: "1.07G", 2e11: "200G"} {
		if got := siSize(v); got != want {
			t.Errorf("siSize(%g) = %q, want %q", v, got, want)
		}
	}
}
