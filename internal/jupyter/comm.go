package jupyter

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/approxtune/approxtune/internal/display"
	"github.com/approxtune/approxtune/session"
)

// Comms (Jupyter messaging's comm_open, comm_msg, comm_close and
// comm_info) carry the widgets of 'controls'. The kernel accepts one
// target from a front end, jupyter.widget.version, which the legacy
// widget front end (ipywidgets 6) opens at connect: it is answered with
// the version wanted, and from then on widgets are sent in the legacy
// generation; without it they are sent in protocol 2 (see widgets.go).
// Other targets are closed at once. Every comm message handled is
// bracketed by iopub status busy and idle (front ends send a model's next
// change after that idle); a malformed one (bad JSON, an unknown comm_id,
// method or event, a value of the wrong type or outside the options) is
// answered with an iopub error, CommError, whose parent is the message,
// and logged.
//
// Comm messages are handled on the shell goroutine, in order with the
// requests, as changing a control runs a command on the session. Clicks
// on cancel, and on evaluate or tune while a sweep runs, are answered
// where shell messages are read, so they do not wait behind the sweep.

// comms are the kernel's comms. Their mutex is taken by the shell
// goroutine, the shell reader (clicks), the control goroutine
// (comm_info_request) and a command's output (the output area).
type comms struct {
	mu       sync.Mutex
	legacy   bool                 // a jupyter.widget.version comm was opened
	versions map[string]bool      // the open version comms
	widgets  map[string]widgetRef // the open widget comms
	// sweepMsg is the msg_id of the evaluate or tune click queued or
	// running on the shell goroutine, or "".
	sweepMsg string
	sets     []*controlSet
}

// widgetRef is a widget comm: the widget and its set.
type widgetRef struct {
	set *controlSet
	w   *widget
}

func newComms() *comms {
	return &comms{versions: map[string]bool{}, widgets: map[string]widgetRef{}}
}

// commContent is the content of comm_open, comm_msg and comm_close.
type commContent struct {
	CommID     string          `json:"comm_id"`
	TargetName string          `json:"target_name"`
	Data       json.RawMessage `json:"data"`
}

// commData is a widget comm_msg's data.
type commData struct {
	Method   string                     `json:"method"`
	SyncData map[string]json.RawMessage `json:"sync_data"` // legacy 'backbone'
	State    map[string]json.RawMessage `json:"state"`     // protocol 2 'update'
	Content  struct {
		Event string `json:"event"`
	} `json:"content"`
}

