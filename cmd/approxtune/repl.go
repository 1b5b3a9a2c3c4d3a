package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/approxtune/approxtune/internal/repl"
	"github.com/approxtune/approxtune/session"
)

func runREPL(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("repl", "approxtune repl [--dir DIR] [--no-color]",
		`The terminal REPL: one command per line (type 'help'). The first sweep
starts a local agent under mpirun; 'listen' waits for a cluster agent instead.
Every event is journaled to DIR/results.jsonl as it arrives; a DIR that
holds a journal is reopened (its sweeps and the last sweep's settings come
back, and 'resume' finishes that sweep).

When standard input is not a terminal, it runs a script: each command is
echoed with its results, and the first failing command stops the script with
exit status 1 and "line N: message". On a terminal with TERM=dumb, or with
the output piped ('approxtune repl | tee log'), it prompts without line
editing (piped: the prompt on standard error, the log holding the answers).
Ctrl-C cancels a running sweep at the next run boundary (twice: interrupts
mpirun); Ctrl-D leaves.`, stderr)
	dir := fs.String("dir", "", "session `DIR` (default $APPROXTUNE_SESSION_DIR or $XDG_DATA_HOME/approxtune/sessions/ID)")
	noColor := fs.Bool("no-color", false, "no ANSI colours (also when NO_COLOR is set, TERM is dumb or stdout is not a terminal)")
	if code, done := parse(fs, args); done {
		return code
	}
	s, err := session.New(session.Options{Dir: *dir, Binary: executable()})
	if err != nil {
		fmt.Fprintf(stderr, "approxtune repl: %v\n", err)
		return 1
	}
	inTTY := repl.IsTerminal(os.Stdin)
	outTTY := repl.IsTerminal(os.Stdout)
	color := outTTY && !*noColor && os.Getenv("NO_COLOR") == ""
	// A script run under nohup keeps ignoring hangups: Notify would
	// undo the ignoring.
	hangup := make(chan os.Signal, 1)
	for _, sig := range []os.Signal{syscall.SIGHUP, syscall.SIGTERM} {
		if !signal.Ignored(sig) {
			signal.Notify(hangup, sig)
		}
	}
	defer signal.Stop(hangup)
	return repl.Run(ctx, s, repl.Options{In: os.Stdin, Out: stdout, Err: stderr, Interactive: inTTY, Screen: outTTY,
		Color: color, Dumb: os.Getenv("TERM") == "dumb", HistoryFile: repl.HistoryPath(), Hangup: hangup})
}
