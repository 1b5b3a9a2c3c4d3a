// Command approxtune is approximate autotuning for MPI dense linear algebra:
// an agent that runs under mpirun and, in later sub-commands, the REPL and the
// Jupyter kernel that drive it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/session"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// MPI must be initialised and driven from one OS thread: keep the main
// goroutine on the main thread from the start.
func init() { runtime.LockOSThread() }

// command is one sub-command.
type command struct {
	name, usage, summary string
	run                  func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands() []command {
	return []command{
		{"version", "approxtune version", "print the version, the Go version, the MPI library and the BLAS backend", runVersion},
		{"repl", "approxtune repl [--dir DIR] [--no-color]", "the terminal REPL (reads a script when stdin is not a terminal)", runREPL},
		{"kernel", "approxtune kernel [--dir DIR] CONNECTION_FILE", "the Jupyter kernel (what the kernelspec runs)", runKernel},
		{"install", "approxtune install [--user|--sys-prefix|--prefix P]", "install the Jupyter kernelspec so Jupyter lists the kernel", runInstall},
		{"run", "approxtune run [--dir DIR] [--force] NB.ipynb [-o OUT.ipynb]", "execute a notebook headless through the kernel's code and store its outputs", runNotebook},
		{"program", "approxtune program --check [--ranks N] CMD [ARGS...] | --sweep FILE [--deadline D]", "tune an MPI program as it is: check what it calls, or run a sweep over it", runProgram},
		{"agent", "approxtune agent --ranks N --sweep FILE|- | --connect HOST:PORT | mpirun -n N approxtune agent ...", "run sweeps as the MPI agent (--ranks starts its own mpirun)", runAgent},
		{"help", "approxtune help [COMMAND]", "explain approxtune or one of its commands", nil},
	}
}

func main() {
	os.Exit(dispatch(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name := args[0]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && name == "help" {
			if !slices.Contains(names(), args[1]) {
				// A command of the session's language ('approxtune help
				// rank'), which the docs name as often as these.
				if h, ok := session.HelpFor(args[1]); ok {
					fmt.Fprintf(stdout, "%s is a command of approxtune's sessions: type it in 'approxtune repl' or a notebook cell. From 'help %s' there:\n\n%s", args[1], args[1], h)
					return 0
				}
			}
			// Asked for, the help goes to standard output ('approxtune
			// help run | less'); a command's -h writes it to standard
			// error, as flag does.
			return dispatch(ctx, []string{args[1], "-h"}, stdout, stdout)
		}
		usage(stdout)
		return 0
	case "-version", "--version":
		name = "version"
	}
	for _, c := range commands() {
		if c.name == name && c.run != nil {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	if n := format.Nearest(name, names()); n != "" {
		fmt.Fprintf(stderr, "approxtune: unknown command %q: did you mean %s? The commands are %s (see approxtune help)\n", name, n, strings.Join(names(), ", "))
	} else {
		fmt.Fprintf(stderr, "approxtune: unknown command %q: want one of %s (see approxtune help)\n", name, strings.Join(names(), ", "))
	}
	return 2
}

func names() []string {
	var ns []string
	for _, c := range commands() {
		ns = append(ns, c.name)
	}
	sort.Strings(ns)
	return ns
}

func usage(w io.Writer) {
	fmt.Fprintf(w, `approxtune: approximate autotuning of MPI dense linear algebra.

Each kernel (BLAS/LAPACK call or MPI communication with a given signature) runs
only until its mean time is known to a chosen confidence tolerance; then it is
skipped and predicted, and the critical path of the run is still estimated.

Usage:
`)
	for _, c := range commands() {
		if len(c.usage) > 52 { // its summary on a line of its own
			fmt.Fprintf(w, "  %s\n  %-52s %s\n", c.usage, "", c.summary)
			continue
		}
		fmt.Fprintf(w, "  %-52s %s\n", c.usage, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'approxtune COMMAND -h' for a command's flags.\n")
}

// newFlags makes a flag set whose -h prints the command's usage and flags.
func newFlags(name, usageLine, about string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s\n\n%s\n", usageLine, about)
		var any bool
		fs.VisitAll(func(*flag.Flag) { any = true })
		if any {
			fmt.Fprintf(fs.Output(), "\nFlags:\n")
			fs.PrintDefaults()
		}
	}
	return fs
}

// parse parses args and returns (exit status, done): done when -h was asked
// or the flags were wrong.
func parse(fs *flag.FlagSet, args []string) (int, bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0, true
		}
		return 2, true
	}
	return 0, false
}

// executable is this approxtune's path, which its sessions' agents run (""
// where it cannot be told: a session then looks on PATH).
func executable() string {
	p, _ := os.Executable()
	return p
}
