// Package display shows a session's output as a Jupyter notebook does:
// MIME bundles for text, a sweep's live progress, the best table and
// figures; the output of one cell (CellOutput), which the Jupyter kernel
// publishes on iopub; a Collector that stores published messages as
// nbformat outputs, as a front end saves them; and Export, the writer of
// 'export notebook', which replays a session's transcript through the same
// code. Both faces (the REPL and the kernel) and 'approxtune run' use it.
package display

import (
	"encoding/base64"
	"fmt"
	"html"
	"math"
	"slices"
	"strings"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/session"
	"github.com/approxtune/approxtune/sweep"
)

// Bundle is a MIME bundle: MIME type -> data, as display_data,
// update_display_data and execute_result carry it. text/plain is always
// present so that every front end (jupyter console too) shows something.
type Bundle map[string]any

// TextBundle is text as text/plain and as an HTML <pre> block.
func TextBundle(text string) Bundle {
	return Bundle{
		"text/plain": text,
		"text/html":  "<pre>" + html.EscapeString(strings.TrimRight(text, "\n")) + "</pre>",
	}
}

// progressBundle renders a sweep's progress: the progress line, the notes
// (a cancel under way...) and the chart of speed-up and error per policy and
// tolerance (rows, from Sweep.ChartRows) as text/plain, as jupyter console
// shows it; and as text/html the progress line, a progress bar, the notes
// and the sweep's figures as last drawn (figs), side by side, each an <img>
// of its SVG as a data URI (an image cannot run script, and no id of one
// SVG can clash with another's). The figures of a running sweep show the
// results so far; before any, the HTML has only the progress line and bar,
// and it falls back to an HTML chart of rows when the figures could not be
// drawn. image/svg+xml and image/png are all the figures on one canvas
// (speed-up|error, Figure row): what a front end that shows no HTML (a PDF
// export) shows.
func progressBundle(p session.Progress, notes []string, rows []session.ChartRow, figs figures) Bundle {
	line := p.Line()
	if p.Final {
		// "cancelling: ... (interrupt again to stop mpirun now)" was advice
		// for while the sweep ran: its end line says it was cancelled.
		notes = slices.DeleteFunc(slices.Clone(notes), func(n string) bool { return strings.HasPrefix(n, "cancelling:") })
	}

	var t strings.Builder
	t.WriteString(line + "\n")
	for _, n := range notes {
		t.WriteString(n + "\n")
	}
	t.WriteString(session.TextChart(rows, false))

	var h strings.Builder
	h.WriteString(`<div class="approxtune-sweep">`)
	fmt.Fprintf(&h, `<div>%s</div>`, html.EscapeString(line))
	if p.Total > 0 {
		fmt.Fprintf(&h, `<progress max="%d" value="%d" style="width:24em"></progress>`, p.Total, p.Done)
	}
	for _, n := range notes {
		fmt.Fprintf(&h, `<div><i>%s</i></div>`, html.EscapeString(n))
	}
	if len(figs.figs) > 0 {
		h.WriteString(`<div class="approxtune-figures" style="display:flex;flex-wrap:wrap;align-items:flex-start">`)
		for _, f := range figs.figs {
			// width: where the notebook is not trusted, the styles are
			// stripped, and the figures, at their own size, stood one
			// under the other; 440 pixels puts two side by side.
			fmt.Fprintf(&h, `<img alt="%s" width="440" style="flex:1 1 360px;min-width:0;max-width:800px" src="data:image/svg+xml;base64,%s">`,
				html.EscapeString(f.Name), base64.StdEncoding.EncodeToString(f.SVG))
		}
		h.WriteString(`</div>`)
	} else {
		if figs.err != nil {
			fmt.Fprintf(&h, `<div><i>no figures: %s</i></div>`, html.EscapeString(figs.err.Error()))
		}
		h.WriteString(htmlChart(rows))
	}
	h.WriteString(`</div>`)
	b := Bundle{"text/plain": strings.TrimRight(t.String(), "\n"), "text/html": h.String()}
	if figs.row != nil {
		b["image/svg+xml"] = string(figs.row.SVG)
		b["image/png"] = base64.StdEncoding.EncodeToString(figs.row.PNG)
	}
	return b
}

