package programs

import (
	"strings"
	"testing"
)

// A failed launch's tail is the program's last words, each once, not
// mpirun's banner (Open MPI 4.1's, as a rank's exit 1 printed it): the
// banner alone is 10 lines, which left none of the program's own.
func TestTailLeavesOutMpirunBanners(t *testing.T) {
	var tl Tail
	tl.Write([]byte(`rank 0: reading deck solver.dat
rank 0: error: the deck has no size
rank 0: error: the deck has no size
mpirun: Forwarding signal 23 to job
[vm:20036] [[8890,0],0] ORTE_ERROR_LOG: Data unpack would read past end of buffer in file ../../../orte/util/show_help.c at line 501
[vm:20036] 2 more processes have sent help message help-mpi-api.txt / mpi-abort
--------------------------------------------------------------------------
Primary job  terminated normally, but 1 process returned
a non-zero exit code. Per user-direction, the job has been aborted.
--------------------------------------------------------------------------
--------------------------------------------------------------------------
mpirun noticed that process rank 1 with PID 4242 on node vm exited on signal 11 (Segmentation fault).
--------------------------------------------------------------------------
`))
	got := tl.Lines(10)
	want := "\n    rank 0: reading deck solver.dat\n    rank 0: error: the deck has no size\n    mpirun noticed that process rank 1 with PID 4242 on node vm exited on signal 11 (Segmentation fault)."
	if got != want {
		t.Errorf("tail:%s\nwant:%s", got, want)
	}
	// Only a banner: the banner, rather than nothing.
	var only Tail
	only.Write([]byte("-------------------------\nPrimary job  terminated normally\n-------------------------\n"))
	if got := only.Lines(10); !strings.Contains(got, "Primary job") {
		t.Errorf("a banner alone gave %q", got)
	}
	if got := (&Tail{}).Lines(10); got != "" {
		t.Errorf("no output gave %q", got)
	}
}
