package session

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/protocol"
	"github.com/approxtune/approxtune/sweep"
)

// FuzzJournal reads a journal file back as 'load' and 'resume' do.
// Properties: the sweeps come back in order of their numbers; a torn last
// line (one that is not a whole record) adds nothing; a damaged journal is
// refused with one line naming the file to what the whole
// lines before it give; opening the journal to append (a resumed or a new
// session's sweep) loses nothing the reader gave, and the record appended
// reads back; and what 'load' prints and the tables of every sweep read
// are made without a panic. The seeds in testdata/fuzz/FuzzJournal are
// journals the session wrote (testdata/traced-journal.jsonl and journals
// of the session's tests), whole and torn.
func FuzzJournal(f *testing.F) {
	f.Add([]byte(`{"t":"2026-11-22T18:36:02Z","kind":"sweep","sweep":1,"spec":{"workload":"toy"}}` + "\n" + `{"kind":"end","sweep":1,"status":"ok"}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, JournalName)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		sws, err := ReadJournal(path)
		if err != nil {
			// A damaged journal (not only a torn last line) is refused
			// with one line that names the file.
			if strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), path) {
				t.Fatalf("read journal: the error is not one line naming the file: %v", err)
			}
			return
		}
		for i := 1; i < len(sws); i++ {
			if sws[i-1].ID >= sws[i].ID {
				t.Fatalf("sweeps %d then %d", sws[i-1].ID, sws[i].ID)
			}
		}
		// A torn last line adds nothing.
		whole := data[:bytes.LastIndexByte(data, '\n')+1]
		var r record
		if tail := data[len(whole):]; json.Unmarshal(tail, &r) != nil {
			wp := filepath.Join(t.TempDir(), JournalName)
			os.WriteFile(wp, whole, 0o600)
			ws, err := ReadJournal(wp)
			if err != nil {
				t.Fatalf("read the whole lines: %v", err)
			}
			if !sameSweeps(ws, sws) {
				t.Fatalf("the torn line %q changed what the journal reads", tail)
			}
		}
		// Appending loses nothing and is read back.
		next := 1
		if len(sws) > 0 {
			next = sws[len(sws)-1].ID + 1
		}
		j, err := OpenJournal(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.append(record{Kind: "sweep", Sweep: next, Spec: &sweep.Spec{Workload: "synthetic"}, Message: "appended"}); err != nil {
			t.Fatal(err)
		}
		j.Close()
		after, err := ReadJournal(path)
		if err != nil {
			t.Fatalf("read journal after an append: %v", err)
		}
		if len(after) != len(sws)+1 || !sameSweeps(after[:len(sws)], sws) {
			t.Fatalf("after an append the journal reads %d sweeps, before %d; lost or changed: %s", len(after), len(sws), dumpSweeps(sws, after))
		}
		if a := after[len(sws)]; a.ID != next || a.Status != StatusRunning {
			t.Fatalf("the appended sweep reads back as %d %s", a.ID, a.Status)
		}
		// What 'load' shows of them.
		if len(sws) > 0 {
			describeLoad(dir, sws, sws, sws[len(sws)-1].ID, "")
		}
		for _, sw := range sws {
			TableBest(sw)
			TableConfigs(sw)
			TableKernels(sw)
			BestClass(sw)
			sw.Summaries()
			sw.ChartRows()
			sw.NoiseLine()
			sw.Total()
			if sw.Spec != nil {
				sw.Missing()
			}
		}
	})
}

// sameSweeps reports whether two lists of sweeps are equal, sweep by sweep.
func sameSweeps(a, b []*Sweep) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !reflect.DeepEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

// dumpSweeps shows two lists of sweeps in brief for a failure message.
func dumpSweeps(a, b []*Sweep) string {
	brief := func(sws []*Sweep) string {
		var s []string
		for _, sw := range sws {
			s = append(s, fmt.Sprintf("sweep %d %s: %d results, %d kernels, %d traces", sw.ID, sw.Status, len(sw.Results), len(sw.Kernels), len(sw.Traces)))
		}
		return strings.Join(s, "; ")
	}
	return "before: " + brief(a) + "\nafter:  " + brief(b)
}

// fuzzToken is the token of FuzzAgentLines' listener; its seeds' hellos
// carry it.
const fuzzToken = "5f0c3a9d2e7b4f61a8c2d9e0b3f4a5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2"

// FuzzAgentLines is what an agent sends to the session, over TCP: a hello,
// then the events of a run and its done. Properties: the session welcomes
// the connection exactly when its first line is a hello of this protocol
// version with the token, and otherwise takes nothing from it (telling a
// hello with the wrong token or version why); a welcomed agent's hello
// reaches the session without its token; a run hands on exactly the event
// lines before the done of its id, in order, skipping pongs and other
// runs' dones, and returns that done, or reports the agent's death when
// the connection ends (or a line is not a message of this version) first;
// a gated run acknowledges each event, counting from 1; and the events,
// applied to a sweep, give tables without a panic. The seeds in
// testdata/fuzz/FuzzAgentLines are the lines of a real agent's sweep.
func FuzzAgentLines(f *testing.F) {
	f.Add([]byte(`{"type":"hello","v":2,"token":"`+fuzzToken+`","ranks":4}`+"\n"+`{"type":"done","v":2,"id":1,"status":"ok"}`+"\n"), false)
	ln, err := Listen("127.0.0.1:0", fuzzToken)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { ln.Close() })
	f.Fuzz(func(t *testing.T, data []byte, gate bool) {
		lines := strings.SplitAfter(string(data), "\n")
		for i, l := range lines {
			lines[i] = strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
		}
		if n := len(lines); n > 1 && lines[n-1] == "" {
			lines = lines[:n-1] // what follows the last newline: no line
		}
		var hello struct {
			Type  string `json:"type"`
			V     int    `json:"v"`
			Token string `json:"token"`
		}
		first := json.Unmarshal([]byte(lines[0]), &hello) == nil
		welcome := first && hello.Type == protocol.TypeHello && hello.V == protocol.Version && hello.Token == fuzzToken
		// A hello whose other fields do not decode (a string for ranks) is refused too.
		var h protocol.Hello
		if welcome && json.Unmarshal([]byte(lines[0]), &h) != nil {
			welcome = false
		}

		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
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
		defer c.Close()
		go func() {
			c.Write(data)
			c.(*net.TCPConn).CloseWrite()
		}()
		replies := make(chan []string, 1)
		go func() {
			var got []string
			sc := bufio.NewScanner(c)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				got = append(got, sc.Text())
			}
			replies <- got
		}()
		if !welcome {
			got := <-replies // the session closed the connection
			cancel()
			if a := <-accepted; a != nil {
				t.Fatalf("first line %q: welcomed", lines[0])
			}
			for _, r := range got {
				if !strings.Contains(r, `"type":"refused"`) {
					t.Fatalf("first line %q: answered %s", lines[0], r)
				}
			}
			if first && hello.Type == protocol.TypeHello && len(got) != 1 {
				t.Fatalf("hello %q refused without a reason: %q", lines[0], got)
			}
			return
		}
		a := <-accepted
		if a == nil {
			t.Fatalf("hello %q not welcomed", lines[0])
		}
		defer a.Interrupt(time.Second)
		if a.Hello.Token != "" {
			t.Fatalf("the agent's hello keeps its token")
		}
		// What the run must hand on, and how it must end.
		var want []string
		ends := "death"
		for _, l := range lines[1:] {
			var head struct {
				Type string `json:"type"`
				V    int    `json:"v"`
				ID   int64  `json:"id"`
			}
			if json.Unmarshal([]byte(l), &head) != nil || head.V != protocol.Version {
				break
			}
			if head.Type == protocol.TypeDone {
				var d protocol.Done
				if json.Unmarshal([]byte(l), &d); d.ID == 1 { // a done of this run whose other fields do not decode ends it too
					ends = "done"
					break
				}
				continue
			}
			if head.Type == protocol.TypePong {
				continue
			}
			want = append(want, l)
		}
		var got []string
		sw := &Sweep{ID: 1, Spec: &sweep.Spec{Workload: "synthetic", Mode: sweep.ModeEvaluate}}
		sw.Spec.Normalize()
		d, err := a.run(ctx, sw.Spec, gate, func(e Event) {
			got = append(got, string(e.Raw))
			sw.apply(e)
		})
		switch {
		case ends == "done" && err != nil:
			t.Fatalf("run ended with %v, want its done", err)
		case ends == "done" && d.ID != 1:
			t.Fatalf("run returned done %+v", d)
		case ends == "death" && !errors.Is(err, ErrAgentDied):
			t.Fatalf("run ended with %+v, %v; want the agent's death", d, err)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("run handed on %d events:\n%q\nwant %d:\n%q", len(got), got, len(want), want)
		}
		a.Interrupt(time.Second)
		// The session's lines: welcome, the run, and one ack per event when gated.
		sent := <-replies
		if len(sent) < 2 || !strings.Contains(sent[0], `"type":"welcome"`) || !strings.Contains(sent[1], `"type":"run"`) {
			t.Fatalf("the session sent %q", sent)
		}
		var acks []string
		for _, l := range sent[2:] {
			if strings.Contains(l, `"type":"ack"`) {
				acks = append(acks, l)
			}
		}
		// After the agent's death, acks are moot: there may be fewer.
		if !gate && len(acks) > 0 || gate && (len(acks) > len(want) || ends == "done" && len(acks) != len(want)) {
			t.Fatalf("gate %v: %d acks for %d events", gate, len(acks), len(want))
		}
		for i, l := range acks {
			var ack protocol.Ack
			if json.Unmarshal([]byte(l), &ack) != nil || ack.ID != 1 || ack.N != int64(i+1) {
				t.Fatalf("ack %d: %s", i+1, l)
			}
		}
		TableBest(sw)
		TableConfigs(sw)
		TableKernels(sw)
		BestClass(sw)
		sw.Summaries()
		sw.ChartRows()
		sw.Missing()
	})
}
