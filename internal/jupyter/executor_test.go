package jupyter

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/notebook"
	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/session"
	"github.com/approxtune/approxtune/sweep"
)

// Consecutive streams of one name make one output; another name, or
// another output between, starts a new one.
func TestCollectorStreamMerge(t *testing.T) {
	c := &collector{}
	c.publish("status", map[string]any{"execution_state": "busy"})
	c.publish("stream", map[string]any{"name": "stdout", "text": "a\n"})
	c.publish("stream", map[string]any{"name": "stdout", "text": "b\n"})
	c.publish("stream", map[string]any{"name": "stderr", "text": "warn\n"})
	c.publish("stream", map[string]any{"name": "stdout", "text": "c"})
	c.publish("display_data", map[string]any{"data": bundle{"text/plain": "fig"}, "metadata": map[string]any{}, "transient": map[string]any{}})
	c.publish("stream", map[string]any{"name": "stdout", "text": "d"})
	c.publish("stream", map[string]any{"name": "stdout", "text": "e"})
	outs := c.outputs()
	want := []string{"stdout:a\nb\n", "stderr:warn\n", "stdout:c", "display_data", "stdout:de"}
	if len(outs) != len(want) {
		t.Fatalf("%d outputs: %+v", len(outs), outs)
	}
	for i, o := range outs {
		got := string(o.Type)
		if o.Type == notebook.Stream {
			got = o.Name + ":" + o.Text
		}
		if got != want[i] {
			t.Errorf("output %d: %q, want %q", i, got, want[i])
		}
	}
}

// update_display_data replaces the data of the output with its display_id,
// where it is; an unknown id changes nothing; the id is not stored.
func TestCollectorUpdateDisplay(t *testing.T) {
	c := &collector{}
	disp := func(typ, id, text string) {
		c.publish(typ, map[string]any{"data": bundle{"text/plain": text, "text/html": "<b>" + text + "</b>"},
			"metadata": map[string]any{"n": len(text)}, "transient": map[string]any{"display_id": id}})
	}
	disp("display_data", "d1", "first 0/4")
	c.publish("stream", map[string]any{"name": "stdout", "text": "between\n"})
	disp("display_data", "d2", "second")
	disp("update_display_data", "d1", "first 2/4")
	disp("update_display_data", "nobody", "lost")
	disp("update_display_data", "d1", "first 4/4 (ok)")
	c.publish("execute_result", map[string]any{"execution_count": 7, "data": bundle{"text/plain": "best"}, "metadata": map[string]any{}})
	c.publish("error", map[string]any{"ename": "CommandError", "evalue": "bad", "traceback": []string{"line 1: x", "CommandError: bad"}})
	outs := c.outputs()
	if len(outs) != 5 {
		t.Fatalf("%d outputs: %+v", len(outs), outs)
	}
	if outs[0].Type != notebook.DisplayData || outs[0].Data["text/plain"] != "first 4/4 (ok)" || outs[0].Data["text/html"] != "<b>first 4/4 (ok)</b>" ||
		outs[0].Metadata["n"] != json.Number("14") {
		t.Errorf("updated display: %+v", outs[0])
	}
	if outs[1].Text != "between\n" || outs[2].Data["text/plain"] != "second" {
		t.Errorf("other outputs changed: %+v", outs[1:3])
	}
	if outs[3].Type != notebook.ExecuteResult || outs[3].ExecutionCount == nil || *outs[3].ExecutionCount != 7 || outs[3].Data["text/plain"] != "best" {
		t.Errorf("execute_result: %+v", outs[3])
	}
	if outs[4].Type != notebook.Error || outs[4].EName != "CommandError" || outs[4].EValue != "bad" || len(outs[4].Traceback) != 2 {
		t.Errorf("error: %+v", outs[4])
	}
	nb := notebook.New()
	cell := notebook.NewCode("evaluate")
	cell.Outputs = outs
	nb.Cells = []notebook.Cell{cell}
	b, err := notebook.Marshal(nb)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "display_id") || strings.Contains(string(b), "transient") || strings.Contains(string(b), "lost") {
		t.Errorf("transient data stored:\n%s", b)
	}
}

// clear_output clears, with wait=true before the next output.
func TestCollectorClear(t *testing.T) {
	c := &collector{}
	c.publish("stream", map[string]any{"name": "stdout", "text": "a"})
	c.publish("clear_output", map[string]any{"wait": true})
	if len(c.outputs()) != 1 {
		t.Fatal("cleared before the next output")
	}
	c.publish("stream", map[string]any{"name": "stdout", "text": "b"})
	if o := c.outputs(); len(o) != 1 || o[0].Text != "b" {
		t.Fatalf("%+v", o)
	}
	c.publish("clear_output", map[string]any{"wait": false})
	if len(c.outputs()) != 0 {
		t.Fatal("not cleared")
	}
}

