// Package jupyter is approxtune's Jupyter kernel: the Jupyter messaging
// protocol 5.3 over ZeroMQ (github.com/go-zeromq/zmq4, pure Go) in front of a
// session.Session, so notebook cells hold the same command language as the
// REPL.
//
// Sockets: ROUTER shell, control and stdin, PUB iopub, REP heartbeat (echoed
// on its own goroutine). Shell requests run one at a time on one goroutine;
// control requests (interrupt, shutdown, kernel_info) are served on another,
// so an interrupt reaches a running sweep. Every request is bracketed by
// iopub status busy and idle. Malformed messages (bad signature, no
// delimiter, missing frames, invalid JSON) are logged and dropped.
//
// A sweep shows its progress at once as display_data with a display_id and
// replaces it in place with update_display_data as results arrive (at most
// a few times a second, always the last one).
//
// 'controls' shows Jupyter widgets over comms (comm.go: the comm messages;
// widgets.go: the models and their two encodings, ipywidgets 6 and widget
// protocol 2; controls.go: the controls and their output area). Changing
// one runs the command it stands for through the session, on the shell
// goroutine; a click on cancel is served where shell messages are read.
//
// What a cell shows (MIME bundles, the live display, the execute_result) is
// package display's CellOutput, published here on iopub. Executor runs
// notebook cells headless through the same code, collecting what would go
// out on iopub into notebook outputs as a front end stores them
// ('approxtune run'); display.Export replays a session's transcript the
// same way ('export notebook').
package jupyter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/user"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/approxtune/approxtune/internal/display"
	"github.com/approxtune/approxtune/session"
)

// ConnectionInfo is what a Jupyter connection file holds. Unknown fields are
// ignored.
type ConnectionInfo struct {
	Transport       string `json:"transport"`
	IP              string `json:"ip"`
	ShellPort       int    `json:"shell_port"`
	ControlPort     int    `json:"control_port"`
	StdinPort       int    `json:"stdin_port"`
	IOPubPort       int    `json:"iopub_port"`
	HBPort          int    `json:"hb_port"`
	Key             string `json:"key"`
	SignatureScheme string `json:"signature_scheme"`
	KernelName      string `json:"kernel_name,omitempty"`
}

// ReadConnectionFile reads a connection file.
func ReadConnectionFile(path string) (ConnectionInfo, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return ConnectionInfo{}, fmt.Errorf("connection file: %w", err)
	}
	var c ConnectionInfo
	if err := json.Unmarshal(b, &c); err != nil {
		return ConnectionInfo{}, fmt.Errorf("connection file %s: %w", path, err)
	}
	if c.Transport == "" {
		c.Transport = "tcp"
	}
	if c.IP == "" {
		c.IP = "127.0.0.1"
	}
	if c.Transport != "tcp" && c.Transport != "ipc" {
		return ConnectionInfo{}, fmt.Errorf("connection file %s: transport %q: want tcp or ipc", path, c.Transport)
	}
	return c, nil
}

// Endpoint is the ZeroMQ address of a port of the connection.
func (c ConnectionInfo) Endpoint(port int) string {
	if c.Transport == "ipc" {
		return fmt.Sprintf("ipc://%s-%d", c.IP, port)
	}
	return "tcp://" + net.JoinHostPort(c.IP, fmt.Sprint(port))
}

// Options configure a Kernel.
type Options struct {
	// Version is approxtune's version, for kernel_info.
	Version string
	// Log receives what the kernel reports (dropped messages, ...); default stderr.
	Log *log.Logger
	// UpdateInterval is the least time between two updates of a live
	// display (default 250 ms: at most 4 a second; the last always goes out).
	UpdateInterval time.Duration
	// StopGrace bounds the wait for a running cell at shutdown (default 20 s).
	StopGrace time.Duration
	// Note is shown once, at the head of the first cell that runs: what
	// the kernel found when it opened its session (a reopened session's
	// sweeps, a session directory another approxtune had open).
	Note string
}

// channel is a socket with the lock that keeps its sends whole.
type channel struct {
	name string
	sock zmq4.Socket
	mu   sync.Mutex
}

