package main

/*
#include <stdint.h>
#include <stdlib.h>
#include <mpi.h>
#include "interpose.h"
*/
import "C"

import (
	"unsafe"

	"github.com/approxtune/approxtune/internal/selective"
)

// persistent is what the engine knows of a persistent request of the
// program's (MPI_Send_init, MPI_Recv_init), for each of its MPI_Starts.
type persistent struct {
	sc        *selective.Comm
	send      bool
	bytes     int
	peer, tag int
}

// skippable says whether a message or collective of n elements of type t
// may be skipped: floating-point data only (integers, characters and bytes
// may be sizes, indices or pivots the program computes with), and more of
// it than the eager limit. Within it a skip saves next to nothing (the
// record costs as much as the message), and small messages and
// collectives are where programs exchange the scalars they branch on (a
// norm, a pivot, a flag): left meaningless by a skip, they would send
// ranks down different branches, to wait in different collectives.
func skippable(n C.int, t C.MPI_Datatype) bool {
	return bytes(n, t) > selective.EagerLimit && C.at_skippable_type(t) != 0
}

// track remembers the engine's side of the program's request q until it
// completes. Several requests may share a handle: Open MPI returns one
// static, already completed request for a send it finished at once (an
// empty one, as a skipped message is, or a zero-count one), and one entry
// per handle had left all but the last of such sends never completed,
// their records' buffers pinned until the garbage collector found them
// and ended the program (hpcc: "runtime.Pinner: found leaking pinned
// pointer" in every selective launch). They are completed in the order
// they were started.
func (r *run) track(q C.MPI_Request, er *selective.Request) {
	if r.reqs == nil {
		r.reqs = map[uintptr][]*selective.Request{}
	}
	key := uintptr(C.at_request_key(q))
	r.reqs[key] = append(r.reqs[key], er)
	C.at_pending_add(1)
}

// tracked is the engine's side of the oldest request the program holds
// with the handle key, nil for one the engine did not start.
func (r *run) tracked(key uintptr) *selective.Request {
	if l := r.reqs[key]; len(l) > 0 {
		return l[0]
	}
	return nil
}

// untrack returns the engine's side of the request whose handle was key
// (the oldest, when several share it), nil for a request the engine did
// not start, and forgets it.
func (r *run) untrack(key uintptr) *selective.Request {
	l := r.reqs[key]
	if len(l) == 0 {
		return nil
	}
	er := l[0]
	if len(l) == 1 {
		delete(r.reqs, key)
	} else {
		r.reqs[key] = l[1:]
	}
	C.at_pending_add(-1)
	return er
}

// sourceTag is a status's message source and tag; the source is -1 for a
// cancelled request, which got no message (and so no record).
func sourceTag(st *C.MPI_Status) (int, int) {
	var cancelled C.int
	if C.PMPI_Test_cancelled(st, &cancelled) == C.MPI_SUCCESS && cancelled != 0 {
		return -1, int(st.MPI_TAG)
	}
	return int(st.MPI_SOURCE), int(st.MPI_TAG)
}

// setStatus copies mine to the program's status st, unless it ignores it.
// The program's statuses travel as integers: MPICH's MPI_STATUS_IGNORE is
// (MPI_Status *)1, fatal in a Go pointer when the runtime moves the stack
// (atAllreduce).
func setStatus(st C.uintptr_t, mine *C.MPI_Status) { C.at_set_status(st, mine) }

// restoreCount gives the program's status st the size of a message the
// engine completed as er, where its sender skipped it and sent it empty:
// MPI_Get_count then says what the message would have held.
func restoreCount(er *selective.Request, st C.uintptr_t) {
	if n, ok := er.Emptied(); ok {
		C.at_set_bytes(st, C.longlong(n))
	}
}

// received is what Request.Complete wants of a receive that MPI routine
// name ended with rc and the status mine: the message's source and tag
// (sourceTag) and the error; mine goes to the program's status st.
func received(name string, rc C.int, mine *C.MPI_Status, st C.uintptr_t) (int, int, error) {
	setStatus(st, mine)
	s, tg := sourceTag(mine)
	return s, tg, mpiError(name, rc)
}

