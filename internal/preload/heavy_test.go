package preload

import (
	"strings"
	"testing"
)

// The routines the check names as not intercepted: communication, BLAS
// level 2 and 3 and LAPACK in every form, Fortran MPI by its C name; not
// MPI's bookkeeping, BLAS level 1 or the C library.
func TestHeavyRoutine(t *testing.T) {
	for name, want := range map[string]bool{
		"MPI_Iprobe": true, "MPI_Ialltoall": true, "MPI_Neighbor_alltoall": true, "MPI_File_write_all": true, "MPI_File_iwrite": true,
		"MPI_Comm_rank": false, "MPI_Wtime": false, "MPI_Type_commit": false, "MPI_Init": false,
		"dgemv_": true, "cblas_dger": true, "zgemm_": true, "sgetrs_": true, "LAPACKE_dgesv": true, "dlaswp_": true,
		"daxpy_": false, "cblas_idamax": false, "sqrt": false, "dgemv": false, "memcpy": false,
		"MPI_Send_c": true, "MPI_Bcast_init": true, "MPI_Isendrecv": true, "MPI_Psend_init": true, "MPI_Raccumulate": true,
		"MPI_File_write_at_all": true, "MPI_File_get_size": false, "MPI_Win_get_group": false, "MPI_Win_fence": true,
		"LAPACKE_dgetrf_work": true, "LAPACKE_dlacpy": false, "LAPACKE_dlange": false, "dlacpy_": false,
	} {
		if got := heavyRoutine(name); got != want {
			t.Errorf("heavyRoutine(%q) = %v, want %v", name, got, want)
		}
	}
	for in, want := range map[string]string{"mpi_iprobe_": "MPI_Iprobe", "mpi_comm_split__": "MPI_Comm_split", "mpi_": "", "dgemm_": ""} {
		if got, _ := fortranMPI(in); got != want {
			t.Errorf("fortranMPI(%q) = %q, want %q", in, got, want)
		}
	}
}

// A setting the library does not know is refused, naming the mismatch.
func TestParseRunUnknownField(t *testing.T) {
	if _, err := ParseRun(`{"out": "r.json", "policy": "eager", "tolerance": 0.5, "skip_everything": true}`); err == nil ||
		!strings.Contains(err.Error(), `unknown field "skip_everything"`) || !strings.Contains(err.Error(), "older than the approxtune") {
		t.Errorf("unknown field: %v", err)
	}
	if r, err := ParseRun(`{"out": "r.json", "policy": "eager", "tolerance": 0.5, "run_messages": true}`); err != nil || !r.RunMessages {
		t.Errorf("run_messages: %+v, %v", r, err)
	}
}
