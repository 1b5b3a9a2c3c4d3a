package sweep

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/approxtune/approxtune/internal/format"
)

// fieldError turns a decoding error of spec data (not a syntax error) into
// one line a user reads: the field whose value has the wrong type, what it
// wants and what it got, or the unknown field and the known ones. Go's own
// messages name Go types ("cannot unmarshal string into Go struct field
// Spec.reference_reps of type int"). It returns nil when it finds no
// better words for err.
func fieldError(data []byte, err error) error {
	fields := specFields()
	var top map[string]json.RawMessage
	topErr := json.Unmarshal(data, &top)
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		// In an object within the spec ("program", a run of "runs"),
		// that object's fields: the spec's had been listed, the field
		// among them. Keys match as encoding/json matches them, in any
		// case.
		for key, raw := range top {
			i := slices.IndexFunc(fields, func(f field) bool { return strings.EqualFold(f.name, key) })
			if i < 0 {
				continue
			}
			t := deref(fields[i].typ)
			if k := t.Kind(); k == reflect.Slice || k == reflect.Array || k == reflect.Map {
				t = deref(t.Elem())
			}
			if t.Kind() != reflect.Struct {
				continue
			}
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if e := dec.Decode(reflect.New(fields[i].typ).Interface()); e != nil && strings.HasPrefix(e.Error(), "json: unknown field ") {
				return fmt.Errorf("sweep spec: %s: unknown field %s: its fields are %s", fields[i].name, strings.TrimPrefix(e.Error(), "json: unknown field "), strings.Join(fieldNames(t), ", "))
			}
		}
		names := make([]string, len(fields))
		for i, f := range fields {
			names[i] = f.name
		}
		switch bare := strings.Trim(name, `"`); {
		case strings.EqualFold(bare, "ranks") || strings.EqualFold(bare, "grid"):
			return fmt.Errorf("sweep spec: unknown field %s: a rank count or grid is a parameter of the space ({\"space\": {%q: [...]}}); the fields are %s", name, strings.ToLower(bare), strings.Join(names, ", "))
		case format.Nearest(bare, names) != "":
			return fmt.Errorf("sweep spec: unknown field %s: did you mean %q? The fields are %s", name, format.Nearest(bare, names), strings.Join(names, ", "))
		}
		return fmt.Errorf("sweep spec: unknown field %s: the fields are %s", name, strings.Join(names, ", "))
	}
	if topErr != nil {
		return fmt.Errorf(`sweep spec: want a JSON object ({"workload": "synthetic", "space": {...}}), got %s`, shown(data))
	}
	// Each field alone, in the order of the file's fields as Spec has them:
	// the first that does not decode is the one to name.
	for _, f := range fields {
		raw, ok := top[f.name]
		if !ok {
			continue
		}
		err := json.Unmarshal(raw, reflect.New(f.typ).Interface())
		var ute *json.UnmarshalTypeError
		switch {
		case errors.As(err, &ute):
			return fmt.Errorf("sweep spec: %s: want %s, got %s", f.name, wantOf(f.name), shown(raw))
		case err != nil: // a type's own words (Tolerance's)
			return fmt.Errorf("sweep spec: %s: %w", f.name, err)
		}
	}
	return nil
}

// field is a JSON field of Spec.
type field struct {
	name string
	typ  reflect.Type
}

// specFields lists Spec's JSON fields in order.
func specFields() []field { return jsonFields(reflect.TypeFor[Spec]()) }

// jsonFields lists the JSON fields of struct type t in order.
func jsonFields(t reflect.Type) []field {
	out := make([]field, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, field{name, t.Field(i).Type})
		}
	}
	return out
}

// deref is t past its pointers.
func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// fieldNames are the names of struct type t's JSON fields, in order.
func fieldNames(t reflect.Type) []string {
	var names []string
	for _, f := range jsonFields(t) {
		names = append(names, f.name)
	}
	return names
}

// wantOf says in words what a spec field holds.
func wantOf(name string) string {
	switch name {
	case "workload":
		return `a workload's name, a string ("synthetic")`
	case "program":
		return `an object {"command": ["./prog", "{n}"], "decks": {"FILE": "TEMPLATE"}}`
	case "space":
		return `an object of parameters and their values ({"n": [1024, 2048], "grid": "2x2"})`
	case "policies":
		return fmt.Sprintf(`a list of policy names (["eager"]; the policies are %s)`, strings.Join(Policies(), ", "))
	case "tolerances":
		return `a list of tolerances, numbers or powers of two ([0.125, "2^-5"])`
	case "confidence":
		return "a number between 0 and 1 (0.95)"
	case "mode":
		return "one of " + joinModes(Modes()) + ", a string"
	case "search":
		return `"halving" or "random", a string`
	case "messages":
		return `"skip" or "run", a string`
	case "kernels", "trace", "models":
		return "true or false"
	case "runs":
		return `a list of runs ([{"config": 0, "policy": "eager", "tolerance": 0.125}])`
	case "references":
		return `an object of configuration indexes and their reference times in seconds ({"0": [1.2, 1.3]})`
	case "carried":
		return `a list of statistics carried from a stopped sweep ([{"policy": "eager", "tolerance": 0.5, "ranks": [...]}])`
	case "reference_reps", "n_min", "seed", "budget":
		return "a whole number"
	}
	return "another type"
}

// shown is a JSON value as an error quotes it: compacted, and cut short
// past 40 bytes.
func shown(raw []byte) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		// Not JSON: shown on one line, its runs of white space (line
		// breaks too) as one space.
		b.Reset()
		b.WriteString(strings.Join(strings.Fields(string(raw)), " "))
	}
	s := b.String()
	if len(s) > 40 {
		s = strings.ToValidUTF8(s[:37], "") + "..."
	}
	if s == "" {
		return "nothing"
	}
	return s
}
