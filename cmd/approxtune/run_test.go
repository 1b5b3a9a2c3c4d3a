package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/jupyter"
	"github.com/approxtune/approxtune/internal/notebook"
	"github.com/approxtune/approxtune/internal/testenv"
)

// sweepNotebook is a small notebook: a markdown cell, a cell that sets up
// and evaluates a tiny sweep (2 configurations, 2 tolerances), a plot, a
// blank cell and the best table.
func sweepNotebook() *notebook.Notebook {
	nb := notebook.New()
	md := notebook.NewMarkdown("# A tiny sweep\n\nsumma on a 2x2 grid, *eager*.")
	md.Metadata["tags"] = []any{"intro"}
	nb.Cells = []notebook.Cell{md,
		notebook.NewCode("workload summa n=256\nspace b=64,128 grid=2x2\npolicy eager\ntolerance 2^-1,2^-3\nevaluate"),
		notebook.NewCode("plot speedup"),
		notebook.NewCode(""),
		notebook.NewCode("table best"),
	}
	return nb
}

func writeNotebook(t *testing.T, path string, nb *notebook.Notebook) {
	t.Helper()
	if err := notebook.WriteFile(path, nb); err != nil {
		t.Fatal(err)
	}
}

// runApproxtune runs bin with args in dir and returns its stdout, stderr
// and exit status.
func runApproxtune(t *testing.T, dir, bin string, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	var so, se strings.Builder
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%v: timed out\nstderr:\n%s", args, se.String())
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return so.String(), se.String(), code
}

// validate checks a notebook file with the OS's nbformat (python3-nbformat),
// as read and as the raw JSON.
func validate(t *testing.T, path string) {
	t.Helper()
	var cands [][]string
	if py, err := jupyter.JupyterPython(); err == nil {
		cands = append(cands, py)
	}
	cands = append(cands, []string{"/usr/bin/python3"}, []string{"python3"})
	script := `import json, nbformat, sys
nbformat.validate(nbformat.read(sys.argv[1], as_version=4))
with open(sys.argv[1]) as f:
    nbformat.validate(nbformat.from_dict(json.load(f)))
print("valid")
`
	for _, py := range cands {
		if exec.Command(py[0], append(py[1:], "-c", "import nbformat")...).Run() != nil {
			continue
		}
		out, err := exec.Command(py[0], append(py[1:], "-c", script, path)...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "valid") {
			b, _ := os.ReadFile(path)
			t.Fatalf("nbformat rejects %s: %v\n%s\n%s", path, err, out, b)
		}
		return
	}
	testenv.Missing(t, "a Python with nbformat (python3-nbformat) among %v", cands)
}

func readNotebook(t *testing.T, path string) *notebook.Notebook {
	t.Helper()
	nb, err := notebook.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return nb
}

func text(v any) string {
	s, _ := v.(string)
	return s
}

// outputOf returns the first output of a cell of type typ, or fails.
func outputOf(t *testing.T, c notebook.Cell, typ notebook.OutputType) notebook.Output {
	t.Helper()
	for _, o := range c.Outputs {
		if o.Type == typ {
			return o
		}
	}
	t.Fatalf("cell %q has no %s output: %+v", c.Source, typ, c.Outputs)
	return notebook.Output{}
}

// tableShape is the best table's text without what varies from run to run
// (numbers, the chosen configurations, column widths): its title, header,
// the policy and tolerance of each row, and the labels of the
// best-configuration, best-class and noise-floor lines.
func tableShape(text string) string {
	tol := regexp.MustCompile(`^(2\^-?\d+|[0-9.]+)$`)
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		f := strings.Fields(l)
		switch {
		case strings.HasPrefix(l, "best configuration"), strings.HasPrefix(l, "best class"), strings.HasPrefix(l, "noise floor"):
			l, _, _ = strings.Cut(l, ":")
		case len(f) > 2 && tol.MatchString(f[1]):
			l = f[0] + " " + f[1]
		}
		b.WriteString(strings.Join(strings.Fields(l), " ") + "\n")
	}
	return b.String()
}

