// Package repl is approxtune's terminal face: a readline prompt over a
// session (history, completion, Ctrl-C to clear the line or cancel a sweep,
// Ctrl-D to leave), live progress with a terminal chart while a sweep runs,
// and a script mode for standard input that is not a terminal.
package repl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/chzyer/readline"
	"golang.org/x/sys/unix"

	"github.com/approxtune/approxtune/internal/display"
	"github.com/approxtune/approxtune/session"
)

// Options configure a REPL.
type Options struct {
	In       io.Reader
	Out, Err io.Writer
	// Interactive is input from a terminal: a prompt, and a command that
	// fails does not end the session.
	Interactive bool
	// Screen is output to a terminal: with Interactive, line editing,
	// completion and live redraws. Interactive without it (output piped:
	// 'approxtune repl | tee log') prompts on Err and reads lines as the
	// terminal's own line discipline edits them, the output free of
	// cursor moves; it had been taken for a script, which the first typo
	// ended, the next command going to the shell.
	Screen bool
	Color  bool // ANSI colours
	// Dumb is a terminal that moves no cursor (TERM=dumb: an editor's
	// shell buffer, a serial console): a plain prompt and lines as the
	// terminal's line discipline edits them, no redraws; a sweep prints a
	// line per result, as in a script. (Line editing on such a terminal
	// had shown no prompt and echoed nothing, and left it raw.)
	Dumb        bool
	HistoryFile string // "" for none
	// Hangup, when set, delivers SIGHUP (the terminal or the SSH
	// connection is gone) and SIGTERM: the session ends as on Ctrl-D, a
	// running sweep stopped at once (as by a second Ctrl-C), then the
	// agent and a Slurm job of its, and Exit is called with 128 plus the
	// signal's number. Without it those signals kill the process and
	// leave a Slurm job behind.
	Hangup <-chan os.Signal
	// Exit ends the process after a hangup (default os.Exit).
	Exit func(code int)
}

// HistoryPath is $XDG_STATE_HOME/approxtune/history (or ~/.local/state/...).
func HistoryPath() string {
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "approxtune", "history")
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool { return readline.IsTerminal(int(f.Fd())) }

// Run runs the REPL over s until the input ends (Ctrl-D), and returns the
// exit status: in script mode 1 after the first failing command. Unless
// the session has one, it gives it the notebook writer display.Export, so
// that 'export notebook' writes what the session ran as the Jupyter kernel
// shows it.
func Run(ctx context.Context, s *session.Session, o Options) int {
	s.SetDefaultNotebook(display.Export)
	editing := o.Interactive && o.Screen && !o.Dumb
	out := &termOutput{w: o.Out, live: editing, color: o.Color && !o.Dumb, width: readline.GetScreenWidth, height: screenHeight}
	h := &hangups{s: s, exit: o.Exit}
	if h.exit == nil {
		h.exit = os.Exit
	}
	if o.Hangup != nil {
		done := make(chan struct{})
		defer close(done)
		go h.watch(o.Hangup, done, o.Err)
	}
	switch {
	case editing:
		return interactive(ctx, s, o, out, h)
	case o.Interactive:
		return plain(ctx, s, o, out, h)
	}
	return script(ctx, s, o, out, h)
}

// welcome prints the REPL's first lines: what it is, the journal, and
// what a reopened session found.
func welcome(s *session.Session, w io.Writer, keys string) {
	fmt.Fprintf(w, "approxtune: approximate autotuning. 'help' lists the commands;%s Ctrl-C cancels a sweep; Ctrl-D or 'exit' leaves.\nsession journal: %s\n", keys, s.Dir())
	if n := s.Reopened(); n != "" {
		fmt.Fprintln(w, n)
	}
	if n := s.Previous(); n != "" {
		fmt.Fprintln(w, n)
	}
}

