package display

import (
	"strings"
	"testing"
	"time"

	"github.com/approxtune/approxtune/session"
	"github.com/approxtune/approxtune/sweep"
)

// Updates that come sooner than the interval, once figures are drawn, are
// held (not rendered: a sweep of 10,000 runs summarized every result at
// every one of them) and wait for the next update that is due; Close sends
// the latest of them.
func TestLiveHeldUpdates(t *testing.T) {
	pub := &published{}
	clock := &fakeClock{t: time.Unix(1000, 0)}
	env := Env{Last: func() *session.Sweep { return nil }, DisplayID: func() string { return "d" }, Now: clock.now, Interval: time.Hour}
	out := NewCellOutput(pub, env, false, 1)
	full := handSweep(sweep.ModeEvaluate)
	sw := *full
	sw.Results = nil
	out.Update(session.Progress{Sweep: &sw, Total: 8})
	for i := 1; i <= 8; i++ {
		sw.Results = full.Results[:i]
		out.Update(session.Progress{Sweep: &sw, Done: i, Total: 8})
		clock.t = clock.t.Add(400 * time.Millisecond)
	}
	if d := pub.displays(); len(d) != 1 || d[0].typ != "display_data" {
		t.Fatalf("published %d displays within the interval, want the first alone", len(d))
	}
	if out.draws != 1 {
		t.Errorf("%d drawings, want 1: only a rendered update draws", out.draws)
	}
	out.Close()
	d := pub.displays()
	if len(d) != 2 || d[1].typ != "update_display_data" {
		t.Fatalf("Close published %d displays, want the held update", len(d)-1)
	}
	if text := d[1].data["text/plain"].(string); !strings.Contains(text, "8/8 runs") {
		t.Errorf("the update Close sent is not the latest:\n%s", text)
	}
	if names, _ := htmlFigures(t, d[1].data["text/html"].(string)); len(names) != 2 {
		t.Errorf("the update Close sent shows figures %v, want speedup and error as last drawn", names)
	}
}
