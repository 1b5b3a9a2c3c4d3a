package sweep

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Program is a user's MPI program as a workload: each configuration is one
// launch of Command with the space's parameters put in for their
// placeholders ({b}, {n}, ...; a grid parameter also gives {NAME_r},
// {NAME_c} and, for three dimensions, {NAME_d}, and {ranks} is the rank
// count), and each input deck written from its template with the same
// placeholders. The rank count is the product of the grid parameter, or
// the "ranks" parameter.
type Program struct {
	// Command is the program and its arguments.
	Command []string `json:"command"`
	// Decks maps a file the program reads, written in its working
	// directory for each launch, to the template it is written from.
	Decks map[string]string `json:"decks,omitempty"`
}

// ProgramWorkload is the workload name of a sweep over a program.
const ProgramWorkload = "program"

// almostGrid is a word of digits and x's with an x and a digit in it: a
// grid, or one mistyped.
var almostGrid = regexp.MustCompile(`^[0-9xX]*([0-9][xX]|[xX][0-9])[0-9xX]*$`)

var placeholder = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// programSchema is the schema of a program's space: every parameter the
// space names, its kind read from its values.
type programSchema struct {
	p      *Program
	params []Param
}

// Schema returns the schema of the program over space, checking that every
// placeholder of the command and the decks names a parameter.
func (p *Program) Schema(space map[string]json.RawMessage) (Schema, error) {
	if len(p.Command) == 0 {
		return nil, fmt.Errorf("program: command is empty: want the program and its arguments, like [\"./solver\", \"-nb\", \"{b}\"]")
	}
	s := &programSchema{p: p}
	for _, name := range slices.Sorted(maps.Keys(space)) {
		s.params = append(s.params, ProgramParam(name, space[name]))
	}
	var grids []string
	for _, q := range s.params {
		if q.Kind == Grid {
			grids = append(grids, q.Name)
		}
		// A grid mistyped ("2x2x") had made the parameter a word, and the
		// note that followed said grid is in no argument. Only where the
		// parameter is a grid by its name or its other values: a word
		// like x1 or 0x10 (chunks=x1,2) had been refused as "not a grid"
		// where no grid was meant (a review).
		gridLike := strings.Contains(strings.ToLower(q.Name), "grid") || slices.ContainsFunc(q.Choices, func(c string) bool {
			g, err := ParseGrid(c)
			return err == nil && len(g) > 1
		})
		for _, c := range q.Choices {
			if _, err := ParseGrid(c); err != nil && gridLike && almostGrid.MatchString(c) {
				return nil, fmt.Errorf("program: %s: %v", q.Name, err)
			}
		}
	}
	if len(grids) > 1 {
		return nil, fmt.Errorf("program: the space has %d grid parameters (%s): want at most one (it sets the rank count)", len(grids), strings.Join(grids, ", "))
	}
	if _, ok := space["ranks"]; len(grids) == 1 && ok {
		// Each launch had the grid's ranks, and {ranks} and the labels
		// said the other count.
		return nil, fmt.Errorf("program: the space has a grid (%s) and ranks: the grid sets the rank count (its product, also {ranks}); leave ranks out", grids[0])
	}
	if _, ok := space["ranks"]; len(grids) == 0 && !ok {
		// Said for the REPL and a spec both: the REPL's user had read
		// JSON for a command.
		return nil, fmt.Errorf("program: the space sets no rank count: give it a grid ('space grid=2x2', in a spec \"grid\": [\"2x2\"]) or rank counts ('space ranks=4', in a spec \"ranks\": [4])")
	}
	if len(grids) == 0 && ProgramParam("ranks", space["ranks"]).Kind != Int {
		return nil, fmt.Errorf("program: ranks %s: want rank counts, like [1, 2, 4]", shown(space["ranks"]))
	}
	known := s.placeholders()
	if err := p.CheckBraces(); err != nil {
		return nil, err
	}
	// Where each text comes from, for the error: a review's {zz} in a
	// deck's template had been looked for on the command line.
	texts, where := []string{strings.Join(p.Command, " ")}, []string{"the command"}
	for _, file := range slices.Sorted(maps.Keys(p.Decks)) {
		b, err := os.ReadFile(p.Decks[file])
		if err != nil {
			return nil, fmt.Errorf("program: deck %q: %w", file, err)
		}
		texts, where = append(texts, string(b)), append(where, fmt.Sprintf("deck %s's template %s", file, p.Decks[file]))
	}
	for i, t := range texts {
		for _, m := range placeholder.FindAllStringSubmatch(t, -1) {
			if !slices.Contains(known, m[1]) {
				return nil, fmt.Errorf("program: {%s} in %s is not a parameter of the space: want one of {%s}", m[1], where[i], strings.Join(known, "}, {"))
			}
		}
	}
	return s, nil
}

