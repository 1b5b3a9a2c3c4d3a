package sweep

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Config is one point of a workload's tuning space: a value for every
// parameter, in the order of the workload's schema.
type Config struct {
	names []string
	vals  map[string]any
}

// NewConfig builds a Config from the schema's defaults overridden by set.
// Values in set must already be canonical (see Param.Convert).
func NewConfig(params []Param, set map[string]any) Config {
	c := Config{vals: make(map[string]any, len(params))}
	for _, p := range params {
		c.names = append(c.names, p.Name)
		v, ok := set[p.Name]
		if !ok {
			v = p.Default
		}
		c.vals[p.Name] = v
	}
	return c
}

// Canonical is c with its values as params hold them (Param.Convert): a
// configuration read back from JSON holds a grid as its string, and
// Config.Grid wants the GridShape. Parameters c lacks take their
// defaults; a value params reject is an error naming it.
func Canonical(params []Param, c Config) (Config, error) {
	set := make(map[string]any, len(params))
	for _, p := range params {
		v, ok := c.Value(p.Name)
		if !ok {
			continue
		}
		cv, err := p.Convert(v)
		if err != nil {
			return Config{}, fmt.Errorf("config %s: %w", p.Name, err)
		}
		set[p.Name] = cv
	}
	return NewConfig(params, set), nil
}

// Names lists the parameters in schema order.
func (c Config) Names() []string { return c.names }

// Value returns the value of a parameter and whether it exists.
func (c Config) Value(name string) (any, bool) {
	v, ok := c.vals[name]
	return v, ok
}

// Int returns an integer parameter; it panics if the name is not an integer
// parameter of the workload (a programming error).
func (c Config) Int(name string) int {
	v, ok := c.vals[name].(int)
	if !ok {
		panic(fmt.Sprintf("sweep: config has no integer parameter %q", name))
	}
	return v
}

// Grid returns a grid parameter; it panics if name is not a grid parameter.
func (c Config) Grid(name string) GridShape {
	v, ok := c.vals[name].(GridShape)
	if !ok {
		panic(fmt.Sprintf("sweep: config has no grid parameter %q", name))
	}
	return v
}

// String returns a choice parameter; it panics if name is not a choice parameter.
func (c Config) String(name string) string {
	v, ok := c.vals[name].(string)
	if !ok {
		panic(fmt.Sprintf("sweep: config has no choice parameter %q", name))
	}
	return v
}

// Label is a short human-readable form, "n=1024 b=64 grid=2x2".
func (c Config) Label() string {
	parts := make([]string, len(c.names))
	for i, n := range c.names {
		v := fmt.Sprint(c.vals[n])
		if strings.ContainsFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) {
			v = strconv.Quote(v) // a line break or a control character: the label stays one line
		}
		parts[i] = n + "=" + v
	}
	return strings.Join(parts, " ")
}

// MarshalJSON writes the parameters as an object in schema order.
func (c Config) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, n := range c.names {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(n)
		v, err := json.Marshal(c.vals[n])
		if err != nil {
			return nil, fmt.Errorf("config %s: %w", n, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads a configuration object, keeping its key order.
// Integral numbers become int, other numbers float64, strings stay strings
// (a grid reads back as its string form, "2x2").
func (c *Config) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("config: want an object, got %v", t)
	}
	c.names, c.vals = nil, map[string]any{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := t.(string)
		var v any
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("config %s: %w", k, err)
		}
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				v = int(i)
			} else if f, err := n.Float64(); err == nil {
				v = f
			}
		}
		c.names = append(c.names, k)
		c.vals[k] = v
	}
	_, err = dec.Token()
	return err
}