// count is a send's element count: n for the message, 0 for the empty one
// that stands for a skipped message.
func count(full bool, n C.int) C.int {
	if full {
		return n
	}
	return 0
}

// atSend is every form of send (mode: standard, ready, synchronous,
// buffered): blocking when q is nil, else started into *q. A skipped send
// goes out empty in the same mode.
//
//export atSend
func atSend(h C.uintptr_t, buf unsafe.Pointer, n C.int, t C.MPI_Datatype, dest, tag C.int, c C.MPI_Comm, mode C.int, q *C.MPI_Request) C.int {
	defer guard()
	r := the(h)
	sc := r.comm(c)
	if sc == nil || dest == C.at_proc_null() {
		if q != nil {
			return C.at_start_send(mode, buf, n, t, dest, tag, c, q)
		}
		var local C.MPI_Request
		if rc := C.at_start_send(mode, buf, n, t, dest, tag, c, &local); rc != C.MPI_SUCCESS {
			return rc
		}
		return C.at_wait_into(&local, C.atp_status_ignore())
	}
	var local C.MPI_Request
	rq, op := q, selective.OpIsend
	if q == nil {
		rq, op = &local, selective.OpSend
	}
	er := sc.StartSend(op, bytes(n, t), int(dest), int(tag), skippable(n, t), func(full bool) error {
		return mpiError("MPI_Isend", C.at_start_send(mode, buf, count(full, n), t, dest, tag, c, rq))
	})
	if q != nil {
		r.track(*q, er)
		return C.MPI_SUCCESS
	}
	er.Complete(func() (int, int, error) {
		return int(dest), int(tag), mpiError("MPI_Wait", C.at_wait_into(rq, C.atp_status_ignore()))
	})
	return C.MPI_SUCCESS
}

// atRecv is MPI_Recv (q nil; st the program's status) and MPI_Irecv.
//
//export atRecv
func atRecv(h C.uintptr_t, buf unsafe.Pointer, n C.int, t C.MPI_Datatype, src, tag C.int, c C.MPI_Comm, st C.uintptr_t, q *C.MPI_Request) C.int {
	defer guard()
	r := the(h)
	sc := r.comm(c)
	if sc == nil || src == C.at_proc_null() {
		if q != nil {
			return C.PMPI_Irecv(buf, n, t, src, tag, c, q)
		}
		return C.at_recv_into(buf, n, t, src, tag, c, st)
	}
	var local C.MPI_Request
	rq, op := q, selective.OpIrecv
	if q == nil {
		rq, op = &local, selective.OpRecv
	}
	er := sc.StartRecv(op, bytes(n, t), int(src), int(tag), func() error {
		return mpiError("MPI_Irecv", C.PMPI_Irecv(buf, n, t, src, tag, c, rq))
	})
	if q != nil {
		r.track(*q, er)
		return C.MPI_SUCCESS
	}
	completeWait(er, rq, st)
	return C.MPI_SUCCESS
}

