package session

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/plot"

	"github.com/approxtune/approxtune/analysis"
	"github.com/approxtune/approxtune/internal/format"
	"github.com/approxtune/approxtune/internal/kernels"
	"github.com/approxtune/approxtune/internal/plots"
	"github.com/approxtune/approxtune/internal/selective/policy"
	"github.com/approxtune/approxtune/sweep"
)

// Kernel performance models (issue 27, paper 003): each kernel family's
// mean time per call is fitted, by analysis.FitModel, to the performance
// model normal form in the kernel's sizes.
//
// The data are rank 0's kernel statistics after each selective run
// (Sweep.Kernels). A family is a computation routine with its flags
// ("gemm[NT]": transposes, sides and triangles change the kernel's speed,
// so each combination has a model of its own) or a communication routine
// ("isend": every communicator and partner pooled, sizes by message bytes
// and communicator size). The synthetic workload's spins have no size and
// are left out. The same key's statistics are pooled over the selective
// runs, weighted by their sample counts: each run's for a policy that
// starts its runs afresh, the last run's for one that carries statistics
// from one configuration to the next (eager), whose later reports repeat
// the earlier samples. Keys of one family that share their sizes (messages
// on different communicators of one size) are pooled too.
//
// A parameter constant at every measured size is no parameter of the model.
// When two or more vary but not along lines (sizes where the others stay
// fixed), as the m, n and k of a tile algorithm's b x b x b gemm, which all
// follow b, the multi-parameter search has nothing to separate them by, and
// the model is of one derived size instead: the kernel's flops for a
// computation, its bytes for a communication.

// minModelSizes is the least number of distinct sizes a family's model is
// fitted to: Extra-P's five measurement points per parameter. Fewer leave
// the 3 x 18 hypotheses of the search barely a residual to choose by.
const minModelSizes = 5

var (
	compKeyRe = regexp.MustCompile(`^([a-z]+)(?:\[([A-Z]+)\])? ([0-9]+(?:x[0-9]+)*)$`)
	commKeyRe = regexp.MustCompile(`^([a-z]+)(?: ([0-9]+) doubles)? on ([0-9]+) ranks? \[[0-9a-f]+\](?: partner [+-][0-9]+)?$`)
)

// routineParams are a computation routine's size parameters in its key's
// order (kernels.Signature.String); nil for a routine without sizes.
func routineParams(routine string) []string {
	r, err := kernels.ParseRoutine(routine)
	if err != nil {
		return nil
	}
	return r.SizeParams()
}

// commParams are a communication's size parameters: the bytes each process
// sends or receives and the communicator's size.
var commParams = []string{"bytes", "p"}

// kernelPart is one selective run's statistics of a kernel (or a carrying
// track's last), a part of a pooled size.
type kernelPart struct {
	count      int64
	mean, half float64 // half: 95% half-width of the mean, -1 when infinite
}

// pool is the count-weighted mean of parts and its half-width, sqrt(Σ
// (nᵢ/N)² hᵢ²) over the parts whose half-width is finite (those with an
// infinite one, single samples, only weigh in the mean); -1 when none is.
func pool(parts []kernelPart) (count int64, mean, half float64) {
	var n, nf int64
	var sum float64
	for _, p := range parts {
		n += p.count
		sum += float64(p.count) * p.mean
		if p.half >= 0 {
			nf += p.count
		}
	}
	if n == 0 {
		return 0, math.NaN(), -1
	}
	if nf == 0 {
		return n, sum / float64(n), -1
	}
	var v float64
	for _, p := range parts {
		if p.half >= 0 {
			w := float64(p.count) / float64(nf)
			v += w * w * p.half * p.half
		}
	}
	return n, sum / float64(n), math.Sqrt(v)
}

// kernelSize is one measured size of a kernel family, pooled over its parts.
type kernelSize struct {
	params []float64 // in the family's parameter order
	flops  float64   // computation: the kernel's flops at this size
	parts  []kernelPart
	count  int64
	mean   float64
	half   float64 // -1: infinite
}

// label is the size as the key shows it: "128x128x64", or "8192 bytes on
// 4 ranks".
func (z *kernelSize) label(f *kernelFamily) string {
	if f.comm {
		ranks := " ranks"
		if z.params[1] == 1 {
			ranks = " rank"
		}
		return num(z.params[0]) + " bytes on " + num(z.params[1]) + ranks
	}
	var ds []string
	for _, v := range z.params {
		ds = append(ds, num(v))
	}
	return strings.Join(ds, "x")
}

// kernelFamily is a routine with its flags, or a communication routine,
// with its measured sizes.
type kernelFamily struct {
	name    string // "gemm[NT]", "isend"
	routine string // "gemm", "isend"
	comm    bool
	right   bool // trsm, trmm: side right (their flops depend on it)
	params  []string
	sizes   []*kernelSize // ordered by their parameters
}

// flopsFormula is the family's flop count in its parameters, as
// kernels.Signature.Flops counts.
func (f *kernelFamily) flopsFormula() string {
	switch f.routine {
	case "gemm":
		return "2*m*n*k"
	case "larfb":
		return "4*m*n*k"
	case "syrk":
		return "n*(n+1)*k"
	case "larft":
		return "n*k^2"
	case "trsm", "trmm":
		if f.right {
			return "m*n^2"
		}
		return "n*m^2"
	case "potrf", "trtri":
		return "n^3/3"
	case "geqrf":
		return "2*m*n^2-2*n^3/3 (m >= n)"
	}
	return "?"
}

// flopsAt is the family's flops at the given parameters.
func (f *kernelFamily) flopsAt(params []float64) float64 {
	r, err := kernels.ParseRoutine(f.routine)
	if err != nil {
		return math.NaN()
	}
	s := kernels.Signature{Routine: r}
	if f.right {
		s.Flags = kernels.FlagRight
	}
	d := func(i int) int32 { return int32(min(params[i], math.MaxInt32)) }
	switch len(f.params) {
	case 3:
		s.M, s.N, s.K = d(0), d(1), d(2)
	case 2:
		if f.params[0] == "m" {
			s.M, s.N = d(0), d(1)
		} else {
			s.N, s.K = d(0), d(1)
		}
	case 1:
		s.N = d(0)
	}
	return s.Flops()
}

// kernelData is the kernel statistics of some sweeps, pooled per family
// and size.
type kernelData struct {
	families []*kernelFamily // by name
	runs     int             // selective runs (kernel reports) read
	sweeps   []int           // the sweeps' IDs
	spins    bool            // spins were left out
	others   int             // kernels read from another rank than 0 (KernelsEvent.Others)
}

// routines lists the routines present, in order.
func (d *kernelData) routines() []string {
	var rs []string
	for _, f := range d.families {
		if !slices.Contains(rs, f.routine) {
			rs = append(rs, f.routine)
		}
	}
	return rs
}

// source says where the data come from: "sweep 3" or "sweeps 1, 2, 3".
func (d *kernelData) source() string {
	var ids []string
	for _, id := range d.sweeps {
		ids = append(ids, strconv.Itoa(id))
	}
	if len(ids) == 1 {
		return "sweep " + ids[0]
	}
	return "sweeps " + strings.Join(ids, ", ")
}

