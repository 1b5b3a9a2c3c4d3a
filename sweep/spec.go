// Package sweep defines the sweep spec that tells the agent what to run
// (docs/design.md §5), its validation against the workloads' parameter schemas, its
// expansion into configurations, and the JSON events the agent emits.
package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"

	"github.com/approxtune/approxtune/internal/selective/policy"
)

// Mode says which runs a sweep makes.
type Mode string

// Modes of a sweep.
const (
	ModeReference Mode = "reference" // full runs only
	ModeEvaluate  Mode = "evaluate"  // full runs plus selective runs, with errors and speed-up
	ModeTune      Mode = "tune"      // selective runs only
)

// Wants reports whether the sweep includes the run (every run when Runs is empty).
func (s *Spec) Wants(config int, policy string, tol float64) bool {
	if len(s.Runs) == 0 {
		return true
	}
	for _, r := range s.Runs {
		if r.Config == config && r.Policy == policy && (policy == "" || r.Tolerance == tol) {
			return true
		}
	}
	return false
}

// WantsConfig reports whether any run of the configuration is included.
func (s *Spec) WantsConfig(config int) bool {
	if len(s.Runs) == 0 {
		return true
	}
	for _, r := range s.Runs {
		if r.Config == config {
			return true
		}
	}
	return false
}

// Search is how a sweep searches its space.
type Search string

// Searches of a space.
const (
	SearchNone    Search = ""        // every configuration, every policy and tolerance
	SearchHalving Search = "halving" // successive halving over the whole space
	SearchRandom  Search = "random"  // successive halving over Budget configurations drawn at random
)

// Searches lists the valid searches (the empty one is "none" in messages).
func Searches() []Search { return []Search{SearchHalving, SearchRandom} }

// Modes lists the valid modes.
func Modes() []Mode { return []Mode{ModeReference, ModeEvaluate, ModeTune} }

// Policies lists the selective-execution policies' names, in the paper's
// order: the names of the policy registry (package policy).
func Policies() []string { return policy.Names() }

// Spec is a sweep: a workload, its space of configurations, and how to run them.
type Spec struct {
	Workload      string                     `json:"workload"`
	Program       *Program                   `json:"program,omitempty"` // a user's program instead of a built-in workload
	Space         map[string]json.RawMessage `json:"space,omitempty"`
	Policies      []string                   `json:"policies,omitempty"`
	Tolerances    []Tolerance                `json:"tolerances,omitempty"`
	Confidence    float64                    `json:"confidence,omitempty"`
	ReferenceReps int                        `json:"reference_reps,omitempty"`
	Mode          Mode                       `json:"mode,omitempty"`
	NMin          int                        `json:"n_min,omitempty"`
	Seed          int64                      `json:"seed,omitempty"`
	Kernels       bool                       `json:"kernels,omitempty"`
	Trace         bool                       `json:"trace,omitempty"`
	// Models, when set, lets a computation kernel with no samples of its
	// own be predicted from its routine's performance model (fitted over
	// the sizes measured so far) and skipped from its first call, when the
	// model rests on at least 4 sizes, the new size is within one step of
	// them, and the model's error passes the tolerance rule
	// (internal/selective/models.go).
	Models bool `json:"models,omitempty"`
	// Messages says what a selective run may skip besides kernels:
	// MessagesSkip (or "") lets the policy skip a message or collective
	// as it skips kernels; MessagesRun runs every one, for a program that
	// sends what it computes with inside floating-point data (HPL sends
	// each row's index with the row it swaps, and a panel's pivots with
	// the panel), which a skipped message leaves stale.
	Messages Messages `json:"messages,omitempty"`
	// Search, when set, searches the space instead of running every
	// configuration under every policy and tolerance: SearchHalving runs
	// rounds of selective runs of one policy at the tolerances in order
	// (loosest first), dropping after each the configurations slower than
	// the best with the ranking's confidence, and ends with full runs of
	// the survivors; SearchRandom does the same on Budget configurations
	// drawn at random (Seed).
	Search Search `json:"search,omitempty"`
	// Budget is how many configurations SearchRandom draws.
	Budget int `json:"budget,omitempty"`
	// Runs, when set, restricts the sweep to these runs (resuming an
	// interrupted sweep); configuration indices refer to the full expansion.
	Runs []RunRef `json:"runs,omitempty"`
	// References are reference times already taken, by configuration
	// index (resuming a sweep whose configurations have results judged
	// against them): the agent takes no reference of such a configuration
	// and judges its runs against these, so that every run of a
	// configuration has the same references.
	References map[int][]float64 `json:"references,omitempty"`
	// Carried are the statistics that policies carrying them from one
	// configuration to the next had when the sweep stopped (resuming it):
	// the agent starts each such policy and tolerance from them.
	Carried []Carried `json:"carried,omitempty"`
}