// unclosed finds a placeholder that lacks its closing brace ("{b" of
// "-nb {b"): such an argument reached the program as it was.
var unclosed = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*)(?:[^A-Za-z0-9_}]|$)`)

// CheckBraces refuses an argument of the command with a placeholder that
// lacks its closing brace ("-nb {b"): it would reach the program as it is.
func (p *Program) CheckBraces() error {
	for _, a := range p.Command[min(1, len(p.Command)):] {
		if m := unclosed.FindStringSubmatch(a); m != nil {
			return fmt.Errorf("program: argument %q has {%s without its closing brace: want {%s}", a, m[1], m[1])
		}
	}
	return nil
}

// UnusedNote is the note for a space with parameters the program never
// sees (Unused), "" when it has none.
func (p *Program) UnusedNote(space map[string][]any) string {
	unused := p.Unused(space)
	if len(unused) == 0 {
		return ""
	}
	return fmt.Sprintf("note: %s appears in no argument or deck of the program: its configurations differ in nothing the program sees and repeat each other's runs (put {%s} where the program should read it)",
		strings.Join(unused, ", "), unused[0])
}

// SpaceOf is the space that configs enumerate: each parameter's values, as
// many as there are configurations.
func SpaceOf(configs []Config) map[string][]any {
	space := map[string][]any{}
	for _, c := range configs {
		for _, n := range c.Names() {
			v, _ := c.Value(n)
			space[n] = append(space[n], v)
		}
	}
	return space
}

// Unused lists, sorted, the parameters of space that no placeholder of the
// command or the decks names: the program sees nothing of them, and their
// configurations repeat each other's runs. The rank count and a grid,
// which set the launch's ranks, are never unused; a deck that does not
// read counts as using every parameter.
func (p *Program) Unused(space map[string][]any) []string {
	texts := slices.Clone(p.Command)
	for _, file := range p.Decks {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil
		}
		texts = append(texts, string(b))
	}
	used := map[string]bool{}
	for _, t := range texts {
		for _, m := range placeholder.FindAllStringSubmatch(t, -1) {
			used[m[1]] = true
		}
	}
	var out []string
	for name, vs := range space {
		if name == "ranks" || used[name] {
			continue
		}
		if len(vs) > 0 {
			if _, ok := vs[0].(GridShape); ok {
				continue
			}
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// ProgramParam is the parameter NAME of a program's space whose values are
// raw (a JSON list or one value): a grid when they are grids ("2x4"), an
// integer when they are integers, else a choice among them.
func ProgramParam(name string, raw json.RawMessage) Param {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		items = []json.RawMessage{raw}
	}
	ints, grids := true, true
	var choices []string
	dims := 0
	for _, it := range items {
		var n int
		if json.Unmarshal(it, &n) != nil {
			ints = false
		}
		var str string
		if json.Unmarshal(it, &str) == nil {
			choices = append(choices, str)
			if g, err := ParseGrid(str); err == nil {
				dims = len(g)
			} else {
				grids = false
			}
		} else {
			grids = false
			choices = append(choices, string(it))
		}
	}
	switch {
	case ints:
		return Param{Name: name, Kind: Int, Doc: "a parameter of the program", Min: -1 << 31, Max: 1<<31 - 1}
	case grids && dims > 0:
		return Param{Name: name, Kind: Grid, Doc: "the processor grid", Dims: dims}
	}
	return Param{Name: name, Kind: Choice, Doc: "a parameter of the program", Choices: choices}
}

// placeholders lists the names a template may use.
func (s *programSchema) placeholders() []string {
	names := []string{"ranks"}
	for _, q := range s.params {
		names = append(names, q.Name)
		if q.Kind == Grid {
			names = append(names, q.Name+"_r", q.Name+"_c")
			if q.Dims == 3 {
				names = append(names, q.Name+"_d")
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

func (s *programSchema) Params() []Param { return s.params }

// Check refuses a rank count below 1 (a grid's dimensions are positive).
func (s *programSchema) Check(c Config, ranks int) error {
	if n := s.p.Ranks(c); n < 1 {
		return fmt.Errorf("ranks=%d: want a rank count of at least 1", n)
	}
	return nil
}

func (s *programSchema) Grid(c Config) GridShape {
	for _, q := range s.params {
		if q.Kind == Grid {
			return c.Grid(q.Name)
		}
	}
	return GridShape{c.Int("ranks")}
}

// Ranks is the number of processes a configuration of the program runs on.
func (p *Program) Ranks(c Config) int {
	for _, n := range c.Names() {
		if v, _ := c.Value(n); v != nil {
			if g, ok := v.(GridShape); ok {
				return g.Procs()
			}
		}
	}
	return c.Int("ranks")
}

// Expand puts a configuration's values in for the placeholders of text.
func (p *Program) Expand(c Config, text string) string {
	vals := map[string]string{"ranks": strconv.Itoa(p.Ranks(c))}
	for _, n := range c.Names() {
		v, _ := c.Value(n)
		switch v := v.(type) {
		case GridShape:
			vals[n] = v.String()
			for i, suffix := range []string{"_r", "_c", "_d"} {
				if i < len(v) {
					vals[n+suffix] = strconv.Itoa(v[i])
				}
			}
		default:
			vals[n] = fmt.Sprint(v)
		}
	}
	return placeholder.ReplaceAllStringFunc(text, func(m string) string {
		if v, ok := vals[m[1:len(m)-1]]; ok {
			return v
		}
		return m
	})
}
