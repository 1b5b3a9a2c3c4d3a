// Command gosweep drives an approxtune sweep from a Go program, without the
// REPL: it opens a session, sets the workload and the space with the same
// commands a user types, runs an evaluate sweep on a local agent, follows its
// progress as results arrive, and prints each policy's speed-up and error.
//
//	go run ./examples/gosweep
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/approxtune/approxtune/session"
)

// progress receives the session's output: command text and sweep progress.
// An update comes after every event (and every second of a terminal's
// clock), so it prints the results it has not printed yet.
type progress struct{ seen int }

func (*progress) Print(text string) { fmt.Println(strings.TrimSuffix(text, "\n")) }

func (o *progress) Update(p session.Progress) {
	for ; o.seen < len(p.Sweep.Results); o.seen++ {
		r := p.Sweep.Results[o.seen]
		if r.PredictedS != nil {
			fmt.Printf("[%d/%d] %s %s: predicted %.4fs\n", o.seen+1, p.Total, r.Config.Label(), r.Policy, *r.PredictedS)
		}
	}
}

func main() {
	// Local agents run the approxtune binary; find it on PATH (install.sh puts it there).
	bin, err := exec.LookPath("approxtune")
	if err != nil {
		fmt.Fprintln(os.Stderr, "gosweep: approxtune is not on PATH: run ./install.sh first")
		os.Exit(1)
	}
	// A new session directory each time, under the sessions folder
	// (Options.Dir names one; a directory is one session's at a time).
	s, err := session.New(session.Options{Binary: bin})
	if err != nil {
		fmt.Fprintln(os.Stderr, "gosweep:", err)
		os.Exit(1)
	}
	defer s.Close()
	ctx := context.Background()
	out := &progress{}
	for _, cmd := range []string{
		"workload summa n=1024",
		"space b=64,128 grid=2x2,1x4",
		"policy conditional,eager",
		"tolerance 2^-1,2^-4",
		"reps 2",
	} {
		if err := s.Exec(ctx, cmd, out); err != nil {
			fmt.Fprintf(os.Stderr, "gosweep: %s: %v\n", cmd, err)
			os.Exit(1)
		}
	}
	sw, err := s.Run(ctx, "evaluate", out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gosweep:", err)
		os.Exit(1)
	}
	for _, sm := range sw.Summaries() {
		fmt.Printf("%-11s %-8g speed-up %.2fx  mean error %.1f%%  chosen %s (best %s)\n",
			sm.Policy, sm.Tolerance, sm.Speedup, 100*sm.MeanError, sm.Chosen, sm.Best)
	}
	fmt.Println("journal:", s.Dir())
}
