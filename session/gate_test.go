package session

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/protocol"
	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/sweep"
)

// next waits up to d for the agent's next line: its type and JSON, or ""
// when none came.
func next(t *testing.T, a *Agent, d time.Duration) (string, []byte) {
	t.Helper()
	select {
	case line := <-a.events:
		return lineType(line), line
	case <-a.gone:
		t.Fatalf("the agent is gone: %v", a.deathError())
	case <-time.After(d):
	}
	return "", nil
}

// A gated run: the agent sends no more events, so starts no run, until
// the session acknowledges those it sent; a cancel ends the wait, and so
// does the end of the connection, which ends the agent.
func TestGateWaitsForAcks(t *testing.T) {
	bin := testenv.Build(t)
	testenv.Launcher(t)
	a, err := StartLocal(context.Background(), bin, 4, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown(5 * time.Second)
	if !a.Local() {
		t.Fatal("an agent the session started is not Local")
	}
	const id = 100
	sp := spec(t, `{"workload":"synthetic","space":{"steps":[2,3,4,5]},"mode":"tune","policies":["eager"],"tolerances":[0.5]}`)
	if err := a.w.Write(protocol.Command{Type: protocol.TypeRun, V: protocol.Version, ID: id, Spec: sp, Gate: true}); err != nil {
		t.Fatal(err)
	}
	if typ, line := next(t, a, time.Minute); typ != sweep.TypeStart {
		t.Fatalf("first line %s %s", typ, line)
	}
	// Unanswered, the agent waits at the first run boundary: its four runs
	// take milliseconds, yet nothing comes.
	if typ, line := next(t, a, 1500*time.Millisecond); typ != "" {
		t.Fatalf("a %s came before the start was acknowledged: %.200s", typ, line)
	}
	ack := func(n int64) {
		if err := a.w.Write(protocol.Ack{Type: protocol.TypeAck, V: protocol.Version, ID: id, N: n}); err != nil {
			t.Fatal(err)
		}
	}
	ack(99) // another run's ack is not this one's
	ack(1)
	// The announcements of the configuration's set-up and of its run
	// come first, each sent after a gate as what it announces starts: the
	// run waits at its gate for the set-up's to be acknowledged.
	for k, kind := range []sweep.RunKind{sweep.RunSetup, sweep.RunSelective} {
		typ, line := next(t, a, time.Minute)
		var rs sweep.RunStart
		json.Unmarshal(line, &rs)
		if typ != sweep.TypeRunStart || rs.Kind != kind {
			t.Fatalf("after the ack: %s %.200s, want the announcement of a %s", typ, line, kind)
		}
		if k == 0 {
			if typ, line := next(t, a, 1500*time.Millisecond); typ != "" {
				t.Fatalf("a %s came before the set-up's announcement was acknowledged: %.200s", typ, line)
			}
			ack(2)
		}
	}
	if typ, line := next(t, a, time.Minute); typ != sweep.TypeResult {
		t.Fatalf("after the ack: %s %.200s", typ, line)
	}
	// Eager's carried statistics follow the configuration's result (they
	// start no run); then nothing until the acknowledgement.
	typ, line := next(t, a, 1500*time.Millisecond)
	if typ == sweep.TypeCarried {
		typ, line = next(t, a, 1500*time.Millisecond)
	}
	if typ != "" {
		t.Fatalf("a %s came before the result was acknowledged: %.200s", typ, line)
	}
	// A cancel ends the wait: the sweep stops there.
	if err := a.Cancel(id); err != nil {
		t.Fatal(err)
	}
	typ, line = next(t, a, 30*time.Second)
	var d protocol.Done
	json.Unmarshal(line, &d)
	if typ != protocol.TypeDone || d.ID != id || d.Status != protocol.StatusCancelled {
		t.Fatalf("after the cancel: %s %s", typ, line)
	}
	// The agent goes on: an ungated run needs no ack.
	done, err := a.Run(context.Background(), sp, func(Event) {})
	if err != nil || done.Status != protocol.StatusOK {
		t.Fatalf("ungated run after: %+v %v", done, err)
	}
	// A session gone while the agent waits at the gate: the agent ends.
	if err := a.w.Write(protocol.Command{Type: protocol.TypeRun, V: protocol.Version, ID: id + 1, Spec: sp, Gate: true}); err != nil {
		t.Fatal(err)
	}
	if typ, line := next(t, a, time.Minute); typ != sweep.TypeStart {
		t.Fatalf("first line %s %s", typ, line)
	}
	a.conn.Close()
	select {
	case <-a.proc.ended():
		if p := a.proc.(*process); p.status != nil {
			t.Errorf("mpirun: %v; %s", p.status, p.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not end when its session went")
	}
}

// sleepyOut is an Output whose Update takes 300 ms for each new result or
// run done, as a slow drawing would; it records each such Update.
type sleepyOut struct {
	textOut
	mu      sync.Mutex
	updates []sleep
	during  func() // called in each such Update, before the sleep
}

// sleep is one of sleepyOut's Updates: when it began and ended, and the
// results and runs done it showed.
type sleep struct {
	begun, ended  time.Time
	results, done int
}

func (o *sleepyOut) Update(p Progress) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if n := len(o.updates); p.Note != "" || p.Final || p.Done == 0 ||
		n > 0 && o.updates[n-1].results == len(p.Sweep.Results) && o.updates[n-1].done == p.Done {
		return
	}
	u := sleep{begun: time.Now(), results: len(p.Sweep.Results), done: p.Done}
	if o.during != nil {
		o.during()
	}
	time.Sleep(300 * time.Millisecond)
	u.ended = time.Now()
	o.updates = append(o.updates, u)
}

// liveSleepyOut draws live figures (LiveOutput).
type liveSleepyOut struct{ *sleepyOut }

func (o liveSleepyOut) LiveFigures() bool { return true }

// sweepSynthetic runs a sweep of the synthetic workload, 3 configurations x
// eager and conditional at 2^-1 (one reference each in evaluate), on a
// session with out, and returns it.
func sweepSynthetic(t *testing.T, s *Session, out Output, mode string) *Sweep {
	t.Helper()
	execAll(t, s, out, "workload synthetic", "space steps=10,11,12", "policy eager,conditional", "tolerance 2^-1", "reps 1", mode)
	sw := s.Last()
	if len(sw.Results) != 6 {
		t.Fatalf("%d results", len(sw.Results))
	}
	return sw
}

// overlaps counts the runs that overlapped an Update. Gated, a run starts
// after the Updates of what came before it ended, so the Update of what
// comes after it begins at least the run's time later. In tune, each
// Update is a result, and a selective run lies between two. In evaluate
// (see sweep.ReferenceSlots), a configuration's eager run is told by a
// progress event, then come its reference and conditional runs, then both
// results.
func overlaps(t *testing.T, sw *Sweep, o *sleepyOut) int {
	t.Helper()
	n := 0
	between := func(k int, runs float64) {
		if o.updates[k].begun.Sub(o.updates[k-1].ended).Seconds() < runs {
			n++
		}
	}
	if sw.Spec.Mode == sweep.ModeTune {
		if len(o.updates) != 6 {
			t.Fatalf("%d updates", len(o.updates))
		}
		for k := 1; k < 6; k++ {
			between(k, *sw.Results[k].SelectiveS)
		}
		return n
	}
	if len(o.updates) != 9 {
		t.Fatalf("%d updates, want 3 per configuration", len(o.updates))
	}
	for c := 0; c < 3; c++ {
		k, eager, cond := 3*c, sw.Results[2*c], sw.Results[2*c+1]
		if o.updates[k].done != o.updates[k].results+1 || eager.Policy != "eager" || cond.Policy != "conditional" {
			t.Fatalf("configuration %d: update %+v, results %s, %s", c, o.updates[k], eager.Policy, cond.Policy)
		}
		between(k+1, cond.ReferenceS[0]+*cond.SelectiveS)
	}
	return n
}

// With an Output that draws live figures and a local agent, the session
// runs gated: no run overlaps an Update (each takes 300 ms here, the runs
// milliseconds), in tune and in evaluate, references included. An Output
// that draws nothing is not gated: the agent runs on meanwhile.
func TestSessionGatesLiveOutput(t *testing.T) {
	s := agentSession(t)
	for _, mode := range []string{"tune", "evaluate"} {
		gated := &sleepyOut{}
		sw := sweepSynthetic(t, s, liveSleepyOut{gated}, mode)
		if n := overlaps(t, sw, gated); n > 0 {
			t.Errorf("%s, gated: %d runs overlapped an Update", mode, n)
		}
	}
	free := &sleepyOut{}
	sw := sweepSynthetic(t, s, free, "tune")
	if n := overlaps(t, sw, free); n == 0 {
		t.Errorf("ungated, no run overlapped an Update: the test sees no gate")
	}
}

// 'plot live FILE.png' makes every sweep draw FILE as its results arrive
// (there during the sweep) and at its end: the speed-up and error figures
// side by side. 'plot live off' stops.
func TestPlotLive(t *testing.T) {
	s := agentSession(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "live.png")
	ctx := context.Background()
	out := &sleepyOut{}
	for _, bad := range []string{"plot live live.jpg", "plot live a.png b.png", "plot live " + filepath.Join(dir, "no", "x.png")} {
		if err := s.Exec(ctx, bad, out); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
	if err := s.Exec(ctx, "plot live "+file, out); err != nil {
		t.Fatal(err)
	}
	s.Exec(ctx, "plot live", out)
	if !strings.Contains(out.b.String(), "live figure: "+file) {
		t.Errorf("printed %q", out.b.String())
	}
	var during [][]byte
	out.during = func() {
		if b, err := os.ReadFile(file); err == nil {
			during = append(during, b)
		}
	}
	execAll(t, s, out, "workload synthetic", "space steps=10,11", "policy eager", "tolerance 2^-1,2^-3", "reps 1", "evaluate")
	if len(during) == 0 {
		t.Error("the file was not there during the sweep")
	}
	for _, b := range during {
		testenv.PNGSize(t, "the file read during the sweep", b)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if sz := testenv.PNGSize(t, file, b); sz.X != 1600 || sz.Y != 450 {
		t.Errorf("the live figure is %v, want speed-up|error, 1600x450", sz)
	}
	_, row, err := LiveFigures(s.Last(), true)
	if err != nil || !bytes.Equal(row.PNG, b) {
		t.Errorf("the file is not the sweep's final figures (%v)", err)
	}
	if err := s.Exec(ctx, "plot live off", out); err != nil {
		t.Fatal(err)
	}
	os.Remove(file)
	if err := s.Exec(ctx, "tune", out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); err == nil {
		t.Error("plot live off, yet the sweep drew the file")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left in the directory: %v", ents)
	}
}

// A hello of another protocol version is refused with a reply, of this
// side's version: the agent's reader rejects it as of another version,
// which says what is wrong.
func TestVersionMismatchRefused(t *testing.T) {
	ln, err := Listen("127.0.0.1:0", "tok")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	refused := make(chan string, 1)
	ln.Refused = func(remote, reason string) { refused <- reason }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ln.Accept(ctx)
	c, err := net.Dial("tcp", ln.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	hello, _ := json.Marshal(protocol.Hello{Type: protocol.TypeHello, V: protocol.Version - 1, Token: "tok"})
	c.Write(append(hello, '\n'))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var rep protocol.Reply
	if json.Unmarshal(line, &rep); rep.Type != protocol.TypeRefused || rep.V != protocol.Version || !strings.Contains(rep.Message, "protocol version") {
		t.Fatalf("reply %s", line)
	}
	select {
	case r := <-refused:
		if !strings.Contains(r, "this side speaks") || !strings.Contains(r, "a different approxtune build") {
			t.Errorf("refused: %s", r)
		}
	case <-time.After(10 * time.Second):
		t.Error("not refused")
	}
}
