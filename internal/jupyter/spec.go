package jupyter

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// SpecName is the name of the kernelspec directory (what --kernel names).
const SpecName = "approxtune"

// Spec is a kernelspec's kernel.json.
type Spec struct {
	Argv          []string       `json:"argv"`
	DisplayName   string         `json:"display_name"`
	Language      string         `json:"language"`
	InterruptMode string         `json:"interrupt_mode"`
	Metadata      map[string]any `json:"metadata"`
}

// NewSpec is the kernelspec that runs binary (an absolute path) as the kernel.
func NewSpec(binary string) Spec {
	return Spec{
		Argv:          []string{binary, "kernel", "{connection_file}"},
		DisplayName:   "approxtune",
		Language:      "approxtune",
		InterruptMode: "message",
		Metadata:      map[string]any{"debugger": false},
	}
}

// SpecBinary is the binary the kernelspec installed in kernelsDir runs,
// or "" where none is installed (or it cannot be read).
func SpecBinary(kernelsDir string) string {
	b, err := os.ReadFile(filepath.Join(kernelsDir, SpecName, "kernel.json"))
	if err != nil {
		return ""
	}
	var sp Spec
	if json.Unmarshal(b, &sp) != nil || len(sp.Argv) == 0 {
		return ""
	}
	return sp.Argv[0]
}

// InstallSpec writes the kernelspec for binary into kernelsDir/approxtune
// (kernel.json, logo-32x32.png, logo-64x64.png), replacing an older one, and
// returns that directory.
func InstallSpec(kernelsDir, binary string) (string, error) {
	abs, err := filepath.Abs(binary)
	if err != nil {
		return "", fmt.Errorf("kernelspec: %w", err)
	}
	dir := filepath.Join(kernelsDir, SpecName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("kernelspec: %w", err)
	}
	js, err := json.MarshalIndent(NewSpec(abs), "", "  ")
	if err != nil {
		return "", fmt.Errorf("kernelspec: %w", err)
	}
	files := map[string][]byte{"kernel.json": append(js, '\n')}
	for _, size := range []int{32, 64} {
		b, err := Logo(size)
		if err != nil {
			return "", err
		}
		files[fmt.Sprintf("logo-%dx%d.png", size, size)] = b
	}
	for name, b := range files {
		if err := writeAtomic(filepath.Join(dir, name), b); err != nil {
			return "", fmt.Errorf("kernelspec: %w", err)
		}
	}
	return dir, nil
}

// writeAtomic writes through a temporary file and a rename.
func writeAtomic(path string, b []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Logo draws the kernel's logo, size x size pixels, as PNG: rising bars, the
// last one dashed (a predicted, skipped kernel).
func Logo(size int) ([]byte, error) {
	img := image.NewRGBA(image.Rect(0, 0, size, size))
	bg := color.RGBA{0x1f, 0x4e, 0x79, 0xff}
	fg := color.RGBA{0xff, 0xff, 0xff, 0xff}
	accent := color.RGBA{0xf5, 0xa6, 0x23, 0xff}
	r := float64(size) / 8 // corner radius
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			if inRounded(float64(x)+0.5, float64(y)+0.5, float64(size), r) {
				img.Set(x, y, bg)
			}
		}
	}
	s := float64(size) / 64
	bars := []struct {
		x0, x1, top float64
		c           color.RGBA
		dashed      bool
	}{{10, 20, 40, fg, false}, {24, 34, 28, fg, false}, {38, 48, 18, fg, false}, {52, 58, 10, accent, true}}
	for _, b := range bars {
		for y := int(b.top * s); y < int(54*s); y++ {
			if b.dashed && (y/int(max(1, 4*s)))%2 == 1 {
				continue
			}
			for x := int(b.x0 * s); x < int(b.x1*s); x++ {
				img.Set(x, y, b.c)
			}
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return nil, fmt.Errorf("logo: %w", err)
	}
	return buf.Bytes(), nil
}

func inRounded(x, y, size, r float64) bool {
	cx := min(max(x, r), size-r)
	cy := min(max(y, r), size-r)
	return (x-cx)*(x-cx)+(y-cy)*(y-cy) <= r*r
}

// UserDataDir is Jupyter's per-user data directory, as jupyter_core finds
// it: $JUPYTER_DATA_DIR, else ~/Library/Jupyter on macOS, else
// $XDG_DATA_HOME/jupyter (default ~/.local/share/jupyter).
func UserDataDir() (string, error) {
	if d := os.Getenv("JUPYTER_DATA_DIR"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("jupyter data directory: %w", err)
	}
	if runtime.GOOS == "darwin" {
		return filepath.Join(home, "Library", "Jupyter"), nil
	}
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		return filepath.Join(x, "jupyter"), nil
	}
	return filepath.Join(home, ".local", "share", "jupyter"), nil
}

// JupyterPython returns the Python interpreter (with its leading
// arguments) of the jupyter command on PATH, read from its #! line.
func JupyterPython() ([]string, error) {
	j, err := exec.LookPath("jupyter")
	if err != nil {
		return nil, fmt.Errorf("no jupyter command on PATH: %w", err)
	}
	f, err := os.Open(j)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", j, err)
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	if !strings.HasPrefix(line, "#!") {
		return nil, fmt.Errorf("%s does not start with #!: cannot tell its Python", j)
	}
	argv := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(argv) == 0 {
		return nil, fmt.Errorf("%s has an empty #! line", j)
	}
	return argv, nil
}

// SysPrefix is sys.prefix of the Python that runs jupyter: --sys-prefix
// installs into SysPrefix/share/jupyter/kernels.
func SysPrefix(ctx context.Context) (string, error) {
	py, err := JupyterPython()
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	args := append(append([]string{}, py[1:]...), "-c", "import sys; print(sys.prefix)")
	out, err := exec.CommandContext(ctx, py[0], args...).Output()
	if err != nil {
		return "", fmt.Errorf("ask %s for sys.prefix: %w", strings.Join(py, " "), err)
	}
	p := strings.TrimSpace(string(out))
	if p == "" {
		return "", fmt.Errorf("%s printed no sys.prefix", strings.Join(py, " "))
	}
	return p, nil
}
