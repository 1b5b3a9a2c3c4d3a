package jupyter

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/approxtune/approxtune/internal/display"
	"github.com/approxtune/approxtune/internal/notebook"
	"github.com/approxtune/approxtune/session"
)

// Executor runs notebook cells headless, through the live kernel's code:
// the same runCell, display.CellOutput and MIME bundles, with the timings
// of the kernel's defaults, but with what the kernel would publish on iopub
// collected into nbformat outputs as a Jupyter front end stores them (see
// display.Collector). A notebook it executes is the one a Jupyter client executing
// it against the kernel would save ('approxtune run').
//
// Execute runs one cell at a time; Interrupt may be called from any
// goroutine.
type Executor struct {
	sess  *session.Session
	id    string
	seq   atomic.Uint64
	count int

	mu   sync.Mutex
	cell *cell
}

// NewExecutor returns an executor of cells on sess. It also makes
// display.Export the session's 'export notebook' writer unless the session
// has one.
func NewExecutor(sess *session.Session) *Executor {
	sess.SetDefaultNotebook(display.Export)
	return &Executor{sess: sess, id: randomID(8)}
}

// Execute runs the code cell c as the kernel runs an execute_request: its
// commands in order, up to the first that fails. It sets c's execution
// count (1, 2, ... over the executor's cells) and replaces its outputs. A
// cell whose source is blank is not run and keeps no count nor outputs, as
// nbclient does. When a command fails, the cell ends with the error output
// and Execute returns the *CellError.
func (e *Executor) Execute(c *notebook.Cell) error {
	if c.Type != notebook.Code {
		return fmt.Errorf("kernel: execute: a %s cell is not code", c.Type)
	}
	if strings.TrimSpace(c.Source) == "" {
		c.ExecutionCount, c.Outputs = nil, []notebook.Output{}
		return nil
	}
	e.count++
	count := e.count
	col := &display.Collector{}
	out := display.NewCellOutput(col, e.outputEnv(), false, count)
	failed := runCellOutput(e.sess, c.Source, out, e.setCell, nil)
	c.ExecutionCount, c.Outputs = notebook.Count(count), col.Outputs()
	if failed != nil {
		return failed
	}
	return nil
}

// Interrupt interrupts the running cell as the kernel's Interrupt does:
// the first interrupt stops a sweep at the next run boundary (or stops
// waiting for an agent), the second interrupts mpirun. It reports whether
// a cell was running.
func (e *Executor) Interrupt() bool {
	c := e.running()
	if c != nil {
		c.interrupt(e.sess)
	}
	return c != nil
}

// Stop ends the running cell now, as the kernel's shutdown does (SIGTERM
// to a notebook run): its sweep stops at once. It reports whether a cell
// was running.
func (e *Executor) Stop() bool {
	c := e.running()
	if c != nil {
		c.stop(e.sess)
	}
	return c != nil
}

// running is the cell under way, nil between cells.
func (e *Executor) running() *cell {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cell
}

func (e *Executor) setCell(c *cell) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cell = c
}

// outputEnv is the kernel's, with its default update interval.
func (e *Executor) outputEnv() display.Env {
	return display.Env{
		Last:       e.sess.Last,
		DisplayID:  display.DisplayIDs(e.id, &e.seq),
		Interval:   250 * time.Millisecond,
		PrintDelay: display.PrintDelay,
	}
}
