package jupyter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/approxtune/approxtune/internal/display"
	"github.com/approxtune/approxtune/internal/notebook"
	"github.com/approxtune/approxtune/session"
)

// handleControl serves a control request at once, even while a cell runs.
func (k *Kernel) handleControl(r request) {
	switch r.msg.Header.MsgType {
	case "shutdown_request":
		k.handleShutdown(r, false)
	case "interrupt_request":
		k.status(r.msg, "busy")
		k.Interrupt() // with no cell running, nothing to do
		k.reply(r, "interrupt_reply", map[string]string{"status": "ok"})
		k.status(r.msg, "idle")
		k.rebusy()
	case "kernel_info_request", "comm_info_request":
		k.simple(r)
		k.rebusy()
	default:
		k.status(r.msg, "busy")
		k.log.Printf("unsupported request %q on control: dropped", r.msg.Header.MsgType)
		k.status(r.msg, "idle")
		k.rebusy()
	}
}

// handleShell serves a shell request (on the shell goroutine).
func (k *Kernel) handleShell(r request) {
	if r.do != nil {
		r.do()
		return
	}
	switch r.msg.Header.MsgType {
	case "execute_request":
		k.execute(r)
	case "shutdown_request":
		k.handleShutdown(r, true)
	case "kernel_info_request", "comm_info_request", "complete_request", "inspect_request", "is_complete_request", "history_request":
		k.simple(r)
	case "comm_open", "comm_msg", "comm_close":
		k.handleComm(r)
	default:
		k.status(r.msg, "busy")
		k.log.Printf("unsupported request %q on shell: dropped", r.msg.Header.MsgType)
		k.status(r.msg, "idle")
	}
}

// simple answers a request whose reply is computed at once: busy, reply, idle.
func (k *Kernel) simple(r request) {
	k.status(r.msg, "busy")
	defer k.status(r.msg, "idle")
	typ := strings.TrimSuffix(r.msg.Header.MsgType, "_request") + "_reply"
	var content any
	var err error
	switch r.msg.Header.MsgType {
	case "kernel_info_request":
		content = k.kernelInfo()
	case "comm_info_request":
		content, err = k.commInfo(r.msg)
	case "complete_request":
		content, err = k.complete(r.msg)
	case "inspect_request":
		content, err = k.inspect(r.msg)
	case "is_complete_request":
		content, err = isComplete(r.msg)
	case "history_request":
		content, err = k.historyReply(r.msg)
	}
	if err != nil {
		k.log.Printf("%s: %v", r.msg.Header.MsgType, err)
		content = errorContent("BadRequest", err.Error(), []string{err.Error()})
	}
	k.reply(r, typ, content)
}

func errorContent(ename, evalue string, tb []string) map[string]any {
	if tb == nil {
		tb = []string{}
	}
	return map[string]any{"status": "error", "ename": ename, "evalue": evalue, "traceback": tb}
}

// kernelInfo is the kernel_info_reply content.
func (k *Kernel) kernelInfo() map[string]any {
	v := k.opts.Version
	if v == "" {
		v = "dev"
	}
	return map[string]any{
		"status":                 "ok",
		"protocol_version":       ProtocolVersion,
		"implementation":         "approxtune",
		"implementation_version": v,
		"language_info":          notebook.LanguageInfo(v),
		"banner": fmt.Sprintf("approxtune %s (%s): approximate autotuning of MPI dense linear algebra.\n"+
			"One command per line; 'help' lists them. A sweep: workload, space, policy, tolerance, then evaluate or tune.\n"+
			"Interrupt stops a sweep at the next run boundary (twice: stops mpirun).", v, runtime.Version()),
		"help_links": []map[string]string{
			{"text": "approxtune commands", "url": "https://github.com/approxtune/approxtune#commands"},
			{"text": "approxtune kernel", "url": "https://github.com/approxtune/approxtune/blob/main/docs/kernel.md"},
		},
		"debugger": false,
	}
}

