package session

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The controls of the default state, and of one with tolerances that are
// not powers of two and a 3D grid.
func TestControlsDescription(t *testing.T) {
	s := newSession(t)
	c := s.Controls()
	if got := fmt.Sprint(c.Policy.Options, c.Policy.Selected); got != "[conditional local online apriori eager] [0 4]" {
		t.Errorf("policy %s", got)
	}
	if got := fmt.Sprint(c.Tolerance.Options, c.Tolerance.Selected); got != "[2^0 2^-1 2^-2 2^-3 2^-4 2^-5 2^-6 2^-7 2^-8 2^-9 2^-10] [1 3 5]" {
		t.Errorf("tolerance %s", got)
	}
	if c.Grid == nil || fmt.Sprint(c.Grid.Options, c.Grid.Selected) != "[1x4 2x2 4x1] [1]" {
		t.Errorf("grid %+v", c.Grid)
	}
	if !reflect.DeepEqual(c.Params, []ParamControl{{"n", "1024"}, {"b", "128"}}) || c.Workload != "summa" {
		t.Errorf("params %+v of %s", c.Params, c.Workload)
	}
	want := []string{"policy conditional,eager", "tolerance 2^-1,2^-3,2^-5", "grid 2x2", "space n=1024 b=128"}
	if got := c.Commands(); !reflect.DeepEqual(got, want) {
		t.Errorf("commands %q", got)
	}

	for _, line := range []string{"workload cholesky3d b=32,64", "ranks 8", "tolerance 0,0.1,2^-12", "policy eager,online"} {
		if err := s.Exec(context.Background(), line, &textOut{}); err != nil {
			t.Fatal(err)
		}
	}
	c = s.Controls()
	if got := fmt.Sprint(c.Tolerance.Options, c.Tolerance.Selected); got != "[2^0 2^-1 2^-2 2^-3 0.1 2^-4 2^-5 2^-6 2^-7 2^-8 2^-9 2^-10 2^-12 0] [4 12 13]" {
		t.Errorf("tolerance %s", got)
	}
	if got := c.Tolerance.Command(c.Tolerance.Selected); got != "tolerance 0.1,2^-12,0" {
		t.Errorf("tolerance command %q", got)
	}
	if got := c.Policy.Command(c.Policy.Selected); got != "policy online,eager" {
		t.Errorf("policy command %q", got)
	}
	if c.Grid == nil || len(c.Grid.Options) != 10 || c.Grid.Options[c.Grid.Selected[0]] != "2x2x2" {
		t.Errorf("3D grids of 8 ranks %+v", c.Grid)
	}
	if got := fmt.Sprint(c.Params); got != "[{n 1024} {b 32,64} {strategy 1}]" {
		t.Errorf("params %s", got)
	}
	// Each command sets what it says.
	for _, cmd := range c.Commands() {
		if err := s.Exec(context.Background(), cmd, &textOut{}); err != nil {
			t.Errorf("%q: %v", cmd, err)
		}
	}
	if !reflect.DeepEqual(s.Controls(), c) {
		t.Errorf("the commands changed the controls:\n%+v\n%+v", s.Controls(), c)
	}
}

func TestControlsCommands(t *testing.T) {
	ch := Choice{Name: "grid", Options: []string{"1x4", "2x2", "4x1"}}
	for _, tc := range []struct {
		sel  []int
		want string
	}{{[]int{2, 0}, "grid 1x4,4x1"}, {[]int{1, 1, 7, -1}, "grid 2x2"}, {nil, "grid"}} {
		if got := ch.Command(tc.sel); got != tc.want {
			t.Errorf("Command(%v) = %q, want %q", tc.sel, got, tc.want)
		}
	}
	p := ParamControl{Name: "b"}
	if got, err := p.Command(" 64, 128\n"); got != "space b=64,128" || err != nil {
		t.Errorf("Command: %q %v", got, err)
	}
	for _, bad := range []string{"6#4", `"64"`} {
		if _, err := p.Command(bad); err == nil || !strings.Contains(err.Error(), "a value holds no quote and no '#'") {
			t.Errorf("Command(%q): %v", bad, err)
		}
	}
}

// controlsOut is an Output that shows controls, as the kernel's does.
type controlsOut struct {
	textOut
	got *Controls
}

func (o *controlsOut) Controls(c *Controls) error {
	o.got = c
	return nil
}

// 'controls' shows the controls on an output that can, and prints the
// commands to type on one that cannot; the transcript keeps that text.
func TestControlsVerb(t *testing.T) {
	s := newSession(t)
	plain := &textOut{}
	if err := s.Exec(context.Background(), "controls", plain); err != nil {
		t.Fatal(err)
	}
	want := "controls need a Jupyter front end with widgets (Notebook, JupyterLab); here, type the commands they run: " +
		"'policy conditional,eager', 'tolerance 2^-1,2^-3,2^-5', 'grid 2x2', 'space n=1024 b=128', then 'evaluate' or 'tune' (an interrupt cancels)\n"
	if plain.b.String() != want {
		t.Errorf("printed %q", plain.b.String())
	}
	co := &controlsOut{}
	if err := s.Exec(context.Background(), "controls", co); err != nil {
		t.Fatal(err)
	}
	if co.got == nil || co.b.Len() != 0 || !reflect.DeepEqual(co.got, s.Controls()) {
		t.Errorf("shown %+v, printed %q", co.got, co.b.String())
	}
	tr := s.Transcript()
	if len(tr) != 2 || tr[1].Line != "controls" || len(tr[1].Events) != 1 || tr[1].Events[0].Text+"\n" != want {
		t.Errorf("transcript %+v", tr)
	}
	if err := s.Exec(context.Background(), "controls now", plain); err == nil || !strings.Contains(err.Error(), "controls takes no arguments") {
		t.Errorf("controls now: %v", err)
	}
	if s.Sweeping() {
		t.Error("Sweeping with no sweep")
	}
	if h, ok := HelpFor("controls"); !ok || !strings.Contains(h, "evaluate, tune and cancel") || !strings.Contains(h, "tolerance (a slider over") {
		t.Errorf("help controls: %q", h)
	}
}
