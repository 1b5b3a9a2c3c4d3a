package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/jupyter"
	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/session"
)

// jupyterSetup is the approxtune binary, its kernelspec installed under a
// temporary prefix, and an environment in which the real Jupyter clients
// (Debian's packages) find it and write nothing outside the test.
type jupyterSetup struct {
	bin    string
	python []string // jupyter's own Python
	dir    string
	env    []string
}

func setupJupyter(t *testing.T) jupyterSetup {
	t.Helper()
	testenv.Tool(t, "jupyter")
	py, err := jupyter.JupyterPython()
	if err != nil {
		testenv.Missing(t, "the Python of jupyter: %v", err)
	}
	if out, err := exec.Command(py[0], append(py[1:], "-c", "import jupyter_client, nbformat, nbclient")...).CombinedOutput(); err != nil {
		testenv.Missing(t, "jupyter_client, nbformat and nbclient for %s: %v\n%s", py[0], err, out)
	}
	bin := testenv.Build(t)
	dir := t.TempDir()
	js := jupyterSetup{bin: bin, python: py, dir: dir}
	js.env = append(os.Environ(),
		"HOME="+filepath.Join(dir, "home"),
		"IPYTHONDIR="+filepath.Join(dir, "ipython"),
		"JUPYTER_PATH="+filepath.Join(dir, "prefix", "share", "jupyter"),
		"JUPYTER_DATA_DIR="+filepath.Join(dir, "data"),
		"JUPYTER_RUNTIME_DIR="+filepath.Join(dir, "runtime"),
		"JUPYTER_CONFIG_DIR="+filepath.Join(dir, "config"),
		"APPROXTUNE_SESSION_DIR="+filepath.Join(dir, "session"),
		"PYTHONPATH="+filepath.Join(testenv.Root(t), "internal", "jupyter", "testdata", "jupyter"),
		"PYTHONDONTWRITEBYTECODE=1",
		"PYDEVD_DISABLE_FILE_VALIDATION=1",
	)
	os.MkdirAll(filepath.Join(dir, "home"), 0o755)
	out, code := js.run(t, 30*time.Second, "", bin, "install", "--prefix", filepath.Join(dir, "prefix"))
	if code != 0 {
		t.Fatalf("approxtune install --prefix: exit %d\n%s", code, out)
	}
	t.Cleanup(func() { testenv.NoneLeft(t, bin, "kernel", "agent") })
	return js
}

// run runs a command in the setup's environment with stdin, bounded by
// timeout, and returns its combined output and exit status.
func (js jupyterSetup) run(t *testing.T, timeout time.Duration, stdin string, name string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = js.env
	cmd.Dir = js.dir
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second // a kernel may hold the output pipe a moment longer
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s %v: timed out after %v\n%s", name, args, timeout, out.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out.String())
	}
	return out.String(), code
}

// script runs one of internal/jupyter/testdata/jupyter's scripts with jupyter's Python;
// it prints OK when every check passed.
func (js jupyterSetup) script(t *testing.T, timeout time.Duration, name string) string {
	t.Helper()
	path := filepath.Join(testenv.Root(t), "internal", "jupyter", "testdata", "jupyter", name)
	out, code := js.run(t, timeout, "", js.python[0], append(append([]string{}, js.python[1:]...), "-u", path)...)
	if code != 0 || !strings.Contains(out, "\nOK\n") {
		t.Fatalf("%s: exit %d\n%s", name, code, out)
	}
	return out
}