// plain is the REPL on a terminal without line editing: a dumb one, or
// input from a terminal with the output piped. The prompt goes to Err
// when the output is not the terminal (a log then holds the answers
// alone), and the terminal's line discipline echoes and edits the line.
// Ctrl-C at the prompt discards the line (the terminal drops it); during a
// command it cancels as in the editing REPL.
func plain(ctx context.Context, s *session.Session, o Options, out *termOutput, h *hangups) int {
	promptTo := o.Out
	if !o.Screen {
		promptTo = o.Err
	}
	welcome(s, promptTo, "")
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(o.In)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	intr := make(chan os.Signal, 1)
	signal.Notify(intr, os.Interrupt)
	defer signal.Stop(intr)
	for {
		fmt.Fprint(promptTo, "approxtune> ")
		var line string
		var ok bool
	wait:
		for {
			select {
			case line, ok = <-lines:
				break wait
			case <-intr:
				fmt.Fprint(promptTo, "\napproxtune> ")
			}
		}
		if !ok || isExit(line) {
			if !ok {
				fmt.Fprintln(promptTo)
			}
			break
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if err := h.exec(ctx, line, out); err != nil {
			if c := caret(err, len("approxtune> ")); c != "" && o.Screen { // the line typed is above, after the prompt
				out.Print(c)
			}
			out.Error(err.Error())
		}
		for len(intr) > 0 { // the command's own Ctrl-C, handled by it
			<-intr
		}
		if !o.Screen {
			// The answer goes through the pipe ('| tee'), the prompt
			// straight to the terminal: a moment lets the answer
			// reach the screen first.
			time.Sleep(50 * time.Millisecond)
		}
	}
	return leave(s, out, h)
}

// hangups ends the session on SIGHUP or SIGTERM. The REPL holds busy while
// a command runs: the hangup waits for the command it stopped, then closes
// the session, which nothing else touches from then on.
type hangups struct {
	s       *session.Session
	busy    sync.Mutex
	exit    func(int)
	restore func() // puts the terminal back as it was
	hung    atomic.Bool
	// stopCmd cancels the running command's context (nil between
	// commands): a hangup ends a long 'rank' too, not only a sweep.
	mu      sync.Mutex
	stopCmd context.CancelFunc
}

// ending blocks for good once a hangup is ending the session (its watch
// exits the process): the command it stopped reports nothing, and the
// REPL does not go on.
func (h *hangups) ending() {
	if h.hung.Load() {
		select {}
	}
}

func (h *hangups) watch(sigs <-chan os.Signal, done <-chan struct{}, errw io.Writer) {
	select {
	case sig := <-sigs:
		h.hung.Store(true)
		h.s.Stop()
		h.mu.Lock()
		if h.stopCmd != nil {
			h.stopCmd()
		}
		h.mu.Unlock()
		h.busy.Lock()
		if h.restore != nil {
			h.restore()
		}
		fmt.Fprintf(errw, "approxtune repl: %v: ending the session\n", sig)
		if err := h.s.Close(); err != nil {
			fmt.Fprintf(errw, "approxtune repl: %v\n", err)
		}
		code := 1
		if n, ok := sig.(syscall.Signal); ok {
			code = 128 + int(n)
		}
		h.exit(code)
	case <-done:
	}
}

// exec runs one command while holding busy.
func (h *hangups) exec(ctx context.Context, line string, out *termOutput) error {
	// stopCmd is set before busy is taken: a hangup between the two
	// would otherwise find none and wait for the whole command.
	ctx, cancel := context.WithCancel(ctx)
	h.mu.Lock()
	h.stopCmd = cancel
	h.mu.Unlock()
	h.busy.Lock()
	err := execCancelable(ctx, h.s, line, out)
	h.mu.Lock()
	h.stopCmd = nil
	h.mu.Unlock()
	cancel()
	h.busy.Unlock()
	h.ending()
	return err
}

// execCancelable runs one command; SIGINT (Ctrl-C) during it cancels the
// running sweep (twice: interrupts mpirun), or outside a sweep the
// command's context (a long 'rank'), instead of killing the session.
func execCancelable(ctx context.Context, s *session.Session, line string, out *termOutput) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt)
	defer signal.Stop(sig)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-sig:
				if s.Cancel() == "" {
					cancel()
				}
			case <-stop:
				return
			}
		}
	}()
	err := s.Exec(ctx, line, out)
	close(stop)
	wg.Wait()
	out.endLive()
	return err
}

