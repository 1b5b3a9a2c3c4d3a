package kernels

import (
	"strings"
	"testing"
)

// TestCoreWarning: an SSE-only OpenBLAS kernel set on a CPU with AVX2 or
// AVX-512 draws one sentence that names the kernels, the CPU's extension
// and the OPENBLAS_CORETYPE to set; kernels with AVX, or a CPU without
// AVX2, draw none.
func TestCoreWarning(t *testing.T) {
	cases := []struct {
		core string
		cpu  simd
		env  string
		want []string // substrings; nil: no warning
	}{
		{"Prescott", simdAVX512, "", []string{"OpenBLAS chose its Prescott kernels", "CPU with AVX-512", "set OPENBLAS_CORETYPE=SkylakeX ("}},
		{"Nehalem", simdAVX2, "", []string{"its Nehalem kernels", "CPU with AVX2", "set OPENBLAS_CORETYPE=Haswell ("}},
		{"Prescott", simdAVX2, "prescott", []string{"OPENBLAS_CORETYPE=prescott gives OpenBLAS's Prescott kernels", "set OPENBLAS_CORETYPE=Haswell instead"}},
		{"Prescott", simdNone, "", nil},
		{"Sandybridge", simdAVX2, "", nil},
		{"Haswell", simdAVX512, "", nil},
		{"Cooperlake", simdAVX512, "", nil},
		{"Zen", simdAVX2, "", nil},
		{"", simdAVX512, "", nil},
	}
	for _, c := range cases {
		w := coreWarning(c.core, c.cpu, c.env)
		if c.want == nil {
			if w != "" {
				t.Errorf("%s kernels on a CPU with %s: warning %q, want none", c.core, c.cpu, w)
			}
			continue
		}
		for _, s := range c.want {
			if !strings.Contains(w, s) {
				t.Errorf("%s kernels on a CPU with %s (OPENBLAS_CORETYPE=%q): warning %q lacks %q", c.core, c.cpu, c.env, w, s)
			}
		}
	}
	if w := Warnings(newGonumBackend()); w != nil {
		t.Errorf("gonum backend: warnings %q, want none", w)
	}
}
