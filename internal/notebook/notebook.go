// Package notebook reads and writes Jupyter notebooks (nbformat 4): cells
// (code, markdown, raw), their outputs (stream, display_data,
// execute_result, error) and MIME bundles.
//
// Write produces the bytes Jupyter itself writes (nbformat's writer): JSON
// indented by one space with keys sorted, non-ASCII characters as they are,
// multi-line strings (sources, stream text, text/* and image/svg+xml values)
// split into lists of lines, image/png as one base64 string, and a final
// newline. Notebooks are written as nbformat 4.5, the version that gives
// every cell an id; Read upgrades older 4.x notebooks as nbformat does, by
// giving their cells ids.
//
// The package only knows the format: it runs nothing (see the kernel
// package's Executor and 'approxtune run').
package notebook

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// The nbformat version this package writes.
const (
	Format      = 4
	FormatMinor = 5
)

// CellType is the kind of a cell.
type CellType string

// The cell types.
const (
	Code     CellType = "code"
	Markdown CellType = "markdown"
	Raw      CellType = "raw"
)

// OutputType is the kind of a code cell's output.
type OutputType string

// The output types.
const (
	Stream        OutputType = "stream"
	DisplayData   OutputType = "display_data"
	ExecuteResult OutputType = "execute_result"
	Error         OutputType = "error"
)

// Notebook is an nbformat 4 notebook.
type Notebook struct {
	// Metadata is the notebook's metadata: kernelspec, language_info, and
	// whatever else the notebook carries (kept as read).
	Metadata map[string]any
	Cells    []Cell
	// Format and FormatMinor are the nbformat version as read (4.x); Write
	// writes 4.5 or, for a later minor version, that one.
	Format, FormatMinor int
}

// Cell is one cell. Code cells have an execution count and outputs;
// markdown and raw cells may have attachments.
type Cell struct {
	// ID is the cell id (1 to 64 letters, digits, '-' or '_'); Write gives
	// a cell without one a fresh id.
	ID       string
	Type     CellType
	Source   string
	Metadata map[string]any
	// Attachments are the files a markdown or raw cell refers to
	// (attachment:NAME), each a MIME bundle.
	Attachments map[string]Bundle
	// ExecutionCount is the code cell's execution count; nil when it has
	// not run.
	ExecutionCount *int
	Outputs        []Output
}

// Output is one output of a code cell. Which fields count depends on Type:
// stream has Name and Text; display_data has Data and Metadata;
// execute_result those and ExecutionCount; error has EName, EValue and
// Traceback.
type Output struct {
	Type           OutputType
	Name           string // stream: stdout or stderr
	Text           string // stream
	Data           Bundle
	Metadata       map[string]any
	ExecutionCount *int
	EName, EValue  string
	Traceback      []string
}

// Bundle is a MIME bundle: MIME type to data. Text types (text/*,
// image/svg+xml, application/javascript) and base64 images (image/png,
// image/jpeg) hold one string; JSON types (application/json,
// application/*+json) hold any JSON value.
type Bundle map[string]any

// KernelName is the name of approxtune's kernelspec, and of its language.
const KernelName = "approxtune"

// New returns an empty notebook for approxtune's kernel: its kernelspec and
// language_info in the metadata.
func New() *Notebook {
	return &Notebook{Metadata: Metadata(), Format: Format, FormatMinor: FormatMinor}
}

// Metadata is the notebook metadata of approxtune's kernel: kernelspec and
// language_info (the name; a kernel adds what its kernel_info reply says).
func Metadata() map[string]any {
	return map[string]any{
		"kernelspec": map[string]any{
			"name":         KernelName,
			"display_name": KernelName,
			"language":     KernelName,
		},
		"language_info": map[string]any{"name": KernelName},
	}
}

// LanguageInfo is the language_info of approxtune's command language, as
// the kernel's kernel_info reply gives it and a notebook's metadata stores
// it; version is the kernel's, left out when "".
func LanguageInfo(version string) map[string]any {
	li := map[string]any{
		"name":            KernelName,
		"mimetype":        "text/x-approxtune",
		"file_extension":  ".atune",
		"pygments_lexer":  "text",
		"codemirror_mode": "shell",
	}
	if version != "" {
		li["version"] = version
	}
	return li
}

// NewCode returns a code cell holding source, not yet run, with a fresh id.
func NewCode(source string) Cell {
	return Cell{ID: NewID(), Type: Code, Source: source, Metadata: map[string]any{}, Outputs: []Output{}}
}

// NewMarkdown returns a markdown cell holding source, with a fresh id.
func NewMarkdown(source string) Cell {
	return Cell{ID: NewID(), Type: Markdown, Source: source, Metadata: map[string]any{}}
}

// NewID returns a fresh cell id: 8 random hexadecimal digits, as Jupyter
// makes them.
func NewID() string {
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand does not fail on the systems Go supports.
		panic(fmt.Sprintf("notebook: random cell id: %v", err))
	}
	return hex.EncodeToString(b)
}

// ValidID reports whether id is a valid cell id (nbformat 4.5: 1 to 64
// ASCII letters, digits, '-' or '_').
func ValidID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for _, c := range []byte(id) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Count returns a pointer to n, for ExecutionCount.
func Count(n int) *int { return &n }