// kernel_info, execute, complete, inspect, is_complete, history, comm_info
// and shutdown through jupyter_client.
func TestJupyterClient(t *testing.T) {
	js := setupJupyter(t)
	// Two finished sessions (a real journal) under the sessions directory,
	// the second the more recent: 'load ' completes them in that order.
	js.env = append(js.env, "XDG_DATA_HOME="+filepath.Join(js.dir, "data-home"))
	journal, err := os.ReadFile(filepath.Join(testenv.Root(t), "session", "testdata", "traced-journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ids := []string{"20261122-183602-aaaaaa", "20261123-090000-bbbbbb"}
	for i, id := range ids {
		p := filepath.Join(js.dir, "data-home", "approxtune", "sessions", id, session.JournalName)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, journal, 0o644); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(time.Duration(i-2) * time.Hour)
		os.Chtimes(p, at, at)
	}
	js.env = append(js.env, "APPROXTUNE_TEST_SESSIONS="+ids[1]+","+ids[0])
	js.script(t, 90*time.Second, "client.py")
}

// An interrupt (interrupt_request, SIGINT, and twice) in the middle of a
// sweep ends the cell with an error; the next cell works.
func TestJupyterInterrupt(t *testing.T) {
	testenv.Launcher(t)
	js := setupJupyter(t)
	out := js.script(t, 3*time.Minute, "interrupt.py")
	t.Log(out)
}

// Kernel > Restart during a sweep: the new kernel's first cell names the
// sweep the session before left unfinished, and its 'resume ID' finishes
// it (restart.py).
func TestJupyterRestartPointsToUnfinished(t *testing.T) {
	testenv.Launcher(t)
	js := setupJupyter(t)
	// A new session per kernel, in the sessions directory, as a user's.
	js.env = append(js.env, "APPROXTUNE_SESSION_DIR=", "XDG_DATA_HOME="+filepath.Join(js.dir, "data-home"))
	t.Log(js.script(t, 5*time.Minute, "restart.py"))
}

// nbconvert executes a notebook with a small evaluate sweep through the
// kernel and stores its display (text/plain, text/html with the figures,
// and their image/png and image/svg+xml, final state) and its result table
// in the output notebook.
func TestJupyterNbconvert(t *testing.T) {
	testenv.Launcher(t)
	testenv.Tool(t, "jupyter-nbconvert")
	js := setupJupyter(t)
	code := func(src string) map[string]any {
		return map[string]any{"cell_type": "code", "execution_count": nil, "metadata": map[string]any{}, "outputs": []any{}, "source": src}
	}
	nb := map[string]any{
		"nbformat": 4, "nbformat_minor": 4,
		"metadata": map[string]any{"kernelspec": map[string]any{"name": "approxtune", "display_name": "approxtune", "language": "approxtune"}},
		"cells": []any{
			code("workload synthetic steps=5 count=2\nspace grid=1x4,2x2\nreps 1\npolicy conditional,eager\ntolerance 2^-1,2^-3"),
			code("evaluate"),
			code("table configs"),
			code("table best"),
			code("controls"),
		},
	}
	b, _ := json.Marshal(nb)
	in := filepath.Join(js.dir, "sweep.ipynb")
	if err := os.WriteFile(in, b, 0o644); err != nil {
		t.Fatal(err)
	}
	out, status := js.run(t, 3*time.Minute, "", "jupyter", "nbconvert", "--to", "notebook", "--execute",
		"--ExecutePreprocessor.timeout=150", "--output", "executed.ipynb", in)
	if status != 0 {
		t.Fatalf("nbconvert: exit %d\n%s", status, out)
	}
	b, err := os.ReadFile(filepath.Join(js.dir, "executed.ipynb"))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got struct {
		Metadata struct {
			LanguageInfo map[string]any `json:"language_info"`
			Widgets      map[string]struct {
				VersionMajor int `json:"version_major"`
				State        map[string]struct {
					ModelName string         `json:"model_name"`
					State     map[string]any `json:"state"`
				} `json:"state"`
			} `json:"widgets"`
		}
		Cells []struct {
			Source  any
			Outputs []struct {
				OutputType string         `json:"output_type"`
				Data       map[string]any `json:"data"`
				Text       any            `json:"text"`
				Ename      string         `json:"ename"`
			}
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Metadata.LanguageInfo["name"] != "approxtune" || got.Metadata.LanguageInfo["file_extension"] != ".atune" {
		t.Errorf("language_info %v", got.Metadata.LanguageInfo)
	}
	if len(got.Cells) != 5 {
		t.Fatalf("%d cells", len(got.Cells))
	}
	str := func(v any) string {
		if l, ok := v.([]any); ok { // nbformat may store text as a list of lines
			var s strings.Builder
			for _, x := range l {
				s.WriteString(x.(string))
			}
			return s.String()
		}
		s, _ := v.(string)
		return s
	}
	var display, result bool
	for _, o := range got.Cells[1].Outputs {
		switch o.OutputType {
		case "display_data":
			plain, html := str(o.Data["text/plain"]), str(o.Data["text/html"])
			if !strings.Contains(plain, "sweep 1 evaluate synthetic: 8/8 runs") || !strings.Contains(plain, "(ok)") ||
				!strings.Contains(html, `class="approxtune-sweep"`) || !strings.Contains(html, `<img alt="speedup"`) || !strings.Contains(html, `<img alt="error"`) {
				t.Errorf("the stored display is not the final one:\n%s\n%.300s", plain, html)
			}
			if !strings.HasPrefix(str(o.Data["image/png"]), "iVBORw0KGgo") || !strings.Contains(str(o.Data["image/svg+xml"]), "<svg") {
				t.Errorf("the stored display has no image/png and image/svg+xml")
			}
			display = true
		case "execute_result":
			if !strings.Contains(str(o.Data["text/html"]), `class="approxtune-best"`) || !strings.Contains(str(o.Data["text/plain"]), "speed-up") {
				t.Errorf("execute_result %v", o.Data)
			}
			result = true
		case "error":
			t.Errorf("the evaluate cell failed: %s", o.Ename)
		}
	}
	if !display || !result {
		t.Errorf("evaluate cell outputs: display %v, result %v\n%s", display, result, b)
	}
	if o := got.Cells[2].Outputs; len(o) != 1 || !strings.Contains(str(o[0].Data["text/plain"]), "configuration") {
		t.Errorf("table configs: %+v", o)
	}
	if o := got.Cells[3].Outputs; len(o) != 1 || o[0].OutputType != "execute_result" || !strings.Contains(str(o[0].Data["text/html"]), `class="approxtune-best"`) {
		t.Errorf("table best: %+v", o)
	}
	// controls leaves its line of text, and the widgets' state in the
	// notebook's metadata.
	o := got.Cells[4].Outputs
	if len(o) != 1 || o[0].OutputType != "display_data" || o[0].Data["application/vnd.jupyter.widget-view+json"] == nil ||
		!strings.Contains(str(o[0].Data["text/plain"]), "They need a Jupyter front end with widgets (Notebook, JupyterLab); without one, type the commands they run: 'policy conditional,eager', 'tolerance 2^-1,2^-3'") {
		t.Errorf("controls: %+v", o)
	}
	ws := got.Metadata.Widgets["application/vnd.jupyter.widget-state+json"]
	tolerance := ""
	for _, m := range ws.State {
		if m.ModelName == "SelectionSliderModel" && m.State["description"] == "tolerance" {
			tolerance = fmt.Sprint(m.State["index"])
		}
	}
	if ws.VersionMajor != 2 || len(ws.State) < 11 || tolerance != "3" { // the slider at the tightest, 2^-3
		t.Errorf("widget state in the notebook: version %d, %d models, tolerance index %q", ws.VersionMajor, len(ws.State), tolerance)
	}
}

// A scripted jupyter console session prints the results.
func TestJupyterConsole(t *testing.T) {
	testenv.Launcher(t)
	testenv.Tool(t, "jupyter-console")
	js := setupJupyter(t)
	in := "status\nworkload synthetic steps=5 count=2\nreps 1\npolicy eager\ntolerance 2^-1\nevaluate\nbogus\ncontrols\n"
	session := filepath.Join(js.dir, "session")
	stop := tokenWatch(t, "APPROXTUNE_SESSION_DIR="+session)
	out, code := js.run(t, 2*time.Minute, in, "jupyter", "console", "--kernel", "approxtune", "--simple-prompt", "--no-confirm-exit")
	tokens := stop()
	if code != 0 {
		t.Fatalf("jupyter console: exit %d\n%s", code, out)
	}
	// The agent's token is in no command line, not in what the console
	// showed nor in the kernel's log (its standard error, which the
	// console passes on), nor in the session's files.
	if len(tokens) == 0 {
		t.Errorf("no agent's token seen: nothing was checked")
	}
	if !strings.Contains(out, "approxtune kernel: ") || !strings.Contains(out, "serving session "+session) {
		t.Errorf("the kernel's log is not in the console's output:\n%s", out)
	}
	secretIn(t, "the console's output and the kernel's log", out, tokens)
	secretInFiles(t, session, tokens)
	for _, want := range []string{
		"approxtune", "Out[1]:", "workload    summa", "agent       none: a local one",
		"starting a local agent: 4 ranks under mpirun", "sweep 1 evaluate synthetic: 0/1 runs", // the display, as first shown
		"Out[6]:", "policy  tolerance  speed-up", "best configuration (least reference time)", // the result
		`CommandError: column 1: unknown command "bogus"`, "Shutting down kernel",
		// controls: the widgets' text.
		"approxtune controls: policy, tolerance, grid, steps, count, kinds, mean_us, spread, slow_rank, slow_pct, slow_every, msg, hang_rank, hang_step; evaluate, tune, cancel. They need a Jupyter front end with widgets (Notebook, JupyterLab); without one, type the commands they run: 'policy eager', 'tolerance 2^-1'",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("console output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("console:\n%s", out)
	}
}

// approxtune install writes the kernelspec where jupyter kernelspec list
// finds it: --user, --prefix; --sys-prefix's directory is one Jupyter reads.
func TestInstallKernelspec(t *testing.T) {
	js := setupJupyter(t)
	list := func(env []string) map[string]string {
		t.Helper()
		e := js
		e.env = env
		out, code := e.run(t, 60*time.Second, "", "jupyter", "kernelspec", "list", "--json")
		if code != 0 {
			t.Fatalf("jupyter kernelspec list: exit %d\n%s", code, out)
		}
		var l struct {
			Kernelspecs map[string]struct {
				ResourceDir string `json:"resource_dir"`
				Spec        jupyter.Spec
			}
		}
		if i := strings.Index(out, "{"); i >= 0 {
			out = out[i:]
		}
		if err := json.NewDecoder(strings.NewReader(out)).Decode(&l); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		dirs := map[string]string{}
		for name, k := range l.Kernelspecs {
			dirs[name] = k.ResourceDir
			if name == "approxtune" && (k.Spec.Argv[0] != js.bin || k.Spec.InterruptMode != "message" || k.Spec.Language != "approxtune") {
				t.Errorf("spec %+v", k.Spec)
			}
		}
		return dirs
	}
	// --prefix (what setupJupyter did), found through JUPYTER_PATH.
	if got, want := list(js.env)["approxtune"], filepath.Join(js.dir, "prefix", "share", "jupyter", "kernels", "approxtune"); got != want {
		t.Errorf("--prefix: jupyter finds %q, want %q", got, want)
	}
	// --user, in a fresh home with Jupyter's defaults.
	home := filepath.Join(js.dir, "user-home")
	os.MkdirAll(home, 0o755)
	env := append(append([]string{}, js.env...), "HOME="+home, "JUPYTER_DATA_DIR=", "XDG_DATA_HOME=", "JUPYTER_PATH=")
	u := js
	u.env = env
	out, code := u.run(t, 30*time.Second, "", js.bin, "install", "--user")
	if code != 0 {
		t.Fatalf("install --user: exit %d\n%s", code, out)
	}
	if got, want := list(env)["approxtune"], filepath.Join(home, ".local", "share", "jupyter", "kernels", "approxtune"); got != want {
		t.Errorf("--user: jupyter finds %q, want %q\n%s", got, want, out)
	}
	if _, err := os.Stat(filepath.Join(home, ".local", "share", "jupyter", "kernels", "approxtune", "logo-64x64.png")); err != nil {
		t.Error(err)
	}
	// Installing over a spec that ran another binary says which: the
	// kernel Jupyter runs changes (a second install with another prefix).
	spec := filepath.Join(home, ".local", "share", "jupyter", "kernels", "approxtune", "kernel.json")
	if b, err := os.ReadFile(spec); err != nil || strings.Contains(out, "it had run") {
		t.Errorf("a first install: %v; said %q", err, out)
	} else if err := os.WriteFile(spec, bytes.Replace(b, []byte(js.bin), []byte("/old/bin/approxtune"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _ = u.run(t, 30*time.Second, "", js.bin, "install", "--user"); !strings.Contains(out, "; it had run /old/bin/approxtune)") {
		t.Errorf("install over another binary's spec said:\n%s", out)
	}
	// --sys-prefix: its directory is one of Jupyter's data paths.
	prefix, err := jupyter.SysPrefix(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out, code = js.run(t, 60*time.Second, "", "jupyter", "--paths", "--json")
	if code != 0 {
		t.Fatalf("jupyter --paths: exit %d\n%s", code, out)
	}
	var paths struct{ Data []string }
	if i := strings.Index(out, "{"); i >= 0 {
		json.Unmarshal([]byte(out[i:]), &paths)
	}
	want := filepath.Join(prefix, "share", "jupyter")
	found := false
	for _, d := range paths.Data {
		found = found || d == want
	}
	if !found {
		t.Errorf("--sys-prefix would install into %s, not among Jupyter's data paths %v", want, paths.Data)
	}
	// Wrong use.
	for _, args := range [][]string{{"install", "--user", "--prefix", "/x"}, {"install", "extra"}} {
		if out, code := js.run(t, 30*time.Second, "", js.bin, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2\n%s", args, code, out)
		}
	}
}

// approxtune kernel wants one readable connection file.
func TestKernelCommandArgs(t *testing.T) {
	bin := testenv.Build(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"kernel"}, 2, "want one connection file"},
		{[]string{"kernel", "/nonexistent/kernel.json"}, 1, "connection file"},
		{[]string{"kernel", "-h"}, 0, "Usage: approxtune kernel"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, bin, tc.args...).CombinedOutput()
		cancel()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		if code != tc.code || !strings.Contains(string(out), tc.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tc.args, code, out, tc.code, tc.want)
		}
	}
}

// A kernel whose session directory another approxtune has open (a second
// notebook under one $APPROXTUNE_SESSION_DIR) keeps a session of its own,
// and its first cell says so: it had exited at every start, and the
// Notebook said only that its connection failed. A kernel that reopens a
// session says what it found, as the REPL does.
func TestKernelSessionInUse(t *testing.T) {
	testenv.Tool(t, "jupyter-console")
	js := setupJupyter(t)
	dir := filepath.Join(js.dir, "session")
	journal, err := os.ReadFile(filepath.Join(testenv.Root(t), "session", "testdata", "traced-journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(dir, 0o755)
	if err := os.WriteFile(filepath.Join(dir, session.JournalName), journal, 0o644); err != nil {
		t.Fatal(err)
	}
	console := func() string {
		out, code := js.run(t, time.Minute, "status\n", "jupyter", "console", "--kernel", "approxtune", "--simple-prompt", "--no-confirm-exit")
		if code != 0 {
			t.Fatalf("jupyter console: exit %d\n%s", code, out)
		}
		return out
	}
	if out := console(); !strings.Contains(out, "reopened session "+dir) {
		t.Errorf("a kernel reopening a session does not say so:\n%s", out)
	}
	repl := exec.Command(js.bin, "repl", "--dir", dir)
	repl.Env = js.env
	in, err := repl.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := repl.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { in.Close(); repl.Wait() }()
	pid := strconv.Itoa(repl.Process.Pid)
	for held := time.Now().Add(20 * time.Second); time.Now().Before(held); time.Sleep(100 * time.Millisecond) {
		if b, _ := os.ReadFile(filepath.Join(dir, session.LockName)); strings.TrimSpace(string(b)) == pid {
			break
		}
	}
	out := console()
	want := "note: session directory " + dir + " is open in another approxtune (pid " + pid + "), so this kernel keeps its own session in "
	if !strings.Contains(out, want) || !strings.Contains(out, "Out[1]:") {
		t.Errorf("a kernel whose session is held elsewhere: want %q and the status\n%s", want, out)
	}
}
