package session

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approxtune/approxtune/sweep"
)

// The program verb sets a program with its decks; space then takes any
// parameter, its kind read from its values; the sweep it makes is a
// program sweep that validates its placeholders; workload goes back.
func TestProgramVerb(t *testing.T) {
	s := newSession(t)
	ctx := context.Background()
	out := &textOut{}
	dir := t.TempDir()
	tmpl, solver := filepath.Join(dir, "solver.template"), filepath.Join(dir, "solver")
	for _, f := range []string{tmpl, solver} {
		if err := os.WriteFile(f, []byte("nb={b}\nranks={ranks}\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Exec(ctx, "program "+solver+" -nb {b} -p {grid_r} \"--q={grid_c}\" --Mode=fast deck Solver.dat="+tmpl, out); err != nil {
		t.Fatal(err)
	}
	p := s.st.Program
	if p == nil || s.st.Workload != sweep.ProgramWorkload || len(p.Command) != 7 || p.Command[5] != "--q={grid_c}" || p.Command[6] != "--Mode=fast" ||
		!filepath.IsAbs(p.Command[0]) || p.Decks["Solver.dat"] != tmpl {
		t.Fatalf("program state %+v, workload %s", p, s.st.Workload)
	}
	if err := s.Exec(ctx, "space b=32,64 grid=2x2,1x4", out); err != nil {
		t.Fatal(err)
	}
	if g, ok := s.st.Space["grid"][0].(sweep.GridShape); !ok || g.Procs() != 4 || s.st.Space["b"][1] != 64 {
		t.Fatalf("space %v: want grids and integers", s.st.Space)
	}
	sp, configs, err := validate(s.schemas(), s.st, sweep.ModeEvaluate, s.st.Ranks)
	if err != nil || sp.Program == nil || len(configs) != 4 {
		t.Fatalf("validate: %v, %d configurations", err, len(configs))
	}
	if got := sp.Program.Expand(configs[0], strings.Join(sp.Program.Command[1:], " ")); got != "-nb 32 -p 2 --q=2 --Mode=fast" {
		t.Errorf("expanded arguments %q", got)
	}
	// An argument of several words is shown quoted, as it is one; a
	// shell's single quotes are kept, and said so.
	out.b.Reset()
	if err := s.Exec(ctx, "program "+solver+" \"a b {b}\" 'x{b}'", out); err != nil {
		t.Fatal(err)
	}
	if got := out.b.String(); !strings.HasPrefix(got, "program "+solver+" \"a b {b}\" 'x{b}'\n") ||
		!strings.Contains(got, "note: the argument 'x{b}' keeps its single quotes (only double quotes group words here)") {
		t.Errorf("program with a grouped argument and single quotes:\n%s", got)
	}
	for _, bad := range []struct{ line, want string }{
		{"program " + solver + " deck solver.dat=/no/such/template", "deck template"},
		{"program " + solver + " deck", "deck wants FILE=TEMPLATE"},
		{"program " + solver + " deck sub/x.dat=" + tmpl, "want a file name"},
	} {
		if err := s.Exec(ctx, bad.line, out); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: %v, want an error saying %q", bad.line, err, bad.want)
		}
	}
	// A placeholder without its closing brace is refused at once: it had
	// reached the program as it was.
	if err := s.Exec(ctx, "program "+solver+" -nb {b -p {grid_r}", out); err == nil || !strings.Contains(err.Error(), `argument "{b" has {b without its closing brace: want {b}`) {
		t.Errorf("an unclosed placeholder: %v", err)
	}
	if err := s.Exec(ctx, "program "+solver+" -nb {b} -p {grid_r} \"--q={grid_c}\" --Mode=fast deck Solver.dat="+tmpl, out); err != nil {
		t.Fatal(err)
	}
	// A parameter nothing reads is told of: its configurations repeat
	// each other's runs.
	out.b.Reset()
	if err := s.Exec(ctx, "space b=32 grid=2x2 c=1,2", out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.b.String(), "note: c appears in no argument or deck of the program") {
		t.Errorf("space with a parameter nothing reads:\n%s", out.b.String())
	}
	// Another program keeps the space (a typo fixed had cost it), and
	// says what nothing reads; c=default takes c out.
	out.b.Reset()
	if err := s.Exec(ctx, "program "+solver+" -nb {b} -p {grid_r} \"--q={grid_c}\" --Mode=fast deck Solver.dat="+tmpl, out); err != nil {
		t.Fatal(err)
	}
	if got := out.b.String(); !strings.Contains(got, "the space stays: b=32 c=1,2 grid=2x2 ('space reset' clears it)") || !strings.Contains(got, "note: c appears in no argument") {
		t.Errorf("a program after another:\n%s", got)
	}
	if err := s.Exec(ctx, "space c=default", out); err != nil || s.st.Space["c"] != nil || s.st.Space["b"] == nil {
		t.Errorf("space c=default: %v, space %v", err, s.st.Space)
	}
	out.b.Reset()
	if err := s.Exec(ctx, "space b=32,64 grid=2x2,1x4", out); err != nil || strings.Contains(out.b.String(), "appears in no argument") {
		t.Errorf("space whose parameters the program reads: %v\n%s", err, out.b.String())
	}
	// A grid and ranks both: the grid sets the rank count, and the space
	// says so when set (the launches had the grid's ranks while {ranks}
	// and the labels said ranks=).
	out.b.Reset()
	if err := s.Exec(ctx, "space ranks=8", out); err != nil || !strings.Contains(out.b.String(), "note: the space has a grid (grid) and ranks: the grid sets the rank count") {
		t.Errorf("space with a grid and ranks: %v\n%s", err, out.b.String())
	}
	if _, _, err := validate(s.schemas(), s.st, sweep.ModeEvaluate, s.st.Ranks); err == nil || !strings.Contains(err.Error(), "leave ranks out") {
		t.Errorf("a grid and ranks validated: %v", err)
	}
	delete(s.st.Space, "ranks")
	if err := s.Exec(ctx, "space c=1", out); err != nil {
		t.Fatal(err)
	}
	if _, _, err := validate(s.schemas(), s.st, sweep.ModeEvaluate, s.st.Ranks); err != nil {
		t.Fatalf("a parameter no template uses is fine: %v", err)
	}
	if err := s.Exec(ctx, "workload summa", out); err != nil || s.st.Program != nil {
		t.Fatalf("workload summa: %v, program %+v", err, s.st.Program)
	}
}

// The transcript keeps a program line with its paths absolute, so that an
// exported notebook run from elsewhere finds the program and its decks
// (it kept "./solver", and 'approxtune run' of a notebook exported to
// another directory failed: no such file).
func TestProgramLineAbsolute(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"solver", "in dir.template"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	wd, _ := os.Getwd()
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer os.Chdir(wd)
	s := newSession(t)
	if err := s.Exec(context.Background(), `program ./solver -nb {b} "-t=a b" deck solver.dat="in dir.template"`, &textOut{}); err != nil {
		t.Fatal(err)
	}
	steps := s.Transcript()
	want := `program ` + filepath.Join(dir, "solver") + ` -nb {b} "-t=a b" deck solver.dat="` + filepath.Join(dir, "in dir.template") + `"`
	if len(steps) != 1 || steps[0].Line != want {
		t.Fatalf("transcript %+v\nwant the line %s", steps, want)
	}
	// The line reads back to the same program.
	again := newSession(t)
	if err := again.Exec(context.Background(), steps[0].Line, &textOut{}); err != nil {
		t.Fatal(err)
	}
	if a, b := describeProgram(again.st.Program), describeProgram(s.st.Program); a != b {
		t.Errorf("read back: %s\nwant %s", a, b)
	}
}

// The preload library's lines among a program's output reach the sweep's
// notes while the launch runs on after them, whole however the output is
// cut, once each; the program's own lines do not, nor those of a launch
// that ends at once (its error ends with them), which a later launch that
// runs on after the same line has noted.
func TestLibraryNotes(t *testing.T) {
	var mu sync.Mutex
	var notes []string
	w := &libraryNotes{quiet: 20 * time.Millisecond, note: func(n string) { mu.Lock(); notes = append(notes, n); mu.Unlock() }}
	write := func(chunks ...string) {
		for _, chunk := range chunks {
			if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
				t.Fatalf("Write: %d, %v", n, err)
			}
		}
	}
	write("residual 1e-12\nlibappro", "xtune: rank 0 has waited 5s in approxtune_begin for the other ranks\n",
		"ok\n", strings.Repeat("x", 5000), "\nlibapproxtune: dgemm_ is interposed but no library after it defines it\n",
		"libapproxtune: rank 0 has waited 5s in approxtune_begin for the other ranks\n")
	waitNotes := func(n int) { // the timers, however slow the machine
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			got := len(notes)
			mu.Unlock()
			if got >= n {
				return
			}
		}
	}
	waitNotes(2)
	w.ended()
	w.quiet = time.Hour // a launch that ends at once, however slow the machine
	write("libapproxtune: MPI_Bcast was called from a thread other than the one that initialized MPI\n")
	w.ended()
	// Its line, written again by a launch that runs on, is noted.
	w.quiet = 20 * time.Millisecond
	write("libapproxtune: MPI_Bcast was called from a thread other than the one that initialized MPI\n")
	waitNotes(3)
	w.ended()
	mu.Lock()
	defer mu.Unlock()
	want := []string{"libapproxtune: rank 0 has waited 5s in approxtune_begin for the other ranks", "libapproxtune: dgemm_ is interposed but no library after it defines it",
		"libapproxtune: MPI_Bcast was called from a thread other than the one that initialized MPI"}
	slices.Sort(notes) // the timers fire in any order
	slices.Sort(want)
	if !slices.Equal(notes, want) {
		t.Errorf("notes %q, want %q", notes, want)
	}
}
