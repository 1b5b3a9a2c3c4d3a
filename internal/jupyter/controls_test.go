package jupyter

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/session"
)

// commOut is a message a comm message caused: its busy ... idle.
func (c *testClient) comm(typ string, content map[string]any) (string, []received) {
	c.t.Helper()
	id := c.send(c.shell, typ, content)
	outs := c.outputs(id, 60*time.Second)
	checkBusyIdle(c.t, outs)
	return id, outs
}

// commMsg sends data to a comm and returns what it caused.
func (c *testClient) commMsg(commID string, data map[string]any) (string, []received) {
	c.t.Helper()
	return c.comm("comm_msg", map[string]any{"comm_id": commID, "data": data})
}

// commError is the CommError a message caused, or "".
func commError(t *testing.T, outs []received, parent string) string {
	t.Helper()
	e, ok := find(outs, "error")
	if !ok {
		return ""
	}
	if e.parentID() != parent || e.content()["ename"] != "CommError" {
		t.Errorf("error %s, parent %s: want CommError with parent %s", e.Content, e.parentID(), parent)
	}
	return fmt.Sprint(e.content()["evalue"])
}

// shown is a widget the kernel opened: its comm_open's data and metadata,
// and its state (the data, or its "state" in protocol 2).
type shown struct {
	id             string
	data, metadata map[string]any
	state          map[string]any
}

// controlsShown runs 'controls' and returns the widgets opened, by comm
// id and by description, the display_data, and all the messages.
func (c *testClient) controlsShown() (map[string]shown, map[string]shown, received, []received) {
	c.t.Helper()
	r, outs := c.execute("controls", nil)
	if r.content()["status"] != "ok" {
		c.t.Fatalf("controls: %s", r.Content)
	}
	byID, byDesc := map[string]shown{}, map[string]shown{}
	for _, m := range outs {
		if m.Header.MsgType != "comm_open" {
			continue
		}
		cc := m.content()
		if cc["target_name"] != widgetTarget {
			c.t.Errorf("comm_open target %v", cc["target_name"])
		}
		var md map[string]any
		json.Unmarshal(m.Metadata, &md)
		data, _ := cc["data"].(map[string]any)
		st := data
		if s, ok := data["state"].(map[string]any); ok {
			st = s
		}
		w := shown{id: fmt.Sprint(cc["comm_id"]), data: data, metadata: md, state: st}
		byID[w.id] = w
		if d, _ := st["description"].(string); d != "" {
			byDesc[d] = w
		}
	}
	dd, ok := find(outs, "display_data")
	if !ok {
		c.t.Fatalf("controls: no display_data: %v", types(outs))
	}
	return byID, byDesc, dd, outs
}

// areaHTML is the last value the output area was updated to in outs.
func areaHTML(outs []received, area string) string {
	v := ""
	for _, m := range outs {
		if m.Header.MsgType != "comm_msg" || m.content()["comm_id"] != area {
			continue
		}
		d, _ := m.content()["data"].(map[string]any)
		s, _ := d["state"].(map[string]any)
		if h, ok := s["value"].(string); ok {
			v = h
		}
	}
	return v
}

// updateOf is the state of the last update of comm id in outs, or nil.
func updateOf(outs []received, id string) map[string]any {
	var st map[string]any
	for _, m := range outs {
		if m.Header.MsgType == "comm_msg" && m.content()["comm_id"] == id {
			d, _ := m.content()["data"].(map[string]any)
			if d["method"] == "update" {
				st, _ = d["state"].(map[string]any)
			}
		}
	}
	return st
}

func lastLine(s *session.Session) string {
	tr := s.Transcript()
	if len(tr) == 0 {
		return ""
	}
	return tr[len(tr)-1].Line
}

