// Package workloads holds the distributed algorithms whose configurations
// approxtune tunes. Each workload declares its parameters, checks a
// configuration, and runs it on a processor grid with every kernel and message
// going through the engine (package selective).
//
// Local matrix blocks are float64, row-major (element (i,j) at a[i*ld+j]), as
// in package kernels.
package workloads

import (
	"context"
	"fmt"
	"sort"

	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/selective"
	"github.com/approxtune/approxtune/sweep"
)

// Env is what a workload runs with on one process.
type Env struct {
	Grid *selective.Grid  // the configuration's processor grid; this process is a member
	K    *kernels.Kernels // computation kernels, through the engine
	Seed int64            // input seed: the same seed gives the same matrices for every configuration
}

// Workload is a distributed algorithm with a tuning space.
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
	// Setup allocates one configuration's data on a member of its grid.
	Setup(env *Env, c sweep.Config) (Instance, error)
}

// Instance is one configuration prepared on one process.
type Instance interface {
	// Init (re)generates the inputs; it is not timed.
	Init()
	// Run executes the algorithm; this is what is timed.
	Run(ctx context.Context) error
	// Verify checks the result of the last Run against a check computed another
	// way and returns a relative residual. It is collective over the grid and
	// not timed; it only makes sense after a full (non-selective) run.
	Verify() float64
}

// All returns every workload, sorted by name.
func All() []Workload {
	ws := []Workload{cholesky2d{}, cholesky3d{}, qr2d{}, summa{}, synthetic{}}
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
func Lookup(name string) (Workload, bool) {
	for _, w := range All() {
		if w.Name() == name {
			return w, true
		}
	}
	return nil, false
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
