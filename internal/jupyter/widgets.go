package jupyter

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Jupyter widgets (ipywidgets' models, driven from this kernel over comms)
// in the two generations of front end there are:
//
//   - legacy: ipywidgets 6, the classic Notebook's jupyter-js-widgets
//     ~2.1.4 (Debian's packages). It opens a jupyter.widget.version comm at
//     connect; models hold their state flat in comm_open's data; a
//     'display' comm message shows a view; values come back as 'backbone'
//     messages with sync_data; a selection's value is its labels (a
//     multiple selection's, a list of them).
//   - protocol 2 (2.1.0): ipywidgets 8, as JupyterLab 4 and Notebook 7 speak
//     it. Models of @jupyter-widgets/controls and /base 2.0.0, state under
//     "state" with "buffer_paths", metadata version 2.1.0, a LayoutModel
//     and a style model per widget referenced as IPY_MODEL_id, views shown
//     by display_data (widget-view+json, version_major 2), values back as
//     'update' messages; a selection's value is its indexes (a multiple
//     selection's, a list of them).
//
// A widget is described once (widget, with modelOf for its names); the two
// generations differ only in the small encoding functions of generation.

// Comm targets.
const (
	widgetTarget  = "jupyter.widget"
	versionTarget = "jupyter.widget.version"
)

// WidgetViewMIME is the MIME type of a widget's view in an output: a saved
// notebook's cell that showed the controls holds it.
const WidgetViewMIME = "application/vnd.jupyter.widget-view+json"

// Module names and versions of the two generations.
const (
	legacyModule   = "jupyter-js-widgets"
	legacyVersion  = "~2.1.4"
	controlsModule = "@jupyter-widgets/controls"
	baseModule     = "@jupyter-widgets/base"
	modelVersion   = "2.0.0" // protocol 2's model and view versions
	protocol2      = "2.1.0" // protocol 2's version, in comm_open's metadata
)

// widgetKind is what a widget model is.
type widgetKind int

const (
	kindVBox widgetKind = iota
	kindHBox
	kindSelectMultiple
	kindSelectionSlider // one option, on a slider over them
	kindText
	kindButton
	kindHTML
	kindLayout // protocol 2: a widget's LayoutModel
	kindStyle  // protocol 2: a widget's style model
)

// model is the model and view of a kind; the modules are protocol 2's
// (the legacy generation has all in jupyter-js-widgets) and style is the
// kind's style model in protocol 2 ("": none).
type model struct {
	name, view         string
	module, viewModule string
	style              string
}

func modelOf(k widgetKind) model {
	controls := map[widgetKind][3]string{ // model, view, style
		kindVBox:            {"VBoxModel", "VBoxView", ""},
		kindHBox:            {"HBoxModel", "HBoxView", ""},
		kindSelectMultiple:  {"SelectMultipleModel", "SelectMultipleView", "DescriptionStyleModel"},
		kindSelectionSlider: {"SelectionSliderModel", "SelectionSliderView", "SliderStyleModel"},
		kindText:            {"TextModel", "TextView", "TextStyleModel"},
		kindButton:          {"ButtonModel", "ButtonView", "ButtonStyleModel"},
		kindHTML:            {"HTMLModel", "HTMLView", "HTMLStyleModel"},
	}
	if n, ok := controls[k]; ok {
		return model{name: n[0], view: n[1], module: controlsModule, viewModule: controlsModule, style: n[2]}
	}
	if k == kindLayout {
		return model{name: "LayoutModel", view: "LayoutView", module: baseModule, viewModule: baseModule}
	}
	// kindStyle: its name is the styled kind's style.
	return model{view: "StyleView", module: controlsModule, viewModule: baseModule}
}

// widget is one widget model and its state, whatever the generation.
type widget struct {
	id          string
	kind        widgetKind
	description string   // the label beside it; a button's text
	options     []string // selections: the labels
	selected    []int    // selections: the selected indexes, ascending (a slider's: one, or none)
	value       string   // Text: its text; HTML: its HTML
	applied     string   // Text: the session's value it was last set to
	rows        int      // SelectMultiple: rows shown
	disabled    bool
	children    []*widget
	styleName   string  // kindStyle: the style model's name
	layout      *widget // protocol 2: the widget's LayoutModel
	style       *widget // protocol 2: its style model, or nil
	// front is the state the front end holds, as last sent or received:
	// each key's JSON.
	front map[string]string
}

// ref is how a state refers to another model.
func ref(w *widget) string { return "IPY_MODEL_" + w.id }

// generation is a front end's widget protocol: legacy (ipywidgets 6) or
// protocol 2 (ipywidgets 8).
type generation struct{ legacy bool }

func (g generation) String() string {
	if g.legacy {
		return "legacy (ipywidgets 6, " + legacyModule + " " + legacyVersion + ")"
	}
	return "protocol " + protocol2 + " (ipywidgets 8)"
}

// state is w's full state as g's front end takes it.
func (g generation) state(w *widget) map[string]any {
	m := modelOf(w.kind)
	if w.kind == kindStyle {
		m.name = w.styleName
	}
	s := map[string]any{"_model_name": m.name, "_view_name": m.view, "_view_count": nil}
	if g.legacy {
		s["_model_module"], s["_model_module_version"] = legacyModule, legacyVersion
		s["_view_module"], s["_view_module_version"] = legacyModule, legacyVersion
	} else {
		s["_model_module"], s["_model_module_version"] = m.module, modelVersion
		s["_view_module"], s["_view_module_version"] = m.viewModule, modelVersion
	}
	dom := w.kind != kindLayout && w.kind != kindStyle
	if dom && !g.legacy {
		s["_dom_classes"], s["tabbable"], s["tooltip"] = []string{}, nil, nil
		s["layout"] = ref(w.layout)
		if w.style != nil {
			s["style"] = ref(w.style)
		}
	}
	if dom && w.kind != kindVBox && w.kind != kindHBox {
		s["description"], s["disabled"] = w.description, w.disabled
		if !g.legacy {
			s["description_allow_html"] = false
		}
	}
	switch w.kind {
	case kindVBox, kindHBox:
		refs := make([]string, len(w.children))
		for i, c := range w.children {
			refs[i] = ref(c)
		}
		s["children"], s["box_style"] = refs, ""
	case kindSelectMultiple:
		s["_options_labels"], s["rows"] = w.options, w.rows
		if g.legacy {
			s["value"] = w.labels()
			// ipywidgets 6's view ignores rows (its list shows 4): a
			// class the controls' style sheet sizes the list by
			// (rowsStyle).
			s["_dom_classes"] = []string{rowsClass(w.rows)}
		} else {
			s["index"] = append([]int{}, w.selected...)
		}
	case kindSelectionSlider:
		s["_options_labels"], s["orientation"], s["readout"] = w.options, "horizontal", true
		// Sent when the handle is let go, not while it moves.
		s["continuous_update"] = false
		var label any = ""  // legacy: nothing selected
		var index any = nil // protocol 2: nothing selected
		if l := w.labels(); len(l) > 0 {
			label, index = l[0], w.selected[0]
		}
		if g.legacy {
			s["value"] = label
		} else {
			s["index"], s["behavior"] = index, "drag-tap"
		}
	case kindText:
		s["value"], s["placeholder"] = w.value, ""
		if !g.legacy {
			// Sent on Enter or when the box loses focus, not per key.
			s["continuous_update"] = false
		}
	case kindButton:
		s["button_style"], s["icon"], s["tooltip"] = "", "", ""
	case kindHTML:
		s["value"], s["placeholder"] = w.value, ""
	case kindStyle:
		switch w.styleName {
		case "ButtonStyleModel":
			s["button_color"], s["font_weight"] = nil, ""
		case "SliderStyleModel":
			s["description_width"], s["handle_color"] = "", nil
		default:
			s["description_width"] = ""
		}
	}
	return s
}

// labels are the selected options' labels, in the options' order.
func (w *widget) labels() []string {
	out := []string{}
	for _, i := range w.selected {
		out = append(out, w.options[i])
	}
	return out
}

// open is the data and metadata of the comm_open of a model with state s.
func (g generation) open(s map[string]any) (data, metadata map[string]any) {
	if g.legacy {
		return s, map[string]any{}
	}
	return map[string]any{"state": s, "buffer_paths": []any{}}, map[string]any{"version": protocol2}
}

// update is the comm_msg data that sets state s (part or all of a
// model's) in the front end.
func (g generation) update(s map[string]any) map[string]any {
	if g.legacy {
		return map[string]any{"method": "update", "state": s, "buffers": []any{}}
	}
	return map[string]any{"method": "update", "state": s, "buffer_paths": []any{}}
}

// view is the widget-view+json of a display_data showing the model id.
func (g generation) view(id string) map[string]any {
	if g.legacy {
		return map[string]any{"model_id": id}
	}
	return map[string]any{"model_id": id, "version_major": 2, "version_minor": 0}
}

// sent records s as held by the front end of w.
func (w *widget) sent(s map[string]any) {
	for k, v := range s {
		b, _ := json.Marshal(v)
		w.front[k] = string(b)
	}
}

// changes is what of w's state the front end does not hold yet; it is
// then recorded as held.
func (g generation) changes(w *widget) map[string]any {
	out := map[string]any{}
	for k, v := range g.state(w) {
		b, _ := json.Marshal(v)
		if w.front[k] != string(b) {
			out[k] = v
			w.front[k] = string(b)
		}
	}
	return out
}

// input is a value the front end set on a widget: a selection's indexes
// or a text.
type input struct {
	selected []int
	text     string
}

// input reads the value a front end's state change sets on w (ok false:
// it sets none), and records it as held by the front end: "index"
// (protocol 2) or "value" labels (legacy) for a selection, a list of
// them for a multiple one; "value" for a text. Other keys are ignored. A
// value of the wrong type or outside the options is an error.
func (w *widget) input(change map[string]json.RawMessage) (in input, ok bool, err error) {
	multiple := w.kind == kindSelectMultiple
	want := map[bool][2]string{true: {"a list of option indexes", "a list of option labels"}, false: {"an option's index", "an option's label"}}[multiple]
	switch w.kind {
	case kindSelectMultiple, kindSelectionSlider:
		if raw, has := change["index"]; has {
			idx, held, ok := decodeSelection[int](raw, multiple)
			if !ok {
				return in, false, fmt.Errorf("%s: index %s: want %s", w.description, raw, want[0])
			}
			for _, i := range idx {
				if i < 0 || i >= len(w.options) {
					return in, false, fmt.Errorf("%s: index %d is not an option: %d options (0 to %d)", w.description, i, len(w.options), len(w.options)-1)
				}
			}
			w.front["index"] = string(mustJSON(held))
			return input{selected: idx}, true, nil
		}
		if raw, has := change["value"]; has {
			labels, held, ok := decodeSelection[string](raw, multiple)
			if !ok {
				return in, false, fmt.Errorf("%s: value %s: want %s", w.description, raw, want[1])
			}
			var idx []int
			for _, l := range labels {
				i := slices.Index(w.options, l)
				if i < 0 {
					return in, false, fmt.Errorf("%s: %q is not an option: the options are %s", w.description, l, strings.Join(w.options, ", "))
				}
				idx = append(idx, i)
			}
			w.front["value"] = string(mustJSON(held))
			return input{selected: idx}, true, nil
		}
	case kindText:
		if raw, has := change["value"]; has {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return in, false, fmt.Errorf("%s: value %s: want a string", w.description, raw)
			}
			w.front["value"] = string(mustJSON(s))
			return input{text: s}, true, nil
		}
	}
	return in, false, nil
}

// decodeSelection reads a selection's value: a list of T when multiple,
// else one T (not null). It returns the values, what the front end holds
// now, and whether raw is such a value.
func decodeSelection[T any](raw json.RawMessage, multiple bool) ([]T, any, bool) {
	if multiple {
		var v []T
		if json.Unmarshal(raw, &v) != nil {
			return nil, nil, false
		}
		return v, v, true
	}
	var v *T
	if json.Unmarshal(raw, &v) != nil || v == nil {
		return nil, nil, false
	}
	return []T{*v}, *v, true
}

// mustJSON is v's JSON; v is an int, a string, or a list of them.
func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
