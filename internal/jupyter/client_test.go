package jupyter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"

	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/session"
)

// received is a message a test client got, with its raw frames.
type received struct {
	*Message
	frames [][]byte
}

// parentID is the msg_id of the message's parent.
func (r received) parentID() string {
	var h Header
	json.Unmarshal(r.ParentHeader, &h)
	return h.MsgID
}

func (r received) content() map[string]any {
	var c map[string]any
	json.Unmarshal(r.Content, &c)
	return c
}

// testClient is a Jupyter client over zmq4, in the test process: DEALER
// shell, control and stdin, SUB iopub, REQ heartbeat.
type testClient struct {
	t       *testing.T
	k       *Kernel
	sign    signer
	session string
	shell   zmq4.Socket
	control zmq4.Socket
	iopub   zmq4.Socket
	hb      zmq4.Socket
	shellC  chan received
	ctrlC   chan received
	iopubC  chan received
	served  chan struct{} // closed when Serve returns
	log     *testenv.SyncBuffer
	cancel  context.CancelFunc
}

type kernelSetup struct {
	ipc      bool // ipc transport (Unix sockets) instead of tcp
	key      string
	binary   string // approxtune executable for local agents ("" for none)
	interval time.Duration
}

// startKernel serves a fresh session in this process and connects a client.
func startKernel(t *testing.T, su kernelSetup) *testClient {
	t.Helper()
	opts := session.Options{Dir: t.TempDir(), Binary: su.binary, HelloTimeout: 60 * time.Second, Grace: 5 * time.Second}
	if opts.Binary == "" {
		opts.Binary = "/nonexistent/approxtune"
	}
	s, err := session.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	lb := &testenv.SyncBuffer{}
	info := ConnectionInfo{Transport: "tcp", IP: "127.0.0.1", Key: su.key, SignatureScheme: "hmac-sha256"}
	if su.ipc {
		info = ConnectionInfo{Transport: "ipc", IP: filepath.Join(t.TempDir(), "kernel"), Key: su.key, SignatureScheme: "hmac-sha256",
			ShellPort: 1, ControlPort: 2, StdinPort: 3, IOPubPort: 4, HBPort: 5}
	}
	k, err := New(info, s, Options{Version: "test", Log: log.New(lb, "kernel: ", log.Lmicroseconds), UpdateInterval: su.interval, StopGrace: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &testClient{t: t, k: k, sign: k.sign, log: lb, cancel: cancel, served: make(chan struct{}),
		shellC: make(chan received, 1000), ctrlC: make(chan received, 1000), iopubC: make(chan received, 10000)}
	go func() {
		defer close(c.served)
		if err := k.Serve(ctx); err != nil {
			fmt.Fprintf(lb, "Serve: %v\n", err)
		}
	}()
	id := make([]byte, 8)
	rand.Read(id)
	c.session = hex.EncodeToString(id)
	cctx, ccancel := context.WithCancel(context.Background())
	c.shell = zmq4.NewDealer(cctx, zmq4.WithID(zmq4.SocketIdentity("shell-"+c.session)))
	c.control = zmq4.NewDealer(cctx, zmq4.WithID(zmq4.SocketIdentity("control-"+c.session)))
	c.iopub = zmq4.NewSub(cctx)
	c.hb = zmq4.NewReq(cctx)
	inf := k.Info()
	for _, d := range []struct {
		s    zmq4.Socket
		port int
	}{{c.shell, inf.ShellPort}, {c.control, inf.ControlPort}, {c.iopub, inf.IOPubPort}, {c.hb, inf.HBPort}} {
		if err := d.s.Dial(inf.Endpoint(d.port)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.iopub.SetOption(zmq4.OptionSubscribe, ""); err != nil {
		t.Fatal(err)
	}
	go c.pump(c.shell, c.shellC)
	go c.pump(c.control, c.ctrlC)
	go c.pump(c.iopub, c.iopubC)
	t.Cleanup(func() {
		cancel()
		select {
		case <-c.served:
		case <-time.After(60 * time.Second):
			t.Errorf("Serve did not return within 60 s of its context's end")
		}
		ccancel()
		for _, s := range []zmq4.Socket{c.shell, c.control, c.iopub, c.hb} {
			s.Close()
		}
		if su.binary != "" {
			testenv.NoneLeft(t, su.binary, "agent")
		}
		if t.Failed() {
			t.Logf("kernel log:\n%s", lb.String())
		}
	})
	c.waitIOPub()
	return c
}

// pump decodes what a socket receives (verifying signatures) into ch.
func (c *testClient) pump(s zmq4.Socket, ch chan received) {
	for {
		zm, err := s.Recv()
		if err != nil {
			return
		}
		m, err := decode(zm.Frames, c.sign)
		if err != nil {
			fmt.Fprintf(c.log, "test client: undecodable message from the kernel: %v\n", err)
			continue
		}
		ch <- received{Message: m, frames: zm.Frames}
	}
}

// waitIOPub sends kernel_info requests until iopub delivers (a SUB socket
// misses what is published before its subscription arrives). It returns
// once every probe is answered, so that no late probe reply is taken for
// the answer to a test's request: a last probe, sent after iopub delivered,
// is answered on shell after all the earlier ones (one connection, one shell
// goroutine) and its status idle is published after all of theirs.
func (c *testClient) waitIOPub() {
	c.t.Helper()
	probes := map[string]bool{}
	deadline := time.Now().Add(40 * time.Second)
	delivered := false
	for !delivered && time.Now().Before(deadline) {
		probes[c.send(c.shell, "kernel_info_request", map[string]any{})] = true
		select {
		case <-c.iopubC:
			delivered = true
		case <-time.After(300 * time.Millisecond):
		}
	}
	if !delivered {
		c.t.Fatal("iopub never delivered a message")
	}
	last := c.send(c.shell, "kernel_info_request", map[string]any{})
	probes[last] = true
	timeout := time.After(time.Until(deadline) + 20*time.Second)
	for answered := false; !answered; {
		select {
		case r := <-c.shellC:
			if !probes[r.parentID()] {
				c.t.Fatalf("unexpected reply %s to %s while waiting for the probes' replies", r.Header.MsgType, r.parentID())
			}
			answered = r.parentID() == last
		case <-timeout:
			c.t.Fatal("the kernel_info probes were not all answered")
		}
	}
	for idle := false; !idle; {
		select {
		case r := <-c.iopubC:
			idle = r.parentID() == last && r.Header.MsgType == "status" && r.content()["execution_state"] == "idle"
		case <-timeout:
			c.t.Fatal("no status idle for the last kernel_info probe")
		}
	}
	c.drain()
}

// drain forgets everything received so far.
func (c *testClient) drain() {
	for _, ch := range []chan received{c.shellC, c.ctrlC, c.iopubC} {
		for {
			select {
			case <-ch:
				continue
			default:
			}
			break
		}
	}
}

// message builds a signed request and returns its frames and msg_id.
func (c *testClient) message(typ string, content any) ([][]byte, string) {
	id := make([]byte, 8)
	rand.Read(id)
	h := Header{MsgID: hex.EncodeToString(id), Session: c.session, Username: "test", Date: now(), MsgType: typ, Version: "5.3"}
	hb, _ := json.Marshal(h)
	cb, _ := json.Marshal(content)
	m := &Message{RawHeader: hb, ParentHeader: json.RawMessage("{}"), Metadata: json.RawMessage("{}"), Content: cb}
	return encode(m, c.sign), h.MsgID
}

// send sends a request on s and returns its msg_id.
func (c *testClient) send(s zmq4.Socket, typ string, content any) string {
	c.t.Helper()
	frames, id := c.message(typ, content)
	c.sendRaw(s, frames)
	return id
}

func (c *testClient) sendRaw(s zmq4.Socket, frames [][]byte) {
	c.t.Helper()
	if err := s.Send(zmq4.NewMsgFrom(frames...)); err != nil {
		c.t.Fatal(err)
	}
}

// reply waits for the reply to msg_id on ch; every other reply there fails
// the test (the kernel answered something it should not have).
func (c *testClient) reply(ch chan received, id string, timeout time.Duration) received {
	c.t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case r := <-ch:
			if r.parentID() == id {
				return r
			}
			c.t.Fatalf("unexpected reply %s to %s while waiting for the reply to %s", r.Header.MsgType, r.parentID(), id)
		case <-deadline:
			c.t.Fatalf("no reply to %s within %v", id, timeout)
		}
	}
}

// outputs collects the iopub messages caused by msg_id, from busy to idle.
func (c *testClient) outputs(id string, timeout time.Duration) []received {
	c.t.Helper()
	deadline := time.After(timeout)
	var got []received
	for {
		select {
		case r := <-c.iopubC:
			if r.parentID() != id {
				continue
			}
			got = append(got, r)
			if r.Header.MsgType == "status" && r.content()["execution_state"] == "idle" {
				return got
			}
		case <-deadline:
			c.t.Fatalf("no status idle for %s within %v; got %s", id, timeout, types(got))
		}
	}
}

// types lists message types, for failure messages.
func types(ms []received) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Header.MsgType)
	}
	return out
}

// request sends on shell and returns the reply and the iopub messages.
func (c *testClient) request(typ string, content any) (received, []received) {
	c.t.Helper()
	id := c.send(c.shell, typ, content)
	r := c.reply(c.shellC, id, 60*time.Second)
	return r, c.outputs(id, 60*time.Second)
}

// execute runs code and returns the reply and the iopub messages.
func (c *testClient) execute(code string, extra map[string]any) (received, []received) {
	c.t.Helper()
	content := map[string]any{"code": code, "silent": false, "store_history": true, "user_expressions": map[string]any{}, "allow_stdin": false, "stop_on_error": true}
	for k, v := range extra {
		content[k] = v
	}
	return c.request("execute_request", content)
}

// find returns the first message of type typ.
func find(ms []received, typ string) (received, bool) {
	for _, m := range ms {
		if m.Header.MsgType == typ {
			return m, true
		}
	}
	return received{}, false
}
