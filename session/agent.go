package session

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/approxtune/approxtune/internal/launch"
	"github.com/approxtune/approxtune/internal/protocol"
	"github.com/approxtune/approxtune/sweep"
)

// NewToken returns a random 256-bit token, hex encoded.
func NewToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// Listener accepts agents that dial in with the right token. Every
// connection says hello in a goroutine of its own within HelloWait, so
// connections that say nothing (a port scanner, a flood of idle sockets) or
// the wrong thing never delay a real agent.
type Listener struct {
	ln     net.Listener
	token  string
	digest [sha256.Size]byte // of token: compared in constant time, whatever the length offered
	// Refused is called (if set) for every agent turned away, with the
	// reason; calls never overlap.
	Refused func(remote, reason string)
	// HelloWait bounds the wait for a connection's hello (default 5 s);
	// a connection silent for longer is closed.
	HelloWait time.Duration
	mu        sync.Mutex // serializes Refused
}

// maxPending bounds the connections saying hello at once; past it new
// connections are closed at once (each costs a file descriptor).
const maxPending = 4096

// Listen opens a listener on addr ("127.0.0.1:0" for a free local port).
func Listen(addr, token string) (*Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return &Listener{ln: ln, token: token, digest: sha256.Sum256([]byte(token)), HelloWait: 5 * time.Second}, nil
}

// Addr is the address agents dial.
func (l *Listener) Addr() string { return l.ln.Addr().String() }

// Token is the token agents must present.
func (l *Listener) Token() string { return l.token }

// Close stops listening.
func (l *Listener) Close() error { return l.ln.Close() }

func (l *Listener) refuse(c net.Conn, reason string) {
	if l.Refused != nil {
		l.mu.Lock()
		l.Refused(c.RemoteAddr().String(), reason)
		l.mu.Unlock()
	}
	c.Close()
}

// Accept waits for an agent with the right token and returns it. Agents with
// a wrong token, or that do not say hello within HelloWait, are refused (and
// told why when they said hello); nothing they sent is used. Connections are
// heard in parallel: the first agent with the right token is the one
// returned, and one that proves itself while another is being welcomed is
// told the session has its agent.
func (l *Listener) Accept(ctx context.Context) (*Agent, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	claim := make(chan struct{}, 1) // the one agent this call returns
	claim <- struct{}{}
	found := make(chan *Agent, 1)
	failed := make(chan error, 1)
	var wg sync.WaitGroup
	var pending sync.WaitGroup
	var n atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.ln.Accept()
			if err != nil {
				failed <- err
				return
			}
			if n.Load() >= maxPending {
				l.refuse(c, "too many connections saying hello at once")
				continue
			}
			n.Add(1)
			pending.Add(1)
			go func() {
				defer pending.Done()
				defer n.Add(-1)
				a, err := l.handshake(ctx, c, claim)
				if errors.Is(err, net.ErrClosed) {
					return // cut when the session stopped waiting, not refused
				}
				if err != nil {
					l.refuse(c, err.Error())
					return
				}
				found <- a
			}()
		}
	}()
	var a *Agent
	var err error
	select {
	case a = <-found:
	case <-ctx.Done():
		err = ctx.Err()
	case e := <-failed:
		err = fmt.Errorf("accept an agent: %w", e)
	}
	cancel()
	// Stop the accepting goroutine (a deadline in the past wakes it), wait
	// for the connections still saying hello to be closed, and leave the
	// listener ready for the next call.
	if tl, ok := l.ln.(*net.TCPListener); ok {
		tl.SetDeadline(time.Now())
		wg.Wait()
		tl.SetDeadline(time.Time{})
	} else {
		wg.Wait()
	}
	pending.Wait()
	if a == nil {
		select {
		case a = <-found: // welcomed as the session stopped waiting: keep it
			err = nil
		default:
		}
	}
	return a, err
}

