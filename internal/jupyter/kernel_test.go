package jupyter

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
)

const testKey = "0123456789abcdef-test-key"

var dateRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?(Z|[+-]\d\d:\d\d)$`)

// checkEnvelope checks what every message from the kernel must be.
func checkEnvelope(t *testing.T, r received, parent string, key string) {
	t.Helper()
	if r.Header.MsgID == "" || r.Header.Session == "" || r.Header.Version != ProtocolVersion {
		t.Errorf("%s: header %+v lacks msg_id, session or version 5.3", r.Header.MsgType, r.Header)
	}
	if !dateRE.MatchString(r.Header.Date) {
		t.Errorf("%s: date %q is not ISO 8601 with at most 6 fractional digits", r.Header.MsgType, r.Header.Date)
	}
	if parent != "" && r.parentID() != parent {
		t.Errorf("%s: parent msg_id %q, want %q", r.Header.MsgType, r.parentID(), parent)
	}
	// The frames after the delimiter: signature, then four JSON objects, none null.
	d := -1
	for i, f := range r.frames {
		if string(f) == delimiter {
			d = i
		}
	}
	if d < 0 || len(r.frames) < d+6 {
		t.Fatalf("%s: frames %q", r.Header.MsgType, r.frames)
	}
	for i, f := range r.frames[d+2 : d+6] {
		if len(f) == 0 || f[0] != '{' {
			t.Errorf("%s: frame %d is %q, not a JSON object", r.Header.MsgType, i, f)
		}
	}
	if key != "" {
		m := hmac.New(sha256.New, []byte(key))
		for _, f := range r.frames[d+2 : d+6] {
			m.Write(f)
		}
		if want := hex.EncodeToString(m.Sum(nil)); string(r.frames[d+1]) != want {
			t.Errorf("%s: signature %q, want %q", r.Header.MsgType, r.frames[d+1], want)
		}
	} else if len(r.frames[d+1]) != 0 {
		t.Errorf("%s: signed (%q) without a key", r.Header.MsgType, r.frames[d+1])
	}
}

// checkBusyIdle checks that outputs start with busy and end with idle.
func checkBusyIdle(t *testing.T, outs []received) {
	t.Helper()
	if len(outs) < 2 || outs[0].Header.MsgType != "status" || outs[0].content()["execution_state"] != "busy" ||
		outs[len(outs)-1].content()["execution_state"] != "idle" {
		t.Errorf("iopub: %v, want status busy first and status idle last", types(outs))
	}
}

func TestKernelInfo(t *testing.T) {
	c := startKernel(t, kernelSetup{key: testKey})
	for _, sock := range []struct {
		name string
		s    zmq4.Socket
		ch   chan received
	}{{"shell", c.shell, c.shellC}, {"control", c.control, c.ctrlC}} {
		id := c.send(sock.s, "kernel_info_request", map[string]any{})
		r := c.reply(sock.ch, id, 20*time.Second)
		outs := c.outputs(id, 20*time.Second)
		checkEnvelope(t, r, id, testKey)
		checkBusyIdle(t, outs)
		for _, o := range outs {
			checkEnvelope(t, o, id, testKey)
		}
		if r.Header.MsgType != "kernel_info_reply" {
			t.Fatalf("%s: reply %s", sock.name, r.Header.MsgType)
		}
		var ki struct {
			Status          string `json:"status"`
			ProtocolVersion string `json:"protocol_version"`
			Implementation  string `json:"implementation"`
			LanguageInfo    struct {
				Name, Version, Mimetype string
				FileExtension           string `json:"file_extension"`
				PygmentsLexer           string `json:"pygments_lexer"`
				CodemirrorMode          string `json:"codemirror_mode"`
			} `json:"language_info"`
			Banner    string              `json:"banner"`
			HelpLinks []map[string]string `json:"help_links"`
		}
		if err := json.Unmarshal(r.Content, &ki); err != nil {
			t.Fatal(err)
		}
		li := ki.LanguageInfo
		if ki.Status != "ok" || ki.ProtocolVersion != "5.3" || ki.Implementation != "approxtune" || li.Name != "approxtune" ||
			li.Version != "test" || li.Mimetype != "text/x-approxtune" || li.FileExtension != ".atune" || li.PygmentsLexer == "" ||
			li.CodemirrorMode == "" || !strings.Contains(ki.Banner, "approxtune") || len(ki.HelpLinks) == 0 {
			t.Errorf("%s: kernel_info_reply %s", sock.name, r.Content)
		}
		// The parent header is the request's header as sent.
		var ph, rh map[string]any
		json.Unmarshal(r.ParentHeader, &ph)
		if ph["msg_type"] != "kernel_info_request" || ph["session"] != c.session {
			t.Errorf("parent_header %s", r.ParentHeader)
		}
		json.Unmarshal(r.RawHeader, &rh)
		if rh["msg_type"] != "kernel_info_reply" {
			t.Errorf("header %s", r.RawHeader)
		}
	}
	// Message ids are unique.
	seen := map[string]bool{}
	for i := 0; i < 20; i++ {
		r, outs := c.request("kernel_info_request", map[string]any{})
		for _, m := range append(outs, r) {
			if seen[m.Header.MsgID] {
				t.Fatalf("msg_id %s used twice", m.Header.MsgID)
			}
			seen[m.Header.MsgID] = true
		}
	}
}

func TestKernelExecute(t *testing.T) {
	c := startKernel(t, kernelSetup{key: testKey})

	// A command's answer is the execute_result, in text/plain and text/html.
	r, outs := c.execute("status", nil)
	checkBusyIdle(t, outs)
	if got := types(outs); strings.Join(got, ",") != "status,execute_input,execute_result,status" {
		t.Errorf("iopub %v", got)
	}
	var rep struct {
		Status          string         `json:"status"`
		ExecutionCount  int            `json:"execution_count"`
		Payload         []any          `json:"payload"`
		UserExpressions map[string]any `json:"user_expressions"`
	}
	json.Unmarshal(r.Content, &rep)
	if r.Header.MsgType != "execute_reply" || rep.Status != "ok" || rep.ExecutionCount != 1 || rep.Payload == nil || rep.UserExpressions == nil {
		t.Errorf("execute_reply %s", r.Content)
	}
	in, _ := find(outs, "execute_input")
	if ic := in.content(); ic["code"] != "status" || ic["execution_count"] != 1.0 {
		t.Errorf("execute_input %s", in.Content)
	}
	res, _ := find(outs, "execute_result")
	data, _ := res.content()["data"].(map[string]any)
	plain, _ := data["text/plain"].(string)
	if !strings.Contains(plain, "workload    summa") || !strings.Contains(plain, "agent       none: a local one") ||
		!strings.HasPrefix(fmt.Sprint(data["text/html"]), "<pre>") || res.content()["execution_count"] != 1.0 {
		t.Errorf("execute_result %s", res.Content)
	}

	// Several commands: earlier answers are streams, the last one the result;
	// comments and blank lines are skipped.
	_, outs = c.execute("# set up\nworkload synthetic steps=5\n\nspace count=2\nstatus", nil)
	if got := strings.Join(types(outs), ","); got != "status,execute_input,stream,execute_result,status" {
		t.Errorf("iopub %v", got)
	}
	st, _ := find(outs, "stream")
	if sc := st.content(); sc["name"] != "stdout" || !strings.HasPrefix(fmt.Sprint(sc["text"]), "workload synthetic:") {
		t.Errorf("stream %s", st.Content)
	}
	res, _ = find(outs, "execute_result")
	if !strings.Contains(fmt.Sprint(res.content()["data"]), "count      2") {
		t.Errorf("the state did not change: %s", res.Content)
	}

	// An error stops the cell: error message, error reply, with the line and column.
	r, outs = c.execute("reps 5\nspace steps=zero\nreps 7", nil)
	var er struct {
		Status, Ename, Evalue string
		Traceback             []string
		ExecutionCount        int `json:"execution_count"`
	}
	json.Unmarshal(r.Content, &er)
	if er.Status != "error" || er.Ename != "CommandError" || !strings.Contains(er.Evalue, "line 2: column 13: steps") ||
		er.ExecutionCount != 3 || len(er.Traceback) != 3 || er.Traceback[0] != "line 2: space steps=zero" ||
		er.Traceback[1] != strings.Repeat(" ", len("line 2: space steps="))+"^" {
		t.Errorf("error reply %s", r.Content)
	}
	em, ok := find(outs, "error")
	if !ok || em.content()["ename"] != "CommandError" || em.content()["evalue"] != er.Evalue {
		t.Errorf("iopub error %v", types(outs))
	}
	_, outs = c.execute("status", nil)
	res, _ = find(outs, "execute_result")
	if s := fmt.Sprint(res.content()["data"]); !strings.Contains(s, "reps        5") {
		t.Errorf("line 1 should have run and line 3 not: %s", s)
	}

	// silent: nothing on iopub but the status, no count.
	r, outs = c.execute("status", map[string]any{"silent": true})
	if got := strings.Join(types(outs), ","); got != "status,status" {
		t.Errorf("silent: iopub %v", got)
	}
	if r.content()["execution_count"] != 4.0 {
		t.Errorf("silent: execute_reply %s, want the count unchanged (4)", r.Content)
	}
	// store_history false: output, but no count and no history.
	r, outs = c.execute("help reps", map[string]any{"store_history": false})
	if _, ok := find(outs, "execute_result"); !ok || r.content()["execution_count"] != 4.0 {
		t.Errorf("store_history false: %v, reply %s", types(outs), r.Content)
	}
	r, _ = c.execute("status", nil)
	if r.content()["execution_count"] != 5.0 {
		t.Errorf("count %v, want 5", r.content()["execution_count"])
	}
	hr, _ := c.request("history_request", map[string]any{"hist_access_type": "tail", "n": 100, "output": false, "raw": true})
	hist := fmt.Sprint(hr.content()["history"])
	if strings.Contains(hist, "help reps") || !strings.Contains(hist, "[1 5 status]") {
		t.Errorf("history %s", hist)
	}

	// user_expressions are answered (with an error: there are none).
	r, _ = c.execute("status", map[string]any{"user_expressions": map[string]any{"x": "1+1"}})
	ue, _ := r.content()["user_expressions"].(map[string]any)
	if x, _ := ue["x"].(map[string]any); x["status"] != "error" {
		t.Errorf("user_expressions %s", r.Content)
	}

	// An empty cell is fine, and takes no count (as in ipykernel).
	r, outs = c.execute("", nil)
	if r.content()["status"] != "ok" || len(outs) != 3 || r.content()["execution_count"] != 6.0 {
		t.Errorf("empty cell: %s, %v; want ok and the count unchanged (6)", r.Content, types(outs))
	}
	if r, _ = c.execute("  \n", nil); r.content()["execution_count"] != 6.0 {
		t.Errorf("blank cell: %s; want the count unchanged (6)", r.Content)
	}

	// A cell that cannot be read (is_complete calls it invalid) runs none
	// of its lines: its first line had run before the error.
	r, _ = c.execute("reps 7\ntolerance 2^-1 \"x", nil)
	if r.content()["status"] != "error" || !strings.Contains(fmt.Sprint(r.content()["evalue"]), "line 2: column 16: unterminated quote") {
		t.Errorf("unreadable cell: %s", r.Content)
	}
	_, outs = c.execute("status", nil)
	res, _ = find(outs, "execute_result")
	if s := fmt.Sprint(res.content()["data"]); !strings.Contains(s, "reps        5") {
		t.Errorf("a line of an unreadable cell ran: %s", s)
	}
}

// A cell waiting for a cluster agent blocks; the control channel still
// answers, an interrupt ends the cell with an error, the queued execute
// requests are aborted (stop_on_error), and the next cell runs.
func TestKernelInterruptAndAbort(t *testing.T) {
	c := startKernel(t, kernelSetup{key: testKey})
	content := func(code string, stop bool) map[string]any {
		return map[string]any{"code": code, "silent": false, "store_history": true, "user_expressions": map[string]any{}, "allow_stdin": false, "stop_on_error": stop}
	}
	a := c.send(c.shell, "execute_request", content("listen 127.0.0.1:0\ntune", true))
	b := c.send(c.shell, "execute_request", content("reps 9", true))
	ci := c.send(c.shell, "complete_request", map[string]any{"code": "wor", "cursor_pos": 3})
	d := c.send(c.shell, "execute_request", content("reps 8", true))

	// The waiting message shows while the cell runs.
	waiting := func(a string) {
		t.Helper()
		deadline := time.After(40 * time.Second)
		for {
			select {
			case m := <-c.iopubC:
				if m.parentID() == a && m.Header.MsgType == "stream" && strings.Contains(fmt.Sprint(m.content()["text"]), "waiting for an agent to dial in") {
					return
				}
			case <-deadline:
				t.Fatal("no 'waiting for an agent' stream while the cell runs")
			}
		}
	}
	waiting(a)
	// Control is served while the cell runs.
	ki := c.send(c.control, "kernel_info_request", map[string]any{})
	if r := c.reply(c.ctrlC, ki, 10*time.Second); r.Header.MsgType != "kernel_info_reply" {
		t.Fatalf("control: %s", r.Header.MsgType)
	}
	select {
	case r := <-c.shellC:
		t.Fatalf("the cell ended by itself: %s %s", r.Header.MsgType, r.Content)
	default:
	}
	ir := c.send(c.control, "interrupt_request", map[string]any{})
	if r := c.reply(c.ctrlC, ir, 10*time.Second); r.Header.MsgType != "interrupt_reply" || r.content()["status"] != "ok" {
		t.Fatalf("interrupt_reply %s %s", r.Header.MsgType, r.Content)
	}
	r := c.reply(c.shellC, a, 40*time.Second)
	if rc := r.content(); rc["status"] != "error" || rc["ename"] != "Interrupted" {
		t.Fatalf("interrupted cell: %s", r.Content)
	}
	if r := c.reply(c.shellC, b, 20*time.Second); r.Header.MsgType != "execute_reply" || r.content()["status"] != "aborted" {
		t.Errorf("queued execute: %s %s, want aborted", r.Header.MsgType, r.Content)
	}
	if r := c.reply(c.shellC, ci, 20*time.Second); r.Header.MsgType != "complete_reply" || r.content()["status"] != "ok" {
		t.Errorf("queued complete: %s %s, want it served", r.Header.MsgType, r.Content)
	}
	if r := c.reply(c.shellC, d, 20*time.Second); r.content()["status"] != "aborted" {
		t.Errorf("queued execute: %s, want aborted", r.Content)
	}
	// The aborted ones ran nothing: reps is still 3; the kernel works on.
	_, outs := c.execute("listen off\nstatus", nil)
	res, _ := find(outs, "execute_result")
	if s := fmt.Sprint(res.content()["data"]); !strings.Contains(s, "reps        3") {
		t.Errorf("after the abort: %s", s)
	}

	// Without stop_on_error the queued request runs.
	a = c.send(c.shell, "execute_request", content("listen 127.0.0.1:0\ntune", false))
	b = c.send(c.shell, "execute_request", content("reps 9", true))
	waiting(a)
	if !c.Interrupt() {
		t.Fatal("Interrupt while the cell waits for an agent reported no cell running")
	}
	if r := c.reply(c.shellC, a, 40*time.Second); r.content()["ename"] != "Interrupted" {
		t.Errorf("interrupted cell: %s", r.Content)
	}
	if r := c.reply(c.shellC, b, 20*time.Second); r.content()["status"] != "ok" {
		t.Errorf("stop_on_error false: the next request got %s, want ok", r.Content)
	}
}

// A cell that fails at once (a typo) with stop_on_error aborts the
// request the client sent just after it, before it could see the error,
// as a notebook's Run All sends the next cells: that request reached the
// kernel after the failure and ran (5 of 16 tries in a browser review).
func TestKernelAbortsRequestSentBeforeError(t *testing.T) {
	c := startKernel(t, kernelSetup{key: testKey})
	content := func(code string) map[string]any {
		return map[string]any{"code": code, "silent": false, "store_history": true, "user_expressions": map[string]any{}, "allow_stdin": false, "stop_on_error": true}
	}
	for i := 0; i < 3; i++ {
		a := c.send(c.shell, "execute_request", content("evalute"))
		time.Sleep(10 * time.Millisecond)
		b := c.send(c.shell, "execute_request", content("reps 9"))
		if r := c.reply(c.shellC, a, 20*time.Second); r.content()["status"] != "error" {
			t.Fatalf("the typo: %s", r.Content)
		}
		if r := c.reply(c.shellC, b, 20*time.Second); r.content()["status"] != "aborted" {
			t.Fatalf("try %d: the request sent 10 ms after the failing one got %s, want aborted", i+1, r.Content)
		}
	}
	// A request sent after the error reply runs.
	_, outs := c.execute("status", nil)
	res, ok := find(outs, "execute_result")
	if !ok {
		t.Fatalf("the request sent after the aborts did not run: %v", types(outs))
	}
	if s := fmt.Sprint(res.content()["data"]); !strings.Contains(s, "reps        3") {
		t.Errorf("after the aborts: %s", s)
	}
}

// Interrupt is what SIGINT calls; it reports whether a cell was running.
func (c *testClient) Interrupt() bool { return c.k.Interrupt() }

func TestKernelComplete(t *testing.T) {
	c := startKernel(t, kernelSetup{key: testKey})
	cases := []struct {
		code       string
		pos        int
		want       string
		start, end int
	}{
		{"wor", 3, "workload", 0, 3},
		{"policy cond", 11, "conditional", 7, 11},
		{"policy conditional,ea", 21, "eager", 19, 21},
		{"status\nworkload syn", 19, "synthetic", 16, 19},
		{"status\nworkload syn\nstatus", 19, "synthetic", 16, 19},
		{"tab", 3, "table", 0, 3},
		// Code points: é is one, though two bytes.
		{"save \"é\"\npolicy ea", 18, "eager", 16, 18},
		// The cursor in the middle of the cell.
		{"wo\nstatus", 2, "workload", 0, 2},
	}
	for _, tc := range cases {
		r, outs := c.request("complete_request", map[string]any{"code": tc.code, "cursor_pos": tc.pos})
		checkBusyIdle(t, outs)
		var cr struct {
			Status      string         `json:"status"`
			Matches     []string       `json:"matches"`
			CursorStart int            `json:"cursor_start"`
			CursorEnd   int            `json:"cursor_end"`
			Metadata    map[string]any `json:"metadata"`
		}
		json.Unmarshal(r.Content, &cr)
		if cr.Status != "ok" || !contains(cr.Matches, tc.want) || cr.CursorStart != tc.start || cr.CursorEnd != tc.end || cr.Metadata == nil {
			t.Errorf("complete %q at %d: %s, want %q in [%d, %d)", tc.code, tc.pos, r.Content, tc.want, tc.start, tc.end)
		}
	}
	// Nothing to complete: matches is [], not null.
	r, _ := c.request("complete_request", map[string]any{"code": "status ", "cursor_pos": 7})
	if !strings.Contains(string(r.Content), `"matches":[]`) {
		t.Errorf("no completion: %s", r.Content)
	}
	// JupyterLab counts in UTF-16 units: 😀 is two of them. At the end of the
	// cell the position is past the end in code points, so the kernel knows,
	// answers in UTF-16 units, and keeps counting so for this client.
	code := "save \"😀\"\npolicy ea" // 😀 is 1 code point, 2 UTF-16 units
	r, _ = c.request("complete_request", map[string]any{"code": code, "cursor_pos": 19})
	var cr struct {
		Matches                []string
		CursorStart, CursorEnd int
	}
	json.Unmarshal(r.Content, &struct {
		Matches     *[]string `json:"matches"`
		CursorStart *int      `json:"cursor_start"`
		CursorEnd   *int      `json:"cursor_end"`
	}{&cr.Matches, &cr.CursorStart, &cr.CursorEnd})
	if !contains(cr.Matches, "eager") || cr.CursorStart != 17 || cr.CursorEnd != 19 {
		t.Errorf("UTF-16 completion: %s, want eager in [17, 19)", r.Content)
	}
	r, _ = c.request("complete_request", map[string]any{"code": code + "\nstatus", "cursor_pos": 19})
	if !strings.Contains(string(r.Content), `"cursor_start":17`) || !strings.Contains(string(r.Content), "eager") {
		t.Errorf("UTF-16 completion mid-cell: %s", r.Content)
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func TestKernelInspect(t *testing.T) {
	c := startKernel(t, kernelSetup{key: testKey})
	for _, tc := range []struct {
		code  string
		pos   int
		found bool
		want  string
	}{
		{"tolerance 2^-3", 3, true, "tolerance [T[,T...]"},
		{"tolerance 2^-3", 9, true, "tolerance [T[,T...]"},
		{"tolerance 2^-3", 12, true, "tolerance [T[,T...]"}, // an argument: its command's help
		{"status\nhelp space", 15, true, "space [KEY=V1,V2,..."},
		{"bogus", 2, false, ""},
		{"", 0, false, ""},
	} {
		r, outs := c.request("inspect_request", map[string]any{"code": tc.code, "cursor_pos": tc.pos, "detail_level": 0})
		checkBusyIdle(t, outs)
		rc := r.content()
		data, _ := rc["data"].(map[string]any)
		if rc["status"] != "ok" || rc["found"] != tc.found || data == nil || rc["metadata"] == nil ||
			(tc.found && !strings.HasPrefix(fmt.Sprint(data["text/plain"]), tc.want)) {
			t.Errorf("inspect %q at %d: %s", tc.code, tc.pos, r.Content)
		}
	}
}

func TestKernelIsComplete(t *testing.T) {
	c := startKernel(t, kernelSetup{key: testKey})
	for code, want := range map[string]string{
		"status": "complete", "": "complete", "workload summa n=2048\nspace b=64": "complete", "bogus": "complete",
		`save "results`: "invalid", "status\nsave \"a": "invalid",
	} {
		r, outs := c.request("is_complete_request", map[string]any{"code": code})
		checkBusyIdle(t, outs)
		if r.Header.MsgType != "is_complete_reply" || r.content()["status"] != want {
			t.Errorf("is_complete %q: %s, want %s", code, r.Content, want)
		}
	}
}

