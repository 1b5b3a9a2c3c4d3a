! A Fortran MPI program (mpif.h) for the preload library's Fortran
! interposers. Per rank: 3 MPI_BCAST, an MPI_ALLREDUCE, an MPI_ALLREDUCE
! with MPI_IN_PLACE, an MPI_BARRIER, then MPI_COMM_SPLIT into one
! communicator with the ranks in reverse order, an MPI_BCAST on it from
! its rank 0 (the last rank of MPI_COMM_WORLD) and MPI_COMM_FREE.
! On 2 ranks it prints "sum 2.0", "in place 3.0" and "split 2.0".
program fortran
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, k, rev
  double precision :: x(4), s, t, u, y
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  x = rank + 1
  do k = 1, 3
    call MPI_BCAST(x, 4, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  end do
  s = x(1)
  call MPI_ALLREDUCE(s, t, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  u = rank + 1
  call MPI_ALLREDUCE(MPI_IN_PLACE, u, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  call MPI_COMM_SPLIT(MPI_COMM_WORLD, 0, -rank, rev, ierr)
  y = rank + 1
  call MPI_BCAST(y, 1, MPI_DOUBLE_PRECISION, 0, rev, ierr)
  call MPI_COMM_FREE(rev, ierr)
  if (rank == 0) then
    print '(A,F6.1)', 'sum ', t
    print '(A,F6.1)', 'in place ', u
    print '(A,F6.1)', 'split ', y
  end if
  call MPI_FINALIZE(ierr)
end program fortran
