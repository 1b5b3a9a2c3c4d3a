! region.f90: a Fortran program that marks its timed region through
! include/approxtune_fortran.c and skips its result check where kernels
! may be skipped.
program region
  use mpi
  implicit none
  integer, external :: approxtune_skipping
  integer :: ierr, rank, i
  double precision :: x, s
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  x = rank + 1
  call MPI_Bcast(x, 1, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  call approxtune_begin()
  do i = 1, 4
    call MPI_Allreduce(x, s, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  end do
  call approxtune_end()
  if (approxtune_skipping() == 0) then
    if (rank == 0) print '(a, f6.1)', 'sum ', s
  else
    if (rank == 0) print '(a)', 'check skipped'
  end if
  call MPI_Finalize(ierr)
end program region