// handshake hears c's hello within HelloWait and, when its token is right
// and the session still wants an agent (claim), welcomes it.
func (l *Listener) handshake(ctx context.Context, c net.Conn, claim chan struct{}) (*Agent, error) {
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	wait := l.HelloWait
	if wait <= 0 {
		wait = 5 * time.Second
	}
	c.SetReadDeadline(time.Now().Add(wait))
	rd := protocol.NewReader(c)
	w := protocol.NewWriter(c)
	line, typ, err := rd.Next()
	if protocol.IsVersion(err) {
		// The agent reads this reply as of another version too, and says so.
		w.Write(protocol.Reply{Type: protocol.TypeRefused, V: protocol.Version, Message: "this session speaks another protocol version: run the agent from the session's approxtune build"})
	}
	if err != nil {
		return nil, fmt.Errorf("no hello: %w", err)
	}
	if typ != protocol.TypeHello {
		return nil, fmt.Errorf("first message is %q, not hello", typ)
	}
	var h protocol.Hello
	if err := json.Unmarshal(line, &h); err != nil {
		// Told why, as an agent of another version is: the agent prints it.
		w.Write(protocol.Reply{Type: protocol.TypeRefused, V: protocol.Version, Message: fmt.Sprintf("the hello does not read (%v): run the agent from the session's approxtune build", err)})
		return nil, fmt.Errorf("bad hello: %w", err)
	}
	offered := sha256.Sum256([]byte(h.Token))
	if subtle.ConstantTimeCompare(offered[:], l.digest[:]) != 1 {
		w.Write(protocol.Reply{Type: protocol.TypeRefused, V: protocol.Version, Message: "wrong token: set APPROXTUNE_TOKEN to the token the session printed"})
		return nil, errors.New("wrong token")
	}
	select {
	case <-claim:
	case <-ctx.Done():
		w.Write(protocol.Reply{Type: protocol.TypeRefused, V: protocol.Version, Message: "the session already has its agent"})
		return nil, errors.New("another agent came first")
	}
	if !stop() {
		claim <- struct{}{}
		return nil, net.ErrClosed
	}
	h.Token = ""
	// JSON gave the defaults back as numbers and strings: make them the
	// parameters' own values (a grid default "2x2" becomes a GridShape).
	for i := range h.Workloads {
		for j, p := range h.Workloads[i].Params {
			if v, err := p.Convert(p.Default); err == nil {
				h.Workloads[i].Params[j].Default = v
			}
		}
	}
	if err := w.Write(protocol.Reply{Type: protocol.TypeWelcome, V: protocol.Version}); err != nil {
		claim <- struct{}{} // let another agent in
		return nil, fmt.Errorf("welcome: %w", err)
	}
	c.SetReadDeadline(time.Time{})
	a := &Agent{Hello: h, conn: c, w: w, events: make(chan []byte, 256), gone: make(chan struct{})}
	go a.read(rd)
	return a, nil
}

// Agent is a connected agent.
type Agent struct {
	Hello protocol.Hello // what the agent announced (token removed)

	conn   net.Conn
	w      *protocol.Writer
	events chan []byte
	gone   chan struct{} // closed when the connection ends
	mu     sync.Mutex
	err    error // why the connection ended
	nextID int64
	proc   runner // set for agents this session started
	job    string // the Slurm job its ranks run in (a batch job, or the allocation of its step); "" under mpirun
	closed bool   // the session closed the connection itself
	// orphaned: mpirun exited while the connection was up, and the
	// session stopped the ranks it left (see watchLauncher).
	orphaned bool
}

// Warnings returns what the agent found in its environment that makes its
// timings or predictions unreliable (protocol.Hello.Warnings), whether the
// session started it or it dialed in.
func (a *Agent) Warnings() []string { return a.Hello.Warnings }

// Local reports whether the agent has ranks on this machine: the session
// started it, or a host it announced is this one's. Those ranks share the
// session's cores, so the session gates their runs while it draws
// (RunGated).
func (a *Agent) Local() bool {
	if a.proc != nil {
		return true
	}
	host, err := os.Hostname()
	if err != nil {
		return true // cannot tell: be careful
	}
	for _, h := range a.Hello.Hosts {
		if h == host {
			return true
		}
	}
	return false
}

