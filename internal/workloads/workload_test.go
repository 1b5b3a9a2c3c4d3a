package workloads

import (
	"reflect"
	"testing"

	"github.com/approxtune/approxtune/internal/workloads/catalog"
)

// Every workload of the catalog has an implementation, which carries the
// catalog's description.
func TestEveryWorkloadImplemented(t *testing.T) {
	for _, d := range catalog.All() {
		w, ok := Lookup(d.Name())
		if !ok {
			t.Errorf("%s has no implementation", d.Name())
			continue
		}
		if w.Doc() != d.Doc() || !reflect.DeepEqual(w.Params(), d.Params()) {
			t.Errorf("%s's implementation has another description", d.Name())
		}
	}
	if _, ok := Lookup("nope"); ok {
		t.Error("Lookup found an unknown workload")
	}
}