// approxtune run executes a notebook: outputs and counts stored, the
// markdown as it was, a figure as PNG, valid for nbformat; a line per cell
// on stderr; the agent stopped at the end.
func TestRunNotebook(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	t.Cleanup(func() { testenv.NoneLeft(t, bin, "agent") })
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.ipynb"), filepath.Join(dir, "out.ipynb")
	writeNotebook(t, in, sweepNotebook())
	before, _ := os.ReadFile(in)
	_, errs, code := runApproxtune(t, dir, bin, "run", in, "-o", out, "--dir", filepath.Join(dir, "session"))
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, errs)
	}
	if after, _ := os.ReadFile(in); !bytes.Equal(before, after) {
		t.Error("-o given, yet the input notebook changed")
	}
	for _, want := range []string{"[1/3] cell 2: workload summa n=256 ... ok ", "[2/3] cell 3: plot speedup ... ok ",
		"[3/3] cell 5: table best ... ok ", "wrote " + out} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	validate(t, out)
	nb := readNotebook(t, out)
	want := sweepNotebook()
	if len(nb.Cells) != len(want.Cells) {
		t.Fatalf("%d cells, want %d", len(nb.Cells), len(want.Cells))
	}
	md := nb.Cells[0]
	if md.Type != notebook.Markdown || md.Source != want.Cells[0].Source || md.ID != readNotebook(t, in).Cells[0].ID ||
		len(md.Metadata["tags"].([]any)) != 1 {
		t.Errorf("the markdown cell changed: %+v", md)
	}
	for i, n := range map[int]int{1: 1, 2: 2, 4: 3} {
		if c := nb.Cells[i]; c.ExecutionCount == nil || *c.ExecutionCount != n {
			t.Errorf("cell %d: execution count %v, want %d", i+1, c.ExecutionCount, n)
		}
	}
	if c := nb.Cells[3]; c.ExecutionCount != nil || len(c.Outputs) != 0 {
		t.Errorf("the blank cell ran: %+v", c)
	}
	// The sweep cell: what it printed, the final display, the best table.
	ev := nb.Cells[1]
	if s := outputOf(t, ev, notebook.Stream); !strings.Contains(s.Text, "starting a local agent: 4 ranks under mpirun") {
		t.Errorf("stream %q", s.Text)
	}
	if d := outputOf(t, ev, notebook.DisplayData); !strings.Contains(text(d.Data["text/plain"]), "sweep 1 evaluate summa: 4/4 runs") ||
		!strings.Contains(text(d.Data["text/plain"]), "(ok)") || !strings.Contains(text(d.Data["text/html"]), "approxtune-sweep") {
		t.Errorf("the display is not the final one: %v", d.Data)
	}
	if r := outputOf(t, ev, notebook.ExecuteResult); *r.ExecutionCount != 1 || !strings.Contains(text(r.Data["text/html"]), "approxtune-best") {
		t.Errorf("execute_result %+v", r)
	}
	fig := outputOf(t, nb.Cells[2], notebook.DisplayData)
	if png := text(fig.Data["image/png"]); !strings.HasPrefix(png, "iVBORw0KGgo") {
		t.Errorf("no PNG in the plot cell: %.40q", png)
	}
	// The sweep's display keeps its final figures: speed-up and error in
	// the HTML, the speed-up one as 'plot speedup' draws it, and both on
	// one canvas as image/svg+xml and image/png.
	d := outputOf(t, ev, notebook.DisplayData)
	if png := text(d.Data["image/png"]); !strings.HasPrefix(png, "iVBORw0KGgo") || !strings.Contains(text(d.Data["image/svg+xml"]), "<svg") {
		t.Errorf("the sweep's display has no image/png and image/svg+xml: %v", keys(d.Data))
	}
	imgs := regexp.MustCompile(`<img alt="(speedup|error)"[^>]* src="data:image/svg\+xml;base64,([^"]+)"`).FindAllStringSubmatch(text(d.Data["text/html"]), -1)
	if len(imgs) != 2 || imgs[0][1] != "speedup" || imgs[1][1] != "error" {
		t.Fatalf("the sweep's display shows %d figures", len(imgs))
	}
	if svg, err := base64.StdEncoding.DecodeString(imgs[0][2]); err != nil || string(svg) != text(fig.Data["image/svg+xml"]) {
		t.Errorf("the display's speed-up figure is not what 'plot speedup' drew (%v)", err)
	}
	best := outputOf(t, nb.Cells[4], notebook.ExecuteResult)
	if shape := tableShape(text(best.Data["text/plain"])); !strings.Contains(shape, "eager 2^-1\n") || !strings.Contains(shape, "eager 2^-3\n") ||
		!strings.Contains(shape, "best configuration (least reference time)\n") {
		t.Errorf("best table:\n%s", text(best.Data["text/plain"]))
	}
	if b, _ := os.ReadFile(out); bytes.Contains(b, []byte("display_id")) {
		t.Error("a display_id was stored")
	}
}