func TestKernelHistory(t *testing.T) {
	c := startKernel(t, kernelSetup{key: testKey})
	for _, code := range []string{"help reps", "status", "help reps", "reps 2"} {
		c.execute(code, nil)
	}
	hist := func(content map[string]any) string {
		t.Helper()
		content["raw"] = true
		if _, ok := content["output"]; !ok {
			content["output"] = false
		}
		r, outs := c.request("history_request", content)
		checkBusyIdle(t, outs)
		if r.content()["status"] != "ok" {
			t.Fatalf("history %v: %s", content, r.Content)
		}
		var h struct {
			History json.RawMessage `json:"history"`
		}
		json.Unmarshal(r.Content, &h)
		return string(h.History)
	}
	for _, tc := range []struct {
		req  map[string]any
		want string
	}{
		{map[string]any{"hist_access_type": "tail", "n": 2}, `[[1,3,"help reps"],[1,4,"reps 2"]]`},
		{map[string]any{"hist_access_type": "range", "session": 0, "start": 2, "stop": 4}, `[[1,2,"status"],[1,3,"help reps"]]`},
		{map[string]any{"hist_access_type": "range", "session": -1, "start": 1, "stop": 4}, `[]`},
		{map[string]any{"hist_access_type": "search", "pattern": "help*"}, `[[1,1,"help reps"],[1,3,"help reps"]]`},
		{map[string]any{"hist_access_type": "search", "pattern": "help*", "unique": true}, `[[1,3,"help reps"]]`},
		{map[string]any{"hist_access_type": "search", "pattern": "?ep? *", "n": 1}, `[[1,4,"reps 2"]]`},
		{map[string]any{"hist_access_type": "tail", "n": 1, "output": true}, `[[1,4,["reps 2",null]]]`},
	} {
		if got := hist(tc.req); got != tc.want {
			t.Errorf("history %v: %s, want %s", tc.req, got, tc.want)
		}
	}
	if got := hist(map[string]any{"hist_access_type": "range", "session": 1, "start": 2, "stop": 3, "output": true}); !strings.HasPrefix(got, `[[1,2,["status","workload    summa`) {
		t.Errorf("history with output: %s", got)
	}
}

