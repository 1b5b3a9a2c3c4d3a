package selective

import (
	"fmt"

	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/internal/kernels"
)

// Op is the routine of a kernel key: a computation routine (kernels.Routine)
// or a communication routine.
type Op uint8

// Communication routines; computation routines are kernels.Routine values.
const (
	OpBcast Op = 64 + iota
	OpReduce
	OpAllreduce
	OpGather
	OpAllgather
	OpScatter
	OpSend
	OpRecv
	OpIsend
	OpIrecv
	OpBarrier
	OpAlltoall
	OpAllgatherv
	OpAlltoallv
	OpGatherv
	OpScatterv
)

var commNames = [...]string{"bcast", "reduce", "allreduce", "gather", "allgather", "scatter", "send", "recv", "isend", "irecv", "barrier", "alltoall",
	"allgatherv", "alltoallv", "gatherv", "scatterv"}

// String is the routine's name ("gemm", "allreduce").
func (o Op) String() string {
	if o >= OpBcast && int(o-OpBcast) < len(commNames) {
		return commNames[o-OpBcast]
	}
	return kernels.Routine(o).String()
}

// Key is a kernel signature (docs/design.md §2). Computation: routine, flags and
// dimensions. Communication: routine, elements per process, the
// communicator's shape and, for point-to-point, the partner's offset in world
// ranks.
type Key struct {
	Op      Op
	Flags   uint8
	M, N, K int32
	Shape   Shape
	Partner int32
}

// IsComm reports whether the key is a communication.
func (k Key) IsComm() bool { return k.Op.IsComm() }

// IsComm reports whether the routine is a communication.
func (o Op) IsComm() bool { return o >= OpBcast }

// Work is the kernel's size: its flops for a computation
// (kernels.Signature.Flops; 0 for a spin), the bytes each process moves for
// a communication (M doubles; 0 for a barrier).
func (k Key) Work() float64 {
	if k.IsComm() {
		return 8 * float64(k.M)
	}
	return kernels.Signature{Routine: kernels.Routine(k.Op), Flags: k.Flags, M: k.M, N: k.N, K: k.K}.Flops()
}

func compKey(s kernels.Signature) Key {
	return Key{Op: Op(s.Routine), Flags: s.Flags, M: s.M, N: s.N, K: s.K}
}

// String is the kernel's signature as the tables show it: a computation's
// routine, flags and sizes; a communication's routine, doubles, ranks and
// communicator hash.
func (k Key) String() string {
	if !k.IsComm() {
		return kernels.Signature{Routine: kernels.Routine(k.Op), Flags: k.Flags, M: k.M, N: k.N, K: k.K}.String()
	}
	ranks := format.Count(k.Shape.Size, "rank", "ranks")
	s := fmt.Sprintf("%s %d doubles on %s [%08x]", k.Op, k.M, ranks, k.Shape.Hash)
	if k.Op == OpBarrier { // it moves nothing
		s = fmt.Sprintf("%s on %s [%08x]", k.Op, ranks, k.Shape.Hash)
	}
	if k.Op == OpSend || k.Op == OpRecv || k.Op == OpIsend || k.Op == OpIrecv {
		s += fmt.Sprintf(" partner %+d", k.Partner)
	}
	return s
}

// hash is a 64-bit FNV-1a of the key's fields; it names the key in messages.
func (k Key) hash() uint64 {
	h := uint64(14695981039346656037)
	mix := func(v uint64, n int) {
		for i := 0; i < n; i++ {
			h ^= v & 0xff
			h *= 1099511628211
			v >>= 8
		}
	}
	mix(uint64(k.Op), 1)
	mix(uint64(k.Flags), 1)
	mix(uint64(uint32(k.M)), 4)
	mix(uint64(uint32(k.N)), 4)
	mix(uint64(uint32(k.K)), 4)
	mix(uint64(k.Shape.Size), 4)
	mix(uint64(k.Shape.Hash), 4)
	mix(uint64(uint32(k.Partner)), 4)
	return h
}