func (a *Agent) read(rd *protocol.Reader) {
	defer close(a.gone)
	for {
		line, _, err := rd.Next()
		if err != nil {
			a.mu.Lock()
			switch {
			case a.orphaned:
				err = errors.New("mpirun exited while its ranks ran; the session stopped them")
			case a.closed:
				err = errSessionClosed
			case errors.Is(err, io.EOF):
				err = errors.New("the agent closed the connection")
			}
			a.err = err
			a.mu.Unlock()
			return
		}
		select {
		case a.events <- line:
		case <-time.After(time.Minute):
			// nobody is reading: drop rather than block the connection
		}
	}
}

// Gone is closed when the agent's connection ends.
func (a *Agent) Gone() <-chan struct{} { return a.gone }

// Err says why the connection ended (nil while it is up).
func (a *Agent) Err() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// Event is one message from the agent: its type and its JSON.
type Event struct {
	Type string
	Raw  json.RawMessage
}

// Decode unmarshals the event into v.
func (e Event) Decode(v any) error { return json.Unmarshal(e.Raw, v) }

// ErrAgentDied is wrapped by the error a run returns when the agent goes away.
var ErrAgentDied = errors.New("the agent died")

// Run sends spec and calls on for every event until the run's Done, which it
// returns. Cancelling ctx asks the agent to stop at the next run boundary (the
// agent then still answers with a Done); the caller escalates if it does not.
func (a *Agent) Run(ctx context.Context, spec *sweep.Spec, on func(Event)) (protocol.Done, error) {
	return a.run(ctx, spec, false, on)
}

// RunGated is Run with the gate on (protocol.Command.Gate): each event is
// acknowledged once on has returned, and the agent starts no run while an
// event it sent is not. What on does (drawing figures) thus never overlaps
// a timed run; the agent waits at run boundaries meanwhile.
func (a *Agent) RunGated(ctx context.Context, spec *sweep.Spec, on func(Event)) (protocol.Done, error) {
	return a.run(ctx, spec, true, on)
}

func (a *Agent) run(ctx context.Context, spec *sweep.Spec, gate bool, on func(Event)) (protocol.Done, error) {
	a.mu.Lock()
	a.nextID++
	id := a.nextID
	a.mu.Unlock()
	if err := a.w.Write(protocol.Command{Type: protocol.TypeRun, V: protocol.Version, ID: id, Spec: spec, Gate: gate}); err != nil {
		return protocol.Done{}, fmt.Errorf("%w: %v", ErrAgentDied, err)
	}
	cancelled := false
	var applied int64 // events given to on
	// handle takes one line from the agent; it reports the run's Done.
	handle := func(line []byte) (protocol.Done, bool) {
		typ := lineType(line)
		switch typ {
		case protocol.TypeDone:
			var d protocol.Done
			json.Unmarshal(line, &d)
			return d, d.ID == id
		case protocol.TypePong:
			return protocol.Done{}, false
		}
		on(Event{Type: typ, Raw: line})
		applied++
		if gate {
			a.w.Write(protocol.Ack{Type: protocol.TypeAck, V: protocol.Version, ID: id, N: applied})
		}
		return protocol.Done{}, false
	}
	for {
		select {
		case line := <-a.events:
			if d, ok := handle(line); ok {
				return d, nil
			}
		case <-ctx.Done():
			if !cancelled {
				cancelled = true
				a.Cancel(id)
			}
			ctx = context.Background() // keep reading until Done or death
		case <-a.gone:
			// Take what arrived before the end, in order: the run's Done
			// may be among it (an agent that ended right after it), and
			// then the run ended as it says, not with the agent's death.
			for {
				select {
				case line := <-a.events:
					if d, ok := handle(line); ok {
						return d, nil
					}
					continue
				default:
				}
				break
			}
			return protocol.Done{}, a.deathError()
		}
	}
}

// lineType is the type of a line from the agent.
func lineType(line []byte) string {
	var head struct {
		Type string `json:"type"`
	}
	json.Unmarshal(line, &head)
	return head.Type
}

// Cancel asks the agent to stop run id at the next run boundary, or, if
// the agent has not begun it yet, as soon as it does.
func (a *Agent) Cancel(id int64) error {
	return a.w.Write(protocol.Command{Type: protocol.TypeCancel, V: protocol.Version, ID: id})
}

