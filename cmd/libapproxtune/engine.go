package main

/*
#include <stdint.h>
#include <mpi.h>
#include "interpose.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/cgo"
	"time"
	"unsafe"

	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/mpi"
	"github.com/approxtune/approxtune/internal/preload"
	"github.com/approxtune/approxtune/internal/selective"
	"github.com/approxtune/approxtune/internal/selective/policy"
	"github.com/approxtune/approxtune/sweep"
	"gonum.org/v1/gonum/blas"
)

// run is one launch of the program as a selective run: the engine, the
// track and the program's communicators the engine knows, by MPI handle.
type run struct {
	cfg   *preload.Run
	world *mpi.Comm
	e     *selective.Engine
	k     *kernels.Kernels
	be    *realBackend
	pol   policy.Policy // nil: a reference run
	tr    *selective.Track
	comms map[uintptr]*selective.Comm
	t0    float64

	reqs    map[uintptr][]*selective.Request // the program's requests the engine started, by handle (p2p.go's track)
	persist map[uintptr]persistent           // the program's persistent requests on communicators the engine knows

	// The timed region: from MPI_Init to MPI_Finalize, unless the program
	// marks it with approxtune_begin and approxtune_end.
	region  bool               // a selective launch of a program that calls approxtune_begin: the engine is off until it
	marked  bool               // approxtune_begin was called
	stopped bool               // the region has ended
	rs      selective.RunStats // its figures, once stopped
	wall    float64            // its wall time, once stopped
}

// fatal ends the whole job: a selective run the library cannot carry on.
func fatal(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "libapproxtune: "+format+"\n", a...)
	os.Exit(70)
}

// guard turns an MPI failure inside the engine (selective.Failure) into a
// fatal error with its message.
func guard() {
	if p := recover(); p != nil {
		if f, ok := p.(selective.Failure); ok {
			fatal("%v", f.Err)
		}
		panic(p)
	}
}

// atBegin starts the selective run $APPROXTUNE_RUN describes, on every rank
// right after MPI_Init, and returns its handle for the interposers.
//
//export atBegin
func atBegin() C.uintptr_t {
	defer guard()
	cfg, err := preload.ParseRun(os.Getenv(preload.EnvRun))
	if err != nil {
		fatal("%v", err)
	}
	var pol policy.Policy // nil: a reference run
	if !cfg.Reference {
		if pol, err = policy.Lookup(cfg.Policy); err != nil {
			fatal("%v", err)
		}
		counts := selective.NewTrack(pol, cfg.Tolerance).NeedsCountingRun()
		switch {
		case cfg.Counting && !counts:
			fatal("policy %s has no counting run", pol.Name())
		case counts && cfg.Counts == "":
			fatal("policy %s reads the critical-path counts of a counting launch before each selective run: %s has no \"counts\" files", pol.Name(), preload.EnvRun)
		}
	}
	world, err := mpi.World()
	if err != nil {
		fatal("%v", err)
	}
	gonum, err := kernels.NewBackend(kernels.Gonum)
	if err != nil {
		fatal("%v", err)
	}
	be := &realBackend{Backend: gonum}
	k := kernels.New(be)
	e, err := selective.New(world, k)
	if err != nil {
		fatal("%v", err)
	}
	e.SetConfidence(cfg.Confidence)
	e.SetNMin(cfg.NMin)
	e.SetModels(cfg.Models)
	e.SetMessagesExecuted(cfg.RunMessages)
	// Every launch is a fresh process, with no warm-up run: the first call
	// of each kernel is cold (selective/cold.go). Not in a reference run,
	// which samples nothing: there it would only add a map write to every
	// kernel call of the run the others are judged by.
	e.SetColdFirstCalls(pol != nil)
	r := &run{cfg: cfg, world: world, e: e, k: k, be: be, pol: pol, comms: map[uintptr]*selective.Comm{}}
	r.comms[world.Handle()] = e.World()
	if pol != nil && preload.MarksRegion() {
		// What comes before the region (set-up, a warm-up) runs in full,
		// as in the reference launch: skipped from MPI_Init, it had left
		// the region to start cold (pages untouched, connections not yet
		// open) and set-up data unsent, and its statistics were dropped
		// at the region's start anyway.
		r.region = true
		e.Begin(nil, selective.Off)
	} else {
		r.start()
	}
	return C.uintptr_t(cgo.NewHandle(r))
}

// start begins the timed region on every rank: a fresh track, after a
// barrier.
func (r *run) start() {
	if r.pol != nil {
		r.tr = selective.NewTrack(r.pol, r.cfg.Tolerance)
		if r.cfg.State != "" {
			data, err := os.ReadFile(r.rankFile(r.cfg.State))
			retune := errors.Is(err, fs.ErrNotExist) && r.cfg.Retune != ""
			if retune {
				data, err = os.ReadFile(r.rankFile(r.cfg.Retune))
			}
			switch {
			case err == nil:
				if err := r.tr.Restore(data); err != nil {
					fatal("%v", err)
				}
				if retune {
					r.tr = r.tr.Retuned(r.cfg.Tolerance)
				}
			case !errors.Is(err, fs.ErrNotExist):
				fatal("%v", err)
			}
		}
		if r.tr.NeedsCountingRun() && !r.cfg.Counting {
			data, err := os.ReadFile(r.rankFile(r.cfg.Counts))
			if err == nil {
				err = r.tr.SetCounts(data)
			}
			if err != nil {
				fatal("policy %s's selective run: %v (its counting launch writes them)", r.pol.Name(), err)
			}
		}
	}
	r.meet("approxtune_begin")
	r.t0 = mpi.Wtime()
	switch {
	case r.tr == nil:
		r.e.Begin(nil, selective.Off)
	case r.cfg.Counting:
		r.e.Begin(r.tr, selective.Counting)
	default:
		r.e.SetCutoff(r.cfg.Cutoff)
		r.e.Begin(r.tr, selective.Selective)
	}
}

// meetWait is how long a rank waits at the region's start for the others
// before it says so.
const meetWait = 5 * time.Second

// meet waits for every rank at the start of the timed region (a barrier).
// A rank that has waited meetWait says so, once, on standard error: a
// region marked on some ranks only (approxtune_begin on rank 0 alone, as
// one times code by hand) hangs there, and the launch had hung unsaid.
func (r *run) meet(where string) {
	q, err := r.world.Ibarrier()
	if err != nil {
		fatal("%v", err)
	}
	start := time.Now()
	pause := time.Microsecond
	for said := false; ; {
		done, _, err := mpi.Test(q)
		if err != nil {
			fatal("%v", err)
		}
		if done {
			return
		}
		if !said && time.Since(start) > meetWait {
			fmt.Fprintf(os.Stderr, "libapproxtune: rank %d has waited %v in %s for the other ranks: if some never call it, this launch waits for ever; call %s on every rank\n",
				r.world.Rank(), meetWait, where, where)
			said = true
		}
		time.Sleep(pause)
		pause = min(2*pause, time.Millisecond)
	}
}

// rankFile is this rank's file of those named prefix.N, one a rank: the
// track's carried statistics (cfg.State), the critical-path counts a
// counting run writes and the selective run after it reads (cfg.Counts).
func (r *run) rankFile(prefix string) string { return fmt.Sprintf("%s.%d", prefix, r.world.Rank()) }

// save writes what data returns to this rank's file of prefix; what names
// it in the error.
func (r *run) save(prefix, what string, data func() ([]byte, error)) {
	b, err := data()
	if err == nil {
		err = os.WriteFile(r.rankFile(prefix), b, 0o600)
	}
	if err != nil {
		fatal("%s: %v", what, err)
	}
}

// stop ends the timed region on every rank (once) and keeps its figures;
// the program's calls after it run with the engine off.
func (r *run) stop() {
	if r.stopped {
		return
	}
	r.stopped = true
	// The region's time on this rank ends here: the engine's End (the
	// critical-path replay) is its own work, not the program's.
	r.wall = mpi.Wtime() - r.t0
	rs, err := r.e.End()
	if err != nil {
		fatal("end of the run: %v", err)
	}
	if err := r.world.Barrier(); err != nil {
		fatal("%v", err)
	}
	r.rs = rs
	if r.tr != nil && r.cfg.Counting {
		r.save(r.cfg.Counts, "counting run", r.tr.Counts)
	}
	if r.tr != nil && r.cfg.State != "" {
		r.save(r.cfg.State, "carried statistics", r.tr.Snapshot)
	}
	r.e.Begin(nil, selective.Off)
}

// atRegionBegin is approxtune_begin: the timed region starts here instead
// of at MPI_Init (what ran before it is left out). Every rank calls it.
//
//export atRegionBegin
func atRegionBegin(h C.uintptr_t) {
	defer guard()
	r := the(h)
	if r.marked {
		fatal("approxtune_begin was called twice: mark one region, on every rank")
	}
	r.marked = true
	if _, err := r.e.End(); err != nil {
		fatal("%v", err)
	}
	r.start()
}

// atRegionEnd is approxtune_end: the timed region ends here instead of at
// MPI_Finalize. Every rank calls it.
//
//export atRegionEnd
func atRegionEnd(h C.uintptr_t) {
	defer guard()
	r := the(h)
	if !r.marked {
		fatal("approxtune_end without approxtune_begin")
	}
	r.stop()
}

// atSkipping is approxtune_skipping: whether this launch may skip kernels
// (a selective launch, or a counting launch, which skips them all).
//
//export atSkipping
func atSkipping(h C.uintptr_t) C.int {
	if r := the(h); r.pol != nil {
		return 1
	}
	return 0
}

// atCutShort is approxtune_cut_short: whether the launch's longest path
// has passed its cutoff (preload.Run.Cutoff), every rank calling it at the
// same point (selective.Comm.CutShort, over the world). 0 without a
// cutoff, at no cost.
//
//export atCutShort
func atCutShort(h C.uintptr_t) C.int {
	defer guard()
	r := the(h)
	if r.tr == nil || r.cfg.Counting || r.cfg.Cutoff <= 0 {
		return 0
	}
	if r.e.World().CutShort() {
		return 1
	}
	return 0
}

// the returns the run of handle h.
func the(h C.uintptr_t) *run { return cgo.Handle(h).Value().(*run) }

// atEnd ends the run at MPI_Finalize: the engine's End, the path of the
// longest process, and on rank 0 the result written to the run's file.
//
//export atEnd
func atEnd(h C.uintptr_t) {
	defer guard()
	r := the(h)
	defer cgo.Handle(h).Delete()
	if r.region && !r.marked {
		fatal("the program links approxtune_begin (approxtune.h) but did not call it in this launch: its selective launches run in full up to it; call APPROXTUNE_BEGIN() on every rank in every launch")
	}
	r.stop()
	rs := r.rs
	if _, err := r.e.End(); err != nil {
		fatal("%v", err)
	}
	wall := []float64{r.wall}
	if err := mpi.Allreduce(r.world, wall, wall, mpi.Max); err != nil {
		fatal("%v", err)
	}
	p, err := r.e.Predict(rs)
	if err != nil {
		fatal("%v", err)
	}
	var others []sweep.OtherKernel
	if r.tr != nil && !r.cfg.Counting {
		if others, err = r.e.Others(r.tr); err != nil { // collective
			fatal("%v", err)
		}
	}
	if r.world.Rank() != 0 {
		return
	}
	if r.tr == nil {
		if err := preload.WriteResult(r.cfg.Out, &sweep.Result{Type: sweep.TypeResult, V: sweep.ProtocolVersion, ReferenceS: wall}); err != nil {
			fatal("%v", err)
		}
		return
	}
	tol := r.tr.Tolerance
	if r.cfg.Counting { // its time and counts; the selective run that follows reports the kernels
		res := sweep.Result{Type: sweep.TypeResult, V: sweep.ProtocolVersion, Policy: r.tr.Policy().Name(), Tolerance: &tol,
			SelectiveS: &wall[0], Executed: &p.Executed, Skipped: &p.Skipped}
		if err := preload.WriteResult(r.cfg.Out, &res); err != nil {
			fatal("%v", err)
		}
		return
	}
	res := sweep.Result{Type: sweep.TypeResult, V: sweep.ProtocolVersion, Policy: r.tr.Policy().Name(), Tolerance: &tol,
		PredictedS: &p.TotalS, PredictedSE: &p.SE, SelectiveS: &wall[0], LocalS: &rs.Own, Executed: &p.Executed, Skipped: &p.Skipped,
		Settled: &p.Settled, Promised: &p.Promised, Path: &p.Path, CutShort: p.CutShort}
	kernels := sweep.KernelsEvent{Type: sweep.TypeKernels, V: sweep.ProtocolVersion, Policy: res.Policy, Tolerance: tol,
		Kernels: r.e.Report(r.tr), Others: others}
	if err := preload.WriteResult(r.cfg.Out, &res, &kernels); err != nil {
		fatal("%v", err)
	}
}

// comm returns the engine's communicator for the program's handle c, nil
// for one the engine does not know (created by a routine it does not
// model): calls on it are forwarded as they are.
func (r *run) comm(c C.MPI_Comm) *selective.Comm { return r.comms[uintptr(C.at_handle(c))] }

// mpiError makes an MPI return code an error.
func mpiError(what string, rc C.int) error {
	if rc == C.MPI_SUCCESS {
		return nil
	}
	return fmt.Errorf("%s: MPI error %d", what, int(rc))
}

// bytes is the size of n elements of type t.
func bytes(n C.int, t C.MPI_Datatype) int {
	var size C.int
	C.PMPI_Type_size(t, &size)
	return int(n) * int(size)
}

//export atBcast
func atBcast(h C.uintptr_t, buf unsafe.Pointer, n C.int, t C.MPI_Datatype, root C.int, c C.MPI_Comm) C.int {
	defer guard()
	sc := the(h).comm(c)
	if sc == nil {
		return C.PMPI_Bcast(buf, n, t, root, c)
	}
	sc.Collective(selective.OpBcast, bytes(n, t), skippable(n, t), func() error { return mpiError("MPI_Bcast", C.PMPI_Bcast(buf, n, t, root, c)) })
	return C.MPI_SUCCESS
}

// atAllreduce is MPI_Allreduce. Its buffers travel as integers: the send
// buffer may be MPI_IN_PLACE, which Open MPI makes (void *)1, and such a
// value in a Go pointer kills the process when the runtime moves the
// goroutine's stack ("invalid pointer found on stack").
//
//export atAllreduce
func atAllreduce(h C.uintptr_t, sb, rb C.uintptr_t, n C.int, t C.MPI_Datatype, op C.MPI_Op, c C.MPI_Comm) C.int {
	defer guard()
	sc := the(h).comm(c)
	if sc == nil {
		return C.at_allreduce(sb, rb, n, t, op, c)
	}
	sc.Collective(selective.OpAllreduce, bytes(n, t), skippable(n, t), func() error {
		return mpiError("MPI_Allreduce", C.at_allreduce(sb, rb, n, t, op, c))
	})
	return C.MPI_SUCCESS
}

//export atBarrier
func atBarrier(h C.uintptr_t, c C.MPI_Comm) C.int {
	defer guard()
	sc := the(h).comm(c)
	if sc == nil {
		return C.PMPI_Barrier(c)
	}
	sc.Collective(selective.OpBarrier, 0, true, func() error { return mpiError("MPI_Barrier", C.PMPI_Barrier(c)) })
	return C.MPI_SUCCESS
}

// adopt records the engine's communicator nc as the program's new
// communicator *out (MPI_COMM_NULL for none).
func (r *run) adopt(nc *selective.Comm, out *C.MPI_Comm) C.int {
	if nc == nil {
		*out = C.at_null_comm()
		return C.MPI_SUCCESS
	}
	h := nc.Raw().Handle()
	r.comms[h] = nc
	*out = C.at_comm(C.uintptr_t(h))
	return C.MPI_SUCCESS
}

//export atSplit
func atSplit(h C.uintptr_t, c C.MPI_Comm, color, key C.int, out *C.MPI_Comm) C.int {
	defer guard()
	r := the(h)
	sc := r.comm(c)
	if sc == nil {
		return C.PMPI_Comm_split(c, color, key, out)
	}
	return r.adopt(sc.Split(int(color), int(key)), out)
}

// atAdopt makes the program's new communicator nc, made from c by a
// constructor the engine does not run itself, known to the engine when c
// is: every member of nc makes the same call, so all adopt it.
//
//export atAdopt
func atAdopt(h C.uintptr_t, c, nc C.MPI_Comm) {
	defer guard()
	r := the(h)
	if r.comm(c) == nil || nc == C.at_null_comm() {
		return
	}
	m, err := mpi.FromHandle(uintptr(C.at_handle(nc)))
	if err != nil {
		fatal("%v", err)
	}
	r.comms[m.Handle()] = r.e.Adopt(m)
}

// atForget forgets the program's communicator c, which it is freeing, and
// frees the engine's resources of it.
//
//export atForget
func atForget(h C.uintptr_t, c C.MPI_Comm) {
	defer guard()
	r := the(h)
	key := uintptr(C.at_handle(c))
	if sc := r.comms[key]; sc != nil && sc != r.e.World() {
		delete(r.comms, key)
		sc.Release()
	}
}

//export atDup
func atDup(h C.uintptr_t, c C.MPI_Comm, out *C.MPI_Comm) C.int {
	defer guard()
	r := the(h)
	sc := r.comm(c)
	if sc == nil {
		return C.PMPI_Comm_dup(c, out)
	}
	return r.adopt(sc.Dup(), out)
}

// rowMajor returns the r×c row-major matrix with leading dimension ld at p
// as a slice.
func rowMajor(p *C.double, r, c, ld int) []float64 {
	if r <= 0 || c <= 0 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(p)), (r-1)*ld+c)
}

func trans(ch C.char) blas.Transpose {
	switch ch {
	case 'T', 't', 'C', 'c':
		return blas.Trans
	}
	return blas.NoTrans
}

// dims is the rows and columns of op(X) = rows×cols as stored, given t.
func dims(t blas.Transpose, rows, cols int) (int, int) {
	if t == blas.NoTrans {
		return rows, cols
	}
	return cols, rows
}

// atGemm is a program's dgemm (Fortran, column-major, when col is 1; CBLAS
// row-major otherwise) through the engine. A column-major C = op(A)·op(B)
// is the row-major Cᵀ = op(B)ᵀ·op(A)ᵀ on the same memory.
//
//export atGemm
func atGemm(h C.uintptr_t, col C.int, ta, tb C.char, m, n, k C.int, alpha C.double, a *C.double, lda C.int,
	b *C.double, ldb C.int, beta C.double, c *C.double, ldc C.int) {
	defer guard()
	tA, tB, M, N, K := trans(ta), trans(tb), int(m), int(n), int(k)
	A, ldA, B, ldB := a, int(lda), b, int(ldb)
	if col != 0 {
		tA, tB, M, N = tB, tA, N, M
		A, ldA, B, ldB = B, ldB, A, ldA
	}
	ar, ac := dims(tA, M, K)
	br, bc := dims(tB, K, N)
	the(h).k.Gemm(tA, tB, M, N, K, float64(alpha), rowMajor(A, ar, ac, ldA), ldA, rowMajor(B, br, bc, ldB), ldB,
		float64(beta), rowMajor(c, M, N, int(ldc)), int(ldc))
}

// atPotrf is a program's dpotrf (Fortran, column-major) through the engine:
// the column-major uplo triangle is the row-major other one. It returns
// LAPACK's info (0 when the engine skipped it).
//
//export atPotrf
func atPotrf(h C.uintptr_t, uplo C.char, n C.int, a *C.double, lda C.int) C.int {
	defer guard()
	r := the(h)
	ul := blas.Lower
	if uplo == 'L' || uplo == 'l' {
		ul = blas.Upper
	}
	r.be.info = 0
	_ = r.k.Potrf(ul, int(n), rowMajor(a, int(n), int(n), int(lda)), int(lda)) // info carries the failure
	return C.int(r.be.info)
}

// realBackend runs the kernels the engine executes on the program's own
// BLAS and LAPACK (the definitions after the library's, row-major calls
// turned back into the column-major ones they came from). The engine
// models only the routines above, so the embedded backend's other methods
// are never called.
type realBackend struct {
	kernels.Backend
	info int // the last dpotrf's info
}

func (*realBackend) Name() string { return "the program's BLAS and LAPACK" }

func transChar(t blas.Transpose) C.char {
	if t == blas.NoTrans {
		return 'N'
	}
	return 'T'
}

func ptr(x []float64) *C.double { return (*C.double)(unsafe.Pointer(unsafe.SliceData(x))) }

func (*realBackend) Dgemm(tA, tB blas.Transpose, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	C.at_real_dgemm(transChar(tB), transChar(tA), C.int(n), C.int(m), C.int(k), C.double(alpha), ptr(b), C.int(ldb),
		ptr(a), C.int(lda), C.double(beta), ptr(c), C.int(ldc))
}

func (be *realBackend) Dpotrf(ul blas.Uplo, n int, a []float64, lda int) bool {
	uplo := C.char('L') // the row-major upper triangle is the column-major lower one
	if ul == blas.Lower {
		uplo = 'U'
	}
	be.info = int(C.at_real_dpotrf(uplo, C.int(n), ptr(a), C.int(lda)))
	return be.info == 0
}

// flip is the other triangle: a column-major upper triangle is the
// row-major lower one of the same memory.
func flip(ul C.char) C.char {
	if ul == 'U' || ul == 'u' {
		return 'L'
	}
	return 'U'
}

func uplo(ch C.char) blas.Uplo {
	if ch == 'U' || ch == 'u' {
		return blas.Upper
	}
	return blas.Lower
}

func side(ch C.char) blas.Side {
	if ch == 'L' || ch == 'l' {
		return blas.Left
	}
	return blas.Right
}

func diag(ch C.char) blas.Diag {
	if ch == 'U' || ch == 'u' {
		return blas.Unit
	}
	return blas.NonUnit
}

// atSyrk is a program's dsyrk (column-major) through the engine: the
// row-major view of the same memory has the other triangle and A
// transposed.
//
//export atSyrk
func atSyrk(h C.uintptr_t, ul, tr C.char, n, k C.int, alpha C.double, a *C.double, lda C.int, beta C.double, c *C.double, ldc C.int) {
	defer guard()
	t := blas.Trans // column-major op(A) = A (n×k) is the row-major view's Aᵀ
	if trans(tr) == blas.Trans {
		t = blas.NoTrans
	}
	ar, ac := dims(t, int(n), int(k)) // the row-major view: op(view) is n×k
	the(h).k.Syrk(uplo(flip(ul)), t, int(n), int(k), float64(alpha), rowMajor(a, ar, ac, int(lda)), int(lda),
		float64(beta), rowMajor(c, int(n), int(n), int(ldc)), int(ldc))
}

// atTrxm is a program's dtrsm (solve 1) or dtrmm (column-major) through the
// engine: op(A)·X = alpha·B on the left is Xᵀ·op(A)ᵀ = alpha·Bᵀ on the
// right in the row-major view, whose A is the other triangle.
//
//export atTrxm
func atTrxm(h C.uintptr_t, solve C.int, sd, ul, ta, dg C.char, m, n C.int, alpha C.double, a *C.double, lda C.int, b *C.double, ldb C.int) {
	defer guard()
	s := blas.Left // column-major right is row-major left
	order := int(n)
	if side(sd) == blas.Left {
		s, order = blas.Right, int(m)
	}
	A := rowMajor(a, order, order, int(lda))
	B := rowMajor(b, int(n), int(m), int(ldb))
	k := the(h).k
	if solve != 0 {
		k.Trsm(s, uplo(flip(ul)), trans(ta), diag(dg), int(n), int(m), float64(alpha), A, int(lda), B, int(ldb))
		return
	}
	k.Trmm(s, uplo(flip(ul)), trans(ta), diag(dg), int(n), int(m), float64(alpha), A, int(lda), B, int(ldb))
}

// atTrtri is a program's dtrtri (column-major) through the engine; it
// returns LAPACK's info (0 when the engine skipped it).
//
//export atTrtri
func atTrtri(h C.uintptr_t, ul, dg C.char, n C.int, a *C.double, lda C.int) C.int {
	defer guard()
	r := the(h)
	r.be.info = 0
	_ = r.k.Trtri(uplo(flip(ul)), diag(dg), int(n), rowMajor(a, int(n), int(n), int(lda)), int(lda)) // info carries the failure
	return C.int(r.be.info)
}

func uploChar(ul blas.Uplo) C.char {
	if ul == blas.Upper {
		return 'U'
	}
	return 'L'
}

func sideChar(s blas.Side) C.char {
	if s == blas.Left {
		return 'L'
	}
	return 'R'
}

func diagChar(d blas.Diag) C.char {
	if d == blas.Unit {
		return 'U'
	}
	return 'N'
}

// Dsyrk turns the row-major call back into the column-major one.
func (*realBackend) Dsyrk(ul blas.Uplo, t blas.Transpose, n, k int, alpha float64, a []float64, lda int, beta float64, c []float64, ldc int) {
	ft := C.char('T')
	if t == blas.Trans {
		ft = 'N'
	}
	C.at_real_dsyrk(flip(uploChar(ul)), ft, C.int(n), C.int(k), C.double(alpha), ptr(a), C.int(lda), C.double(beta), ptr(c), C.int(ldc))
}

func trxm(solve int, s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	fs := C.char('L') // row-major right is column-major left
	if s == blas.Left {
		fs = 'R'
	}
	C.at_real_dtrxm(C.int(solve), fs, flip(uploChar(ul)), transChar(tA), diagChar(d), C.int(n), C.int(m), C.double(alpha),
		ptr(a), C.int(lda), ptr(b), C.int(ldb))
}

// Dtrsm turns the row-major call back into the column-major one.
func (*realBackend) Dtrsm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	trxm(1, s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
}

// Dtrmm turns the row-major call back into the column-major one.
func (*realBackend) Dtrmm(s blas.Side, ul blas.Uplo, tA blas.Transpose, d blas.Diag, m, n int, alpha float64, a []float64, lda int, b []float64, ldb int) {
	trxm(0, s, ul, tA, d, m, n, alpha, a, lda, b, ldb)
}

// Dtrtri turns the row-major call back into the column-major one.
func (be *realBackend) Dtrtri(ul blas.Uplo, d blas.Diag, n int, a []float64, lda int) bool {
	be.info = int(C.at_real_dtrtri(flip(uploChar(ul)), diagChar(d), C.int(n), ptr(a), C.int(lda)))
	return be.info == 0
}
