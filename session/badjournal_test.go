package session

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// 'load' and 'resume' of a damaged journal give one clear error that names
// the file, the line and what is wrong with it, and take nothing in; a
// torn last line (the session died writing it) is left out and the rest
// reads.
func TestDamagedJournal(t *testing.T) {
	home := sessionsHome(t)
	good := filepath.Join(home, "20261127-000000-good00")
	writeJournal(t, good, []*Sweep{tracedSweep(t)})
	b, err := os.ReadFile(filepath.Join(good, JournalName))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) < 5 || !strings.Contains(lines[1], `"kind":"event"`) || !strings.Contains(lines[1], `"index":0`) {
		t.Fatalf("the journal written is not as expected:\n%s", b)
	}
	with := func(i int, line string) string { // lines with line i replaced
		out := append([]string{}, lines...)
		out[i] = line
		return strings.Join(out, "")
	}
	for _, c := range []struct{ name, journal, want string }{
		{"torn in the middle", with(1, lines[1][:len(lines[1])/2]+"\n"), "line 2 is damaged: not a JSON record"},
		{"a garbage line", with(2, "\x00\x00\x00 garbage\n"), "line 3 is damaged: not a JSON record"},
		{"a whole last line damaged", with(len(lines)-1, "{\"kind\": \"end\", \n"), "is damaged: not a JSON record"},
		{"a list", with(2, "[1, 2]\n"), "line 3 is damaged: a JSON array where a journal has a record (an object)"},
		{"a record's sweep a string", with(1, strings.Replace(lines[1], `"sweep":1`, `"sweep":"one"`, 1)), "line 2 is damaged: sweep holds a JSON string where a journal has a whole number"},
		{"a result's index a string", with(1, strings.Replace(lines[1], `"index":0`, `"index":"zero"`, 1)), "line 2 is damaged: event.index holds a JSON string where a journal has a whole number"},
		{"configs not a list", with(0, strings.Replace(lines[0], `"configs":[`, `"configs":7,"x":[`, 1)), "line 1 is damaged: configs holds a JSON number where a journal has a list"},
		{"a record of no sweep", with(1, strings.Replace(lines[1], `"sweep":1`, `"sweep":9`, 1)), "line 2 is damaged: a record of sweep 9, which no line before it starts"},
		{"no kind", with(2, `{"t":"2026-11-27T00:00:00Z","sweep":1}`+"\n"), "line 3 is damaged: a record with no kind"},
		{"empty", "", "holds no sweep"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(home, "20261127-000000-"+strings.ReplaceAll(c.name, " ", "_"))
			path := filepath.Join(dir, JournalName)
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(c.journal), 0o600); err != nil {
				t.Fatal(err)
			}
			s := newSession(t)
			for _, verb := range []string{"load", "resume"} {
				err := s.Exec(context.Background(), verb+" "+dir, &textOut{})
				if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "Go ") {
					t.Errorf("%s of a journal with %s: %v\nwant one line with %q", verb, c.name, err, c.want)
				}
				if c.journal != "" && (err == nil || !strings.Contains(err.Error(), "journal "+path+", line ") || !strings.Contains(err.Error(), "delete the line to read the others (sed -i ")) {
					t.Errorf("%s: the error does not name the file and say what to do: %v", verb, err)
				}
				if len(s.sweeps) != 0 {
					t.Errorf("%s of a journal with %s took in %d sweeps", verb, c.name, len(s.sweeps))
				}
			}
		})
	}
	// A torn last line is what a session that died writing leaves: the
	// lines before it are read.
	torn := filepath.Join(home, "20261127-000000-torn00")
	if err := os.MkdirAll(torn, 0o700); err != nil {
		t.Fatal(err)
	}
	last := lines[len(lines)-1]
	if err := os.WriteFile(filepath.Join(torn, JournalName), []byte(with(len(lines)-1, last[:len(last)/2])), 0o600); err != nil {
		t.Fatal(err)
	}
	sws, err := ReadJournal(filepath.Join(torn, JournalName))
	if err != nil || len(sws) != 1 || sws[0].Status != StatusRunning || len(sws[0].Results) != len(tracedSweep(t).Results) {
		t.Fatalf("a torn last line: %d sweeps, %v", len(sws), err)
	}
	s := newSession(t)
	if err := s.Exec(context.Background(), "load "+torn, &textOut{}); err != nil || len(s.sweeps) != 1 {
		t.Errorf("load of a journal with a torn last line: %v", err)
	}
}
