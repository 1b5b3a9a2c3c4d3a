// Command libapproxtune is approxtune's preload library, built with
//
//	go build -buildmode=c-shared -o libapproxtune.so ./cmd/libapproxtune
//
// and loaded into a user's unmodified MPI program with LD_PRELOAD (the
// approxtune command does this). It interposes the BLAS, LAPACK and MPI
// entry points listed in interpose.h, forwarding each call to the real
// routine (interpose.c). With APPROXTUNE_CHECK set it counts the calls and
// rank 0 writes them to that file at MPI_Finalize (`approxtune program
// --check`).
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
// on rank 0 at MPI_Finalize, and writes the check report if one was asked for.
//
//export atReport
func atReport(sums *C.longlong, n C.int, size C.int) {
	path := os.Getenv(preload.EnvCheck)
	if path == "" {
		return
	}
	c := &preload.Check{Ranks: int(size), Calls: map[string]int64{}}
	for i, k := range unsafe.Slice((*int64)(unsafe.Pointer(sums)), int(n)) {
		c.Calls[C.GoString(C.at_routine_name(C.int(i)))] = k
	}
	if err := preload.WriteCheck(path, c); err != nil {
		fmt.Fprintln(os.Stderr, "libapproxtune:", err)
	}
}