// carries reports whether the named policy keeps statistics from one
// configuration to the next.
func carries(name string) bool {
	p, err := policy.Lookup(name)
	if err != nil {
		return false
	}
	_, ok := p.(policy.Carrier)
	return ok
}

// collectKernels pools the kernel statistics of the sweeps.
func collectKernels(sws []*Sweep) *kernelData {
	d := &kernelData{}
	fams := map[string]*kernelFamily{}
	sizes := map[string]*kernelSize{}
	add := func(key string, p kernelPart) {
		if p.count <= 0 || !(p.mean > 0) || math.IsInf(p.mean, 0) {
			return
		}
		f, params, ok := parseKernelKey(key)
		if !ok {
			d.spins = d.spins || strings.HasPrefix(key, "spin")
			return
		}
		if fams[f.name] == nil {
			fams[f.name] = f
		}
		f = fams[f.name]
		id := f.name + " " + fmt.Sprint(params)
		z := sizes[id]
		if z == nil {
			z = &kernelSize{params: params}
			if !f.comm {
				z.flops = f.flopsAt(params)
			}
			sizes[id] = z
			f.sizes = append(f.sizes, z)
		}
		z.parts = append(z.parts, p)
	}
	for _, sw := range sws {
		if len(sw.Kernels) == 0 {
			continue
		}
		d.sweeps = append(d.sweeps, sw.ID)
		type track struct {
			policy    string
			tolerance float64
			rank      int
		}
		last := map[track]map[string]kernelPart{} // carrying tracks: each key's latest
		var order []track
		for _, ev := range sw.Kernels {
			d.runs++
			t := track{ev.Policy, ev.Tolerance, ev.Rank}
			// The kernels rank 0 has no samples of, as another rank
			// measured them, after its own.
			ks := slices.Clone(ev.Kernels)
			for _, o := range ev.Others {
				ks = append(ks, o.KernelStat)
				d.others++
			}
			if !carries(ev.Policy) {
				for _, k := range ks {
					add(k.Key, kernelPart{k.Count, k.MeanS, k.HalfS})
				}
				continue
			}
			if last[t] == nil {
				last[t] = map[string]kernelPart{}
				order = append(order, t)
			}
			for _, k := range ks {
				last[t][k.Key] = kernelPart{k.Count, k.MeanS, k.HalfS}
			}
		}
		for _, t := range order {
			keys := make([]string, 0, len(last[t]))
			for k := range last[t] {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				add(k, last[t][k])
			}
		}
	}
	for _, f := range fams {
		for _, z := range f.sizes {
			z.count, z.mean, z.half = pool(z.parts)
		}
		slices.SortFunc(f.sizes, func(a, b *kernelSize) int { return slices.Compare(a.params, b.params) })
		d.families = append(d.families, f)
	}
	slices.SortFunc(d.families, func(a, b *kernelFamily) int { return strings.Compare(a.name, b.name) })
	return d
}

// parseKernelKey reads a kernel key (selective.Key.String) into its family
// and sizes; false for a key without sizes (a spin) or one it does not know.
func parseKernelKey(key string) (*kernelFamily, []float64, bool) {
	if m := commKeyRe.FindStringSubmatch(key); m != nil {
		doubles, err1 := 0.0, error(nil) // a barrier moves none (it once said "0 doubles")
		if m[2] != "" {
			doubles, err1 = strconv.ParseFloat(m[2], 64)
		}
		p, err2 := strconv.ParseFloat(m[3], 64)
		if err1 != nil || err2 != nil {
			return nil, nil, false
		}
		return &kernelFamily{name: m[1], routine: m[1], comm: true, params: commParams}, []float64{8 * doubles, p}, true
	}
	m := compKeyRe.FindStringSubmatch(key)
	if m == nil {
		return nil, nil, false
	}
	names := routineParams(m[1])
	dims := strings.Split(m[3], "x")
	if names == nil || len(dims) != len(names) {
		return nil, nil, false
	}
	params := make([]float64, len(dims))
	for i, s := range dims {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, nil, false
		}
		params[i] = v
	}
	f := &kernelFamily{name: m[1], routine: m[1], params: names}
	if m[2] != "" {
		f.name += "[" + m[2] + "]"
		f.right = (m[1] == "trsm" || m[1] == "trmm") && m[2][0] == 'R'
	}
	return f, params, true
}

// modelPoint is one point a model is fitted to: the sizes of the family
// that have its coordinates, pooled.
type modelPoint struct {
	x     []float64
	sizes []*kernelSize
	parts []kernelPart
	count int64
	mean  float64
	half  float64
}

// kernelModel is a family's model and how it was made.
type kernelModel struct {
	fam    *kernelFamily
	vars   []string // the model's parameters
	use    []int    // their indices in the family's parameters; nil when via is set
	via    string   // "flops" or "bytes": the one derived size modelled, when the parameters vary together
	fixed  []string // "k = 64": family parameters constant at every size
	held   []string // "p = 4": parameters of two values, the model fitted at one of them (heldAt)
	heldAt map[int]float64
	why    string // why via was chosen
	// lines: via was chosen for want of lines along each parameter
	// (analysis.ErrNoLines), which notes(long) explains.
	lines bool
	// unused are parameters that vary but the model leaves out: the
	// search found none of its terms worth keeping along their lines.
	unused []string
	points []*modelPoint
	model  *analysis.Model
	err    error
}

// coords are the model's coordinates of a size of the family.
func (km *kernelModel) coords(params []float64) []float64 {
	switch km.via {
	case "flops":
		return []float64{km.fam.flopsAt(params)}
	case "bytes":
		return []float64{params[0]}
	}
	x := make([]float64, len(km.use))
	for i, l := range km.use {
		x[i] = params[l]
	}
	return x
}

// fitFamily models a family: it chooses the parameters (those that vary;
// one derived size when several vary but not along lines), pools the sizes
// that share their coordinates and runs the model search. The coordinates
// and points are set even when the fit fails (export extrap writes them).
func fitFamily(f *kernelFamily, hint string) *kernelModel {
	km := &kernelModel{fam: f}
	sizes := make([][]float64, len(f.sizes))
	for i, z := range f.sizes {
		sizes[i] = z.params
	}
	var constant []int
	whole := f // before a parameter of two values is held
	km.use, constant = analysis.ModelParams(sizes, len(f.params))
	if len(km.use) > 1 {
		if g := km.holdTwoValued(); g != nil {
			f = g
			km.fam = f
			sizes = sizes[:0]
			for _, z := range f.sizes {
				sizes = append(sizes, z.params)
			}
			km.use, constant = analysis.ModelParams(sizes, len(f.params))
		}
	}
	for _, l := range km.use {
		km.vars = append(km.vars, f.params[l])
	}
	km.fixed = fixedParams(f, constant, km.heldAt)
	km.group()
	if len(f.sizes) < minModelSizes {
		km.err = &fitError{family: f.name, few: len(f.sizes), hint: hint,
			text: fmt.Sprintf("%s has %d size%s; a fit needs at least %d", f.name, len(f.sizes), plural(len(f.sizes)), minModelSizes)}
		return km
	}
	err := km.fit()
	if len(km.use) < 2 {
		return km
	}
	if err == nil {
		return km.orDerived(whole)
	}
	if !errors.Is(err, analysis.ErrNoLines) {
		return km
	}
	// Several parameters, no lines to tell them apart by: one derived size.
	km.why, km.lines = strings.Join(km.vars, ", ")+" vary together", true
	if alone := km.linesAlone(f.sizes); len(alone) > 0 {
		// Some do vary alone: 512x512x{32,64,128} and 1024x256x{...}
		// had read "m, n, k vary together", k varying on its own.
		var not []string
		for _, v := range km.vars {
			if !slices.Contains(alone, v) {
				not = append(not, v)
			}
		}
		vary, them, does := "vary", "one of them", "do"
		if len(not) == 1 {
			vary, them = "varies", "it"
		}
		if len(alone) == 1 {
			does = "does"
		}
		km.why = fmt.Sprintf("%s never %s alone (no 3 sizes differ in %s only; %s %s)", strings.Join(not, ", "), vary, them, strings.Join(alone, ", "), does)
	}
	km.derive()
	if len(km.points) < minModelSizes {
		km.err = &fitError{family: f.name, hint: hint, text: fmt.Sprintf("%s: %s, and its %d sizes have %d distinct %s; a fit needs at least %d",
			f.name, km.why, len(f.sizes), len(km.points), km.via, minModelSizes)}
		return km
	}
	km.fit()
	return km
}

