package catalog

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/sweep"
)

// Registry: names are sorted and every workload validates its defaults.
func TestRegistry(t *testing.T) {
	names := Names()
	if !sort.StringsAreSorted(names) || !slices.Contains(names, "summa") || !slices.Contains(names, "synthetic") {
		t.Fatalf("names %v: want sorted, with summa and synthetic", names)
	}
	for _, w := range All() {
		c := sweep.NewConfig(w.Params(), nil)
		if err := w.Check(c, max(4, w.Grid(c).Procs())); err != nil {
			t.Errorf("%s defaults %s rejected: %v", w.Name(), c.Label(), err)
		}
		if w.Doc() == "" {
			t.Errorf("%s has no doc", w.Name())
		}
	}
	if _, ok := Lookup("nope"); ok {
		t.Error("Lookup found an unknown workload")
	}
}

// The example specs validate against their workloads: every policy at three
// tolerances, evaluate, three references.
func TestExampleSpecs(t *testing.T) {
	for _, c := range []struct {
		file           string
		ranks, configs int
	}{
		{"cholesky2d-evaluate.json", 4, 8},  // lookahead {0, 1} x four tile sizes
		{"cholesky3d-evaluate.json", 8, 15}, // base-case sizes x strategies
		{"qr2d-evaluate.json", 4, 15},       // five block sizes on the three grids of 4 ranks
	} {
		data, err := os.ReadFile(filepath.Join(testenv.Root(t), "examples", c.file))
		if err != nil {
			t.Fatal(err)
		}
		spec, err := sweep.Parse(data)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		configs, err := spec.Validate(Schema, Names(), c.ranks)
		if err != nil {
			t.Fatalf("%s: validate: %v", c.file, err)
		}
		if len(configs) != c.configs || len(spec.Policies) != 5 || len(spec.Tolerances) != 3 || spec.Mode != sweep.ModeEvaluate || spec.ReferenceReps != 3 {
			t.Errorf("%s: %d configurations, policies %v, tolerances %v, mode %s, reps %d; want %d, all five, three, evaluate, 3",
				c.file, len(configs), spec.Policies, spec.Tolerances, spec.Mode, spec.ReferenceReps, c.configs)
		}
	}
}
