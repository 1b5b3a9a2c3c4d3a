package session

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/protocol"
	"github.com/approxtune/approxtune/internal/testenv"
)

// hello dials addr, says hello with token and returns the session's reply
// line (or the error reading it).
func hello(addr, token string) (string, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	fmt.Fprintf(c, `{"type":"hello","v":%d,"token":%q}`+"\n", protocol.Version, token)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	return bufio.NewReader(c).ReadString('\n')
}

// A connection that says nothing is closed after HelloWait and reported as
// refused; tokens near the right one are refused like any other.
func TestLinkRefusesSilenceAndNearTokens(t *testing.T) {
	const right = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	ln, err := Listen("127.0.0.1:0", right)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ln.HelloWait = 300 * time.Millisecond
	var mu sync.Mutex
	var reasons []string
	ln.Refused = func(remote, reason string) {
		mu.Lock()
		reasons = append(reasons, reason)
		mu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	accepted := make(chan *Agent, 1)
	go func() {
		a, _ := ln.Accept(ctx)
		accepted <- a
	}()

	c, err := net.Dial("tcp", ln.Addr())
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if n, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a silent connection was not closed: read %d, %v", n, err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a silent connection was closed after %v, HelloWait is 300 ms", took)
	}
	c.Close()

	for _, tok := range []string{"", right[:63], right + "0", right[:63] + "0", strings.ToUpper(right), " " + right} {
		line, err := hello(ln.Addr(), tok)
		if err != nil || !strings.Contains(line, `"refused"`) || !strings.Contains(line, "wrong token") {
			t.Errorf("token %q: reply %q, %v", tok, line, err)
		}
	}
	line, err := hello(ln.Addr(), right)
	if err != nil || !strings.Contains(line, `"welcome"`) {
		t.Fatalf("the right token: reply %q, %v", line, err)
	}
	if a := <-accepted; a == nil {
		t.Fatal("Accept returned no agent for the right token")
	} else {
		a.conn.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reasons) != 7 || !strings.HasPrefix(reasons[0], "no hello") {
		t.Fatalf("refusals %q: want the silent one then 6 wrong tokens", reasons)
	}
	for _, r := range reasons[1:] {
		if r != "wrong token" {
			t.Errorf("refusal %q, want wrong token", r)
		}
	}
}

// A flood of idle connections and a stream of wrong tokens do not keep the
// real agent out: it is welcomed while every idle connection still waits
// for its hello (heard one at a time, the first alone would hold it 30 s).
func TestLinkFloodDoesNotBlockTheAgent(t *testing.T) {
	bin := testenv.Build(t)
	l := testenv.Launcher(t)
	token, err := NewToken()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("127.0.0.1:0", token)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ln.HelloWait = 30 * time.Second
	var mu sync.Mutex
	wrong := 0
	ln.Refused = func(remote, reason string) {
		mu.Lock()
		if reason == "wrong token" {
			wrong++
		}
		mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	accepted := make(chan *Agent, 1)
	acceptErr := make(chan error, 1)
	go func() {
		a, err := ln.Accept(ctx)
		accepted <- a
		acceptErr <- err
	}()
	var idle []net.Conn
	for i := 0; i < 300; i++ {
		c, err := net.Dial("tcp", ln.Addr())
		if err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	flood, stopFlood := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for flood.Err() == nil {
				hello(ln.Addr(), strings.Repeat("f", 64))
			}
		}()
	}
	start := time.Now()
	cmd := l.Command(context.Background(), 2, bin, "agent", "--connect", ln.Addr())
	cmd.Env = append(cmd.Env, protocol.TokenEnv+"="+token)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := <-accepted
	took := time.Since(start)
	stopFlood()
	wg.Wait()
	if a == nil {
		t.Fatalf("the agent was not accepted: %v", <-acceptErr)
	}
	defer cmd.Wait()
	defer a.Shutdown(10 * time.Second)
	if took > 25*time.Second {
		t.Fatalf("the agent was accepted after %v: the idle connections held it", took)
	}
	// The idle connections were still waiting, not closed to make room:
	// Accept cut them when it returned.
	mu.Lock()
	t.Logf("agent welcomed %v after its start, through 300 idle connections and %d wrong tokens", took.Round(time.Millisecond), wrong)
	if wrong == 0 {
		t.Errorf("no wrong token was refused during the flood")
	}
	mu.Unlock()
	idle[0].SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := idle[0].Read(make([]byte, 1)); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("an idle connection outlived the Accept that heard it: %v", err)
	}
}