// atSendrecv is MPI_Sendrecv, and MPI_Sendrecv_replace (replace 1: one
// buffer, which the exchange itself must do). A Sendrecv is the send and
// the receive started together and then completed; a Sendrecv_replace
// sends its record, always sends its message (whose buffer it then
// overwrites), and takes the record of the message it received.
//
//export atSendrecv
func atSendrecv(h C.uintptr_t, sb unsafe.Pointer, sn C.int, stype C.MPI_Datatype, dest, stag C.int, rb unsafe.Pointer, rn C.int, rtype C.MPI_Datatype, src, rtag C.int, c C.MPI_Comm, st C.uintptr_t, replace C.int) C.int {
	defer guard()
	r := the(h)
	sc := r.comm(c)
	pn := C.at_proc_null()
	if sc == nil || (dest == pn && src == pn) {
		if replace != 0 {
			var mine C.MPI_Status
			rc := C.PMPI_Sendrecv_replace(sb, sn, stype, dest, stag, src, rtag, c, &mine)
			setStatus(st, &mine)
			return rc
		}
		var mine C.MPI_Status
		rc := C.PMPI_Sendrecv(sb, sn, stype, dest, stag, rb, rn, rtype, src, rtag, c, &mine)
		setStatus(st, &mine)
		return rc
	}
	// Each half that has a partner (the other may be MPI_PROC_NULL, at the
	// ends of a non-periodic shift) goes through the engine.
	var send, recv *selective.Request
	if replace != 0 {
		if dest != pn {
			send = sc.StartSend(selective.OpSend, bytes(sn, stype), int(dest), int(stag), false, func(bool) error { return nil })
		}
		if src != pn {
			recv = sc.StartRecv(selective.OpRecv, bytes(rn, rtype), int(src), int(rtag), func() error { return nil })
		}
		complete(recv, func() (int, int, error) {
			var mine C.MPI_Status
			return received("MPI_Sendrecv_replace", C.PMPI_Sendrecv_replace(sb, sn, stype, dest, stag, src, rtag, c, &mine), &mine, st)
		})
		if recv != nil {
			restoreCount(recv, st)
		}
		complete(send, func() (int, int, error) { return int(dest), int(stag), nil })
		return C.MPI_SUCCESS
	}
	var sq, rq C.MPI_Request
	irecv := func() error { return mpiError("MPI_Irecv", C.PMPI_Irecv(rb, rn, rtype, src, rtag, c, &rq)) }
	isend := func(full bool) error {
		return mpiError("MPI_Isend", C.PMPI_Isend(sb, count(full, sn), stype, dest, stag, c, &sq))
	}
	if src != pn {
		recv = sc.StartRecv(selective.OpRecv, bytes(rn, rtype), int(src), int(rtag), irecv)
	}
	if dest != pn {
		send = sc.StartSend(selective.OpSend, bytes(sn, stype), int(dest), int(stag), skippable(sn, stype), isend)
	} else if err := isend(true); err != nil {
		panic(selective.Failure{Err: err})
	}
	complete(recv, func() (int, int, error) {
		var mine C.MPI_Status
		if src == pn {
			// A receive from MPI_PROC_NULL: MPI_Recv's status is MPI's
			// (MPI_PROC_NULL, MPI_ANY_TAG, count 0) where MPICH 4.0's
			// MPI_Wait of such an MPI_Irecv says source 0, tag 0.
			return received("MPI_Recv", C.PMPI_Recv(rb, rn, rtype, src, rtag, c, &mine), &mine, st)
		}
		return received("MPI_Wait", C.PMPI_Wait(&rq, &mine), &mine, st)
	})
	if recv != nil {
		restoreCount(recv, st)
	}
	complete(send, func() (int, int, error) {
		return int(dest), int(stag), mpiError("MPI_Wait", C.at_wait_into(&sq, C.atp_status_ignore()))
	})
	return C.MPI_SUCCESS
}

// complete completes er with wait, or, where the engine has no side
// (nil: a half with MPI_PROC_NULL), only waits.
func complete(er *selective.Request, wait func() (int, int, error)) {
	if er != nil {
		er.Complete(wait)
		return
	}
	if _, _, err := wait(); err != nil {
		panic(selective.Failure{Err: err})
	}
}

// atPersistent learns a persistent request the program made (send 1:
// MPI_*send_init, else MPI_Recv_init) on a communicator the engine knows.
//
//export atPersistent
func atPersistent(h C.uintptr_t, q C.MPI_Request, send C.int, n C.int, t C.MPI_Datatype, peer, tag C.int, c C.MPI_Comm) {
	defer guard()
	r := the(h)
	sc := r.comm(c)
	if sc == nil || peer == C.at_proc_null() {
		return
	}
	if r.persist == nil {
		r.persist = map[uintptr]persistent{}
	}
	r.persist[uintptr(C.at_request_key(q))] = persistent{sc: sc, send: send != 0, bytes: bytes(n, t), peer: int(peer), tag: int(tag)}
}

