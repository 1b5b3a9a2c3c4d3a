! A Fortran MPI program through the mpi_f08 module, which approxtune
! refuses: its routines reach MPI past the preload library.
program f08
  use mpi_f08
  implicit none
  integer :: rank
  double precision :: s, t
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  s = rank + 1
  call MPI_Allreduce(s, t, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  if (rank == 0) print '(A,F6.1)', 'sum ', t
  call MPI_Finalize()
end program f08
