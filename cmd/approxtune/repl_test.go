package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/testenv"
)

// runScript runs `approxtune repl` with script on standard input, in a
// new session directory.
func runScript(t *testing.T, bin, script string) (string, string, int) {
	t.Helper()
	return runScriptIn(t, bin, t.TempDir(), script)
}

// runScriptIn runs `approxtune repl` with script on standard input, on
// session directory dir, and returns its standard output and error and its
// exit status.
func runScriptIn(t *testing.T, bin, dir, script string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "repl", "--dir", dir)
	cmd.Dir = t.TempDir()
	cmd.Stdin = strings.NewReader(script)
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return so.String(), se.String(), code
}

// The README's main job: the quickstart script prints its tables.
func TestQuickstartScript(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	script, err := os.ReadFile(filepath.Join(testenv.Root(t), "examples", "quickstart.atune"))
	if err != nil {
		t.Fatal(err)
	}
	out, errs, code := runScript(t, bin, string(script))
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{
		"> workload summa n=2048", "sweep       9 configurations x 2 policies x 3 tolerances = 54 selective runs",
		"evaluate summa, 54 of 54 runs (ok)", "policy  tolerance  speed-up  mean error  max error  quality",
		"conditional       2^-1", "eager       2^-5", "best configuration (least reference time): n=2048",
		"kernels of configuration 8", "gemm[NN] 512x2048x256", "wrote 54 rows to",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("quickstart output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", out)
	}
}

// In a script, the first failing command stops it with its line number.
func TestScriptStopsAtFirstError(t *testing.T) {
	bin := testenv.Build(t)
	// A byte-order mark, as Windows editors write, is not a command.
	out, errs, code := runScript(t, bin, "\ufeff# comment\nworkload summa n=512\n\nspace b=64,zero\nstatus\n")
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	// The line, with a caret under the column at fault, as the Jupyter
	// kernel shows it.
	if want := "line 4: column 12: b: \"zero\" is not valid: want an integer from 1 to 65536\n  space b=64,zero\n             ^\n"; !strings.Contains(errs, want) {
		t.Fatalf("stderr %q lacks %q", errs, want)
	}
	if strings.Contains(out, "> status") || !strings.Contains(out, "> space b=64,zero") {
		t.Fatalf("the script went on, or did not echo:\n%s", out)
	}
}

