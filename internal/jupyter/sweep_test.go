package jupyter

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/testenv"
)

// A sweep cell: the progress display appears at once with a display_id,
// is updated in place at most every UpdateInterval, ends with the final
// state, and the best table is the cell's result.
func TestKernelLiveDisplay(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	const interval = 300 * time.Millisecond
	c := startKernel(t, kernelSetup{key: testKey, binary: bin, interval: interval})
	id := c.send(c.shell, "execute_request", map[string]any{
		"code":   "workload synthetic steps=150 count=2\nspace mean_us=500,1000,1500\nreps 1\npolicy conditional,eager\ntolerance 2^-1,2^-3\nevaluate",
		"silent": false, "store_history": true, "user_expressions": map[string]any{}, "allow_stdin": false, "stop_on_error": true,
	})
	r := c.reply(c.shellC, id, 3*time.Minute)
	outs := c.outputs(id, 60*time.Second)
	if r.content()["status"] != "ok" {
		t.Fatalf("execute_reply %s; iopub %v", r.Content, types(outs))
	}
	var displayID string
	var updates []received
	for _, m := range outs {
		switch m.Header.MsgType {
		case "display_data":
			if displayID != "" {
				t.Errorf("a second display_data")
			}
			tr, _ := m.content()["transient"].(map[string]any)
			displayID, _ = tr["display_id"].(string)
			if displayID == "" || len(updates) > 0 {
				t.Fatalf("display_data %s", m.Content)
			}
		case "update_display_data":
			tr, _ := m.content()["transient"].(map[string]any)
			if tr["display_id"] != displayID {
				t.Errorf("update for %v, want %s", tr["display_id"], displayID)
			}
			updates = append(updates, m)
		}
		if m.Header.MsgType == "display_data" || m.Header.MsgType == "update_display_data" {
			data, _ := m.content()["data"].(map[string]any)
			if _, ok := data["text/plain"].(string); !ok {
				t.Errorf("%s without text/plain", m.Header.MsgType)
			}
			if h, _ := data["text/html"].(string); !strings.Contains(h, "approxtune-sweep") {
				t.Errorf("%s without text/html", m.Header.MsgType)
			}
		}
	}
	if displayID == "" || len(updates) == 0 {
		t.Fatalf("no live display: %v", types(outs))
	}
	last := updates[len(updates)-1].content()["data"].(map[string]any)["text/plain"].(string)
	for _, want := range []string{"12/12 runs", "(ok)", "conditional", "eager", "speed-up"} {
		if !strings.Contains(last, want) {
			t.Errorf("final display lacks %q:\n%s", want, last)
		}
	}
	// At most one update per interval, but for the final one.
	for i := 1; i < len(updates)-1; i++ {
		a, _ := time.Parse(time.RFC3339Nano, updates[i-1].Header.Date)
		b, _ := time.Parse(time.RFC3339Nano, updates[i].Header.Date)
		if gap := b.Sub(a); gap < interval-30*time.Millisecond {
			t.Errorf("updates %d and %d only %v apart (interval %v)", i-1, i, gap, interval)
		}
	}
	t.Logf("%d updates", len(updates))
	res, ok := find(outs, "execute_result")
	if !ok {
		t.Fatalf("no execute_result: %v", types(outs))
	}
	data := res.content()["data"].(map[string]any)
	if !strings.Contains(fmt.Sprint(data["text/plain"]), "policy  tolerance  speed-up") ||
		!strings.Contains(fmt.Sprint(data["text/html"]), `class="approxtune-best"`) {
		t.Errorf("execute_result %s", res.Content)
	}
	// The agent's start was said before the display.
	if st, ok := find(outs, "stream"); !ok || !strings.Contains(fmt.Sprint(st.content()["text"]), "workload synthetic") {
		t.Errorf("streams: %v", types(outs))
	}

	// plot shows a figure: PNG (decodable), SVG and a text summary.
	r, outs = c.execute("plot speedup", nil)
	fig, ok := find(outs, "display_data")
	if r.content()["status"] != "ok" || !ok {
		t.Fatalf("plot: %s %v", r.Content, types(outs))
	}
	fd := fig.content()["data"].(map[string]any)
	raw, err := base64.StdEncoding.DecodeString(fmt.Sprint(fd["image/png"]))
	if err != nil {
		t.Fatalf("image/png is not base64: %v", err)
	}
	if img, err := png.Decode(bytes.NewReader(raw)); err != nil || img.Bounds().Dx() != 800 {
		t.Errorf("image/png does not decode to an 800 px figure: %v", err)
	}
	if !strings.Contains(fmt.Sprint(fd["image/svg+xml"]), "<svg") || !strings.Contains(fmt.Sprint(fd["text/plain"]), "speed-up") {
		t.Errorf("figure bundle lacks svg or a summary: %v", fd["text/plain"])
	}

	// A silent sweep shows nothing.
	r, outs = c.execute("evaluate", map[string]any{"silent": true})
	if r.content()["status"] != "ok" || strings.Join(types(outs), ",") != "status,status" {
		t.Errorf("silent sweep: %s %v", r.Content, types(outs))
	}
}