// fixedParams are the notes of f's parameters constant at every size
// ("k = 64"), of their indices constant, but those held at one value.
func fixedParams(f *kernelFamily, constant []int, heldAt map[int]float64) []string {
	var fixed []string
	for _, l := range constant {
		if _, held := heldAt[l]; len(f.sizes) > 1 && !held {
			fixed = append(fixed, f.params[l]+" = "+num(f.sizes[0].params[l]))
		}
	}
	return fixed
}

// pointCount says how many points the model is fitted to: "20 sizes", or
// where sizes share their coordinates (two gemms of one flops count),
// "19 points (20 sizes)" (a review had counted 20 rows under "19 sizes").
func (km *kernelModel) pointCount() string {
	if n := len(km.fam.sizes); n != len(km.points) {
		return fmt.Sprintf("%d points (%d sizes)", len(km.points), n)
	}
	return format.Count(len(km.points), "size", "sizes")
}

// derive makes km a model of the family's one derived size: its flops,
// or a communication's bytes.
func (km *kernelModel) derive() {
	km.via, km.use, km.vars = "flops", nil, []string{"flops"}
	if km.fam.comm {
		km.via, km.vars = "bytes", []string{"bytes"}
	}
	km.group()
}

// orDerived is km, a model the multi-parameter search fitted, or the
// model of the derived size where km leaves out a parameter that varies
// and the derived size's model misses the sizes by less, left out one at
// a time (CVSMAPE, the search's own criterion). qr2d's gemm, m, n and k
// varying along lines of a few sizes each, had been modelled in k alone,
// the constant winning along m's and n's short lines: 106% SMAPE, most
// sizes missed by 50-91%, where its flops fit them.
func (km *kernelModel) orDerived(whole *kernelFamily) *kernelModel {
	used := map[int]bool{}
	for _, t := range km.model.Terms {
		for _, f := range t.Factors {
			used[f.Param] = true
		}
	}
	var unused []string
	for i, v := range km.vars {
		if !used[i] {
			unused = append(unused, v)
		}
	}
	if len(unused) == 0 {
		return km
	}
	km.unused = unused
	alt := *km
	// Every size: the flops take a parameter of two values as they come
	// (one held had refused the others' predictions).
	alt.fam, alt.unused, alt.held, alt.heldAt = whole, nil, nil, nil
	sizes := make([][]float64, len(whole.sizes))
	for i, z := range whole.sizes {
		sizes[i] = z.params
	}
	_, constant := analysis.ModelParams(sizes, len(whole.params))
	alt.fixed = fixedParams(whole, constant, nil)
	alt.derive()
	if len(alt.points) < minModelSizes || alt.fit() != nil || !(alt.model.CVSMAPE < km.model.CVSMAPE) {
		return km
	}
	its, it := pronouns(len(unused))
	alt.why = fmt.Sprintf("the search in %s kept no term in %s (along %s lines, the others fixed, %s made no difference it could fit) and missed the sizes by %.0f%% (SMAPE, each left out of the fit), %s by %.0f%%",
		strings.Join(km.vars, ", "), strings.Join(unused, ", "), its, it, km.model.CVSMAPE, alt.via, alt.model.CVSMAPE)
	return &alt
}

// pronouns are the possessive and the subject for n parameters: its and
// it, or their and they.
func pronouns(n int) (string, string) {
	if n == 1 {
		return "its", "it"
	}
	return "their", "they"
}

// holdTwoValued returns the family at one value of each of its parameters
// that take two (a fit along a parameter needs three), the value most of
// its sizes have, the larger on a tie; nil when none has two. Pooled
// instead into one derived size, an allreduce measured at 5 sizes on 2
// and on 4 ranks had been modelled with p ignored, missing each p by up
// to 250%, and said p and the bytes "vary together" (a review).
func (km *kernelModel) holdTwoValued() *kernelFamily {
	f := km.fam
	sizes := f.sizes
	for _, l := range km.use {
		count := map[float64]int{}
		for _, z := range sizes {
			count[z.params[l]]++
		}
		if len(count) != 2 || !alongOnly(sizes, l) {
			continue
		}
		var v float64
		n := -1
		for val, c := range count {
			if c > n || (c == n && val > v) {
				v, n = val, c
			}
		}
		var others []string
		for val := range count {
			if val != v {
				others = append(others, num(val))
			}
		}
		sizes = slices.DeleteFunc(slices.Clone(sizes), func(z *kernelSize) bool { return z.params[l] != v })
		if km.heldAt == nil {
			km.heldAt = map[int]float64{}
		}
		km.heldAt[l] = v
		km.held = append(km.held, fmt.Sprintf("%s = %s (%s takes two values, and a fit along one needs three: the sizes at %s=%s are left out)",
			f.params[l], num(v), f.params[l], f.params[l], strings.Join(others, ",")))
	}
	if km.heldAt == nil {
		return nil
	}
	g := *f
	g.sizes = sizes
	return &g
}

// linesAlone are the model's parameters (km.use, by name) along which 3
// sizes or more differ with the others fixed: those the multi-parameter
// search can fit.
func (km *kernelModel) linesAlone(sizes []*kernelSize) []string {
	var alone []string
	for k, l := range km.use {
		values := map[string]map[float64]bool{}
		for _, z := range sizes {
			rest := slices.Clone(z.params)
			rest[l] = 0
			key := fmt.Sprint(rest)
			if values[key] == nil {
				values[key] = map[float64]bool{}
			}
			values[key][z.params[l]] = true
		}
		for _, vs := range values {
			if len(vs) >= 3 {
				alone = append(alone, km.vars[k])
				break
			}
		}
	}
	return alone
}

// alongOnly reports whether some two of sizes differ in parameter l alone:
// l then varies apart from the others (p of an allreduce measured at the
// same bytes on 2 and 4 ranks), where sizes that differ in every
// parameter at once (gemm 64x64x64 and 128x128x128) vary together.
func alongOnly(sizes []*kernelSize, l int) bool {
	seen := map[string]float64{}
	for _, z := range sizes {
		rest := slices.Clone(z.params)
		rest[l] = 0
		k := fmt.Sprint(rest)
		if v, ok := seen[k]; ok && v != z.params[l] {
			return true
		}
		seen[k] = z.params[l]
	}
	return false
}

