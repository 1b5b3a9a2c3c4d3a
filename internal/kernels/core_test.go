package kernels

import (
	"strings"
	"testing"
)

// TestCoreWarning: an SSE-only OpenBLAS kernel set on a CPU with AVX2 or
// AVX-512 draws one sentence that names the kernels, the CPU's extension
// and the OPENBLAS_CORETYPE to set (a DYNAMIC_ARCH build) or the build to
// get (one without); kernels with AVX, or a CPU without AVX2, draw none.
func TestCoreWarning(t *testing.T) {
	cases := []struct {
		core    string
		cpu     simd
		dynamic bool
		env     string
		want    []string // substrings; nil: no warning
	}{
		{"Prescott", simdAVX512, true, "", []string{"OpenBLAS chose its Prescott kernels", "CPU with AVX-512", "set OPENBLAS_CORETYPE=SkylakeX (mpirun -x"}},
		{"Nehalem", simdAVX2, true, "", []string{"its Nehalem kernels", "CPU with AVX2", "set OPENBLAS_CORETYPE=Haswell (mpirun -x"}},
		{"Katmai", simdAVX2, true, "", []string{"its Katmai kernels", "OPENBLAS_CORETYPE=Haswell"}},
		{"Prescott", simdAVX2, true, "prescott", []string{"OPENBLAS_CORETYPE=prescott gives OpenBLAS's Prescott kernels", "set OPENBLAS_CORETYPE=Haswell instead"}},
		{"PRESCOTT", simdAVX512, false, "SkylakeX", []string{"OpenBLAS was built for PRESCOTT kernels only", "CPU with AVX-512", "DYNAMIC_ARCH"}},
		{"Prescott", simdNone, true, "", nil},
		{"Sandybridge", simdAVX2, true, "", nil},
		{"Haswell", simdAVX512, true, "", nil},
		{"HASWELL", simdAVX512, false, "", nil},
		{"Cooperlake", simdAVX512, true, "", nil},
		{"Zen", simdAVX2, true, "", nil},
		{"", simdAVX512, true, "", nil},
	}
	for _, c := range cases {
		w := coreWarning(c.core, c.cpu, c.dynamic, c.env)
		if c.want == nil {
			if w != "" {
				t.Errorf("%s kernels on a CPU with %s: warning %q, want none", c.core, c.cpu, w)
			}
			continue
		}
		if !c.dynamic && strings.Contains(w, "set OPENBLAS_CORETYPE") {
			t.Errorf("%s kernels without DYNAMIC_ARCH: warning %q suggests OPENBLAS_CORETYPE, which such a build ignores", c.core, w)
		}
		for _, s := range c.want {
			if !strings.Contains(w, s) {
				t.Errorf("%s kernels (DYNAMIC_ARCH %v) on a CPU with %s (OPENBLAS_CORETYPE=%q): warning %q lacks %q", c.core, c.dynamic, c.cpu, c.env, w, s)
			}
		}
	}
	if w := Warnings(newGonumBackend()); w != nil {
		t.Errorf("gonum backend: warnings %q, want none", w)
	}
}