// The token of a session's agent is in no process's command line, in no
// file of the session directory (journal, token file aside), in no
// exported notebook and in nothing the session printed; what the session
// writes is its user's to read only.
func TestTokenStaysSecret(t *testing.T) {
	testenv.Launcher(t)
	s, err := New(Options{Dir: filepath.Join(t.TempDir(), "session"), Binary: testenv.Build(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	out := &textOut{}
	execAll(t, s, out, "workload synthetic", "space steps=10,11", "policy conditional", "tolerance 2^-1", "reps 1", "evaluate")
	if s.agent == nil || len(s.agent.Hello.PIDs) == 0 {
		t.Fatal("no agent after evaluate")
	}
	env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", s.agent.Hello.PIDs[0]))
	if err != nil {
		t.Fatal(err)
	}
	var token string
	for _, kv := range strings.Split(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, protocol.TokenEnv+"="); ok {
			token = v
		}
	}
	if len(token) != 64 {
		t.Fatalf("the agent's rank has no token in its environment (%q)", token)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && strings.Contains(string(b), token) {
			t.Errorf("%s holds the token: %q", p, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	// mpirun's messages, which a dead agent's error shows: a rank killed,
	// mpirun tells of it, and the token is not in what it said.
	pids := s.agent.Hello.PIDs
	if err := syscall.Kill(pids[len(pids)-1], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	proc := s.agent.proc.(*process)
	select {
	case <-proc.exited:
	case <-time.After(60 * time.Second):
		t.Fatal("mpirun did not exit after a rank was killed")
	}
	tail := proc.stderr.String()
	if tail == "" || strings.Contains(tail, token) {
		t.Errorf("mpirun's messages hold the token, or there are none: %q", tail)
	}
	// The next sweep says what mpirun said (the output is checked below).
	execAll(t, s, out, "evaluate")
	if !strings.Contains(out.b.String(), "the previous agent is gone") || !strings.Contains(out.b.String(), "its last messages:") {
		t.Errorf("the agent's death was not told with mpirun's messages:\n%s", out.b.String())
	}
	// listen: the token goes to a file only its owner reads, not to the
	// output (which a notebook keeps).
	execAll(t, s, out, "listen 127.0.0.1:0")
	lt, err := os.ReadFile(filepath.Join(s.Dir(), TokenFile))
	if err != nil {
		t.Fatal(err)
	}
	listenToken := strings.TrimSpace(string(lt))
	if len(listenToken) != 64 || !strings.Contains(out.b.String(), "$(cat "+filepath.Join(s.Dir(), TokenFile)+")") {
		t.Errorf("listen's token file holds %q; output:\n%s", lt, out.b.String())
	}
	execAll(t, s, out, "listen off")
	// Everything an exported notebook is made of: the transcript's steps
	// (the real exporter, internal/display, imports this package).
	s.SetDefaultNotebook(func(steps []Step, path string) error {
		b, err := json.Marshal(steps)
		if err != nil {
			return err
		}
		return os.WriteFile(path, b, 0o644)
	})
	nb := filepath.Join(t.TempDir(), "session.ipynb")
	execAll(t, s, out, "export notebook "+nb)
	if strings.Contains(out.b.String(), token) || strings.Contains(out.b.String(), listenToken) {
		t.Errorf("the session printed a token:\n%s", out.b.String())
	}
	files := []string{nb}
	filepath.WalkDir(s.Dir(), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), token) || (filepath.Base(f) != TokenFile && strings.Contains(string(b), listenToken)) {
			t.Errorf("%s holds a token", f)
		}
		if f == nb {
			continue
		}
		if fi, err := os.Stat(f); err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s: mode %v, %v: others may read it", f, fi.Mode().Perm(), err)
		}
	}
	if fi, err := os.Stat(s.Dir()); err != nil || fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("session directory %s: %v: others may read it", s.Dir(), err)
	}
	if len(files) < 3 {
		t.Errorf("checked only %q", files)
	}
}
