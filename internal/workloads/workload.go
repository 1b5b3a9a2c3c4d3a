// Package workloads holds the distributed algorithms whose configurations
// approxtune tunes. Each workload embeds its description from package catalog
// (parameters, constraints, grid) and runs a configuration on a processor
// grid with every kernel and message going through the engine (package
// selective).
//
// Local matrix blocks are float64, row-major (element (i,j) at a[i*ld+j]), as
// in package kernels.
package workloads

import (
	"context"

	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/selective"
	"github.com/approxtune/approxtune/internal/workloads/catalog"
	"github.com/approxtune/approxtune/sweep"
)

// Env is what a workload runs with on one process.
type Env struct {
	Grid *selective.Grid  // the configuration's processor grid; this process is a member
	K    *kernels.Kernels // computation kernels, through the engine
	Seed int64            // input seed: the same seed gives the same matrices for every configuration
}

// Workload is a distributed algorithm with a tuning space: its description
// (package catalog) and how to run it.
type Workload interface {
	catalog.Workload
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

// CallCounter is implemented by a workload that can tell, before running a
// configuration, about how many kernel calls its run makes: what a
// selective run of it costs once its kernels are known, and, on a space of
// tile sizes, a rough rank of its speed (fewer, larger kernels run faster up
// to a point). A search runs its first round fewest calls first, so that
// the fast configurations' predictions come early and the runs of far
// slower ones can be cut short (internal/agent, search.go).
type CallCounter interface {
	Calls(c sweep.Config) float64
}

// Lookup finds a workload by the name its description gives it.
func Lookup(name string) (Workload, bool) {
	return catalog.Find([]Workload{cholesky2d{}, cholesky3d{}, qr2d{}, summa{}, synthetic{}}, name)
}

// All returns every workload of the catalog with its implementation, sorted
// by name.
func All() []Workload {
	var ws []Workload
	for _, d := range catalog.All() {
		if w, ok := Lookup(d.Name()); ok {
			ws = append(ws, w)
		}
	}
	return ws
}
