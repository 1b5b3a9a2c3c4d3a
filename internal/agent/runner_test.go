package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/mpitest"
	"github.com/approxtune/approxtune/internal/selective"
	"github.com/approxtune/approxtune/internal/workloads/catalog"
	"github.com/approxtune/approxtune/sweep"
)

func TestMain(m *testing.M) {
	mpitest.Main(m, map[string]func(*mpitest.R){
		"trace-events":  traceEvents,
		"search-rounds": searchRounds,
		"search-cut":    searchCut,
		"run-starts":    runStarts,
		"lost-events":   lostEvents,
		"carried":       carriedEvents,
	})
}

// sweepEvents runs spec through a runner on every rank and returns the
// events rank 0 emitted, as JSON lines would carry them (nil elsewhere).
func sweepEvents(r *mpitest.R, r0 *runner, spec string) []json.RawMessage {
	s, configs := parseSpec(r, spec)
	var evs []json.RawMessage
	r0.emit = func(ev any) error {
		b, err := json.Marshal(ev)
		evs = append(evs, b)
		return err
	}
	if err := r0.sweep(context.Background(), s, configs); err != nil {
		r.Fatalf("sweep: %v", err)
	}
	return evs
}

// parseSpec parses and validates a spec for the world's ranks.
func parseSpec(r *mpitest.R, spec string) (*sweep.Spec, []sweep.Config) {
	s, err := sweep.Parse([]byte(spec))
	if err != nil {
		r.Fatalf("spec: %v", err)
	}
	configs, err := s.Validate(catalog.Schema, catalog.Names(), r.World.Size())
	if err != nil {
		r.Fatalf("spec: %v", err)
	}
	return s, configs
}

// testRunner is a runner on the world with the gonum backend.
func testRunner(r *mpitest.R) *runner {
	b, err := kernels.NewBackend(kernels.Gonum)
	if err != nil {
		r.Fatalf("backend: %v", err)
	}
	eng, err := selective.New(r.World, kernels.New(b))
	if err != nil {
		r.Fatalf("engine: %v", err)
	}
	return &runner{world: r.World, eng: eng, backend: b}
}

func typeOf(ev json.RawMessage) string {
	var head struct {
		Type string `json:"type"`
	}
	json.Unmarshal(ev, &head)
	return head.Type
}

// A traced sweep emits one trace event per selective run, after its result:
// every rank's timeline, in time order, spans that do not overlap, some
// kernels skipped; reference runs and untraced sweeps emit none.
func traceEvents(r *mpitest.R) {
	run := testRunner(r)
	// The synthetic workload's kernels are sure to be skipped at 2^-1; the
	// small real ones only likely (their times vary more).
	// sizes are spans' sizes known from the spec (bytes per process).
	for _, c := range []struct {
		spec   string
		traces int
		skips  bool
		sizes  map[string]float64
	}{
		{`{"workload":"summa","space":{"n":256,"b":64,"grid":"2x2"},"policies":["eager"],"tolerances":["2^-1"],"mode":"tune","trace":true}`, 1, false, nil},
		{`{"workload":"synthetic","space":{"grid":["2x2","1x4"],"steps":8,"count":4,"mean_us":300,"msg":64},"policies":["eager","conditional"],"tolerances":[0.5],"mode":"evaluate","reference_reps":1,"trace":true}`, 4, true,
			map[string]float64{"allreduce": 8 * 64, "bcast": 8 * 64}},
		{`{"workload":"cholesky2d","space":{"n":256,"b":32,"grid":"2x2"},"policies":["eager"],"tolerances":["2^-1"],"mode":"tune","trace":true}`, 1, false,
			map[string]float64{"potrf": 32 * 32 * 32 / 3.0}},
		{`{"workload":"summa","space":{"n":256,"b":64,"grid":"2x2"},"policies":["eager"],"tolerances":["2^-1"],"mode":"tune"}`, 0, false, nil},
	} {
		evs := sweepEvents(r, run, c.spec)
		if r.Rank != 0 {
			continue
		}
		traces, skipped := 0, 0
		var last sweep.Result
		for i, raw := range evs {
			switch typeOf(raw) {
			case sweep.TypeResult:
				json.Unmarshal(raw, &last)
			case sweep.TypeTrace:
				traces++
				if i == 0 || typeOf(evs[i-1]) != sweep.TypeResult {
					r.Errorf("%s: a trace event not right after its result", c.spec)
				}
				for _, f := range []string{`"start_s":`, `"end_s":`, `"routine":`, `"skipped":`, `"comm":`, `"dropped":`, `"ranks":`} {
					if !strings.Contains(string(raw), f) {
						r.Errorf("trace event has no %s: %.300s", f, raw)
					}
				}
				var tr sweep.TraceEvent
				if err := json.Unmarshal(raw, &tr); err != nil {
					r.Fatalf("trace event: %v", err)
				}
				if tr.V != sweep.ProtocolVersion || tr.Index != last.Index || tr.Policy != last.Policy || last.Tolerance == nil || tr.Tolerance != *last.Tolerance {
					r.Errorf("trace of %d %s %v follows the result of %d %s %v", tr.Index, tr.Policy, tr.Tolerance, last.Index, last.Policy, last.Tolerance)
				}
				skipped += checkTrace(r, tr, c.sizes)
			}
		}
		if traces != c.traces {
			r.Errorf("%s: %d trace events, want %d", c.spec, traces, c.traces)
		}
		if c.skips && skipped == 0 {
			r.Errorf("%s: no skipped kernel in any trace", c.spec)
		}
	}
}

// checkTrace checks one run's timelines and returns its skipped spans.
// Every span has its size: flops or bytes, none for a spin or a barrier,
// the one in sizes for the routines it names.
func checkTrace(r *mpitest.R, tr sweep.TraceEvent, sizes map[string]float64) int {
	if len(tr.Ranks) != 4 {
		r.Errorf("trace of %d ranks, want 4", len(tr.Ranks))
		return 0
	}
	skipped := 0
	for i, rt := range tr.Ranks {
		if rt.Rank != i || rt.Dropped != 0 || len(rt.Events) == 0 {
			r.Errorf("rank %d: rank field %d, %d spans, %d dropped", i, rt.Rank, len(rt.Events), rt.Dropped)
		}
		prev := 0.0
		for k, s := range rt.Events {
			if s.StartS < prev || s.EndS < s.StartS {
				r.Errorf("rank %d span %d %+v: starts before the previous end %v or ends before it starts", i, k, s, prev)
			}
			prev = s.EndS
			comm := !strings.Contains("gemm syrk trsm potrf spin", s.Routine)
			if s.Routine == "" || s.Comm != comm {
				r.Errorf("rank %d span %d %+v: comm %v, want %v", i, k, s, s.Comm, comm)
			}
			if want, ok := sizes[s.Routine]; ok && s.Size != want ||
				(s.Routine == "spin" || s.Routine == "barrier") != (s.Size == 0) {
				r.Errorf("rank %d span %d %+v: size %v", i, k, s, s.Size)
			}
			if s.Skipped {
				skipped++
				if s.StartS != s.EndS || !(s.PredictedS >= 0) || (!s.Comm && s.PredictedS == 0) {
					r.Errorf("rank %d span %d %+v: a skipped kernel is an instant with its predicted time", i, k, s)
				}
			}
		}
	}
	return skipped
}

func TestTraceEvents(t *testing.T) { mpitest.Run(t, "trace-events", 4) }
