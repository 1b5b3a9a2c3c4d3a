package workloads

import (
	"os"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// buffer hands out zeroed memory whose every page is already mapped
// (mincore), so no timed run pays for its page faults.
func TestBufferPagesInPlace(t *testing.T) {
	const n = 8 << 20 // 64 MiB: fresh memory from the operating system
	b := buffer(n)
	// The whole pages inside the buffer (mincore wants a page-aligned start).
	page := uintptr(os.Getpagesize())
	addr := uintptr(unsafe.Pointer(&b[0]))
	skip := (page - addr%page) % page
	pages := (uintptr(n)*8 - skip) / page
	start := unsafe.Add(unsafe.Pointer(&b[0]), skip)
	vec := make([]byte, pages)
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(start), pages*page, uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatalf("mincore: %v", errno)
	}
	missing := 0
	for _, v := range vec {
		if v&1 == 0 {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of the buffer's %d pages are not in memory", missing, len(vec))
	}
	// (Read only now: a read maps a page too.)
	for i, v := range b {
		if v != 0 {
			t.Fatalf("element %d is %v, want 0", i, v)
		}
	}
}