// Shutdown asks the agent to finish and waits up to grace for it to go; an
// agent this session started is then interrupted if it is still running.
func (a *Agent) Shutdown(grace time.Duration) error {
	a.w.Write(protocol.Command{Type: protocol.TypeShutdown, V: protocol.Version})
	select {
	case <-a.gone:
	case <-time.After(grace):
	}
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.conn.Close()
	if a.proc != nil {
		return a.proc.finish(grace)
	}
	return nil
}

// notify routes the news of the agent's job (its changes of state) to f,
// or nowhere when f is nil.
func (a *Agent) notify(f func(string)) {
	if a.proc != nil {
		a.proc.setNotes(f)
	}
}

// runBy names what runs the agent's ranks: "mpirun" (for an agent that
// dialed in, the launcher the user ran), "srun", "Slurm job 12".
func (a *Agent) runBy() string {
	if a.proc != nil {
		return a.proc.name()
	}
	return "mpirun"
}

// Interrupt stops an agent this session started: SIGINT to mpirun, then
// SIGTERM, then SIGKILL, each after grace (a Slurm job is cancelled).
func (a *Agent) Interrupt(grace time.Duration) error {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	a.conn.Close()
	if a.proc == nil {
		return errors.New("this agent was not started by the session: stop it through the batch system")
	}
	return a.proc.stop(grace)
}

// errSessionClosed is why an agent's connection ended that the session
// closed itself (it stopped the agent).
var errSessionClosed = errors.New("the session closed the connection")

// deathError explains why the agent went away, with mpirun's status and the
// tail of its standard error when the session started it.
func (a *Agent) deathError() error {
	cause := errors.New("connection lost")
	if err := a.Err(); err != nil {
		cause = err
	}
	if a.proc != nil {
		select {
		case <-a.proc.ended():
		case <-time.After(a.proc.settle()):
		}
		return fmt.Errorf("%w: %w; %s", ErrAgentDied, cause, a.proc.describe())
	}
	return fmt.Errorf("%w: %w", ErrAgentDied, cause)
}

// runner runs the ranks of an agent this session started: an mpirun or
// srun here (process), or a Slurm batch job (batchJob).
type runner interface {
	// stop ends the ranks now (for mpirun SIGINT, SIGTERM, SIGKILL, each
	// after grace).
	stop(grace time.Duration) error
	// finish ends the ranks of an agent told to shut down: it waits up to
	// grace for them to end by themselves, then stops them.
	finish(grace time.Duration) error
	// ended is closed once the ranks are over.
	ended() <-chan struct{}
	// settle bounds the wait for ended once the agent's connection is lost.
	settle() time.Duration
	// describe says how the ranks ended (or that they still run), with the
	// end of what they printed.
	describe() string
	// name is what runs the ranks, for messages: "mpirun", "srun", "Slurm
	// job 12".
	name() string
	// setNotes routes the runner's news (a job's changes of state) to f,
	// or nowhere when f is nil.
	setNotes(f func(string))
}

// process is an mpirun (or an srun) this session started.
type process struct {
	cmd    *exec.Cmd
	what   string // "mpirun" or "srun"
	stderr *tail
	exited chan struct{}
	status error
}

func (p *process) ended() <-chan struct{} { return p.exited }

func (p *process) settle() time.Duration { return 5 * time.Second }

func (p *process) name() string { return p.what }

func (p *process) setNotes(func(string)) {}

func (p *process) finish(grace time.Duration) error { return p.stop(grace) }

func (p *process) describe() string {
	select {
	case <-p.exited:
	default:
		return p.what + " is still running"
	}
	s := p.what + " exited"
	if p.status != nil {
		s = p.what + ": " + p.status.Error()
	}
	if t := strings.TrimSpace(p.stderr.String()); t != "" {
		s += "; its last messages:\n" + t
	}
	return s
}

func (p *process) stop(grace time.Duration) error {
	for _, sig := range []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		select {
		case <-p.exited:
			return nil
		default:
		}
		p.cmd.Process.Signal(sig)
		select {
		case <-p.exited:
			return nil
		case <-time.After(grace):
		}
	}
	return fmt.Errorf("%s did not exit", p.what)
}

// tail keeps the last bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
	max int
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = t.buf[len(t.buf)-t.max:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.ToValidUTF8(t.buf, nil))
}

