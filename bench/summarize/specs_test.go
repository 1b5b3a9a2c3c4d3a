package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/approxtune/approxtune/internal/workloads/catalog"
	"github.com/approxtune/approxtune/sweep"
)

// The specs bench/run runs validate for its ranks and span the spaces the
// benchmarks name: cholesky3d n=4096 on 2x2x2 (15 configurations), and the
// cholesky2d search space of at least 100.
func TestBenchSpecs(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, c := range []struct {
		file    string
		ranks   int
		configs int
		search  sweep.Search
	}{
		{"examples/summa-evaluate.json", 4, 9, ""},
		{"bench/specs/cholesky3d.json", 8, 15, ""},
		{"bench/specs/cholesky3d-eager.json", 8, 15, ""},
		{"bench/specs/cholesky3d-models-off.json", 8, 15, ""},
		{"bench/specs/cholesky3d-models-on.json", 8, 15, ""},
		{"bench/specs/apriori.json", 8, 15, ""},
		{"examples/cholesky2d-search.json", 4, 120, sweep.SearchHalving},
		{"examples/cholesky3d-4096.json", 8, 15, sweep.SearchHalving},
	} {
		data, err := os.ReadFile(filepath.Join(root, c.file))
		if err != nil {
			t.Fatal(err)
		}
		s, err := sweep.Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		configs, err := s.Validate(catalog.Schema, catalog.Names(), c.ranks)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		if len(configs) != c.configs || s.Search != c.search || s.Mode != sweep.ModeEvaluate {
			t.Errorf("%s: %d configurations, search %q, mode %s; want %d, %q, evaluate", c.file, len(configs), s.Search, s.Mode, c.configs, c.search)
		}
		if c.file == "bench/specs/cholesky3d-models-on.json" && !s.Models {
			t.Errorf("%s: models off", c.file)
		}
	}
}

// Each benchmark's sweep kind is that of the spec file bench/run runs for
// it (normalized, as the agent's start event carries it), and of no other
// benchmark's spec file but its own twin (cholesky3d-eager and cholesky3d
// share a report, not a kind).
func TestBenchKindsMatchTheirSpecs(t *testing.T) {
	root := filepath.Join("..", "..")
	start := func(file string) []event {
		data, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		s, err := sweep.Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		s.Normalize()
		raw, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		return []event{{Type: "start", Spec: raw}}
	}
	all := benchmarks()
	var kinds []sweepKind
	for name, b := range all {
		kinds = append(kinds, b.kind)
		if err := b.kind.match(start(b.kind.spec)); err != nil {
			t.Errorf("%s: its own spec %s: %v", name, b.kind.spec, err)
		}
		if b.after.spec != "" {
			kinds = append(kinds, b.after)
			if err := b.after.match(start(b.after.spec)); err != nil {
				t.Errorf("%s after vs: its own spec %s: %v", name, b.after.spec, err)
			}
		}
	}
	for _, k := range kinds {
		for _, other := range kinds {
			if other.spec != k.spec && k.match(start(other.spec)) == nil {
				t.Errorf("the kind of %s takes the sweeps of %s", k.spec, other.spec)
			}
		}
	}
}
