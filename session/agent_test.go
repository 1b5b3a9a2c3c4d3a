package session

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/protocol"
	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/sweep"
)

func spec(t *testing.T, js string) *sweep.Spec {
	t.Helper()
	s, err := sweep.Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLocalAgentRunsAndCancels(t *testing.T) {
	bin := testenv.Build(t)
	testenv.Launcher(t)
	ctx := context.Background()
	a, err := StartLocal(ctx, bin, 4, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Shutdown(5 * time.Second)
	if a.Hello.Ranks != 4 || len(a.Hello.Hosts) != 4 || len(a.Hello.PIDs) != 4 || !strings.Contains(a.Hello.MPI, "Open MPI") || a.Hello.Token != "" {
		t.Fatalf("hello %+v", a.Hello)
	}
	names := map[string]bool{}
	for _, w := range a.Hello.Workloads {
		names[w.Name] = len(w.Params) > 0
	}
	if !names["summa"] || !names["synthetic"] {
		t.Fatalf("workloads announced: %v", names)
	}

	// A small evaluate sweep streams its events and ends ok.
	var types []string
	done, err := a.Run(ctx, spec(t, `{"workload":"synthetic","space":{"steps":5,"count":2},"policies":["eager"],"tolerances":[0.5],"reference_reps":1}`),
		func(e Event) { types = append(types, e.Type) })
	if err != nil || done.Status != protocol.StatusOK {
		t.Fatalf("run: %+v %v", done, err)
	}
	// Each run, and the set-up, is announced as it starts: set-up,
	// warm-up, reference, selective run; eager's carried statistics follow
	// the configuration's result.
	if strings.Join(types, ",") != "start,run_start,run_start,run_start,run_start,result,carried,summary" {
		t.Fatalf("events %v", types)
	}

	// A bad spec fails with a message, and the agent stays usable.
	done, err = a.Run(ctx, spec(t, `{"workload":"synthetic","space":{"grid":"3x3"}}`), func(Event) {})
	if err != nil || done.Status != protocol.StatusFailed || !strings.Contains(done.Message, "needs 9 processes") {
		t.Fatalf("bad spec: %+v %v", done, err)
	}

	// Cancelling stops at the next run boundary: fewer results than runs
	// (ten configurations, so the cancel has nine runs' time to land).
	cctx, cancel := context.WithCancel(ctx)
	results := 0
	start := time.Now()
	done, err = a.Run(cctx, spec(t, `{"workload":"synthetic","space":{"steps":[20,21,22,23,24,25,26,27,28,29]},"policies":["conditional"],"tolerances":[0],"reference_reps":1}`),
		func(e Event) {
			if e.Type == "result" {
				results++
				if results == 1 {
					cancel()
				}
			}
		})
	if err != nil || done.Status != protocol.StatusCancelled {
		t.Fatalf("cancel: %+v %v", done, err)
	}
	if results >= 10 || time.Since(start) > 40*time.Second {
		t.Fatalf("cancel took %v and %d of 10 results came", time.Since(start), results)
	}
	done, err = a.Run(ctx, spec(t, `{"workload":"synthetic","space":{"steps":2},"mode":"tune","policies":["local"],"tolerances":[0.5]}`), func(Event) {})
	if err != nil || done.Status != protocol.StatusOK {
		t.Fatalf("run after cancel: %+v %v", done, err)
	}
}

// An agent with a wrong token is refused, told why, and exits with status 3.
func TestWrongTokenRefused(t *testing.T) {
	bin := testenv.Build(t)
	l := testenv.Launcher(t)
	ln, err := Listen("127.0.0.1:0", "right-token")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var refused []string
	ln.Refused = func(remote, reason string) { refused = append(refused, reason) }
	cmd := l.Command(context.Background(), 2, bin, "agent", "--connect", ln.Addr())
	cmd.Env = append(cmd.Env, protocol.TokenEnv+"=wrong-token")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	go func() { cmd.Wait(); cancel() }()
	a, err := ln.Accept(ctx)
	if a != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("accepted %v, err %v", a, err)
	}
	if len(refused) != 1 || refused[0] != "wrong token" {
		t.Fatalf("refusals %q", refused)
	}
	if code := cmd.ProcessState.ExitCode(); code != 3 || !strings.Contains(stderr.String(), "refused this agent: wrong token") {
		t.Fatalf("agent exit %d, stderr:\n%s", code, stderr.String())
	}
}

// Killing one rank in the middle of a sweep is reported within seconds, with
// mpirun's status.
func TestAgentDeathDetected(t *testing.T) {
	_, took, err := killDuringSweep(t, func(a *Agent) { syscall.Kill(a.Hello.PIDs[2], syscall.SIGKILL) })
	if !errors.Is(err, ErrAgentDied) {
		t.Fatalf("err %v, want ErrAgentDied", err)
	}
	if took > 20*time.Second {
		t.Fatalf("death reported after %v", took)
	}
	if !strings.Contains(err.Error(), "mpirun") {
		t.Fatalf("the report lacks mpirun's status: %v", err)
	}
	t.Logf("reported after %v: %v", took, err)
}

// killDuringSweep starts a local agent of 4 ranks of this build, runs a
// reference sweep on it, and calls kill after the second result. It returns
// the agent (interrupted when the test ends), how long after the kill the
// run returned, and the run's error.
func killDuringSweep(t *testing.T, kill func(*Agent)) (*Agent, time.Duration, error) {
	t.Helper()
	bin := testenv.Build(t)
	testenv.Launcher(t)
	ctx := context.Background()
	a, err := StartLocal(ctx, bin, 4, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Interrupt(time.Second) })
	var killedAt time.Time
	results := 0
	_, err = a.Run(ctx, spec(t, `{"workload":"synthetic","space":{"steps":40,"slow_rank":[-1,0,1,2,3],"slow_pct":[200,300]},"mode":"reference","reference_reps":1}`),
		func(e Event) {
			if e.Type == "result" {
				results++
				if results == 2 {
					killedAt = time.Now()
					kill(a)
				}
			}
		})
	return a, time.Since(killedAt), err
}