func TestKernelCommInfoAndUnknown(t *testing.T) {
	c := startKernel(t, kernelSetup{key: testKey})
	r, outs := c.request("comm_info_request", map[string]any{"target_name": "x"})
	checkBusyIdle(t, outs)
	if r.Header.MsgType != "comm_info_reply" || !strings.Contains(string(r.Content), `"comms":{}`) {
		t.Errorf("comm_info_reply %s", r.Content)
	}
	// A comm_open is closed at once; an unknown request gets busy and idle
	// and no reply; the kernel goes on.
	id := c.send(c.shell, "comm_open", map[string]any{"comm_id": "c1", "target_name": "jupyter.widget", "data": map[string]any{}})
	outs = c.outputs(id, 20*time.Second)
	if cl, ok := find(outs, "comm_close"); !ok || cl.content()["comm_id"] != "c1" {
		t.Errorf("comm_open: %v", types(outs))
	}
	id = c.send(c.shell, "frobnicate_request", map[string]any{})
	outs = c.outputs(id, 20*time.Second)
	checkBusyIdle(t, outs)
	r, _ = c.request("kernel_info_request", map[string]any{})
	if r.Header.MsgType != "kernel_info_reply" {
		t.Errorf("after unknown: %s", r.Header.MsgType)
	}
}

