package session

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/approxtune/approxtune/internal/protocol"
	"github.com/approxtune/approxtune/internal/selective/policy"
	"github.com/approxtune/approxtune/internal/workloads/catalog"
	"github.com/approxtune/approxtune/sweep"
)

// State is what the commands have set: the workload, its space, and how to sweep it.
type State struct {
	Workload   string           `json:"workload"`
	Space      map[string][]any `json:"space"` // parameter -> values (canonical: int, sweep.GridShape, string)
	Policies   []string         `json:"policies"`
	Tolerances []float64        `json:"tolerances"`
	Confidence float64          `json:"confidence"`
	Reps       int              `json:"reference_reps"`
	Ranks      int              `json:"ranks"`
	Trace      bool             `json:"trace,omitempty"`  // selective runs send their timelines ('trace on')
	Models     bool             `json:"models,omitempty"` // kernels never measured are predicted from models ('models on')
	// Messages is sweep.MessagesRun where selective runs run every
	// message ('messages run'), "" where they may skip them.
	Messages sweep.Messages `json:"messages,omitempty"`
	Deadline Deadline       `json:"deadline"` // when a sweep is called hung ('deadline')
	// Program, when set, is the user's program the sweeps run instead of
	// a built-in workload (Workload is then sweep.ProgramWorkload).
	Program *sweep.Program `json:"program,omitempty"`
	// Launcher is how the session starts its agents ('launcher'); nil is
	// this machine's mpirun.
	Launcher *Launcher `json:"launcher,omitempty"`
	// SlurmSet is the Slurm launcher's options while 'launcher local' is
	// on: a later 'launcher slurm' takes them back, also in a reopened
	// session.
	SlurmSet *Launcher `json:"slurm_set,omitempty"`
}

// DefaultState is where a session starts: SUMMA's defaults, conditional and
// eager, three tolerances, 4 ranks.
func DefaultState() State {
	return State{Workload: "summa", Space: map[string][]any{}, Policies: []string{policy.Conditional{}.Name(), policy.Eager{}.Name()},
		Tolerances: []float64{0.5, 0.125, 0.03125}, Confidence: 0.95, Reps: 3, Ranks: 4}
}

func (s State) clone() State {
	c := s
	c.Space = map[string][]any{}
	for k, v := range s.Space {
		c.Space[k] = append([]any(nil), v...)
	}
	c.Policies = append([]string(nil), s.Policies...)
	c.Tolerances = append([]float64(nil), s.Tolerances...)
	c.Launcher = s.Launcher.clone()
	c.SlurmSet = s.SlurmSet.clone()
	return c
}

// Spec builds the sweep spec for a mode.
func (s State) Spec(mode sweep.Mode) *sweep.Spec {
	sp := &sweep.Spec{Workload: s.Workload, Space: map[string]json.RawMessage{}, Confidence: s.Confidence,
		ReferenceReps: s.Reps, Mode: mode, Kernels: true, Trace: s.Trace, Models: s.Models,
		Messages: s.Messages}
	for k, vs := range s.Space {
		sp.Space[k] = raw(vs)
	}
	if s.Program != nil {
		p := *s.Program
		sp.Program, sp.Kernels, sp.Trace = &p, false, false
	}
	if mode != sweep.ModeReference {
		sp.Policies = append([]string(nil), s.Policies...)
		for _, t := range s.Tolerances {
			sp.Tolerances = append(sp.Tolerances, sweep.Tolerance(t))
		}
	}
	return sp
}

// schemaSet holds the workloads a session can validate against.
type schemaSet []protocol.Workload

func (ss schemaSet) find(name string) (protocol.Workload, bool) {
	for _, w := range ss {
		if w.Name == name {
			return w, true
		}
	}
	return protocol.Workload{}, false
}

func (ss schemaSet) names() []string {
	var n []string
	for _, w := range ss {
		n = append(n, w.Name)
	}
	sort.Strings(n)
	return n
}

func param(w protocol.Workload, name string) (sweep.Param, bool) {
	for _, p := range w.Params {
		if p.Name == name {
			return p, true
		}
	}
	return sweep.Param{}, false
}

func paramNames(w protocol.Workload) string {
	var n []string
	for _, p := range w.Params {
		n = append(n, p.Name)
	}
	return strings.Join(n, ", ")
}

// needsProcs finds, in a validation error, the process count a grid needs
// beyond the agent's ranks.
var needsProcs = regexp.MustCompile(`needs (\d+) processes, the agent has \d+`)

// intRange is a range of integers, as "32..128".
var intRange = regexp.MustCompile(`^(-?[0-9]+)\.\.(-?[0-9]+)$`)

// rangeExample is range r (intRange) of parameter name written as a
// list: the doublings from one end to the other where they reach it in at
// most 8 steps (nb=32..128: nb=32,64,128), else every integer where there
// are at most 16, else the start of them.
func rangeExample(name, r string) string {
	m := intRange.FindStringSubmatch(r)
	lo, _ := strconv.Atoi(m[1])
	hi, _ := strconv.Atoi(m[2])
	vals := []string{strconv.Itoa(lo)}
	for v, k := lo, 0; lo > 0 && v < hi && k < 8; k++ {
		v *= 2
		vals = append(vals, strconv.Itoa(v))
		if v == hi {
			return name + "=" + strings.Join(vals, ",")
		}
	}
	vals = vals[:0]
	for v := lo; v <= hi && len(vals) < 16; v++ {
		vals = append(vals, strconv.Itoa(v))
	}
	if hi-lo >= 16 {
		return fmt.Sprintf("%s=%s and so on to %d, each written out", name, strings.Join(vals[:3], ","), hi)
	}
	return name + "=" + strings.Join(vals, ",")
}