// group makes the model's points: the sizes pooled by their coordinates.
func (km *kernelModel) group() {
	km.points = nil
	byX := map[string]*modelPoint{}
	for _, z := range km.fam.sizes {
		x := km.coords(z.params)
		id := fmt.Sprint(x)
		p := byX[id]
		if p == nil {
			p = &modelPoint{x: x}
			byX[id] = p
			km.points = append(km.points, p)
		}
		p.sizes = append(p.sizes, z)
		p.parts = append(p.parts, z.parts...)
	}
	for _, p := range km.points {
		p.count, p.mean, p.half = pool(p.parts)
	}
	slices.SortFunc(km.points, func(a, b *modelPoint) int { return slices.Compare(a.x, b.x) })
}

// fit runs the model search on the points.
func (km *kernelModel) fit() error {
	if len(km.points) < minModelSizes {
		km.err = fmt.Errorf("%s has %d distinct sizes in %s; a fit needs at least %d", km.fam.name, len(km.points), strings.Join(km.vars, ", "), minModelSizes)
		return km.err
	}
	pts := make([]analysis.Point, len(km.points))
	for i, p := range km.points {
		pts[i] = analysis.Point{Params: p.x, Value: p.mean}
	}
	m, err := analysis.FitModel(km.vars, pts)
	if err != nil {
		km.err = fmt.Errorf("%s: %w", km.fam.name, err)
		return km.err
	}
	km.model, km.err = m, nil
	return nil
}

// formula is the model as "t(flops) = ...".
func (km *kernelModel) formula() string {
	return fmt.Sprintf("t(%s) = %s", strings.Join(km.vars, ", "), km.model.String())
}

// notes say what the model's parameters are: the constant ones and the
// derived size (long: why).
func (km *kernelModel) notes(long bool) []string {
	var ns []string
	why := km.why
	if long && km.lines {
		why += fmt.Sprintf(" (at %d sizes, no 3 along one parameter with the others fixed, which the multi-parameter search needs)", len(km.fam.sizes))
	}
	if len(km.unused) > 0 {
		its, it := pronouns(len(km.unused))
		ns = append(ns, fmt.Sprintf("no term in %s: along %s lines (the other parameters fixed) %s made no difference the search could fit, and the model is constant in %s", strings.Join(km.unused, ", "), its, it, strings.Join(km.unused, ", ")))
	}
	if km.via == "flops" {
		ns = append(ns, why+": modelled against flops = "+km.fam.flopsFormula())
	} else if km.via == "bytes" {
		ns = append(ns, why+": modelled against the message bytes alone, p ignored")
	}
	if len(km.fixed) > 0 {
		ns = append(ns, "constant at every measured size, so no parameter of the model: "+strings.Join(km.fixed, ", "))
	}
	if len(km.held) > 0 {
		ns = append(ns, "modelled at "+strings.Join(km.held, "; "))
	}
	if n := km.restsOn(); n != "" {
		ns = append(ns, n)
	}
	return ns
}

// restsOn says when the model misses measured sizes by more than half,
// fitted with them (sizes that stand apart from it: outliers, or where the
// kernel behaves otherwise), or rests on one: the same model fitted
// without it misses it by more than half (a review's isend, six sizes at
// 0.7 µs and a noisy 1.72 µs ± 1.47 at the largest, got a
// bytes³·log2(bytes)² term predicting 4 ms at 4 MB). "" when neither.
// Several sizes missed are counted, the worst named: one had been named
// as "an outlier" beside three others missed as far.
func (km *kernelModel) restsOn() string {
	m := km.model
	if m == nil || len(m.Terms) == 0 || len(m.LOO) != len(km.points) {
		return ""
	}
	at := func(p *modelPoint) string {
		at := make([]string, len(p.x))
		for i, v := range p.x {
			at[i] = km.vars[i] + "=" + num(v)
		}
		return strings.Join(at, " ")
	}
	// worstMiss is the point pred misses most by more than half (-1:
	// none), and how many it misses so.
	worstMiss := func(pred func(i int) float64) (worst, missed int) {
		worst, most := -1, 0.5
		for i, p := range km.points {
			if r := math.Abs(pred(i)-p.mean) / p.mean; p.mean > 0 && r > 0.5 {
				missed++
				if r > most {
					worst, most = i, r
				}
			}
		}
		return worst, missed
	}
	worst, missed := worstMiss(func(i int) float64 { return m.Predict(km.points[i].x) })
	if missed > 1 {
		p := km.points[worst]
		return fmt.Sprintf("the model misses %d of its %d sizes by more than half, the most at %s: it predicts %s there, against the %s measured; the kernel behaves otherwise at these sizes, or its times there are noisy (more samples tell which)",
			missed, len(km.points), at(p), plots.Duration(m.Predict(p.x)), plots.Duration(p.mean))
	}
	if missed == 1 {
		// The model misses the size with it as without it: the size
		// does not carry the model, it stands apart from it (it had
		// been said to carry it, a review's allreduce at 437 µs against
		// 83 µs from the model fitted with it).
		p := km.points[worst]
		return fmt.Sprintf("the model misses one size by more than half, %s: it predicts %s there, against the %s measured; an outlier, or a size where the kernel behaves otherwise (more samples there tell which)",
			at(p), plots.Duration(m.Predict(p.x)), plots.Duration(p.mean))
	}
	if worst, _ = worstMiss(func(i int) float64 { return m.LOO[i] }); worst < 0 {
		return ""
	}
	p := km.points[worst]
	return fmt.Sprintf("the model rests on one size, %s: fitted without it, it predicts %s there, against the %s measured; read its predictions away from the measured sizes with care",
		at(p), plots.Duration(m.LOO[worst]), plots.Duration(p.mean))
}

// sizeHints say what to do for more sizes of a family: the sweep's
// (sizeHint), and add sweeps=all where the session's sweeps with kernel
// statistics, pooled, have more sizes of the family than the data read:
// a fit refused for too few sizes had said only to sweep more, where the
// session's other sweeps had them (a review), and had then said
// sweeps=all of a routine only the last sweep ran (trmm, whose 4 sizes
// sweeps=all left at 4).
type sizeHints struct {
	base   string
	sweeps int            // the session's sweeps with kernel statistics
	pooled map[string]int // each family's sizes over them; nil: sweeps=all given
}

// newSizeHints are the hints for data of sws, the last one's block sizes,
// of a session whose sweeps are all (nil when sweeps=all is given).
func newSizeHints(sws, all []*Sweep) sizeHints {
	h := sizeHints{base: sizeHint(sws[len(sws)-1])}
	var with []*Sweep
	for _, x := range all {
		if len(x.Kernels) > 0 {
			with = append(with, x)
		}
	}
	if len(with) < 2 {
		return h
	}
	h.sweeps, h.pooled = len(with), map[string]int{}
	for _, f := range collectKernels(with).families {
		h.pooled[f.name] = len(f.sizes)
	}
	return h
}

// For is the hint for family f.
func (h sizeHints) For(f *kernelFamily) string {
	if h.pooled[f.name] <= len(f.sizes) {
		return h.base
	}
	return fmt.Sprintf("%s; or add sweeps=all, which pools the sizes of the session's %d sweeps with kernel statistics", h.base, h.sweeps)
}

