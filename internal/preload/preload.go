// Package preload holds what the approxtune preload library
// (cmd/libapproxtune, built with -buildmode=c-shared and loaded into a
// user's MPI program with LD_PRELOAD) and the approxtune command share: where
// the library is installed, the environment that configures it, and the
// reports it writes. It links no MPI.
package preload

import (
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// LibName is the preload library's file name.
const LibName = "libapproxtune.so"

// EnvLib names the preload library in place of the installed one.
const EnvLib = "APPROXTUNE_LIB"

// EnvCheck is the environment variable that asks the library for a check
// report: the file rank 0 writes it to at MPI_Finalize.
const EnvCheck = "APPROXTUNE_CHECK"

// Ranks returns the command a launcher (mpirun, srun) starts in each rank
// to run prog with args and the library lib loaded: env, which sets
// LD_PRELOAD and execs prog. The library so goes into the ranks only:
// set in the launcher's own environment, it would be loaded into mpirun
// too, and with it the Go runtime, whose preemption signal (SIGURG)
// mpirun forwards to the job ("Forwarding signal 23 to job").
func Ranks(lib, prog string, args []string) (string, []string) {
	if strings.ContainsRune(prog, '=') {
		// env would read the path as a variable to set: a shell execs it.
		return "env", append([]string{"LD_PRELOAD=" + lib, "/bin/sh", "-c", `exec "$0" "$@"`, prog}, args...)
	}
	return "env", append([]string{"LD_PRELOAD=" + lib, prog}, args...)
}

// Find returns the preload library's path: $APPROXTUNE_LIB, else
// lib/approxtune/libapproxtune.so beside the bin directory of the running
// executable (where install.sh puts it). The error says how to get it.
func Find() (string, error) { return FindFor("") }

// FindFor is Find for the approxtune executable exe ("": the running one):
// a Go program that drives sessions with another binary's agents
// (session.Options.Binary) uses that binary's library.
func FindFor(exe string) (string, error) {
	if p := os.Getenv(EnvLib); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvLib, p, err)
		}
		return p, nil
	}
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return "", fmt.Errorf("locating the preload library: %w", err)
		}
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	p := filepath.Join(filepath.Dir(filepath.Dir(exe)), "lib", "approxtune", LibName)
	if _, err := os.Stat(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			// Built where it is looked for, it needs no variable (the
			// message had named only the other way, a review).
			return "", fmt.Errorf("the preload library is not installed at %s: run ./install.sh, or build it there from the source tree with `go build -tags noopenblas -buildmode=c-shared -o %s ./cmd/libapproxtune`, or elsewhere and set %s to it", p, p, EnvLib)
		}
		return "", err
	}
	return p, nil
}

// Check is the report of a check run: how often the program called each
// interposed routine, summed over its ranks.
type Check struct {
	Ranks int              `json:"ranks"`
	Calls map[string]int64 `json:"calls"`
	// Begin and End are the ranks that called approxtune_begin and
	// approxtune_end (the timed region's marks), BeginTwice and EndTwice
	// those that called one more than once.
	Begin      int `json:"begin"`
	BeginTwice int `json:"begin_twice"`
	End        int `json:"end"`
	EndTwice   int `json:"end_twice"`
	// ForeignMPI is an MPI routine a thread other than the one that
	// initialized MPI called, or "".
	ForeignMPI string `json:"foreign_mpi,omitempty"`
	// LinksMarks says whether the program links approxtune_begin
	// (MarksRegion): its selective launches then wait for the mark.
	LinksMarks bool `json:"links_marks,omitempty"`
	// Counted are the intercepted routines a selective run only counts
	// and runs as they are (never skipped), the others going through the
	// engine.
	Counted []string `json:"counted,omitempty"`
}

// Problems are what would make the program's launches fail or hang, which
// a check run (the library counting only) lived through: region marks on
// some ranks only, or made twice, and MPI calls from another thread.
func (c *Check) Problems() []string {
	var ps []string
	mark := func(name string, ranks, twice int) {
		switch {
		case ranks > 0 && ranks < c.Ranks:
			ps = append(ps, fmt.Sprintf("%s was called on %d of the %d ranks: mark the region on every rank (a launch waits at the mark for the ranks that never come, for ever)", name, ranks, c.Ranks))
		case twice > 0:
			ps = append(ps, fmt.Sprintf("%s was called more than once on %d of the %d ranks: mark one region, once on every rank (a launch fails at the second call)", name, twice, c.Ranks))
		}
	}
	mark("approxtune_begin", c.Begin, c.BeginTwice)
	mark("approxtune_end", c.End, c.EndTwice)
	if c.LinksMarks && c.Begin == 0 {
		ps = append(ps, "the program links approxtune_begin (approxtune.h) but called it on no rank: its selective launches run in full up to the mark and fail without it; call APPROXTUNE_BEGIN() on every rank in every launch")
	}
	if c.End > 0 && c.Begin == 0 {
		ps = append(ps, "approxtune_end was called without approxtune_begin: mark the region's start too (a launch fails at approxtune_end)")
	}
	if c.ForeignMPI != "" {
		ps = append(ps, fmt.Sprintf("%s was called from a thread other than the one that initialized MPI: approxtune tunes programs that make their MPI calls from one thread (BLAS and LAPACK calls from OpenMP regions are fine), and a launch ends at that call", c.ForeignMPI))
	}
	return ps
}

