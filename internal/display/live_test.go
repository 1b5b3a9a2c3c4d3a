package display

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/approxtune/approxtune/internal/testenv"
	"github.com/approxtune/approxtune/session"
	"github.com/approxtune/approxtune/sweep"
)

// published keeps what a cell output publishes, in order.
type published struct {
	mu   sync.Mutex
	msgs []message
}

type message struct {
	typ  string
	data Bundle
}

func (p *published) Publish(typ string, content map[string]any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, _ := content["data"].(Bundle)
	p.msgs = append(p.msgs, message{typ, b})
}

// displays are the display_data and update_display_data published.
func (p *published) displays() []message {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []message
	for _, m := range p.msgs {
		if m.typ == "display_data" || m.typ == "update_display_data" {
			out = append(out, m)
		}
	}
	return out
}

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// liveOutput is a cell output whose live display keeps time by clock and
// sends every update (no interval between updates).
func liveOutput(pub Publisher, clock *fakeClock) *CellOutput {
	var n int
	env := Env{Last: func() *session.Sweep { return nil }, DisplayID: func() string { n++; return "d" }, Now: clock.now}
	return NewCellOutput(pub, env, false, 1)
}

var imgRE = regexp.MustCompile(`<img alt="([a-z]+)"[^>]* src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)">`)

// htmlFigures decodes the figures of a live display's HTML: name -> SVG.
func htmlFigures(t *testing.T, h string) ([]string, map[string][]byte) {
	t.Helper()
	var names []string
	svgs := map[string][]byte{}
	for _, m := range imgRE.FindAllStringSubmatch(h, -1) {
		b, err := base64.StdEncoding.DecodeString(m[2])
		if err != nil {
			t.Fatalf("figure %s: %v", m[1], err)
		}
		names, svgs[m[1]] = append(names, m[1]), b
	}
	return names, svgs
}