// agentSession is a session whose sweeps start a local agent of this
// build, closed at the end of the test.
func agentSession(t *testing.T) *Session {
	t.Helper()
	testenv.Launcher(t)
	bin := testenv.Build(t)
	s, err := New(Options{Dir: t.TempDir(), Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// execAll runs the command lines on s, failing at the first error.
func execAll(t *testing.T, s *Session, out Output, lines ...string) {
	t.Helper()
	for _, l := range lines {
		if err := s.Exec(context.Background(), l, out); err != nil {
			t.Fatalf("%s: %v", l, err)
		}
	}
}

// Validation works the same with the agent's announced schemas as with the
// binary's own (defaults decoded from JSON become parameter values again).
func TestAnnouncedSchemasValidate(t *testing.T) {
	s := agentSession(t)
	ctx := context.Background()
	out := &textOut{}
	s.Exec(ctx, "workload synthetic steps=2 count=1", out)
	if err := s.Exec(ctx, "tune", out); err != nil {
		t.Fatal(err)
	}
	if s.Agent() == nil {
		t.Fatal("no agent")
	}
	for _, l := range []string{"status", "workload summa n=256", "space b=32", "tune"} {
		if err := s.Exec(ctx, l, out); err != nil {
			t.Fatalf("%s with the agent's schemas: %v", l, err)
		}
	}
	if err := s.Exec(ctx, "space n=1000 b=64", out); err != nil {
		t.Fatal(err)
	}
	if err := s.Exec(ctx, "tune", out); err == nil || !strings.Contains(err.Error(), "must divide") {
		t.Fatalf("invalid space with the agent's schemas: %v", err)
	}
}

// TestLocalAgentWarnsOfSingleCopyOff: a session that starts its agent with
// Open MPI's single-copy transfers off says so in its output, naming the
// variable.
func TestLocalAgentWarnsOfSingleCopyOff(t *testing.T) {
	const v = testenv.SingleCopyVar
	t.Setenv(v, "none")
	s := agentSession(t)
	out := &textOut{}
	execAll(t, s, out, "workload synthetic steps=4 count=2", "policy conditional", "tolerance 2^-1", "tune")
	if !strings.Contains(out.b.String(), "warning: "+v+"=none:") {
		t.Errorf("output of a session started with %s=none:\n%s\nwant a warning naming it", v, out.b.String())
	}
}

// TestStatusShowsCopyCost: after a sweep whose processes share cores (more
// ranks than CPUs), 'status' shows the copy cost the agent's engine
// measured at its start, a plausible time per byte.
func TestStatusShowsCopyCost(t *testing.T) {
	s := agentSession(t)
	out := &textOut{}
	execAll(t, s, out, "workload synthetic steps=2 count=1", "policy eager", "tolerance 2^-1", "tune")
	out.b.Reset()
	execAll(t, s, out, "status")
	st := out.b.String()
	i := strings.Index(st, "copy cost   ")
	if s.st.Ranks <= runtime.NumCPU() {
		t.Logf("%d ranks on %d CPUs: cores may not be shared; status:\n%s", s.st.Ranks, runtime.NumCPU(), st)
		if i < 0 {
			return
		}
	} else if i < 0 {
		t.Fatalf("%d ranks on %d CPUs, status after a sweep has no copy cost:\n%s", s.st.Ranks, runtime.NumCPU(), st)
	}
	var c float64
	if _, err := fmt.Sscanf(st[i+len("copy cost   "):], "%g s/B", &c); err != nil || !(c > 0 && c < 1e-8) {
		t.Fatalf("copy cost line %q: %g, %v; want a time per byte in (0, 1e-8)", strings.SplitN(st[i:], "\n", 2)[0], c, err)
	}
	if sw := s.sweeps[len(s.sweeps)-1]; fmt.Sprintf("%.2g", sw.CopyCost) != fmt.Sprintf("%.2g", c) {
		t.Errorf("status shows %g, the sweep's start carried %g", c, sw.CopyCost)
	}
}

// An interrupt while the local agent starts is told as one, not as the
// hello's timeout ("did not say hello within 1m0s: context canceled").
func TestInterruptedAgentStartSaysSo(t *testing.T) {
	s := agentSession(t)
	execAll(t, s, &textOut{}, "workload synthetic steps=2")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	err := s.Exec(ctx, "tune", &textOut{})
	if err == nil || strings.Contains(err.Error(), "did not say hello") {
		t.Errorf("tune interrupted while its agent started: %v", err)
	}
	t.Logf("%v", err)
}

// A sweep the user stopped (SIGTERM, a hang-up, a second Ctrl-C: Stop) in
// the middle of a run says it was interrupted, and not that the agent
// died of the session closing its connection, which the stop itself did
// ("interrupted: mpirun was stopped (the agent died: the session closed
// the connection; mpirun: exit status 1)").
func TestStoppedSweepSaysInterrupted(t *testing.T) {
	s := agentSession(t)
	// Rank 1 stops for good in the first run; the deadline only ends the
	// test should Stop not.
	execAll(t, s, &textOut{}, "workload synthetic steps=10 mean_us=2000 hang_rank=1 hang_step=3", "policy conditional", "tolerance 2^-1", "deadline 60s")
	go func() {
		time.Sleep(3 * time.Second)
		for s.Stop() == "" {
			time.Sleep(50 * time.Millisecond)
		}
	}()
	err := s.Exec(context.Background(), "tune", &textOut{})
	sw := s.Last()
	if err == nil || sw.Status != StatusCancelled || sw.Message != "interrupted: mpirun was stopped" {
		t.Errorf("a stopped sweep: %v; status %s, message %q", err, sw.Status, sw.Message)
	}
}