// sizeHint is what to do for more sizes: for a sweep with a block size b,
// the block sizes to try, those it swept with one more below and above
// (the next powers of two, below n). The sizes are rank 0's kernels and
// the computation kernels only other ranks ran (KernelsEvent.Others); a
// journal older than those has rank 0's alone, and says so.
func sizeHint(sw *Sweep) string {
	whose := ""
	if sw != nil && len(sw.Kernels) > 0 && !slices.ContainsFunc(sw.Kernels, func(k sweep.KernelsEvent) bool { return k.Others != nil }) {
		whose = " (the sizes are rank 0's: one only other ranks ran is not among them)"
	}
	if sw == nil || len(sw.Configs) == 0 {
		return "sweep more of the sizes the kernels' dimensions follow" + whose
	}
	if _, ok := sw.Configs[0].Value("b"); !ok {
		return "sweep more of the sizes the kernels' dimensions follow" + whose
	}
	var bs []int
	n := 0
	for _, c := range sw.Configs {
		if v, ok := c.Value("b"); ok {
			if b, ok := v.(int); ok && !slices.Contains(bs, b) {
				bs = append(bs, b)
			}
		}
		if v, ok := c.Value("n"); ok {
			if x, ok := v.(int); ok {
				n = max(n, x)
			}
		}
	}
	if len(bs) == 0 {
		return "sweep more block sizes, e.g. space b=32,64,128,256,512" + whose
	}
	slices.Sort(bs)
	// One more below and above, then more until a fit has enough.
	for added := 0; ; added++ {
		lo, hi := 1, 1
		for lo*2 < bs[0] {
			lo *= 2
		}
		for hi <= bs[len(bs)-1] {
			hi *= 2
		}
		grew := false
		if lo < bs[0] && lo >= 8 {
			bs, grew = append([]int{lo}, bs...), true
		}
		if n == 0 || hi < n {
			bs, grew = append(bs, hi), true
		}
		if !grew || (added > 0 && len(bs) >= minModelSizes) {
			break
		}
	}
	words := make([]string, len(bs))
	for i, b := range bs {
		words[i] = strconv.Itoa(b)
	}
	return "sweep more block sizes, e.g. space b=" + strings.Join(words, ",") + whose
}

