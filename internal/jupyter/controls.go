package jupyter

import (
	"fmt"
	"html"
	"strings"

	"github.com/approxtune/approxtune/internal/display"
	"github.com/approxtune/approxtune/session"
)

// controlSet is the widgets one 'controls' command showed, in a VBox:
// policy (SelectMultiple); tolerance (SelectionSlider) in an HBox with
// the tolerances a sweep makes runs at (HTML) when there are several;
// grid (SelectMultiple); a Text per workload parameter; the buttons
// evaluate, tune and cancel (in an HBox); and an output area (HTML) where
// the commands the controls run show their output. It is kept in comms
// and used under comms.mu.
type controlSet struct {
	gen      generation
	workload string
	root     *widget
	policy   *widget
	tol      *widget
	sweeps   *widget // beside tol: the tolerances, when several
	grid     *widget // nil: the workload had no grid
	params   []*widget
	evaluate *widget
	tune     *widget
	cancel   *widget
	area     *widget
	settings []*widget // the named controls, policy to the last parameter
	runs     []areaRun
	stale    bool      // the workload changed since: its parameters are not these
	models   []*widget // every model, in the order they are opened
}

// maxRuns is how many commands the output area shows, the latest last.
const maxRuns = 10

// newControlSet makes the widgets of c for generation g, each with a
// fresh comm id.
func newControlSet(g generation, c *session.Controls) *controlSet {
	s := &controlSet{gen: g, workload: c.Workload}
	add := func(kind widgetKind, desc string, children ...*widget) *widget {
		w := &widget{id: randomID(16), kind: kind, description: desc, children: children, front: map[string]string{}}
		if !g.legacy {
			w.layout = &widget{id: randomID(16), kind: kindLayout, front: map[string]string{}}
			s.models = append(s.models, w.layout)
			if st := modelOf(kind).style; st != "" {
				w.style = &widget{id: randomID(16), kind: kindStyle, styleName: st, front: map[string]string{}}
				s.models = append(s.models, w.style)
			}
		}
		s.models = append(s.models, w) // after its children, layout and style
		return w
	}
	s.policy = add(kindSelectMultiple, c.Policy.Name)
	s.tol, s.sweeps = add(kindSelectionSlider, c.Tolerance.Name), add(kindHTML, "")
	rows := []*widget{s.policy, add(kindHBox, "", s.tol, s.sweeps)}
	s.settings = []*widget{s.policy, s.tol}
	if c.Grid != nil {
		s.grid = add(kindSelectMultiple, c.Grid.Name)
		rows, s.settings = append(rows, s.grid), append(s.settings, s.grid)
	}
	for _, p := range c.Params {
		w := add(kindText, p.Name)
		s.params = append(s.params, w)
		rows, s.settings = append(rows, w), append(s.settings, w)
	}
	s.evaluate, s.tune, s.cancel = add(kindButton, "evaluate"), add(kindButton, "tune"), add(kindButton, "cancel")
	buttons := add(kindHBox, "", s.evaluate, s.tune, s.cancel)
	s.area = add(kindHTML, "")
	s.root = add(kindVBox, "", append(rows, buttons, s.area)...)
	s.apply(c)
	s.render()
	return s
}

// describe is the text/plain of the controls' display: what they are,
// and the commands to type where they cannot be shown.
func (s *controlSet) describe(c *session.Controls) string {
	var names []string
	for _, w := range s.settings {
		names = append(names, w.description)
	}
	return fmt.Sprintf("approxtune controls: %s; evaluate, tune, cancel. They need a Jupyter front end with widgets (Notebook, JupyterLab); without one, type the commands they run: %s",
		strings.Join(names, ", "), c.Typed())
}