// setParams parses KEY=V1,V2 arguments against the workload's schema into the
// space of st. Nothing is changed on error.
func setParams(st *State, w protocol.Workload, args []Arg) error {
	next := map[string][]any{}
	drop := map[string]bool{} // KEY=default: back to the default (a program's: out of the space)
	for _, a := range args {
		if a.Key == "" {
			if len(w.Params) == 0 {
				return errAt(a.Col, "%q is not KEY=VALUES: write, e.g., b=32,64", a.Value)
			}
			return errAt(a.Col, "%q is not KEY=VALUES: write, e.g., %s=%s", a.Value, w.Params[0].Name, example(w.Params[0]))
		}
		p, ok := param(w, a.Key)
		if w.Name == sweep.ProgramWorkload && (!ok || !strings.EqualFold(a.Value, "default")) {
			// A program's parameter is what its values are: typed again,
			// it takes new ones of any kind ('space g=c' after g=a,b had
			// been refused as not one of a, b; nb=x after nb=32 as not
			// an integer).
			p, ok = programParam(a), true
		}
		if !ok {
			return errAt(a.Col, "%s has no parameter %q: its parameters are %s", w.Name, a.Key, paramNames(w))
		}
		if strings.EqualFold(a.Value, "default") {
			// One parameter out, as the launcher's options go: only
			// 'space reset', of them all, had done it.
			drop[p.Name] = true
			delete(next, p.Name)
			continue
		}
		delete(drop, p.Name)
		items, cols, err := splitList(a.Value, a.ValueCol)
		if err != nil {
			return err
		}
		var vals []any
		seen := map[string]bool{}
		for i, it := range items {
			// A range, as 'tolerance 2^-1..2^-5' takes, had gone to a
			// program as the word "32..128" (a review).
			if intRange.MatchString(it) && !a.quotedItem(i) {
				return errAt(cols[i], "%s: %q is not a value list: a space lists each value, separated by commas (%s), or, for the word itself, quote it (%s=\"%s\")", p.Name, it, rangeExample(p.Name, it), p.Name, it)
			}
			v, err := p.Convert(it)
			if err != nil {
				return errAt(cols[i], "%s: %v", p.Name, err)
			}
			// A value twice runs its configurations twice, and the best
			// class line compared a configuration with its own copies.
			if k := fmtValue(v); seen[k] {
				return errAt(cols[i], "%s: %q repeats %s, already in the list: give each value once", p.Name, it, k)
			} else {
				seen[k] = true
			}
			vals = append(vals, v)
		}
		next[p.Name] = vals
	}
	for k, v := range next {
		st.Space[k] = v
	}
	for k := range drop {
		delete(st.Space, k)
	}
	return nil
}

func example(p sweep.Param) string {
	switch p.Kind {
	case sweep.Grid:
		if p.Dims == 3 {
			return "2x2x2"
		}
		return "2x2,1x4"
	case sweep.Choice:
		return strings.Join(p.Choices, ",")
	}
	return fmt.Sprint(p.Default)
}

// validate checks the state's spec against the schemas for an agent of
// ranks processes, and returns the configurations.
func validate(ss schemaSet, st State, mode sweep.Mode, ranks int) (*sweep.Spec, []sweep.Config, error) {
	sp := st.Spec(mode)
	lookup := func(name string) (sweep.Schema, bool) {
		w, ok := ss.find(name)
		if !ok {
			return nil, false
		}
		return schemaOf{w}, true
	}
	if sp.Program != nil {
		ranks = math.MaxInt32 // each run is a launch of its own size
	}
	configs, err := sp.Validate(lookup, ss.names(), ranks)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "sweep spec: ")
		if m := needsProcs.FindStringSubmatch(msg); m != nil {
			// The session's agent is as large as 'ranks' says: a
			// review's 'grid 3x3' had been told only to shrink.
			if l := st.Launcher; l.Slurm() && l.Nodes > 0 && l.TasksPerNode > 0 {
				// There 'ranks' is nodes x tasks-per-node, and refused
				// otherwise (a Slurm review's contradicting hints).
				msg += fmt.Sprintf("; or set 'launcher slurm nodes= tasks-per-node=' for a job of %s ranks (their product)", m[1])
			} else {
				msg += fmt.Sprintf("; or set 'ranks %s' for an agent that large", m[1])
			}
		}
		return nil, nil, &Error{Msg: msg}
	}
	return sp, configs, nil
}

// schemaOf adapts an announced schema to sweep.Schema. Constraints between
// parameters are checked with this binary's workload when it has one of that
// name (the agent checks them again in any case).
type schemaOf struct{ w protocol.Workload }

func (s schemaOf) Params() []sweep.Param { return s.w.Params }

func (s schemaOf) Check(c sweep.Config, ranks int) error {
	if w, ok := catalog.Lookup(s.w.Name); ok {
		return w.Check(c, ranks)
	}
	return nil
}

// localSchemas are the workloads built into this binary, used until an agent
// announces its own.
func localSchemas() schemaSet {
	var ss schemaSet
	for _, w := range catalog.All() {
		ss = append(ss, protocol.Workload{Name: w.Name(), Doc: w.Doc(), Params: w.Params()})
	}
	return ss
}
