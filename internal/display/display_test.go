package display

import (
	"encoding/json"
	"html"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/notebook"
	"github.com/approxtune/approxtune/session"
	"github.com/approxtune/approxtune/sweep"
)

// A sweep with results, made by hand.
func handSweep(mode sweep.Mode) *session.Sweep {
	f := func(x float64) *float64 { return &x }
	sp := &sweep.Spec{Workload: "synthetic", Policies: []string{"conditional", "eager"}, Tolerances: []sweep.Tolerance{0.5, 0.125}, Mode: mode}
	sw := &session.Sweep{ID: 2, Spec: sp, Workload: "synthetic", Status: session.StatusRunning, Configs: make([]sweep.Config, 2)}
	for i := 0; i < 2; i++ {
		for _, p := range sp.Policies {
			for _, tl := range sp.Tolerances {
				r := sweep.Result{Index: i, Policy: p, Tolerance: f(float64(tl)), PredictedS: f(1 + float64(i)), SelectiveS: f(0.5)}
				if mode == sweep.ModeEvaluate {
					r.ReferenceS = []float64{1.1 + float64(i), 1.1 + float64(i)}
					r.Error = f(0.1)
				}
				sw.Results = append(sw.Results, r)
			}
		}
	}
	return sw
}

func TestDisplayBundles(t *testing.T) {
	sw := handSweep(sweep.ModeEvaluate)
	p := session.Progress{Sweep: sw, Done: 6, Total: 8, Elapsed: 3 * time.Second}
	b := progressBundle(p, []string{"cancelling: <now>"}, sw.ChartRows(), figures{})
	plain, _ := b["text/plain"].(string)
	h, _ := b["text/html"].(string)
	for _, want := range []string{"sweep 2 evaluate synthetic: 6/8 runs, 3s elapsed, about 1s left", "cancelling: <now>",
		"policy       tol    speed-up", "conditional  2^-1", "eager        2^-1", "3.20x", "6.9%", "█"} {
		if !strings.Contains(plain, want) {
			t.Errorf("text/plain lacks %q:\n%s", want, plain)
		}
	}
	for _, want := range []string{`<progress max="8" value="6"`, "cancelling: &lt;now&gt;", "<td>eager</td><td>2^-1</td>", "3.20x"} {
		if !strings.Contains(h, want) {
			t.Errorf("text/html lacks %q:\n%s", want, h)
		}
	}
	// tune: no references, the chosen configuration so far.
	tw := handSweep(sweep.ModeTune)
	b = progressBundle(session.Progress{Sweep: tw, Done: 8, Total: 8, Final: true}, nil, tw.ChartRows(), figures{})
	if s := b["text/plain"].(string); !strings.Contains(s, "chosen so far") || !strings.Contains(s, "(running)") {
		t.Errorf("tune:\n%s", s)
	}
	// The best table: the session's text, and HTML of the same summaries.
	text := session.TableBest(sw)
	if !isTableBest(sw, text) || isTableBest(sw, "other") {
		t.Error("isTableBest")
	}
	tb := tableBundle(sw, text)
	if tb["text/plain"] != text || !strings.Contains(tb["text/html"].(string), "<th>quality</th>") {
		t.Errorf("table bundle %v", tb)
	}
	// The best class the text ends with is in the HTML too, where the
	// sweep can be ranked.
	if l := session.BestClass(sw); !strings.Contains(l, "best class (rank, reference runs): config 0") || !strings.Contains(text, l) ||
		!strings.Contains(tb["text/html"].(string), html.EscapeString(l)) {
		t.Errorf("best class %q: text\n%s\nhtml\n%s", l, text, tb["text/html"])
	}
	// Every line after the text's table is in the HTML, in its order: a
	// cancelled sweep's note of the configurations it lacks among them
	// (the HTML had made its own few lines and left that one out).
	cut := handSweep(sweep.ModeEvaluate)
	cut.Configs = append(cut.Configs, sweep.Config{})
	cut.Status = session.StatusCancelled
	ct := session.TableBest(cut)
	ch := tableBundle(cut, ct)["text/html"].(string)
	lines := strings.Split(strings.TrimRight(ct, "\n"), "\n")
	tail := lines[2+len(cut.Summaries()):]
	if !strings.Contains(ct, "note: only 2 of the 3 configurations have results (the sweep was cancelled)") || len(tail) < 3 {
		t.Fatalf("the cancelled sweep's text:\n%s", ct)
	}
	at := 0
	for _, l := range tail {
		i := strings.Index(ch[at:], "<div>"+html.EscapeString(l)+"</div>")
		if i < 0 {
			t.Errorf("the HTML lacks, or has out of order, %q:\n%s", l, ch)
			break
		}
		at += i
	}
	// Every bundle JSON-encodes with text/plain.
	for _, bd := range []Bundle{b, tb, TextBundle("a<b")} {
		js, err := json.Marshal(bd)
		if err != nil || !strings.Contains(string(js), `"text/plain"`) {
			t.Errorf("%s %v", js, err)
		}
	}
}

