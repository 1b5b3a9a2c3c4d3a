package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/session"
	"github.com/approxtune/approxtune/sweep"
)

// The browser tests drive real front ends in headless Chromium (chromedriver
// and python3-selenium, scripts in testdata/browser): Debian's classic
// Notebook, which speaks the legacy widget protocol of ipywidgets 6, and a
// small page (web/widgets2) with the ipywidgets 8 widget manager (protocol
// 2), served by jupyter_server. APPROXTUNE_SCREENSHOTS=DIR keeps their key
// screenshots.

// browserPython is the Python with selenium and the Jupyter servers: the
// system's, which Debian's packages install into.
const browserPython = "/usr/bin/python3"

// browserSetup is a jupyterSetup (the kernelspec installed for a fresh
// binary) plus what a browser test needs.
type browserSetup struct {
	jupyterSetup
	chromium, chromedriver string
	shots                  string // where scripts save screenshots; empty: nowhere
}

// setupBrowser finds Chromium, chromedriver, an MPI launcher and selenium
// plus the Python modules named (skipping or failing as testenv.Missing
// does), and sets up Jupyter as setupJupyter does.
func setupBrowser(t *testing.T, modules ...string) browserSetup {
	t.Helper()
	testenv.Launcher(t)
	chromium, driver := testenv.Tool(t, "chromium"), testenv.Tool(t, "chromedriver")
	if _, err := os.Stat(browserPython); err != nil {
		testenv.Missing(t, "%s: %v", browserPython, err)
	}
	imp := "import " + strings.Join(append([]string{"selenium"}, modules...), ", ")
	if out, err := exec.Command(browserPython, "-c", imp).CombinedOutput(); err != nil {
		testenv.Missing(t, "%s -c %q: %v\n%s", browserPython, imp, err, out)
	}
	bs := browserSetup{jupyterSetup: setupJupyter(t), chromium: chromium, chromedriver: driver}
	if d := os.Getenv("APPROXTUNE_SCREENSHOTS"); d != "" {
		abs, err := filepath.Abs(d)
		if err == nil {
			err = os.MkdirAll(abs, 0o755)
		}
		if err != nil {
			t.Fatalf("APPROXTUNE_SCREENSHOTS: %v", err)
		}
		bs.shots = abs
	}
	return bs
}

// server is a Jupyter server the test started: its URL and token.
type server struct {
	url, token string
}

// startServer starts a Jupyter server (python3 -m module args...) on a free
// port of 127.0.0.1 with a fresh token, waits until it answers, and stops
// it, with everything it started, when the test ends. Its log goes to the
// test's log if the test fails.
func (bs browserSetup) startServer(t *testing.T, module, app string, args ...string) server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	tok := make([]byte, 16)
	rand.Read(tok)
	s := server{url: fmt.Sprintf("http://127.0.0.1:%d", port), token: hex.EncodeToString(tok)}
	all := append([]string{"-m", module, "--allow-root", "--no-browser", "--ip", "127.0.0.1",
		fmt.Sprintf("--port=%d", port), "--" + app + ".port_retries=0", "--" + app + ".token=" + s.token}, args...)
	cmd := exec.Command(browserPython, all...)
	cmd.Env = bs.env
	cmd.Dir = bs.dir
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", module, err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		// SIGTERM: the server shuts its kernels down; then nothing may stay.
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			t.Errorf("%s did not stop on SIGTERM within 15 s: killed", module)
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-exited
		if t.Failed() {
			t.Logf("%s log:\n%s", module, log.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(s.url + "/api/status?token=" + s.token)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case <-exited:
			t.Fatalf("%s exited at start:\n%s", module, log.String())
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s does not answer on %s after 60 s:\n%s", module, s.url, log.String())
		}
	}
}

// script runs testdata/browser/name with the browser Python, telling it the
// server, the browser, where the screenshots go and the session directory,
// plus env; it
// must print OK. Everything the script started (chromedriver, Chromium) is
// killed when it ends.
func (bs browserSetup) script(t *testing.T, timeout time.Duration, name string, s server, env ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, browserPython, "-u", filepath.Join(testenv.Root(t), "cmd", "approxtune", "testdata", "browser", name))
	cmd.Env = append(append(slices.Clip(bs.env),
		"ATUNE_URL="+s.url, "ATUNE_TOKEN="+s.token, "ATUNE_SHOTS="+bs.shots,
		"ATUNE_CHROMIUM="+bs.chromium, "ATUNE_CHROMEDRIVER="+bs.chromedriver,
		"ATUNE_SESSION_DIR="+filepath.Join(bs.dir, "session"),
		"PYTHONPATH="+filepath.Join(testenv.Root(t), "cmd", "approxtune", "testdata", "browser")), env...)
	cmd.Dir = bs.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // a browser left behind
	if ctx.Err() != nil {
		t.Fatalf("%s: timed out after %v\n%s", name, timeout, out.String())
	}
	if (err != nil && !errors.Is(err, exec.ErrWaitDelay)) || !strings.Contains(out.String(), "\nOK\n") {
		t.Fatalf("%s: %v\n%s", name, err, out.String())
	}
	return out.String()
}