// Called lists the routines called at least once, most called first.
func (c *Check) Called() []string {
	var names []string
	for n, k := range c.Calls {
		if k > 0 {
			names = append(names, n)
		}
	}
	sort.Slice(names, func(i, j int) bool {
		if c.Calls[names[i]] != c.Calls[names[j]] {
			return c.Calls[names[i]] > c.Calls[names[j]]
		}
		return names[i] < names[j]
	})
	return names
}

// WriteCheck writes c to path.
func WriteCheck(path string, c *Check) error {
	b, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("check report: %w", err)
	}
	return nil
}

// ReadCheck reads the report at path; a missing file is reported as
// fs.ErrNotExist (the program never reached MPI_Finalize through the library).
func ReadCheck(path string) (*Check, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var c Check
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, fmt.Errorf("check report %s: %w", path, err)
	}
	return &c, nil
}

// CheckLinkage reports why the executable at path cannot be tuned through
// the preload library, or nil: the library reaches a program only through
// the dynamic linker, so a statically linked executable is refused, and
// only through MPI's C and mpif.h/mpi-module entry points, so a program
// using Fortran's mpi_f08 module is too (checkF08), as is one that links
// the library itself (-lapproxtune: it aborts every launch). A file
// that is not ELF (a script that starts the program) passes: what it runs
// inherits LD_PRELOAD.
func CheckLinkage(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		var fe *elf.FormatError
		if errors.As(err, &fe) {
			return nil
		}
		return fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP || p.Type == elf.PT_DYNAMIC {
			if libs, _ := f.ImportedLibraries(); slices.Contains(libs, LibName) {
				// Linked before the BLAS, the library finds no dgemm_
				// behind its own and aborts every launch, a plain mpirun's
				// too (a review's -lapproxtune).
				return fmt.Errorf("%s links approxtune's preload library itself (%s): build it without -lapproxtune; approxtune loads the library into each launch", path, LibName)
			}
			return checkF08(f, path)
		}
	}
	return fmt.Errorf("%s is statically linked: approxtune intercepts MPI, BLAS and LAPACK through the dynamic linker (LD_PRELOAD), so link them dynamically (mpicc without -static, -lopenblas or -lblas -llapack)", path)
}

// CheckMPI reports why the executable at path cannot be tuned with the
// preload library at lib, or nil: the two link different MPI libraries
// (Open MPI's libmpi.so.40, MPICH's libmpich.so.12), so the library's
// interposers would hand the program's handles to an MPI that does not
// know them, and the launch fail with an error such as "Invalid
// communicator". Either one not ELF, or linking no MPI it can name, passes.
func CheckMPI(path, lib string) error {
	prog, progLib := linkedMPI(path)
	ours, ourLib := linkedMPI(lib)
	if prog == "" || ours == "" || prog == ours {
		return nil
	}
	build := "go build -tags mpich,noopenblas -buildmode=c-shared -o libapproxtune-mpich.so ./cmd/libapproxtune"
	if ours == "MPICH" {
		build = "go build -tags noopenblas -buildmode=c-shared -o libapproxtune.so ./cmd/libapproxtune"
	}
	launcher := ""
	if prog == "MPICH" {
		launcher = ", and APPROXTUNE_MPIRUN=mpiexec.mpich its launcher"
	}
	return fmt.Errorf("%s links %s (%s), and approxtune's library %s was built for %s (%s): build the program with %s's mpicc, or build the library for %s (%s, then APPROXTUNE_LIB names it%s)",
		path, prog, progLib, lib, ours, ourLib, ours, prog, build, launcher)
}