// atStart is MPI_Start: a persistent request the engine knows sends or
// takes its record with each start. Its message always travels (its count
// is fixed at its creation).
//
//export atStart
func atStart(h C.uintptr_t, q *C.MPI_Request) C.int {
	defer guard()
	r := the(h)
	p, ok := r.persist[uintptr(C.at_request_key(*q))]
	if !ok {
		return C.PMPI_Start(q)
	}
	start := func() error { return mpiError("MPI_Start", C.PMPI_Start(q)) }
	var er *selective.Request
	if p.send {
		er = p.sc.StartSend(selective.OpIsend, p.bytes, p.peer, p.tag, false, func(bool) error { return start() })
	} else {
		er = p.sc.StartRecv(selective.OpIrecv, p.bytes, p.peer, p.tag, start)
	}
	r.track(*q, er)
	return C.MPI_SUCCESS
}

// atRequestFree is MPI_Request_free: a request the engine started is
// completed first (MPI lets the program free an active request; its
// message still travels), so its record is taken. A receive completed so
// is freed by its wait: freeing the null request the wait leaves is an
// error MPI aborts on (MPI_ERR_REQUEST), and a program that freed an
// active receive had failed in every launch, its full runs too.
//
//export atRequestFree
func atRequestFree(h C.uintptr_t, q *C.MPI_Request) C.int {
	defer guard()
	r := the(h)
	key := uintptr(C.at_request_key(*q))
	delete(r.persist, key)
	if er := r.untrack(key); er != nil {
		if er.Send() {
			// Its record has gone: waiting for the message could
			// deadlock a program that frees an active send and then
			// receives what its partner sends first.
			er.Complete(func() (int, int, error) { return 0, 0, nil })
		} else {
			completeWait(er, q, C.atp_status_ignore())
			if C.at_request_is_null(*q) != 0 {
				return C.MPI_SUCCESS
			}
		}
	}
	return C.PMPI_Request_free(q)
}

// atCancel is MPI_Cancel: the engine's side of a receive the program
// cancels is told, so that no record is taken for it ahead of its
// completion (it may match no message: a later receive's record, taken
// for it, had left that receive waiting for ever).
//
//export atCancel
func atCancel(h C.uintptr_t, q *C.MPI_Request) C.int {
	defer guard()
	if er := the(h).tracked(uintptr(C.at_request_key(*q))); er != nil {
		er.Cancelling()
	}
	return C.PMPI_Cancel(q)
}

// completeWait completes er by waiting on the program's request q, whose
// status goes to st (MPI_STATUS_IGNORE: nowhere). An MPI error panics
// (Request.Complete), as every engine call's does.
func completeWait(er *selective.Request, q *C.MPI_Request, st C.uintptr_t) {
	er.Complete(func() (int, int, error) {
		var mine C.MPI_Status
		return received("MPI_Wait", C.PMPI_Wait(q, &mine), &mine, st)
	})
	restoreCount(er, st)
}

// atWait is MPI_Wait while the engine has requests in flight.
//
//export atWait
func atWait(h C.uintptr_t, q *C.MPI_Request, st C.uintptr_t) C.int {
	defer guard()
	er := the(h).untrack(uintptr(C.at_request_key(*q)))
	if er == nil {
		return C.at_wait_into(q, st)
	}
	completeWait(er, q, st)
	return C.MPI_SUCCESS
}

// atWaitall is MPI_Waitall while the engine has requests in flight: the
// requests are waited for one by one (a wait lets every pending message
// progress, so the order cannot deadlock), each the engine started
// completed through it.
//
//export atWaitall
func atWaitall(h C.uintptr_t, n C.int, qs *C.MPI_Request, sts C.uintptr_t) C.int {
	defer guard()
	r := the(h)
	if n <= 0 {
		return C.MPI_SUCCESS
	}
	reqs := unsafe.Slice(qs, int(n))
	for i := range reqs {
		st := C.at_status_at(sts, C.int(i))
		if er := r.untrack(uintptr(C.at_request_key(reqs[i]))); er != nil {
			completeWait(er, &reqs[i], st)
			continue
		}
		if rc := C.at_wait_into(&reqs[i], st); rc != C.MPI_SUCCESS {
			return rc
		}
	}
	return C.MPI_SUCCESS
}

