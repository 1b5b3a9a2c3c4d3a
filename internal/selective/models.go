package selective

import (
	"cmp"
	"errors"
	"math"
	"slices"

	"github.com/approxtune/approxtune/analysis"
	"github.com/approxtune/approxtune/internal/kernels"
)

// Models for kernels never measured (SetModels; docs/design.md §2). With
// models on, a computation kernel whose signature has no samples on this
// process, and under a policy.Sharer none the grid has shared either, is
// predicted from its routine family's performance model and skipped from
// its first call, when that model is good enough for the track's
// tolerance. A family is a routine with its flags ("gemm[NT]"); its model
// is analysis.FitModel's PMNF function of the kernel's sizes (as the
// session's 'model' fits it: the size parameters that vary, or the flops
// when several vary but not along lines, analysis.ModelParams), fitted to
// the mean times of the family's signatures that are known to the
// tolerance here: this process's samples, or a Sharer's shared statistics
// of a signature this process has met.
//
// The model is used only when it rests on at least minModelSizes distinct
// sizes and the relative uncertainty of its prediction, the largest of its
// leave-one-out error (CVSMAPE), the half-width of its prediction band at
// the engine's confidence level and, beyond the measured sizes, the error
// of extrapolating (family.extrapolate), passes the rule a measured
// kernel's mean passes: r <= tolerance·sqrt(alpha), alpha the policy's
// significance. The prediction is then the skipped kernel's time, and
// r·t/z its standard error (modelVar), as a measured mean's z·SE is its
// interval's half-width.
//
// A family is refitted only when the set of its signatures known to the
// tolerance has changed, never per call; a kernel's prediction is
// recomputed when its family's model has, or at its next call after it
// failed the rule.
//
// Communication is never predicted from a model: a collective may be
// skipped only when every member skips it (settled collectives, a
// Sharer's agreement), and each process fits its models to its own data,
// so two members could decide differently. A computation kernel's skip is
// a decision of its process alone.

// minModelSizes is the least number of distinct sizes a kernel's model must
// rest on to predict a kernel never measured.
const minModelSizes = 4

// SetModels turns models for kernels never measured on or off (off by
// default). Call it between runs, not during one.
func (e *Engine) SetModels(on bool) { e.models = on }

// famKey names a routine family: a computation routine with its flags.
type famKey struct {
	op    Op
	flags uint8
}

// modelStamp is what a family's model depends on, cheaply: the signatures
// on the track, the kernels the grid shared, and how many of this
// process's signatures have become known to the tolerance.
type modelStamp struct{ stats, global, ready int }

// family is a routine family's model on a track.
type family struct {
	looked  bool       // stamp is set
	stamp   modelStamp // when the members were last looked at
	members []uint64   // hashes of the signatures the model was fitted to, sorted
	use     []int      // the size parameters the model takes; nil: the flops
	model   *analysis.Model
	pts     []analysis.Point // what it was fitted to, ordered by coordinates
	// One coordinate: the relative error of predicting the smallest
	// (lowErr) and the largest (highErr) point from a model fitted to the
	// others, +Inf when there is none (extrapolate).
	lowErr, highErr float64
	gen             int // incremented at every refit
	// runSE is the sum of the standard errors this run's skips of the
	// family's kernels were charged (skippedFor): they come from one fit,
	// so their errors are counted as one.
	runSE float64
}

// prediction is a kernel's time predicted from its family's model.
type prediction struct {
	mean float64 // the predicted time
	rel  float64 // its relative uncertainty r
	gen  int     // the family model's generation it comes from
}