// The first failing cell stops the run: exit 1, the cell named, and the
// notebook written back in place with that cell's error output.
func TestRunStopsAtFailingCell(t *testing.T) {
	bin := testenv.Build(t)
	t.Cleanup(func() { testenv.NoneLeft(t, bin, "agent") })
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.ipynb")
	nb := notebook.New()
	nb.Cells = []notebook.Cell{notebook.NewMarkdown("setup"), notebook.NewCode("workload summa n=256"),
		notebook.NewCode("policy eager\nspace b=64,zero\ntolerance 2^-1"), notebook.NewCode("status")}
	nb.Cells[3].ExecutionCount = notebook.Count(9)
	nb.Cells[3].Outputs = []notebook.Output{{Type: notebook.Stream, Name: "stdout", Text: "old\n"}}
	writeNotebook(t, path, nb)
	_, errs, code := runApproxtune(t, dir, bin, "run", "--dir", filepath.Join(dir, "session"), path)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s", code, errs)
	}
	for _, want := range []string{"[1/3] cell 2: workload summa n=256 ... ok", "[2/3] cell 3: policy eager ... failed",
		`cell 3 (policy eager) failed: line 2: column 12: b: "zero" is not valid`, "wrote " + path} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	if strings.Contains(errs, "cell 4") {
		t.Errorf("the run went on:\n%s", errs)
	}
	validate(t, path)
	got := readNotebook(t, path)
	c := got.Cells[2]
	e := outputOf(t, c, notebook.Error)
	if *c.ExecutionCount != 2 || e.EName != "CommandError" || len(e.Traceback) < 2 || e.Traceback[0] != "line 2: space b=64,zero" {
		t.Errorf("failing cell %+v", c)
	}
	if c := got.Cells[3]; *c.ExecutionCount != 9 || len(c.Outputs) != 1 || c.Outputs[0].Text != "old\n" {
		t.Errorf("the cell after the failure changed: %+v", c)
	}
}

// A sweep that stops in a notebook run (here a configuration that hangs,
// stopped at the deadline) leaves its session's directory and says how to
// run just the runs left: the cell's error says 'resume', a command of a
// session the run does not keep open.
func TestRunSaysHowToResume(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	t.Cleanup(func() { testenv.NoneLeft(t, bin, "agent") })
	dir := t.TempDir()
	path := filepath.Join(dir, "hang.ipynb")
	nb := notebook.New()
	nb.Cells = []notebook.Cell{notebook.NewCode("workload synthetic steps=4\nspace hang_rank=-1,1\npolicy eager\ntolerance 2^-1\ndeadline 3s"), notebook.NewCode("tune")}
	writeNotebook(t, path, nb)
	sess := filepath.Join(dir, "session")
	_, errs, code := runApproxtune(t, dir, bin, "run", "--dir", sess, path)
	if want := "approxtune run: sweep 1 stopped with 1 of 2 runs to go; to run just those: approxtune repl --dir " + sess + ", then 'resume'"; code != 1 || !strings.Contains(errs, want) {
		t.Errorf("exit %d; want 1 and %q in\n%s", code, want, errs)
	}
}

