package launch

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestFlavorOf(t *testing.T) {
	for in, want := range map[string]Flavor{
		"mpirun (Open MPI) 4.1.4\n":                OpenMPI,
		"HYDRA build details:\n    Version: 4.0.2": MPICH,
		"Intel(R) MPI Library":                     Unknown,
	} {
		if got := flavorOf(in); got != want {
			t.Errorf("flavorOf(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestArgsAndEnvWhenOversubscribed(t *testing.T) {
	l := &Launcher{Path: "mpirun", Flavor: OpenMPI, Cores: 2}
	a := l.Args(4, "/bin/prog", "agent", "--sweep", "x")
	if !slices.Equal(a[:2], []string{"-n", "4"}) || !slices.Contains(a, "core:OVERSUBSCRIBE") || !slices.Contains(a, "core:overload-allowed") {
		t.Errorf("args %v: want -n 4 with core binding and oversubscription", a)
	}
	if !slices.Equal(a[len(a)-4:], []string{"/bin/prog", "agent", "--sweep", "x"}) {
		t.Errorf("args %v do not end with the program and its arguments", a)
	}
	env := strings.Join(l.Env(4), " ")
	for _, want := range []string{"OPENBLAS_NUM_THREADS=1", "OMPI_MCA_mpi_yield_when_idle=1", "OMPI_MCA_coll_tuned_bcast_algorithm=6"} {
		if !strings.Contains(env, want) {
			t.Errorf("env %q lacks %s", env, want)
		}
	}
	// Not oversubscribed: no binding override, no yield, default broadcast.
	a = l.Args(2, "/bin/prog")
	env = strings.Join(l.Env(2), " ")
	if slices.Contains(a, "core:OVERSUBSCRIBE") || strings.Contains(env, "yield") || strings.Contains(env, "bcast") {
		t.Errorf("2 ranks on 2 cores: args %v env %q, want no oversubscription settings", a, env)
	}
	// MPICH gets none of Open MPI's flags.
	m := &Launcher{Path: "mpiexec.mpich", Flavor: MPICH, Cores: 2}
	if a := m.Args(4, "p"); len(a) != 3 || strings.Contains(strings.Join(m.Env(4), " "), "OMPI") {
		t.Errorf("MPICH args %v env %v", a, m.Env(4))
	}
}

// TestWarningsOnSingleCopyOff: Open MPI's single-copy transfers turned off
// in the environment draw a warning that names the variable; on, unset, or
// under MPICH, none.
func TestWarningsOnSingleCopyOff(t *testing.T) {
	const v = "OMPI_MCA_btl_vader_single_copy_mechanism"
	const ompi = "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022"
	for val, want := range map[string]int{"none": 1, " NONE ": 1, "cma": 0, "": 0} {
		env := map[string]string{v: val}
		w := TransportWarnings(ompi, func(k string) string { return env[k] })
		if len(w) != want || (want == 1 && !strings.HasPrefix(w[0], v+"=none:")) {
			t.Errorf("%s=%q: warnings %q, want %d naming the variable", v, val, w, want)
		}
	}
	both := func(k string) string { return "none" }
	if w := TransportWarnings("mpirun (Open MPI) 4.1.4", both); len(w) != 2 {
		t.Errorf("vader and sm both none: warnings %q, want 2", w)
	}
	if w := TransportWarnings("MPICH Version: 4.0.2", both); len(w) != 0 {
		t.Errorf("MPICH with %s=none: warnings %q, want none (an Open MPI setting)", v, w)
	}
}

// An mpirun found in a folder that is a link to another (/bin to /usr/bin)
// is run from the folder linked to: Open MPI takes its prefix from the
// path it was run by, and /bin/mpirun gave "/", which it refuses, so the
// agent did not start with PATH=/bin:/usr/bin.
func TestForPathResolvesLinkedFolder(t *testing.T) {
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Fatalf("mpirun: %v (install.sh --test-deps installs Open MPI)", err)
	}
	real, err := filepath.EvalSymlinks(filepath.Dir(mpirun))
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "bin")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	l, err := ForPath(filepath.Join(link, filepath.Base(mpirun)))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(real, filepath.Base(mpirun)); l.Path != want {
		t.Errorf("Path %s, want %s", l.Path, want)
	}
}

// MPICH's waiting ranks poll: more ranks on a node than cores draws a
// warning that names both counts; as many ranks as cores, Open MPI (whose
// ranks Env sets to yield), or no count from the launcher draw none.
func TestOversubscribedMPICH(t *testing.T) {
	const mpich = "MPICH Version: 4.0.2"
	for _, c := range []struct {
		lib, local  string
		cores, want int
	}{
		{mpich, "4", 2, 1}, {mpich, "2", 2, 0}, {mpich, "", 2, 0},
		{"Open MPI v4.1.4", "4", 2, 0},
	} {
		w := OversubscribedWarnings(c.lib, func(k string) string {
			if k == "MPI_LOCALNRANKS" {
				return c.local
			}
			return ""
		}, c.cores)
		if len(w) != c.want || c.want == 1 && !strings.Contains(w[0], c.local+" ranks on 2 cores under MPICH") {
			t.Errorf("%s, %q ranks on %d cores: warnings %q, want %d", c.lib, c.local, c.cores, w, c.want)
		}
	}
	if w := Oversubscribed(MPICH, 8, 4); !strings.Contains(w, "run at most 4 ranks") {
		t.Errorf("8 MPICH ranks on 4 cores: %q, want advice to run at most 4", w)
	}
}