// Messages is what a selective run does with the messages and collectives
// the policy could skip (Spec.Messages).
type Messages string

// The values of Spec.Messages.
const (
	MessagesSkip Messages = "skip"
	MessagesRun  Messages = "run"
)

// RunsMessages reports whether the spec's selective runs run every message
// and collective (MessagesRun).
func (s *Spec) RunsMessages() bool { return s.Messages == MessagesRun }

// CarriedFor returns the statistics Carried holds for policy at tolerance,
// or nil.
func (s *Spec) CarriedFor(policy string, tolerance float64) *Carried {
	for i := range s.Carried {
		if c := &s.Carried[i]; c.Policy == policy && c.Tolerance == tolerance {
			return c
		}
	}
	return nil
}

// RunRef names one run of a sweep: a configuration (its index in the full
// expansion) under a policy and tolerance; the policy is empty for the
// references of reference mode.
type RunRef struct {
	Config    int     `json:"config"`
	Policy    string  `json:"policy,omitempty"`
	Tolerance float64 `json:"tolerance,omitempty"`
}

// Tolerance is a confidence tolerance epsilon. In JSON it is a number or a
// string power of two such as "2^-3".
type Tolerance float64

// UnmarshalJSON accepts 0.125 or "2^-3".
func (t *Tolerance) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err == nil {
		*t = Tolerance(f)
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a number or a power of two like \"2^-3\", got %s", b)
	}
	v, err := ParseTolerance(s)
	if err != nil {
		return err
	}
	*t = Tolerance(v)
	return nil
}

// ParseTolerance reads a number ("0.125") or a power of two ("2^-3").
func ParseTolerance(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if rest, ok := strings.CutPrefix(s, "2^"); ok {
		e, err := strconv.Atoi(rest)
		if err != nil {
			return 0, fmt.Errorf("%q is not a tolerance: want a number or a power of two like 2^-3", s)
		}
		v := math.Ldexp(1, e)
		if math.IsInf(v, 0) {
			return 0, fmt.Errorf("%q is not a tolerance: 2^%d is beyond a float64; want a power of two like 2^-3", s, e)
		}
		return v, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a tolerance: want a number or a power of two like 2^-3", s)
	}
	return f, nil
}

// Schema is what validation needs to know about a workload.
type Schema interface {
	// Params lists the workload's parameters in order.
	Params() []Param
	// Check validates constraints between the parameters of one configuration
	// for an agent with the given number of ranks.
	Check(c Config, ranks int) error
}

// Lookup finds a workload's schema by name.
type Lookup func(name string) (Schema, bool)

// MaxConfigs bounds the configurations of a sweep's space: its sweep
// record, with every configuration, stays a journal line that the
// session's reader takes (64 MiB), and its expansion a size that fits in
// memory.
const MaxConfigs = 100000

// Parse decodes a spec strictly: unknown fields are errors.
func Parse(data []byte) (*Spec, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Spec
	if err := dec.Decode(&s); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
			return nil, fmt.Errorf("sweep spec is not valid JSON: %v (line %d)", se, line)
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("sweep spec is not valid JSON: it ends before the object is complete")
		}
		if e := fieldError(data, err); e != nil {
			return nil, e
		}
		return nil, fmt.Errorf("sweep spec: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("sweep spec: unexpected data after the JSON object")
	}
	return &s, nil
}