// apply sets the widgets to the session's state c. Parameters the user is
// editing keep their text unless the session's value changed. When the
// workload is no longer the set's, its parameters are disabled and the
// output area says to run 'controls' again.
func (s *controlSet) apply(c *session.Controls) {
	setChoice(s.policy, c.Policy)
	setChoice(s.tol, c.Tolerance)
	// The slider shows the tightest tolerance (the options descend); a
	// sweep makes runs at all of them, which the note beside it lists.
	s.sweeps.value = ""
	if sel := s.tol.selected; len(sel) > 1 {
		s.sweeps.value = textHTML("approxtune-controls-sweeps", "color:#555;margin-left:0.5em", "sweeps "+strings.Join(s.tol.labels(), ", "))
		s.tol.selected = sel[len(sel)-1:]
	}
	if s.grid != nil {
		s.grid.disabled = c.Grid == nil
		if c.Grid != nil {
			setChoice(s.grid, *c.Grid)
		}
	}
	same := c.Workload == s.workload && len(c.Params) == len(s.params)
	for i, w := range s.params {
		if !same || c.Params[i].Name != w.description {
			same = false
			break
		}
	}
	for i, w := range s.params {
		w.disabled = !same
		if same && c.Params[i].Value != w.applied {
			w.value, w.applied = c.Params[i].Value, c.Params[i].Value
		}
	}
	if !same && !s.stale {
		s.stale = true
		s.note(fmt.Sprintf("the workload is now %s: run 'controls' again for its parameters", c.Workload), "note")
	}
}

func setChoice(w *widget, c session.Choice) {
	w.options = append([]string(nil), c.Options...)
	w.selected = append([]int(nil), c.Selected...)
	w.rows = min(max(len(c.Options), 2), 6)
}

// choice is the session's Choice a selection widget stands for.
func (s *controlSet) choice(w *widget) session.Choice {
	return session.Choice{Name: w.description, Options: w.options}
}

// textCommand is the command that applies a parameter's text, or "" when
// the session already holds it.
func (s *controlSet) textCommand(w *widget) (string, error) {
	if w.value == w.applied || w.disabled {
		return "", nil
	}
	return session.ParamControl{Name: w.description}.Command(w.value)
}

// pending are the parameters whose text is not applied yet.
func (s *controlSet) pending() []*widget {
	var out []*widget
	for _, w := range s.params {
		if w.value != w.applied && !w.disabled {
			out = append(out, w)
		}
	}
	return out
}

// areaRun is a command the output area shows: its line and its output.
type areaRun struct {
	line   string
	blocks []areaBlock
}

// areaBlock is one piece of a command's output: HTML, or text shown
// preformatted with a class (stream, error, note). A live display keeps
// its display id, so its updates replace it.
type areaBlock struct {
	id, html   string
	text, kind string
}

func (b areaBlock) render() string {
	if b.kind == "" {
		return b.html
	}
	style := ""
	if b.kind == "error" {
		style = "color:#b00020"
	}
	return textHTML("approxtune-controls-"+b.kind, style, b.text)
}

// textHTML is text shown as typed (monospace, its lines kept), in a div
// rather than a pre, which notebooks style as a box.
func textHTML(class, style, text string) string {
	return fmt.Sprintf(`<div class="%s" style="font-family:monospace;white-space:pre-wrap;margin:0.2em 0;%s">%s</div>`,
		class, style, html.EscapeString(strings.TrimRight(text, "\n")))
}

// begin starts showing a command in the output area: "» LINE".
func (s *controlSet) begin(line string) {
	s.runs = append(s.runs, areaRun{line: line})
	if len(s.runs) > maxRuns {
		s.runs = s.runs[len(s.runs)-maxRuns:]
	}
	s.render()
}

// note adds a line of kind (note, error) to the latest command's output.
func (s *controlSet) note(text, kind string) {
	if len(s.runs) == 0 {
		s.runs = append(s.runs, areaRun{})
	}
	r := &s.runs[len(s.runs)-1]
	r.blocks = append(r.blocks, areaBlock{text: text, kind: kind})
	s.render()
}

