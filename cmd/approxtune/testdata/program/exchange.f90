! exchange.c in Fortran (use mpi), for the preload library's Fortran
! interposers: the same calls in the same order, so that --check counts
! and the selective runs' executed and skipped calls are exchange.c's.
! ITER steps; in each, every rank of a ring makes 16 modelled calls:
!   2 dgemm of order N;
!   MPI_ISEND to the right, MPI_IRECV from the left, MPI_WAITALL,
!   N*N/8 doubles (2);
!   MPI_SEND and MPI_RECV of N*N/4 doubles, a rendezvous message (2);
!   MPI_SENDRECV of N*N/8 doubles (2);
!   two integers (the step and the sender) by MPI_ISEND, received from
!   MPI_ANY_SOURCE with MPI_ANY_TAG and checked: integers are never
!   skipped (2);
!   a row (MPI_TYPE_VECTOR) by MPI_ISSEND, received contiguous, completed
!   with MPI_TEST loops (2);
!   persistent requests: MPI_STARTALL and MPI_WAITALL (2);
!   MPI_ALLGATHER of one double and MPI_REDUCE of N doubles (2).
! It prints a checksum, which a run that executes everything reproduces
! exactly, how many of the large messages' receives MPI_GET_COUNT gave
! their sent count, and how many of the integers arrived intact.
program exchange
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, left, right, iter, n, nn, quarter, eighth
  integer :: s, i, j, k, got_n, intact, counted, intact_all, counted_all, row
  integer :: q(2), cq(2), pers(2), iq, mine(2), got(2)
  integer :: qst(MPI_STATUS_SIZE, 2), rst(MPI_STATUS_SIZE), st(MPI_STATUS_SIZE)
  logical :: done(2)
  character(len=16) :: arg
  double precision, allocatable :: a(:), b(:), c(:), in(:), col(:), all(:), red(:), pin(:), pout(:)
  double precision :: one, half, total, psum

  call MPI_INIT(ierr)
  iter = 10
  n = 64
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) iter
  end if
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg)
    read (arg, *) n
  end if
  call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
  call MPI_COMM_SIZE(MPI_COMM_WORLD, nprocs, ierr)
  left = mod(rank + nprocs - 1, nprocs)
  right = mod(rank + 1, nprocs)
  nn = n * n
  quarter = nn / 4
  eighth = nn / 8
  allocate (a(nn), b(nn), c(nn), in(nn), col(n), all(nprocs), red(n), pin(n), pout(n))
  do i = 1, nn
    a(i) = mod((i - 1) * 7 + rank, 11) / 110d0
    b(i) = mod((i - 1) * 3, 13) / 130d0
  end do
  c = 0
  call MPI_TYPE_VECTOR(n, 1, n, MPI_DOUBLE_PRECISION, row, ierr)
  call MPI_TYPE_COMMIT(row, ierr)
  call MPI_SEND_INIT(pout, n, MPI_DOUBLE_PRECISION, right, 7, MPI_COMM_WORLD, pers(1), ierr)
  call MPI_RECV_INIT(pin, n, MPI_DOUBLE_PRECISION, left, 7, MPI_COMM_WORLD, pers(2), ierr)
  one = 1
  half = 0.5d0
  psum = 0
  intact = 0
  counted = 0
  do s = 0, iter - 1
    do j = 1, 2
      call dgemm('N', 'N', n, n, n, one, a, n, b, n, half, c, n)
    end do
    call MPI_ISEND(c, eighth, MPI_DOUBLE_PRECISION, right, 1, MPI_COMM_WORLD, q(1), ierr)
    call MPI_IRECV(in, eighth, MPI_DOUBLE_PRECISION, left, 1, MPI_COMM_WORLD, q(2), ierr)
    call MPI_WAITALL(2, q, qst, ierr)
    call MPI_GET_COUNT(qst(:, 2), MPI_DOUBLE_PRECISION, got_n, ierr)
    if (got_n == eighth) counted = counted + 1
    a(1:n) = a(1:n) + in(1:n) * 1d-3
    if (mod(rank, 2) == 0) then
      call MPI_SEND(c, quarter, MPI_DOUBLE_PRECISION, right, 2, MPI_COMM_WORLD, ierr)
      call MPI_RECV(in, quarter, MPI_DOUBLE_PRECISION, left, 2, MPI_COMM_WORLD, rst, ierr)
    else
      call MPI_RECV(in, quarter, MPI_DOUBLE_PRECISION, left, 2, MPI_COMM_WORLD, rst, ierr)
      call MPI_SEND(c, quarter, MPI_DOUBLE_PRECISION, right, 2, MPI_COMM_WORLD, ierr)
    end if
    call MPI_GET_COUNT(rst, MPI_DOUBLE_PRECISION, got_n, ierr)
    if (got_n == quarter) counted = counted + 1
    b(1:n) = b(1:n) + in(1:n) * 1d-3
    call MPI_SENDRECV(a, eighth, MPI_DOUBLE_PRECISION, right, 3, in, eighth, MPI_DOUBLE_PRECISION, left, 3, &
      MPI_COMM_WORLD, rst, ierr)
    call MPI_GET_COUNT(rst, MPI_DOUBLE_PRECISION, got_n, ierr)
    if (got_n == eighth) counted = counted + 1
    mine = (/ s, rank /)
    got = -1
    call MPI_ISEND(mine, 2, MPI_INTEGER, right, 4, MPI_COMM_WORLD, iq, ierr)
    call MPI_RECV(got, 2, MPI_INTEGER, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, st, ierr)
    call MPI_WAIT(iq, MPI_STATUS_IGNORE, ierr)
    if (got(1) == s .and. got(2) == left .and. st(MPI_SOURCE) == left .and. st(MPI_TAG) == 4) intact = intact + 1
    done = .false.
    call MPI_ISSEND(c, 1, row, right, 5, MPI_COMM_WORLD, cq(1), ierr)
    call MPI_IRECV(col, n, MPI_DOUBLE_PRECISION, left, 5, MPI_COMM_WORLD, cq(2), ierr)
    do while (.not. (done(1) .and. done(2)))
      do k = 1, 2
        if (.not. done(k)) call MPI_TEST(cq(k), done(k), MPI_STATUS_IGNORE, ierr)
      end do
    end do
    do i = 1, n
      pout(i) = c((i - 1) * n + 1) + col(i)
    end do
    call MPI_STARTALL(2, pers, ierr)
    call MPI_WAITALL(2, pers, MPI_STATUSES_IGNORE, ierr)
    call MPI_ALLGATHER(pin(mod(s, n) + 1), 1, MPI_DOUBLE_PRECISION, all, 1, MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
    call MPI_REDUCE(c, red, n, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
    psum = psum + sum(all)
    if (rank == 0) psum = psum + red(mod(s, n) + 1)
  end do
  total = 0
  call MPI_REDUCE(psum, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  intact_all = 0
  counted_all = 0
  call MPI_REDUCE(intact, intact_all, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  call MPI_REDUCE(counted, counted_all, 1, MPI_INTEGER, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    print '(A,ES19.12)', 'checksum ', total
    print '(A,I0,A,I0)', 'counts right ', counted_all, ' of ', 3 * iter * nprocs
    print '(A,I0,A,I0)', 'integers intact ', intact_all, ' of ', iter * nprocs
  end if
  call MPI_REQUEST_FREE(pers(1), ierr)
  call MPI_REQUEST_FREE(pers(2), ierr)
  call MPI_TYPE_FREE(row, ierr)
  call MPI_FINALIZE(ierr)
end program exchange