// StartLocal starts an agent of ranks processes under the local mpirun,
// dialing back to a fresh listener on 127.0.0.1, and waits up to timeout for
// its hello. binary is the approxtune executable.
func StartLocal(ctx context.Context, binary string, ranks int, timeout time.Duration) (*Agent, error) {
	l, err := launch.Find()
	if err != nil {
		return nil, err
	}
	token, err := NewToken()
	if err != nil {
		return nil, err
	}
	ln, err := Listen("127.0.0.1:0", token)
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	cmd := l.Command(context.Background(), ranks, binary, "agent", "--connect", ln.Addr())
	cmd.Env = append(cmd.Env, protocol.TokenEnv+"="+token)
	a, err := startProcess(ctx, cmd, "mpirun", fmt.Sprintf("the local agent (%s -n %d)", l.Path, ranks), ln, timeout)
	if err != nil {
		return nil, err
	}
	go a.watchLauncher([]string{binary, "agent", "--connect", ln.Addr()})
	return a, nil
}

// startProcess starts cmd (an mpirun or an srun of an agent that dials
// ln) in a process group of its own and waits up to timeout for the
// agent's hello; what names the process ("mpirun"), how the agent and its
// command line, in errors.
func startProcess(ctx context.Context, cmd *exec.Cmd, what, how string, ln *Listener, timeout time.Duration) (*Agent, error) {
	// mpirun gets SIGTERM when the session dies, killed too (on which it
	// takes its ranks down): a session killed with SIGKILL during a hung
	// run had left mpirun and its ranks running, at full CPU, under init.
	// The parent-death signal follows the thread that started the
	// process, so it is started on a thread locked until it ends.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	p := &process{cmd: cmd, what: what, stderr: &tail{max: 8 << 10}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	cmd.Stdout = p.stderr
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		p.status = cmd.Wait()
		close(p.exited)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	go func() {
		select {
		case <-p.exited:
			cancel()
		case <-actx.Done():
		}
	}()
	a, err := ln.Accept(actx)
	if err != nil {
		// Whether it ended by itself, before it was stopped here: one
		// stopped at the timeout had been reported as not starting,
		// "mpirun: signal: interrupt", which reads as a Ctrl-C.
		exited := false
		select {
		case <-p.exited:
			exited = true
		default:
		}
		p.stop(time.Second)
		if exited {
			return nil, fmt.Errorf("%s did not start: %s%s", how, p.describe(), tooFewCPUs(p.stderr.String()))
		}
		if ctx.Err() == nil && actx.Err() == context.DeadlineExceeded {
			msgs := strings.TrimSpace(p.stderr.String())
			if msgs != "" {
				msgs = "; its last messages:\n" + msgs
			}
			return nil, fmt.Errorf("%s did not say hello within %v, so it was stopped%s", how, timeout, msgs)
		}
		if ctx.Err() != nil { // the user's interrupt, not a timeout
			return nil, fmt.Errorf("interrupted while %s started: %w", how, ctx.Err())
		}
		return nil, fmt.Errorf("%s did not say hello within %v: %w; %s", how, timeout, err, p.describe())
	}
	a.proc = p
	return a, nil
}

// watchLauncher ends the agent when its mpirun exits while the connection
// is up (mpirun was killed, or crashed): the ranks it leaves run on
// unsupervised, so a rank that dies then leaves the others waiting forever,
// and stopping mpirun no longer stops them. The session kills those ranks
// (the processes the agent announced that still run argv, its command
// line) and closes the connection: the sweep stops with mpirun's status,
// and 'resume' starts a new agent.
func (a *Agent) watchLauncher(argv []string) {
	select {
	case <-a.gone:
		return
	case <-a.proc.ended():
	}
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.orphaned = true
	a.mu.Unlock()
	for _, pid := range a.Hello.PIDs {
		if runs(pid, argv) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	a.conn.Close()
}

// runs reports whether process pid runs the command line argv (Linux's
// /proc; false where it cannot tell).
func runs(pid int, argv []string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || pid <= 0 {
		return false
	}
	return string(b) == strings.Join(argv, "\x00")+"\x00"
}