// modelled reports whether a kernel never measured here is predicted from
// its family's model well enough to be skipped (and sets st.pred).
func (e *Engine) modelled(st *kstat) bool {
	tr := e.tr
	x, ok := st.key.sizes()
	if !ok || tr.Tolerance <= 0 {
		return false
	}
	if tr.shares {
		if _, ok := tr.global[st.hash]; ok {
			return false // measured elsewhere: that sample decides
		}
	}
	if tr.families == nil {
		tr.families = map[famKey]*family{}
	}
	fk := famKey{st.key.Op, st.key.Flags}
	f := tr.families[fk]
	if f == nil {
		f = &family{}
		tr.families[fk] = f
	}
	if s := (modelStamp{len(tr.stats), len(tr.global), tr.ready}); !f.looked || f.stamp != s {
		// The engine's own work: not charged to the path.
		t0 := e.now()
		e.refit(f, fk)
		f.looked, f.stamp = true, s
		e.last += e.now() - t0
	}
	if f.model == nil {
		st.pred = nil
		return false
	}
	if st.pred == nil || st.pred.gen != f.gen {
		st.pred = f.predict(x, st.key.Work(), e.qs.conf)
		if st.pred == nil {
			return false
		}
	}
	alpha := max(tr.pol.Significance(e.view(st)), 1)
	if st.pred.rel > tr.Tolerance*math.Sqrt(alpha) {
		st.pred = nil
		return false
	}
	return true
}

// predict is the family's prediction for a signature of sizes x and flops
// w, with its relative uncertainty; nil when the model predicts no
// positive time, has no band, or x lies outside what it may extrapolate
// to (extrapolate).
func (f *family) predict(x []float64, w float64, level float64) *prediction {
	at := []float64{w}
	if f.use != nil {
		at = pick(x, f.use)
	}
	ext, ok := f.extrapolate(at)
	if !ok {
		return nil
	}
	t := f.model.Predict(at)
	lo, hi := f.model.Band(at, level)
	if !(t > 0) || math.IsNaN(lo) || math.IsNaN(hi) {
		return nil
	}
	return &prediction{mean: t, rel: max((hi-lo)/2/t, f.model.CVSMAPE/100, ext), gen: f.gen}
}

// extrapolate says whether the model may predict at coordinates at, and
// what error it adds for going beyond the measured sizes. Inside their
// range (along every coordinate), 0. A model of several coordinates does
// not extrapolate. A model of one may go one step beyond its range, a step
// no longer than its last (the largest size over the one before, or the
// same below), and that step's error is what predicting the last point
// from the others misses it by: a prediction band assumes the model's form
// is right, which is what extrapolation puts in doubt (a few sizes of a
// factorization are fitted by a logarithm as well as by a power, and the
// two part far beyond them).
func (f *family) extrapolate(at []float64) (float64, bool) {
	n := len(f.pts)
	for l, v := range at {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, p := range f.pts {
			lo, hi = min(lo, p.Params[l]), max(hi, p.Params[l])
		}
		if v >= lo && v <= hi {
			continue
		}
		if len(at) > 1 {
			return 0, false
		}
		if v > hi && v/hi <= hi/f.pts[n-2].Params[0] {
			return f.highErr, true
		}
		if v < lo && lo/v <= f.pts[1].Params[0]/lo {
			return f.lowErr, true
		}
		return 0, false
	}
	return 0, true
}

// modelVar is the variance a modelled kernel's skip adds to the path
// (skippedFor). Its prediction's standard error is its half-width r·t over
// the normal quantile. Every kernel of a family is predicted from the same
// fit, so their errors are not independent, and are taken to be one: the
// family's skips this run are charged as one sum of standard errors S,
// each adding (S+se)² - S² (for one signature, the (2i-1)·SE² of a
// measured mean's skips). Different families come from different fits
// and add as independent variances.
func (e *Engine) modelVar(st *kstat) float64 {
	se := st.pred.rel * st.pred.mean / e.qs.z
	f := e.tr.families[famKey{st.key.Op, st.key.Flags}]
	if f == nil { // cannot be: the prediction came from it
		return se * se
	}
	v := (2*f.runSE + se) * se
	f.runSE += se
	return v
}

