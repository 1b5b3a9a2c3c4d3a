package session

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/approxtune/approxtune/sweep"
)

// FuzzJournal reads a journal file back as 'load' and 'resume' do.
// Properties: the sweeps come back in order of their numbers; a torn last
// line (one that is not a whole record) adds nothing to what the whole
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
			t.Fatalf("read journal: %v", err)
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
			describeLoad(dir, sws, sws, sws[len(sws)-1].ID)
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
