package preload_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/approxtune/approxtune/internal/preload"
	"github.com/approxtune/approxtune/internal/testenv"
)

// An executable that defines interposed BLAS routines itself (a static
// BLAS) is named with them; one that calls them from a shared library, a
// script, and a missing file are not. A reviewer's program linked with
// libopenblas.a passed --check and ran at about 1x without a word.
func TestStaticKernels(t *testing.T) {
	cc := testenv.Tool(t, "mpicc")
	dir := t.TempDir()
	build := func(name, src string, flags ...string) string {
		c, exe := filepath.Join(dir, name+".c"), filepath.Join(dir, name)
		if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(cc, append([]string{"-o", exe, c}, flags...)...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		return exe
	}
	own := build("own", `void dgemm_(void) {}
void dpotrf_(void) {}
int main(void) { dgemm_(); dpotrf_(); return 0; }
`)
	calls := build("calls", `void dgemm_(void);
int main(int argc, char **argv) { if (argc > 5) dgemm_(); return 0; }
`, "-lopenblas")
	if got := preload.StaticKernels(own); !slices.Equal(got, []string{"dgemm_", "dpotrf_"}) {
		t.Errorf("own: %v, want [dgemm_ dpotrf_]", got)
	}
	if note := preload.StaticKernelsNote(own); !strings.Contains(note, "own defines dgemm_, dpotrf_ itself") {
		t.Errorf("note %q", note)
	}
	script := filepath.Join(dir, "run.sh")
	os.WriteFile(script, []byte("#!/bin/sh\nexec ./own\n"), 0o755)
	for _, p := range []string{calls, script, filepath.Join(dir, "missing")} {
		if got := preload.StaticKernels(p); got != nil {
			t.Errorf("%s: %v, want none", p, got)
		}
	}
}

// Ranks starts the program through env with the library set; a program
// whose path holds '=' (which env would take for a variable to set) is
// started all the same, with its arguments.
func TestRanksStartsThePath(t *testing.T) {
	for _, dir := range []string{"plain", "a=b"} {
		d := filepath.Join(t.TempDir(), dir)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		prog := filepath.Join(d, "prog")
		if err := os.WriteFile(prog, []byte("#!/bin/sh\necho \"ran $1 $2 with [$LD_PRELOAD]\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		name, args := preload.Ranks("", prog, []string{"x", "y z"})
		out, err := exec.Command(name, args...).CombinedOutput()
		if err != nil || string(out) != "ran x y z with []\n" {
			t.Errorf("%s: %v %q", prog, err, out)
		}
	}
}

// A program linked with the preload library itself (-lapproxtune) is
// refused, naming it: linked before the BLAS, the library found no dgemm_
// behind its own and aborted every launch (a review). One linked without
// it passes.
func TestCheckLinkageOwnLibrary(t *testing.T) {
	cc := testenv.Tool(t, "mpicc")
	dir := t.TempDir()
	run := func(args ...string) {
		if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	src := filepath.Join(dir, "p.c")
	if err := os.WriteFile(src, []byte("void approxtune_end(void);\nint main(int argc, char **argv) { if (argc > 5) approxtune_end(); return 0; }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, "lib.c")
	if err := os.WriteFile(lib, []byte("void approxtune_end(void) {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("-shared", "-fPIC", "-o", filepath.Join(dir, preload.LibName), lib)
	linked, plain := filepath.Join(dir, "linked"), filepath.Join(dir, "plain")
	run("-o", linked, src, "-L"+dir, "-lapproxtune")
	run("-o", plain, filepath.Join(dir, "lib.c"), src)
	if err := preload.CheckLinkage(linked); err == nil || !strings.Contains(err.Error(), "links approxtune's preload library itself (libapproxtune.so): build it without -lapproxtune") {
		t.Errorf("linked with -lapproxtune: %v", err)
	}
	if err := preload.CheckLinkage(plain); err != nil {
		t.Errorf("linked without it: %v", err)
	}
}