// htmlChart draws the rows as a table with inline bars.
func htmlChart(rows []session.ChartRow) string {
	if len(rows) == 0 {
		return ""
	}
	const px = 160
	hbar := func(f float64, color string) string {
		return fmt.Sprintf(`<div style="display:inline-block;width:%dpx;height:0.8em;background:%s"></div>`, int(math.Round(f*px)), color)
	}
	var b strings.Builder
	b.WriteString(`<table class="approxtune-chart">`)
	if rows[0].HasRef {
		b.WriteString(`<thead><tr><th>policy</th><th>tolerance</th><th colspan="2">speed-up</th><th colspan="2">mean error (tolerance marked)</th></tr></thead><tbody>`)
		for _, r := range rows {
			errBar := fmt.Sprintf(`<div style="position:relative;width:%dpx;height:0.8em">%s<div style="position:absolute;left:%dpx;top:-0.1em;width:2px;height:1em;background:#333"></div></div>`,
				px, hbar(r.ErrFrac, "#c0504d"), int(math.Round(r.TolFrac*px)))
			fmt.Fprintf(&b, `<tr><td>%s</td><td>%s</td><td style="text-align:left">%s</td><td>%s</td><td style="text-align:left">%s</td><td>%s</td></tr>`,
				html.EscapeString(r.Policy), format.Tolerance(r.Tolerance), hbar(r.SpeedFrac, "#4f81bd"), format.Speedup(r.Speedup), errBar, format.Percent(r.MeanError))
		}
	} else {
		b.WriteString(`<thead><tr><th>policy</th><th>tolerance</th><th>configurations</th><th>predicted s</th><th>chosen so far</th></tr></thead><tbody>`)
		for _, r := range rows {
			fmt.Fprintf(&b, `<tr><td>%s</td><td>%s</td><td>%d</td><td>%s</td><td>%s</td></tr>`,
				html.EscapeString(r.Policy), format.Tolerance(r.Tolerance), r.Configs, format.SecondsOrNone(r.Predicted), html.EscapeString(r.Chosen))
		}
	}
	b.WriteString(`</tbody></table>`)
	return b.String()
}

// tableBundle is the table 'table best' prints (text, as the session wrote
// it) with an HTML rendering of the same summaries.
func tableBundle(sw *session.Sweep, text string) Bundle {
	bd := TextBundle(text)
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
		sw.ID, html.EscapeString(mode), html.EscapeString(sw.Workload), len(sw.Results), sw.Total(), html.EscapeString(string(sw.Status)))
	cell := func(s string) string { return "<td>" + html.EscapeString(s) + "</td>" }
	if sums[0].HasRef {
		b.WriteString(`<thead><tr><th>policy</th><th>tolerance</th><th>speed-up</th><th>mean error</th><th>max error</th><th>quality</th><th>chosen</th></tr></thead><tbody>`)
		for _, s := range sums {
			b.WriteString("<tr>" + cell(s.Policy) + cell(format.Tolerance(s.Tolerance)) + cell(format.Speedup(s.Speedup)) + cell(format.Percent(s.MeanError)) +
				cell(format.Percent(s.MaxError)) + cell(format.Fixed(s.Quality, 3)) + cell(s.Chosen) + "</tr>")
		}
	} else {
		b.WriteString(`<thead><tr><th>policy</th><th>tolerance</th><th>selective s</th><th>chosen</th><th>predicted s</th></tr></thead><tbody>`)
		for _, s := range sums {
			b.WriteString("<tr>" + cell(s.Policy) + cell(format.Tolerance(s.Tolerance)) + cell(format.SecondsOrNone(s.SelTotal)) + cell(s.Chosen) + cell(format.SecondsOrNone(s.PredChosen)) + "</tr>")
		}
	}
	b.WriteString(`</tbody></table>`)
	// Every line the text has after its table, in its order: the HTML had
	// made its own few, and left out the notes of a sweep that stopped
	// before its end or left configurations out, and the speed-ups with
	// the launches counted (a notebook review: 6.66x in the table, about
	// 1.05x end to end, said in the text alone).
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	for _, l := range lines[min(len(lines), 2+len(sums)):] {
		fmt.Fprintf(&b, `<div>%s</div>`, html.EscapeString(l))
	}
	b.WriteString(`</div>`)
	bd["text/html"] = b.String()
	return bd
}

// isTableBest reports whether text is what 'table best' prints for sw.
func isTableBest(sw *session.Sweep, text string) bool {
	if sw == nil || sw.Spec == nil || sw.Spec.Mode == sweep.ModeReference {
		return false
	}
	// The table starts with its sweep's line: any other text is told
	// apart without making the table (every cell's answer comes here,
	// and the table of a sweep of 10,000 runs takes milliseconds).
	if !strings.HasPrefix(text, fmt.Sprintf("sweep %d: ", sw.ID)) {
		return false
	}
	return strings.TrimRight(text, "\n") == strings.TrimRight(session.TableBest(sw), "\n")
}

// figureBundle is a figure as image/png, image/svg+xml and a text/plain
// summary for text-only front ends such as jupyter console.
func figureBundle(f *session.Figure) Bundle {
	summary := "[figure " + f.Name + "]\n" + f.Summary
	return Bundle{
		"image/png":     base64.StdEncoding.EncodeToString(f.PNG),
		"image/svg+xml": string(f.SVG),
		"text/plain":    strings.TrimRight(summary, "\n"),
	}
}