// Consecutive streams of one name make one output; another name, or
// another output between, starts a new one.
func TestCollectorStreamMerge(t *testing.T) {
	c := &Collector{}
	c.Publish("status", map[string]any{"execution_state": "busy"})
	c.Publish("stream", map[string]any{"name": "stdout", "text": "a\n"})
	c.Publish("stream", map[string]any{"name": "stdout", "text": "b\n"})
	c.Publish("stream", map[string]any{"name": "stderr", "text": "warn\n"})
	c.Publish("stream", map[string]any{"name": "stdout", "text": "c"})
	c.Publish("display_data", map[string]any{"data": Bundle{"text/plain": "fig"}, "metadata": map[string]any{}, "transient": map[string]any{}})
	c.Publish("stream", map[string]any{"name": "stdout", "text": "d"})
	c.Publish("stream", map[string]any{"name": "stdout", "text": "e"})
	outs := c.Outputs()
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
	c := &Collector{}
	disp := func(typ, id, text string) {
		c.Publish(typ, map[string]any{"data": Bundle{"text/plain": text, "text/html": "<b>" + text + "</b>"},
			"metadata": map[string]any{"n": len(text)}, "transient": map[string]any{"display_id": id}})
	}
	disp("display_data", "d1", "first 0/4")
	c.Publish("stream", map[string]any{"name": "stdout", "text": "between\n"})
	disp("display_data", "d2", "second")
	disp("update_display_data", "d1", "first 2/4")
	disp("update_display_data", "nobody", "lost")
	disp("update_display_data", "d1", "first 4/4 (ok)")
	c.Publish("execute_result", map[string]any{"execution_count": 7, "data": Bundle{"text/plain": "best"}, "metadata": map[string]any{}})
	c.Publish("error", map[string]any{"ename": "CommandError", "evalue": "bad", "traceback": []string{"line 1: x", "CommandError: bad"}})
	outs := c.Outputs()
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
	c := &Collector{}
	c.Publish("stream", map[string]any{"name": "stdout", "text": "a"})
	c.Publish("clear_output", map[string]any{"wait": true})
	if len(c.Outputs()) != 1 {
		t.Fatal("cleared before the next output")
	}
	c.Publish("stream", map[string]any{"name": "stdout", "text": "b"})
	if o := c.Outputs(); len(o) != 1 || o[0].Text != "b" {
		t.Fatalf("%+v", o)
	}
	c.Publish("clear_output", map[string]any{"wait": false})
	if len(c.Outputs()) != 0 {
		t.Fatal("not cleared")
	}
}

// A recorded sweep replays through the cell output as the kernel
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
	outs := replay(st, 3, DisplayIDs(notebook.NewID(), new(atomic.Uint64)))
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
	outs = replay(session.Step{Line: "plot speedup", Events: []session.OutputEvent{{Figure: f}}}, 4, DisplayIDs(notebook.NewID(), new(atomic.Uint64)))
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
	s.SetDefaultNotebook(Export)
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

// A cancel's advice ("interrupt again to stop mpirun now") shows while the
// sweep runs, not in its final display, whose line says it was cancelled;
// other notes stay.
func TestFinalDisplayDropsCancelAdvice(t *testing.T) {
	sw := handSweep(sweep.ModeEvaluate)
	sw.Status = "cancelled"
	notes := []string{"cancelling: the sweep stops at the next run boundary (interrupt again to stop mpirun now)", "interrupting mpirun"}
	for _, final := range []bool{false, true} {
		b := progressBundle(session.Progress{Sweep: sw, Done: 3, Total: 8, Final: final}, notes, nil, figures{})
		plain, _ := b["text/plain"].(string)
		html, _ := b["text/html"].(string)
		for _, text := range []string{plain, html} {
			if strings.Contains(text, "interrupt again") == final || !strings.Contains(text, "interrupting mpirun") {
				t.Errorf("final %v: %s", final, text)
			}
		}
	}
}

// The best table is HTML wherever it comes: a cancelled sweep's (its
// command failed) and one before the cell's last command had been plain
// text beside the finished sweeps' HTML tables (a notebook review).
func TestTableBestAlwaysHTML(t *testing.T) {
	sw := handSweep(sweep.ModeEvaluate)
	sw.Status = session.StatusCancelled
	table := session.TableBest(sw)
	for _, c := range []struct {
		name     string
		last, ok bool
	}{{"a cancelled sweep's", true, false}, {"before the cell's last command", false, true}} {
		col := &Collector{}
		out := NewCellOutput(col, Env{Last: func() *session.Sweep { return sw }, DisplayID: DisplayIDs(notebook.NewID(), new(atomic.Uint64))}, false, 1)
		out.Begin(c.last)
		out.Print(table)
		out.End(c.ok)
		out.Close()
		outs := col.Outputs()
		if len(outs) != 1 || outs[0].Type != notebook.DisplayData || !strings.Contains(outs[0].Data["text/html"].(string), `class="approxtune-best"`) {
			t.Errorf("%s table: %+v, want display_data with its HTML", c.name, outs)
		}
	}
}

// A step whose sweep was interrupted or failed is exported as a cell
// tagged raises-exception, with its error after its outputs; others carry
// no tag.
func TestExportTagsFailedSweeps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.ipynb")
	steps := []session.Step{{Line: "reps 3"}, {Line: "evaluate", Failed: "sweep 1 cancelled after 2 of 9 runs"}}
	if err := Export(steps, path); err != nil {
		t.Fatal(err)
	}
	nb, err := notebook.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(nb.Cells) != 2 || nb.Cells[0].Metadata["tags"] != nil {
		t.Fatalf("cells %+v: want 2, the first untagged", nb.Cells)
	}
	c := nb.Cells[1]
	tags, _ := c.Metadata["tags"].([]any)
	if len(tags) != 1 || tags[0] != "raises-exception" || len(c.Outputs) == 0 {
		t.Fatalf("the failed step's cell: tags %v, outputs %+v", c.Metadata["tags"], c.Outputs)
	}
	if o := c.Outputs[len(c.Outputs)-1]; o.Type != notebook.Error || o.EValue != steps[1].Failed {
		t.Errorf("its last output %+v: want the error", o)
	}
}
