package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/approxtune/approxtune/internal/protocol"
	"github.com/approxtune/approxtune/internal/workloads/catalog"
	"github.com/approxtune/approxtune/sweep"
)

// FuzzSessionLines is what a session sends to rank 0 of an agent: run,
// cancel, ping, ack and shutdown commands. Properties: the reader queues
// exactly the run and shutdown lines, in order, before the first line
// that is not a message of this version, and a shutdown after them; it
// answers every ping with a pong of the ping's id, in order; it records
// the last ack of the running command; the end of the connection cancels
// the running sweep; and every run queued, decoded and validated as
// connect does against the real workloads for 4 ranks, is refused with a
// one-line error or yields configurations that pass their workload's
// check and validate the same again from the normalized spec. The seeds
// in testdata/fuzz/FuzzSessionLines are the session's commands with the
// examples' specs.
func FuzzSessionLines(f *testing.F) {
	f.Add([]byte(`{"type":"run","v":2,"id":1,"spec":{"workload":"summa","space":{"n":[512],"grid":["2x2"],"b":[64]}},"gate":true}` + "\n" + `{"type":"ping","v":2,"id":2}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var out bytes.Buffer
		s := &session{w: protocol.NewWriter(&out), cmds: make(chan []byte, 4), wake: make(chan struct{}, 1)}
		s.begin(1, true)
		go func() {
			s.read(protocol.NewReader(bytes.NewReader(data)))
			close(s.cmds)
		}()
		var queued []string
		for l := range s.cmds {
			queued = append(queued, string(l))
		}

		// What the reader must have done.
		var wantQueued []string
		var wantPongs []int64
		var wantAck int64
		lines := strings.SplitAfter(string(data), "\n")
		if n := len(lines); lines[n-1] == "" {
			lines = lines[:n-1]
		}
		for _, l := range lines {
			l = strings.TrimSuffix(strings.TrimSuffix(l, "\n"), "\r")
			var c struct {
				Type string `json:"type"`
				V    int    `json:"v"`
			}
			if json.Unmarshal([]byte(l), &c) != nil || c.V != protocol.Version {
				break
			}
			switch c.Type {
			case protocol.TypeRun, protocol.TypeShutdown:
				wantQueued = append(wantQueued, l)
			case protocol.TypePing:
				var p protocol.Command
				json.Unmarshal([]byte(l), &p)
				wantPongs = append(wantPongs, p.ID)
			case protocol.TypeAck:
				var a protocol.Ack
				if json.Unmarshal([]byte(l), &a) == nil && a.ID == 1 {
					wantAck = a.N
				}
			}
		}
		shutdown, _ := json.Marshal(protocol.Command{Type: protocol.TypeShutdown, V: protocol.Version})
		wantQueued = append(wantQueued, string(shutdown))
		if !reflect.DeepEqual(queued, wantQueued) {
			t.Fatalf("queued %q\nwant %q", queued, wantQueued)
		}
		var pongs []int64
		sc := bufio.NewScanner(&out)
		for sc.Scan() {
			var p protocol.Pong
			if err := json.Unmarshal(sc.Bytes(), &p); err != nil || p.Type != protocol.TypePong || p.V != protocol.Version {
				t.Fatalf("sent %q, not a pong", sc.Text())
			}
			pongs = append(pongs, p.ID)
		}
		if len(pongs) != len(wantPongs) || len(pongs) > 0 && !reflect.DeepEqual(pongs, wantPongs) {
			t.Fatalf("pongs %v, want %v", pongs, wantPongs)
		}
		if s.acked.Load() != wantAck {
			t.Fatalf("acked %d, want %d", s.acked.Load(), wantAck)
		}
		if !s.cancelled.Load() || !s.closed.Load() {
			t.Fatal("the end of the connection did not cancel the sweep")
		}

		// The runs, as connect decodes and validates them.
		for _, l := range queued {
			var c protocol.Command
			if json.Unmarshal([]byte(l), &c) != nil || c.Type != protocol.TypeRun {
				continue
			}
			checkRun(t, c.Spec)
		}
	})
}

// checkRun validates spec as the agent does for 4 ranks and checks what
// it yields.
func checkRun(t *testing.T, spec *sweep.Spec) {
	const ranks = 4
	if spec != nil && spec.Program != nil && len(spec.Program.Decks) > 0 {
		return // decks name files to read: not for fuzzing
	}
	if spec != nil && spaceSize(spec) > 20000 {
		return // too many configurations to expand at fuzzing speed (sweep's FuzzSpec bounds them)
	}
	js, _ := json.Marshal(spec)
	configs, err := validate(spec, ranks)
	if err != nil {
		if msg := err.Error(); strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "sweep spec") && !strings.HasPrefix(msg, "run command") {
			t.Fatalf("spec %s: error %q: want one line that names the sweep spec", js, msg)
		}
		return
	}
	if len(configs) == 0 {
		t.Fatalf("spec %s: no configuration", js)
	}
	if spec.Program == nil {
		for _, c := range configs {
			w, _ := catalog.Schema(spec.Workload)
			if err := w.Check(c, ranks); err != nil {
				t.Fatalf("spec %s: configuration %s accepted, but its check fails: %v", js, c.Label(), err)
			}
		}
	}
	norm, _ := json.Marshal(spec)
	again, err := sweep.Parse(norm)
	if err != nil {
		t.Fatalf("normalized spec %s does not parse: %v", norm, err)
	}
	configs2, err := validate(again, ranks)
	if err != nil {
		t.Fatalf("normalized spec %s does not validate: %v", norm, err)
	}
	if len(configs2) != len(configs) {
		t.Fatalf("normalized spec %s: %d configurations, the spec %d", norm, len(configs2), len(configs))
	}
	for i := range configs {
		if configs[i].Label() != configs2[i].Label() {
			t.Fatalf("normalized spec %s: configuration %d is %s, from the spec %s", norm, i, configs2[i].Label(), configs[i].Label())
		}
	}
}

// spaceSize bounds the configurations of spec's space: the product of its
// lists' lengths (saturating past 1<<40).
func spaceSize(spec *sweep.Spec) int {
	n := 1
	for _, raw := range spec.Space {
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) == nil && len(items) > 1 {
			n = min(n*len(items), 1<<40)
		}
	}
	return n
}
