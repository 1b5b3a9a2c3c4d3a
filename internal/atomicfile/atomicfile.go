// Package atomicfile writes a file whole or not at all.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write writes path through a temporary file in its directory and a
// rename, so that a failure leaves the file as it was, never half written.
// A symbolic link is written through: its target is replaced, the link
// kept. The file keeps the mode of the one it replaces, or gets 0644 (the
// temporary file's 0600 had made exports private). Write returns the path
// written, a link's target for a link, and the first error of the
// temporary file's creation, write (write's), close or rename.
func Write(path string, write func(*os.File) error) (string, error) {
	return WritePerm(path, 0o644, write)
}

// WritePerm is Write with perm as the mode of a file it makes (a file it
// replaces keeps its own).
func WritePerm(path string, perm os.FileMode, write func(*os.File) error) (string, error) {
	if t, err := filepath.EvalSymlinks(path); err == nil {
		path = t
	}
	mode := perm
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return path, err
	}
	defer os.Remove(tmp.Name())
	err = write(tmp)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if e := tmp.Close(); err == nil {
		err = e
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	return path, err
}