// comm_open, comm_msg, comm_close and comm_info_request as the messaging
// spec says: the version comm of the legacy front end is answered, kept
// and listed (with and without a target filter); other targets are
// closed; bad comm messages get a CommError; the kernel goes on.
func TestKernelComms(t *testing.T) {
	c := startKernel(t, kernelSetup{key: testKey})
	info := func(content map[string]any) map[string]any {
		t.Helper()
		r, outs := c.request("comm_info_request", content)
		checkBusyIdle(t, outs)
		comms, ok := r.content()["comms"].(map[string]any)
		if r.Header.MsgType != "comm_info_reply" || r.content()["status"] != "ok" || !ok {
			t.Fatalf("comm_info_reply %s", r.Content)
		}
		return comms
	}
	if got := info(map[string]any{}); len(got) != 0 {
		t.Errorf("comms at start: %v", got)
	}
	id, outs := c.comm("comm_open", map[string]any{"comm_id": "v1", "target_name": versionTarget, "data": map[string]any{}})
	v, ok := find(outs, "comm_msg")
	if !ok || v.parentID() != id || v.content()["comm_id"] != "v1" || !reflect.DeepEqual(v.content()["data"], map[string]any{"version": "~2.1.4"}) {
		t.Errorf("version comm: %v %s", types(outs), v.Content)
	}
	want := map[string]any{"v1": map[string]any{"target_name": versionTarget}}
	for _, filter := range []map[string]any{{}, {"target_name": versionTarget}} {
		if got := info(filter); !reflect.DeepEqual(got, want) {
			t.Errorf("comm_info %v: %v, want %v", filter, got, want)
		}
	}
	if got := info(map[string]any{"target_name": widgetTarget}); len(got) != 0 {
		t.Errorf("comm_info jupyter.widget: %v", got)
	}
	// The front end's answer to the version is taken quietly.
	_, outs = c.commMsg("v1", map[string]any{"validated": true, "frontend_version": "2.1.4"})
	if _, bad := find(outs, "error"); bad {
		t.Errorf("validated: %v", types(outs))
	}
	// Another target is closed at once.
	_, outs = c.comm("comm_open", map[string]any{"comm_id": "x1", "target_name": "some.target", "data": map[string]any{}})
	if cl, ok := find(outs, "comm_close"); !ok || cl.content()["comm_id"] != "x1" {
		t.Errorf("unknown target: %v", types(outs))
	}
	// Bad comm messages.
	for name, tc := range map[string]struct {
		typ     string
		content map[string]any
		want    string
	}{
		"unknown comm_id":   {"comm_msg", map[string]any{"comm_id": "nope", "data": map[string]any{"method": "request_state"}}, "no comm nope: controls shown before the kernel restarted no longer answer; run 'controls' again"},
		"no comm_id":        {"comm_msg", map[string]any{"data": map[string]any{}}, "no comm_id"},
		"data not a object": {"comm_msg", map[string]any{"comm_id": "v1", "data": "x"}, `data "x" is not a JSON object`},
		"close unknown":     {"comm_close", map[string]any{"comm_id": "nope", "data": map[string]any{}}, "no comm nope"},
		"open taken":        {"comm_open", map[string]any{"comm_id": "v1", "target_name": versionTarget, "data": map[string]any{}}, "already open"},
		"comm_id a number":  {"comm_open", map[string]any{"comm_id": 7, "target_name": versionTarget}, "content: want comm_id"},
	} {
		id, outs := c.comm(tc.typ, tc.content)
		if got := commError(t, outs, id); !strings.Contains(got, tc.want) {
			t.Errorf("%s: error %q, want %q", name, got, tc.want)
		}
	}
	if !strings.Contains(c.log.String(), "comm_msg: no comm nope") || !strings.Contains(c.log.String(), "comm_close: no comm nope") {
		t.Errorf("comm errors not logged:\n%s", c.log.String())
	}
	// Closing the version comm forgets it.
	_, outs = c.comm("comm_close", map[string]any{"comm_id": "v1", "data": map[string]any{}})
	if _, bad := find(outs, "error"); bad {
		t.Errorf("comm_close: %v", types(outs))
	}
	if got := info(map[string]any{}); len(got) != 0 {
		t.Errorf("comms after close: %v", got)
	}
	if r, _ := c.request("kernel_info_request", map[string]any{}); r.Header.MsgType != "kernel_info_reply" {
		t.Errorf("after the comm errors: %s", r.Header.MsgType)
	}
}

