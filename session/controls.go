package session

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/internal/selective/policy"
	"github.com/approxtune/approxtune/sweep"
)

// ControlsOutput is implemented by outputs that can show interactive
// controls (the Jupyter kernel's, whose front end draws them as widgets).
// 'controls' finds it by a type assertion, as net/http's optional
// interfaces are found; other outputs get a line naming the commands to
// type instead.
type ControlsOutput interface {
	Output
	// Controls shows the controls c describes. What the user then does
	// with them runs the commands of c's Command methods through Exec.
	Controls(c *Controls) error
}

// Controls describes the controls of a session's state: what 'controls'
// shows, and what a front end refreshes them from after a command.
// Every control stands for a command: changing one runs that command
// (see the Command methods), exactly as if it were typed.
type Controls struct {
	// Workload is the workload whose parameters Params are.
	Workload string
	// Policy chooses among all the policies (policy NAME,...).
	Policy Choice
	// Tolerance is the powers of two 2^0..2^-10 and the tolerances the
	// state holds besides, descending (the tightest last), with those the
	// state holds selected: a sweep makes a run per selected tolerance.
	// A front end may show it as a slider at the tightest selected, which
	// sets one tolerance (tolerance T).
	Tolerance Choice
	// Grid chooses among the grids of the rank count and those of the
	// space (grid G,...); nil when the workload has no grid parameter.
	Grid *Choice
	// Params are the workload's other parameters, with their values as
	// 'space' takes them (space NAME=V1,V2).
	Params []ParamControl
}

// Choice is a control that selects some of its options.
type Choice struct {
	// Name is the control's name and the command it runs.
	Name string
	// Options are the labels of the options, as the command takes them.
	Options []string
	// Selected are the indexes of the options the state holds, ascending.
	Selected []int
}

// Command is the command line that selects the options at indexes sel
// ("policy conditional,eager"), in the options' order. Nothing selected
// is the bare command, which shows the setting (the kernel's controls take
// an empty choice for an error, and put the control back).
func (c Choice) Command(sel []int) string {
	sel = append([]int(nil), sel...)
	sort.Ints(sel)
	var labels []string
	for i, x := range sel {
		if x >= 0 && x < len(c.Options) && (i == 0 || x != sel[i-1]) {
			labels = append(labels, c.Options[x])
		}
	}
	if len(labels) == 0 {
		return c.Name
	}
	return c.Name + " " + strings.Join(labels, ",")
}

// ParamControl is a workload parameter's values as text ("64,128").
type ParamControl struct {
	Name  string
	Value string
}

// Command is the command line that sets the parameter to the values
// written in value ("space b=64,128"); spaces in value are dropped. A
// value holding a quote or '#' cannot be typed as one word: that is an
// error.
func (p ParamControl) Command(value string) (string, error) {
	v := strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, value)
	if strings.ContainsAny(v, "\"#") {
		return "", &Error{Msg: p.Name + ": a value holds no quote and no '#': write values like 64,128"}
	}
	return "space " + p.Name + "=" + v, nil
}

// Commands are the commands that set what the controls show: one per
// choice, and one 'space' for the parameters.
func (c *Controls) Commands() []string {
	cmds := []string{c.Policy.Command(c.Policy.Selected), c.Tolerance.Command(c.Tolerance.Selected)}
	if c.Grid != nil {
		cmds = append(cmds, c.Grid.Command(c.Grid.Selected))
	}
	if len(c.Params) > 0 {
		var kv []string
		for _, p := range c.Params {
			kv = append(kv, p.Name+"="+p.Value)
		}
		cmds = append(cmds, "space "+strings.Join(kv, " "))
	}
	return cmds
}

// Typed is the commands to type instead of using the controls, quoted,
// ending with the sweeps: 'policy ...', 'tolerance ...', ..., then
// 'evaluate' or 'tune' (an interrupt cancels).
func (c *Controls) Typed() string {
	var q []string
	for _, cmd := range c.Commands() {
		q = append(q, "'"+cmd+"'")
	}
	return strings.Join(q, ", ") + ", then 'evaluate' or 'tune' (an interrupt cancels)"
}

// Text is what 'controls' prints where controls cannot be shown.
func (c *Controls) Text() string {
	return "controls need a Jupyter front end with widgets (Notebook, JupyterLab); here, type the commands they run: " + c.Typed()
}

