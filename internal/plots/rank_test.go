package plots

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// Rank puts the first row on top, labels the rows, picks a time unit that
// keeps the ticks short, and keeps every interval and minimum in range.
func TestRankMapping(t *testing.T) {
	rows := []RankRow{
		{Label: "b=64", Class: 1, Score: 0.97, Mean: 0.0102, Lo: 0.0100, Hi: 0.0104, Min: 0.0099},
		{Label: "b=128", Class: 1, Score: 0.91, Mean: 0.0103, Lo: 0.0101, Hi: 0.0105, Min: 0.0100},
		{Label: "b=32", Class: 2, Score: 0, Mean: 0.0125, Lo: 0.0120, Hi: 0.0131, Min: math.NaN()},
	}
	p, err := Rank(rows, "Performance classes", "time (s): mean")
	if err != nil {
		t.Fatal(err)
	}
	if p.X.Label.Text != "time (ms): mean" {
		t.Errorf("x label %q, want the unit ms", p.X.Label.Text)
	}
	// In ms: 9.9 (b=64's minimum) to 13.1 (b=32's interval), padded.
	if !(p.X.Min < 9.9 && p.X.Min > 9.5) || !(p.X.Max > 13.1 && p.X.Max < 13.5) {
		t.Errorf("x range [%v, %v], want just around [9.9, 13.1]", p.X.Min, p.X.Max)
	}
	if p.Y.Min != -0.5 || p.Y.Max != 2.5 {
		t.Errorf("y range [%v, %v], want [-0.5, 2.5]", p.Y.Min, p.Y.Max)
	}
	ticks := p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max)
	if len(ticks) != 3 || ticks[0].Value != 2 || ticks[0].Label != "b=64" || ticks[2].Value != 0 || ticks[2].Label != "b=32" {
		t.Errorf("y ticks %v, want b=64 on top (2) and b=32 at the bottom (0)", ticks)
	}
	if got := rankNote(rows[0]); got != "class 1 (best)  score 0.97" {
		t.Errorf("note %q", got)
	}
	if got := rankNote(rows[2]); got != "class 2  score 0.00" {
		t.Errorf("note %q", got)
	}
	svg, err := Encode(p, "svg")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"class 1 (best)  score 0.91", "class 2  score 0.00", "b=128"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("svg has no %q", want)
		}
	}
}

// No rows, equal times and a bad class: no panic, and an error for the
// bad class.
func TestRankDegenerate(t *testing.T) {
	p, err := Rank(nil, "Performance classes", "time (s)")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(p.Title.Text, "(no configurations)") {
		t.Errorf("title %q", p.Title.Text)
	}
	if _, err := Encode(p, "png"); err != nil {
		t.Fatal(err)
	}
	same := []RankRow{{Label: "a", Class: 1, Mean: 2, Lo: 2, Hi: 2, Min: 2}, {Label: "b", Class: 1, Mean: 2, Lo: 2, Hi: 2, Min: math.NaN()}}
	if p, err = Rank(same, "t", "time (s)"); err != nil {
		t.Fatal(err)
	}
	if !(p.X.Max > p.X.Min) {
		t.Errorf("equal times: x range [%v, %v]", p.X.Min, p.X.Max)
	}
	if _, err := Encode(p, "png"); err != nil {
		t.Fatal(err)
	}
	if _, err := Rank([]RankRow{{Label: "x", Class: 0}}, "t", "time (s)"); err == nil || !strings.Contains(err.Error(), "class 0") {
		t.Errorf("class 0: %v", err)
	}
}
