package jupyter

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/approxtune/approxtune/internal/notebook"
	"github.com/approxtune/approxtune/session"
)

// Executor runs notebook cells headless, through the live kernel's code:
// the same runCell, cellOutput and MIME bundles, with the timings of the
// kernel's defaults, but with what the kernel would publish on iopub
// collected into nbformat outputs as a Jupyter front end stores them (see
// collector). A notebook it executes is the one a Jupyter client executing
// it against the kernel would save ('approxtune run').
//
// Execute runs one cell at a time; Interrupt may be called from any
// goroutine.
type Executor struct {
	sess  *session.Session
	id    string
	seq   atomic.Uint64
	count int

	mu   sync.Mutex
	cell *cell
}

// NewExecutor returns an executor of cells on sess. It also makes
// ExportNotebook the session's 'export notebook' writer unless the session
// has one.
func NewExecutor(sess *session.Session) *Executor {
	sess.SetDefaultNotebook(ExportNotebook)
	return &Executor{sess: sess, id: randomID(8)}
}

// randomID is n random bytes in hexadecimal. (crypto/rand.Read does not
// fail: since Go 1.24 it crashes the program instead.)
func randomID(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// displayIDs returns a maker of fresh display ids, approxtune-ID-N, N
// counted by seq (id is a random hexadecimal id, of which 8 digits are used).
func displayIDs(id string, seq *atomic.Uint64) func() string {
	return func() string { return fmt.Sprintf("approxtune-%s-%d", id[:8], seq.Add(1)) }
}

// Execute runs the code cell c as the kernel runs an execute_request: its
// commands in order, up to the first that fails. It sets c's execution
// count (1, 2, ... over the executor's cells) and replaces its outputs. A
// cell whose source is blank is not run and keeps no count nor outputs, as
// nbclient does. When a command fails, the cell ends with the error output
// and Execute returns the *CellError.
func (e *Executor) Execute(c *notebook.Cell) error {
	if c.Type != notebook.Code {
		return fmt.Errorf("kernel: execute: a %s cell is not code", c.Type)
	}
	if strings.TrimSpace(c.Source) == "" {
		c.ExecutionCount, c.Outputs = nil, []notebook.Output{}
		return nil
	}
	e.count++
	count := e.count
	col := &collector{}
	out := newCellOutput(col, e.outputEnv(), false, count)
	failed := runCellOutput(e.sess, c.Source, out, e.setCell)
	c.ExecutionCount, c.Outputs = notebook.Count(count), col.outputs()
	if failed != nil {
		return failed
	}
	return nil
}

// Interrupt interrupts the running cell as the kernel's Interrupt does:
// the first interrupt stops a sweep at the next run boundary (or stops
// waiting for an agent), the second interrupts mpirun. It reports whether
// a cell was running.
func (e *Executor) Interrupt() bool {
	e.mu.Lock()
	c := e.cell
	e.mu.Unlock()
	if c == nil {
		return false
	}
	c.interrupt(e.sess)
	return true
}

func (e *Executor) setCell(c *cell) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.cell = c
}

// outputEnv is the kernel's, with its default update interval.
func (e *Executor) outputEnv() outputEnv {
	return outputEnv{
		last:       e.sess.Last,
		displayID:  displayIDs(e.id, &e.seq),
		interval:   250 * time.Millisecond,
		printDelay: printDelay,
	}
}

// NotebookMetadata is the metadata of a notebook for approxtune's kernel:
// its kernelspec and its language_info (kernel_info's, without a version).
func NotebookMetadata() map[string]any {
	m := notebook.Metadata()
	m["language_info"] = languageInfo("")
	return m
}

// ExportNotebook writes a session's transcript to path as a notebook (it is
// a session.NotebookFunc): each command is a code cell, in order, numbered
// 1, 2, ..., whose outputs are those the kernel would have shown, as a
// Jupyter front end stores them (the command's recorded output replayed
// through the kernel's cellOutput into a collector); consecutive comment
// lines are one markdown cell, without their '# '. The file is replaced
// whole (a temporary file and a rename).
func ExportNotebook(steps []session.Step, path string) error {
	nb := notebook.New()
	nb.Metadata = NotebookMetadata()
	var comments []string
	flush := func() {
		if len(comments) > 0 {
			nb.Cells = append(nb.Cells, notebook.NewMarkdown(strings.Join(comments, "\n")))
			comments = nil
		}
	}
	var seq atomic.Uint64
	ids := displayIDs(randomID(8), &seq)
	n := 0
	for _, st := range steps {
		if st.Comment {
			comments = append(comments, session.CommentText(st.Line))
			continue
		}
		flush()
		n++
		c := notebook.NewCode(st.Line)
		c.ExecutionCount = notebook.Count(n)
		c.Outputs = replay(st, n, ids)
		nb.Cells = append(nb.Cells, c)
	}
	flush()
	if err := notebook.WriteFile(path, nb); err != nil {
		return fmt.Errorf("export notebook: %w", err)
	}
	return nil
}

// replay sends a recorded command's output through a cell output whose
// command is the cell's last, and returns what the collector stored. No
// time passes in a replay: every display update goes out, and what the
// command printed is held until it ends, as for a command that ran fast.
func replay(st session.Step, count int, displayID func() string) []notebook.Output {
	col := &collector{}
	out := newCellOutput(col, outputEnv{last: func() *session.Sweep { return st.Last }, displayID: displayID}, false, count)
	out.begin(true)
	st.Replay(out)
	out.end(true)
	out.close()
	return col.outputs()
}

