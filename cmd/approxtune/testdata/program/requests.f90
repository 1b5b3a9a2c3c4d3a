! The Fortran forms (use mpi) whose arguments the preload library converts
! beyond exchange.f90's, run in sequence on 2 or more ranks in a ring; rank
! 0 prints "<case> ok" or "<case> FAILED" for each:
!   waitany   two receives completed by MPI_WAITANY: 1-based indices,
!             MPI_REQUEST_NULL after, status source, tag and count
!   waitsome  the same by MPI_WAITSOME
!   testany   MPI_TESTANY loops (a LOGICAL flag), then MPI_TESTSOME, then
!             MPI_TESTALL
!   replace   MPI_SENDRECV_REPLACE
!   gathers   MPI_GATHER, MPI_SCATTER, MPI_ALLTOALL
!   vgathers  MPI_ALLGATHERV, MPI_GATHERV, MPI_SCATTERV, MPI_ALLTOALLV, rank
!             i's share (i+1)*M/8 doubles
!   comms     MPI_COMM_DUP, MPI_CART_CREATE (periodic, LOGICAL), MPI_CART_SUB,
!             a message on each, MPI_COMM_FREE
!   cancel    MPI_CANCEL of a receive never matched: MPI_TEST_CANCELLED
!   bottom    MPI_BCAST and MPI_SENDRECV of MPI_BOTTOM with datatypes of
!             absolute addresses (MPI_TYPE_CREATE_STRUCT of integers and
!             doubles)
! The sequence runs REPS times (the second argument, default 1), so that a
! selective run may skip the later ones' messages. The doubles (messages
! of M doubles, over the eager limit) are checked exactly with the first
! argument "exact" (a run that skips nothing); with another ("any") a
! message may have been skipped. Integers are always checked.
program requests
  use mpi
  implicit none
  integer, parameter :: m = 1024
  integer :: ierr, rank, nprocs, left, right, i, k, idx, n, out, tag, cnt
  integer :: q(2), sq(2), idxs(2), st(MPI_STATUS_SIZE), sts(MPI_STATUS_SIZE, 2), ints(2)
  integer :: dup, cart, line, dims(1), coords(1), src, dst, rep, reps
  integer :: stype, rtype, bl(2), bt(2), vtot
  integer, allocatable :: vc(:), vd(:)
  integer(kind=MPI_ADDRESS_KIND) :: bdisp(2)
  integer, volatile :: bi(4), ri(4)
  double precision, volatile :: bd(m), rd(m)
  logical :: exact, ok, flag, done(2), periods(1), remain(1)
  double precision :: x(m, 2), y(m, 2), z(m)
  double precision, allocatable :: g(:), h(:)
  character(len=16) :: arg

  call MPI_INIT(ierr)
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  exact = .false.
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    exact = arg == 'exact'
  end if
  reps = 1
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg)
    read (arg, *) reps
  end if
  left = mod(rank + nprocs - 1, nprocs)
  right = mod(rank + 1, nprocs)
  allocate (g(m * nprocs), h(m * nprocs))

  do rep = 1, reps
  ! waitany
  call fill()
  call post()
  ok = .true.
  done = .false.
  do k = 1, 2
    call MPI_WAITANY(2, q, idx, st, ierr)
    ok = ok .and. idx >= 1 .and. idx <= 2
    if (.not. ok) exit
    ok = ok .and. .not. done(idx) .and. q(idx) == MPI_REQUEST_NULL
    done(idx) = .true.
    call check_status(st, idx)
  end do
  call MPI_WAITALL(2, sq, MPI_STATUSES_IGNORE, ierr)
  call check_data()
  call report('waitany')

  ! waitsome
  call fill()
  call post()
  ok = .true.
  done = .false.
  do while (.not. (done(1) .and. done(2)))
    call MPI_WAITSOME(2, q, out, idxs, sts, ierr)
    ok = ok .and. out >= 1 .and. out <= 2
    if (.not. ok) exit
    do k = 1, out
      idx = idxs(k)
      ok = ok .and. idx >= 1 .and. idx <= 2
      if (.not. ok) exit
      ok = ok .and. .not. done(idx) .and. q(idx) == MPI_REQUEST_NULL
      done(idx) = .true.
      call check_status(sts(:, k), idx)
    end do
    if (.not. ok) exit
  end do
  call MPI_WAITALL(2, sq, MPI_STATUSES_IGNORE, ierr)
  call check_data()
  call report('waitsome')

  ! testany, testsome, testall
  ok = .true.
  do k = 1, 3
    call fill()
    call post()
    done = .false.
    do while (.not. (done(1) .and. done(2)))
      select case (k)
      case (1)
        call MPI_TESTANY(2, q, idx, flag, st, ierr)
        if (flag) then
          ok = ok .and. idx >= 1 .and. idx <= 2
          if (.not. ok) exit
          ok = ok .and. .not. done(idx) .and. q(idx) == MPI_REQUEST_NULL
          done(idx) = .true.
          call check_status(st, idx)
        end if
      case (2)
        call MPI_TESTSOME(2, q, out, idxs, sts, ierr)
        do i = 1, out
          idx = idxs(i)
          ok = ok .and. idx >= 1 .and. idx <= 2
          if (.not. ok) exit
          ok = ok .and. .not. done(idx)
          done(idx) = .true.
          call check_status(sts(:, i), idx)
        end do
        if (.not. ok) exit
      case (3)
        call MPI_TESTALL(2, q, flag, sts, ierr)
        if (flag) then
          done = .true.
          ok = ok .and. q(1) == MPI_REQUEST_NULL .and. q(2) == MPI_REQUEST_NULL
          call check_status(sts(:, 1), 1)
          call check_status(sts(:, 2), 2)
        end if
      end select
    end do
    call MPI_WAITALL(2, sq, MPI_STATUSES_IGNORE, ierr)
    call check_data()
  end do
  call report('testany')

  ! replace
  ok = .true.
  z = rank + 1
  call MPI_SENDRECV_REPLACE(z, m, MPI_DOUBLE_PRECISION, right, 5, left, 5, MPI_COMM_WORLD, st, ierr)
  ok = st(MPI_SOURCE) == left .and. st(MPI_TAG) == 5
  call MPI_GET_COUNT(st, MPI_DOUBLE_PRECISION, cnt, ierr)
  ok = ok .and. cnt == m
  if (exact) ok = ok .and. all(z == left + 1)
  ints = (/ rank, 7 /)
  call MPI_SENDRECV_REPLACE(ints, 2, MPI_INTEGER, right, 6, left, 6, MPI_COMM_WORLD, st, ierr)
  ok = ok .and. ints(1) == left .and. ints(2) == 7
  call report('replace')

  ! gathers
  ok = .true.
  z = rank + 1
  call MPI_GATHER(z, m, MPI_DOUBLE_PRECISION, g, m, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  if (exact .and. rank == 0) then
    do i = 0, nprocs - 1
      ok = ok .and. all(g(i * m + 1:(i + 1) * m) == i + 1)
    end do
  end if
  do i = 1, m * nprocs
    g(i) = (i - 1) / m + 10
  end do
  call MPI_SCATTER(g, m, MPI_DOUBLE_PRECISION, z, m, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  if (exact) ok = ok .and. all(z == rank + 10)
  do i = 1, m * nprocs
    g(i) = rank * 100 + (i - 1) / m
  end do
  call MPI_ALLTOALL(g, m, MPI_DOUBLE_PRECISION, h, m, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  if (exact) then
    do i = 0, nprocs - 1
      ok = ok .and. all(h(i * m + 1:(i + 1) * m) == i * 100 + rank)
    end do
  end if
  call report('gathers')

  ! vgathers
  ok = .true.
  allocate (vc(nprocs), vd(nprocs))
  vtot = 0
  do i = 1, nprocs
    vc(i) = i * m / 8
    vd(i) = vtot
    vtot = vtot + vc(i)
  end do
  z(1:vc(rank + 1)) = rank + 1
  g = -1
  call MPI_ALLGATHERV(z, vc(rank + 1), MPI_DOUBLE_PRECISION, g, vc, vd, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  if (exact) then
    do i = 1, nprocs
      ok = ok .and. all(g(vd(i) + 1:vd(i) + vc(i)) == i)
    end do
  end if
  g = -1
  call MPI_GATHERV(z, vc(rank + 1), MPI_DOUBLE_PRECISION, g, vc, vd, MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  if (exact .and. rank == 0) then
    do i = 1, nprocs
      ok = ok .and. all(g(vd(i) + 1:vd(i) + vc(i)) == i)
    end do
  end if
  if (rank == 0) then
    do i = 1, nprocs
      g(vd(i) + 1:vd(i) + vc(i)) = i + 20
    end do
  end if
  z = -1
  call MPI_SCATTERV(g, vc, vd, MPI_DOUBLE_PRECISION, z, vc(rank + 1), MPI_DOUBLE_PRECISION, 0, MPI_COMM_WORLD, ierr)
  if (exact) ok = ok .and. all(z(1:vc(rank + 1)) == rank + 21)
  ! every rank sends vc(rank+1) doubles to each
  do i = 1, nprocs
    g((i - 1) * vc(rank + 1) + 1:i * vc(rank + 1)) = rank * 10 + i
  end do
  h = -1
  call MPI_ALLTOALLV(g, (/ (vc(rank + 1), i = 1, nprocs) /), (/ ((i - 1) * vc(rank + 1), i = 1, nprocs) /), &
    MPI_DOUBLE_PRECISION, h, vc, vd, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  if (exact) then
    do i = 1, nprocs
      ok = ok .and. all(h(vd(i) + 1:vd(i) + vc(i)) == (i - 1) * 10 + rank + 1)
    end do
  end if
  deallocate (vc, vd)
  call report('vgathers')

  ! comms
  ok = .true.
  call MPI_COMM_DUP(MPI_COMM_WORLD, dup, ierr)
  z = rank + 1
  call MPI_SENDRECV(z, m, MPI_DOUBLE_PRECISION, right, 8, y(:, 1), m, MPI_DOUBLE_PRECISION, left, 8, dup, st, ierr)
  ok = st(MPI_SOURCE) == left .and. st(MPI_TAG) == 8
  if (exact) ok = ok .and. all(y(:, 1) == left + 1)
  dims(1) = nprocs
  periods(1) = .true.
  call MPI_CART_CREATE(MPI_COMM_WORLD, 1, dims, periods, .false., cart, ierr)
  call MPI_CART_SHIFT(cart, 0, 1, src, dst, ierr)
  ok = ok .and. src == left .and. dst == right
  remain(1) = .true.
  call MPI_CART_SUB(cart, remain, line, ierr)
  call MPI_CART_COORDS(line, rank, 1, coords, ierr)
  ok = ok .and. coords(1) == rank
  ints = (/ rank, -1 /)
  call MPI_SENDRECV(ints(1), 1, MPI_INTEGER, dst, 9, ints(2), 1, MPI_INTEGER, src, 9, cart, st, ierr)
  ok = ok .and. ints(2) == left
  call MPI_SENDRECV(z, m, MPI_DOUBLE_PRECISION, dst, 10, y(:, 2), m, MPI_DOUBLE_PRECISION, src, 10, line, st, ierr)
  ok = ok .and. st(MPI_SOURCE) == left
  if (exact) ok = ok .and. all(y(:, 2) == left + 1)
  call MPI_COMM_FREE(line, ierr)
  call MPI_COMM_FREE(cart, ierr)
  call MPI_COMM_FREE(dup, ierr)
  ok = ok .and. line == MPI_COMM_NULL .and. cart == MPI_COMM_NULL .and. dup == MPI_COMM_NULL
  call report('comms')

  ! cancel
  call MPI_IRECV(z, m, MPI_DOUBLE_PRECISION, left, 99, MPI_COMM_WORLD, q(1), ierr)
  call MPI_CANCEL(q(1), ierr)
  call MPI_WAIT(q(1), st, ierr)
  call MPI_TEST_CANCELLED(st, flag, ierr)
  ok = flag .and. q(1) == MPI_REQUEST_NULL
  call report('cancel')

  ! bottom
  bi = -1
  bd = -1
  if (rank == 0) then
    bi = (/ 7, 8, 9, 10 /)
    bd = 0.5d0
  end if
  bl = (/ 4, m /)
  bt = (/ MPI_INTEGER, MPI_DOUBLE_PRECISION /)
  call MPI_GET_ADDRESS(bi, bdisp(1), ierr)
  call MPI_GET_ADDRESS(bd, bdisp(2), ierr)
  call MPI_TYPE_CREATE_STRUCT(2, bl, bdisp, bt, stype, ierr)
  call MPI_TYPE_COMMIT(stype, ierr)
  call MPI_GET_ADDRESS(ri, bdisp(1), ierr)
  call MPI_GET_ADDRESS(rd, bdisp(2), ierr)
  call MPI_TYPE_CREATE_STRUCT(2, bl, bdisp, bt, rtype, ierr)
  call MPI_TYPE_COMMIT(rtype, ierr)
  call MPI_BCAST(MPI_BOTTOM, 1, stype, 0, MPI_COMM_WORLD, ierr)
  ok = all(bi == (/ 7, 8, 9, 10 /))
  if (exact) ok = ok .and. all(bd == 0.5d0)
  bi = (/ rank, 1, 2, 3 /)
  bd = rank
  call MPI_SENDRECV(MPI_BOTTOM, 1, stype, right, 11, MPI_BOTTOM, 1, rtype, left, 11, MPI_COMM_WORLD, st, ierr)
  ok = ok .and. ri(1) == left .and. ri(4) == 3 .and. st(MPI_SOURCE) == left
  if (exact) ok = ok .and. all(rd == left)
  call MPI_TYPE_FREE(stype, ierr)
  call MPI_TYPE_FREE(rtype, ierr)
  call report('bottom')
  end do

  call MPI_FINALIZE(ierr)

contains

  ! fill sets the two messages this rank sends (x) and clears y.
  subroutine fill()
    x(:, 1) = rank * 10 + 1
    x(:, 2) = rank * 10 + 2
    y = -1
  end subroutine fill

  ! post starts two receives from the left (tags 1 and 2, in q) and two
  ! sends to the right (in sq).
  subroutine post()
    do tag = 1, 2
      call MPI_IRECV(y(:, tag), m, MPI_DOUBLE_PRECISION, left, tag, MPI_COMM_WORLD, q(tag), ierr)
    end do
    do tag = 2, 1, -1
      call MPI_ISEND(x(:, tag), m, MPI_DOUBLE_PRECISION, right, tag, MPI_COMM_WORLD, sq(tag), ierr)
    end do
  end subroutine post

  ! check_status checks the status of the receive idx.
  subroutine check_status(s, i)
    integer, intent(in) :: s(MPI_STATUS_SIZE), i
    integer :: c
    call MPI_GET_COUNT(s, MPI_DOUBLE_PRECISION, c, ierr)
    ok = ok .and. s(MPI_SOURCE) == left .and. s(MPI_TAG) == i .and. c == m
  end subroutine check_status

  subroutine check_data()
    if (exact) ok = ok .and. all(y(:, 1) == left * 10 + 1) .and. all(y(:, 2) == left * 10 + 2)
  end subroutine check_data

  ! report agrees on every rank whether the case passed; rank 0 prints it.
  subroutine report(name)
    character(len=*), intent(in) :: name
    logical :: all_ok
    call MPI_ALLREDUCE(ok, all_ok, 1, MPI_LOGICAL, MPI_LAND, MPI_COMM_WORLD, ierr)
    if (rank == 0) then
      if (all_ok) then
        print '(A,A)', name, ' ok'
      else
        print '(A,A)', name, ' FAILED'
      end if
    end if
  end subroutine report

end program requests