// makeFigure is what 'plot NAME' draws for sw.
func makeFigure(t *testing.T, sw *session.Sweep, name string) *session.Figure {
	t.Helper()
	f, err := session.MakeFigure(sw, name, session.FigureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// The live display of an evaluate sweep: before any result, the progress
// line and bar only; with results, text/plain with the text chart, text/html
// with the speed-up and error figures side by side (the SVGs 'plot speedup'
// and 'plot error' draw), and at the end image/svg+xml and image/png of
// both on one canvas.
func TestLiveBundle(t *testing.T) {
	pub := &published{}
	clock := &fakeClock{t: time.Unix(1000, 0)}
	out := liveOutput(pub, clock)
	if !out.LiveFigures() || NewCellOutput(pub, Env{}, true, 1).LiveFigures() {
		t.Error("LiveFigures: a cell output draws them, a silent one does not")
	}
	full := handSweep(sweep.ModeEvaluate)
	sw := *full
	sw.Results = nil
	out.Update(session.Progress{Sweep: &sw, Total: 8})
	d := pub.displays()
	if len(d) != 1 || d[0].typ != "display_data" {
		t.Fatalf("displays %+v", d)
	}
	h := d[0].data["text/html"].(string)
	if !strings.Contains(h, "0/8 runs") || !strings.Contains(h, "<progress") || strings.Contains(h, "<img") || strings.Contains(h, "<table") ||
		d[0].data["image/png"] != nil || d[0].data["image/svg+xml"] != nil {
		t.Errorf("before any result: %v", d[0].data)
	}
	if out.draws != 0 {
		t.Errorf("%d drawings before any result", out.draws)
	}

	sw.Results = full.Results[:6]
	t0 := time.Now()
	out.Update(session.Progress{Sweep: &sw, Done: 6, Total: 8})
	t.Logf("drew the live figures in %v", time.Since(t0))
	d = pub.displays()
	b := d[len(d)-1].data
	plain := b["text/plain"].(string)
	for _, want := range []string{"sweep 2 evaluate synthetic: 6/8 runs", "policy       tol    speed-up", "eager        2^-1", "█"} {
		if !strings.Contains(plain, want) {
			t.Errorf("text/plain lacks %q:\n%s", want, plain)
		}
	}
	h = b["text/html"].(string)
	names, svgs := htmlFigures(t, h)
	if strings.Join(names, ",") != "speedup,error" || !strings.Contains(h, `<progress max="8" value="6"`) || strings.Contains(h, "<table") {
		t.Errorf("text/html: figures %v:\n%.600s", names, h)
	}
	for _, name := range []string{"speedup", "error"} {
		if !bytes.Equal(svgs[name], makeFigure(t, &sw, name).SVG) {
			t.Errorf("the %s figure is not what 'plot %s' draws", name, name)
		}
	}
	// While the sweep runs, the images of the whole row are not drawn nor
	// sent: the HTML shows the figures (a PNG with each update had been 80
	// of its 110 KB).
	if b["image/png"] != nil || b["image/svg+xml"] != nil {
		t.Errorf("a running sweep's update carries the row's images: %v", slices.Collect(maps.Keys(b)))
	}
	sw.Results = full.Results
	clock.t = clock.t.Add(time.Minute)
	out.Update(session.Progress{Sweep: &sw, Done: 8, Total: 8, Final: true})
	d = pub.displays()
	b = d[len(d)-1].data
	raw, err := base64.StdEncoding.DecodeString(b["image/png"].(string))
	if err != nil {
		t.Fatal(err)
	}
	if sz := testenv.PNGSize(t, "image/png", raw); sz.X != 1600 || sz.Y != 450 {
		t.Errorf("image/png is %v, want the two figures side by side, 1600x450", sz)
	}
	if svg := b["image/svg+xml"].(string); !strings.HasPrefix(svg, "<?xml") || !strings.Contains(svg, "<svg") ||
		!strings.Contains(svg, "Autotuning speed-up") || !strings.Contains(svg, "Prediction error") {
		t.Errorf("image/svg+xml: %.200s", svg)
	}
}

// A burst of updates draws at most once per DrawInterval: updates between
// show the figures as last drawn; the final update always draws, and its
// figures are what 'plot speedup' and 'plot error' draw for the sweep. A
// note never draws (it may come while a run is timed).
func TestLiveDrawInterval(t *testing.T) {
	pub := &published{}
	clock := &fakeClock{t: time.Unix(1000, 0)}
	out := liveOutput(pub, clock)
	full := handSweep(sweep.ModeEvaluate)
	sw := *full
	sw.Results = nil
	out.Update(session.Progress{Sweep: &sw, Total: 8})
	var drewAt []int
	for i := 1; i <= 8; i++ {
		sw.Results = full.Results[:i]
		before := out.draws
		out.Update(session.Progress{Sweep: &sw, Done: i, Total: 8})
		if out.draws > before {
			drewAt = append(drewAt, i)
		}
		if i == 4 {
			out.Update(session.Progress{Sweep: &sw, Done: i, Total: 8, Note: "cancelling"})
			if out.draws > before+1 {
				t.Error("a note drew")
			}
		}
		clock.t = clock.t.Add(400 * time.Millisecond)
	}
	// Results 0.4 s apart: drawn at 0, 1.2 and 2.4 s.
	if got := fmt.Sprint(drewAt); got != "[1 4 7]" {
		t.Errorf("drew at results %s, want [1 4 7]: the first, then a second apart", got)
	}
	d := pub.displays()
	if len(d) != 10 {
		t.Fatalf("%d displays, want every update (no Interval)", len(d))
	}
	// The update of the 2nd result shows the figures of the 1st.
	_, second := htmlFigures(t, d[2].data["text/html"].(string))
	one := sw
	one.Results = full.Results[:1]
	if !bytes.Equal(second["speedup"], makeFigure(t, &one, "speedup").SVG) {
		t.Error("an update between drawings does not show the last drawing")
	}
	// The final update draws, though no time passed.
	before := out.draws
	sw.Status = session.StatusOK
	out.Update(session.Progress{Sweep: &sw, Done: 8, Total: 8, Final: true})
	if out.draws != before+1 {
		t.Fatal("the final update did not draw")
	}
	d = pub.displays()
	last := d[len(d)-1]
	_, svgs := htmlFigures(t, last.data["text/html"].(string))
	for _, name := range []string{"speedup", "error"} {
		if !bytes.Equal(svgs[name], makeFigure(t, &sw, name).SVG) {
			t.Errorf("final %s figure differs from 'plot %s'", name, name)
		}
	}
	if !strings.Contains(last.data["text/plain"].(string), "8/8 runs") || !strings.Contains(last.data["text/plain"].(string), "(ok)") {
		t.Errorf("final text %q", last.data["text/plain"])
	}
}

// A tune sweep has no reference times: its live figure is configs, each
// configuration's predicted time per policy, as 'plot configs' draws it,
// and the bundle's images are that figure.
func TestLiveTune(t *testing.T) {
	pub := &published{}
	out := liveOutput(pub, &fakeClock{t: time.Unix(1000, 0)})
	sw := handSweep(sweep.ModeTune)
	out.Update(session.Progress{Sweep: sw, Done: 8, Total: 8, Final: true})
	d := pub.displays()
	b := d[len(d)-1].data
	names, svgs := htmlFigures(t, b["text/html"].(string))
	want := makeFigure(t, sw, "configs")
	if strings.Join(names, ",") != "configs" || !bytes.Equal(svgs["configs"], want.SVG) || b["image/svg+xml"] != string(want.SVG) ||
		b["image/png"] != base64.StdEncoding.EncodeToString(want.PNG) {
		t.Errorf("tune figures %v", names)
	}
	if !strings.Contains(b["text/plain"].(string), "chosen so far") {
		t.Errorf("tune text:\n%s", b["text/plain"])
	}
}