// num writes a size: whole numbers in full, others to 4 digits.
func num(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// modelSweeps are the sweeps a model command reads: the last one, or with
// sweeps=all every sweep of the session with kernel statistics.
func modelSweeps(s *Session, c *Command, all bool, out Output) ([]*Sweep, error) {
	if all {
		out = nil // every sweep is read: no word of which is the last
	}
	sw, err := lastSweep(s, c, out)
	if err != nil {
		return nil, err
	}
	if !all {
		if len(sw.Kernels) == 0 {
			return nil, errAt(c.VerbCol, "sweep %d has no kernel statistics: kernel models need the selective runs of evaluate or tune (a reference sweep has none)", sw.ID)
		}
		return []*Sweep{sw}, nil
	}
	// A sweep loaded more than once ('load ... sweep=N' makes it the last
	// again) counts once: its copies would add the same samples twice and
	// narrow the intervals with no new data.
	var sws []*Sweep
	origins := map[string]bool{}
	for _, x := range s.sweeps {
		if len(x.Kernels) == 0 || origins[x.origin] {
			continue
		}
		if x.origin != "" {
			origins[x.origin] = true
		}
		sws = append(sws, x)
	}
	if len(sws) == 0 {
		return nil, errAt(c.VerbCol, "no sweep of this session has kernel statistics: kernel models need the selective runs of evaluate or tune")
	}
	return sws, nil
}

// selectFamilies are the families a word names: a family ("gemm[NT]") or
// every family of a routine ("gemm").
func selectFamilies(d *kernelData, word string) ([]*kernelFamily, error) {
	w := strings.ToLower(word)
	var fs []*kernelFamily
	for _, f := range d.families {
		if strings.ToLower(f.name) == w || f.routine == w {
			fs = append(fs, f)
		}
	}
	if len(fs) > 0 {
		return fs, nil
	}
	if w == "spin" {
		return nil, fmt.Errorf("spin, the synthetic workload's kernel, has no size to model")
	}
	var names []string
	for _, f := range d.families {
		names = append(names, f.name)
	}
	return nil, fmt.Errorf("no kernel %q in %s: the routines are %s (families %s)", word, d.source(), strings.Join(d.routines(), ", "), strings.Join(names, ", "))
}

// cmdModel is 'model [ROUTINE [PARAM=SIZE ...]] [sweeps=all]'.
func cmdModel(s *Session, ctx context.Context, c *Command, out Output) error {
	var word *Arg
	all := false
	var given []Arg
	for i := range c.Args {
		a := c.Args[i]
		switch {
		case a.Key == "" && word == nil:
			word = &c.Args[i]
		case a.Key == "":
			return errAt(a.Col, "one routine only: model [ROUTINE [PARAM=SIZE ...]] (e.g. model gemm m=512 n=512 k=512)")
		case a.Key == "sweeps":
			if a.Value != "all" && a.Value != "last" {
				return errAt(a.ValueCol, "sweeps= takes all or last, not %q", a.Value)
			}
			all = a.Value == "all"
		case word == nil:
			return errAt(a.Col, "name the routine first: model ROUTINE %s (e.g. model gemm m=512 n=512 k=512)", a)
		default:
			given = append(given, a)
		}
	}
	sws, err := modelSweeps(s, c, all, out)
	if err != nil {
		return err
	}
	d := collectKernels(sws)
	var every []*Sweep // the session's, for a hint of sweeps=all
	if !all {
		every = s.sweeps
	}
	hints := newSizeHints(sws, every)
	if len(d.families) == 0 {
		why := "its kernels have no sizes"
		if d.spins {
			why = "the synthetic workload's spins have no size to model"
		}
		return errAt(c.VerbCol, "no kernel to model in %s: %s", d.source(), why)
	}
	if word == nil {
		text, err := modelTable(d, hints)
		if text != "" {
			out.Print(text)
		}
		if err != nil {
			return errAt(c.VerbCol, "%v", err)
		}
		return nil
	}
	fs, err := selectFamilies(d, word.Value)
	if err != nil {
		return errAt(word.Col, "%v", err)
	}
	if len(given) > 0 {
		if err := checkModelParams(fs[0], word.Value, given); err != nil {
			return err
		}
	}
	var b strings.Builder
	var errs []error
	for _, f := range fs {
		km := fitFamily(f, hints.For(f))
		if km.err != nil {
			errs = append(errs, km.err)
			continue
		}
		if len(given) > 0 {
			err = modelPrediction(&b, km, given)
		} else {
			modelDetail(&b, km, d)
		}
		if err != nil {
			return err
		}
	}
	if b.Len() == 0 {
		return errAt(word.Col, "%s", joinNotModelled(errs))
	}
	writeNotModelled(&b, errs)
	out.Print(strings.TrimRight(b.String(), "\n"))
	return nil
}

// fitError is why a family has no model. What to sweep so that it has
// one (the hint) is kept apart, so that a list of them says it once (said
// on every line, "sweep more block sizes, e.g. ..." had been repeated six
// times); a family short of sizes keeps how many it has, so that families
// short alike are named together.
type fitError struct {
	family string
	text   string // the reason, the family's name first
	hint   string // what to sweep, or ""
	few    int    // the sizes of a family that has too few, else 0
}

func (e *fitError) Error() string {
	if e.hint == "" {
		return e.text
	}
	return e.text + ": " + e.hint
}

// notModelledLines are errs as lines, and the hint they end with, said
// once: with several errors it is cut from each and returned (one error
// keeps its own). Families with the same too few sizes are one line:
// "gemm[NT], potrf[L] and trsm[RLTN] have 1 size each; a fit needs at
// least 5" (a cancelled sweep's six families had said it six times).
func notModelledLines(errs []error) (lines []string, hint string) {
	several := len(errs) > 1
	slot := map[int]int{}       // a count of too few sizes: its line
	names := map[int][]string{} // and the families that have it
	var hinted, pooled []string // the families with a hint; those sweeps=all has more sizes of (sizeHints.For)
	for _, err := range errs {
		var fe *fitError
		if !several || !errors.As(err, &fe) {
			lines = append(lines, err.Error())
			continue
		}
		if fe.hint != "" {
			hinted = append(hinted, fe.family)
			if len(fe.hint) > len(hint) {
				hint = fe.hint
			}
			if strings.Contains(fe.hint, "sweeps=all") {
				pooled = append(pooled, fe.family)
			}
		}
		if fe.few == 0 {
			lines = append(lines, fe.text)
			continue
		}
		if _, ok := slot[fe.few]; !ok {
			slot[fe.few] = len(lines)
			lines = append(lines, "")
		}
		names[fe.few] = append(names[fe.few], fe.family)
	}
	for c, i := range slot {
		ns := names[c]
		if len(ns) == 1 {
			lines[i] = fmt.Sprintf("%s has %d size%s; a fit needs at least %d", ns[0], c, plural(c), minModelSizes)
			continue
		}
		list := strings.Join(ns[:len(ns)-1], ", ") + " and " + ns[len(ns)-1]
		lines[i] = fmt.Sprintf("%s have %d size%s each; a fit needs at least %d", list, c, plural(c), minModelSizes)
	}
	if len(pooled) > 0 && len(pooled) < len(hinted) {
		// sweeps=all helps some: named, where it had read as help for
		// every family (a review's trmm, in the last sweep alone).
		hint += " (more sizes of " + strings.Join(pooled, ", ") + ")"
	}
	return lines, hint
}

// joinNotModelled is errs on one line, the hint they end with once, at
// the end.
func joinNotModelled(errs []error) string {
	lines, hint := notModelledLines(errs)
	if hint != "" {
		return strings.Join(lines, "; ") + "; to model them: " + hint
	}
	return strings.Join(lines, "; ")
}

// writeNotModelled lists the families that could not be modelled, a line
// each, then the hint they end with once.
func writeNotModelled(b *strings.Builder, errs []error) {
	lines, hint := notModelledLines(errs)
	for _, l := range lines {
		b.WriteString("not modelled: " + l + "\n")
	}
	if hint != "" {
		b.WriteString("to model them: " + hint + "\n")
	}
}

// modelTable is 'model' alone: a line per family.
func modelTable(d *kernelData, hints sizeHints) (string, error) {
	var b strings.Builder
	whose := "rank 0's"
	if d.others > 0 {
		whose = "rank 0's (another rank's for a kernel rank 0 has no samples of)"
	}
	fmt.Fprintf(&b, "kernel models of %s: %s mean time per call against size, %s pooled\n", d.source(), whose, format.Count(d.runs, "selective run", "selective runs"))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "family\tsizes\tSMAPE\tadj R²\tmodel (t in seconds)")
	var fails []error
	var notes []string
	fitted := 0
	for _, f := range d.families {
		km := fitFamily(f, hints.For(f))
		if km.err != nil {
			fails = append(fails, km.err)
			continue
		}
		fitted++
		fmt.Fprintf(tw, "%s\t%d\t%.1f%%\t%.4f\t%s\n", f.name, len(km.points), km.model.SMAPE, km.model.AR2, km.formula())
		for _, n := range km.notes(false) {
			notes = append(notes, f.name+": "+n)
		}
	}
	tw.Flush()
	for _, n := range notes {
		b.WriteString(n + "\n")
	}
	writeNotModelled(&b, fails)
	if d.spins {
		b.WriteString("left out: spin, the synthetic workload's kernel, has no size\n")
	}
	if fitted == 0 {
		return "", errors.New(joinNotModelled(fails))
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

// modelDetail is 'model ROUTINE' for one family: the model, then each
// measured size against it.
func modelDetail(b *strings.Builder, km *kernelModel, d *kernelData) {
	m := km.model
	fmt.Fprintf(b, "%s: %s   (t in seconds)\n", km.fam.name, km.formula())
	fmt.Fprintf(b, "  SMAPE %.1f%% (leave-one-out %.1f%%), adjusted R² %.4f, %s of %s\n", m.SMAPE, m.CVSMAPE, m.AR2, km.pointCount(), d.source())
	for _, n := range km.notes(true) {
		b.WriteString("  " + n + "\n")
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "size\t"
	if km.via != "" {
		head += km.via + "\t"
	}
	fmt.Fprintln(tw, head+"samples\tmean\t95% interval\tmodel\t95% band\tmodel vs mean\t")
	floored := 0 // sizes whose band's lower end was cut at zero
	for _, p := range km.points {
		for _, z := range p.sizes {
			row := z.label(km.fam) + "\t"
			if km.via != "" {
				row += num(p.x[0]) + "\t"
			}
			half := "-"
			if z.half >= 0 {
				half = "±" + plots.Duration(z.half)
			}
			pred, lo, hi := timeBand(m, p.x)
			if lo == 0 && pred > 0 {
				floored++
			}
			fmt.Fprintf(tw, "%s%d\t%s\t%s\t%s\t%s .. %s\t%+.1f%%\t\n", row, z.count, plots.Duration(z.mean), half,
				plots.Duration(pred), plots.Duration(lo), plots.Duration(hi), 100*(pred/z.mean-1))
		}
	}
	tw.Flush()
	if floored > 0 {
		// A band from 0 read as a lower bound the model knew.
		fmt.Fprintf(b, "  (a band from 0: its lower end lies below zero, cut there; the model is as uncertain as its prediction at %s: more samples or sizes narrow it)\n",
			format.Count(floored, "size", "sizes"))
	}
}

// checkModelParams checks the PARAM=SIZE words against the family's
// parameters.
func checkModelParams(f *kernelFamily, word string, given []Arg) error {
	for _, a := range given { // each once: onceEach
		if !slices.Contains(f.params, a.Key) {
			return errAt(a.Col, "%s has no parameter %q: its parameters are %s", word, a.Key, strings.Join(f.params, ", "))
		}
		if v, err := strconv.ParseFloat(a.Value, 64); err != nil || !(v > 0) || math.IsInf(v, 0) {
			return errAt(a.ValueCol, "%s=%s: want a positive number", a.Key, a.Value)
		}
	}
	return nil
}

// modelPrediction is 'model ROUTINE PARAM=SIZE ...' for one family: the
// prediction with its band at the given size. Parameters the model does
// not depend on may be left out.
func modelPrediction(b *strings.Builder, km *kernelModel, given []Arg) error {
	f := km.fam
	params := make([]float64, len(f.params))
	have := make([]bool, len(f.params))
	for _, a := range given {
		l := slices.Index(f.params, a.Key)
		params[l], _ = strconv.ParseFloat(a.Value, 64)
		have[l] = true
	}
	need := km.use
	if km.via == "flops" {
		need = nil
		for l := range f.params {
			need = append(need, l)
		}
	} else if km.via == "bytes" {
		need = []int{0}
	}
	var missing, words []string
	for _, l := range need {
		if !have[l] {
			missing = append(missing, f.params[l]+"=")
		}
	}
	if len(missing) > 0 {
		col := given[len(given)-1].Col
		return errAt(col, "%s's model needs %s: give %s", f.name, strings.Join(km.vars, ", "), strings.Join(missing, " "))
	}
	for l, name := range f.params {
		if have[l] {
			words = append(words, name+"="+num(params[l]))
		}
	}
	// A size the model does not depend on because it never varied cannot
	// be moved: at m=512 a gemm model fitted with m=256 throughout
	// answered a quarter of the time with a confident band.
	for _, a := range given {
		l := slices.Index(f.params, a.Key)
		if v, held := km.heldAt[l]; held && v != params[l] {
			return errAt(a.Col, "%s's model is of %s=%s alone (%s took two values, and a fit along one needs three): give %s=%s, or measure a third %s", f.name, a.Key, num(v), a.Key, a.Key, num(v), a.Key)
		}
		if was := f.sizes[0].params[l]; !slices.Contains(need, l) && was != params[l] {
			return errAt(a.Col, "%s: %s was %s at every measured size, so the model cannot tell what %s=%s costs: give %s=%s, or measure sizes where %s varies", f.name, a.Key, num(was), a.Key, a.Value, a.Key, num(was), a.Key)
		}
	}
	x := km.coords(params)
	pred, lo, hi := timeBand(km.model, x)
	fmt.Fprintf(b, "%s at %s", f.name, strings.Join(words, " "))
	if km.via != "" {
		fmt.Fprintf(b, " (%s %s)", km.via, num(x[0]))
	}
	if !(pred > 0) {
		// A time is positive: the model does not hold here (it had
		// printed -2.86 µs, band -7.31 µs .. 1.6 µs).
		fmt.Fprintf(b, ": no time: the model gives %s, at or below zero, so it does not hold at this size   [%s]\n", plots.Duration(km.model.Predict(x)), km.formula())
	} else {
		fmt.Fprintf(b, ": %s, 95%% prediction band %s .. %s   [%s]\n", plots.Duration(pred), plots.Duration(lo), plots.Duration(hi), km.formula())
	}
	for _, p := range km.points {
		if slices.Equal(p.x, x) {
			half := ""
			if p.half >= 0 {
				half = " ± " + plots.Duration(p.half)
			}
			fmt.Fprintf(b, "  measured there: %s%s (%s)\n", plots.Duration(p.mean), half, format.Count(int(p.count), "sample", "samples"))
		}
	}
	for i, v := range x {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, p := range km.points {
			lo, hi = math.Min(lo, p.x[i]), math.Max(hi, p.x[i])
		}
		if v < lo || v > hi {
			fmt.Fprintf(b, "  an extrapolation: the measured %s run from %s to %s\n", km.vars[i], num(lo), num(hi))
		}
	}
	return nil
}

// modelFigure draws 'plot model ROUTINE': each family's measured means
// with their intervals against size, its model and prediction band.
func modelFigure(sw *Sweep, o FigureOptions, sum *strings.Builder) (*plot.Plot, error) {
	sws := o.modelSweeps
	if sws == nil {
		if len(sw.Kernels) == 0 {
			return nil, fmt.Errorf("sweep %d has no kernel statistics: kernel models need the selective runs of evaluate or tune", sw.ID)
		}
		sws = []*Sweep{sw}
	}
	d := collectKernels(sws)
	if len(d.families) == 0 {
		return nil, fmt.Errorf("no kernel to model in %s: its kernels have no sizes", d.source())
	}
	if o.Routine == "" {
		return nil, fmt.Errorf("plot model takes a routine: plot model ROUTINE [FILE], ROUTINE one of %s", strings.Join(d.routines(), ", "))
	}
	fs, err := selectFamilies(d, o.Routine)
	if err != nil {
		return nil, err
	}
	var series []plots.ModelSeries
	var errs []error
	xLabel := ""
	var every []*Sweep // the session's, for a hint of sweeps=all
	if o.modelSweeps == nil {
		every = o.sessionSweeps
	}
	hints := newSizeHints(sws, every)
	for _, f := range fs {
		km := fitFamily(f, hints.For(f))
		if km.err != nil {
			errs = append(errs, km.err)
			continue
		}
		s, label := modelSeries(km)
		if xLabel != "" && label != xLabel {
			fmt.Fprintf(sum, "%s left out: its x axis is %s\n", f.name, label)
			continue
		}
		xLabel = label
		if len(fs) > 1 {
			s.Label, s.ModelLabel = f.name+" measured", f.name+" model"
		}
		series = append(series, s)
		fmt.Fprintf(sum, "%s: %s (SMAPE %.1f%%, adjusted R² %.4f, %s)\n", f.name, km.formula(), km.model.SMAPE, km.model.AR2, km.pointCount())
		for _, n := range km.notes(false) {
			fmt.Fprintf(sum, "  %s\n", n)
		}
	}
	writeNotModelled(sum, errs)
	if len(series) == 0 {
		return nil, errors.New(joinNotModelled(errs))
	}
	name := fs[0].name
	if len(fs) > 1 {
		name = fs[0].routine
	}
	return plots.Model(fmt.Sprintf("Performance model of %s, %s", name, d.source()), xLabel, series)
}

// modelSeries is a fitted family's series of a model figure and its x
// axis' label. A model of one parameter is drawn as a curve along it; one
// of several at the measured sizes, placed by their flops (bytes for a
// communication).
func modelSeries(km *kernelModel) (plots.ModelSeries, string) {
	m := km.model
	s := plots.ModelSeries{Label: "measured mean (95% interval)", ModelLabel: "model " + m.String() + " (95% band)"}
	interval := func(mean, half float64) (float64, float64) {
		if half < 0 {
			return math.NaN(), math.NaN()
		}
		return mean - half, mean + half
	}
	if len(km.vars) == 1 {
		lo, hi := km.points[0].x[0], km.points[len(km.points)-1].x[0]
		for _, p := range km.points {
			l, h := interval(p.mean, p.half)
			s.Points = append(s.Points, plots.ModelPoint{X: p.x[0], Mean: p.mean, Lo: l, Hi: h})
		}
		const n = 80
		for i := range n + 1 {
			x := lo / 1.25 * math.Pow(1.25*1.25*hi/lo, float64(i)/n)
			y, bl, bh := timeBand(m, []float64{x})
			if !(y > 0) { // no time: the curve stops where the model does not hold
				continue
			}
			s.Curve = append(s.Curve, plots.ModelValue{X: x, Y: y, Lo: bl, Hi: bh})
		}
		label := km.vars[0]
		switch km.via {
		case "flops":
			label = fmt.Sprintf("flops = %s (%s vary together)", km.fam.flopsFormula(), strings.Join(km.fam.params, ", "))
			if !km.lines {
				// The search's model left a parameter out: the flops
				// fit better (orDerived), not a tile's b x b x b.
				label = fmt.Sprintf("flops = %s (they fit the sizes better than %s apart)", km.fam.flopsFormula(), strings.Join(km.fam.params, ", "))
			}
		case "bytes":
			label = "message bytes per process (p ignored: bytes and p vary together)"
			if !km.lines {
				label = "message bytes per process (p ignored: they fit the sizes better)"
			}
		default:
			if km.fam.comm && label == "bytes" {
				label = "message bytes per process"
			} else if km.fam.comm {
				label = "communicator size p"
			}
		}
		if len(km.fixed) > 0 {
			label += "; " + strings.Join(km.fixed, ", ")
		}
		return s, label
	}
	for _, p := range km.points {
		x := p.sizes[0].flops
		if km.fam.comm {
			x = p.sizes[0].params[0]
		}
		l, h := interval(p.mean, p.half)
		s.Points = append(s.Points, plots.ModelPoint{X: x, Mean: p.mean, Lo: l, Hi: h})
		y, bl, bh := timeBand(m, p.x)
		s.AtPoints = append(s.AtPoints, plots.ModelValue{X: x, Y: y, Lo: bl, Hi: bh})
	}
	if km.fam.comm {
		return s, fmt.Sprintf("message bytes (the model is of %s: drawn at the measured sizes)", strings.Join(km.vars, ", "))
	}
	return s, fmt.Sprintf("flops = %s (the model is of %s: drawn at the measured sizes)", km.fam.flopsFormula(), strings.Join(km.vars, ", "))
}

// exportExtrap is 'export extrap FILE [ROUTINE] [sweeps=all]': the
// measurements in Extra-P's text input format. A file holds one set of
// parameters and points, which every region must have data for, so the
// families go to one file per routine and set of sizes: FILE itself when
// that is one, else FILE's name with the routine (or the family) added
// before its extension.
func exportExtrap(s *Session, c *Command, out Output) error {
	var file, word *Arg
	all := false
	for i := range c.Args[1:] {
		a := &c.Args[i+1]
		switch {
		case a.Key == "sweeps":
			if a.Value != "all" && a.Value != "last" {
				return errAt(a.ValueCol, "sweeps= takes all or last, not %q", a.Value)
			}
			all = a.Value == "all"
		case a.Key != "":
			return errAt(a.Col, "export extrap has no option %q: export extrap FILE [ROUTINE] [sweeps=all]", a.Key)
		case file == nil:
			file = a
		case word == nil:
			word = a
		default:
			return errAt(a.Col, "export extrap FILE [ROUTINE] [sweeps=all]: one file and one routine")
		}
	}
	if file == nil {
		return errAt(c.Args[0].Col, "export extrap takes a file: export extrap FILE [ROUTINE] [sweeps=all]")
	}
	sws, err := modelSweeps(s, c, all, out)
	if err != nil {
		return err
	}
	d := collectKernels(sws)
	fs := d.families
	if word != nil {
		if fs, err = selectFamilies(d, word.Value); err != nil {
			return errAt(word.Col, "%v", err)
		}
	}
	if len(fs) == 0 {
		return errAt(c.VerbCol, "no kernel with sizes in %s to export", d.source())
	}
	files := extrapFiles(fs, d, newSizeHints(sws, nil))
	var lines []string
	for _, ef := range files {
		name := file.Value
		if len(files) > 1 {
			ext := filepath.Ext(name)
			name = strings.TrimSuffix(name, ext) + "-" + ef.suffix + ext
		}
		path, err := writeFile(name, func(w *os.File) error {
			_, err := io.WriteString(w, ef.text)
			return err
		})
		if err != nil {
			return errAt(file.Col, "%v", err)
		}
		lines = append(lines, fmt.Sprintf("wrote %s: %s", path, ef.what))
	}
	out.Print(strings.Join(lines, "\n"))
	return nil
}

// extrapFile is one Extra-P text file's content.
type extrapFile struct {
	suffix string // added to the file name when there are several
	what   string // what it holds, for the message
	text   string
}

// extrapFiles lays the families out in Extra-P text files: one per routine
// and set of coordinates (the model's parameters, as 'model' fits them).
func extrapFiles(fs []*kernelFamily, d *kernelData, hints sizeHints) []extrapFile {
	type group struct {
		routine, id string
		models      []*kernelModel
	}
	var groups []*group
	families := map[string]int{} // per routine
	for _, f := range fs {
		km := fitFamily(f, hints.For(f))
		var pts []string
		for _, p := range km.points {
			pts = append(pts, fmt.Sprint(p.x))
		}
		id := strings.Join(km.vars, " ") + "|" + strings.Join(pts, " ")
		families[f.routine]++
		i := slices.IndexFunc(groups, func(g *group) bool { return g.routine == f.routine && g.id == id })
		if i < 0 {
			groups = append(groups, &group{routine: f.routine, id: id})
			i = len(groups) - 1
		}
		groups[i].models = append(groups[i].models, km)
	}
	var out []extrapFile
	for _, g := range groups {
		km0 := g.models[0]
		var b strings.Builder
		fmt.Fprintf(&b, "# approxtune kernel times of %s (rank 0): seconds per call; a DATA value is the mean of one part pooled at its point (a selective run's kernel, or kernels of that size on other communicators); approxtune's model fits their mean weighted by their calls, Extra-P weighs them alike\n", d.source())
		var names []string
		for _, km := range g.models {
			names = append(names, km.fam.name)
			for _, n := range km.notes(false) {
				fmt.Fprintf(&b, "# %s: %s\n", km.fam.name, n)
			}
		}
		fmt.Fprintf(&b, "PARAMETER %s\n", strings.Join(km0.vars, " "))
		b.WriteString("POINTS")
		for _, p := range km0.points {
			var cs []string
			for _, v := range p.x {
				cs = append(cs, strconv.FormatFloat(v, 'f', -1, 64))
			}
			b.WriteString(" (" + strings.Join(cs, " ") + ")")
		}
		b.WriteString("\nMETRIC time\n")
		for _, km := range g.models {
			fmt.Fprintf(&b, "REGION %s\n", km.fam.name)
			for _, p := range km.points {
				b.WriteString("DATA")
				for _, part := range p.parts {
					b.WriteString(" " + strconv.FormatFloat(part.mean, 'f', -1, 64))
				}
				b.WriteString("\n")
			}
		}
		suffix := g.routine
		if families[g.routine] > len(g.models) {
			suffix = strings.NewReplacer("[", "-", "]", "").Replace(km0.fam.name)
		}
		out = append(out, extrapFile{suffix: suffix, text: b.String(),
			what: fmt.Sprintf("%s (%d point%s in %s)", strings.Join(names, ", "), len(km0.points), plural(len(km0.points)), strings.Join(km0.vars, ", "))})
	}
	return out
}

// timeBand is m's prediction at x with its 95% band, the band's ends
// clamped at zero: a time is not negative, and the band of a small kernel
// near the bottom of the measured sizes had reached below it. A
// prediction at or below zero is returned as it is: the model does not
// hold there.
func timeBand(m *analysis.Model, x []float64) (pred, lo, hi float64) {
	pred = m.Predict(x)
	lo, hi = m.Band(x, 0.95)
	return pred, math.Max(lo, 0), math.Max(hi, 0)
}
