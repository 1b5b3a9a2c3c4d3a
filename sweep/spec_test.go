package sweep

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// testSchema is a SUMMA-like schema: b must divide n/pr.
type testSchema struct{}

func (testSchema) Params() []Param {
	return []Param{
		{Name: "n", Kind: Int, Default: 64, Min: 1, Max: 4096},
		{Name: "grid", Kind: Grid, Default: GridShape{2, 2}, Dims: 2},
		{Name: "b", Kind: Int, Default: 8, Min: 1, Max: 4096},
		{Name: "strategy", Kind: Choice, Default: "1", Choices: []string{"1", "2", "3"}},
	}
}

func (testSchema) Check(c Config, ranks int) error {
	if (c.Int("n")/c.Grid("grid")[0])%c.Int("b") != 0 {
		return fmt.Errorf("b=%d must divide n/pr", c.Int("b"))
	}
	return nil
}

func lookup(name string) (Schema, bool) {
	if name == "toy" {
		return testSchema{}, true
	}
	return nil, false
}

func validate(t *testing.T, spec string, ranks int) ([]Config, error) {
	t.Helper()
	s, err := Parse([]byte(spec))
	if err != nil {
		return nil, err
	}
	return s.Validate(lookup, []string{"toy"}, ranks)
}

func TestExpandOrderAndDefaults(t *testing.T) {
	cs, err := validate(t, `{"workload":"toy","space":{"grid":["1x4","2x2"],"b":[8,16]},"mode":"reference"}`, 4)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range cs {
		got = append(got, c.Label())
	}
	want := []string{
		"n=64 grid=1x4 b=8 strategy=1", "n=64 grid=1x4 b=16 strategy=1",
		"n=64 grid=2x2 b=8 strategy=1", "n=64 grid=2x2 b=16 strategy=1",
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("configs:\n got %q\nwant %q", got, want)
	}
	js, err := json.Marshal(cs[2])
	if err != nil {
		t.Fatal(err)
	}
	if string(js) != `{"n":64,"grid":"2x2","b":8,"strategy":"1"}` {
		t.Fatalf("config JSON %s", js)
	}
}