// A recorded sweep replays through the kernel's cell output as the kernel
// shows it: the printed line as a stream, the final display, and the best
// table as the execute_result with its HTML.
func TestReplaySweepStep(t *testing.T) {
	sw := handSweep(sweep.ModeEvaluate)
	sw.Status = "ok"
	table := session.TableBest(sw)
	st := session.Step{Line: "evaluate", Last: sw, Events: []session.OutputEvent{
		{Text: "starting a local agent: 4 ranks under mpirun"},
		{Progress: &session.Progress{Sweep: sw, Done: 7, Total: 8, Note: "a note"}},
		{Progress: &session.Progress{Sweep: sw, Done: 8, Total: 8, Final: true, Elapsed: 2 * time.Second}},
		{Text: table},
	}}
	outs := replay(st, 3, displayIDs(randomID(8), new(atomic.Uint64)))
	if len(outs) != 3 {
		t.Fatalf("%d outputs: %+v", len(outs), outs)
	}
	if outs[0].Type != notebook.Stream || outs[0].Text != "starting a local agent: 4 ranks under mpirun\n" {
		t.Errorf("stream %+v", outs[0])
	}
	plain, _ := outs[1].Data["text/plain"].(string)
	if outs[1].Type != notebook.DisplayData || !strings.Contains(plain, "8/8 runs, 2s elapsed (ok)") || !strings.Contains(plain, "a note") {
		t.Errorf("display %+v", outs[1])
	}
	html, _ := outs[2].Data["text/html"].(string)
	if outs[2].Type != notebook.ExecuteResult || *outs[2].ExecutionCount != 3 || strings.TrimRight(outs[2].Data["text/plain"].(string), "\n") != strings.TrimRight(table, "\n") ||
		!strings.Contains(html, `class="approxtune-best"`) {
		t.Errorf("execute_result %+v", outs[2])
	}
	// A figure: display_data with the PNG as base64.
	f := &session.Figure{Name: "speedup", PNG: []byte("\x89PNG"), SVG: []byte("<svg/>"), Summary: "speed-up\n"}
	outs = replay(session.Step{Line: "plot speedup", Events: []session.OutputEvent{{Figure: f}}}, 4, displayIDs(randomID(8), new(atomic.Uint64)))
	if len(outs) != 1 || outs[0].Type != notebook.DisplayData || outs[0].Data["image/png"] != "iVBORw==" || outs[0].Data["image/svg+xml"] != "<svg/>" {
		t.Errorf("figure %+v", outs)
	}
}

