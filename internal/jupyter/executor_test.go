package jupyter

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/notebook"
	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/session"
)

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
	// controls: no widgets here, but the commands to type.
	c3 := notebook.NewCode("controls")
	if err := e.Execute(&c3); err != nil || len(c3.Outputs) != 1 || !strings.HasPrefix(fmt.Sprint(c3.Outputs[0].Data["text/plain"]),
		"controls need a Jupyter front end with widgets (Notebook, JupyterLab); here, type the commands they run: 'policy eager', 'tolerance 2^-1,2^-3,2^-5', 'grid 2x2', 'space n=256 b=64,128'") {
		t.Errorf("controls: %v %+v", err, c3.Outputs)
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