// handleShutdown stops the running cell, closes the session (stopping the
// local agent cleanly), answers, and ends Serve.
func (k *Kernel) handleShutdown(r request, onShell bool) {
	var c struct {
		Restart bool `json:"restart"`
	}
	json.Unmarshal(r.msg.Content, &c)
	k.status(r.msg, "busy")
	if onShell {
		// This goroutine is the shell goroutine: no cell runs.
		k.mu.Lock()
		k.stopping = true
		closeIt := !k.closed
		k.closed = true
		k.mu.Unlock()
		if closeIt {
			if err := k.sess.Close(); err != nil {
				k.log.Printf("closing the session: %v", err)
			}
		}
	} else {
		k.mu.Lock()
		k.stopping = true
		k.mu.Unlock()
		k.finishCell()
	}
	k.reply(r, "shutdown_reply", map[string]any{"status": "ok", "restart": c.Restart})
	k.status(r.msg, "idle")
	k.shutdown()
}

// finishCell is finish without ending Serve: stop the cell, close the session.
func (k *Kernel) finishCell() {
	k.mu.Lock()
	k.stopping = true
	busy, idle, c := k.busy, k.idle, k.cell
	k.mu.Unlock()
	if busy {
		if c != nil {
			c.stop(k.sess)
		}
		select {
		case <-idle:
		case <-time.After(k.opts.StopGrace):
			k.log.Printf("the running cell did not stop within %v", k.opts.StopGrace)
		}
	}
	k.mu.Lock()
	closeIt := !k.closed && !k.busy
	if closeIt {
		k.closed = true
	}
	k.mu.Unlock()
	if closeIt {
		if err := k.sess.Close(); err != nil {
			k.log.Printf("closing the session: %v", err)
		}
	}
}

// cell is a running execute_request.
type cell struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	n      int // interrupts so far
}

// interrupt cancels the running sweep (the session escalates on the second
// call), or, outside a sweep (starting or waiting for an agent), the
// command's context.
func (c *cell) interrupt(s *session.Session) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	if s.Cancel() == "" {
		c.cancel()
	}
}

// stop ends the cell now: its sweep at once (mpirun interrupted, without
// the advice a first interrupt prints), then the context.
func (c *cell) stop(s *session.Session) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	s.Stop()
	c.cancel()
}

func (c *cell) interrupted() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n > 0
}

// executeRequest is an execute_request's content.
type executeRequest struct {
	Code            string          `json:"code"`
	Silent          bool            `json:"silent"`
	StoreHistory    *bool           `json:"store_history"`
	UserExpressions json.RawMessage `json:"user_expressions"`
	AllowStdin      bool            `json:"allow_stdin"`
	StopOnError     *bool           `json:"stop_on_error"`
}

// errInterrupted ends a cell interrupted between two commands.
var errInterrupted = errors.New("interrupted")

// execute runs a cell: its lines in order, stopping at the first error.
func (k *Kernel) execute(r request) {
	var c executeRequest
	if err := json.Unmarshal(r.msg.Content, &c); err != nil {
		k.status(r.msg, "busy")
		k.reply(r, "execute_reply", errorContent("BadRequest", err.Error(), []string{"execute_request: " + err.Error()}))
		k.status(r.msg, "idle")
		return
	}
	k.status(r.msg, "busy")
	silent := c.Silent
	// An empty cell takes no execution count and no history entry, as in
	// ipykernel.
	store := !silent && (c.StoreHistory == nil || *c.StoreHistory) && strings.TrimSpace(c.Code) != ""
	if store {
		k.count++
	}
	count := k.count
	if !silent {
		k.publish("execute_input", r.msg, map[string]any{"code": c.Code, "execution_count": count})
	}
	out := display.NewCellOutput(iopubPublisher{k, r.msg}, k.outputEnv(), silent, count)
	ko := kernelOutput{out, k, r.msg, silent}
	if k.note != "" && !silent {
		ko.Print(k.note)
		k.note = ""
	}
	failed := runCellOutput(k.sess, c.Code, ko, k.setCell, k.applyBeforeSweep(r.msg))
	k.refreshControls(r.msg)
	if store {
		k.history = append(k.history, historyEntry{line: count, input: c.Code, output: out.ResultText()})
	}
	if failed != nil {
		stop := c.StopOnError == nil || *c.StopOnError
		if stop {
			k.settle(abortQuiet, abortWait)
		}
		rc := errorContent(failed.EName, failed.EValue, failed.Traceback)
		rc["execution_count"] = count
		k.reply(r, "execute_reply", rc)
		k.status(r.msg, "idle")
		if stop {
			k.abortQueued()
		}
		return
	}
	k.reply(r, "execute_reply", map[string]any{
		"status": "ok", "execution_count": count, "payload": []any{},
		"user_expressions": userExpressions(c.UserExpressions),
	})
	k.status(r.msg, "idle")
}