func (c *channel) send(frames [][]byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.sock.Send(zmq4.NewMsgFrom(frames...)); err != nil {
		return fmt.Errorf("send on %s: %w", c.name, err)
	}
	return nil
}

// request is a received message and the channel to answer on.
// A request with do set is work the kernel queued for the shell goroutine
// itself (see deferApply); msg is then the message it answers.
type request struct {
	ch  *channel
	msg *Message
	do  func()
}

// Kernel serves one session to Jupyter clients.
type Kernel struct {
	info ConnectionInfo
	sess *session.Session
	opts Options
	log  *log.Logger
	sign signer
	id   string // the header.session of what the kernel sends
	user string
	seq  atomic.Uint64

	shell, control, stdin, iopub *channel
	hb                           zmq4.Socket
	sockets                      []zmq4.Socket
	stopSockets                  context.CancelFunc

	shellQ   chan request
	comms    *comms
	done     chan struct{} // closed when a shutdown is asked
	doneOnce sync.Once

	statusMu sync.Mutex // orders status messages with rebusy's look at shellMsg
	mu       sync.Mutex
	cell     *cell         // the running cell, or nil
	busy     bool          // the shell goroutine is handling a request
	shellMsg *Message      // that request, a cell's (busy), until its idle: for rebusy
	idle     chan struct{} // closed when it is done with it
	stopping bool          // no more shell requests are handled
	closed   bool          // the session is closed

	// Owned by the shell goroutine.
	count   int
	history []historyEntry
	utf16   map[string]bool // client sessions seen sending UTF-16 cursor offsets
	note    string          // Options.Note until a cell has shown it
}

// randomID is n random bytes in hexadecimal. (crypto/rand.Read does not
// fail: since Go 1.24 it crashes the program instead.)
func randomID(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// New binds the kernel's sockets to the connection's ports (port 0 picks a
// free one: Info tells which) and returns the kernel; Serve runs it.
func New(info ConnectionInfo, sess *session.Session, o Options) (*Kernel, error) {
	if o.Log == nil {
		o.Log = log.New(os.Stderr, "approxtune kernel: ", log.LstdFlags)
	}
	if o.UpdateInterval == 0 {
		o.UpdateInterval = 250 * time.Millisecond
	}
	if o.StopGrace == 0 {
		o.StopGrace = 20 * time.Second
	}
	if info.Transport == "" {
		info.Transport = "tcp"
	}
	if info.IP == "" {
		info.IP = "127.0.0.1"
	}
	sg, err := newSigner(info.Key, info.SignatureScheme)
	if err != nil {
		return nil, fmt.Errorf("kernel: %w", err)
	}
	if info.Key == "" {
		o.Log.Printf("warning: the connection file has no key, so messages are not signed: anyone who can reach this kernel's ports on %s can run commands in it (Jupyter writes a key; a hand-written connection file needs one too)", info.IP)
	}
	uname := "approxtune"
	if u, err := user.Current(); err == nil && u.Username != "" {
		uname = u.Username
	}
	sess.SetDefaultNotebook(display.Export)
	ctx, cancel := context.WithCancel(context.Background())
	k := &Kernel{
		info: info, sess: sess, opts: o, log: o.Log, sign: sg, id: randomID(16), user: uname,
		stopSockets: cancel, shellQ: make(chan request, 1024), comms: newComms(), done: make(chan struct{}), utf16: map[string]bool{},
		note: o.Note,
	}
	zl := log.New(o.Log.Writer(), "zmq4: ", log.LstdFlags)
	bind := func(s zmq4.Socket, port *int) error {
		k.sockets = append(k.sockets, s)
		if err := s.Listen(info.Endpoint(*port)); err != nil {
			return fmt.Errorf("kernel: %w", err)
		}
		if a, ok := s.Addr().(*net.TCPAddr); ok && *port == 0 {
			*port = a.Port
		}
		return nil
	}
	k.shell = &channel{name: "shell", sock: zmq4.NewRouter(ctx, zmq4.WithLogger(zl))}
	k.control = &channel{name: "control", sock: zmq4.NewRouter(ctx, zmq4.WithLogger(zl))}
	k.stdin = &channel{name: "stdin", sock: zmq4.NewRouter(ctx, zmq4.WithLogger(zl))}
	k.iopub = &channel{name: "iopub", sock: zmq4.NewPub(ctx, zmq4.WithLogger(zl))}
	k.hb = zmq4.NewRep(ctx, zmq4.WithLogger(zl))
	for _, b := range []struct {
		s    zmq4.Socket
		port *int
	}{{k.shell.sock, &k.info.ShellPort}, {k.control.sock, &k.info.ControlPort}, {k.stdin.sock, &k.info.StdinPort},
		{k.iopub.sock, &k.info.IOPubPort}, {k.hb, &k.info.HBPort}} {
		if err := bind(b.s, b.port); err != nil {
			k.closeSockets()
			return nil, err
		}
	}
	return k, nil
}

// Info is the connection with the ports the kernel listens on.
func (k *Kernel) Info() ConnectionInfo { return k.info }

func (k *Kernel) closeSockets() {
	k.stopSockets()
	for _, s := range k.sockets {
		s.Close()
	}
}

// Serve answers requests until a shutdown_request or until ctx is done, then
// stops a running cell, closes the session (which stops its local agent
// cleanly) and the sockets.
func (k *Kernel) Serve(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); k.heartbeat() }()
	go func() {
		defer wg.Done()
		k.read(k.shell, func(r request) {
			if k.commFast(r) {
				return
			}
			k.noteWaiting(r)
			select {
			case k.shellQ <- r:
			case <-k.done:
			}
		})
	}()
	go func() { defer wg.Done(); k.read(k.control, k.handleControl) }()
	go func() {
		defer wg.Done()
		k.read(k.stdin, func(r request) {
			k.log.Printf("ignored %s on stdin: this kernel asks for no input", r.msg.Header.MsgType)
		})
	}()
	execDone := make(chan struct{})
	go func() { defer close(execDone); k.executor() }()

	select {
	case <-ctx.Done():
		k.log.Printf("stopping: %v", ctx.Err())
		k.finish()
	case <-k.done:
	}
	// Let the last iopub messages (status idle) leave before closing.
	time.Sleep(50 * time.Millisecond)
	k.closeSockets()
	wg.Wait()
	select {
	case <-execDone:
	case <-time.After(time.Second):
		// finish already waited StopGrace for the cell: do not hang on it.
		k.log.Printf("leaving with a cell still running")
	}
	return nil
}