func interactive(ctx context.Context, s *session.Session, o Options, out *termOutput, h *hangups) int {
	prompt := "approxtune> "
	if o.Color {
		prompt = "\033[1;36mapproxtune\033[0m> "
	}
	if o.HistoryFile != "" {
		if err := privateHistory(o.HistoryFile); err != nil {
			fmt.Fprintf(o.Err, "approxtune repl: %v (going on without history)\n", err)
			o.HistoryFile = ""
		}
	}
	cfg := &readline.Config{
		Prompt:          prompt,
		HistoryFile:     o.HistoryFile,
		AutoComplete:    completer{s},
		InterruptPrompt: "^C",
		EOFPrompt:       "",
		Stdout:          o.Out,
		Stderr:          o.Err,
		// A terminal that reports no size (a pty nobody sized) would
		// leave line editing redrawing forever on Home: it is taken as
		// 80 columns wide.
		FuncGetWidth: func() int {
			if w := readline.GetScreenWidth(); w > 0 {
				return w
			}
			return 80
		},
	}
	var in io.Reader = os.Stdin
	if o.In != nil {
		in = o.In
	}
	stdin := readline.NewCancelableStdin(newKeyReader(in))
	cfg.Stdin = stdin
	rl, err := readline.NewEx(cfg)
	if err != nil {
		fmt.Fprintf(o.Err, "approxtune repl: %v\n", err)
		return 1
	}
	defer func() {
		// readline's Close closes the reader it wraps ours in, not ours,
		// and then waits for its reading goroutine: one blocked in our
		// Read (after Ctrl-D, now and then) had it wait for a key that
		// never came. Closing ours first ends that read.
		stdin.Close()
		rl.Close()
	}()
	// A hangup exits while Readline may hold the terminal raw: it puts
	// back the state the terminal had before (readline's Close would wait
	// for the Readline in progress).
	if f, ok := o.In.(*os.File); ok {
		if st, err := readline.GetState(int(f.Fd())); err == nil {
			h.busy.Lock()
			h.restore = func() { readline.Restore(int(f.Fd()), st) }
			h.busy.Unlock()
		}
	}
	welcome(s, out.w, " Tab completes;")
	for {
		line, err := rl.Readline()
		if errors.Is(err, readline.ErrInterrupt) {
			continue // Ctrl-C at the prompt clears the line
		}
		if err != nil { // io.EOF: Ctrl-D
			break
		}
		if isExit(line) {
			break
		}
		restore := quiet(o.In)
		err = h.exec(ctx, line, out)
		restore()
		if err != nil {
			if c := caret(err, len("approxtune> ")); c != "" {
				out.Print(c)
			}
			out.Error(err.Error())
		}
	}
	return leave(s, out, h)
}

// screenHeight is the terminal's height in rows (standard output's), 0
// when it is not known.
func screenHeight() int {
	ws, err := unix.IoctlGetWinsize(int(os.Stdout.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0
	}
	return int(ws.Row)
}

// quiet turns the echo of the terminal in off while a command runs, and
// returns what turns it back on: keys typed meanwhile wait for the next
// prompt, where line editing shows them, instead of being echoed into the
// live area, which its redraws then left garbled. Ctrl-C still interrupts.
func quiet(in io.Reader) (restore func()) {
	f, ok := in.(*os.File)
	if !ok {
		return func() {}
	}
	fd := int(f.Fd())
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return func() {}
	}
	was := *t
	t.Lflag &^= unix.ECHO
	if unix.IoctlSetTermios(fd, unix.TCSETS, t) != nil {
		return func() {}
	}
	return func() { unix.IoctlSetTermios(fd, unix.TCSETS, &was) }
}

