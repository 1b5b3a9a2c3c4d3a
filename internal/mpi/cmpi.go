package mpi

/*
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>

// Handles that are macros (pointers into the library in Open MPI, integers in
// MPICH) reach Go through these functions, so the Go side never depends on
// which implementation it was built against.
MPI_Comm at_comm_world(void) { return MPI_COMM_WORLD; }
uintptr_t at_comm_handle(MPI_Comm c) { return (uintptr_t)c; }
MPI_Comm at_comm_of(uintptr_t h) { return (MPI_Comm)h; }
MPI_Comm at_comm_null(void) { return MPI_COMM_NULL; }
MPI_Datatype at_double(void) { return MPI_DOUBLE; }
MPI_Datatype at_int64(void) { return MPI_INT64_T; }
MPI_Datatype at_byte(void) { return MPI_BYTE; }
MPI_Datatype at_double_int(void) { return MPI_DOUBLE_INT; }
MPI_Op at_op(int k) {
	switch (k) {
	case 0: return MPI_SUM;
	case 1: return MPI_MAX;
	case 2: return MPI_MIN;
	case 3: return MPI_MAXLOC;
	default: return MPI_OP_NULL;
	}
}
MPI_Request at_request_null(void) { return MPI_REQUEST_NULL; }
int at_any_source(void) { return MPI_ANY_SOURCE; }
int at_any_tag(void) { return MPI_ANY_TAG; }
int at_undefined(void) { return MPI_UNDEFINED; }
int at_reduce_in(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, int root, MPI_Comm c, int inplace) {
	return MPI_Reduce(inplace ? MPI_IN_PLACE : s, r, n, t, op, root, c);
}
int at_allreduce_in(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, MPI_Comm c, int inplace) {
	return MPI_Allreduce(inplace ? MPI_IN_PLACE : s, r, n, t, op, c);
}
int at_set_errors_return(MPI_Comm c) { return MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN); }
// MPICH's prototype declares an array gcc takes MPI_STATUSES_IGNORE for.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
int at_waitall_ignore(int n, MPI_Request *q) { return MPI_Waitall(n, q, MPI_STATUSES_IGNORE); }
#pragma GCC diagnostic pop
*/
import "C"
