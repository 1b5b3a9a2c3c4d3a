package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/preload"
)

func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("version", "approxtune version", "Prints approxtune's version, the Go version it was built with, the MPI library\nit was built against (MPI_Get_library_version) and the BLAS backend in use\n(APPROXTUNE_BLAS=openblas|gonum selects it), and where the preload library\nfor tuning your own programs is.", stderr)
	if code, done := parse(fs, args); done {
		return code
	}
	fmt.Fprintf(stdout, "approxtune %s\n", version)
	fmt.Fprintf(stdout, "go:   %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	lib := strings.TrimSpace(mpi.LibraryVersion())
	if i := strings.IndexAny(lib, "\n,"); i > 0 {
		lib = lib[:i]
	}
	fmt.Fprintf(stdout, "mpi:  %s\n", lib)
	b, err := kernels.DefaultBackend()
	if err != nil {
		fmt.Fprintf(stdout, "blas: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "blas: %s (available: %s)\n", b.Name(), strings.Join(kernels.Backends(), ", "))
	if lib, err := preload.Find(); err != nil {
		fmt.Fprintf(stdout, "preload library: %v\n", err)
	} else {
		fmt.Fprintf(stdout, "preload library: %s\n", lib)
	}
	return 0
}