// refit looks at the family's signatures known to the tolerance and, when
// they are not those the model was fitted to, fits it again.
func (e *Engine) refit(f *family, fk famKey) {
	tr := e.tr
	type member struct {
		hash  uint64
		x     []float64
		flops float64
		s     Stat
	}
	var ms []member
	for k, st := range tr.stats {
		if k.Op != fk.op || k.Flags != fk.flags {
			continue
		}
		x, ok := k.sizes()
		if !ok {
			continue
		}
		s := st.Stat
		if !e.known(s) {
			if s = tr.global[st.hash]; s.N == 0 {
				continue
			}
		}
		ms = append(ms, member{st.hash, x, k.Work(), s})
	}
	slices.SortFunc(ms, func(a, b member) int { return cmp.Compare(a.hash, b.hash) })
	hashes := make([]uint64, len(ms))
	for i, m := range ms {
		hashes[i] = m.hash
	}
	if f.gen > 0 && slices.Equal(hashes, f.members) {
		return
	}
	f.members, f.model, f.use = hashes, nil, nil
	f.gen++
	if len(ms) < minModelSizes {
		return
	}
	sizes := make([][]float64, len(ms))
	stats := make([]Stat, len(ms))
	flops := make([][]float64, len(ms))
	for i, m := range ms {
		sizes[i], stats[i], flops[i] = m.x, m.s, []float64{m.flops}
	}
	names := kernels.Routine(fk.op).SizeParams()
	use, _ := analysis.ModelParams(sizes, len(names))
	coords := make([][]float64, len(ms))
	for i := range ms {
		coords[i] = pick(sizes[i], use)
	}
	vars := pick(names, use)
	pts := pool(coords, stats)
	m, err := fitPoints(vars, pts)
	if errors.Is(err, analysis.ErrNoLines) && len(use) >= 2 {
		// Several sizes vary together: a model of the flops.
		use, vars = nil, []string{"flops"}
		pts = pool(flops, stats)
		m, err = fitPoints(vars, pts)
	}
	if err != nil {
		return
	}
	f.model, f.use, f.pts = m, use, pts
	f.lowErr, f.highErr = math.Inf(1), math.Inf(1)
	if len(vars) == 1 {
		f.lowErr, f.highErr = heldOut(vars, pts, 0), heldOut(vars, pts, len(pts)-1)
	}
}

// pool is the samples at their coordinates as model points, the samples of
// one coordinate pooled, ordered by coordinates.
func pool(coords [][]float64, stats []Stat) []analysis.Point {
	var xs [][]float64
	var pooled []Stat
	for i, x := range coords {
		j := slices.IndexFunc(xs, func(y []float64) bool { return slices.Equal(x, y) })
		if j < 0 {
			xs, pooled = append(xs, x), append(pooled, Stat{})
			j = len(xs) - 1
		}
		pooled[j].Merge(stats[i])
	}
	pts := make([]analysis.Point, len(xs))
	for i, x := range xs {
		pts[i] = analysis.Point{Params: x, Value: pooled[i].Mean}
	}
	slices.SortFunc(pts, func(a, b analysis.Point) int { return slices.Compare(a.Params, b.Params) })
	return pts
}

// fitPoints fits a model to the points; it needs minModelSizes of them.
func fitPoints(names []string, pts []analysis.Point) (*analysis.Model, error) {
	if len(pts) < minModelSizes {
		return nil, errors.New("selective: too few distinct sizes for a model")
	}
	return analysis.FitModel(names, pts)
}

// heldOut is the relative error of predicting point i from a model fitted
// to the others (+Inf when they cannot be fitted).
func heldOut(names []string, pts []analysis.Point, i int) float64 {
	m, err := analysis.FitModel(names, slices.Delete(slices.Clone(pts), i, i+1))
	if err != nil {
		return math.Inf(1)
	}
	return math.Abs(m.Predict(pts[i].Params)/pts[i].Value - 1)
}

// sizes are a computation kernel's size parameters
// (kernels.Routine.SizeParams); false for a communication, a spin, or a
// size that is not positive, or flops that are not (no model takes them).
func (k Key) sizes() ([]float64, bool) {
	if k.IsComm() {
		return nil, false
	}
	x := kernels.Signature{Routine: kernels.Routine(k.Op), Flags: k.Flags, M: k.M, N: k.N, K: k.K}.Sizes()
	if len(x) == 0 || !(k.Work() > 0) {
		return nil, false
	}
	for _, v := range x {
		if !(v > 0) {
			return nil, false
		}
	}
	return x, true
}

// noteMeasured counts a computation kernel whose own samples have just made
// it known to the tolerance: its family's model may take it (modelStamp).
func (e *Engine) noteMeasured(st *kstat) {
	if !st.ready && !st.key.IsComm() && e.known(st.Stat) {
		st.ready = true
		e.tr.ready++
	}
}

// pick is the elements of x at the indices.
func pick[T any](x []T, idx []int) []T {
	out := make([]T, len(idx))
	for i, l := range idx {
		out[i] = x[l]
	}
	return out
}