// Normalize fills defaults: mode evaluate, confidence 0.95, 3 reference
// repetitions, n_min 2, seed 1, and tolerance 2^-3 (a search's rounds:
// 2^-1, 2^-3, 2^-5) and policy eager when a selective mode names none.
func (s *Spec) Normalize() {
	if s.Mode == "" {
		s.Mode = ModeEvaluate
	}
	if s.Confidence == 0 {
		s.Confidence = 0.95
	}
	if s.ReferenceReps == 0 {
		s.ReferenceReps = 3
	}
	if s.NMin == 0 {
		s.NMin = 2
	}
	if s.Seed == 0 {
		s.Seed = 1
	}
	if s.Mode != ModeReference {
		if len(s.Policies) == 0 {
			s.Policies = []string{policy.Eager{}.Name()}
		}
		if len(s.Tolerances) == 0 {
			s.Tolerances = []Tolerance{0.125}
			if s.Search != SearchNone {
				s.Tolerances = []Tolerance{0.5, 0.125, 0.03125} // halving's rounds
			}
		}
	}
}

// Validate normalizes s and checks it against the workload registry for an
// agent of the given size. It returns the configurations to run, in order, or
// an error that names the offending field and what is valid.
func (s *Spec) Validate(lookup Lookup, workloads []string, ranks int) ([]Config, error) {
	s.Normalize()
	w, err := s.schema(lookup, workloads)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(Modes(), s.Mode) {
		return nil, fmt.Errorf("sweep spec: mode %q is unknown: want one of %s", s.Mode, joinModes(Modes()))
	}
	if s.Confidence <= 0 || s.Confidence >= 1 {
		return nil, fmt.Errorf("sweep spec: confidence %v is out of range: want a number strictly between 0 and 1, like 0.95", s.Confidence)
	}
	if s.ReferenceReps < 1 || s.ReferenceReps > 1000 {
		return nil, fmt.Errorf("sweep spec: reference_reps %d is out of range: want an integer from 1 to 1000", s.ReferenceReps)
	}
	if s.NMin < 1 {
		return nil, fmt.Errorf("sweep spec: n_min %d is out of range: want an integer of at least 1 (2 is the default)", s.NMin)
	}
	if err := s.validateSearch(); err != nil {
		return nil, err
	}
	if s.Messages != "" && s.Messages != MessagesSkip && s.Messages != MessagesRun {
		return nil, fmt.Errorf("sweep spec: messages %q is unknown: want skip (the default: the policy skips messages as it skips kernels) or run (every message and collective runs)", s.Messages)
	}
	if s.Mode != ModeReference {
		for i, p := range s.Policies {
			if _, err := policy.Lookup(p); err != nil {
				return nil, fmt.Errorf("sweep spec: policies[%d] %q is unknown: want one of %s", i, p, strings.Join(policy.Names(), ", "))
			}
		}
		for i, t := range s.Tolerances {
			if t < 0 || math.IsNaN(float64(t)) || math.IsInf(float64(t), 0) {
				return nil, fmt.Errorf("sweep spec: tolerances[%d] %v is out of range: want a number >= 0 (0 skips nothing), like 0.125 or \"2^-3\"", i, float64(t))
			}
			if slices.Contains(s.Tolerances[:i], t) {
				return nil, fmt.Errorf("sweep spec: tolerances[%d] %v repeats an earlier tolerance: give each once", i, float64(t))
			}
			if t == 0 && s.Search != SearchNone {
				return nil, fmt.Errorf("sweep spec: tolerances[%d] 0 with search %s: a round at 0 skips nothing; want tolerances above 0, like \"2^-1\", \"2^-3\", \"2^-5\"", i, s.Search)
			}
		}
	}

	params := w.Params()
	byName := map[string]Param{}
	var names []string
	for _, p := range params {
		byName[p.Name] = p
		names = append(names, p.Name)
	}
	var unknown []string
	for k := range s.Space {
		if _, ok := byName[k]; !ok {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return nil, fmt.Errorf("sweep spec: space.%s is not a parameter of %s: want one of %s", keyName(unknown[0]), s.Workload, strings.Join(names, ", "))
	}
	lists := make([][]any, len(params))
	for i, p := range params {
		raw, ok := s.Space[p.Name]
		if !ok {
			// The default must fit the agent too (summa's 2x2 on 2 ranks).
			if g, isGrid := p.Default.(GridShape); isGrid && g.Procs() > ranks {
				return nil, fmt.Errorf("sweep spec: space.%s: the default %s needs %d processes, the agent has %d: give space.%s a grid of at most %d processes", p.Name, g, g.Procs(), ranks, p.Name, ranks)
			}
			lists[i] = []any{p.Default}
			continue
		}
		// A resume (Runs set) takes its space as it was: a journal of
		// an older build may repeat a value, and its configurations are
		// numbered with the repeat.
		vals, err := parseList(p, raw, len(s.Runs) == 0)
		if err != nil {
			return nil, fmt.Errorf("sweep spec: space.%s: %w", p.Name, err)
		}
		for _, v := range vals {
			if g, ok := v.(GridShape); ok && g.Procs() > ranks {
				return nil, fmt.Errorf("sweep spec: space.%s: %s needs %d processes, the agent has %d: want a grid of at most %d processes", p.Name, g, g.Procs(), ranks, ranks)
			}
		}
		lists[i] = vals
	}
	total := 1
	for _, l := range lists {
		if total > MaxConfigs/len(l) {
			// The count itself, in floating point (10^8 overflows nothing).
			n := 1.0
			var lens []string
			for i, l := range lists {
				n *= float64(len(l))
				if len(l) > 1 {
					lens = append(lens, fmt.Sprintf("%s %d", params[i].Name, len(l)))
				}
			}
			return nil, fmt.Errorf("sweep spec: space: %.0f configurations (%s values), more than %d: want fewer values", n, strings.Join(lens, " x "), MaxConfigs)
		}
		total *= len(l)
	}
	configs := product(params, lists)
	for _, c := range configs {
		if err := w.Check(c, ranks); err != nil {
			return nil, fmt.Errorf("sweep spec: space: configuration %s: %w", c.Label(), err)
		}
	}
	if s.Search == SearchRandom && s.Budget > len(configs) {
		return nil, fmt.Errorf("sweep spec: budget %d is more than the space's %d configurations: want search halving to search them all", s.Budget, len(configs))
	}
	for i, refs := range s.References {
		if i < 0 || i >= len(configs) {
			return nil, fmt.Errorf("sweep spec: references: configuration %d is out of range: the space has %d", i, len(configs))
		}
		if len(refs) == 0 || slices.ContainsFunc(refs, func(v float64) bool { return !(v > 0) || math.IsInf(v, 0) }) {
			return nil, fmt.Errorf("sweep spec: references of configuration %d: %v: want one or more positive times in seconds", i, refs)
		}
	}
	for i, r := range s.Runs {
		if r.Config < 0 || r.Config >= len(configs) {
			return nil, fmt.Errorf("sweep spec: runs[%d]: configuration %d is out of range: the space has %d", i, r.Config, len(configs))
		}
		if s.Mode == ModeReference {
			continue
		}
		if !slices.Contains(s.Policies, r.Policy) {
			return nil, fmt.Errorf("sweep spec: runs[%d]: policy %q is not one of the sweep's policies %s", i, r.Policy, strings.Join(s.Policies, ", "))
		}
		found := false
		for _, t := range s.Tolerances {
			found = found || float64(t) == r.Tolerance
		}
		if !found {
			return nil, fmt.Errorf("sweep spec: runs[%d]: tolerance %v is not one of the sweep's tolerances", i, r.Tolerance)
		}
	}
	for i, c := range s.Carried {
		if !slices.Contains(s.Policies, c.Policy) || !slices.Contains(s.Tolerances, Tolerance(c.Tolerance)) {
			return nil, fmt.Errorf("sweep spec: carried[%d]: %s at %v is not one of the sweep's policies and tolerances", i, c.Policy, c.Tolerance)
		}
	}
	return configs, nil
}

// validateSearch checks the search fields.
func (s *Spec) validateSearch() error {
	switch s.Search {
	case SearchNone:
		if s.Budget != 0 {
			return fmt.Errorf("sweep spec: budget %d without a search: budget is the configurations search \"random\" draws", s.Budget)
		}
		return nil
	case SearchHalving, SearchRandom:
	default:
		return fmt.Errorf("sweep spec: search %q is unknown: want halving or random (or none, to run every configuration)", s.Search)
	}
	if s.Mode == ModeReference {
		return fmt.Errorf("sweep spec: search %s in mode reference: a search makes selective runs; want mode tune or evaluate", s.Search)
	}
	if len(s.Policies) != 1 {
		return fmt.Errorf("sweep spec: search %s with %d policies: a search runs one policy, like [\"eager\"]", s.Search, len(s.Policies))
	}
	if len(s.Runs) > 0 {
		return fmt.Errorf("sweep spec: search %s with runs: a search cannot be resumed run by run; run it again", s.Search)
	}
	if s.Search == SearchRandom && s.Budget < 0 {
		return fmt.Errorf("sweep spec: budget %d is out of range: want the number of configurations to draw, like 20", s.Budget)
	}
	if s.Search == SearchRandom && s.Budget == 0 {
		return fmt.Errorf("sweep spec: search random needs a budget: want the number of configurations to draw, like 20")
	}
	if s.Search == SearchHalving && s.Budget != 0 {
		return fmt.Errorf("sweep spec: budget %d with search halving: halving runs the whole space; search random draws budget configurations", s.Budget)
	}
	return nil
}

// schema is the spec's workload schema: a built-in workload's, or its
// program's.
func (s *Spec) schema(lookup Lookup, workloads []string) (Schema, error) {
	if s.Program != nil {
		if s.Workload == "" {
			s.Workload = ProgramWorkload
		}
		if s.Workload != ProgramWorkload {
			return nil, fmt.Errorf("sweep spec: workload %q with a program: a program sweep's workload is %q (or none)", s.Workload, ProgramWorkload)
		}
		w, err := s.Program.Schema(s.Space)
		if err != nil {
			return nil, fmt.Errorf("sweep spec: %w", err)
		}
		return w, nil
	}
	if s.Workload == "" {
		return nil, fmt.Errorf("sweep spec: workload is missing: want one of %s, or a program", strings.Join(workloads, ", "))
	}
	w, ok := lookup(s.Workload)
	if !ok {
		return nil, fmt.Errorf("sweep spec: workload %q is unknown: want one of %s", s.Workload, strings.Join(workloads, ", "))
	}
	return w, nil
}

// parseList reads a space entry: a list of values or a single value,
// each value once when unique (a value twice ran its configurations
// twice).
func parseList(p Param, raw json.RawMessage, unique bool) ([]any, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		items = []json.RawMessage{raw}
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("empty list: want at least one value, %s", p.Valid())
	}
	out := make([]any, 0, len(items))
	seen := map[string]bool{}
	for _, it := range items {
		v, err := p.parse(it)
		if err != nil {
			return nil, err
		}
		if k := fmt.Sprint(v); seen[k] && unique {
			return nil, fmt.Errorf("%s repeats, already in the list: give each value once", it)
		} else {
			seen[k] = true
		}
		out = append(out, v)
	}
	return out, nil
}

// product expands the lists into configurations; the last parameter varies fastest.
func product(params []Param, lists [][]any) []Config {
	total := 1
	for _, l := range lists {
		total *= len(l)
	}
	out := make([]Config, 0, total)
	idx := make([]int, len(lists))
	for k := 0; k < total; k++ {
		set := make(map[string]any, len(params))
		for i, p := range params {
			set[p.Name] = lists[i][idx[i]]
		}
		out = append(out, NewConfig(params, set))
		for i := len(idx) - 1; i >= 0; i-- {
			idx[i]++
			if idx[i] < len(lists[i]) {
				break
			}
			idx[i] = 0
		}
	}
	return out
}

// joinModes lists modes for a message.
func joinModes(modes []Mode) string {
	names := make([]string, len(modes))
	for i, m := range modes {
		names[i] = string(m)
	}
	return strings.Join(names, ", ")
}

// keyName writes a key of the spec's space as it is when it is a plain
// name (letters, digits, '_', '-', '.'), else quoted, so that an error
// naming it stays one readable line whatever the key holds.
func keyName(k string) string {
	for _, r := range k {
		if !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || r == '-' || r == '.') {
			return strconv.Quote(k)
		}
	}
	if k == "" {
		return `""`
	}
	return k
}