// atCompleted completes the engine's side of the request whose handle was
// key, which a test or wait of the program's has just completed with
// status st.
//
//export atCompleted
func atCompleted(h C.uintptr_t, key C.uintptr_t, st *C.MPI_Status) {
	defer guard()
	if er := the(h).untrack(uintptr(key)); er != nil {
		s, tg := sourceTag(st)
		er.Complete(func() (int, int, error) { return s, tg, nil })
		restoreCount(er, C.uintptr_t(uintptr(unsafe.Pointer(st))))
	}
}

// atReduce is MPI_Reduce, its buffers as integers (atAllreduce).
//
//export atReduce
func atReduce(h C.uintptr_t, sb, rb C.uintptr_t, n C.int, t C.MPI_Datatype, op C.MPI_Op, root C.int, c C.MPI_Comm) C.int {
	defer guard()
	sc := the(h).comm(c)
	if sc == nil {
		return C.at_reduce(sb, rb, n, t, op, root, c)
	}
	sc.Collective(selective.OpReduce, bytes(n, t), skippable(n, t), func() error {
		return mpiError("MPI_Reduce", C.at_reduce(sb, rb, n, t, op, root, c))
	})
	return C.MPI_SUCCESS
}

// atCollectiveV is a v-collective (MPI_Allgatherv, MPI_Alltoallv,
// MPI_Gatherv, MPI_Scatterv), its arguments in a (p2p.c): always executed,
// keyed by the bytes this process moves (selective.Comm.CollectiveV).
//
//export atCollectiveV
func atCollectiveV(h C.uintptr_t, a *C.struct_at_vargs) C.int {
	defer guard()
	sc := the(h).comm(a.c)
	if sc == nil {
		return C.at_vcall(a)
	}
	op, name := selective.OpAlltoallv, "MPI_Alltoallv"
	switch a.op {
	case C.AT_OP_ALLGATHERV:
		op, name = selective.OpAllgatherv, "MPI_Allgatherv"
	case C.AT_OP_GATHERV:
		op, name = selective.OpGatherv, "MPI_Gatherv"
	case C.AT_OP_SCATTERV:
		op, name = selective.OpScatterv, "MPI_Scatterv"
	}
	sc.CollectiveV(op, int(C.at_v_bytes(a)), func() error {
		return mpiError(name, C.at_vcall(a))
	})
	return C.MPI_SUCCESS
}

// atGathers is MPI_Gather, MPI_Allgather, MPI_Scatter and MPI_Alltoall
// (op: AT_OP_*), keyed by the bytes this process sends (receives, where it
// sends in place or, for Scatter, is not the root). Its buffers travel as
// integers (atAllreduce).
//
//export atGathers
func atGathers(h C.uintptr_t, op C.int, sb C.uintptr_t, sn C.int, st C.MPI_Datatype, rb C.uintptr_t, rn C.int, rt C.MPI_Datatype, root C.int, c C.MPI_Comm) C.int {
	defer guard()
	sc := the(h).comm(c)
	if sc == nil {
		return C.at_gathers(op, sb, sn, st, rb, rn, rt, root, c)
	}
	n, t := sn, st
	switch {
	case op == C.AT_OP_SCATTER:
		if int(root) != sc.Rank() || rb != C.atp_in_place() {
			n, t = rn, rt
		}
	case sb == C.atp_in_place():
		n, t = rn, rt
	}
	sop, name := selective.OpAlltoall, "MPI_Alltoall"
	switch op {
	case C.AT_OP_GATHER:
		sop, name = selective.OpGather, "MPI_Gather"
	case C.AT_OP_ALLGATHER:
		sop, name = selective.OpAllgather, "MPI_Allgather"
	case C.AT_OP_SCATTER:
		sop, name = selective.OpScatter, "MPI_Scatter"
	}
	sc.Collective(sop, bytes(n, t), skippable(n, t), func() error {
		return mpiError(name, C.at_gathers(op, sb, sn, st, rb, rn, rt, root, c))
	})
	return C.MPI_SUCCESS
}