// collector stores the messages a cell publishes as the cell's outputs,
// as a Jupyter front end (nbclient, JupyterLab) does: consecutive stream
// messages of the same name make one output; display_data and
// execute_result are appended; update_display_data replaces the data and
// metadata of the outputs shown with its display_id, in place (an unknown
// id is ignored), as does a display_data with a display_id already shown;
// error is appended; clear_output clears (with wait, before the next
// output). Display ids are transient: not stored. Content goes through
// JSON as it does on the wire. Its methods may be called from several
// goroutines.
type collector struct {
	mu        sync.Mutex
	outs      []notebook.Output
	ids       map[string][]int // display_id -> indices in outs
	clearNext bool
	err       error // the first message that could not be read
}

// publish stores a message as it would arrive: content as JSON.
func (c *collector) publish(typ string, content map[string]any) {
	raw, err := json.Marshal(content)
	if err == nil {
		err = c.handle(typ, raw)
	}
	if err != nil {
		c.mu.Lock()
		if c.err == nil {
			c.err = fmt.Errorf("%s: %w", typ, err)
		}
		c.mu.Unlock()
	}
}

// handle stores one iopub message of type typ with its JSON content.
// Messages that make no output (status, execute_input...) are ignored.
func (c *collector) handle(typ string, raw []byte) error {
	var m struct {
		Name           string                     `json:"name"`
		Text           string                     `json:"text"`
		Data           map[string]json.RawMessage `json:"data"`
		Metadata       json.RawMessage            `json:"metadata"`
		ExecutionCount *int                       `json:"execution_count"`
		Transient      struct {
			DisplayID string `json:"display_id"`
		} `json:"transient"`
		EName     string   `json:"ename"`
		EValue    string   `json:"evalue"`
		Traceback []string `json:"traceback"`
		Wait      bool     `json:"wait"`
	}
	switch typ {
	case "stream", "display_data", "update_display_data", "execute_result", "error", "clear_output":
	default:
		return nil
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if typ == "clear_output" {
		if m.Wait {
			c.clearNext = true
		} else {
			c.clear()
		}
		return nil
	}
	if c.clearNext {
		c.clear()
	}
	var data notebook.Bundle
	var meta map[string]any
	if typ == "display_data" || typ == "update_display_data" || typ == "execute_result" {
		var err error
		if data, err = decodeBundle(m.Data); err != nil {
			return err
		}
		if meta, err = decodeObject(m.Metadata); err != nil {
			return fmt.Errorf("metadata: %w", err)
		}
		if id := m.Transient.DisplayID; id != "" {
			for _, i := range c.ids[id] {
				c.outs[i].Data, c.outs[i].Metadata = data, meta
			}
		}
	}
	switch typ {
	case "stream":
		if n := len(c.outs); n > 0 && c.outs[n-1].Type == notebook.Stream && c.outs[n-1].Name == m.Name {
			c.outs[n-1].Text += m.Text
			return nil
		}
		c.outs = append(c.outs, notebook.Output{Type: notebook.Stream, Name: m.Name, Text: m.Text})
	case "update_display_data":
		// Done above: it adds no output.
	case "display_data", "execute_result":
		o := notebook.Output{Type: notebook.DisplayData, Data: data, Metadata: meta}
		if typ == "execute_result" {
			o.Type, o.ExecutionCount = notebook.ExecuteResult, m.ExecutionCount
		}
		if id := m.Transient.DisplayID; id != "" {
			if c.ids == nil {
				c.ids = map[string][]int{}
			}
			c.ids[id] = append(c.ids[id], len(c.outs))
		}
		c.outs = append(c.outs, o)
	case "error":
		tb := m.Traceback
		if tb == nil {
			tb = []string{}
		}
		c.outs = append(c.outs, notebook.Output{Type: notebook.Error, EName: m.EName, EValue: m.EValue, Traceback: tb})
	}
	return nil
}

func (c *collector) clear() {
	c.outs, c.ids, c.clearNext = nil, nil, false
}

// outputs returns the outputs stored so far (never nil), with an error
// output of its own if a message could not be read.
func (c *collector) outputs() []notebook.Output {
	c.mu.Lock()
	defer c.mu.Unlock()
	outs := append([]notebook.Output{}, c.outs...)
	if c.err != nil {
		outs = append(outs, notebook.Output{Type: notebook.Error, EName: "OutputError", EValue: c.err.Error(),
			Traceback: []string{"OutputError: " + c.err.Error()}})
	}
	return outs
}

// decodeBundle decodes a MIME bundle's data, numbers kept as json.Number.
func decodeBundle(data map[string]json.RawMessage) (notebook.Bundle, error) {
	b := make(notebook.Bundle, len(data))
	for k, raw := range data {
		v, err := decodeJSON(raw)
		if err != nil {
			return nil, fmt.Errorf("data %s: %w", k, err)
		}
		b[k] = v
	}
	return b, nil
}

func decodeObject(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 {
		return map[string]any{}, nil
	}
	v, err := decodeJSON(raw)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return map[string]any{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON object: %s", raw)
	}
	return m, nil
}

func decodeJSON(raw json.RawMessage) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