// Wrong use: exit 2 and a message.
func TestRunUsage(t *testing.T) {
	bin := testenv.Build(t)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "x.json"), []byte(`{"a": 1}`), 0o644)
	os.WriteFile(filepath.Join(dir, "v3.ipynb"), []byte(`{"nbformat": 3, "nbformat_minor": 0, "worksheets": []}`), 0o644)
	writeNotebook(t, filepath.Join(dir, "ok.ipynb"), notebook.New())
	ok, err := os.ReadFile(filepath.Join(dir, "ok.ipynb"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cut.ipynb"), ok[:len(ok)/2], 0o644)
	os.WriteFile(filepath.Join(dir, "text.ipynb"), []byte("workload synthetic\nevaluate\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "v5.ipynb"), bytes.Replace(ok, []byte(`"nbformat": 4`), []byte(`"nbformat": 5`), 1), 0o644)
	py := notebook.New()
	py.Metadata["kernelspec"] = map[string]any{"name": "python3", "display_name": "Python 3", "language": "python"}
	writeNotebook(t, filepath.Join(dir, "py.ipynb"), py)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run"}, 2, "want one notebook, got 0"},
		{[]string{"run", "ok.ipynb", "ok.ipynb"}, 2, "want one notebook, got 2"},
		{[]string{"run", "--bogus", "ok.ipynb"}, 2, "flag provided but not defined"},
		{[]string{"run", "missing.ipynb"}, 2, "cannot read the notebook"},
		{[]string{"run", "x.json"}, 2, "not a Jupyter notebook"},
		{[]string{"run", "v3.ipynb"}, 2, "v3.ipynb: notebook: nbformat 3: only nbformat 4 notebooks are read (convert it: jupyter nbconvert --to notebook --nbformat 4)"},
		{[]string{"run", "v5.ipynb"}, 2, "v5.ipynb: notebook: nbformat 5: only nbformat 4"},
		{[]string{"run", "cut.ipynb"}, 2, "cut.ipynb: notebook: not a JSON notebook: it ends before its JSON does (cut short?): unexpected EOF"},
		{[]string{"run", "text.ipynb"}, 2, "text.ipynb: notebook: not a JSON notebook: invalid character"},
		// Another kernel's notebook: its outputs were replaced by the
		// errors of its cells run as commands.
		{[]string{"run", "py.ipynb"}, 2, `py.ipynb is a notebook of the kernel "python3", not approxtune's`},
		// An output that cannot be written: said before any cell runs,
		// not after the whole notebook ran.
		{[]string{"run", "ok.ipynb", "-o", "missing/out.ipynb"}, 2, "cannot write missing/out.ipynb: no such file or directory"},
		{[]string{"run", "-h"}, 0, "Usage: approxtune run"},
	} {
		_, errs, code := runApproxtune(t, dir, bin, tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tc.args, code, errs, tc.code, tc.want)
		}
		// A bad notebook: one line, and the file as it was.
		if in := tc.args[len(tc.args)-1]; code == 2 && strings.HasSuffix(in, ".ipynb") && in != "ok.ipynb" && !strings.Contains(in, "/") {
			if strings.Count(errs, "\n") != 1 {
				t.Errorf("%v: not one line: %q", tc.args, errs)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, in)); in != "missing.ipynb" && len(b) == 0 {
				t.Errorf("%v: the notebook was emptied", tc.args)
			}
		}
	}
	// Asked for, a command's help goes to standard output ('approxtune
	// help run | less' had shown an empty page).
	if out, errs, code := runApproxtune(t, dir, bin, "help", "run"); code != 0 || !strings.Contains(out, "first failing cell") || errs != "" {
		t.Errorf("help run: exit %d, standard output %q, standard error %q", code, out, errs)
	}
	// A session's command, as the docs name them, is explained too
	// ('approxtune help rank' had said unknown command).
	if out, errs, code := runApproxtune(t, dir, bin, "help", "rank"); code != 0 || !strings.Contains(out, "rank is a command of approxtune's sessions") || !strings.Contains(out, "performance classes") || errs != "" {
		t.Errorf("help rank: exit %d, standard output %q, standard error %q", code, out, errs)
	}
	out, _, _ := runApproxtune(t, dir, bin, "help")
	if !strings.Contains(out, "approxtune run [--dir DIR] [--force] NB.ipynb [-o OUT.ipynb]") {
		t.Errorf("usage lacks run:\n%s", out)
	}
}