// CheckLauncher refuses a program linking one MPI implementation that
// would be started by the other's launcher (launcher: the mpirun's path;
// flavor: "Open MPI" or "MPICH", "" when unknown): Open MPI's mpirun starts
// an MPICH program's ranks as separate one-rank jobs, and a check of 4
// ranks had reported the calls of 1, exit 0 (a review).
func CheckLauncher(path, launcher, flavor string) error {
	prog, progLib := linkedMPI(path)
	if prog == "" || flavor == "" || prog == flavor {
		return nil
	}
	other := "APPROXTUNE_MPIRUN=mpiexec.mpich"
	if prog == "Open MPI" {
		other = "APPROXTUNE_MPIRUN=mpirun.openmpi"
	}
	return fmt.Errorf("%s links %s (%s), and the launcher %s is %s's: it would start each rank as a job of its own; set %s (%s's launcher) where approxtune runs", path, prog, progLib, launcher, flavor, other, prog)
}

// linkedMPI names the MPI implementation the ELF file at path links, and
// the library that says so; "" when it links none it can name.
func linkedMPI(path string) (impl, soname string) {
	f, err := elf.Open(path)
	if err != nil {
		return "", ""
	}
	defer f.Close()
	libs, _ := f.ImportedLibraries()
	for _, l := range libs {
		switch {
		case strings.HasPrefix(l, "libmpich"), strings.HasPrefix(l, "libmpi.so.12"):
			return "MPICH", l
		case strings.HasPrefix(l, "libmpi.so."), strings.HasPrefix(l, "libmpi_mpifh"), strings.HasPrefix(l, "libmpi_usempi"), strings.HasPrefix(l, "libmpi_cxx"):
			return "Open MPI", l
		}
	}
	return "", ""
}

// checkF08 refuses a program that calls MPI through Fortran's mpi_f08
// module (it imports mpi_init_f08_, mpi_bcast_f08ts_ ...): those routines
// reach the MPI library past the preload library's, MPI_Init and
// MPI_Finalize among them under Open MPI and MPICH alike, so no launch
// would start or end a run.
func checkF08(f *elf.File, path string) error {
	syms, _ := f.ImportedSymbols()
	for _, s := range syms {
		if strings.HasPrefix(s.Name, "mpi_") && strings.Contains(s.Name, "_f08") {
			return fmt.Errorf("%s calls MPI through Fortran's mpi_f08 module (%s): its routines reach MPI past approxtune's library, MPI_Init and MPI_Finalize among them, so approxtune cannot tune it; build it with `use mpi` (or mpif.h) instead", path, strings.TrimSuffix(s.Name, "_"))
		}
	}
	return nil
}

// kernelSymbols are the BLAS and LAPACK entry points the library
// interposes (cmd/libapproxtune/interpose.h).
var kernelSymbols = []string{"dgemm_", "dsyrk_", "dtrsm_", "dtrmm_", "dsymm_", "dpotrf_", "dtrtri_", "dgetrf_", "dgeqrf_",
	"cblas_dgemm", "cblas_dsyrk", "cblas_dtrsm", "LAPACKE_dpotrf"}

// StaticKernels lists the interposed BLAS and LAPACK routines that the
// executable at path defines itself (linked with a static BLAS, such as
// libopenblas.a): its calls of them are bound at link time, and the library
// never sees them, so its runs skip none and take as long as full runs.
// Nil for a file that is not ELF or defines none.
func StaticKernels(path string) []string {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	syms, _ := f.Symbols()
	dyn, _ := f.DynamicSymbols()
	var out []string
	for _, s := range append(syms, dyn...) {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Section != elf.SHN_UNDEF && slices.Contains(kernelSymbols, s.Name) && !slices.Contains(out, s.Name) {
			out = append(out, s.Name)
		}
	}
	slices.Sort(out)
	return out
}