// 'plot live FILE.png' in a script: the sweep draws FILE, a PNG of the
// speed-up and error figures side by side, and the REPL's text stays.
func TestScriptPlotLive(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	file := filepath.Join(t.TempDir(), "live.png")
	out, errs, code := runScript(t, bin, "workload synthetic\nspace steps=10,11\npolicy eager\ntolerance 2^-1,2^-3\nreps 1\nplot live "+file+"\nevaluate\n")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	if !strings.Contains(out, "live figure: each sweep redraws "+file) || !strings.Contains(out, "[4/4]") {
		t.Errorf("output:\n%s", out)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if sz := testenv.PNGSize(t, file, b); sz.X != 1600 || sz.Y != 450 {
		t.Errorf("%s is %v, want 1600x450", file, sz)
	}
}

// tmux drives the REPL in a real terminal.
type tmux struct {
	t    *testing.T
	name string
}

func (m tmux) run(args ...string) string {
	out, err := exec.Command("tmux", append([]string{"-L", m.name}, args...)...).CombinedOutput()
	if err != nil {
		m.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func (m tmux) screen() string { return m.run("capture-pane", "-p", "-t", m.name, "-S", "-200") }

func (m tmux) waitFor(want string, timeout time.Duration) string {
	return m.waitUntil(want, timeout, func(s string) bool { return strings.Contains(s, want) })
}

// waitUntil polls the screen until ok holds of it; what names ok in the
// failure.
func (m tmux) waitUntil(what string, timeout time.Duration, ok func(screen string) bool) string {
	deadline := time.Now().Add(timeout)
	for {
		s := m.screen()
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			m.t.Fatalf("the screen never showed %q:\n%s", what, s)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Completion, Ctrl-C at the prompt and during a sweep, and Ctrl-D, in a terminal.
func TestInteractiveREPL(t *testing.T) {
	testenv.Tool(t, "tmux")
	testenv.Launcher(t)
	bin := testenv.Build(t)
	dir := t.TempDir()
	m := tmux{t, "approxtune-test-" + filepath.Base(dir)}
	m.run("new-session", "-d", "-s", m.name, "-x", "160", "-y", "50",
		"env NO_COLOR=1 XDG_STATE_HOME="+dir+" "+bin+" repl --dir "+dir+"/session; echo REPL-EXITED; sleep 30")
	defer exec.Command("tmux", "-L", m.name, "kill-server").Run()
	m.waitFor("approxtune>", 10*time.Second)

	// Tab completes the verb and a workload name.
	m.run("send-keys", "-t", m.name, "wor", "Tab")
	m.waitFor("approxtune> workload", 5*time.Second)
	m.run("send-keys", "-t", m.name, "syn", "Tab")
	m.waitFor("approxtune> workload synthetic", 5*time.Second)
	// Ctrl-C at the prompt clears the line: nothing runs.
	m.run("send-keys", "-t", m.name, "C-c")
	m.run("send-keys", "-t", m.name, "workload synthetic steps=60 count=4", "Enter")
	m.run("send-keys", "-t", m.name, "space slow_rank=-1,0,1,2", "Enter")
	m.run("send-keys", "-t", m.name, "evaluate", "Enter")
	m.waitFor("runs,", 60*time.Second)
	time.Sleep(time.Second)
	m.run("send-keys", "-t", m.name, "C-c")
	s := m.waitFor("'resume' runs the rest", 60*time.Second)
	if !strings.Contains(s, "cancelling: the sweep stops at the next run boundary") {
		t.Errorf("no cancel notice:\n%s", s)
	}
	// Still usable after the cancel.
	m.run("send-keys", "-t", m.name, "status", "Enter")
	m.waitFor("session     "+dir, 20*time.Second)
	// Ctrl-D leaves, stopping the agent.
	m.run("send-keys", "-t", m.name, "C-d")
	s = m.waitFor("REPL-EXITED", 20*time.Second)
	if !strings.Contains(s, "stopping the agent") {
		t.Errorf("Ctrl-D did not stop the agent:\n%s", s)
	}
	// The history (the user's commands) and the journal are the user's to
	// read only.
	for _, f := range []string{filepath.Join(dir, "approxtune", "history"), filepath.Join(dir, "approxtune"), filepath.Join(dir, "session", "results.jsonl"), filepath.Join(dir, "session")} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is %v: others may read it", f, fi.Mode().Perm())
		}
	}
}

// A terminal without line editing: TERM=dumb (an editor's shell buffer, a
// serial console), and a terminal's input with the output piped
// ('approxtune repl | tee log'). Each shows its prompt, echoes what is
// typed (the terminal's own line discipline), and goes on after a typo; a
// piped log holds the answers without cursor moves or prompts. The dumb
// terminal had shown no prompt and echoed nothing (readline kept it raw),
// and the piped one was taken for a script that the typo ended, the next
// command going to the shell.
func TestREPLPlainTerminal(t *testing.T) {
	testenv.Tool(t, "tmux")
	bin := testenv.Build(t)
	dir := t.TempDir()
	for _, c := range []struct{ name, command string }{ // tmux's socket names the test's folder: unique
		{"dumb", "env TERM=dumb NO_COLOR=1 XDG_STATE_HOME=" + dir + " " + bin + " repl --dir " + dir + "/dumb"},
		{"piped", "env XDG_STATE_HOME=" + dir + " " + bin + " repl --dir " + dir + "/piped | tee " + dir + "/log"},
	} {
		m := tmux{t, "approxtune-plain-" + c.name + "-" + filepath.Base(dir)}
		t.Cleanup(func() { exec.Command("tmux", "-L", m.name, "kill-server").Run() })
		m.run("new-session", "-d", "-s", m.name, "-x", "120", "-y", "50", c.command+"; echo REPL-EXITED; sleep 30")
		m.waitFor("approxtune>", 10*time.Second) // the pane drops its trailing space
		m.run("send-keys", "-t", m.name, "space n=100,12x", "Enter")
		m.waitFor(`"12x" is not valid`, 10*time.Second)
		m.run("send-keys", "-t", m.name, "status", "Enter")
		// Piped, the answer may reach the screen before or after the next
		// prompt (tee and the REPL write it apart): wait for both.
		answer := "session     " + dir + "/" + c.name
		scr := m.waitUntil(answer+" and a third prompt", 10*time.Second, func(s string) bool {
			return strings.Contains(s, answer) && strings.Count(s, "approxtune>") >= 3
		})
		// A caret under the column at fault, below the line typed.
		if c.name == "dumb" && !strings.Contains(scr, "approxtune> space n=100,12x\n"+strings.Repeat(" ", 24)+"^\n") {
			t.Errorf("%s: no caret under the column at fault:\n%s", c.name, scr)
		}
		if !strings.Contains(scr, "space n=100,12x") || !strings.Contains(scr, "status") || strings.Count(scr, "approxtune>") < 3 {
			t.Errorf("%s: the prompts and what was typed are not on the screen:\n%s", c.name, scr)
		}
		m.run("send-keys", "-t", m.name, "exit", "Enter")
		m.waitFor("REPL-EXITED", 10*time.Second)
	}
	b, err := os.ReadFile(filepath.Join(dir, "log"))
	if err != nil {
		t.Fatal(err)
	}
	if log := string(b); !strings.Contains(log, `"12x" is not valid`) || !strings.Contains(log, "session     ") ||
		strings.Contains(log, "\033[") || strings.Contains(log, "approxtune> ") {
		t.Errorf("the piped log: want the answers, no escapes, no prompts:\n%q", log)
	}
}

// In the REPL, controls prints the commands to type instead.
func TestScriptControls(t *testing.T) {
	bin := testenv.Build(t)
	out, errs, code := runScript(t, bin, "policy eager\ncontrols\n")
	want := "controls need a Jupyter front end with widgets (Notebook, JupyterLab); here, type the commands they run: " +
		"'policy eager', 'tolerance 2^-1,2^-3,2^-5', 'grid 2x2', 'space n=1024 b=128', then 'evaluate' or 'tune' (an interrupt cancels)"
	if code != 0 || !strings.Contains(out, want) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

// TestREPLHomeEndKeys types at a terminal the Home and End keys as tmux
// and screen send them (ESC[1~, ESC[4~), which line editing did not know:
// Home, 'z', End, 'q' around "tolerance" must give "ztoleranceq". On a
// terminal that reports no size, Home had left line editing redrawing
// forever.
func TestREPLHomeEndKeys(t *testing.T) {
	bin := testenv.Build(t)
	for _, cols := range []uint16{100, 0} {
		r, err := startREPLSized(bin, filepath.Join(t.TempDir(), "s"), append(os.Environ(), "TERM=screen"), cols)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.waitPrompt(0); err != nil {
			r.close()
			t.Fatal(err)
		}
		from := r.len()
		for _, k := range []string{"tolerance", "\x1b[1~", "z", "\x1b[4~", "q\r"} {
			if _, err := r.master.Write([]byte(k)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		want := `unknown command "ztoleranceq"`
		if _, err := r.waitFor(want, from, 30*time.Second); err != nil {
			t.Errorf("%d columns: %v; the REPL wrote:\n%q", cols, err, r.tail(from))
		}
		r.send("\x04")
		if err := r.exit(30 * time.Second); err != nil {
			t.Errorf("%d columns: Ctrl-D: %v", cols, err)
		}
		r.close()
	}
}

// A REPL told to end (SIGTERM) during a sweep stops it at once and says
// so: it had printed the advice of a first Ctrl-C ("interrupt again to
// stop mpirun now") and then "interrupting mpirun", answers to
// interrupts nobody made. The runs made are in the journal.
func TestREPLTerminatedStopsSweepAtOnce(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	t.Cleanup(func() { testenv.NoneLeft(t, bin, "agent") })
	dir := t.TempDir()
	repl, out := startREPLUntil(t, bin, filepath.Join(dir, "session"), "workload synthetic steps=10,20,30,40,50,60,70,80\nreps 1\nevaluate\n", "[2/")
	repl.Process.Signal(syscall.SIGTERM)
	err := repl.Wait()
	got := out.String()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Errorf("after SIGTERM: %v; want exit 143\n%s", err, got)
	}
	for _, want := range []string{"stopping: interrupting mpirun", "(cancelled)", "terminated: ending the session"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "interrupt again") {
		t.Errorf("a SIGTERM got a first Ctrl-C's advice:\n%s", got)
	}
	journal, err := os.ReadFile(filepath.Join(dir, "session", "results.jsonl"))
	if err != nil || !strings.Contains(string(journal), `"type":"result"`) {
		t.Errorf("journal after SIGTERM (%v): want the runs made\n%.2000s", err, journal)
	}
}

// An interrupt during a command other than a sweep stops it: a 'rank' of
// hours (reps= and draws= at their most) had ignored Ctrl-C, which said
// "(nothing to cancel)", and SIGTERM, and only SIGKILL ended the REPL. It
// says first how long it would take.
func TestREPLInterruptStopsRank(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	t.Cleanup(func() { testenv.NoneLeft(t, bin, "agent") })
	repl, out := startREPLUntil(t, bin, filepath.Join(t.TempDir(), "session"),
		"workload synthetic steps=1,2,3,4,5,6,7,8,9,10,11,12 count=1 mean_us=10\npolicy conditional\ntolerance 2^-1\nreps 2\nevaluate\nrank reps=100000 draws=100000\n",
		"an interrupt stops it")
	time.Sleep(200 * time.Millisecond)
	sent := time.Now()
	repl.Process.Signal(os.Interrupt)
	err := repl.Wait()
	if took := time.Since(sent); took > 10*time.Second {
		t.Errorf("the REPL ended %v after the interrupt", took)
	}
	got := out.String()
	for _, want := range []string{"ranking 12 configurations takes up to about", "rank: interrupted"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q (exit %v):\n%s", want, err, got)
		}
	}
}

// startREPLUntil starts 'approxtune repl' on session directory dir with
// script on its standard input, and returns once its output holds marker
// (failing the test after a minute without it). The REPL is killed when the
// test ends, at the latest. setup, when given, is applied to the command
// before it starts.
func startREPLUntil(t *testing.T, bin, dir, script, marker string, setup ...func(*exec.Cmd)) (*exec.Cmd, *testenv.SyncBuffer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	repl := exec.CommandContext(ctx, bin, "repl", "--dir", dir)
	repl.Stdin = strings.NewReader(script)
	out := &testenv.SyncBuffer{}
	repl.Stdout, repl.Stderr = out, out
	for _, f := range setup {
		f(repl)
	}
	if err := repl.Start(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(time.Minute); !strings.Contains(out.String(), marker); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			repl.Process.Kill()
			repl.Wait()
			t.Fatalf("no %q within a minute:\n%s", marker, out.String())
		}
	}
	return repl, out
}

// Ctrl-D at the prompt after a command leaves at once. It had hung, now
// and then, in line editing's Close, whose reading goroutine sat in a
// read of the terminal that no key ended (a review's pty: 5 times of 5
// after evaluate and one more command). The script drives the REPL
// through pexpect, whose timing showed it (6 hangs in 8 runs before the
// fix); the Go harness of startREPL did not.
func TestREPLCtrlDAfterCommand(t *testing.T) {
	bin := testenv.Build(t)
	const py = "/usr/bin/python3"
	if out, err := exec.Command(py, "-c", "import pexpect").CombinedOutput(); err != nil {
		testenv.Missing(t, "%s -c 'import pexpect': %v\n%s", py, err, out)
	}
	out, err := exec.Command(py, "testdata/repl/ctrld.py", bin, t.TempDir()).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}
