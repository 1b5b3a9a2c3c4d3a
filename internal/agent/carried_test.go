package agent

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/mpitest"
	"github.com/approxtune/approxtune/sweep"
)

func TestCarried(t *testing.T) { mpitest.Run(t, "carried", 2) }

// A runner driven by a session (announce) sends, after each configuration,
// every rank's statistics of each eager tolerance; a sweep file's sends
// none. A sweep whose spec carries them starts from them on every rank
// (its first run executes fewer kernels than a fresh one), or, when one
// rank's is missing, on none, and its start says so.
func carriedEvents(r *mpitest.R) {
	run := testRunner(r)
	const space = `"workload":"synthetic","space":{"grid":"1x2","steps":[6,7,8],"count":4,"kinds":2,"mean_us":300},"policies":["eager"],"tolerances":[0.5],"mode":"tune"`
	run.announce = false
	for _, raw := range sweepEvents(r, run, `{`+space+`}`) {
		if typeOf(raw) == sweep.TypeCarried {
			r.Errorf("a runner that does not announce sent %.100s", raw)
			break
		}
	}
	run.announce = true
	var last sweep.Carried
	var executed []int64 // per configuration, in order
	var carried []int
	for _, raw := range sweepEvents(r, run, `{`+space+`}`) {
		switch typeOf(raw) {
		case sweep.TypeCarried:
			var c sweep.Carried
			if err := json.Unmarshal(raw, &c); err != nil {
				r.Fatalf("carried: %v", err)
			}
			carried = append(carried, c.Index)
			last = c
		case sweep.TypeResult:
			var res sweep.Result
			json.Unmarshal(raw, &res)
			executed = append(executed, *res.Executed)
		}
	}
	if r.Rank == 0 {
		if len(carried) != 3 || carried[2] != 2 || len(last.Ranks) != 2 || last.Rank(0) == nil || last.Rank(1) == nil ||
			last.Policy != "eager" || last.Tolerance != 0.5 {
			r.Fatalf("carried after configurations %v, the last %+.200v", carried, last)
		}
	}
	// Every rank takes rank 0's events as the session would give them back.
	b, _ := json.Marshal(last)
	n := []int64{int64(len(b))}
	if err := mpi.Bcast(r.World, n, 0); err != nil {
		r.Fatalf("bcast: %v", err)
	}
	if r.Rank != 0 {
		b = make([]byte, n[0])
	}
	if err := mpi.Bcast(r.World, b, 0); err != nil {
		r.Fatalf("bcast: %v", err)
	}
	json.Unmarshal(b, &last)
	resumed := func(c sweep.Carried) (int64, []string) {
		cb, _ := json.Marshal([]sweep.Carried{c})
		var ex int64
		var warnings []string
		for _, raw := range sweepEvents(r, run, `{`+strings.Replace(space, `"steps":[6,7,8]`, `"steps":9`, 1)+`,"carried":`+string(cb)+`}`) {
			switch typeOf(raw) {
			case sweep.TypeResult:
				var res sweep.Result
				json.Unmarshal(raw, &res)
				ex = *res.Executed
			case sweep.TypeStart:
				var st sweep.Start
				json.Unmarshal(raw, &st)
				warnings = st.Warnings
			}
		}
		return ex, warnings
	}
	with, w := resumed(last)
	lacking := last
	lacking.Ranks = []json.RawMessage{last.Ranks[0], nil}
	without, w2 := resumed(lacking)
	if r.Rank != 0 {
		return
	}
	if 2*with > executed[0] || len(w) != 0 {
		r.Errorf("resumed with the statistics: executed %d (configurations %v), warnings %q", with, executed, w)
	}
	if 2*without < executed[0] || len(w2) != 1 || !strings.Contains(w2[0], "eager at 2^-1 had before the sweep stopped were not taken") {
		r.Errorf("resumed with rank 1's statistics missing: executed %d (configurations %v), warnings %q", without, executed, w2)
	}
}