// leave ends an interactive REPL's session, stopping its agent, and
// returns the exit status.
func leave(s *session.Session, out *termOutput, h *hangups) int {
	h.busy.Lock() // a hangup that came meanwhile closes the session itself
	if s.Agent() != nil {
		fmt.Fprintln(out.w, "stopping the agent...")
	}
	if err := s.Close(); err != nil {
		out.Error(err.Error())
		return 1
	}
	return 0
}

// caret is a line with a caret under the column of the line typed after
// indent columns that err points at (a session.Error's), as the Jupyter
// kernel draws one; "" for an error of no column. The column counts
// characters.
func caret(err error, indent int) string {
	var se *session.Error
	if !errors.As(err, &se) || se.Col <= 0 {
		return ""
	}
	return strings.Repeat(" ", indent+se.Col-1) + "^"
}

func script(ctx context.Context, s *session.Session, o Options, out *termOutput, h *hangups) (code int) {
	defer func() {
		h.busy.Lock() // a hangup that came meanwhile closes the session itself
		if err := s.Close(); err != nil {
			out.Error(err.Error())
			code = 1
		}
	}()
	if n := s.Reopened(); n != "" {
		fmt.Fprintln(o.Out, n)
	}
	sc := bufio.NewScanner(o.In)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if n == 1 {
			// A byte-order mark, as Windows editors write: "unknown
			// command \ufeffworkload" had ended the script.
			line = strings.TrimPrefix(line, "\ufeff")
		}
		trim := strings.TrimSpace(line)
		if trim == "" {
			continue
		}
		fmt.Fprintf(o.Out, "> %s\n", trim)
		if isExit(line) {
			return 0
		}
		if strings.HasPrefix(trim, "#") {
			// Nothing runs; the session keeps it for 'export notebook'.
			s.Exec(ctx, line, out)
			continue
		}
		if err := h.exec(ctx, line, out); err != nil {
			msg := strings.ReplaceAll(err.Error(), "\n", "\n  ")
			fmt.Fprintf(o.Err, "line %d: %s\n", n, msg)
			if c := caret(err, 2); c != "" {
				fmt.Fprintf(o.Err, "  %s\n%s\n", line, c)
			}
			return 1
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(o.Err, "approxtune repl: reading the script: %v\n", err)
		return 1
	}
	return 0
}

// isExit reports whether line is 'exit' or 'quit', which leave the REPL
// (and end a script) as Ctrl-D does.
func isExit(line string) bool {
	t := strings.ToLower(strings.TrimSpace(line))
	return t == "exit" || t == "quit"
}

// completer adapts Session.Complete to readline.
type completer struct{ s *session.Session }

func (c completer) Do(line []rune, pos int) ([][]rune, int) {
	str := string(line[:pos])
	cands, start := c.s.Complete(str, len(str))
	typed := []rune(str[start:])
	var out [][]rune
	for _, cand := range cands {
		rest := []rune(cand)[len(typed):]
		if !strings.HasSuffix(cand, "=") && !strings.HasSuffix(cand, "/") { // a key's value, a folder's files follow
			rest = append(rest, ' ')
		}
		out = append(out, rest)
	}
	return out, len(typed)
}

// privateHistory makes the history file (and its directory, where it makes
// it) readable by its owner only before readline, which would create it
// readable by all, opens it: it holds the user's commands.
func privateHistory(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDONLY, 0o600)
	if err != nil {
		return fmt.Errorf("history: %w", err)
	}
	defer f.Close()
	if err := f.Chmod(0o600); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	return nil
}
