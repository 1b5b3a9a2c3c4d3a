package policy

import (
	"math"
	"slices"
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	want := []string{"conditional", "local", "online", "apriori", "eager"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	for _, n := range want {
		p, err := Lookup(n)
		if err != nil || p.Name() != n {
			t.Fatalf("Lookup(%q) = %v, %v", n, p, err)
		}
		if p.Doc() == "" {
			t.Errorf("%s has no Doc", n)
		}
	}
	if _, err := Lookup("greedy"); err == nil || !strings.Contains(err.Error(), "conditional, local, online, apriori, eager") {
		t.Fatalf("error %v does not name the valid policies", err)
	}
}

// Each policy's alpha reads its own field of Kernel and nothing else.
func TestSignificance(t *testing.T) {
	k := Kernel{Calls: 3, PathCount: 5, CriticalCount: 7}
	want := map[string]float64{"conditional": 1, "local": 3, "online": 5, "apriori": 7, "eager": 1}
	for _, p := range All() {
		if got := p.Significance(k); got != want[p.Name()] {
			t.Errorf("%s: Significance = %v, want %v", p.Name(), got, want[p.Name()])
		}
	}
}

// The capabilities each policy has, as the engine finds them.
func TestCapabilities(t *testing.T) {
	has := func(p Policy) string {
		var cs []string
		if _, ok := p.(PathCounter); ok {
			cs = append(cs, "path")
		}
		if _, ok := p.(Rehearser); ok {
			cs = append(cs, "counting")
		}
		if _, ok := p.(Sharer); ok {
			cs = append(cs, "shares")
		}
		if _, ok := p.(Carrier); ok {
			cs = append(cs, "carries")
		}
		if _, ok := p.(Promiser); ok {
			cs = append(cs, "promises")
		}
		return strings.Join(cs, ",")
	}
	want := map[string]string{"conditional": "promises", "local": "promises", "online": "path", "apriori": "counting,promises",
		"eager": "shares,carries"}
	for _, p := range All() {
		if got := has(p); got != want[p.Name()] {
			t.Errorf("%s has %q, want %q", p.Name(), got, want[p.Name()])
		}
	}
}

// Distance is how many more samples make n·alpha reach q: after it, the
// policy's own alpha passes the test exactly.
func TestDistance(t *testing.T) {
	const n, q = 10.0, 400.0
	for _, c := range []struct {
		p    Promiser
		k    Kernel
		want float64
	}{
		{Conditional{}, Kernel{Calls: 20}, 390},
		{Apriori{}, Kernel{CriticalCount: 4}, 90},
		{Apriori{}, Kernel{CriticalCount: 0}, 390}, // below 1 counts as 1
	} {
		if got := c.p.Distance(n, q, c.k); got != c.want {
			t.Errorf("%s: Distance = %v, want %v", c.p.Name(), got, c.want)
		}
	}
	// Local's alpha is the calls, which grow with the samples.
	k := Kernel{Calls: 20}
	d := Local{}.Distance(n, q, k)
	if got := (n + d) * (float64(k.Calls) + d); math.Abs(got-q) > 1e-9 {
		t.Errorf("local: (n+d)(calls+d) = %v after d = %v, want %v", got, d, q)
	}
}
