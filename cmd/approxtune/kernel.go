package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/approxtune/approxtune/internal/jupyter"
	"github.com/approxtune/approxtune/session"
)

func runKernel(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("kernel", "approxtune kernel [--dir DIR] CONNECTION_FILE",
		`The Jupyter kernel (what the kernelspec's argv runs; see approxtune install).
Cells hold the REPL's commands, one per line. The first sweep starts a local
agent under mpirun. An interrupt (interrupt_request, or SIGINT) stops a
running sweep at the next run boundary, a second one stops mpirun; a
shutdown_request (or SIGTERM) stops the agent cleanly and exits.`, stderr)
	dir := fs.String("dir", "", "session `DIR` (default $APPROXTUNE_SESSION_DIR or $XDG_DATA_HOME/approxtune/sessions/ID)")
	if code, done := parse(fs, args); done {
		return code
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "approxtune kernel: want one connection file, got %d arguments (Jupyter passes it: see approxtune install)\n", fs.NArg())
		return 2
	}
	logger := log.New(stderr, "approxtune kernel: ", log.LstdFlags)
	info, err := jupyter.ReadConnectionFile(fs.Arg(0))
	if err != nil {
		logger.Print(err)
		return 1
	}
	s, err := session.New(session.Options{Dir: *dir, Binary: executable()})
	note := ""
	var inUse *session.InUseError
	if errors.As(err, &inUse) {
		// Another kernel (a second notebook under the same
		// $APPROXTUNE_SESSION_DIR), or a REPL, has it: a kernel that
		// exits here is restarted and dies again, and the notebook only
		// says its connection failed. This one keeps a session of its
		// own, and its first cell says so.
		fresh := filepath.Join(session.DefaultSessionsDir(), session.NewSessionID())
		note = fmt.Sprintf("note: session directory %s is open in another approxtune%s, so this kernel keeps its own session in %s ('load %s' reads the other's sweeps)",
			inUse.Dir, inUse.Holder, fresh, inUse.Dir)
		logger.Print(note)
		s, err = session.New(session.Options{Dir: fresh, Binary: executable()})
	}
	if err != nil {
		logger.Print(err)
		return 1
	}
	for _, r := range []string{s.Reopened(), s.Previous()} {
		if r != "" {
			note = strings.TrimPrefix(note+"\n"+r, "\n")
		}
	}
	k, err := jupyter.New(info, s, jupyter.Options{Version: version, Log: logger, Note: note})
	if err != nil {
		s.Close()
		logger.Print(err)
		return 1
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	go func() {
		for {
			select {
			case sig := <-sigs:
				if sig == os.Interrupt {
					// SIGINT interrupts the cell, never the kernel.
					k.Interrupt()
					continue
				}
				logger.Printf("%v: shutting down", sig)
				cancel()
			case <-ctx.Done():
				return
			}
		}
	}()
	if os.Getenv("JPY_PARENT_PID") != "" {
		go watchParent(ctx, cancel, logger)
	}
	logger.Printf("serving session %s", s.Dir())
	if err := k.Serve(ctx); err != nil {
		logger.Print(err)
		return 1
	}
	return 0
}

// watchParent ends the kernel when the process that started it (Jupyter
// sets JPY_PARENT_PID) goes away, as ipykernel does: the kernel is then
// reparented.
func watchParent(ctx context.Context, cancel context.CancelFunc, logger *log.Logger) {
	parent := os.Getppid()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if os.Getppid() != parent {
				logger.Printf("the process that started the kernel (pid %d) is gone: shutting down", parent)
				cancel()
				return
			}
		}
	}
}

func runInstall(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlags("install", "approxtune install [--user | --sys-prefix | --prefix P]",
		`Installs the Jupyter kernelspec "approxtune" (kernel.json running this
binary's absolute path, interrupt_mode message, and a logo) where 'jupyter
kernelspec list' finds it:
  --user        Jupyter's user data directory: $JUPYTER_DATA_DIR, or
                ~/.local/share/jupyter/kernels (the default)
  --sys-prefix  sys.prefix of the Python that runs jupyter, e.g.
                /usr/share/jupyter/kernels for Debian's packages
  --prefix P    P/share/jupyter/kernels (then JUPYTER_PATH=P/share/jupyter)`, stderr)
	user := fs.Bool("user", false, "install for this user (the default)")
	sysPrefix := fs.Bool("sys-prefix", false, "install into the sys.prefix of jupyter's Python")
	prefix := fs.String("prefix", "", "install into `P`/share/jupyter/kernels")
	if code, done := parse(fs, args); done {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "approxtune install: unexpected argument %q (see approxtune install -h)\n", fs.Arg(0))
		return 2
	}
	n := 0
	for _, b := range []bool{*user, *sysPrefix, *prefix != ""} {
		if b {
			n++
		}
	}
	if n > 1 {
		fmt.Fprintln(stderr, "approxtune install: give one of --user, --sys-prefix, --prefix P")
		return 2
	}
	var data string
	switch {
	case *prefix != "":
		data = filepath.Join(*prefix, "share", "jupyter")
	case *sysPrefix:
		p, err := jupyter.SysPrefix(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "approxtune install --sys-prefix: %v\n", err)
			return 1
		}
		data = filepath.Join(p, "share", "jupyter")
	default:
		d, err := jupyter.UserDataDir()
		if err != nil {
			fmt.Fprintf(stderr, "approxtune install: %v\n", err)
			return 1
		}
		data = d
	}
	exe, err := os.Executable()
	if err == nil {
		exe, err = filepath.EvalSymlinks(exe)
	}
	if err != nil {
		fmt.Fprintf(stderr, "approxtune install: locate this binary: %v\n", err)
		return 1
	}
	// Where it replaces a spec that ran another binary (a second
	// install, with another --prefix), the kernel Jupyter runs changes:
	// say so.
	before := jupyter.SpecBinary(filepath.Join(data, "kernels"))
	dir, err := jupyter.InstallSpec(filepath.Join(data, "kernels"), exe)
	if err != nil {
		fmt.Fprintf(stderr, "approxtune install: %v\n", err)
		return 1
	}
	was := ""
	if before != "" && before != exe {
		was = fmt.Sprintf("; it had run %s", before)
	}
	fmt.Fprintf(stdout, "installed the Jupyter kernelspec %q in %s (runs %s%s)\n", jupyter.SpecName, dir, exe, was)
	if *prefix != "" {
		fmt.Fprintf(stdout, "Jupyter finds it with JUPYTER_PATH=%s\n", data)
	}
	return 0
}