// The quickstart notebook (notebooks/quickstart.ipynb, the README's main
// job) runs under approxtune run and under Jupyter itself (nbconvert
// --execute, through the kernel): both results validate as nbformat 4, hold
// the same cells and outputs (MIME types, counts), a PNG for every plot
// cell, and the same best table.
func TestQuickstartNotebook(t *testing.T) {
	testenv.Launcher(t)
	testenv.Tool(t, "jupyter-nbconvert")
	js := setupJupyter(t)
	src, err := os.ReadFile(filepath.Join("..", "..", "notebooks", "quickstart.ipynb"))
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(js.dir, "quickstart.ipynb")
	if err := os.WriteFile(in, src, 0o644); err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(js.dir, "run.ipynb")
	_, errs, code := runApproxtune(t, js.dir, js.bin, "run", in, "-o", ran, "--dir", filepath.Join(js.dir, "run-session"))
	if code != 0 {
		t.Fatalf("approxtune run: exit %d\n%s", code, errs)
	}
	out, status := js.run(t, 4*time.Minute, "", "jupyter", "nbconvert", "--to", "notebook", "--execute",
		"--ExecutePreprocessor.timeout=200", "--output", "nbconvert.ipynb", in)
	if status != 0 {
		t.Fatalf("nbconvert: exit %d\n%s", status, out)
	}
	converted := filepath.Join(js.dir, "nbconvert.ipynb")
	validate(t, ran)
	validate(t, converted)
	ours, theirs := readNotebook(t, ran), readNotebook(t, converted)
	if len(ours.Cells) != len(theirs.Cells) {
		t.Fatalf("%d cells, nbconvert %d", len(ours.Cells), len(theirs.Cells))
	}
	bestCell, plots := -1, 0
	for i := range ours.Cells {
		a, b := ours.Cells[i], theirs.Cells[i]
		if a.Type != b.Type || a.Source != b.Source || a.ID != b.ID || (a.ExecutionCount == nil) != (b.ExecutionCount == nil) ||
			(a.ExecutionCount != nil && *a.ExecutionCount != *b.ExecutionCount) {
			t.Errorf("cell %d: ours %+v\nnbconvert %+v", i+1, a, b)
			continue
		}
		if a.Source == "table best" {
			bestCell = i
		}
		if len(a.Outputs) != len(b.Outputs) {
			t.Errorf("cell %d: outputs %+v\nnbconvert %+v", i+1, a.Outputs, b.Outputs)
			continue
		}
		for j := range a.Outputs {
			oa, ob := a.Outputs[j], b.Outputs[j]
			if oa.Type != ob.Type || oa.Name != ob.Name || len(oa.Data) != len(ob.Data) {
				t.Errorf("cell %d output %d: %s %v, nbconvert %s %v", i+1, j+1, oa.Type, keys(oa.Data), ob.Type, keys(ob.Data))
			}
			for k := range ob.Data {
				if _, ok := oa.Data[k]; !ok {
					t.Errorf("cell %d output %d lacks %s", i+1, j+1, k)
				}
			}
		}
		if strings.HasPrefix(a.Source, "plot ") {
			plots++
			for _, nb := range []notebook.Cell{a, b} {
				if png := text(outputOf(t, nb, notebook.DisplayData).Data["image/png"]); !strings.HasPrefix(png, "iVBORw0KGgo") {
					t.Errorf("cell %d (%s): no PNG: %.40q", i+1, a.Source, png)
				}
			}
		}
	}
	if plots < 2 || bestCell < 0 {
		t.Fatalf("the quickstart has %d plot cells and table best at %d: want plots and a table", plots, bestCell)
	}
	best := func(nb *notebook.Notebook) string {
		return tableShape(text(outputOf(t, nb.Cells[bestCell], notebook.ExecuteResult).Data["text/plain"]))
	}
	a, b := best(ours), best(theirs)
	if a != b {
		t.Errorf("the best table differs:\n%s\nnbconvert:\n%s", a, b)
	}
	for _, row := range []string{"conditional 2^-1", "conditional 2^-5", "eager 2^-1", "eager 2^-3", "eager 2^-5"} {
		if !strings.Contains(a, row+"\n") {
			t.Errorf("best table lacks %s:\n%s", row, a)
		}
	}
}

func keys(b notebook.Bundle) []string {
	var ks []string
	for k := range b {
		ks = append(ks, k)
	}
	return ks
}