// With the legacy front end's version comm open, 'controls' sends
// ipywidgets 6 models: flat state, module jupyter-js-widgets ~2.1.4,
// labels as values, a display message; 'backbone' changes run commands.
func TestKernelControlsLegacy(t *testing.T) {
	c := startKernel(t, kernelSetup{key: testKey})
	c.comm("comm_open", map[string]any{"comm_id": "v1", "target_name": versionTarget, "data": map[string]any{}})
	byID, w, dd, outs := c.controlsShown()
	for _, s := range byID {
		if s.data["_model_module"] != legacyModule || s.data["_model_module_version"] != legacyVersion ||
			s.data["_view_module"] != legacyModule || s.data["_view_module_version"] != legacyVersion || s.data["state"] != nil ||
			len(s.metadata) != 0 || s.data["layout"] != nil {
			t.Errorf("legacy comm_open data %v metadata %v", s.data, s.metadata)
		}
	}
	want := map[string]string{"policy": "SelectMultipleModel", "tolerance": "SelectionSliderModel", "grid": "SelectMultipleModel",
		"n": "TextModel", "b": "TextModel", "evaluate": "ButtonModel", "tune": "ButtonModel", "cancel": "ButtonModel"}
	for d, m := range want {
		if w[d].state["_model_name"] != m {
			t.Errorf("%s: %v, want %s", d, w[d].state, m)
		}
	}
	if len(byID) != 13 { // 8 above, the output area, the tolerances' note, two HBoxes and the VBox
		t.Errorf("%d widgets, want 13", len(byID))
	}
	if got := fmt.Sprint(w["policy"].state["_options_labels"], w["policy"].state["value"]); got != "[conditional local online apriori eager] [conditional eager]" {
		t.Errorf("policy %s", got)
	}
	// The tolerance slider stands at the tightest of the three; the note
	// beside it, in an HBox, lists them.
	tol := w["tolerance"].state
	if tol["value"] != "2^-5" || fmt.Sprint(tol["_options_labels"]) != "[2^0 2^-1 2^-2 2^-3 2^-4 2^-5 2^-6 2^-7 2^-8 2^-9 2^-10]" ||
		tol["orientation"] != "horizontal" || tol["readout"] != true || tol["continuous_update"] != false || tol["_view_name"] != "SelectionSliderView" ||
		tol["index"] != nil || tol["behavior"] != nil {
		t.Errorf("tolerance %v", tol)
	}
	sweeps, _ := besideOf(byID, w["tolerance"].id)
	if st := byID[sweeps].state; st["_model_name"] != "HTMLModel" || !strings.Contains(fmt.Sprint(st["value"]), ">sweeps 2^-1, 2^-3, 2^-5</div>") {
		t.Errorf("beside the tolerance: %v", st)
	}
	if got := fmt.Sprint(w["grid"].state["_options_labels"], w["grid"].state["value"]); got != "[1x4 2x2 4x1] [2x2]" {
		t.Errorf("grid %s", got)
	}
	// ipywidgets 6 ignores rows: a class the output area's style sheet
	// sizes each list by (TestBrowserControlsClassic sees them fit).
	for name, n := range map[string]int{"policy": 5, "grid": 3} {
		if got := fmt.Sprint(w[name].state["_dom_classes"]); got != fmt.Sprintf("[approxtune-rows-%d]", n) {
			t.Errorf("%s: _dom_classes %s, want [approxtune-rows-%d]", name, got, n)
		}
	}
	for n := 2; n <= 6; n++ {
		if !strings.Contains(areaStyle, "."+rowsClass(n)+" select{height:") {
			t.Errorf("the area's style sheet does not size %s", rowsClass(n))
		}
	}
	if w["n"].state["value"] != "1024" || w["b"].state["value"] != "128" {
		t.Errorf("n %v b %v", w["n"].state["value"], w["b"].state["value"])
	}
	view := dd.content()["data"].(map[string]any)
	root, _ := view[WidgetViewMIME].(map[string]any)
	rootW, ok := byID[fmt.Sprint(root["model_id"])]
	if !ok || len(root) != 1 || rootW.state["_model_name"] != "VBoxModel" {
		t.Fatalf("display_data %s", dd.Content)
	}
	// The classic Notebook shows this text under the widgets, and alone
	// in a notebook reopened without their state: one short line.
	if plain, ok := view["text/plain"].(string); !ok || plain != "approxtune controls ('controls' shows them again)" {
		t.Errorf("legacy text/plain %q, want one short line", view["text/plain"])
	}
	disp, ok := find(outs, "comm_msg")
	if !ok || disp.content()["comm_id"] != root["model_id"] || fmt.Sprint(disp.content()["data"]) != "map[method:display]" {
		t.Errorf("no display message for the root: %v", types(outs))
	}
	area := areaOf(byID)
	if byID[area].state["_model_name"] != "HTMLModel" {
		t.Fatalf("output area %v", byID[area].state)
	}

	sess := c.k.sess
	// The slider moved: one tolerance, the command run as typed; the note
	// goes, the slider keeps what the front end holds.
	_, outs = c.commMsg(w["tolerance"].id, map[string]any{"method": "backbone", "sync_data": map[string]any{"value": "2^-2"}, "buffer_keys": []any{}})
	if got := sess.State().Tolerances; !reflect.DeepEqual(got, []float64{0.25}) || lastLine(sess) != "tolerance 2^-2" {
		t.Errorf("tolerance: %v, transcript %q", got, lastLine(sess))
	}
	if h := areaHTML(outs, area); !strings.Contains(h, "» tolerance 2^-2") {
		t.Errorf("output area %q", h)
	}
	if st := updateOf(outs, sweeps); fmt.Sprint(st) != "map[value:]" {
		t.Errorf("note after the slider moved: %v", st)
	}
	if st := updateOf(outs, w["tolerance"].id); st != nil {
		t.Errorf("the slider was sent %v", st)
	}
	_, outs = c.commMsg(w["policy"].id, map[string]any{"method": "backbone", "sync_data": map[string]any{"value": []string{"online", "eager"}}})
	if got := sess.State().Policies; !reflect.DeepEqual(got, []string{"online", "eager"}) || lastLine(sess) != "policy online,eager" {
		t.Errorf("policy: %v, transcript %q", got, lastLine(sess))
	}
	// Nothing selected: the session's error, and the control goes back.
	_, outs = c.commMsg(w["policy"].id, map[string]any{"method": "backbone", "sync_data": map[string]any{"value": []string{}}})
	if h := areaHTML(outs, area); !strings.Contains(h, "» policy") || !strings.Contains(h, "CommandError: policy: choose at least one") {
		t.Errorf("output area after an empty policy: %q", h)
	}
	if st := updateOf(outs, w["policy"].id); fmt.Sprint(st["value"]) != "[online eager]" {
		t.Errorf("policy not reset: %v", st)
	}
	// A text: applied on submit (ipywidgets 6 syncs every key), with the
	// value its throttle sends after the submit.
	steps := len(sess.Transcript())
	c.commMsg(w["n"].id, map[string]any{"method": "backbone", "sync_data": map[string]any{"value": "5"}})
	sub, _ := c.commMsg(w["n"].id, map[string]any{"method": "custom", "content": map[string]any{"event": "submit"}})
	if _, set := sess.State().Space["n"]; set {
		t.Errorf("n applied before submit")
	}
	c.commMsg(w["n"].id, map[string]any{"method": "backbone", "sync_data": map[string]any{"value": "512"}})
	outs = c.outputs(sub, 10*time.Second) // the submit's apply, a moment later
	checkBusyIdle(t, outs)
	if got := sess.State().Space["n"]; fmt.Sprint(got) != "[512]" || lastLine(sess) != "space n=512" || len(sess.Transcript()) != steps+1 {
		t.Errorf("n after submit: %v, transcript %q", got, lastLine(sess))
	}
	if h := areaHTML(outs, area); !strings.Contains(h, "» space n=512") {
		t.Errorf("output area %q", h)
	}
	// A typed command updates the controls.
	_, outs = c.execute("grid 1x4,4x1", nil)
	if st := updateOf(outs, w["grid"].id); fmt.Sprint(st) != "map[value:[1x4 4x1]]" {
		t.Errorf("grid after a typed command: %v", st)
	}
	_, outs = c.execute("tolerance 0.1,2^-4", nil)
	if st := updateOf(outs, w["tolerance"].id); st["value"] != "2^-4" || fmt.Sprint(st["_options_labels"]) != "[2^0 2^-1 2^-2 2^-3 0.1 2^-4 2^-5 2^-6 2^-7 2^-8 2^-9 2^-10]" {
		t.Errorf("tolerance after a typed command: %v", st)
	}
	if st := updateOf(outs, sweeps); !strings.Contains(fmt.Sprint(st["value"]), ">sweeps 0.1, 2^-4</div>") {
		t.Errorf("note after a typed command: %v", st)
	}
	c.commMsg(w["tolerance"].id, map[string]any{"method": "backbone", "sync_data": map[string]any{"value": "0.1"}})
	if got := sess.State().Tolerances; !reflect.DeepEqual(got, []float64{0.1}) || lastLine(sess) != "tolerance 0.1" {
		t.Errorf("tolerance: %v, transcript %q", got, lastLine(sess))
	}
	c.commMsg(w["tolerance"].id, map[string]any{"method": "backbone", "sync_data": map[string]any{"value": "2^-2"}})
	// request_state: the full state.
	_, outs = c.commMsg(w["tolerance"].id, map[string]any{"method": "request_state"})
	st := updateOf(outs, w["tolerance"].id)
	if st["value"] != "2^-2" || st["_model_name"] != "SelectionSliderModel" || st["description"] != "tolerance" {
		t.Errorf("request_state: %v", st)
	}
	if u, _ := find(outs, "comm_msg"); !reflect.DeepEqual(u.content()["data"].(map[string]any)["buffers"], []any{}) {
		t.Errorf("legacy update %s", u.Content)
	}
	// comm_info lists the widgets.
	r, _ := c.request("comm_info_request", map[string]any{"target_name": widgetTarget})
	if comms := r.content()["comms"].(map[string]any); len(comms) != 13 || comms[area] == nil {
		t.Errorf("comm_info: %s", r.Content)
	}
	// Malformed messages: an error each; nothing changes; the kernel goes on.
	before := sess.State()
	for name, tc := range map[string]struct {
		id   string
		data map[string]any
		want string
	}{
		"unknown method":   {w["tolerance"].id, map[string]any{"method": "frob"}, `unknown method "frob"`},
		"wrong type":       {w["tolerance"].id, map[string]any{"method": "backbone", "sync_data": map[string]any{"value": 5}}, "tolerance: value 5: want an option's label"},
		"a list":           {w["tolerance"].id, map[string]any{"method": "backbone", "sync_data": map[string]any{"value": []string{"2^-1"}}}, "want an option's label"},
		"null":             {w["tolerance"].id, map[string]any{"method": "backbone", "sync_data": map[string]any{"value": nil}}, "value null: want an option's label"},
		"outside options":  {w["tolerance"].id, map[string]any{"method": "backbone", "sync_data": map[string]any{"value": "2^-99"}}, `tolerance: "2^-99" is not an option: the options are 2^0, 2^-1`},
		"not a policy":     {w["policy"].id, map[string]any{"method": "backbone", "sync_data": map[string]any{"value": "eager"}}, "want a list of option labels"},
		"text not string":  {w["n"].id, map[string]any{"method": "backbone", "sync_data": map[string]any{"value": []int{1}}}, "want a string"},
		"no sync_data":     {w["n"].id, map[string]any{"method": "backbone"}, "without sync_data"},
		"sync_data array":  {w["n"].id, map[string]any{"method": "backbone", "sync_data": []int{1}}, "data: sync_data [1]: want an object"},
		"click on a text":  {w["n"].id, map[string]any{"method": "custom", "content": map[string]any{"event": "click"}}, "which is no button"},
		"unknown event":    {w["evaluate"].id, map[string]any{"method": "custom", "content": map[string]any{"event": "dblclick"}}, `unknown event "dblclick"`},
		"submit on button": {w["tune"].id, map[string]any{"method": "custom", "content": map[string]any{"event": "submit"}}, "which is no text"},
	} {
		id, outs := c.commMsg(tc.id, tc.data)
		if got := commError(t, outs, id); !strings.Contains(got, tc.want) {
			t.Errorf("%s: error %q, want %q", name, got, tc.want)
		}
	}
	if after := sess.State(); !reflect.DeepEqual(after, before) {
		t.Errorf("a malformed message changed the state: %+v", after)
	}
	if r, _ := c.request("kernel_info_request", map[string]any{}); r.Header.MsgType != "kernel_info_reply" {
		t.Errorf("after the malformed messages: %s", r.Header.MsgType)
	}
}

