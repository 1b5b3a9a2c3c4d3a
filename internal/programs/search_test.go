package programs

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/approxtune/approxtune/analysis"
	"github.com/approxtune/approxtune/internal/selective/policy"
	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/sweep"
)

// Where every finalist's full launch fails, a program search's finals
// launch the other survivors in full, fastest predicted first, until one
// ends well, and choose it (the search had ended with no choice); where
// none does, the error says so. hangs.c's full runs of x=6 and x=7 exit
// with status 4; x=2's end well.
func TestFinalsReserve(t *testing.T) {
	mpicc := testenv.Tool(t, "mpicc")
	l := testenv.Launcher(t)
	lib := testenv.Preload(t)
	prog := filepath.Join(t.TempDir(), "hangs")
	if out, err := exec.Command(mpicc, "-o", prog, filepath.Join(testenv.Root(t), "cmd", "approxtune", "testdata", "program", "hangs.c")).CombinedOutput(); err != nil {
		t.Fatalf("mpicc: %v\n%s", err, out)
	}
	spec, err := sweep.Parse([]byte(fmt.Sprintf(`{"program": {"command": [%q, "{x}"]}, "space": {"x": [7, 6, 2, 9], "ranks": [2]},
 "policies": ["eager"], "search": "halving", "mode": "tune"}`, prog)))
	if err != nil {
		t.Fatal(err)
	}
	configs, err := spec.Validate(nil, nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var events []any
	var told []string
	r := &Runner{Launcher: Mpirun{Launcher: l}, Lib: lib, Scratch: t.TempDir(), Output: &strings.Builder{},
		Emit: func(ev any) error { events = append(events, ev); return nil }, Warn: func(msg string) { told = append(told, msg) }}
	search := func(finalists, reserve []int) (*sweep.SearchEvent, error) {
		events, told = nil, nil
		pol, _ := policy.Lookup("eager")
		s := &programSearch{r: r, spec: spec, configs: configs, pol: pol, rounds: 1, h: &analysis.Halving{}}
		err := s.final(context.Background(), finalists, reserve, len(configs))
		for _, ev := range events {
			if se, ok := ev.(sweep.SearchEvent); ok {
				return &se, err
			}
		}
		return nil, err
	}
	// x=7 and x=6 fail; x=2, the first of the reserve, is chosen, and
	// x=9 never runs.
	se, err := search([]int{0, 1}, []int{2, 3})
	if err != nil || se == nil || se.Chosen != 2 || !slices.Equal(se.Finalists, []int{2}) {
		t.Fatalf("finals of x=7, x=6 with x=2, x=9 in reserve: %v, outcome %+v; want x=2 chosen alone\n%v", err, se, events)
	}
	if len(told) != 1 || !strings.Contains(told[0], "every finalist left the search: configuration 2 (ranks=2 x=2), the next survivor, runs in full") {
		t.Errorf("told %q", told)
	}
	var left []int
	for _, ev := range events {
		if e, ok := ev.(sweep.ErrorEvent); ok && e.Index != nil {
			left = append(left, *e.Index)
		}
		if r, ok := ev.(sweep.Result); ok && r.Index == 3 {
			t.Errorf("x=9, in reserve behind x=2, ran: %+v", r)
		}
	}
	if !slices.Equal(left, []int{0, 1}) {
		t.Errorf("configurations that left: %v, want 0 and 1", left)
	}
	// None ends well: no choice, and the error says why.
	if _, err := search([]int{0}, []int{1}); err == nil || !strings.Contains(err.Error(), "the full launch of every finalist and survivor failed") {
		t.Errorf("finals where every launch fails: %v", err)
	}
}
