// Package catalog describes the workloads approxtune tunes: each one's name,
// a line of documentation, its parameters, the constraints between them and
// the processor grid a configuration runs on. The descriptions are pure
// functions of a configuration and link no MPI, so that the session can list
// workloads and validate sweeps without the engine; package workloads runs
// them, each implementation embedding its description.
package catalog

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/approxtune/approxtune/sweep"
)

// Workload describes a distributed algorithm and its tuning space.
type Workload interface {
	// Name is what specs and users call it.
	Name() string
	// Doc is a one-line description.
	Doc() string
	// Params lists the parameters, in the order configurations are expanded
	// (the last varies fastest).
	Params() []sweep.Param
	// Check validates constraints between parameters for an agent of ranks
	// processes, naming what is valid.
	Check(c sweep.Config, ranks int) error
	// Grid is the processor grid a configuration runs on.
	Grid(c sweep.Config) sweep.GridShape
}

// All returns every workload, sorted by name.
func All() []Workload {
	ws := []Workload{Cholesky2D{}, Cholesky3D{}, QR2D{}, SUMMA{}, Synthetic{}}
	sort.Slice(ws, func(i, j int) bool { return ws[i].Name() < ws[j].Name() })
	return ws
}

// Names lists the workload names, sorted.
func Names() []string {
	var ns []string
	for _, w := range All() {
		ns = append(ns, w.Name())
	}
	return ns
}

// Lookup finds a workload by name.
func Lookup(name string) (Workload, bool) { return Find(All(), name) }

// Find returns the workload of ws that has the name.
func Find[W Workload](ws []W, name string) (w W, ok bool) {
	i := slices.IndexFunc(ws, func(w W) bool { return w.Name() == name })
	if i < 0 {
		return w, false
	}
	return ws[i], true
}

// Schema adapts Lookup to sweep validation.
func Schema(name string) (sweep.Schema, bool) {
	w, ok := Lookup(name)
	return w, ok
}

// divides reports an error unless b divides each of the named local sizes.
func divides(b int, what string, sizes ...int) error {
	for _, s := range sizes {
		if s%b != 0 {
			return fmt.Errorf("b=%d must divide %s (%v)", b, what, sizes)
		}
	}
	return nil
}

// gcd is the greatest common divisor of a and b.
// blockList lists the block sizes b that divide m and n and leave every
// process of a pr x pc grid a block row and column (m/b >= pr, n/b >= pc):
// a hint that named the gcd of m and n had offered one that left processes
// empty. Past 16 it lists the smallest and largest few.
func blockList(m, n, pr, pc int) string {
	var bs []string
	for d, g := 1, gcd(m, n); d <= g; d++ {
		if g%d == 0 && m/d >= pr && n/d >= pc {
			bs = append(bs, fmt.Sprint(d))
		}
	}
	switch {
	case len(bs) == 0:
		return "none: m and n have no such common divisor on this grid"
	case len(bs) > 16:
		return strings.Join(bs[:4], ", ") + ", ..., " + strings.Join(bs[len(bs)-8:], ", ")
	}
	return strings.Join(bs, ", ")
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
