//go:build mpicustom

package mpi_test

import "github.com/approxtune/approxtune/internal/launch"

// With -tags mpicustom the MPI implementation is whatever CGO_CFLAGS and
// CGO_LDFLAGS name, so the tests assume nothing about it.
const (
	libFlavor = launch.Unknown
	libName   = ""
)
