package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompareMain pairs two groups of sweeps, one given as a session
// journal, and reports the second group's timed runs over the first's.
func TestCompareMain(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, ref, sel float64, journal bool) string {
		lines := []string{
			fmt.Sprintf(`{"type":"result","v":1,"index":0,"policy":"eager","tolerance":0.5,"reference_s":[%g,%g],"selective_s":%g}`, ref, ref*1.02, sel),
			fmt.Sprintf(`{"type":"result","v":1,"index":0,"policy":"eager","tolerance":0.125,"selective_s":%g}`, sel),
			`{"type":"summary","v":1,"mode":"evaluate","policy":"eager","tolerance":0.5}`,
		}
		if journal {
			for i, l := range lines {
				lines[i] = `{"t":"x","kind":"event","sweep":1,"event":` + l + `}`
			}
			lines = append([]string{`{"t":"x","kind":"sweep","sweep":1}`}, append(lines, `{"t":"x","kind":"end","sweep":1,"status":"done"}`)...)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := []string{write("a1", 1, 0.5, false), write("a2", 1, 0.5, true)}
	b := []string{write("b1", 1.1, 0.5, true), write("b2", 1.1, 0.5, false)}
	var out bytes.Buffer
	if err := compareMain(a, b, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{"| full runs | 1.01 ± 0.00 | 1.11 ± 0.00 | +10.0% (+10.0% to +10.0%) |", "| selective runs | 1.00 ± 0.00 | 1.00 ± 0.00 | +0.0%", "2 pairs of sweeps; noise floors 2.0% to 2.0%"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if err := compareMain(a, b[:1], &out); err == nil || !strings.Contains(err.Error(), "as many sweeps") {
		t.Errorf("unequal groups: got %v", err)
	}
}
