package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/protocol"
	"github.com/approxtune/approxtune/internal/selective"
	"github.com/approxtune/approxtune/internal/workloads/catalog"
	"github.com/approxtune/approxtune/sweep"
)

// ExitRefused is the agent's exit status when the session refuses it.
const ExitRefused = 3

// errCancelled ends a sweep that the session cancelled.
var errCancelled = errors.New("cancelled by the session")

// dialTimeout bounds how long rank 0 keeps trying to reach the session.
const dialTimeout = 30 * time.Second

// hostsAndPIDs gathers every rank's host name and process id on rank 0.
func hostsAndPIDs(world *mpi.Comm) ([]string, []int, error) {
	const width = 256
	name, err := mpi.ProcessorName()
	if err != nil {
		return nil, nil, err
	}
	mine := make([]byte, width)
	copy(mine, name)
	all := make([]byte, width*world.Size())
	if err := mpi.Gather(world, mine, all, 0); err != nil {
		return nil, nil, fmt.Errorf("gather host names: %w", err)
	}
	pids := make([]int64, world.Size())
	if err := mpi.Gather(world, []int64{int64(os.Getpid())}, pids, 0); err != nil {
		return nil, nil, fmt.Errorf("gather pids: %w", err)
	}
	hosts := make([]string, world.Size())
	ps := make([]int, world.Size())
	for i := range hosts {
		hosts[i] = string(bytes.TrimRight(all[i*width:(i+1)*width], "\x00"))
		ps[i] = int(pids[i])
	}
	return hosts, ps, nil
}

func schemas() []protocol.Workload {
	var out []protocol.Workload
	for _, w := range catalog.All() {
		out = append(out, protocol.Workload{Name: w.Name(), Doc: w.Doc(), Params: w.Params()})
	}
	return out
}

