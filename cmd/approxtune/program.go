package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/approxtune/approxtune/internal/launch"
	"github.com/approxtune/approxtune/internal/preload"
)

// runProgram is `approxtune program --check`: it runs the user's MPI
// program once under the local mpirun with the preload library and lists
// the interposed routines it called.
func runProgram(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("program", "approxtune program --check [--ranks N] CMD [ARGS...]",
		`Checks that approxtune can tune an MPI program as it is: runs CMD once under
the local mpirun with approxtune's preload library (LD_PRELOAD) and lists how
often its ranks called each BLAS, LAPACK and MPI routine the library
intercepts. A program must be dynamically linked against MPI and BLAS/LAPACK
and call MPI_Init and MPI_Finalize.`, stderr)
	check := fs.Bool("check", false, "run CMD once and list the intercepted routines it called")
	ranks := fs.Int("ranks", 2, "start `N` ranks")
	if code, done := parse(fs, args); done {
		return code
	}
	fail := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "approxtune program: "+format+"\n", a...)
		return 1
	}
	if !*check {
		fs.Usage()
		return fail("--check is the only mode: say --check")
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return fail("want the program to run: approxtune program --check [--ranks N] CMD [ARGS...]")
	}
	if *ranks < 1 {
		return fail("--ranks %d: want 1 or more", *ranks)
	}
	c, err := checkProgram(ctx, *ranks, fs.Arg(0), fs.Args()[1:], stdout)
	if err != nil {
		return fail("%v", err)
	}
	printCheck(stdout, c)
	return 0
}

// checkProgram runs prog with args on n ranks with the preload library and
// returns its check report; the program's own output goes to out.
func checkProgram(ctx context.Context, n int, prog string, args []string, out io.Writer) (*preload.Check, error) {
	path, err := exec.LookPath(prog)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", prog, err)
	}
	if err := preload.CheckLinkage(path); err != nil {
		return nil, err
	}
	lib, err := preload.Find()
	if err != nil {
		return nil, err
	}
	l, err := launch.Find()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "approxtune-check")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	report := filepath.Join(dir, "check.json")
	cmd := l.Command(ctx, n, path, args...)
	cmd.Env = append(cmd.Env, "LD_PRELOAD="+lib, preload.EnvCheck+"="+report)
	var errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = out, io.MultiWriter(out, &tail{b: &errs})
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s failed under %s: %v%s", prog, l.Path, err, indent(errs.String()))
	}
	c, err := preload.ReadCheck(report)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s never reached MPI_Finalize through approxtune's library: it does not call MPI_Init and MPI_Finalize, or links MPI statically, or starts its MPI processes some other way; approxtune tunes programs that use MPI from a shared library", prog)
	}
	if err != nil {
		return nil, err
	}
	if len(c.Called()) == 0 {
		return nil, fmt.Errorf("%s called none of the routines approxtune intercepts (level-3 BLAS, LAPACK factorizations, MPI communication): is its BLAS linked statically, or does it call other routines?", prog)
	}
	return c, nil
}

// printCheck lists the routines a check run called.
func printCheck(w io.Writer, c *preload.Check) {
	fmt.Fprintf(w, "intercepted calls over %d ranks:\n", c.Ranks)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "routine\tcalls\tper rank\t")
	for _, n := range c.Called() {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t\n", n, c.Calls[n], float64(c.Calls[n])/float64(max(c.Ranks, 1)))
	}
	tw.Flush()
}

// tail keeps the last lines written to it.
type tail struct{ b *bytes.Buffer }

func (t *tail) Write(p []byte) (int, error) {
	t.b.Write(p)
	if t.b.Len() > 4096 {
		rest := t.b.Bytes()[t.b.Len()-2048:]
		t.b.Reset()
		t.b.Write(rest)
	}
	return len(p), nil
}

// indent sets the program's last output lines under an error message.
func indent(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return "\n    " + strings.Join(lines, "\n    ")
}
