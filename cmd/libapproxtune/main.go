// Command libapproxtune is approxtune's preload library, built with
//
//	go build -tags noopenblas -buildmode=c-shared -o libapproxtune.so ./cmd/libapproxtune
//
// (noopenblas: the library runs the program's own BLAS and LAPACK and must
// not bring another) and loaded into a user's unmodified MPI program with
// LD_PRELOAD (the approxtune command does this). It interposes the BLAS,
// LAPACK and MPI entry points listed in interpose.h, forwarding each call to
// the real routine (interpose.c). It counts the calls; with
// APPROXTUNE_CHECK set, rank 0 writes the counts to that file at
// MPI_Finalize (`approxtune program --check`). With APPROXTUNE_RUN set
// (preload.Run), the launch is a selective run: the routines the engine
// models go through the same engine as the built-in workloads (engine.go),
// executed or skipped under the run's policy and tolerance, and rank 0
// writes the run's result at MPI_Finalize.
package main

/*
#cgo LDFLAGS: -ldl
#include "interpose.h"
*/
import "C"

import (
	"fmt"
	"os"
	"unsafe"

	"github.com/approxtune/approxtune/internal/preload"
)

// main is required by -buildmode=c-shared and never runs.
func main() {}

// atReport receives the calls of each routine summed over the size ranks,
// on rank 0 at MPI_Finalize, and writes the check report if one was asked
// for; with them the ranks that called approxtune_begin, those that called
// it more than once, and the same of approxtune_end (marks), and the
// index of an MPI routine a thread other than MPI's called (-1: none).
//
//export atReport
func atReport(sums *C.longlong, n C.int, size C.int, marks *C.longlong, foreign C.int) {
	path := os.Getenv(preload.EnvCheck)
	if path == "" {
		return
	}
	c := &preload.Check{Ranks: int(size), Calls: map[string]int64{}}
	for i, k := range unsafe.Slice((*int64)(unsafe.Pointer(sums)), int(n)) {
		name := C.GoString(C.at_routine_name(C.int(i)))
		c.Calls[name] = k
		if C.at_routine_engine(C.int(i)) == 0 {
			c.Counted = append(c.Counted, name)
		}
	}
	m := unsafe.Slice((*int64)(unsafe.Pointer(marks)), 4)
	c.Begin, c.BeginTwice, c.End, c.EndTwice = int(m[0]), int(m[1]), int(m[2]), int(m[3])
	if foreign >= 0 {
		c.ForeignMPI = C.GoString(C.at_routine_name(foreign))
	}
	c.LinksMarks = preload.MarksRegion()
	if err := preload.WriteCheck(path, c); err != nil {
		fmt.Fprintln(os.Stderr, "libapproxtune:", err)
	}
}