// userExpressions answers each user expression with an error: the command
// language has no expressions.
func userExpressions(raw json.RawMessage) map[string]any {
	out := map[string]any{}
	var exprs map[string]string
	if json.Unmarshal(raw, &exprs) != nil {
		return out
	}
	for name := range exprs {
		out[name] = errorContent("NotSupported", "approxtune commands have no expressions to evaluate", nil)
	}
	return out
}

// abortQuiet and abortWait bound how long a cell that failed with
// stop_on_error waits for requests still on their way before its reply
// (Kernel.settle).
const (
	abortQuiet = 100 * time.Millisecond
	abortWait  = 300 * time.Millisecond
)

// settle waits until no shell request has arrived for quiet, or at most
// wait. A cell that fails at once (a typo) ended before the notebook's
// next queued cells had reached the kernel, and those then ran after the
// error: a review's Run All ran the cell after a failing one in 5 of 16
// tries (ipykernel, slower to fail, in none). What the client sent before
// the failed cell's reply, which it has not seen yet, is then queued, and
// abortQueued aborts it; a client that waits for the reply before it sends
// more is not held up by more than the wait.
func (k *Kernel) settle(quiet, wait time.Duration) {
	end := time.Now().Add(wait)
	n, since := len(k.shellQ), time.Now()
	for time.Since(since) < quiet && time.Now().Before(end) {
		time.Sleep(5 * time.Millisecond)
		if m := len(k.shellQ); m != n {
			n, since = m, time.Now()
		}
	}
}

// abortQueued answers the execute requests already queued with status
// aborted (after an error with stop_on_error); other requests are served.
func (k *Kernel) abortQueued() {
	// Only what is queued now: a request that comes while these are
	// answered may have been sent after the client saw the error (a
	// client that runs its next cell on an aborted reply had it aborted).
	for n := len(k.shellQ); n > 0; n-- {
		select {
		case r := <-k.shellQ:
			if r.msg.Header.MsgType != "execute_request" {
				k.handleShell(r)
				continue
			}
			k.status(r.msg, "busy")
			k.reply(r, "execute_reply", map[string]any{"status": "aborted"})
			k.status(r.msg, "idle")
		default:
			return
		}
	}
}

// outputEnv is the environment of the kernel's cell outputs.
func (k *Kernel) outputEnv() display.Env {
	return display.Env{
		Last:       k.sess.Last,
		DisplayID:  display.DisplayIDs(k.id, &k.seq),
		Interval:   k.opts.UpdateInterval,
		PrintDelay: display.PrintDelay,
	}
}

// iopubPublisher publishes a cell's output on the kernel's iopub, in
// answer to parent.
type iopubPublisher struct {
	k      *Kernel
	parent *Message
}

// Publish implements display.Publisher.
func (p iopubPublisher) Publish(typ string, content map[string]any) {
	p.k.publish(typ, p.parent, content)
}

// setCell records the running cell (nil: none), for Interrupt.
func (k *Kernel) setCell(c *cell) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cell = c
}

// CellError is a cell that failed: the command at fault, and the error
// output that shows it (ename, evalue, traceback: the line, a caret under
// the column at fault, and the message).
type CellError struct {
	// Line is the 1-based line of the cell's code that failed.
	Line int
	// Interrupted tells that the cell was interrupted.
	Interrupted bool
	// Err is the command's error.
	Err           error
	EName, EValue string
	Traceback     []string
}

func (e *CellError) Error() string { return e.EName + ": " + e.EValue }

