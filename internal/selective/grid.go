package selective

import (
	"fmt"

	"github.com/approxtune/approxtune/internal/mpi"
)

// Grid is a Cartesian processor grid over the first Procs() world ranks, in
// row-major order: rank = ((c0*d1)+c1)*d2+c2 for dims (d0, d1, d2). Ranks past
// the grid are not members.
type Grid struct {
	Dims   []int
	Coords []int // this process's coordinates; nil if not a member
	Comm   *Comm // all members; nil if not a member
	along  []*Comm
	subs   map[uint]*Comm
}

// Member reports whether this process belongs to the grid.
func (g *Grid) Member() bool { return g.Comm != nil }

// Procs is the number of processes in the grid.
func (g *Grid) Procs() int {
	n := 1
	for _, d := range g.Dims {
		n *= d
	}
	return n
}

// Along returns the communicator of the processes that share every coordinate
// but dimension d (for a 2D grid, Along(1) is the process row, Along(0) the
// process column; for 3D, Along(2) is the depth fibre). Its ranks follow
// coordinate d.
func (g *Grid) Along(d int) *Comm { return g.along[d] }

// Sub returns the communicator of the processes that share every coordinate
// except those in dims (for a 3D grid, Sub(0, 1) is the layer at this depth).
// Ranks are row-major over the varying dimensions.
func (g *Grid) Sub(dims ...int) *Comm {
	var mask uint
	for _, d := range dims {
		mask |= 1 << d
	}
	return g.subs[mask]
}

// NewGrid builds the grid of the given dims over world through the engine,
// with a communicator along every dimension and over every pair of
// dimensions. Every world rank must call it.
func (e *Engine) NewGrid(dims []int) (*Grid, error) {
	g := &Grid{Dims: append([]int(nil), dims...)}
	p := g.Procs()
	if p > e.world.Size() {
		return nil, fmt.Errorf("grid %v needs %d processes, there are %d", dims, p, e.world.Size())
	}
	me := e.world.Rank()
	member := me < p
	e.load = e.place.load(p)
	if member && !e.cpuFixed {
		// Where the grid's processes have a core each (the world's
		// others wait outside its runs), computation is timed in wall
		// time, as a run of the grid alone takes it: the CPU clock is a
		// system call, read about once a kernel.
		e.useCPUTime(e.place.crowded(me, p))
	}
	if member {
		g.Coords = make([]int, len(dims))
		r := me
		for d := len(dims) - 1; d >= 0; d-- {
			g.Coords[d] = r % dims[d]
			r /= dims[d]
		}
	}
	split := func(mask uint) (*Comm, error) {
		color, key := mpi.Undefined, 0
		if member {
			color, key = 0, 0
			for d := range dims {
				if mask&(1<<d) != 0 {
					key = key*dims[d] + g.Coords[d]
				} else {
					color = color*dims[d] + g.Coords[d]
				}
			}
		}
		nc, err := e.world.c.Split(color, key)
		if err != nil {
			return nil, fmt.Errorf("grid %v: %w", dims, err)
		}
		return e.wrap(nc)
	}
	all := uint(1)<<len(dims) - 1
	var err error
	if g.Comm, err = split(all); err != nil {
		return nil, err
	}
	g.subs = map[uint]*Comm{all: g.Comm}
	g.along = make([]*Comm, len(dims))
	for d := range dims {
		if g.along[d], err = split(1 << d); err != nil {
			return nil, err
		}
		g.subs[1<<d] = g.along[d]
	}
	e.axes = e.axes[:0]
	for d, c := range g.along {
		if c != nil && dims[d] > 1 {
			e.axes = append(e.axes, c.shape)
		}
	}
	if len(dims) == 3 {
		for _, m := range []uint{3, 5, 6} {
			if g.subs[m], err = split(m); err != nil {
				return nil, err
			}
		}
	}
	return g, nil
}

// Free releases the grid's communicators.
func (g *Grid) Free() {
	for _, c := range g.subs {
		if c != nil {
			c.Free()
		}
	}
	g.subs, g.along, g.Comm = nil, nil, nil
}