// An interrupt_request during a sweep stops it at the next run boundary:
// the cell ends with an Interrupted error, the display shows the note and
// the final state, and the next cell runs on the same agent.
func TestKernelInterruptSweep(t *testing.T) {
	testenv.Launcher(t)
	bin := testenv.Build(t)
	c := startKernel(t, kernelSetup{key: testKey, binary: bin})
	id := c.send(c.shell, "execute_request", map[string]any{
		"code":   "workload synthetic steps=50 count=8 mean_us=4000\nspace grid=1x4,2x2,4x1\nreps 1\npolicy conditional,eager\ntolerance 0\nevaluate",
		"silent": false, "store_history": true, "user_expressions": map[string]any{}, "allow_stdin": false, "stop_on_error": true,
	})
	var got []received
	deadline := time.After(2 * time.Minute)
wait:
	for {
		select {
		case m := <-c.iopubC:
			if m.parentID() != id {
				continue
			}
			got = append(got, m)
			if m.Header.MsgType == "update_display_data" && !strings.Contains(fmt.Sprint(m.content()["data"]), ": 0/6 runs") {
				break wait
			}
		case <-deadline:
			t.Fatalf("no result shown: %v", types(got))
		}
	}
	ir := c.send(c.control, "interrupt_request", map[string]any{})
	// After the interrupt's idle, busy again for the cell, which runs
	// until the sweep stops: frontends take any idle for the kernel's,
	// and a notebook had shown the kernel idle while the cell ran on.
	sawIdle := false
	rebusy := time.After(30 * time.Second)
watch:
	for {
		select {
		case m := <-c.iopubC:
			if m.parentID() == id {
				got = append(got, m)
			}
			if m.Header.MsgType != "status" {
				continue
			}
			switch st := m.content()["execution_state"]; {
			case m.parentID() == ir && st == "idle":
				sawIdle = true
			case m.parentID() == id && st == "busy" && sawIdle:
				break watch
			case m.parentID() == id && st == "idle":
				t.Fatalf("the cell ended with no busy after the interrupt's idle (idle seen: %v)", sawIdle)
			}
		case <-rebusy:
			t.Fatalf("no busy for the cell after the interrupt's idle (idle seen: %v)", sawIdle)
		}
	}
	c.reply(c.ctrlC, ir, 10*time.Second)
	r := c.reply(c.shellC, id, 2*time.Minute)
	got = append(got, c.outputs(id, 60*time.Second)...)
	if rc := r.content(); rc["ename"] != "Interrupted" || !strings.Contains(fmt.Sprint(rc["evalue"]), "cancelled after") {
		t.Errorf("reply %s", r.Content)
	}
	var texts []string
	for _, m := range got {
		if m.Header.MsgType == "update_display_data" {
			texts = append(texts, fmt.Sprint(m.content()["data"].(map[string]any)["text/plain"]))
		}
	}
	all := strings.Join(texts, "\n")
	if !strings.Contains(all, "cancelling: the sweep stops at the next run boundary") || !strings.Contains(texts[len(texts)-1], "(cancelled)") {
		t.Errorf("display updates:\n%s", all)
	}
	r, outs := c.execute("status", nil)
	res, _ := find(outs, "execute_result")
	if r.content()["status"] != "ok" || !strings.Contains(fmt.Sprint(res.content()["data"]), "agent       4 ranks") {
		t.Errorf("after the interrupt: %s %s", r.Content, res.Content)
	}
}