// Without the version comm, 'controls' sends protocol 2: state under
// "state", metadata version 2.1.0, models of @jupyter-widgets 2.0.0 with
// a LayoutModel and a style model each, a widget view of version 2;
// 'update' changes run commands; a selection's value is its indexes.
func TestKernelControlsProtocol2(t *testing.T) {
	c := startKernel(t, kernelSetup{key: testKey})
	byID, w, dd, outs := c.controlsShown()
	opened := map[string]int{} // comm id -> position
	for i, m := range outs {
		if m.Header.MsgType == "comm_open" {
			opened[fmt.Sprint(m.content()["comm_id"])] = i
		}
	}
	for id, s := range byID {
		if s.metadata["version"] != "2.1.0" || !reflect.DeepEqual(s.data["buffer_paths"], []any{}) || len(s.data) != 2 {
			t.Errorf("protocol 2 comm_open data %v metadata %v", s.data, s.metadata)
		}
		st := s.state
		if st["_model_module_version"] != "2.0.0" || st["_view_module_version"] != "2.0.0" {
			t.Errorf("versions %v", st)
		}
		// Every widget refers to its layout (and style) opened before it.
		for _, key := range []string{"layout", "style"} {
			r, has := st[key].(string)
			if !has {
				continue
			}
			sub, ok := byID[strings.TrimPrefix(r, "IPY_MODEL_")]
			if !strings.HasPrefix(r, "IPY_MODEL_") || !ok || opened[sub.id] > opened[id] {
				t.Errorf("%v %s: %q not opened before", st["_model_name"], key, r)
			}
		}
		name := fmt.Sprint(st["_model_name"])
		switch {
		case name == "LayoutModel":
			if st["_model_module"] != baseModule || st["_view_name"] != "LayoutView" {
				t.Errorf("layout %v", st)
			}
		case strings.HasSuffix(name, "StyleModel"):
			if st["_model_module"] != controlsModule || st["_view_module"] != baseModule || st["_view_name"] != "StyleView" {
				t.Errorf("style %v", st)
			}
		default:
			if st["_model_module"] != controlsModule || st["_view_module"] != controlsModule || st["layout"] == nil {
				t.Errorf("widget %v", st)
			}
		}
	}
	styles := map[string]string{"policy": "DescriptionStyleModel", "tolerance": "SliderStyleModel", "n": "TextStyleModel", "evaluate": "ButtonStyleModel"}
	for d, sm := range styles {
		ref := strings.TrimPrefix(fmt.Sprint(w[d].state["style"]), "IPY_MODEL_")
		if byID[ref].state["_model_name"] != sm {
			t.Errorf("%s style %v, want %s", d, byID[ref].state["_model_name"], sm)
		}
	}
	tol := w["tolerance"].state
	if fmt.Sprint(tol["_options_labels"]) != "[2^0 2^-1 2^-2 2^-3 2^-4 2^-5 2^-6 2^-7 2^-8 2^-9 2^-10]" || tol["index"] != 5.0 ||
		tol["orientation"] != "horizontal" || tol["readout"] != true || tol["continuous_update"] != false || tol["behavior"] != "drag-tap" ||
		tol["_view_name"] != "SelectionSliderView" || tol["value"] != nil {
		t.Errorf("tolerance %v", tol)
	}
	style := byID[strings.TrimPrefix(fmt.Sprint(tol["style"]), "IPY_MODEL_")].state
	if h, ok := style["handle_color"]; !ok || h != nil || style["description_width"] != "" {
		t.Errorf("tolerance style %v", style)
	}
	sweeps, box := besideOf(byID, w["tolerance"].id)
	if st := byID[sweeps].state; st["_model_name"] != "HTMLModel" || !strings.Contains(fmt.Sprint(st["value"]), ">sweeps 2^-1, 2^-3, 2^-5</div>") || byID[box].state["layout"] == nil {
		t.Errorf("beside the tolerance: %v", st)
	}
	if w["n"].state["continuous_update"] != false {
		t.Errorf("n %v", w["n"].state)
	}
	view := dd.content()["data"].(map[string]any)[WidgetViewMIME].(map[string]any)
	if byID[fmt.Sprint(view["model_id"])].state["_model_name"] != "VBoxModel" || view["version_major"] != 2.0 || view["version_minor"] != 0.0 {
		t.Errorf("widget view %v", view)
	}
	for _, m := range outs {
		if m.Header.MsgType == "comm_msg" {
			t.Errorf("protocol 2: a comm_msg at display: %s", m.Content)
		}
	}

	sess := c.k.sess
	_, outs = c.commMsg(w["tolerance"].id, map[string]any{"method": "update", "state": map[string]any{"index": 10}, "buffer_paths": []any{}})
	if got := sess.State().Tolerances; !reflect.DeepEqual(got, []float64{1.0 / 1024}) || lastLine(sess) != "tolerance 2^-10" {
		t.Errorf("tolerance: %v, transcript %q", got, lastLine(sess))
	}
	if h := areaHTML(outs, areaOf(byID)); !strings.Contains(h, "» tolerance 2^-10") {
		t.Errorf("output area %q", h)
	}
	if st := updateOf(outs, sweeps); fmt.Sprint(st) != "map[value:]" {
		t.Errorf("note after the slider moved: %v", st)
	}
	// A text is applied as it comes (on Enter or blur).
	c.commMsg(w["b"].id, map[string]any{"method": "update", "state": map[string]any{"value": " 64, 256"}, "buffer_paths": []any{}})
	if got := sess.State().Space["b"]; fmt.Sprint(got) != "[64 256]" || lastLine(sess) != "space b=64,256" {
		t.Errorf("b: %v, transcript %q", got, lastLine(sess))
	}
	// A bad value: the session's error in the output area; the text stays.
	_, outs = c.commMsg(w["b"].id, map[string]any{"method": "update", "state": map[string]any{"value": "sixty"}, "buffer_paths": []any{}})
	area := areaOf(byID)
	if h := areaHTML(outs, area); !strings.Contains(h, "» space b=sixty") || !strings.Contains(h, "CommandError: column 9: b: &#34;sixty&#34; is not valid: want an integer from 1 to 65536") {
		t.Errorf("output area %q", h)
	}
	if st := updateOf(outs, w["b"].id); st != nil {
		t.Errorf("the text was reset: %v", st)
	}
	_, outs = c.commMsg(w["b"].id, map[string]any{"method": "update", "state": map[string]any{"value": "6#4"}, "buffer_paths": []any{}})
	if h := areaHTML(outs, area); !strings.Contains(h, "a value holds no quote and no &#39;#&#39;") {
		t.Errorf("output area %q", h)
	}
	// request_state: update with buffer_paths.
	_, outs = c.commMsg(w["tolerance"].id, map[string]any{"method": "request_state"})
	u, _ := find(outs, "comm_msg")
	d := u.content()["data"].(map[string]any)
	st := d["state"].(map[string]any)
	if d["method"] != "update" || !reflect.DeepEqual(d["buffer_paths"], []any{}) || st["index"] != 10.0 || st["_model_name"] != "SelectionSliderModel" || st["behavior"] != "drag-tap" {
		t.Errorf("request_state: %s", u.Content)
	}
	before := sess.State()
	for _, tc := range []struct {
		id    string
		index any
		want  string
	}{
		{w["grid"].id, []int{3}, "grid: index 3 is not an option: 3 options (0 to 2)"},
		{w["tolerance"].id, 11, "tolerance: index 11 is not an option: 11 options (0 to 10)"},
		{w["tolerance"].id, -1, "tolerance: index -1 is not an option"},
		{w["tolerance"].id, []int{2}, "tolerance: index [2]: want an option's index"},
		{w["tolerance"].id, nil, "tolerance: index null: want an option's index"},
		{w["tolerance"].id, 2.5, "tolerance: index 2.5: want an option's index"},
		{w["policy"].id, 2, "policy: index 2: want a list of option indexes"},
	} {
		id, outs := c.commMsg(tc.id, map[string]any{"method": "update", "state": map[string]any{"index": tc.index}, "buffer_paths": []any{}})
		if got := commError(t, outs, id); !strings.Contains(got, tc.want) {
			t.Errorf("index %v: %q, want %q", tc.index, got, tc.want)
		}
	}
	if after := sess.State(); !reflect.DeepEqual(after, before) {
		t.Errorf("a bad index changed the state: %+v", after)
	}
}