// A session's transcript exported: comments as one markdown cell, each
// command that succeeded a numbered code cell with its output; failed
// commands and 'export notebook' left out. Without a writer, export
// notebook says so.
func TestExportNotebookTranscript(t *testing.T) {
	dir := t.TempDir()
	s, err := session.New(session.Options{Dir: filepath.Join(dir, "session")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := &printOut{}
	path := filepath.Join(dir, "s.ipynb")
	if err := s.Exec(t.Context(), "export notebook "+path, out); err == nil || !strings.Contains(err.Error(), "no notebook writer") {
		t.Fatalf("export without a writer: %v", err)
	}
	NewExecutor(s) // sets the writer
	for _, l := range []string{"# A small sweep", "#of summa", "workload summa n=256", "space b=64,zero", "space b=64,128 grid=2x2",
		"  # tuned", "policy eager", "status", "export notebook " + path} {
		s.Exec(t.Context(), l, out)
	}
	if !strings.Contains(out.String(), "wrote 4 commands to "+path) {
		t.Errorf("export printed %q", out.String())
	}
	nb, err := notebook.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range nb.Cells {
		got = append(got, string(c.Type)+": "+c.Source)
	}
	want := []string{"markdown: A small sweep\nof summa", "code: workload summa n=256", "code: space b=64,128 grid=2x2",
		"markdown: tuned", "code: policy eager", "code: status"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("cells\n%q\nwant\n%q", got, want)
	}
	if c := nb.Cells[1]; *c.ExecutionCount != 1 || len(c.Outputs) != 1 || c.Outputs[0].Type != notebook.ExecuteResult ||
		!strings.HasPrefix(c.Outputs[0].Data["text/plain"].(string), "workload summa:") {
		t.Errorf("workload cell %+v", c)
	}
	if c := nb.Cells[5]; *c.ExecutionCount != 4 || len(c.Outputs) != 1 || !strings.Contains(c.Outputs[0].Data["text/plain"].(string), "b          64,128") {
		t.Errorf("status cell %+v", c)
	}
	if c := nb.Cells[2]; *c.ExecutionCount != 2 || len(c.Outputs) != 0 {
		t.Errorf("space cell %+v", c)
	}
	if li, _ := nb.Metadata["language_info"].(map[string]any); li["name"] != "approxtune" || li["file_extension"] != ".atune" {
		t.Errorf("metadata %v", nb.Metadata)
	}
}

// printOut gathers what commands print.
type printOut struct{ strings.Builder }

func (o *printOut) Print(s string)            { o.WriteString(s + "\n") }
func (o *printOut) Update(p session.Progress) {}

// The executor runs cells as the kernel does: counts 1, 2, ...; the last
// command's answer is the execute_result; a failing command stops the cell
// with its error output; a blank cell is not run.
func TestExecutorCells(t *testing.T) {
	s, err := session.New(session.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := NewExecutor(s)
	c1 := notebook.NewCode("workload summa n=256\n# a comment\nspace b=64,128 grid=2x2\nspace")
	if err := e.Execute(&c1); err != nil {
		t.Fatal(err)
	}
	if *c1.ExecutionCount != 1 || len(c1.Outputs) != 2 || c1.Outputs[0].Type != notebook.Stream ||
		!strings.HasPrefix(c1.Outputs[0].Text, "workload summa:") || c1.Outputs[1].Type != notebook.ExecuteResult ||
		!strings.Contains(c1.Outputs[1].Data["text/plain"].(string), "b=64,128") {
		t.Errorf("cell 1: %+v", c1)
	}
	blank := notebook.NewCode(" \n")
	if err := e.Execute(&blank); err != nil || blank.ExecutionCount != nil || len(blank.Outputs) != 0 {
		t.Errorf("blank cell: %v %+v", err, blank)
	}
	c2 := notebook.NewCode("policy eager\ntolerance 2^-1,x\nstatus")
	err = e.Execute(&c2)
	var ce *CellError
	if !errors.As(err, &ce) || ce.Line != 2 || ce.EName != "CommandError" {
		t.Fatalf("failing cell: %v", err)
	}
	if *c2.ExecutionCount != 2 || len(c2.Outputs) != 1 || c2.Outputs[0].Type != notebook.Error ||
		c2.Outputs[0].Traceback[0] != "line 2: tolerance 2^-1,x" || !strings.Contains(c2.Outputs[0].EValue, `line 2: column 16: "x" is not a tolerance`) {
		t.Errorf("failing cell: %+v", c2)
	}
	if e.Interrupt() {
		t.Error("Interrupt with no cell running reported one")
	}
	if _, err := os.Stat(s.Dir()); err != nil {
		t.Error(err)
	}
}

// A sweep run by the executor: the cell's outputs are the final display
// and the best table; 'export notebook' from a cell then writes the same
// outputs, replayed from the transcript.
func TestExecutorSweepAndExport(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	s, err := session.New(session.Options{Dir: t.TempDir(), Binary: bin, Grace: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e := NewExecutor(s)
	path := filepath.Join(t.TempDir(), "x.ipynb")
	cells := []notebook.Cell{
		notebook.NewCode("workload summa n=256\nspace b=64,128 grid=2x2\npolicy eager\ntolerance 2^-1,2^-3\nevaluate"),
		notebook.NewCode("table best"),
		notebook.NewCode("export notebook " + path),
	}
	for i := range cells {
		if err := e.Execute(&cells[i]); err != nil {
			t.Fatalf("cell %d: %v", i+1, err)
		}
	}
	var types []string
	for _, o := range cells[0].Outputs {
		types = append(types, string(o.Type))
	}
	if strings.Join(types, " ") != "stream display_data execute_result" ||
		!strings.Contains(cells[0].Outputs[1].Data["text/plain"].(string), "4/4 runs") {
		t.Fatalf("sweep cell outputs %v: %+v", types, cells[0].Outputs)
	}
	nb, err := notebook.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The cell's five commands, then table best; not the export.
	if len(nb.Cells) != 6 || nb.Cells[4].Source != "evaluate" || nb.Cells[5].Source != "table best" {
		t.Fatalf("exported %+v", nb.Cells)
	}
	ev := nb.Cells[4].Outputs
	if len(ev) != 3 || ev[0].Text != "starting a local agent: 4 ranks under mpirun\n" ||
		ev[1].Data["text/plain"] != cells[0].Outputs[1].Data["text/plain"] || ev[2].Data["text/html"] != cells[0].Outputs[2].Data["text/html"] {
		t.Errorf("exported evaluate %+v\nexecuted %+v", ev, cells[0].Outputs)
	}
	if got, want := nb.Cells[5].Outputs[0].Data["text/html"], cells[1].Outputs[0].Data["text/html"]; got != want {
		t.Errorf("exported table best %v, executed %v", got, want)
	}
}
