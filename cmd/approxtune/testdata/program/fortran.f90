! A Fortran MPI program (mpif.h): 3 MPI_BCAST, 1 MPI_ALLREDUCE and
! 1 MPI_BARRIER per rank, for the preload library's Fortran interposers.
program fortran
  implicit none
  include 'mpif.h'
  integer :: ierr, rank, k
  double precision :: x(4), s, t
  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  x = rank + 1
  do k = 1, 3
    call MPI_BCAST(x, 4, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  end do
  s = x(1)
  call MPI_ALLREDUCE(s, t, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_BARRIER(MPI_COMM_WORLD, ierr)
  if (rank == 0) print '(A,F6.1)', 'sum ', t
  call MPI_FINALIZE(ierr)
end program fortran
