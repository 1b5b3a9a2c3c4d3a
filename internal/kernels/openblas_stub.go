//go:build !cgo || noopenblas

package kernels

// haveOpenBLAS reports whether the OpenBLAS backend is compiled in.
const haveOpenBLAS = false

// newOpenBLASBackend is never called when OpenBLAS is not compiled in
// (NewBackend checks haveOpenBLAS first).
func newOpenBLASBackend() (Backend, error) {
	panic("kernels: OpenBLAS backend not compiled in")
}