// Unwrap is the command's error.
func (e *CellError) Unwrap() error { return e.Err }

// runCellOutput runs code as a cell whose output is out: its commands in
// order (runCell), then closes out and, when a command failed, publishes
// the error (unless silent) and returns it. The live kernel and the
// headless Executor both run cells through it.
func runCellOutput(sess *session.Session, code string, out cellOutput, track func(*cell), before func(*session.Command, cellOutput)) *CellError {
	line, interrupted, err := runCell(sess, code, out, track, before)
	out.Close()
	if err == nil {
		return nil
	}
	ename, evalue, tb := describeError(err, code, line, interrupted)
	out.PublishError(ename, evalue, tb)
	return &CellError{Line: line, Interrupted: interrupted, Err: err, EName: ename, EValue: evalue, Traceback: tb}
}

// runCell runs the commands of code and returns the 1-based line of the
// first error, whether the cell was interrupted, and the error. track is
// told the running cell (then nil), so that an interrupt reaches it.
// before, when set, is called with each command just before it runs (the
// kernel applies the controls' unapplied boxes before a sweep).
func runCell(sess *session.Session, code string, out cellOutput, track func(*cell), before func(*session.Command, cellOutput)) (int, bool, error) {
	lines := splitLines(code)
	last := -1
	for i, l := range lines {
		c, err := session.Parse(l)
		if err != nil {
			// A cell that cannot be read runs none of its lines, as
			// is_complete calls it invalid: its first lines had run (a
			// 'workload' that reset the space) before the error.
			return i + 1, false, err
		}
		if c != nil {
			last = i
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := &cell{cancel: cancel}
	track(c)
	defer track(nil)
	for i := 0; i <= last; i++ {
		cmd, _ := session.Parse(lines[i]) // each line parsed above, without error
		if cmd == nil {
			if strings.HasPrefix(strings.TrimSpace(lines[i]), "#") {
				// A comment runs nothing; the session's transcript keeps
				// it, so 'export notebook' has it as markdown, as the
				// REPL's comments are.
				_ = sess.Exec(ctx, lines[i], out) // no command: nothing can fail
			}
			continue
		}
		if c.interrupted() {
			return i + 1, true, errInterrupted
		}
		out.Begin(i == last)
		if before != nil {
			before(cmd, out)
			track(c) // what before ran (a control's command) had tracked its own
		}
		err := sess.Exec(ctx, lines[i], out)
		out.End(err == nil)
		if err != nil {
			return i + 1, c.interrupted(), err
		}
	}
	return 0, false, nil
}

func splitLines(code string) []string {
	lines := strings.Split(code, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	return lines
}

// describeError makes the ename, evalue and traceback of a failed cell:
// the line, a caret under the column at fault, and the message.
func describeError(err error, code string, line int, interrupted bool) (string, string, []string) {
	ename := "Error"
	var se *session.Error
	switch {
	case interrupted:
		ename = "Interrupted"
	case errors.Is(err, session.ErrAgentDied): // a *session.Error too
		ename = "AgentDied"
	case errors.As(err, &se):
		ename = "CommandError"
	}
	msg := err.Error()
	if errors.Is(err, errInterrupted) {
		msg = fmt.Sprintf("interrupted before line %d", line)
	}
	var tb []string
	lines := splitLines(code)
	if line >= 1 && line <= len(lines) {
		prefix := fmt.Sprintf("line %d: ", line)
		tb = append(tb, prefix+lines[line-1])
		if se != nil && se.Col > 0 {
			// The column counts runes; the caret goes under that rune.
			tb = append(tb, strings.Repeat(" ", len(prefix)+se.Col-1)+"^")
		}
	}
	evalue := msg
	if se != nil {
		evalue = se.Msg
		if se.Col > 0 {
			evalue = fmt.Sprintf("column %d: %s", se.Col, se.Msg)
		}
	}
	if line > 0 && len(lines) > 1 {
		evalue = fmt.Sprintf("line %d: %s", line, evalue)
	}
	tb = append(tb, ename+": "+evalue)
	return ename, evalue, tb
}