// A REPL session exported as a notebook, then executed again by approxtune
// run: the same commands in the same order, the same table.
func TestExportNotebookRunsAgain(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	t.Cleanup(func() { testenv.NoneLeft(t, bin, "agent") })
	dir := t.TempDir()
	exported, rerun := filepath.Join(dir, "session.ipynb"), filepath.Join(dir, "rerun.ipynb")
	script := `# A tiny sweep
# of summa on 4 ranks
workload summa n=256
space b=64,128 grid=2x2
policy eager
tolerance 2^-1,2^-3
evaluate
table best

# The figure
plot speedup
export notebook ` + exported + "\n"
	out, errs, code := runScript(t, bin, script)
	if code != 0 {
		t.Fatalf("repl: exit %d\n%s\n%s", code, out, errs)
	}
	if !strings.Contains(out, "wrote 7 commands to "+exported) {
		t.Errorf("repl output lacks the export:\n%s", out)
	}
	validate(t, exported)
	ex := readNotebook(t, exported)
	var cells []string
	for _, c := range ex.Cells {
		cells = append(cells, string(c.Type)+": "+c.Source)
	}
	want := []string{"markdown: A tiny sweep\nof summa on 4 ranks", "code: workload summa n=256", "code: space b=64,128 grid=2x2",
		"code: policy eager", "code: tolerance 2^-1,2^-3", "code: evaluate", "code: table best", "markdown: The figure", "code: plot speedup"}
	if strings.Join(cells, "|") != strings.Join(want, "|") {
		t.Fatalf("exported cells:\n%q\nwant\n%q", cells, want)
	}
	fig := outputOf(t, ex.Cells[8], notebook.DisplayData)
	if !strings.HasPrefix(text(fig.Data["image/png"]), "iVBORw0KGgo") {
		t.Error("the exported plot cell has no PNG")
	}
	if d := outputOf(t, ex.Cells[5], notebook.DisplayData); !strings.Contains(text(d.Data["text/plain"]), "4/4 runs") {
		t.Errorf("exported sweep display %v", d.Data)
	}

	_, errs, code = runApproxtune(t, dir, bin, "run", exported, "-o", rerun, "--dir", filepath.Join(dir, "rerun-session"))
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errs)
	}
	validate(t, rerun)
	re := readNotebook(t, rerun)
	if len(re.Cells) != len(ex.Cells) {
		t.Fatalf("%d cells after run, %d exported", len(re.Cells), len(ex.Cells))
	}
	n := 0
	for i := range re.Cells {
		a, b := ex.Cells[i], re.Cells[i]
		if a.Type != b.Type || a.Source != b.Source || a.ID != b.ID {
			t.Errorf("cell %d: exported %q, run %q", i+1, a.Source, b.Source)
		}
		if a.Type != notebook.Code {
			continue
		}
		if n++; *a.ExecutionCount != n || *b.ExecutionCount != n {
			t.Errorf("cell %d: execution count %d exported, %d run", i+1, *a.ExecutionCount, *b.ExecutionCount)
		}
	}
	// The plot cell: the figure alone, as the kernel shows it (the REPL's
	// "wrote FILE" was exported besides, a result the kernel never makes).
	var pa, pb []notebook.OutputType
	for _, o := range ex.Cells[8].Outputs {
		pa = append(pa, o.Type)
	}
	for _, o := range re.Cells[8].Outputs {
		pb = append(pb, o.Type)
	}
	if !slices.Equal(pa, pb) {
		t.Errorf("plot cell outputs: exported %v, run %v", pa, pb)
	}
	for _, i := range []int{5, 6} { // evaluate and table best: the same outputs
		var ta, tb []notebook.OutputType
		for _, o := range ex.Cells[i].Outputs {
			ta = append(ta, o.Type)
		}
		for _, o := range re.Cells[i].Outputs {
			tb = append(tb, o.Type)
		}
		if len(ta) != len(tb) || len(ta) == 0 || ta[len(ta)-1] != tb[len(tb)-1] {
			t.Errorf("cell %d outputs: exported %v, run %v", i+1, ta, tb)
		}
	}
	ta := text(outputOf(t, ex.Cells[6], notebook.ExecuteResult).Data["text/plain"])
	tb := text(outputOf(t, re.Cells[6], notebook.ExecuteResult).Data["text/plain"])
	if tableShape(ta) != tableShape(tb) || !strings.Contains(tableShape(ta), "eager 2^-3\n") {
		t.Errorf("table best, exported:\n%s\nrun:\n%s", ta, tb)
	}
	if !strings.HasPrefix(text(outputOf(t, re.Cells[8], notebook.DisplayData).Data["image/png"]), "iVBORw0KGgo") {
		t.Error("the plot cell run again has no PNG")
	}
}