// buildWidgets2Page installs web/widgets2's pinned packages (npm ci) in a
// temporary copy and bundles the page; it returns the directory to serve.
func buildWidgets2Page(t *testing.T) string {
	t.Helper()
	npm := testenv.Tool(t, "npm")
	testenv.Tool(t, "node")
	src := filepath.Join(testenv.Root(t), "web", "widgets2")
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "src/page.js", "src/index.html"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		os.MkdirAll(filepath.Dir(filepath.Join(dir, f)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"ci", "--no-audit", "--no-fund", "--loglevel=error"}, {"run", "build", "--silent"}} {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, npm, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("npm %s in a copy of web/widgets2: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return filepath.Join(dir, "dist")
}

// classic writes a notebook for the approxtune kernel with these code
// cells, starts Debian's classic Notebook (6) on it, and runs the script
// (testdata/browser/NAME.py) on the notebook (NAME.ipynb); it returns what
// the script printed.
func (bs browserSetup) classic(t *testing.T, name string, cells ...string) string {
	t.Helper()
	var cs []any
	for _, c := range cells {
		cs = append(cs, map[string]any{"cell_type": "code", "execution_count": nil, "metadata": map[string]any{}, "outputs": []any{}, "source": c})
	}
	b, _ := json.Marshal(map[string]any{
		"nbformat": 4, "nbformat_minor": 4, "cells": cs,
		"metadata": map[string]any{"kernelspec": map[string]any{"name": "approxtune", "display_name": "approxtune", "language": "approxtune"}},
	})
	if err := os.WriteFile(filepath.Join(bs.dir, name+".ipynb"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	s := bs.startServer(t, "notebook", "NotebookApp", "--notebook-dir="+bs.dir)
	out := bs.script(t, 2*time.Minute, name+".py", s, "ATUNE_NOTEBOOK="+name+".ipynb")
	t.Log(out)
	return out
}

// finished returns the one sweep the kernel's session journaled, which
// must have ended well with all its results.
func (bs browserSetup) finished(t *testing.T) *session.Sweep {
	t.Helper()
	sws, err := session.ReadJournal(filepath.Join(bs.dir, "session", session.JournalName))
	if err != nil {
		t.Fatal(err)
	}
	if len(sws) != 1 {
		t.Fatalf("journal: %d sweeps, want one", len(sws))
	}
	sw := sws[0]
	if sw.Status != session.StatusOK || len(sw.Results) != sw.Total() {
		t.Errorf("journaled sweep: status %s, %d of %d results", sw.Status, len(sw.Results), sw.Total())
	}
	return sw
}

// Widget protocol 2 (ipywidgets 8's front end, as JupyterLab 4 and Notebook
// 7 have it): 'controls' renders its widgets in the page, changed controls
// reach the kernel's session ('status' shows them), and the evaluate button
// runs a sweep of them, which the session journals.
func TestBrowserWidgetsProtocol2(t *testing.T) {
	bs := setupBrowser(t, "jupyter_server")
	www := buildWidgets2Page(t)
	s := bs.startServer(t, "jupyter_server", "ServerApp", "--ServerApp.root_dir="+bs.dir,
		"--ServerApp.extra_static_paths="+www)
	out := bs.script(t, 2*time.Minute, "widgets2.py", s)
	t.Log(out)
	bs.evaluated(t, out)
}

// The classic Notebook shows a running evaluate's speed-up and error
// figures in the cell, redrawn as results arrive; the last state is what
// 'plot speedup' and 'plot error' draw. At n=3072 the sweep runs 16-17 s
// and shows 9-11 states; at n=2048 it had come down to 6 s and 2-6 states
// once the journal no longer synced at every configuration, and a clean
// CI run saw 2 of the 3 the test wants.
func TestBrowserLiveFigures(t *testing.T) {
	bs := setupBrowser(t, "notebook")
	bs.classic(t, "live",
		"workload summa n=3072\nspace b=64,128,256 grid=1x4,2x2,4x1\npolicy conditional,eager\ntolerance 2^-1,2^-3\nreps 1",
		"evaluate")
	bs.finished(t)
}

// The classic Notebook (legacy widgets, ipywidgets 6) renders 'controls';
// the tolerance and policy selections and b's text box reach the session,
// and the evaluate button runs a sweep of them, which the session journals.
func TestBrowserControlsClassic(t *testing.T) {
	bs := setupBrowser(t, "notebook")
	out := bs.classic(t, "controls", "workload summa n=512\nspace b=64,128 grid=1x4,2x2\nreps 1", "controls")
	bs.evaluated(t, out)
}

// evaluated checks that the one sweep journaled is an evaluate of what the
// script (widgets.py's change_controls) printed it chose: POLICIES=p,q,
// TOLERANCES=2^-k,... and B=128.
func (bs browserSetup) evaluated(t *testing.T, out string) {
	t.Helper()
	chosen := map[string][]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(l, "="); ok && (k == "POLICIES" || k == "TOLERANCES" || k == "B") {
			chosen[k] = strings.Split(v, ",")
			slices.Sort(chosen[k])
		}
	}
	sw := bs.finished(t)
	if sw.Spec.Mode != sweep.ModeEvaluate {
		t.Errorf("journaled sweep: mode %s, want evaluate", sw.Spec.Mode)
	}
	pols := slices.Sorted(slices.Values(sw.Spec.Policies))
	var tols []string
	for _, x := range sw.Spec.Tolerances {
		tols = append(tols, format.Tolerance(float64(x)))
	}
	slices.Sort(tols)
	var b []int
	json.Unmarshal(sw.Spec.Space["b"], &b)
	if !slices.Equal(pols, chosen["POLICIES"]) || !slices.Equal(tols, chosen["TOLERANCES"]) || fmt.Sprint(b) != fmt.Sprint(chosen["B"]) {
		t.Errorf("journaled policies %v, tolerances %v, b %s; chosen %v", pols, tols, sw.Spec.Space["b"], chosen)
	}
}
