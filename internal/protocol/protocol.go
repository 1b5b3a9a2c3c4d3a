// Package protocol defines the messages between the session and the agent
// (docs/design.md §5): TCP, one JSON object per line, each with "type" and the
// protocol version "v". The agent dials the session and opens with a Hello
// carrying the shared token (from APPROXTUNE_TOKEN, never the command line);
// the session answers Welcome or Refused. Then the session sends commands
// (run, cancel, ping, shutdown) and the agent streams the sweep events of
// package sweep, a Done after each run, and a Pong for each ping. A run
// with the gate on (Command.Gate) is also answered event by event with
// Acks: the agent then starts no run before every event it sent has been
// acknowledged.
package protocol

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/approxtune/approxtune/sweep"
)

// Version is the protocol version.
const Version = sweep.ProtocolVersion

// TokenEnv is the environment variable that carries the token to the agent.
const TokenEnv = "APPROXTUNE_TOKEN"

// Message types.
const (
	TypeHello    = "hello"
	TypeWelcome  = "welcome"
	TypeRefused  = "refused"
	TypeRun      = "run"
	TypeCancel   = "cancel"
	TypePing     = "ping"
	TypePong     = "pong"
	TypeShutdown = "shutdown"
	TypeDone     = "done"
	TypeAck      = "ack"
)

// Workload is a workload's schema as the agent announces it.
type Workload struct {
	Name   string        `json:"name"`
	Doc    string        `json:"doc"`
	Params []sweep.Param `json:"params"`
}

// Hello opens the connection from the agent.
type Hello struct {
	Type      string     `json:"type"`
	V         int        `json:"v"`
	Token     string     `json:"token"`
	Version   string     `json:"version"` // approxtune's version
	Ranks     int        `json:"ranks"`
	Hosts     []string   `json:"hosts"` // one per rank
	MPI       string     `json:"mpi"`
	BLAS      string     `json:"blas"`
	PID       int        `json:"pid"` // rank 0's process id
	PIDs      []int      `json:"pids"`
	Workloads []Workload `json:"workloads"`
	// Warnings says what in rank 0's environment makes timings or
	// predictions unreliable, one sentence each (an SSE-only OpenBLAS
	// kernel set on an AVX2 CPU, Open MPI's single-copy transfers off).
	Warnings []string `json:"warnings,omitempty"`
}

// Reply is the session's answer to a Hello: Welcome, or Refused with a reason.
type Reply struct {
	Type    string `json:"type"`
	V       int    `json:"v"`
	Message string `json:"message,omitempty"`
}

// Command is what the session sends: run a spec, cancel the running sweep,
// ping, or shut down.
type Command struct {
	Type string `json:"type"`
	V    int    `json:"v"`
	// ID numbers a run; a cancel names the run it cancels (the agent may
	// not have begun it yet), or 0 for whatever runs.
	ID   int64       `json:"id,omitempty"`
	Spec *sweep.Spec `json:"spec,omitempty"`
	// Gate, on a run, asks the agent to wait at every run boundary until
	// the session has acknowledged (Ack) every event the run sent so far:
	// the session draws figures between runs, and on the agent's own
	// machine that drawing must not overlap a timed run. A cancel, or the
	// end of the connection, ends the wait.
	Gate bool `json:"gate,omitempty"`
}

// Ack tells the agent that the session has applied (journaled and shown)
// the first N events of the gated run ID.
type Ack struct {
	Type string `json:"type"`
	V    int    `json:"v"`
	ID   int64  `json:"id"`
	N    int64  `json:"n"`
}

// Done ends the events of one run command.
type Done struct {
	Type    string `json:"type"`
	V       int    `json:"v"`
	ID      int64  `json:"id"`
	Status  string `json:"status"` // "ok", "cancelled" or "failed"
	Message string `json:"message,omitempty"`
}

// Statuses of Done.
const (
	StatusOK        = "ok"
	StatusCancelled = "cancelled"
	StatusFailed    = "failed"
)

// Pong answers a Ping.
type Pong struct {
	Type string `json:"type"`
	V    int    `json:"v"`
	ID   int64  `json:"id"`
}

// Writer writes messages as JSON lines; it is safe for concurrent use.
type Writer struct {
	mu sync.Mutex
	w  *bufio.Writer
}

// NewWriter wraps w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: bufio.NewWriter(w)} }

// Write sends one message and flushes it.
func (w *Writer) Write(m any) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("protocol: encode %T: %w", m, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.w.Write(b)
	w.w.WriteByte('\n')
	if err := w.w.Flush(); err != nil {
		return fmt.Errorf("protocol: send: %w", err)
	}
	return nil
}

// VersionError is a message of another protocol version than this side's.
type VersionError struct {
	Got, Want int
}

func (e *VersionError) Error() string {
	return fmt.Sprintf("protocol: message of version %d, this side speaks %d (a different approxtune build on the other side?)", e.Got, e.Want)
}

// IsVersion reports whether err is, or wraps, a *VersionError.
func IsVersion(err error) bool {
	var ve *VersionError
	return errors.As(err, &ve)
}

// Reader reads JSON lines.
type Reader struct{ s *bufio.Scanner }

// NewReader wraps r; lines may be up to 64 MiB.
func NewReader(r io.Reader) *Reader {
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 64<<20)
	return &Reader{s: s}
}

// Next returns the next line and its type. At the end of input it returns
// io.EOF; a line of another protocol version, a *VersionError.
func (r *Reader) Next() ([]byte, string, error) {
	if !r.s.Scan() {
		if err := r.s.Err(); err != nil {
			return nil, "", fmt.Errorf("protocol: receive: %w", err)
		}
		return nil, "", io.EOF
	}
	line := append([]byte(nil), r.s.Bytes()...)
	var head struct {
		Type string `json:"type"`
		V    int    `json:"v"`
	}
	if err := json.Unmarshal(line, &head); err != nil {
		return nil, "", fmt.Errorf("protocol: a line that is not JSON: %.80q: %w", line, err)
	}
	if head.V != Version {
		return nil, "", &VersionError{Got: head.V, Want: Version}
	}
	return line, head.Type, nil
}
