package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/approxtune/approxtune/internal/launch"

	"github.com/approxtune/approxtune/internal/agent"
)

func runAgent(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("agent", "mpirun -n RANKS approxtune agent --sweep FILE|- | --connect HOST:PORT",
		`The MPI agent. Every rank runs it under mpirun (or srun).

With --sweep, rank 0 reads the sweep spec, validates it before anything runs
(exit status 2 and a one-line message on a bad spec), broadcasts it, and
prints one JSON event per line on its standard output: a "start" line, one
"result" line per run, and a closing "summary" (a search: a "round" line as
each round ends and a closing "search" with its choice). Exit status 1 means
a run failed.

With --connect, rank 0 dials a session (the REPL or the Jupyter kernel, whose
'listen' prints this command), presents the token from $APPROXTUNE_TOKEN, and
runs the sweeps the session sends until it says shutdown or the connection
ends; exit status 3 means the session refused the agent.`, stderr)
	sweepPath := fs.String("sweep", "", "sweep spec `FILE` (JSON, see README.md, 'A sweep spec'), or - for standard input")
	connectAddr := fs.String("connect", "", "dial the session at `HOST:PORT` and run what it sends (the token comes in $APPROXTUNE_TOKEN)")
	ranks := fs.Int("ranks", 0, "when not already under mpirun, start `N` ranks of the agent under the local mpirun\n(with the flags it needs as root and when oversubscribed) and wait for them")
	if code, done := parse(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "approxtune agent: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	if (*sweepPath == "") == (*connectAddr == "") {
		fmt.Fprintf(stderr, "approxtune agent: give one of --sweep FILE|- or --connect HOST:PORT\n")
		fs.Usage()
		return 2
	}
	if *connectAddr != "" {
		return agent.Main(ctx, agent.Options{Connect: *connectAddr, Version: version, Stdout: stdout, Stderr: os.Stderr})
	}
	if *ranks > 0 && !underMPI() {
		return selfLaunch(ctx, *ranks, *sweepPath, stdout, stderr)
	}
	return agent.Main(ctx, agent.Options{Sweep: *sweepPath, Stdout: stdout, Stderr: os.Stderr})
}

// underMPI reports whether this process was started by an MPI launcher.
func underMPI() bool {
	for _, v := range []string{"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE"} {
		if os.Getenv(v) != "" {
			return true
		}
	}
	return false
}

// selfLaunch runs this binary as the agent under the local mpirun with n ranks.
func selfLaunch(ctx context.Context, n int, sweepPath string, stdout, stderr io.Writer) int {
	l, err := launch.Find()
	if err != nil {
		fmt.Fprintf(stderr, "approxtune agent: %v\n", err)
		return 1
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "approxtune agent: %v\n", err)
		return 1
	}
	// The spec is checked here, as rank 0 would check it: a bad one gets
	// its one-line message and status 2 without mpirun's report of a rank
	// that exited with an error.
	var data []byte
	if sweepPath == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(sweepPath)
	}
	if err != nil {
		fmt.Fprintf(stderr, "approxtune agent: read sweep spec: %v\n", err)
		return agent.ExitUsage
	}
	if err := agent.CheckSpec(data, n); err != nil {
		fmt.Fprintf(stderr, "approxtune agent: %v\n", err)
		return agent.ExitUsage
	}
	if sweepPath != "-" {
		if sweepPath, err = filepath.Abs(sweepPath); err != nil {
			fmt.Fprintf(stderr, "approxtune agent: %v\n", err)
			return 1
		}
	}
	cmd := l.Command(ctx, n, self, "agent", "--sweep", sweepPath)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(data), stdout, stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		fmt.Fprintf(stderr, "approxtune agent: %s: %v\n", l.Path, err)
		return 1
	}
	return 0
}
