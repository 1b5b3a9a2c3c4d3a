package sweep

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Kind is the type of a workload parameter.
type Kind int

// Parameter kinds.
const (
	Int    Kind = iota // an integer in [Min, Max]
	Grid               // a processor grid "PRxPC" (or "PRxPCxPD"), Dims dimensions
	Choice             // one of Choices
)

func (k Kind) String() string {
	switch k {
	case Int:
		return "integer"
	case Grid:
		return "grid"
	case Choice:
		return "choice"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Param describes one tunable or fixed parameter of a workload.
type Param struct {
	Name    string   `json:"name"`
	Kind    Kind     `json:"kind"`
	Doc     string   `json:"doc"`
	Default any      `json:"default"`           // int, GridShape or string
	Min     int      `json:"min,omitempty"`     // Int only
	Max     int      `json:"max,omitempty"`     // Int only
	Dims    int      `json:"dims,omitempty"`    // Grid only: 2 or 3
	Choices []string `json:"choices,omitempty"` // Choice only
}

// Valid describes the values the parameter accepts, for error messages.
func (p Param) Valid() string {
	switch p.Kind {
	case Int:
		return fmt.Sprintf("an integer from %d to %d", p.Min, p.Max)
	case Grid:
		if p.Dims == 3 {
			return `a grid "PRxPCxPD" of positive integers`
		}
		return `a grid "PRxPC" of positive integers`
	case Choice:
		return "one of " + strings.Join(p.Choices, ", ")
	}
	return "?"
}

// GridShape is a processor grid's extent in each dimension.
type GridShape []int

// Procs is the number of processes in the grid (math.MaxInt for a grid
// past what an int counts, so that it never fits an agent).
func (g GridShape) Procs() int {
	n := 1
	for _, d := range g {
		if d > 0 && n > math.MaxInt/d {
			return math.MaxInt
		}
		n *= d
	}
	return n
}

func (g GridShape) String() string {
	s := make([]string, len(g))
	for i, d := range g {
		s[i] = strconv.Itoa(d)
	}
	return strings.Join(s, "x")
}

// MarshalJSON writes the grid as its string form, "2x4".
func (g GridShape) MarshalJSON() ([]byte, error) { return json.Marshal(g.String()) }

// ParseGrid reads "PRxPC" or "PRxPCxPD".
func ParseGrid(s string) (GridShape, error) {
	parts := strings.Split(strings.TrimSpace(strings.ToLower(s)), "x")
	g := make(GridShape, len(parts))
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 1 {
			return nil, fmt.Errorf("%q is not a grid: want positive integers separated by x, like 2x2", s)
		}
		g[i] = v
	}
	return g, nil
}

// parse converts one JSON value to the parameter's Go value (int, GridShape or
// string), or says what is valid.
func (p Param) parse(raw json.RawMessage) (any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	return p.Convert(v)
}

// Convert checks a decoded JSON value (float64 or string) or a Go value (int,
// GridShape, string) against the parameter and returns its canonical Go value.
func (p Param) Convert(v any) (any, error) {
	switch p.Kind {
	case Int:
		var f float64
		switch x := v.(type) {
		case float64:
			f = x
		case int:
			f = float64(x)
		case string:
			n, err := strconv.Atoi(x)
			if err != nil {
				return nil, fmt.Errorf("%q is not valid: want %s", x, p.Valid())
			}
			f = float64(n)
		default:
			return nil, fmt.Errorf("%v is not valid: want %s", v, p.Valid())
		}
		if f != math.Trunc(f) || f < float64(p.Min) || f > float64(p.Max) {
			// As typed, not "2e+06".
			return nil, fmt.Errorf("%s is out of range: want %s", strconv.FormatFloat(f, 'f', -1, 64), p.Valid())
		}
		return int(f), nil
	case Grid:
		var g GridShape
		switch x := v.(type) {
		case string:
			var err error
			if g, err = ParseGrid(x); err != nil {
				return nil, err
			}
		case GridShape:
			g = x
		default:
			return nil, fmt.Errorf("%v is not valid: want %s", v, p.Valid())
		}
		if len(g) != p.Dims {
			return nil, fmt.Errorf("%q has %d dimensions: want %s", g.String(), len(g), p.Valid())
		}
		return g, nil
	case Choice:
		s, ok := v.(string)
		if !ok {
			if n, isNum := v.(float64); isNum {
				s = strconv.FormatFloat(n, 'f', -1, 64)
			} else if n, isInt := v.(int); isInt {
				s = strconv.Itoa(n)
			} else {
				return nil, fmt.Errorf("%v is not valid: want %s", v, p.Valid())
			}
		}
		for _, c := range p.Choices {
			if c == s {
				return s, nil
			}
		}
		return nil, fmt.Errorf("%q is not valid: want %s", s, p.Valid())
	}
	return nil, fmt.Errorf("parameter %s has unknown kind %v", p.Name, p.Kind)
}
