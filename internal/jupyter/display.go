package jupyter

import (
	"encoding/base64"
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"

	"github.com/approxtune/approxtune/session"
	"github.com/approxtune/approxtune/sweep"
)

// bundle is a MIME bundle: MIME type -> data, as display_data,
// update_display_data and execute_result carry it. text/plain is always
// present so that every front end (jupyter console too) shows something.
type bundle map[string]any

// textBundle is text as text/plain and as an HTML <pre> block.
func textBundle(text string) bundle {
	return bundle{
		"text/plain": text,
		"text/html":  "<pre>" + html.EscapeString(strings.TrimRight(text, "\n")) + "</pre>",
	}
}

// progressBundle renders a sweep's progress: the progress line, the notes
// (a cancel under way...) and the chart of speed-up and error per policy and
// tolerance (rows, from chartRows), as text/plain and text/html. It is the
// one place a sweep's figures are built: image/png and image/svg+xml
// renderings are further entries of the same bundle.
func progressBundle(p session.Progress, notes []string, rows []chartRow) bundle {
	line := p.Line()

	var t strings.Builder
	t.WriteString(line + "\n")
	for _, n := range notes {
		t.WriteString(n + "\n")
	}
	t.WriteString(textChart(rows))

	var h strings.Builder
	h.WriteString(`<div class="approxtune-sweep">`)
	fmt.Fprintf(&h, `<div>%s</div>`, html.EscapeString(line))
	if p.Total > 0 {
		fmt.Fprintf(&h, `<progress max="%d" value="%d" style="width:24em"></progress>`, p.Total, p.Done)
	}
	for _, n := range notes {
		fmt.Fprintf(&h, `<div><i>%s</i></div>`, html.EscapeString(n))
	}
	h.WriteString(htmlChart(rows))
	h.WriteString(`</div>`)
	return bundle{"text/plain": strings.TrimRight(t.String(), "\n"), "text/html": h.String()}
}

// chartRow is one policy x tolerance of the chart.
type chartRow struct {
	policy    string // "" when the same as the row above
	tolerance float64
	hasRef    bool
	speedup   float64 // with references: autotuning speed-up
	meanError float64
	// fractions of the largest value, for the bars
	speedFrac, errFrac, tolFrac float64
	// without references (tune): the configuration chosen so far
	chosen    string
	predicted float64
	selective float64
	configs   int
}

// chartRows computes the rows of the chart from a sweep's summaries.
func chartRows(sw *session.Sweep) []chartRow {
	sums := sw.Summaries()
	maxS, maxE := session.ChartScale(sums)
	frac := func(v, max float64) float64 {
		if math.IsNaN(v) || max <= 0 {
			return 0
		}
		return math.Min(1, math.Max(0, v/max))
	}
	var rows []chartRow
	prev := ""
	for _, s := range sums {
		name := s.Policy
		if name == prev {
			name = ""
		}
		prev = s.Policy
		rows = append(rows, chartRow{
			policy: name, tolerance: s.Tolerance, hasRef: s.HasRef,
			speedup: s.Speedup, meanError: s.MeanError,
			speedFrac: frac(s.Speedup, maxS), errFrac: frac(s.MeanError, maxE), tolFrac: frac(s.Tolerance, maxE),
			chosen: s.Chosen, predicted: s.PredChosen, selective: s.SelTotal, configs: s.Configs,
		})
	}
	return rows
}

const barWidth = 16

// textChart draws the rows with block characters: speed-up, and mean error
// with the tolerance marked by '|'.
func textChart(rows []chartRow) string {
	if len(rows) == 0 {
		return ""
	}
	var b strings.Builder
	if rows[0].hasRef {
		fmt.Fprintf(&b, "%-12s %-6s %-24s %s\n", "policy", "tol", "speed-up", "mean error (| tolerance)")
		for _, r := range rows {
			eb := []rune(bar(r.errFrac, barWidth))
			if tp := min(int(math.Round(r.tolFrac*barWidth)), barWidth-1); eb[tp] == ' ' {
				eb[tp] = '|'
			}
			fmt.Fprintf(&b, "%-12s %-6s %s %6s  %s %6s\n", r.policy, tolName(r.tolerance), bar(r.speedFrac, barWidth),
				fmtX(r.speedup), string(eb), pct(r.meanError))
		}
		return b.String()
	}
	fmt.Fprintf(&b, "%-12s %-6s %7s %12s  %s\n", "policy", "tol", "configs", "predicted s", "chosen so far")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-12s %-6s %7d %12s  %s\n", r.policy, tolName(r.tolerance), r.configs, secs(r.predicted), r.chosen)
	}
	return b.String()
}

func bar(f float64, width int) string {
	n := int(math.Round(f * float64(width)))
	n = max(0, min(n, width))
	return strings.Repeat("█", n) + strings.Repeat(" ", width-n)
}