func TestNormalizeDefaults(t *testing.T) {
	s, err := Parse([]byte(`{"workload":"toy"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Validate(lookup, []string{"toy"}, 4); err != nil {
		t.Fatal(err)
	}
	if s.Mode != ModeEvaluate || s.Confidence != 0.95 || s.ReferenceReps != 3 || s.NMin != 2 ||
		len(s.Policies) != 1 || s.Policies[0] != "eager" || len(s.Tolerances) != 1 || s.Tolerances[0] != 0.125 {
		t.Fatalf("defaults not applied: %+v", s)
	}
}

func TestTolerancePowers(t *testing.T) {
	s, err := Parse([]byte(`{"workload":"toy","tolerances":[0.5,"2^-3","2^0"]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Tolerance{0.5, 0.125, 1}
	for i, w := range want {
		if s.Tolerances[i] != w {
			t.Fatalf("tolerances %v, want %v", s.Tolerances, want)
		}
	}
	if _, err := Parse([]byte(`{"workload":"toy","tolerances":["2^x"]}`)); err == nil || !strings.Contains(err.Error(), "power of two") {
		t.Fatalf("bad tolerance error %v", err)
	}
	// A power beyond a float64 is refused, not kept as +Inf (which JSON
	// cannot encode: the fuzzer found it).
	if _, err := Parse([]byte(`{"workload":"toy","tolerances":["2^1322"]}`)); err == nil || !strings.Contains(err.Error(), "beyond a float64") {
		t.Fatalf("2^1322: %v, want an error", err)
	}
}

// Every invalid spec yields one line that names the field and what is valid.
func TestValidationErrors(t *testing.T) {
	cases := []struct{ name, spec, want string }{
		{"malformed", `{"workload": "toy",`, "not valid JSON"},
		{"unknown field", `{"workload":"toy","spaec":{}}`, `unknown field "spaec"`},
		{"missing workload", `{}`, "workload is missing: want one of toy"},
		{"unknown workload", `{"workload":"nope"}`, `workload "nope" is unknown: want one of toy`},
		{"unknown param", `{"workload":"toy","space":{"q":[1]}}`, "space.q is not a parameter of toy: want one of n, grid, b, strategy"},
		{"unknown param with a newline", `{"workload":"toy","space":{"gri\nd":[1]}}`, `space."gri\nd" is not a parameter of toy: want one of n, grid, b, strategy`},
		{"b zero", `{"workload":"toy","space":{"b":[0]}}`, "space.b: 0 is out of range: want an integer from 1 to 4096"},
		{"b huge", `{"workload":"toy","space":{"b":[2000000]}}`, "space.b: 2000000 is out of range"}, // not 2e+06
		{"b fraction", `{"workload":"toy","space":{"b":[1.5]}}`, "space.b: 1.5 is out of range"},
		{"grid too big", `{"workload":"toy","space":{"grid":["3x3"]}}`, "space.grid: 3x3 needs 9 processes, the agent has 4"},
		{"grid malformed", `{"workload":"toy","space":{"grid":["2by2"]}}`, `space.grid: "2by2" is not a grid`},
		{"grid dims", `{"workload":"toy","space":{"grid":["1x2x2"]}}`, `has 3 dimensions: want a grid "PRxPC"`},
		{"empty list", `{"workload":"toy","space":{"b":[]}}`, "space.b: empty list"},
		{"repeated value", `{"workload":"toy","space":{"b":[8,16,8]}}`, "space.b: 8 repeats, already in the list: give each value once"},
		{"choice", `{"workload":"toy","space":{"strategy":[4]}}`, `space.strategy: "4" is not valid: want one of 1, 2, 3`},
		{"check", `{"workload":"toy","space":{"b":[24]}}`, "configuration n=64 grid=2x2 b=24 strategy=1: b=24 must divide n/pr"},
		{"mode", `{"workload":"toy","mode":"fast"}`, `mode "fast" is unknown: want one of reference, evaluate, tune`},
		{"messages", `{"workload":"toy","messages":"never"}`, `messages "never" is unknown: want skip (the default: the policy skips messages as it skips kernels) or run`},
		{"policy", `{"workload":"toy","policies":["eagre"]}`, `policies[0] "eagre" is unknown: want one of conditional, local, online, apriori, eager`},
		{"tolerance", `{"workload":"toy","tolerances":[-1]}`, "tolerances[0] -1 is out of range"},
		{"confidence", `{"workload":"toy","confidence":1.5}`, "confidence 1.5 is out of range"},
		{"reps", `{"workload":"toy","reference_reps":-2}`, "reference_reps -2 is out of range"},
		{"tolerance twice", `{"workload":"toy","tolerances":["2^-1",0.5]}`, "tolerances[1] 0.5 repeats an earlier tolerance"},
		{"search at 0", `{"workload":"toy","policies":["eager"],"search":"halving","tolerances":[0.5,0]}`, "tolerances[1] 0 with search halving: a round at 0 skips nothing"},
		{"budget negative", `{"workload":"toy","policies":["eager"],"search":"random","budget":-1}`, "budget -1 is out of range"},
		{"budget over the space", `{"workload":"toy","space":{"b":[4,8]},"policies":["eager"],"search":"random","budget":3}`, "budget 3 is more than the space's 2 configurations"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := validate(t, c.spec, 4)
			if err == nil {
				t.Fatalf("spec %s: no error, want %q", c.spec, c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("spec %s:\n got %q\nwant it to contain %q", c.spec, err, c.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("error is not one line: %q", err)
			}
		})
	}
}

// A resume (runs set) takes its space as it was journaled: an older build
// allowed a value twice, and its configurations are numbered with it.
func TestRepeatedValueResumed(t *testing.T) {
	cs, err := validate(t, `{"workload":"toy","space":{"b":[8,16,8]},"policies":["eager"],"tolerances":[0.5],"runs":[{"config":2,"policy":"eager","tolerance":0.5}]}`, 4)
	if err != nil || len(cs) != 3 {
		t.Fatalf("%d configurations, %v; want 3 and no error", len(cs), err)
	}
}

func TestSingleValueSpace(t *testing.T) {
	cs, err := validate(t, `{"workload":"toy","space":{"n":128,"grid":"4x1"}}`, 4)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].Int("n") != 128 || cs[0].Grid("grid").String() != "4x1" {
		t.Fatalf("got %v", cs)
	}
}

func FuzzParseTolerance(f *testing.F) {
	for _, s := range []string{"2^-3", "0.5", "2^", "1e-3", "2^99999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseTolerance(s)
		if err == nil && v < 0 && !strings.Contains(s, "-") {
			t.Fatalf("%q parsed to negative %v", s, v)
		}
	})
}

func TestConfigRoundTrip(t *testing.T) {
	cs, err := validate(t, `{"workload":"toy","space":{"grid":["1x4"],"b":[16]}}`, 4)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(cs[0])
	var back Config
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	js2, _ := json.Marshal(back)
	if string(js) != string(js2) || back.Label() != cs[0].Label() || back.Int("b") != 16 {
		t.Fatalf("round trip %s -> %s (%s)", js, js2, back.Label())
	}
}

// A spec with a field of the wrong type gives one line that names the
// field, what it wants and what it got, not encoding/json's words for Go
// types; every field of Spec is tried in turn.
func TestWrongTypeErrors(t *testing.T) {
	wrong := map[string]struct{ value, want string }{
		"workload":       {`4`, `workload: want a workload's name, a string ("synthetic"), got 4`},
		"program":        {`"./prog"`, `program: want an object {"command"`},
		"space":          {`[1, 2]`, `space: want an object of parameters and their values ({"n": [1024, 2048], "grid": "2x2"}), got [1,2]`},
		"policies":       {`"eager"`, `policies: want a list of policy names (["eager"]; the policies are`},
		"tolerances":     {`[true]`, `tolerances: want a number or a power of two like "2^-3", got true`},
		"confidence":     {`"high"`, `confidence: want a number between 0 and 1 (0.95), got "high"`},
		"reference_reps": {`"four"`, `reference_reps: want a whole number, got "four"`},
		"mode":           {`1`, `mode: want one of reference, evaluate, tune, a string, got 1`},
		"n_min":          {`2.5`, `n_min: want a whole number, got 2.5`},
		"seed":           {`{"x": 1}`, `seed: want a whole number, got {"x":1}`},
		"kernels":        {`"yes"`, `kernels: want true or false, got "yes"`},
		"trace":          {`1`, `trace: want true or false, got 1`},
		"models":         {`[]`, `models: want true or false, got []`},
		"messages":       {`false`, `messages: want "skip" or "run", a string, got false`},
		"search":         {`true`, `search: want "halving" or "random", a string, got true`},
		"budget":         {`"` + strings.Repeat("many ", 20) + `"`, `budget: want a whole number, got "many many many many many many many m...`},
		"runs":           {`[{"config": "first"}]`, `runs: want a list of runs ([{"config": 0, "policy": "eager", "tolerance": 0.125}]), got [{"config":"first"}]`},
		"carried":        {`{"policy": "eager"}`, `carried: want a list of statistics carried from a stopped sweep ([{"policy": "eager", "tolerance": 0.5, "ranks": [...]}]), got {"policy":"eager"}`},
		"references":     {`{"0": "fast"}`, `references: want an object of configuration indexes and their reference times in seconds ({"0": [1.2, 1.3]}), got {"0":"fast"}`},
	}
	for _, f := range specFields() {
		w, ok := wrong[f.name]
		if !ok {
			t.Errorf("spec field %s has no wrong-type case", f.name)
			continue
		}
		spec := `{"workload": "toy", "` + f.name + `": ` + w.value + `}`
		if f.name == "workload" {
			spec = `{"workload": 4}`
		}
		_, err := Parse([]byte(spec))
		if err == nil {
			t.Errorf("%s: no error", spec)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, "sweep spec: "+w.want) || strings.Contains(msg, "\n") || strings.Contains(msg, "Go ") || strings.Contains(msg, "json:") {
			t.Errorf("%s:\n got %q\nwant one line with %q", spec, msg, w.want)
		}
		delete(wrong, f.name)
	}
	for name := range wrong {
		t.Errorf("%s is not a field of Spec", name)
	}
	for spec, want := range map[string]string{
		`[1, 2]`:                                 `sweep spec: want a JSON object ({"workload": "synthetic", "space": {...}}), got [1,2]`,
		`"synthetic"`:                            `got "synthetic"`,
		`{"workload": "toy", "ranks": 4}`:        `sweep spec: unknown field "ranks": a rank count or grid is a parameter of the space ({"space": {"ranks": [...]}}); the fields are workload, program, space, policies, tolerances, confidence, reference_reps, mode, n_min, seed, kernels, trace, models, messages, search, budget, runs`,
		`{"workload": "toy", "policy": "eager"}`: `sweep spec: unknown field "policy": did you mean "policies"? The fields are workload,`,
		// One within the program's object: that object's fields (the
		// spec's had been listed, "messages" among them).
		`{"program": {"command": ["./p"], "messages": "run"}, "space": {"ranks": [2]}}`: `sweep spec: program: unknown field "messages": its fields are command, decks`,
		`{"program": {"cmd": ["./p"]}, "messages": "run"}`:                              `sweep spec: program: unknown field "cmd": its fields are command, decks`,
		`{"Program": {"cmd": ["./p"]}}`:                                                 `sweep spec: program: unknown field "cmd": its fields are command, decks`,
		`{"workload": "toy", "runs": [{"config": 0, "polcy": "eager"}]}`:                `sweep spec: runs: unknown field "polcy": its fields are config, policy, tolerance`,
	} {
		if _, err := Parse([]byte(spec)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", spec, err, want)
		}
	}
}

// A label stays one line: a value with a line break or a control character
// is quoted (a program's space may hold any strings).
func TestLabelOneLine(t *testing.T) {
	var c Config
	if err := json.Unmarshal([]byte(`{"ranks":2,"input":"a\nb","mode":"x y"}`), &c); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Label(), `ranks=2 input="a\nb" mode=x y`; got != want {
		t.Fatalf("label %q, want %q", got, want)
	}
}