func TestKernelHeartbeat(t *testing.T) {
	c := startKernel(t, kernelSetup{key: testKey})
	for _, p := range []string{"ping", "\x00binary\xff", strings.Repeat("x", 1000)} {
		if err := c.hb.Send(zmq4.NewMsgString(p)); err != nil {
			t.Fatal(err)
		}
		got := make(chan zmq4.Msg, 1)
		go func() {
			m, _ := c.hb.Recv()
			got <- m
		}()
		select {
		case m := <-got:
			if len(m.Frames) != 1 || string(m.Frames[0]) != p {
				t.Errorf("heartbeat echoed %q, want %q", m.Frames, p)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no heartbeat echo")
		}
	}
}

// Malformed messages are dropped; each is followed by a valid request that
// must be the first one answered.
func TestKernelMalformedMessages(t *testing.T) {
	c := startKernel(t, kernelSetup{key: testKey})
	d := 0 // DEALER frames start at the delimiter
	resign := func(f [][]byte) [][]byte {
		f[d+1] = c.sign.sign(f[d+2], f[d+3], f[d+4], f[d+5])
		return f
	}
	clone := func() [][]byte {
		f, _ := c.message("execute_request", map[string]any{"code": "reps 42", "silent": false})
		return f
	}
	cases := map[string][][]byte{
		"bad signature": func() [][]byte {
			f := clone()
			f[d+1] = []byte(strings.Repeat("0", 64))
			return f
		}(),
		"signature of other content": func() [][]byte {
			f := clone()
			f[d+5] = []byte(`{"code": "reps 43"}`)
			return f
		}(),
		"no signature": func() [][]byte {
			f := clone()
			f[d+1] = nil
			return f
		}(),
		"no delimiter":   clone()[1:],
		"truncated":      clone()[:4],
		"only delimiter": {[]byte(delimiter)},
		"empty":          {[]byte("")},
		"invalid JSON header": resign(func() [][]byte {
			f := clone()
			f[d+2] = []byte(`{"msg_id": "x", "msg_type": "execute_request"`)
			return f
		}()),
		"content not an object": resign(func() [][]byte {
			f := clone()
			f[d+5] = []byte(`null`)
			return f
		}()),
		"header without msg_type": resign(func() [][]byte {
			f := clone()
			f[d+2] = []byte(`{"msg_id": "x"}`)
			return f
		}()),
		"binary garbage": {[]byte(delimiter), {0xff, 0xfe}, {0x00}, {0x01}, {0x02}, {0x03}},
	}
	for name, frames := range cases {
		for _, s := range []struct {
			sock zmq4.Socket
			ch   chan received
		}{{c.shell, c.shellC}, {c.control, c.ctrlC}} {
			c.sendRaw(s.sock, frames)
			id := c.send(s.sock, "kernel_info_request", map[string]any{})
			r := c.reply(s.ch, id, 20*time.Second)
			if r.Header.MsgType != "kernel_info_reply" {
				t.Errorf("%s: %s", name, r.Header.MsgType)
			}
		}
	}
	// Nothing of the dropped messages ran: reps is still 3.
	_, outs := c.execute("status", nil)
	res, _ := find(outs, "execute_result")
	if s := fmt.Sprint(res.content()["data"]); !strings.Contains(s, "reps        3") {
		t.Errorf("a dropped message ran: %s", s)
	}
	if !strings.Contains(c.log.String(), "bad signature") || !strings.Contains(c.log.String(), "no <IDS|MSG> delimiter") {
		t.Errorf("the drops were not logged:\n%s", c.log.String())
	}
}

// A well-formed request with content of the wrong shape is answered with an error.
func TestKernelBadContent(t *testing.T) {
	c := startKernel(t, kernelSetup{key: testKey})
	r, outs := c.request("execute_request", map[string]any{"code": 42})
	checkBusyIdle(t, outs)
	if r.content()["status"] != "error" || r.content()["ename"] != "BadRequest" {
		t.Errorf("execute_request with code 42: %s", r.Content)
	}
}

// Without a key nothing is signed and unsigned requests are served, and the
// kernel's log warns of it (with a key, it does not).
func TestKernelNoKey(t *testing.T) {
	c := startKernel(t, kernelSetup{key: ""})
	if !strings.Contains(c.log.String(), "warning: the connection file has no key") {
		t.Errorf("no warning of the missing key in the kernel's log:\n%s", c.log.String())
	}
	if keyed := startKernel(t, kernelSetup{key: testKey}); strings.Contains(keyed.log.String(), "no key") {
		t.Errorf("a kernel with a key warns of none:\n%s", keyed.log.String())
	}
	r, outs := c.request("kernel_info_request", map[string]any{})
	checkEnvelope(t, r, "", "")
	for _, o := range outs {
		checkEnvelope(t, o, "", "")
	}
	// A signature from a client that has a key is ignored too.
	f, id := c.message("kernel_info_request", map[string]any{})
	f[1] = []byte("deadbeef")
	c.sendRaw(c.shell, f)
	if r := c.reply(c.shellC, id, 20*time.Second); r.Header.MsgType != "kernel_info_reply" {
		t.Errorf("%s", r.Header.MsgType)
	}
}

// The ipc transport (Unix sockets) serves as tcp does.
func TestKernelIPC(t *testing.T) {
	c := startKernel(t, kernelSetup{ipc: true, key: testKey})
	r, outs := c.execute("status", nil)
	checkBusyIdle(t, outs)
	if r.content()["status"] != "ok" {
		t.Errorf("execute over ipc: %s", r.Content)
	}
}

func TestKernelShutdown(t *testing.T) {
	for _, tc := range []struct {
		name    string
		restart bool
		control bool
	}{{"control", false, true}, {"control restart", true, true}, {"shell", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			c := startKernel(t, kernelSetup{key: testKey})
			s, ch := c.shell, c.shellC
			if tc.control {
				s, ch = c.control, c.ctrlC
			}
			id := c.send(s, "shutdown_request", map[string]any{"restart": tc.restart})
			r := c.reply(ch, id, 40*time.Second)
			if r.Header.MsgType != "shutdown_reply" || r.content()["status"] != "ok" || r.content()["restart"] != tc.restart {
				t.Errorf("shutdown_reply %s", r.Content)
			}
			select {
			case <-c.served:
			case <-time.After(20 * time.Second):
				t.Fatal("Serve did not return after shutdown")
			}
		})
	}
}
