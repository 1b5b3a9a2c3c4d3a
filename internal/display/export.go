package display

import (
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/approxtune/approxtune/internal/notebook"
	"github.com/approxtune/approxtune/session"
)

// DisplayIDs returns a maker of fresh display ids, approxtune-ID-N: ID is
// the first 8 digits of id (a random hexadecimal id of at least 8), N is
// counted by seq.
func DisplayIDs(id string, seq *atomic.Uint64) func() string {
	return func() string { return fmt.Sprintf("approxtune-%s-%d", id[:8], seq.Add(1)) }
}

// Export writes a session's transcript to path as a notebook (it is a
// session.NotebookFunc, the writer of 'export notebook'): each command is a
// code cell, in order, numbered 1, 2, ..., whose outputs are those the
// Jupyter kernel would have shown, as a Jupyter front end stores them (the
// command's recorded output replayed through a CellOutput into a
// Collector); consecutive comment lines are one markdown cell, without
// their '# '. A command whose sweep was interrupted or failed
// (session.Step.Failed) is tagged raises-exception, with its error. The
// file is replaced whole (a temporary file and a rename).
func Export(steps []session.Step, path string) error {
	nb := notebook.New()
	nb.Metadata["language_info"] = notebook.LanguageInfo("")
	var comments []string
	flush := func() {
		if len(comments) > 0 {
			nb.Cells = append(nb.Cells, notebook.NewMarkdown(strings.Join(comments, "\n")))
			comments = nil
		}
	}
	ids := DisplayIDs(notebook.NewID(), new(atomic.Uint64))
	n := 0
	for _, st := range steps {
		if st.Comment {
			comments = append(comments, session.CommentText(st.Line))
			continue
		}
		flush()
		n++
		c := notebook.NewCode(st.Line)
		c.ExecutionCount = notebook.Count(n)
		c.Outputs = replay(st, n, ids)
		if st.Failed != "" {
			// A sweep that was interrupted or failed, as the session
			// went on past it: Jupyter's tag for a cell that may fail
			// ('approxtune run' and nbconvert go on past it), and its
			// error as the kernel showed one.
			c.Metadata["tags"] = []any{"raises-exception"}
			c.Outputs = append(c.Outputs, notebook.Output{Type: notebook.Error, EName: "Error", EValue: st.Failed, Traceback: []string{"Error: " + st.Failed}})
		}
		nb.Cells = append(nb.Cells, c)
	}
	flush()
	return notebook.WriteFile(path, nb) // the session says it was export notebook
}

// replay sends a recorded command's output through a cell output whose
// command is the cell's last, and returns what a Collector stored. No
// time passes in a replay: every display update goes out, and what the
// command printed is held until it ends, as for a command that ran fast.
func replay(st session.Step, count int, displayID func() string) []notebook.Output {
	col := &Collector{}
	out := NewCellOutput(col, Env{Last: func() *session.Sweep { return st.Last }, DisplayID: displayID}, false, count)
	out.Begin(true)
	st.Replay(out)
	out.End(true)
	out.Close()
	return col.Outputs()
}