// dial reaches the session, retrying while it is not listening yet.
func dial(addr string) (net.Conn, error) {
	deadline := time.Now().Add(dialTimeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("connect to the session at %s: %w", addr, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// bcastBytes broadcasts a byte string of any length from rank 0.
func bcastBytes(world *mpi.Comm, data []byte) ([]byte, error) {
	n := []int64{int64(len(data))}
	if err := mpi.Bcast(world, n, 0); err != nil {
		return nil, err
	}
	if world.Rank() != 0 {
		data = make([]byte, n[0])
	}
	if err := mpi.Bcast(world, data, 0); err != nil {
		return nil, err
	}
	return data, nil
}

// session is rank 0's side of the connection.
type session struct {
	conn      net.Conn
	w         *protocol.Writer
	cmds      chan []byte
	cancelled atomic.Bool
	// cancelID is the command the last cancel named (0: whatever runs).
	// The session sends a run and may cancel it before this agent takes
	// it from the queue: begin then finds its cancel here.
	cancelID atomic.Int64
	closed   atomic.Bool // the connection ended
	// The gate of the running command (protocol.Command.Gate): its id, the
	// events sent for it and those the session acknowledged. gate is
	// touched by the MPI goroutine only.
	gate  bool
	run   atomic.Int64
	sent  atomic.Int64
	acked atomic.Int64
	wake  chan struct{} // an ack, a cancel or the end of the connection
}

// signal wakes a gated wait (waitAcks).
func (s *session) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// begin starts command id: no event sent nor acknowledged yet, cancelled
// when its cancel came first or the connection is gone. The reader stores
// a cancel's id before it compares it with run, and begin stores run before
// it reads cancelID: one of them sees the other's, and neither clears it.
func (s *session) begin(id int64, gate bool) {
	s.cancelled.Store(false)
	s.gate = gate
	s.sent.Store(0)
	s.acked.Store(0)
	s.run.Store(id)
	if s.cancelID.Load() == id || s.closed.Load() {
		s.cancelled.Store(true)
	}
}

// emit sends one of the running command's events, counted for the gate.
func (s *session) emit(ev any) error {
	s.sent.Add(1)
	return s.w.Write(ev)
}

// waitAcks waits, when the running command is gated, until the session has
// acknowledged every event sent so far, the sweep is cancelled, or the
// connection is gone.
func (s *session) waitAcks() {
	for s.gate && s.acked.Load() < s.sent.Load() && !s.cancelled.Load() && !s.closed.Load() {
		<-s.wake
	}
}

// open dials, says hello and waits for the session's answer.
func open(addr string, hello protocol.Hello) (*session, *protocol.Reader, error) {
	conn, err := dial(addr)
	if err != nil {
		return nil, nil, err
	}
	s := &session{conn: conn, w: protocol.NewWriter(conn), cmds: make(chan []byte, 4), wake: make(chan struct{}, 1)}
	if err := s.w.Write(hello); err != nil {
		conn.Close()
		return nil, nil, err
	}
	rd := protocol.NewReader(conn)
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	line, typ, err := rd.Next()
	if errors.Is(err, io.EOF) {
		err = fmt.Errorf("the session closed the connection without an answer (is it another approxtune build? this agent speaks protocol %d)", protocol.Version)
	}
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("waiting for the session's answer: %w", err)
	}
	conn.SetReadDeadline(time.Time{})
	var rep protocol.Reply
	json.Unmarshal(line, &rep)
	if typ != protocol.TypeWelcome {
		conn.Close()
		return nil, nil, fmt.Errorf("the session refused this agent: %s", rep.Message)
	}
	return s, rd, nil
}

// read runs in its own goroutine on rank 0: it answers pings and records
// cancels and acks at once (the MPI goroutine may be busy, or waiting for
// them at a gate), and queues the rest. The end of the connection cancels
// the running sweep and queues a shutdown.
func (s *session) read(rd *protocol.Reader) {
	defer func() {
		s.closed.Store(true)
		s.cancelled.Store(true)
		s.signal()
		b, _ := json.Marshal(protocol.Command{Type: protocol.TypeShutdown, V: protocol.Version})
		s.cmds <- b
	}()
	shutdown := false
	for {
		line, typ, err := rd.Next()
		if err != nil {
			// After a shutdown, or once this agent closed the connection
			// itself, its end is no news (a reviewer saw "use of closed
			// network connection" at every session's normal end).
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && !shutdown {
				fmt.Fprintf(os.Stderr, "approxtune agent: %v\n", err)
			}
			return
		}
		shutdown = shutdown || typ == protocol.TypeShutdown
		switch typ {
		case protocol.TypeCancel:
			var c protocol.Command
			json.Unmarshal(line, &c)
			s.cancelID.Store(c.ID)
			if c.ID == 0 || c.ID == s.run.Load() {
				s.cancelled.Store(true)
				s.signal()
			}
		case protocol.TypeAck:
			var a protocol.Ack
			if json.Unmarshal(line, &a) == nil && a.ID == s.run.Load() {
				s.acked.Store(a.N)
				s.signal()
			}
		case protocol.TypePing:
			var c protocol.Command
			json.Unmarshal(line, &c)
			s.w.Write(protocol.Pong{Type: protocol.TypePong, V: protocol.Version, ID: c.ID})
		case protocol.TypeRun, protocol.TypeShutdown:
			s.cmds <- line
		default:
			fmt.Fprintf(os.Stderr, "approxtune agent: ignoring a %q message from the session\n", typ)
		}
	}
}

// connect is the agent's life when it dials a session: hello, then commands
// until shutdown or the end of the connection.
func connect(ctx context.Context, world *mpi.Comm, o Options) int {
	s, backend, warnings, code := greet(world, o)
	if code != ExitOK {
		return code
	}
	if s != nil {
		defer s.conn.Close()
	}
	eng, err := selective.New(world, kernels.New(backend))
	if err != nil {
		fmt.Fprintf(o.Stderr, "approxtune agent: %v\n", err)
		return ExitFailure
	}
	r := &runner{world: world, eng: eng, backend: backend, warnings: warnings, stop: cancelCheck(s), announce: true}
	if s != nil {
		r.emit = s.emit
	}
	idle, err := world.Dup() // the waits for the next command, apart from every other message
	if err != nil {
		fmt.Fprintf(o.Stderr, "approxtune agent: %v\n", err)
		return ExitFailure
	}
	defer idle.Free()
	for {
		line, err := nextCommand(world, idle, s)
		if err != nil {
			fmt.Fprintf(o.Stderr, "approxtune agent: %v\n", err)
			return ExitFailure
		}
		var c protocol.Command
		if err := json.Unmarshal(line, &c); err != nil {
			fmt.Fprintf(o.Stderr, "approxtune agent: bad command: %v\n", err)
			continue
		}
		if c.Type == protocol.TypeShutdown {
			return ExitOK
		}
		var fl selective.Failure
		if err := execute(ctx, r, s, c); errors.As(err, &fl) {
			// An MPI failure may leave ranks in different places: end the job.
			mpi.Abort(world, ExitFailure)
			return ExitFailure
		}
		if r.lost != nil {
			// The connection failed (rank 0 only knows): closing it ends
			// the reader, which queues a shutdown that every rank gets
			// from nextCommand.
			s.conn.Close()
		}
	}
}

// greet says hello to the session from rank 0 and tells every rank whether
// the session welcomed the agent. It returns rank 0's session (nil on the
// other ranks), the kernels backend, the environment warnings announced, and
// ExitOK or the exit status to end with.
func greet(world *mpi.Comm, o Options) (*session, kernels.Backend, []string, int) {
	hosts, pids, err := hostsAndPIDs(world)
	if err != nil {
		fmt.Fprintf(o.Stderr, "approxtune agent: %v\n", err)
		return nil, nil, nil, ExitFailure
	}
	backend, err := kernels.DefaultBackend()
	if err != nil {
		fmt.Fprintf(o.Stderr, "approxtune agent: %v\n", err)
		return nil, nil, nil, ExitUsage
	}
	var s *session
	var warnings []string
	status := []int64{ExitOK}
	if world.Rank() == 0 {
		warnings = environmentWarnings(backend)
		hello := protocol.Hello{Type: protocol.TypeHello, V: protocol.Version, Token: os.Getenv(protocol.TokenEnv),
			Version: o.Version, Ranks: world.Size(), Hosts: hosts, MPI: firstLine(mpi.LibraryVersion()), BLAS: backend.Name(),
			PID: os.Getpid(), PIDs: pids, Workloads: schemas(), Warnings: warnings}
		var rd *protocol.Reader
		if s, rd, err = open(o.Connect, hello); err != nil {
			fmt.Fprintf(o.Stderr, "approxtune agent: %v\n", err)
			status[0] = ExitRefused
		} else {
			go s.read(rd)
		}
	}
	if err := mpi.Bcast(world, status, 0); err != nil {
		fmt.Fprintf(o.Stderr, "approxtune agent: %v\n", err)
		if s != nil {
			s.conn.Close()
		}
		return nil, nil, nil, ExitFailure
	}
	return s, backend, warnings, int(status[0])
}

// cancelCheck is rank 0's part of the check at run boundaries
// (runner.boundary): whether the session cancelled the sweep or its
// connection ended. For a gated command it first waits until the session
// has acknowledged every event sent (the other ranks wait in the
// boundary's broadcast), so that no run starts while the session is still
// drawing what came back.
func cancelCheck(s *session) func() bool {
	return func() bool {
		if s == nil {
			return false
		}
		s.waitAcks()
		return s.cancelled.Load() || s.closed.Load()
	}
}

// nextCommand waits on rank 0 for the session's next command (s is nil
// elsewhere) and broadcasts it: every rank returns the same line. The
// session may send it minutes later, and a rank waiting in MPI_Bcast polls
// all along (an idle agent of 4 ranks kept 1.5-2 of a 2-core machine's
// cores busy between sweeps): the other ranks instead wait for rank 0's
// word on idle (world's duplicate) by testing a receive, sleeping between
// tests (up to idlePoll), then take the line by broadcast.
func nextCommand(world, idle *mpi.Comm, s *session) ([]byte, error) {
	var line []byte
	word := []int64{1}
	if s != nil {
		line = <-s.cmds
	}
	if world.Rank() == 0 {
		for r := 1; r < idle.Size(); r++ {
			if err := mpi.Send(idle, word, r, 0); err != nil {
				return nil, err
			}
		}
	} else {
		q, err := mpi.Irecv(idle, word, 0, 0)
		if err != nil {
			return nil, err
		}
		for pause := 50 * time.Microsecond; ; pause = min(2*pause, idlePoll) {
			done, _, err := mpi.Test(q)
			if err != nil {
				return nil, err
			}
			if done {
				break
			}
			time.Sleep(pause)
		}
	}
	return bcastBytes(world, line)
}

// idlePoll is the longest an idle rank sleeps between tests for the next
// command: what it adds to a command's start at most.
const idlePoll = 20 * time.Millisecond

// execute runs a command's sweep on every rank, and rank 0 tells the session
// how it ended: an error event if it failed, then the done message. It
// returns the sweep's error.
func execute(ctx context.Context, r *runner, s *session, c protocol.Command) error {
	if s != nil {
		s.begin(c.ID, c.Gate)
	}
	configs, err := validate(c.Spec, r.world.Size())
	if err == nil {
		err = r.sweep(ctx, c.Spec, configs)
	}
	done := protocol.Done{Type: protocol.TypeDone, V: protocol.Version, ID: c.ID, Status: protocol.StatusOK}
	switch {
	case err == nil:
	case errors.Is(err, errCancelled):
		done.Status, done.Message = protocol.StatusCancelled, "cancelled at a run boundary"
	default:
		done.Status, done.Message = protocol.StatusFailed, err.Error()
		r.send(sweep.ErrorEvent{Type: sweep.TypeError, V: sweep.ProtocolVersion, Message: err.Error()})
	}
	if r.root() {
		s.w.Write(done)
	}
	return err
}

// validate checks a spec the session sent (the same on every rank).
func validate(s *sweep.Spec, ranks int) ([]sweep.Config, error) {
	if s == nil {
		return nil, errors.New("run command without a spec")
	}
	return s.Validate(catalog.Schema, catalog.Names(), ranks)
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' || c == ',' {
			return s[:i]
		}
	}
	return s
}