// output adds a message of a command's cell output (see
// display.Publisher) to the output area: a bundle's text/html, else its
// text/plain escaped; a stream's text; an error's name and value. It
// reports whether the area changed.
func (s *controlSet) output(typ string, content map[string]any) bool {
	if len(s.runs) == 0 {
		return false
	}
	r := &s.runs[len(s.runs)-1]
	id := displayID(content)
	switch typ {
	case "stream":
		text, _ := content["text"].(string)
		if n := len(r.blocks); n > 0 && r.blocks[n-1].kind == "stream" {
			r.blocks[n-1].text += text
		} else {
			r.blocks = append(r.blocks, areaBlock{text: text, kind: "stream"})
		}
	case "display_data", "execute_result":
		r.blocks = append(r.blocks, areaBlock{id: id, html: bundleHTML(content["data"])})
	case "update_display_data":
		found := false
		for i := range r.blocks {
			if id != "" && r.blocks[i].id == id {
				r.blocks[i].html, found = bundleHTML(content["data"]), true
			}
		}
		if !found {
			return false
		}
	case "error":
		ename, _ := content["ename"].(string)
		evalue, _ := content["evalue"].(string)
		r.blocks = append(r.blocks, areaBlock{text: ename + ": " + evalue, kind: "error"})
	default:
		return false
	}
	s.render()
	return true
}

// render sets the output area's HTML from its runs.
func (s *controlSet) render() {
	var b strings.Builder
	b.WriteString(areaStyle)
	b.WriteString(`<div class="approxtune-controls-output">`)
	for _, r := range s.runs {
		if r.line != "" {
			b.WriteString(textHTML("approxtune-controls-echo", "font-weight:bold", "» "+r.line))
		}
		for _, bl := range r.blocks {
			b.WriteString(bl.render())
		}
	}
	b.WriteString("</div>")
	s.area.value = b.String()
}

// areaStyle is the output area's style sheet: its tables spaced as a
// notebook spaces an output's, and selected options of the controls'
// lists shaded (the classic Notebook's widget CSS shades them with an
// image its package ships broken, leaving them white on white).
const areaStyle = `<style>` +
	`.approxtune-controls-output table{border-collapse:collapse;margin:0.3em 0}` +
	`.approxtune-controls-output th,.approxtune-controls-output td{padding:0.15em 0.7em;text-align:right}` +
	`.widget-select-multiple select option:checked{background:#c8daf0 none;color:#000}` +
	rowsStyle +
	`</style>`

// rowsClass is the class of a legacy list showing n rows (2 to 6, as
// setChoice bounds them).
func rowsClass(n int) string { return fmt.Sprintf("approxtune-rows-%d", n) }

// rowsStyle sizes the lists of the rowsClass classes to their rows: the
// classic Notebook's widgets (ipywidgets 6) neither take rows nor set
// the list's size, which leaves a browser's default of 4.
const rowsStyle = `.approxtune-rows-2 select{height:calc(2 * 1.3em + 6px)}.approxtune-rows-3 select{height:calc(3 * 1.3em + 6px)}.approxtune-rows-4 select{height:calc(4 * 1.3em + 6px)}.approxtune-rows-5 select{height:calc(5 * 1.3em + 6px)}.approxtune-rows-6 select{height:calc(6 * 1.3em + 6px)}`

// displayID is a display message's transient display_id, or "".
func displayID(content map[string]any) string {
	tr, _ := content["transient"].(map[string]any)
	id, _ := tr["display_id"].(string)
	return id
}

// bundleHTML shows a MIME bundle as HTML: its text/html, else its
// text/plain escaped.
func bundleHTML(data any) string {
	var b map[string]any
	switch d := data.(type) {
	case display.Bundle:
		b = d
	case map[string]any:
		b = d
	}
	if h, ok := b["text/html"].(string); ok {
		return h
	}
	t, _ := b["text/plain"].(string)
	return textHTML("approxtune-controls-text", "", t)
}