// Controls describes the controls of the present state.
func (s *Session) Controls() *Controls {
	st := s.st
	c := &Controls{Workload: st.Workload}
	var names []string
	for _, p := range policy.All() {
		names = append(names, p.Name())
	}
	c.Policy = choice("policy", names, st.Policies)

	ts := append([]float64(nil), st.Tolerances...)
	for e := 0; e >= -10; e-- {
		ts = append(ts, math.Ldexp(1, e))
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(ts)))
	var tlabels, tsel []string
	for i, t := range ts {
		if i == 0 || t != ts[i-1] {
			tlabels = append(tlabels, format.Tolerance(t))
		}
	}
	for _, t := range st.Tolerances {
		tsel = append(tsel, format.Tolerance(t))
	}
	c.Tolerance = choice("tolerance", tlabels, tsel)

	w, ok := s.schemas().find(st.Workload)
	if !ok {
		return c
	}
	params := append([]sweep.Param(nil), w.Params...)
	if w.Name == sweep.ProgramWorkload {
		// A program's parameters come from a map: give them an order.
		sort.Slice(params, func(i, j int) bool { return params[i].Name < params[j].Name })
	}
	for _, p := range params {
		vals, set := st.Space[p.Name]
		if !set {
			vals = []any{p.Default}
		}
		if p.Name == "grid" && p.Kind == sweep.Grid {
			var opts, sel []string
			for _, g := range grids(st.Ranks, max(p.Dims, 2)) {
				opts = append(opts, g.String())
			}
			for _, v := range vals {
				sel = append(sel, fmtValue(v))
			}
			g := choice("grid", opts, sel)
			c.Grid = &g
			continue
		}
		c.Params = append(c.Params, ParamControl{Name: p.Name, Value: fmtValues(vals)})
	}
	return c
}

// choice makes a Choice of options with the labels in sel selected;
// selected labels that are not options are added to them.
func choice(name string, options, sel []string) Choice {
	c := Choice{Name: name, Options: append([]string(nil), options...)}
	for _, s := range sel {
		i := slices.Index(c.Options, s)
		if i < 0 {
			c.Options = append(c.Options, s)
			i = len(c.Options) - 1
		}
		if !slices.Contains(c.Selected, i) {
			c.Selected = append(c.Selected, i)
		}
	}
	sort.Ints(c.Selected)
	return c
}

// grids lists the grids of dims dimensions with n processes, the first
// dimension ascending (1x4, 2x2, 4x1).
func grids(n, dims int) []sweep.GridShape {
	if dims == 1 {
		return []sweep.GridShape{{n}}
	}
	var out []sweep.GridShape
	for d := 1; d <= n; d++ {
		if n%d != 0 {
			continue
		}
		for _, rest := range grids(n/d, dims-1) {
			out = append(out, append(sweep.GridShape{d}, rest...))
		}
	}
	return out
}

// Sweeping reports whether a sweep is running, from its start to its end
// (the wait for an agent included). It may be called from any goroutine.
func (s *Session) Sweeping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancels != nil
}

// cmdControls shows the controls through a ControlsOutput, or prints the
// commands to type. The transcript keeps the text either way, so an
// exported notebook shows it.
func cmdControls(s *Session, ctx context.Context, c *Command, out Output) error {
	if err := noArgs(c); err != nil {
		return err
	}
	cs := s.Controls()
	if co, ok := controlsOutput(out); ok {
		if err := co.Controls(cs); err != nil {
			return err
		}
		recordText(out, cs.Text())
		return nil
	}
	out.Print(cs.Text())
	return nil
}

// controlsOutput finds the ControlsOutput under the recorder Exec runs a
// command with.
func controlsOutput(out Output) (ControlsOutput, bool) {
	switch r := out.(type) {
	case *recorder:
		out = r.out
	case figureRecorder:
		out = r.out
	}
	co, ok := out.(ControlsOutput)
	return co, ok
}

// recordText keeps text in the transcript of the command whose output is
// out, without printing it.
func recordText(out Output, text string) {
	var r *recorder
	switch o := out.(type) {
	case *recorder:
		r = o
	case figureRecorder:
		r = o.recorder
	default:
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, OutputEvent{Text: text})
}