// parseComm reads a comm message's content and, when data is given, its
// data. Its errors say what is wrong in the message's terms.
func parseComm(m *Message, data *commData) (commContent, error) {
	var c commContent
	if err := json.Unmarshal(m.Content, &c); err != nil {
		return c, fmt.Errorf("content: want comm_id and target_name strings and a data object (%v)", err)
	}
	if c.CommID == "" {
		return c, errors.New("no comm_id")
	}
	if data == nil || len(c.Data) == 0 {
		return c, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(c.Data, &raw); err != nil {
		return c, fmt.Errorf("data %.40s is not a JSON object", c.Data)
	}
	for _, f := range []struct {
		key  string
		dst  any
		want string
	}{{"method", &data.Method, "a string"}, {"sync_data", &data.SyncData, "an object"}, {"state", &data.State, "an object"},
		{"content", &data.Content, `an object like {"event": "click"}`}} {
		if r, ok := raw[f.key]; ok {
			if err := json.Unmarshal(r, f.dst); err != nil {
				return c, fmt.Errorf("data: %s %.40s: want %s", f.key, r, f.want)
			}
		}
	}
	return c, nil
}

// handleComm serves comm_open, comm_msg and comm_close (on the shell
// goroutine): busy, the message, idle; a bad message gets an error.
func (k *Kernel) handleComm(r request) {
	k.status(r.msg, "busy")
	defer k.status(r.msg, "idle")
	defer k.endSweep(r.msg.Header.MsgID)
	var err error
	switch r.msg.Header.MsgType {
	case "comm_open":
		err = k.commOpen(r.msg)
	case "comm_msg":
		err = k.commMsg(r.msg)
	case "comm_close":
		err = k.commClose(r.msg)
	}
	if err != nil {
		k.commError(r.msg, err)
	}
}

// commError answers a bad comm message: an iopub error, and the log.
func (k *Kernel) commError(m *Message, err error) {
	k.log.Printf("%s: %v", m.Header.MsgType, err)
	k.publish("error", m, map[string]any{"ename": "CommError", "evalue": err.Error(), "traceback": []string{"CommError: " + err.Error()}})
}

// commOpen answers a front end's comm_open: the version comm is kept and
// answered with the version wanted; other targets are closed.
func (k *Kernel) commOpen(m *Message) error {
	c, err := parseComm(m, nil)
	if err != nil {
		return err
	}
	k.comms.mu.Lock()
	_, taken := k.comms.widgets[c.CommID]
	taken = taken || k.comms.versions[c.CommID]
	first := !k.comms.legacy
	if !taken && c.TargetName == versionTarget {
		k.comms.legacy = true
		k.comms.versions[c.CommID] = true
	}
	k.comms.mu.Unlock()
	switch {
	case taken:
		return fmt.Errorf("comm_id %s is already open", c.CommID)
	case c.TargetName == versionTarget:
		if first {
			k.log.Printf("widget front end: %s", generation{legacy: true})
		}
		k.publish("comm_msg", m, map[string]any{"comm_id": c.CommID, "data": map[string]any{"version": legacyVersion}})
	default:
		// No such target here: close it, as ipykernel does.
		k.publish("comm_close", m, map[string]any{"comm_id": c.CommID, "data": map[string]any{}})
	}
	return nil
}

// commClose forgets a comm the front end closed.
func (k *Kernel) commClose(m *Message) error {
	c, err := parseComm(m, nil)
	if err != nil {
		return err
	}
	k.comms.mu.Lock()
	defer k.comms.mu.Unlock()
	if k.comms.versions[c.CommID] {
		delete(k.comms.versions, c.CommID)
		return nil
	}
	ref, ok := k.comms.widgets[c.CommID]
	if !ok {
		return fmt.Errorf("no comm %s", c.CommID)
	}
	delete(k.comms.widgets, c.CommID)
	for _, w := range ref.set.models {
		if _, open := k.comms.widgets[w.id]; open {
			return nil
		}
	}
	// The set's last comm: forget the set.
	for i, s := range k.comms.sets {
		if s == ref.set {
			k.comms.sets = append(k.comms.sets[:i], k.comms.sets[i+1:]...)
			break
		}
	}
	return nil
}

// commInfo answers a comm_info_request: the open comms, of target_name
// when it is given.
func (k *Kernel) commInfo(m *Message) (map[string]any, error) {
	var c struct {
		TargetName *string `json:"target_name"`
	}
	if err := json.Unmarshal(m.Content, &c); err != nil {
		return nil, fmt.Errorf("comm_info_request: target_name: want a string (%w)", err)
	}
	out := map[string]any{}
	add := func(id, target string) {
		if c.TargetName == nil || *c.TargetName == target {
			out[id] = map[string]string{"target_name": target}
		}
	}
	k.comms.mu.Lock()
	defer k.comms.mu.Unlock()
	for id := range k.comms.versions {
		add(id, versionTarget)
	}
	for id := range k.comms.widgets {
		add(id, widgetTarget)
	}
	return map[string]any{"status": "ok", "comms": out}, nil
}

// commMsg serves a front end's message to a comm (on the shell
// goroutine): the version comm's answer; a widget's request_state, value
// change ('backbone' or 'update'), click or submit. A change runs its
// command through the session.
func (k *Kernel) commMsg(m *Message) error {
	var d commData
	c, err := parseComm(m, &d)
	if err != nil {
		return err
	}
	k.comms.mu.Lock()
	if k.comms.versions[c.CommID] {
		k.comms.mu.Unlock()
		var v struct {
			Validated *bool  `json:"validated"`
			Version   string `json:"frontend_version"`
		}
		json.Unmarshal(c.Data, &v)
		if v.Validated != nil && !*v.Validated {
			k.log.Printf("the widget front end %s does not take version %s", v.Version, legacyVersion)
		}
		return nil
	}
	ref, ok := k.comms.widgets[c.CommID]
	if !ok {
		k.comms.mu.Unlock()
		// Controls shown by an earlier kernel (before a restart): this
		// one never opened them.
		return fmt.Errorf("no comm %s: controls shown before the kernel restarted no longer answer; run 'controls' again for live ones", c.CommID)
	}
	set, w := ref.set, ref.w
	var line string       // a command to run
	var empty string      // a choice left with nothing chosen: its command
	var text *widget      // a parameter's text to apply
	var pending []*widget // evaluate or tune: texts to apply first
	var sweep bool
	switch d.Method {
	case "request_state":
		s := set.gen.state(w)
		w.sent(s)
		k.publish("comm_msg", m, map[string]any{"comm_id": w.id, "data": set.gen.update(s)})
	case "backbone", "update":
		change, key := d.SyncData, "sync_data"
		if d.Method == "update" {
			change, key = d.State, "state"
		}
		var in input
		in, ok, err = w.input(change)
		switch {
		case change == nil:
			err = fmt.Errorf("%s without %s", d.Method, key)
		case err != nil || !ok:
		case w.kind == kindSelectMultiple || w.kind == kindSelectionSlider:
			line = set.choice(w).Command(in.selected)
			if len(in.selected) == 0 {
				// The bare command shows the setting: nothing chosen is
				// an error here, and the control goes back.
				empty, line = line, ""
			}
		case w.kind == kindText:
			w.value = in.text
			if !set.gen.legacy {
				// Protocol 2 sends the text on Enter or when the box
				// loses focus; ipywidgets 6 at every key, then 'submit'.
				text = w
			}
		}
	case "custom":
		switch ev := d.Content.Event; {
		case ev == "click" && (w == set.evaluate || w == set.tune):
			sweep, pending = true, set.pending()
		case ev == "click" && w == set.cancel:
			// Served at once by the shell reader; here nothing runs.
			set.note("» cancel: nothing is running", "note")
			k.sendChanges(set.area, m)
		case ev == "submit" && w.kind == kindText && set.gen.legacy:
			// ipywidgets 6 sends a value held back by its throttle after
			// the submit: apply what the box holds a moment later.
			k.deferApply(set, w, m)
		case ev == "submit" && w.kind == kindText:
			// Protocol 2's update, which follows, carries the value.
		case ev == "click" || ev == "submit":
			err = fmt.Errorf("%s on %s, which is no %s", ev, describeWidget(w), map[string]string{"click": "button", "submit": "text"}[ev])
		default:
			err = fmt.Errorf("unknown event %q (want click or submit)", ev)
		}
	default:
		err = fmt.Errorf("unknown method %q (want request_state, backbone, update or custom)", d.Method)
	}
	k.comms.mu.Unlock()
	if err != nil {
		return err
	}
	if line != "" {
		k.runControl(set, line, m)
	}
	if empty != "" {
		k.showError(set, empty, &session.Error{Msg: empty + ": choose at least one"}, m)
		k.refreshControls(m)
	}
	if text != nil {
		k.applyText(set, text, m)
	}
	if sweep {
		// What the parameters show is what the sweep runs.
		for _, p := range pending {
			if !k.applyText(set, p, m) {
				return nil
			}
		}
		k.runControl(set, w.description, m)
	}
	return nil
}

// applyText runs the command that applies a parameter's text, unless the
// session holds it already; a text that cannot be typed as a value is
// shown as an error. It reports whether the session holds the text now.
func (k *Kernel) applyText(set *controlSet, w *widget, parent *Message) bool {
	k.comms.mu.Lock()
	line, err := set.textCommand(w)
	value := w.value
	k.comms.mu.Unlock()
	var ie *session.Error
	switch {
	case errors.As(err, &ie):
		k.showError(set, fmt.Sprintf("space %s=%s", w.description, value), ie, parent)
		return false
	case line != "":
		return k.runControl(set, line, parent)
	}
	return true
}

// submitDelay is how long after a legacy text's submit its value is
// applied: the front end sends the value its throttle held back when the
// kernel is idle after the submit, within milliseconds.
const submitDelay = 250 * time.Millisecond

// deferApply applies, on the shell goroutine, what the text w holds
// submitDelay from now, in answer to the submit m.
func (k *Kernel) deferApply(set *controlSet, w *widget, m *Message) {
	apply := func() {
		k.status(m, "busy")
		defer k.status(m, "idle")
		k.applyText(set, w, m)
	}
	time.AfterFunc(submitDelay, func() {
		select {
		case k.shellQ <- request{msg: m, do: apply}:
		case <-k.done:
		}
	})
}

// describeWidget names a widget in an error.
func describeWidget(w *widget) string {
	if w.description != "" {
		return fmt.Sprintf("%q (%s)", w.description, modelOf(w.kind).name)
	}
	return modelOf(w.kind).name
}

// sendChanges sends what of w's state its front end does not hold yet;
// comms.mu is held.
func (k *Kernel) sendChanges(w *widget, parent *Message) {
	ref, open := k.comms.widgets[w.id]
	if !open {
		return
	}
	if ch := ref.set.gen.changes(w); len(ch) > 0 {
		k.publish("comm_msg", parent, map[string]any{"comm_id": w.id, "data": ref.set.gen.update(ch)})
	}
}

// runControl runs a command line for a control, as if typed (the session
// records it), with its output in the set's output area; then the
// controls show the session's state. It reports whether the command
// succeeded.
func (k *Kernel) runControl(set *controlSet, line string, parent *Message) bool {
	k.comms.mu.Lock()
	set.begin(line)
	k.sendChanges(set.area, parent)
	k.comms.mu.Unlock()
	out := display.NewCellOutput(areaPublisher{k, set, parent}, k.outputEnv(), false, 0)
	failed := runCellOutput(k.sess, line, out, k.setCell, nil)
	k.refreshControls(parent)
	return failed == nil
}

// applyBeforeSweep is runCell's before for a cell run in answer to m: a
// sweep typed in a cell (evaluate, tune) first applies the parameters
// whose boxes hold text not applied yet, as the controls' own buttons do,
// and says so in the cell; a text that cannot be applied is said, and the
// sweep runs with what the session holds. A box edited and left (on the
// classic Notebook's ipywidgets 6, only Enter applies it) had shown 1024
// while the typed sweep ran 2048, unsaid (a review).
func (k *Kernel) applyBeforeSweep(m *Message) func(*session.Command, cellOutput) {
	return func(c *session.Command, out cellOutput) {
		if c == nil || c.Verb != "evaluate" && c.Verb != "tune" {
			return
		}
		// The boxes as the session's state leaves them: a parameter a
		// command typed before set wins over the box's edit.
		k.refreshControls(m)
		type box struct {
			set *controlSet
			w   *widget
		}
		var todo []box
		k.comms.mu.Lock()
		for _, set := range k.comms.sets {
			for _, w := range set.pending() {
				todo = append(todo, box{set, w})
			}
		}
		k.comms.mu.Unlock()
		for _, b := range todo {
			k.comms.mu.Lock()
			name, value := b.w.description, b.w.value
			k.comms.mu.Unlock()
			if k.applyText(b.set, b.w, m) {
				out.Print(fmt.Sprintf("applied the controls' %s box first: space %s=%s", name, name, value))
			} else {
				out.Print(fmt.Sprintf("note: the controls' %s box holds %q, which could not be applied (its error is under the controls): the sweep runs with the session's %s", name, value, name))
			}
		}
	}
}

// showError shows in the output area a command the controls could not
// make of what the user wrote, and why.
func (k *Kernel) showError(set *controlSet, line string, err *session.Error, parent *Message) {
	k.comms.mu.Lock()
	defer k.comms.mu.Unlock()
	set.begin(line)
	set.note("CommandError: "+err.Error(), "error")
	k.sendChanges(set.area, parent)
}

// refreshControls sets every control to the session's state (after a
// command, typed or run by a control). On the shell goroutine.
func (k *Kernel) refreshControls(parent *Message) {
	k.comms.mu.Lock()
	n := len(k.comms.sets)
	k.comms.mu.Unlock()
	if n == 0 {
		return
	}
	c := k.sess.Controls()
	k.comms.mu.Lock()
	defer k.comms.mu.Unlock()
	for _, set := range k.comms.sets {
		set.apply(c)
		for _, w := range set.models {
			k.sendChanges(w, parent)
		}
	}
}

// areaPublisher shows a control's command's output in its set's output
// area (a display.Publisher).
type areaPublisher struct {
	k      *Kernel
	set    *controlSet
	parent *Message
}

// Publish implements display.Publisher.
func (p areaPublisher) Publish(typ string, content map[string]any) {
	p.k.comms.mu.Lock()
	defer p.k.comms.mu.Unlock()
	if p.set.output(typ, content) {
		p.k.sendChanges(p.set.area, p.parent)
	}
}

// showControls opens the widgets of c in the front end and displays them
// (the 'controls' command, through kernelOutput), in answer to parent.
func (k *Kernel) showControls(c *session.Controls, parent *Message) error {
	k.comms.mu.Lock()
	defer k.comms.mu.Unlock()
	set := newControlSet(generation{legacy: k.comms.legacy}, c)
	k.comms.sets = append(k.comms.sets, set)
	for _, w := range set.models {
		k.comms.widgets[w.id] = widgetRef{set, w}
		s := set.gen.state(w)
		w.sent(s)
		data, md := set.gen.open(s)
		k.publishMeta("comm_open", parent, map[string]any{"comm_id": w.id, "target_name": widgetTarget, "data": data}, md)
	}
	if set.gen.legacy {
		// What shows the view in the classic Notebook's widget area.
		k.publish("comm_msg", parent, map[string]any{"comm_id": set.root.id, "data": map[string]any{"method": "display"}})
	}
	// The classic Notebook shows the view through the display message and
	// this output's text/plain beneath it, where the long description
	// would repeat what the widgets show; but a saved notebook reopened
	// without the widgets' state shows only the text, and an empty one
	// left the cell blank: one short line.
	text := set.describe(c)
	if set.gen.legacy {
		text = "approxtune controls ('controls' shows them again)"
	}
	k.publish("display_data", parent, map[string]any{
		"data":     map[string]any{WidgetViewMIME: set.gen.view(set.root.id), "text/plain": text},
		"metadata": map[string]any{}, "transient": map[string]any{},
	})
	return nil
}

// commFast serves, where shell messages are read, the clicks that must
// not wait behind a running command: cancel interrupts it (as an
// interrupt_request does), and evaluate or tune while a sweep runs or is
// queued says so. It reports whether it served r; anything else, a click
// on evaluate or tune that starts a sweep included, goes to the shell
// goroutine.
func (k *Kernel) commFast(r request) bool {
	if r.msg.Header.MsgType != "comm_msg" {
		return false
	}
	var d commData
	c, err := parseComm(r.msg, &d)
	if err != nil || d.Method != "custom" || d.Content.Event != "click" {
		return false
	}
	sweeping := k.sess.Sweeping()
	k.comms.mu.Lock()
	ref, ok := k.comms.widgets[c.CommID]
	set := ref.set
	switch {
	case !ok:
		k.comms.mu.Unlock()
		return false
	case ref.w == set.cancel:
		k.comms.mu.Unlock()
		k.status(r.msg, "busy")
		if k.Interrupt() {
			k.areaNote(set, "» cancel", r.msg)
		} else {
			k.areaNote(set, "» cancel: nothing is running", r.msg)
		}
		k.status(r.msg, "idle")
		return true
	case ref.w == set.evaluate || ref.w == set.tune:
		if k.comms.sweepMsg == "" && !sweeping {
			k.comms.sweepMsg = r.msg.Header.MsgID
			k.comms.mu.Unlock()
			return false
		}
		k.comms.mu.Unlock()
		k.status(r.msg, "busy")
		k.areaNote(set, fmt.Sprintf("» %s: a sweep is running; wait for its end, or cancel it", ref.w.description), r.msg)
		k.status(r.msg, "idle")
		return true
	}
	k.comms.mu.Unlock()
	return false
}

// noteWaiting tells a cell that arrives while a sweep the controls started
// runs (or waits to) why it waits, at once, where shell messages are
// read: it runs once that sweep ends. It had sat busy and silent until
// then (a notebook review: 7.7 s for 'status').
func (k *Kernel) noteWaiting(r request) {
	if r.msg.Header.MsgType != "execute_request" {
		return
	}
	var c executeRequest
	if json.Unmarshal(r.msg.Content, &c) != nil || c.Silent {
		return
	}
	k.comms.mu.Lock()
	waiting := k.comms.sweepMsg != ""
	k.comms.mu.Unlock()
	if waiting {
		k.publish("stream", r.msg, map[string]string{"name": "stdout",
			"text": "» waiting for the sweep the controls started: this cell runs when it ends (interrupt the kernel, or click cancel, to stop it)\n"})
	}
}

// areaNote shows a note in set's output area, in answer to parent.
func (k *Kernel) areaNote(set *controlSet, text string, parent *Message) {
	k.comms.mu.Lock()
	defer k.comms.mu.Unlock()
	set.note(text, "note")
	k.sendChanges(set.area, parent)
}

// endSweep clears the sweep click msgID once the shell goroutine is done
// with it.
func (k *Kernel) endSweep(msgID string) {
	k.comms.mu.Lock()
	defer k.comms.mu.Unlock()
	if k.comms.sweepMsg == msgID {
		k.comms.sweepMsg = ""
	}
}

// cellOutput is a cell's output as runCell drives it: display's, or the
// live kernel's (kernelOutput).
type cellOutput interface {
	session.Output
	Begin(last bool)
	End(ok bool)
	Close()
	PublishError(ename, evalue string, traceback []string)
}

// kernelOutput is the live kernel's cell output: display's, which also
// shows controls (a session.ControlsOutput).
type kernelOutput struct {
	*display.CellOutput
	k      *Kernel
	parent *Message
	silent bool
}

// Controls implements session.ControlsOutput: the widgets, unless the
// cell is silent.
func (o kernelOutput) Controls(c *session.Controls) error {
	if o.silent {
		return nil
	}
	return o.k.showControls(c, o.parent)
}