// areaOf is the comm id of the output area among the widgets shown: the
// last of the VBox's children.
func areaOf(byID map[string]shown) string {
	for _, s := range byID {
		if s.state["_model_name"] == "VBoxModel" {
			ch, _ := s.state["children"].([]any)
			if len(ch) > 0 {
				return strings.TrimPrefix(fmt.Sprint(ch[len(ch)-1]), "IPY_MODEL_")
			}
		}
	}
	return ""
}

// besideOf is the model in an HBox after the widget id, and that HBox's
// comm id; "" when it is in none.
func besideOf(byID map[string]shown, id string) (next, box string) {
	for boxID, s := range byID {
		ch, _ := s.state["children"].([]any)
		for i, c := range ch {
			if s.state["_model_name"] == "HBoxModel" && c == "IPY_MODEL_"+id && i+1 < len(ch) {
				return strings.TrimPrefix(fmt.Sprint(ch[i+1]), "IPY_MODEL_"), boxID
			}
		}
	}
	return "", ""
}

var click = map[string]any{"method": "custom", "content": map[string]any{"event": "click"}}

// The evaluate button runs a sweep as the typed command would (journaled,
// in the transcript) with its live output in the output area; a click on
// evaluate while it runs is answered at once, and so is cancel, which
// stops the sweep as an interrupt does.
func TestKernelControlsSweep(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	c := startKernel(t, kernelSetup{key: testKey, binary: bin, interval: 200 * time.Millisecond})
	if r, _ := c.execute("workload synthetic steps=20 count=2 mean_us=500\nreps 1\npolicy conditional\ntolerance 2^-1", nil); r.content()["status"] != "ok" {
		t.Fatalf("setup: %s", r.Content)
	}
	byID, w, _, _ := c.controlsShown()
	area := areaOf(byID)
	sess := c.k.sess

	// A text edited but not applied yet is applied before the sweep.
	c.k.comms.mu.Lock()
	c.k.comms.widgets[w["steps"].id].w.value = "30"
	c.k.comms.mu.Unlock()
	_, outs := c.commMsg(w["evaluate"].id, click)
	var updates int
	for _, m := range outs {
		if m.Header.MsgType == "comm_msg" && m.content()["comm_id"] == area {
			updates++
		}
	}
	h := areaHTML(outs, area)
	for _, want := range []string{"» space steps=30", "» evaluate", "starting a local agent: 4 ranks under mpirun", "approxtune-sweep", "1/1 runs", "(ok)", `class="approxtune-best"`} {
		if !strings.Contains(h, want) {
			t.Errorf("output area lacks %q:\n%s", want, h)
		}
	}
	if updates < 3 {
		t.Errorf("%d updates of the output area, want the sweep's progress live", updates)
	}
	if tr := sess.Transcript(); len(tr) < 2 || tr[len(tr)-2].Line != "space steps=30" || tr[len(tr)-1].Line != "evaluate" {
		t.Errorf("transcript ends %q", lastLine(sess))
	}
	sws, err := session.ReadJournal(filepath.Join(sess.Dir(), session.JournalName))
	if err != nil || len(sws) != 1 || sws[0].Status != session.StatusOK || len(sws[0].Results) == 0 || sws[0].Spec.Mode != "evaluate" {
		t.Fatalf("journal: %v %+v", err, sws)
	}

	// A longer sweep: evaluate again while it runs, then cancel.
	if r, _ := c.execute("space steps=30 count=4 mean_us=4000 grid=1x4,2x2,4x1\npolicy conditional,eager\ntolerance 0", nil); r.content()["status"] != "ok" {
		t.Fatalf("setup: %s", r.Content)
	}
	ev := c.send(c.shell, "comm_msg", map[string]any{"comm_id": w["evaluate"].id, "data": click})
	var evOuts []received
	deadline := time.After(2 * time.Minute)
	for started := false; !started; {
		select {
		case m := <-c.iopubC:
			if m.parentID() == ev {
				evOuts = append(evOuts, m)
				if m.Header.MsgType == "status" && m.content()["execution_state"] == "idle" {
					t.Fatalf("the sweep ended before a result: %s", areaHTML(evOuts, area))
				}
				h := areaHTML([]received{m}, area)
				started = strings.Contains(h, "runs") && !strings.Contains(h, ": 0/")
			}
		case <-deadline:
			t.Fatalf("no result in the output area: %s", areaHTML(evOuts, area))
		}
	}
	busy := func(name string) []received {
		t.Helper()
		id := c.send(c.shell, "comm_msg", map[string]any{"comm_id": w[name].id, "data": click})
		var got []received
		deadline := time.After(10 * time.Second)
		for {
			select {
			case m := <-c.iopubC:
				switch m.parentID() {
				case ev:
					evOuts = append(evOuts, m)
					if m.Header.MsgType == "status" && m.content()["execution_state"] == "idle" {
						t.Fatalf("%s: the sweep ended first", name)
					}
				case id:
					got = append(got, m)
					if m.Header.MsgType == "status" && m.content()["execution_state"] == "idle" {
						checkBusyIdle(t, got)
						return got
					}
				}
			case <-deadline:
				t.Fatalf("%s: not answered while the sweep runs", name)
			}
		}
	}
	if h := areaHTML(busy("tune"), area); !strings.Contains(h, "» tune: a sweep is running; wait for its end, or cancel it") {
		t.Errorf("tune while a sweep runs: %s", h)
	}
	// A cell sent meanwhile waits for the controls' sweep, and says so at
	// once: it had sat busy and silent until the sweep ended.
	cell := c.send(c.shell, "execute_request", map[string]any{"code": "status", "silent": false, "store_history": true,
		"user_expressions": map[string]any{}, "allow_stdin": false, "stop_on_error": true})
	for said, wait := false, time.After(10*time.Second); !said; {
		select {
		case m := <-c.iopubC:
			switch m.parentID() {
			case ev:
				evOuts = append(evOuts, m)
			case cell:
				said = m.Header.MsgType == "stream" && strings.Contains(fmt.Sprint(m.content()["text"]), "» waiting for the sweep the controls started: this cell runs when it ends")
			}
		case <-wait:
			t.Fatal("a cell sent while the controls' sweep runs: no note that it waits")
		}
	}
	if h := areaHTML(busy("cancel"), area); !strings.Contains(h, "» cancel") {
		t.Errorf("cancel: %s", h)
	}
	evOuts = append(evOuts, c.outputs(ev, 2*time.Minute)...)
	h = areaHTML(evOuts, area)
	for _, want := range []string{"(cancelled)", "Interrupted: sweep 2 cancelled after"} {
		if !strings.Contains(h, want) {
			t.Errorf("output area lacks %q:\n%s", want, h)
		}
	}
	// The cancel's advice was for while the sweep ran, not its end.
	if strings.Contains(h, "interrupt again to stop") {
		t.Errorf("the final display keeps the cancel's advice:\n%s", h)
	}
	if sw := sess.Last(); sw == nil || sw.ID != 2 || sw.Status != session.StatusCancelled {
		t.Errorf("last sweep %+v", sw)
	}
	// The cell that waited runs, and the kernel goes on.
	if r := c.reply(c.shellC, cell, time.Minute); r.content()["status"] != "ok" {
		t.Errorf("the cell that waited for the sweep: %s", r.Content)
	}
	if r, _ := c.execute("status", nil); r.content()["status"] != "ok" {
		t.Errorf("after the cancel: %s", r.Content)
	}
	// A typed sweep too applies a box edited and left, and says so in
	// its cell (the box had shown one value and the sweep run another);
	// a command typed before it in the cell wins over the box.
	if r, _ := c.execute("space steps=20 count=2 mean_us=500 grid=2x2\npolicy conditional\ntolerance 2^-1", nil); r.content()["status"] != "ok" {
		t.Fatalf("setup: %s", r.Content)
	}
	c.k.comms.mu.Lock()
	c.k.comms.widgets[w["steps"].id].w.value = "25"
	c.k.comms.mu.Unlock()
	if r, _ := c.execute("space steps=15\nevaluate", nil); r.content()["status"] != "ok" || fmt.Sprint(sess.Last().Configs[0].Int("steps")) != "15" {
		t.Fatalf("a typed space then evaluate, with a box edited: %s, swept steps %v", r.Content, sess.Last().Configs[0].Int("steps"))
	}
	c.k.comms.mu.Lock()
	c.k.comms.widgets[w["steps"].id].w.value = "25"
	c.k.comms.mu.Unlock()
	r, outs := c.execute("evaluate", nil)
	var said strings.Builder
	for _, m := range outs {
		if m.parentID() == r.parentID() {
			fmt.Fprint(&said, m.content()["text"])
			if d, ok := m.content()["data"].(map[string]any); ok {
				fmt.Fprint(&said, d["text/plain"])
			}
		}
	}
	if r.content()["status"] != "ok" || !strings.Contains(said.String(), "applied the controls' steps box first: space steps=25") || fmt.Sprint(sess.State().Space["steps"]) != "[25]" {
		t.Errorf("a typed evaluate with steps=25 in its box: %s; steps %v; the cell said:\n%s", r.content()["status"], sess.State().Space["steps"], said.String())
	}
	if tr := sess.Transcript(); len(tr) < 2 || tr[len(tr)-2].Line != "space steps=25" || tr[len(tr)-1].Line != "evaluate" {
		t.Errorf("transcript ends %q", lastLine(sess))
	}
	// The cancel button stops a sweep a cell started, as an interrupt
	// does (a review had seen "» cancel: nothing is running" and the
	// sweep go on).
	if r, _ := c.execute("space steps=30 count=4 mean_us=4000 grid=1x4,2x2,4x1\npolicy conditional,eager\ntolerance 0", nil); r.content()["status"] != "ok" {
		t.Fatalf("setup: %s", r.Content)
	}
	long := c.send(c.shell, "execute_request", map[string]any{"code": "evaluate", "silent": false, "store_history": true,
		"user_expressions": map[string]any{}, "allow_stdin": false, "stop_on_error": true})
	for wait := time.After(2 * time.Minute); !sess.Sweeping() || sess.Last() == nil || len(sess.Last().Results) == 0; {
		select {
		case <-wait:
			t.Fatal("the cell's sweep made no result")
		case <-time.After(50 * time.Millisecond):
		}
	}
	if h := areaHTML(busy("evaluate"), area); !strings.Contains(h, "» evaluate: a sweep is running") {
		t.Errorf("evaluate during a cell's sweep: %s", h)
	}
	cancelOuts := busy("cancel")
	if h := areaHTML(cancelOuts, area); !strings.Contains(h, "» cancel") || strings.Contains(h, "nothing is running") {
		t.Errorf("cancel during a cell's sweep: %s", h)
	}
	if r := c.reply(c.shellC, long, 2*time.Minute); r.content()["status"] != "error" || sess.Last().Status != session.StatusCancelled {
		t.Errorf("the cell whose sweep was cancelled: %s, sweep %s", r.Content, sess.Last().Status)
	}
}
