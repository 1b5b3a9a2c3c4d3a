package sweep

import (
	"encoding/json"
	"math/big"
	"reflect"
	"strings"
	"testing"
)

// FuzzSpec decodes and validates sweep specs as the agent does with what a
// session sends (and the agent's --sweep with a user's file). Properties:
// every error is one line that says it is the sweep spec's; a spec that
// parses survives encode -> parse unchanged; a spec that validates yields
// configurations that pass its schema's checks, whose grids fit the
// agent, and validating the normalized spec again yields the same
// configurations. The seeds in testdata/fuzz/FuzzSpec are the examples'
// specs and the specs the sessions' tests send.
func FuzzSpec(f *testing.F) {
	f.Add([]byte(`{"workload":"toy","space":{"grid":["1x4","2x2"],"b":[8,16]},"mode":"reference"}`), uint8(4))
	f.Add([]byte(`{"program":{"command":["./solver","-nb","{b}","-p","{grid_r}"]},"space":{"grid":["2x2"],"b":[16,32]}}`), uint8(4))
	f.Fuzz(func(t *testing.T, data []byte, nranks uint8) {
		ranks := int(nranks%64) + 1
		s, err := Parse(data)
		if err != nil {
			oneLine(t, err, "sweep spec")
			return
		}
		if s.Program != nil && len(s.Program.Decks) > 0 {
			return // decks name files to read: not for fuzzing
		}
		// Encode and parse back: the same spec.
		js, err := json.Marshal(s)
		if err != nil {
			t.Fatalf("encode %+v: %v", s, err)
		}
		back, err := Parse(js)
		if err != nil {
			t.Fatalf("%s: encoded as %s, which does not parse: %v", data, js, err)
		}
		js2, _ := json.Marshal(back)
		if string(js) != string(js2) {
			t.Fatalf("round trip changed the spec:\n %s\n %s", js, js2)
		}
		if n := spaceSize(s); n.Cmp(big.NewInt(20000)) > 0 && n.Cmp(big.NewInt(MaxConfigs)) <= 0 {
			return // valid but too large to expand at fuzzing speed
		}
		configs, err := s.Validate(lookup, []string{"toy"}, ranks)
		if err != nil {
			oneLine(t, err, "sweep spec")
			return
		}
		if len(configs) == 0 || len(configs) > MaxConfigs {
			t.Fatalf("%s: %d configurations", data, len(configs))
		}
		schema, err := s.schema(lookup, []string{"toy"})
		if err != nil {
			t.Fatalf("%s validated but its schema fails: %v", data, err)
		}
		for _, c := range configs {
			if err := schema.Check(c, ranks); err != nil {
				t.Fatalf("%s: configuration %s accepted, but its check fails: %v", data, c.Label(), err)
			}
			for _, n := range c.Names() {
				v, _ := c.Value(n)
				g, ok := v.(GridShape)
				if !ok {
					continue
				}
				procs := big.NewInt(1)
				for _, d := range g {
					if d < 1 {
						t.Fatalf("%s: grid %v accepted", data, g)
					}
					procs.Mul(procs, big.NewInt(int64(d)))
				}
				if procs.Cmp(big.NewInt(int64(ranks))) > 0 {
					t.Fatalf("%s: grid %v of %v processes accepted on %d ranks", data, g, procs, ranks)
				}
			}
			if s.Program != nil && s.Program.Ranks(c) < 1 {
				t.Fatalf("%s: configuration %s of %d ranks accepted", data, c.Label(), s.Program.Ranks(c))
			}
		}
		for _, r := range s.Runs {
			if r.Config < 0 || r.Config >= len(configs) {
				t.Fatalf("%s: run of configuration %d accepted, of %d", data, r.Config, len(configs))
			}
		}
		// The normalized spec (what the agent announces in its start
		// event) validates to the same configurations.
		js, _ = json.Marshal(s)
		again, err := Parse(js)
		if err != nil {
			t.Fatalf("normalized spec %s does not parse: %v", js, err)
		}
		configs2, err := again.Validate(lookup, []string{"toy"}, ranks)
		if err != nil {
			t.Fatalf("normalized spec %s does not validate: %v", js, err)
		}
		if !reflect.DeepEqual(labels(configs), labels(configs2)) {
			t.Fatalf("normalized spec %s validates to %v, the spec to %v", js, labels(configs2), labels(configs))
		}
	})
}

// spaceSize is the product of the lengths of the space's lists (a single
// value counts 1), as a big number: an upper bound of the configurations.
func spaceSize(s *Spec) *big.Int {
	n := big.NewInt(1)
	for _, raw := range s.Space {
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) == nil && len(items) > 1 {
			n.Mul(n, big.NewInt(int64(len(items))))
		}
	}
	return n
}

func labels(cs []Config) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Label()
	}
	return out
}

// oneLine fails unless err is one line that begins with prefix.
func oneLine(t *testing.T, err error, prefix string) {
	t.Helper()
	if msg := err.Error(); !strings.HasPrefix(msg, prefix) || strings.Contains(msg, "\n") {
		t.Fatalf("error %q: want one line that begins %q", msg, prefix)
	}
}