// shutdown marks the kernel as done (once).
func (k *Kernel) shutdown() { k.doneOnce.Do(func() { close(k.done) }) }

// finish stops the running cell, closes the session and ends Serve.
func (k *Kernel) finish() {
	k.finishCell()
	k.shutdown()
}

// Interrupt interrupts the running cell as the session defines it: the
// first interrupt stops a sweep at the next run boundary (or stops waiting
// for an agent), the second interrupts mpirun. It reports whether a cell
// was running.
func (k *Kernel) Interrupt() bool {
	k.mu.Lock()
	c := k.cell
	k.mu.Unlock()
	if c == nil {
		return false
	}
	c.interrupt(k.sess)
	return true
}

// read receives the messages of a channel and hands the well-formed ones on.
func (k *Kernel) read(ch *channel, handle func(request)) {
	for {
		zm, err := ch.sock.Recv()
		if err != nil {
			select {
			case <-k.done:
				return
			default:
			}
			if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
				return
			}
			k.log.Printf("%s: receive: %v", ch.name, err)
			time.Sleep(10 * time.Millisecond)
			continue
		}
		m, err := decode(zm.Frames, k.sign)
		if err != nil {
			k.log.Printf("dropped a malformed message on %s (%d frames): %v", ch.name, len(zm.Frames), err)
			continue
		}
		handle(request{ch: ch, msg: m})
	}
}

// heartbeat echoes what it receives.
func (k *Kernel) heartbeat() {
	for {
		m, err := k.hb.Recv()
		if err != nil {
			select {
			case <-k.done:
				return
			default:
			}
			if errors.Is(err, context.Canceled) {
				return
			}
			continue // e.g. a message without the REQ envelope
		}
		if err := k.hb.Send(m); err != nil && !errors.Is(err, context.Canceled) {
			k.log.Printf("heartbeat: %v", err)
		}
	}
}

