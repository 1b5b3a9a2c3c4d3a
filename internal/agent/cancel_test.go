package agent

import (
	"encoding/json"
	"io"
	"net"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/protocol"
)

// pipeSession is rank 0's side of a connection whose other end the test
// writes commands to; what the agent sends is read and dropped.
func pipeSession(t *testing.T) (*session, *protocol.Writer) {
	t.Helper()
	agentEnd, sessEnd := net.Pipe()
	t.Cleanup(func() { sessEnd.Close() })
	s := &session{conn: agentEnd, w: protocol.NewWriter(agentEnd), cmds: make(chan []byte, 4), wake: make(chan struct{}, 1)}
	go s.read(protocol.NewReader(agentEnd))
	go io.Copy(io.Discard, sessEnd)
	return s, protocol.NewWriter(sessEnd)
}

// beginNext takes the next command off the queue and begins it, as the
// MPI goroutine does.
func beginNext(t *testing.T, s *session) int64 {
	t.Helper()
	select {
	case line := <-s.cmds:
		var c protocol.Command
		json.Unmarshal(line, &c)
		s.begin(c.ID, c.Gate)
		return c.ID
	case <-time.After(10 * time.Second):
		t.Fatal("no command queued")
		return 0
	}
}

// A cancel the session sends right after its run (the user cancelled
// while the agent was being found) can reach the reader before rank 0
// takes the run off its queue: the run is cancelled as it begins. It had
// been cleared by begin, and the sweep ran on until the session's grace
// ran out and it interrupted mpirun.
func TestCancelBeforeBegin(t *testing.T) {
	s, w := pipeSession(t)
	w.Write(protocol.Command{Type: protocol.TypeRun, V: protocol.Version, ID: 1})
	w.Write(protocol.Command{Type: protocol.TypeCancel, V: protocol.Version, ID: 1})
	for deadline := time.Now().Add(10 * time.Second); s.cancelID.Load() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the cancel was not read")
		}
	}
	if id := beginNext(t, s); !cancelCheck(s)() {
		t.Errorf("run %d, cancelled before it began, runs on", id)
	}
}

// A cancel of an earlier run that came too late for it does not cancel
// the next one; a cancel of the running one does.
func TestCancelNamesItsRun(t *testing.T) {
	s, w := pipeSession(t)
	w.Write(protocol.Command{Type: protocol.TypeRun, V: protocol.Version, ID: 1})
	beginNext(t, s)
	w.Write(protocol.Command{Type: protocol.TypeRun, V: protocol.Version, ID: 2})
	beginNext(t, s)
	w.Write(protocol.Command{Type: protocol.TypeCancel, V: protocol.Version, ID: 1})
	for deadline := time.Now().Add(10 * time.Second); s.cancelID.Load() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the cancel was not read")
		}
	}
	if cancelCheck(s)() {
		t.Error("run 2 cancelled by run 1's late cancel")
	}
	w.Write(protocol.Command{Type: protocol.TypeCancel, V: protocol.Version, ID: 2})
	for deadline := time.Now().Add(10 * time.Second); !cancelCheck(s)(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("run 2 not cancelled by its own cancel")
		}
	}
}
