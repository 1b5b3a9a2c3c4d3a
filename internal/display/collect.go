package display

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/approxtune/approxtune/internal/notebook"
)

// Collector stores the messages a cell publishes as the cell's outputs,
// as a Jupyter front end (nbclient, JupyterLab) does: consecutive stream
// messages of the same name make one output; display_data and
// execute_result are appended; update_display_data replaces the data and
// metadata of the outputs shown with its display_id, in place (an unknown
// id is ignored), as does a display_data with a display_id already shown;
// error is appended; clear_output clears (with wait, before the next
// output). Display ids are transient: not stored. Content goes through
// JSON as it does on the wire. Its methods may be called from several
// goroutines.
type Collector struct {
	mu        sync.Mutex
	outs      []notebook.Output
	ids       map[string][]int // display_id -> indices in outs
	clearNext bool
	err       error // the first message that could not be read
}

// Publish stores a message as it would arrive: content as JSON.
func (c *Collector) Publish(typ string, content map[string]any) {
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
func (c *Collector) handle(typ string, raw []byte) error {
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

func (c *Collector) clear() {
	c.outs, c.ids, c.clearNext = nil, nil, false
}

// Outputs returns the outputs stored so far (never nil), with an error
// output of its own if a message could not be read.
func (c *Collector) Outputs() []notebook.Output {
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