// Unintercepted lists the routines the executable at path imports that do
// communication or dense linear algebra beyond level 1 and that the
// library does not intercept (intercepted: the C names it does, as a
// check report gives them; Fortran MPI names are taken by their C names):
// every launch runs them as they are, never skipped, and their time is
// part of the time between kernels. Routines the program reaches only
// through a library of its own (ScaLAPACK's) are not seen. Nil for a
// file that is not ELF or imports none.
func Unintercepted(path string, intercepted []string) []string {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	syms, _ := f.ImportedSymbols()
	var out []string
	for _, s := range syms {
		name, _, _ := strings.Cut(s.Name, "@") // a versioned import
		if c, ok := fortranMPI(name); ok {
			name = c
		}
		if heavyRoutine(name) && !slices.Contains(intercepted, name) && !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// ImportsMPI reports whether the ELF file at path calls MPI itself (a
// shell or a launcher script does not); true for a file that is not ELF,
// which cannot be told.
func ImportsMPI(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	syms, _ := f.ImportedSymbols()
	for _, s := range syms {
		if strings.HasPrefix(s.Name, "MPI_") || strings.HasPrefix(s.Name, "mpi_") || strings.HasPrefix(s.Name, "PMPI_") {
			return true
		}
	}
	return false
}

// fortranMPI is the C name of a Fortran MPI entry point (mpi_iprobe_ is
// MPI_Iprobe).
func fortranMPI(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, "mpi_")
	if !ok || !strings.HasSuffix(rest, "_") || len(rest) < 2 {
		return "", false
	}
	rest = strings.TrimRight(rest, "_")
	return "MPI_" + strings.ToUpper(rest[:1]) + rest[1:], true
}

// heavyRoutine says whether name is an MPI routine that communicates
// (large-count "_c" forms too), or a BLAS level-2 or level-3 or LAPACK
// routine (Fortran, CBLAS or LAPACKE form, LAPACKE's "_work" too): the
// calls whose time a user would want modelled. LAPACK's auxiliaries
// (dlacpy, dlange) are not.
func heavyRoutine(name string) bool {
	if rest, ok := strings.CutPrefix(name, "MPI_"); ok {
		rest = strings.TrimSuffix(rest, "_c")
		for _, p := range []string{"Neighbor_", "Ineighbor_", "File_read", "File_write", "File_iread", "File_iwrite", "Win_lock", "Win_unlock", "Win_flush"} {
			if strings.HasPrefix(rest, p) {
				return true
			}
		}
		switch strings.TrimSuffix(rest, "_init") { // persistent forms
		case "Send", "Rsend", "Ssend", "Bsend", "Recv", "Isend", "Irsend", "Issend", "Ibsend", "Irecv", "Sendrecv", "Sendrecv_replace",
			"Isendrecv", "Isendrecv_replace", "Psend", "Precv", "Probe", "Iprobe", "Mprobe", "Improbe", "Mrecv", "Imrecv",
			"Bcast", "Reduce", "Allreduce", "Gather", "Gatherv", "Allgather", "Allgatherv", "Scatter", "Scatterv",
			"Alltoall", "Alltoallv", "Alltoallw", "Barrier", "Reduce_scatter", "Reduce_scatter_block", "Scan", "Exscan",
			"Ibcast", "Ireduce", "Iallreduce", "Igather", "Igatherv", "Iscatter", "Iscatterv", "Iallgather", "Iallgatherv",
			"Ialltoall", "Ialltoallv", "Ialltoallw", "Ibarrier", "Ireduce_scatter", "Ireduce_scatter_block", "Iscan", "Iexscan",
			"Put", "Get", "Accumulate", "Get_accumulate", "Rput", "Rget", "Raccumulate", "Rget_accumulate", "Fetch_and_op",
			"Compare_and_swap", "Win_fence", "Win_start", "Win_complete", "Win_post", "Win_wait":
			return true
		}
		return false
	}
	stem, ok := strings.CutPrefix(name, "cblas_")
	if !ok {
		if stem, ok = strings.CutPrefix(name, "LAPACKE_"); ok {
			stem = strings.TrimSuffix(stem, "_work")
		} else if stem, ok = strings.CutSuffix(name, "_"); !ok {
			return false
		}
	}
	if len(stem) < 4 || !strings.ContainsRune("sdcz", rune(stem[0])) {
		return false
	}
	switch stem[1:] {
	case "gemv", "gbmv", "symv", "sbmv", "spmv", "hemv", "hbmv", "hpmv", "trmv", "tbmv", "tpmv", "trsv", "tbsv", "tpsv",
		"ger", "geru", "gerc", "syr", "syr2", "spr", "spr2", "her", "her2", "hpr", "hpr2",
		"gemm", "symm", "hemm", "syrk", "herk", "syr2k", "her2k", "trmm", "trsm",
		"getrf", "getrs", "getri", "gesv", "potrf", "potrs", "potri", "posv", "trtri", "trtrs", "sytrf", "sytrs",
		"geqrf", "gelqf", "orgqr", "ormqr", "ungqr", "unmqr", "gels", "laswp", "larfb", "larft", "larfg",
		"syev", "syevd", "syevr", "heev", "heevd", "heevr", "sytrd", "hetrd", "gebrd", "gehrd", "hseqr", "geev",
		"gesvd", "gesdd", "stedc", "steqr", "sterf":
		return true
	}
	return false
}

// StaticKernelsNote is the warning for StaticKernels' list, or "".
func StaticKernelsNote(path string) string {
	ks := StaticKernels(path)
	if len(ks) == 0 {
		return ""
	}
	return fmt.Sprintf("note: %s defines %s itself (a BLAS linked statically): approxtune intercepts those only through the dynamic linker, so its selective runs will execute them all and skip nothing there; link BLAS and LAPACK dynamically (-lopenblas, not libopenblas.a)",
		filepath.Base(path), strings.Join(ks, ", "))
}

// EnvRun is the environment variable that makes a launch of the program a
// selective run: a Run, as JSON.
const EnvRun = "APPROXTUNE_RUN"

// Run configures one launch of a program under the preload library: a
// reference run (every routine executed, the engine off: only the time
// from MPI_Init to MPI_Finalize is taken), a selective run, or the counting
// run a policy.Rehearser makes before each selective run.
type Run struct {
	Reference  bool    `json:"reference,omitempty"`
	Policy     string  `json:"policy,omitempty"`
	Tolerance  float64 `json:"tolerance"`
	Confidence float64 `json:"confidence,omitempty"` // default 0.95
	NMin       int     `json:"n_min,omitempty"`      // default 2
	// Models lets a kernel never measured be predicted from its
	// routine's performance model (sweep.Spec.Models).
	Models bool `json:"models,omitempty"`
	// RunMessages makes every message and collective execute, kernels
	// alone being skipped (sweep.Spec.Messages).
	RunMessages bool `json:"run_messages,omitempty"`
	// State, for a policy that carries its statistics from one
	// configuration to the next (policy.Carrier), names the files (State.N
	// for rank N) each rank's track is read from at the start and written
	// to at the end.
	State string `json:"state,omitempty"`
	// Retune, with State, names the files (Retune.N) of a search's
	// round before this launch's, at a looser tolerance: a rank without a
	// State file of its own yet starts from their statistics' samples
	// and decides afresh at Tolerance which kernels are known
	// (selective.Track.Retuned), as a built-in workload's search carries
	// its track from round to round.
	Retune string `json:"retune,omitempty"`
	// Cutoff, in a search's selective launch, is the predicted time past
	// which a program that asks (approxtune_cut_short, approxtune.h) may
	// stop its work: the launch's prediction cannot then be among those
	// its round keeps (analysis.Halving.Cutoff). 0: none.
	Cutoff float64 `json:"cutoff,omitempty"`
	// Counting makes the launch a policy.Rehearser's counting run (the
	// policy apriori), a skeleton of the program: no computation kernel
	// executes, messages and collectives a selective run may skip go
	// out empty or not at all (selective.Counting), and the critical
	// path's kernel counts are written to the Counts files. Its result's
	// SelectiveS is its timed region.
	Counting bool `json:"counting,omitempty"`
	// Counts names the files (Counts.N for rank N) of the critical-path
	// counts: a counting run writes them, and the selective run of a
	// policy.Rehearser that follows it reads them.
	Counts string `json:"counts,omitempty"`
	// Out is the file rank 0 writes the run's sweep.Result to at
	// MPI_Finalize: a reference run's time in ReferenceS, a selective
	// run's prediction and counts.
	Out string `json:"out"`
}

// ParseRun reads a Run from its JSON and fills in the defaults. A field
// it does not know is an error: a library older than the approxtune that
// launched it would otherwise drop a setting unsaid (a review's old
// library ignored "run_messages", and the program crashed on the
// messages it skipped).
func ParseRun(s string) (*Run, error) {
	var r Run
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		if strings.Contains(err.Error(), "unknown field") {
			return nil, fmt.Errorf("%s: %v: this library is older than the approxtune that launched the program; install both from one build (./install.sh), or set APPROXTUNE_LIB to the library built with it", EnvRun, err)
		}
		return nil, fmt.Errorf("%s: %w", EnvRun, err)
	}
	if r.Out == "" {
		return nil, fmt.Errorf("%s: no \"out\" file for the result", EnvRun)
	}
	if r.Counting && (r.Reference || r.Counts == "") {
		return nil, fmt.Errorf("%s: a counting run is a policy's, and needs a \"counts\" file to write", EnvRun)
	}
	if r.Confidence == 0 {
		r.Confidence = 0.95
	}
	if r.NMin == 0 {
		r.NMin = 2
	}
	return &r, nil
}

// WriteResult writes a run's events to path, one JSON line each: its
// result, then (a selective run) rank 0's kernel statistics.
func WriteResult(path string, events ...any) error {
	var b []byte
	for _, ev := range events {
		line, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		b = append(append(b, line...), '\n')
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return fmt.Errorf("run result: %w", err)
	}
	return nil
}
