package agent

import (
	"os"
	"runtime"

	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/launch"
	"github.com/approxtune/approxtune/internal/mpi"
)

// environmentWarnings returns what in this process's environment makes the
// engine's predictions unreliable (launch.TransportWarnings, and under
// MPICH more ranks on the node than cores: launch.OversubscribedWarnings)
// or every
// kernel run far slower than the CPU allows (kernels.Warnings), one
// sentence each. Rank 0 checks its own environment for the whole job, so
// an agent started by hand under the user's mpirun is checked as well as
// one the session or `approxtune agent --ranks` starts; ranks on other
// nodes are assumed set up alike.
func environmentWarnings(backend kernels.Backend) []string {
	lib := mpi.LibraryVersion()
	w := launch.TransportWarnings(lib, os.Getenv)
	w = append(w, launch.OversubscribedWarnings(lib, os.Getenv, runtime.NumCPU())...)
	return append(w, kernels.Warnings(backend)...)
}
