package kernels

import (
	"fmt"
	"os"
	"strings"
)

// simd is the widest vector extension family of the CPU that OpenBLAS has
// x86-64 kernels for.
type simd int

const (
	simdNone   simd = iota // neither below, or not x86-64
	simdAVX2               // AVX2 with FMA: OpenBLAS's Haswell kernels
	simdAVX512             // AVX-512 F, BW, DQ and VL: its SkylakeX kernels
)

// String names the extension as the warnings do.
func (s simd) String() string {
	switch s {
	case simdAVX2:
		return "AVX2"
	case simdAVX512:
		return "AVX-512"
	}
	return "none"
}

// coreType is the OPENBLAS_CORETYPE value that selects OpenBLAS's kernels
// for the extension.
func (s simd) coreType() string {
	switch s {
	case simdAVX2:
		return "Haswell"
	case simdAVX512:
		return "SkylakeX"
	}
	return ""
}

// sseOnlyCore reports whether name, as openblas_get_corename returns it,
// is one of OpenBLAS's x86-64 kernel sets that use SSE only (no AVX of any
// kind). A DYNAMIC_ARCH build falls back to Prescott's on new Intel models
// it does not recognise; builds with a DYNAMIC_LIST report Prescott's
// kernels as Katmai; older releases spell Opteron_SSE3 "Opteron(SSE3)".
func sseOnlyCore(name string) bool {
	switch strings.ToLower(name) {
	case "prescott", "core2", "penryn", "dunnington", "nehalem", "atom",
		"opteron", "opteron_sse3", "opteron(sse3)", "barcelona", "nano", "bobcat",
		"katmai", "coppermine", "northwood", "banias", "athlon":
		return true
	}
	return false
}

// coreChoice is what a backend that can tell says about its kernels: the
// name of the kernel set in use, what the CPU could run, and whether the
// library holds kernels for several CPUs (OpenBLAS's DYNAMIC_ARCH, where
// OPENBLAS_CORETYPE picks one).
type coreChooser interface {
	coreChoice() (core string, cpu simd, dynamic bool)
}

// coreWarning says, in one sentence, that OpenBLAS runs SSE-only kernels
// on a CPU with AVX2 or AVX-512: core is openblas_get_corename, cpu what the
// CPU supports, dynamic whether the library is a DYNAMIC_ARCH build, and
// coreTypeEnv the value of OPENBLAS_CORETYPE. It returns "" when there is
// nothing to say.
//
// OpenBLAS 0.3.21 does not recognise some newer CPUs and then picks its
// Prescott kernels: a 512x512 dgemm ran at 13 GFLOP/s on a Xeon with
// AVX-512, 45-54 with OPENBLAS_CORETYPE=SkylakeX. On this project's AMD EPYC
// VM the SSE-only kernel sets ran it at 11-21 GFLOP/s, its own at 47-50
// (docs/benchmarks.md, "Settings the agent warns of"). Kernel times
// measured with them describe a machine slower than the one the user has.
func coreWarning(core string, cpu simd, dynamic bool, coreTypeEnv string) string {
	if cpu == simdNone || !sseOnlyCore(core) {
		return ""
	}
	const effect = "dgemm runs 2-4 times slower with them, and so do the kernel times measured"
	if !dynamic {
		return fmt.Sprintf("OpenBLAS was built for %s kernels only, which use SSE only, on a CPU with %s: %s; use an OpenBLAS built with DYNAMIC_ARCH (Debian's and Ubuntu's are) or for this CPU (docs/benchmarks.md, \"Settings the agent warns of\")", core, cpu, effect)
	}
	why := fmt.Sprintf("OpenBLAS chose its %s kernels", core)
	fix := "set OPENBLAS_CORETYPE=" + cpu.coreType()
	if coreTypeEnv != "" {
		why = fmt.Sprintf("OPENBLAS_CORETYPE=%s gives OpenBLAS's %s kernels", coreTypeEnv, core)
		fix += " instead"
	}
	return fmt.Sprintf("%s, which use SSE only, on a CPU with %s: %s; %s (mpirun -x passes it to other nodes; docs/benchmarks.md, \"Settings the agent warns of\")", why, cpu, effect, fix)
}

// Warnings returns what about the backend makes kernels run much slower
// than the CPU allows, one sentence each: for OpenBLAS, an SSE-only kernel
// set on a CPU with AVX2 or AVX-512. It returns nil when there is nothing
// to say, and for the gonum backend.
func Warnings(b Backend) []string {
	c, ok := b.(coreChooser)
	if !ok {
		return nil
	}
	core, cpu, dynamic := c.coreChoice()
	if w := coreWarning(core, cpu, dynamic, os.Getenv("OPENBLAS_CORETYPE")); w != "" {
		return []string{w}
	}
	return nil
}
