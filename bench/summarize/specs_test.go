package main

import (
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
