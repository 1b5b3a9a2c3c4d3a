//go:build !mpich && !mpicustom

package mpi_test

import "github.com/approxtune/approxtune/internal/launch"

// The MPI implementation this test binary is linked against (see cmpi.go).
const (
	libFlavor = launch.OpenMPI
	libName   = "Open MPI" // what MPI_Get_library_version starts with
)