// executor runs shell requests one at a time, in order.
func (k *Kernel) executor() {
	for {
		select {
		case <-k.done:
			return
		case r := <-k.shellQ:
			if !k.begin(r.msg) {
				return
			}
			k.handleShell(r)
			k.end()
		}
	}
}

// begin marks the shell goroutine busy with msg, unless the kernel is
// stopping.
func (k *Kernel) begin(msg *Message) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.stopping {
		return false
	}
	k.busy, k.idle = true, make(chan struct{})
	if msg != nil && msg.Header.MsgType == "execute_request" {
		// A cell, which an interrupt may leave running for long (rebusy);
		// other shell requests end at once.
		k.shellMsg = msg
	}
	return true
}

func (k *Kernel) end() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.busy, k.shellMsg = false, nil
	close(k.idle)
}

// rebusy publishes busy again for the shell request under way, if any,
// after a control request's idle: the classic Notebook and JupyterLab take
// any idle on iopub for the kernel's, and showed the kernel idle for as
// long as an interrupted sweep took to stop (a launch's end, minutes for a
// long program), a cell run then being queued and aborted unseen.
func (k *Kernel) rebusy() {
	k.statusMu.Lock() // not between the shell request's idle and its end
	defer k.statusMu.Unlock()
	k.mu.Lock()
	msg := k.shellMsg
	k.mu.Unlock()
	if msg != nil {
		k.publish("status", msg, map[string]string{"execution_state": "busy"})
	}
}

// newMessage makes a message of type typ in answer to (or caused by) parent.
func (k *Kernel) newMessage(typ string, parent *Message, content any) (*Message, error) {
	h := Header{MsgID: fmt.Sprintf("%s_%d", k.id, k.seq.Add(1)), Session: k.id, Username: k.user, Date: now(), MsgType: typ, Version: ProtocolVersion}
	hb, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	cb, err := json.Marshal(content)
	if err != nil {
		return nil, fmt.Errorf("%s content: %w", typ, err)
	}
	m := &Message{Header: h, RawHeader: hb, ParentHeader: json.RawMessage("{}"), Metadata: json.RawMessage("{}"), Content: cb}
	if parent != nil {
		m.ParentHeader = parent.RawHeader
	}
	return m, nil
}

// reply answers r on its channel.
func (k *Kernel) reply(r request, typ string, content any) {
	m, err := k.newMessage(typ, r.msg, content)
	if err != nil {
		k.log.Printf("%s: %v", typ, err)
		return
	}
	m.Identities = r.msg.Identities
	if err := r.ch.send(encode(m, k.sign)); err != nil {
		k.log.Printf("%s: %v", typ, err)
	}
}

// publish sends a message on iopub.
func (k *Kernel) publish(typ string, parent *Message, content any) {
	k.publishMeta(typ, parent, content, nil)
}

// publishMeta sends a message with metadata (nil: {}) on iopub.
func (k *Kernel) publishMeta(typ string, parent *Message, content any, metadata map[string]any) {
	m, err := k.newMessage(typ, parent, content)
	if err == nil && metadata != nil {
		m.Metadata, err = json.Marshal(metadata)
	}
	if err != nil {
		k.log.Printf("%s: %v", typ, err)
		return
	}
	m.Identities = [][]byte{[]byte("kernel." + k.id + "." + typ)}
	if err := k.iopub.send(encode(m, k.sign)); err != nil {
		k.log.Printf("%s: %v", typ, err)
	}
}

func (k *Kernel) status(parent *Message, state string) {
	k.statusMu.Lock()
	defer k.statusMu.Unlock()
	if state == "idle" {
		// Its idle sent, the shell request is no longer one rebusy
		// may announce again.
		k.mu.Lock()
		if k.shellMsg != nil && parent != nil && k.shellMsg.Header.MsgID == parent.Header.MsgID {
			k.shellMsg = nil
		}
		k.mu.Unlock()
	}
	k.publish("status", parent, map[string]string{"execution_state": state})
}