// A notebook saved with the controls shown gets a note from run: what the
// controls ran is the session's, not the notebook's cells, and a run
// repeats the cells only (a notebook review's saved notebook had run 4
// configurations where its controls had set 6, saying nothing).
func TestRunNotesSavedControls(t *testing.T) {
	bin := testenv.Build(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "controls.ipynb")
	nb := notebook.New()
	nb.Cells = []notebook.Cell{notebook.NewCode("workload summa n=256"), notebook.NewCode("controls"), notebook.NewCode("status")}
	nb.Cells[1].Outputs = []notebook.Output{{Type: notebook.DisplayData, Data: notebook.Bundle{
		jupyter.WidgetViewMIME: map[string]any{"model_id": "abc", "version_major": 2, "version_minor": 0},
		"text/plain":           "approxtune controls ('controls' shows them again)"}}}
	writeNotebook(t, path, nb)
	_, errs, code := runApproxtune(t, dir, bin, "run", "--dir", filepath.Join(dir, "session"), path)
	want := "approxtune run: cell 2 (controls) held controls when the notebook was saved: what they ran is not in its cells, so this run does not repeat it"
	if code != 0 || !strings.Contains(errs, want) {
		t.Errorf("exit %d; want 0 and %q\n%s", code, want, errs)
	}
	plain := filepath.Join(dir, "plain.ipynb")
	writeNotebook(t, plain, withoutOutputs(nb))
	if _, errs, _ := runApproxtune(t, dir, bin, "run", "--dir", filepath.Join(dir, "session2"), plain); strings.Contains(errs, "held controls") {
		t.Errorf("a notebook whose controls cell was never run is noted:\n%s", errs)
	}
}

// withoutOutputs is nb with every output cleared.
func withoutOutputs(nb *notebook.Notebook) *notebook.Notebook {
	c := *nb
	c.Cells = slices.Clone(nb.Cells)
	for i := range c.Cells {
		c.Cells[i].Outputs = nil
	}
	return &c
}

// approxtune run goes on past a cell tagged raises-exception when it
// fails, as nbconvert does ('export notebook' tags a sweep the session saw
// interrupted or fail), and stops at an untagged one.
func TestRunGoesOnPastRaisesException(t *testing.T) {
	bin := testenv.Build(t)
	dir := t.TempDir()
	nb := notebook.New()
	for _, src := range []string{"workload summa n=256", "table bset", "status"} {
		nb.Cells = append(nb.Cells, notebook.NewCode(src))
	}
	nb.Cells[1].Metadata["tags"] = []any{"raises-exception"}
	path := filepath.Join(dir, "tagged.ipynb")
	if err := notebook.WriteFile(path, nb); err != nil {
		t.Fatal(err)
	}
	_, errs, code := runApproxtune(t, dir, bin, "run", path, "-o", filepath.Join(dir, "out.ipynb"), "--dir", filepath.Join(dir, "s1"))
	if code != 0 || !strings.Contains(errs, "cell 2 (table bset) failed, as its raises-exception tag allows; going on") || !strings.Contains(errs, "[3/3] cell 3: status ... ok") {
		t.Errorf("run of a notebook whose failing cell is tagged: exit %d\n%s", code, errs)
	}
	nb.Cells[1].Metadata = map[string]any{}
	if err := notebook.WriteFile(path, nb); err != nil {
		t.Fatal(err)
	}
	if _, errs, code = runApproxtune(t, dir, bin, "run", path, "-o", filepath.Join(dir, "out2.ipynb"), "--dir", filepath.Join(dir, "s2")); code != 1 || strings.Contains(errs, "cell 3") {
		t.Errorf("run of a notebook whose failing cell is untagged: exit %d; want 1, cell 3 not run\n%s", code, errs)
	}
}