// htmlChart draws the rows as a table with inline bars.
func htmlChart(rows []chartRow) string {
	if len(rows) == 0 {
		return ""
	}
	const px = 160
	hbar := func(f float64, color string) string {
		return fmt.Sprintf(`<div style="display:inline-block;width:%dpx;height:0.8em;background:%s"></div>`, int(math.Round(f*px)), color)
	}
	var b strings.Builder
	b.WriteString(`<table class="approxtune-chart">`)
	if rows[0].hasRef {
		b.WriteString(`<thead><tr><th>policy</th><th>tolerance</th><th colspan="2">speed-up</th><th colspan="2">mean error (tolerance marked)</th></tr></thead><tbody>`)
		for _, r := range rows {
			errBar := fmt.Sprintf(`<div style="position:relative;width:%dpx;height:0.8em">%s<div style="position:absolute;left:%dpx;top:-0.1em;width:2px;height:1em;background:#333"></div></div>`,
				px, hbar(r.errFrac, "#c0504d"), int(math.Round(r.tolFrac*px)))
			fmt.Fprintf(&b, `<tr><td>%s</td><td>%s</td><td style="text-align:left">%s</td><td>%s</td><td style="text-align:left">%s</td><td>%s</td></tr>`,
				html.EscapeString(r.policy), tolName(r.tolerance), hbar(r.speedFrac, "#4f81bd"), fmtX(r.speedup), errBar, pct(r.meanError))
		}
	} else {
		b.WriteString(`<thead><tr><th>policy</th><th>tolerance</th><th>configurations</th><th>predicted s</th><th>chosen so far</th></tr></thead><tbody>`)
		for _, r := range rows {
			fmt.Fprintf(&b, `<tr><td>%s</td><td>%s</td><td>%d</td><td>%s</td><td>%s</td></tr>`,
				html.EscapeString(r.policy), tolName(r.tolerance), r.configs, secs(r.predicted), html.EscapeString(r.chosen))
		}
	}
	b.WriteString(`</tbody></table>`)
	return b.String()
}

// tableBundle is the table 'table best' prints (text, as the session wrote
// it) with an HTML rendering of the same summaries.
func tableBundle(sw *session.Sweep, text string) bundle {
	bd := textBundle(text)
	sums := sw.Summaries()
	if len(sums) == 0 {
		return bd
	}
	var b strings.Builder
	mode := ""
	if sw.Spec != nil {
		mode = string(sw.Spec.Mode)
	}
	fmt.Fprintf(&b, `<div class="approxtune-best"><div>sweep %d: %s %s, %d of %d runs (%s)</div><table>`,
		sw.ID, html.EscapeString(mode), html.EscapeString(sw.Workload), len(sw.Results), sw.Total(), html.EscapeString(sw.Status))
	cell := func(s string) string { return "<td>" + html.EscapeString(s) + "</td>" }
	if sums[0].HasRef {
		b.WriteString(`<thead><tr><th>policy</th><th>tolerance</th><th>speed-up</th><th>mean error</th><th>max error</th><th>quality</th><th>chosen</th></tr></thead><tbody>`)
		for _, s := range sums {
			b.WriteString("<tr>" + cell(s.Policy) + cell(tolName(s.Tolerance)) + cell(fmtX(s.Speedup)) + cell(pct(s.MeanError)) +
				cell(pct(s.MaxError)) + cell(fmtF(s.Quality, 3)) + cell(s.Chosen) + "</tr>")
		}
		fmt.Fprintf(&b, `</tbody></table><div>best configuration (least reference time): %s</div>`, html.EscapeString(sums[0].Best))
		if l := sw.NoiseLine(); l != "" {
			fmt.Fprintf(&b, `<div>%s</div>`, html.EscapeString(l))
		}
		b.WriteString(`</div>`)
	} else {
		b.WriteString(`<thead><tr><th>policy</th><th>tolerance</th><th>selective s</th><th>chosen</th><th>predicted s</th></tr></thead><tbody>`)
		for _, s := range sums {
			b.WriteString("<tr>" + cell(s.Policy) + cell(tolName(s.Tolerance)) + cell(secs(s.SelTotal)) + cell(s.Chosen) + cell(secs(s.PredChosen)) + "</tr>")
		}
		b.WriteString(`</tbody></table></div>`)
	}
	bd["text/html"] = b.String()
	return bd
}

// isTableBest reports whether text is what 'table best' prints for sw.
func isTableBest(sw *session.Sweep, text string) bool {
	if sw == nil || sw.Spec == nil || sw.Spec.Mode == sweep.ModeReference {
		return false
	}
	return strings.TrimRight(text, "\n") == strings.TrimRight(session.TableBest(sw), "\n")
}

func tolName(t float64) string {
	if t > 0 {
		if f, e := math.Frexp(t); f == 0.5 {
			return fmt.Sprintf("2^%d", e-1)
		}
	}
	return strconv.FormatFloat(t, 'g', -1, 64)
}

func pct(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*x)
}

func fmtX(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "-"
	}
	return fmt.Sprintf("%.2fx", x)
}

func fmtF(x float64, prec int) string {
	if math.IsNaN(x) {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', prec, 64)
}

func secs(x float64) string {
	if math.IsNaN(x) || x == 0 {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', 4, 64)
}

// figureBundle is a figure as image/png, image/svg+xml and a text/plain
// summary for text-only front ends such as jupyter console.
func figureBundle(f *session.Figure) bundle {
	summary := "[figure " + f.Name + "]\n" + f.Summary
	return bundle{
		"image/png":     base64.StdEncoding.EncodeToString(f.PNG),
		"image/svg+xml": string(f.SVG),
		"text/plain":    strings.TrimRight(summary, "\n"),
	}
}
