package analysis

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Fraction is a rational exponent Num/Den.
type Fraction struct{ Num, Den int }

// Float is Num/Den.
func (f Fraction) Float() float64 { return float64(f.Num) / float64(f.Den) }

// String is "3" for 3/1 and "3/4" otherwise.
func (f Fraction) String() string {
	if f.Den == 1 {
		return strconv.Itoa(f.Num)
	}
	return strconv.Itoa(f.Num) + "/" + strconv.Itoa(f.Den)
}

// polyExponents is the set I of polynomial exponents and logExponents the
// set J of logarithm exponents of paper 003 (Section 4.5, after Ritter et
// al.):
//
//	I = {0, 1/4, 1/3, 1/2, 2/3, 3/4, 1, 5/4, 4/3, 3/2, 5/3, 7/4, 2, 9/4, 5/2, 8/3, 11/4, 3}
//	J = {0, 1, 2}
var (
	polyExponents = [...]Fraction{
		{0, 1}, {1, 4}, {1, 3}, {1, 2}, {2, 3}, {3, 4}, {1, 1}, {5, 4}, {4, 3},
		{3, 2}, {5, 3}, {7, 4}, {2, 1}, {9, 4}, {5, 2}, {8, 3}, {11, 4}, {3, 1},
	}
	logExponents = [...]int{0, 1, 2}
)

// Factor is one parameter's part of a PMNF term: x^I · log2(x)^J with x the
// value of parameter Param.
type Factor struct {
	Param int
	I     Fraction
	J     int
}

// Eval is x^I · log2(x)^J.
func (f Factor) Eval(x float64) float64 {
	v := 1.0
	if f.I.Num != 0 {
		v = math.Pow(x, f.I.Float())
	}
	if f.J != 0 {
		v *= math.Pow(math.Log2(x), float64(f.J))
	}
	return v
}

func (f Factor) format(names []string) string {
	x := names[f.Param]
	var parts []string
	switch {
	case f.I.Num == 0:
	case f.I == Fraction{1, 1}:
		parts = append(parts, x)
	case f.I.Den == 1:
		parts = append(parts, x+"^"+f.I.String())
	default:
		parts = append(parts, x+"^("+f.I.String()+")")
	}
	switch f.J {
	case 0:
	case 1:
		parts = append(parts, "log2("+x+")")
	default:
		parts = append(parts, "log2("+x+")^"+strconv.Itoa(f.J))
	}
	return strings.Join(parts, " * ")
}

// Term is one PMNF term: Coef · ∏ Factors.
type Term struct {
	Coef    float64
	Factors []Factor
}

// Eval is Coef · ∏ f.Eval(params[f.Param]).
func (t Term) Eval(params []float64) float64 { return t.Coef * basis(t.Factors, params) }

// basis is ∏ f.Eval(params[f.Param]), a term without its coefficient.
func basis(fs []Factor, params []float64) float64 {
	v := 1.0
	for _, f := range fs {
		v *= f.Eval(params[f.Param])
	}
	return v
}

// Point is one measured configuration: the parameter values, in the order
// of the names given to FitModel, and the measured value (typically a mean
// time).
type Point struct {
	Params []float64
	Value  float64
}

// Model is a fitted PMNF function
//
//	f(x) = Constant + Σ_k Terms[k].Coef · ∏ x_l^i · log2(x_l)^j
//
// with its fit statistics and what its prediction band needs.
type Model struct {
	// Params are the parameter names, in the order of Point.Params.
	Params   []string
	Constant float64
	Terms    []Term
	// SMAPE is the symmetric mean absolute percentage error of the fit on
	// its points, 100/n · Σ 2|f(x_i) - y_i| / (|f(x_i)| + |y_i|).
	SMAPE float64
	// CVSMAPE is the same error of leave-one-out predictions (each point
	// predicted by the fit without it): the criterion the model was chosen
	// by.
	CVSMAPE float64
	// LOO are the leave-one-out predictions, in the points' order: each
	// point's value as the same model fitted without it predicts it. One
	// far from its point says the model rests on that point.
	LOO []float64
	// AR2 is the adjusted coefficient of determination,
	// 1 - (RSS/TSS)·(n-1)/(n-p) with p coefficients, on plain (unweighted)
	// residuals: 1 for a perfect fit, 0 for the mean; below 0 when the fit
	// is worse than the mean, as a constant fitted on relative residuals
	// (closer to the small values than their mean) is.
	AR2 float64
	// N is the number of points fitted.
	N int

	s2       float64       // residual variance: Σ (wᵢeᵢ)² / (n-p)
	dof      int           // n-p
	relative bool          // weights wᵢ = 1/|yᵢ| (else 1)
	scale    []float64     // column scales of the weighted design
	rinv     *mat.TriDense // R⁻¹ of the weighted, scaled design's QR factorization
}

// Predict is f(params).
func (m *Model) Predict(params []float64) float64 {
	m.checkParams(params)
	v := m.Constant
	for _, t := range m.Terms {
		v += t.Eval(params)
	}
	return v
}

// Band is the prediction interval at the given level (e.g. 0.95) for a new
// measurement at params, from the weighted least-squares fit:
//
//	f(x₀) ± t_{n-p, (1+level)/2} · s · sqrt(f(x₀)² + x₀ᵀ (XᵀW²X)⁻¹ x₀)
//
// with X the design matrix, W = diag(1/|yᵢ|), x₀ the design row at params
// and s² = Σ ((yᵢ - f(xᵢ))/yᵢ)² / (n-p) the variance of the relative
// residuals. That is the band for noise proportional to the value (a new
// measurement's standard deviation s·f(x₀)), the usual shape of timings.
// When the fit was unweighted (some yᵢ = 0) f(x₀)² is replaced by 1 and s²
// is the plain residual variance. It is NaN when the fit has no residual
// degrees of freedom or level is outside (0, 1).
func (m *Model) Band(params []float64, level float64) (lo, hi float64) {
	m.checkParams(params)
	f := m.Predict(params)
	if m.dof < 1 || !(level > 0 && level < 1) {
		return math.NaN(), math.NaN()
	}
	p := len(m.scale)
	row := mat.NewVecDense(p, nil)
	row.SetVec(0, 1/m.scale[0])
	for k, t := range m.Terms {
		row.SetVec(k+1, basis(t.Factors, params)/m.scale[k+1])
	}
	var z mat.VecDense
	z.MulVec(m.rinv.T(), row) // (x₀ R⁻¹)ᵀ
	v := 1.0
	if m.relative {
		v = f * f
	}
	q := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(m.dof)}.Quantile((1 + level) / 2)
	h := q * math.Sqrt(m.s2*(v+mat.Dot(&z, &z)))
	return f - h, f + h
}

func (m *Model) checkParams(params []float64) {
	if len(params) != len(m.Params) {
		panic(fmt.Sprintf("analysis: model of %d parameters given %d values", len(m.Params), len(params)))
	}
}

// String is the formula with its coefficients, e.g.
// "0.5012 + 1.002e-08 * m * n * k".
func (m *Model) String() string {
	var b strings.Builder
	b.WriteString(strconv.FormatFloat(m.Constant, 'g', 4, 64))
	for _, t := range m.Terms {
		c := t.Coef
		if c < 0 {
			b.WriteString(" - ")
			c = -c
		} else {
			b.WriteString(" + ")
		}
		b.WriteString(strconv.FormatFloat(c, 'g', 4, 64))
		for _, f := range t.Factors {
			b.WriteString(" * ")
			b.WriteString(f.format(m.Params))
		}
	}
	return b.String()
}

// minContribution is Extra-P's ε: a hypothesis whose term contributes less
// than this share of every measured value is discarded.
const minContribution = 0.0005

// FitModel finds the PMNF function of the named parameters that best
// explains the points (Extra-P's model search, paper 003 Section 4.5).
//
// One parameter: each hypothesis is a constant plus one term
// c·x^i·log2(x)^j, (i, j) ∈ I×J \ {(0, 0)}, and the constant function is a
// hypothesis too. Each is fitted by least squares and scored by its
// leave-one-out SMAPE; hypotheses whose term is zero or contributes less
// than 0.05% of every measured value are dropped (Extra-P's ε). Log terms
// are left out when a parameter value is below 1.
//
// Several parameters (Extra-P's multi-parameter heuristic): each parameter
// is first modeled alone on a line of points where the others are fixed
// (the longest such lines, averaged over their fixed coordinates when
// several). Its three best terms are kept, unless the constant wins. The
// terms, one per parameter, are then combined: for a, b: a·b, a+b, a·b+a,
// a·b+b; for a, b, c: a·b·c, a+b+c and Extra-P's 21 mixed sums of
// products; for more, the full product and the full sum. Each combination
// is refitted on all points and scored by its leave-one-out SMAPE.
//
// The winner is chosen by the one-standard-error rule: of the hypotheses
// whose leave-one-out SMAPE is within one standard error of the smallest,
// the one with the fewest terms, then the smallest SMAPE.
//
// The least squares are on relative residuals (yᵢ - f(xᵢ))/yᵢ, i.e.
// weighted by 1/|yᵢ|, because timing noise grows with the time; plain least
// squares lets the largest values decide the fit and its constant then
// swamps the smallest ones. When some yᵢ is 0 the fit is unweighted.
// Leave-one-out predictions use the exact least-squares identity
// ŷ₍₋ᵢ₎ = yᵢ - eᵢ/(1 - hᵢᵢ), with hᵢᵢ the leverage, instead of n refits.
//
// Parameter values must be positive and finite; each parameter needs at
// least three distinct values. Extra-P asks for five, and telling close
// exponents apart (n³ from n^(8/3)·log2(n)², n from n^(2/3)·log2(n)²) takes
// values over two decades or more.
func FitModel(params []string, points []Point) (*Model, error) {
	if len(params) == 0 {
		return nil, errors.New("analysis: fit model: no parameters")
	}
	if len(points) < 3 {
		return nil, fmt.Errorf("analysis: fit model: %d points, need at least 3", len(points))
	}
	for i, pt := range points {
		if len(pt.Params) != len(params) {
			return nil, fmt.Errorf("analysis: fit model: point %d has %d parameter values, want %d (%s)",
				i, len(pt.Params), len(params), strings.Join(params, ", "))
		}
		for l, x := range pt.Params {
			if !(x > 0) || math.IsInf(x, 1) {
				return nil, fmt.Errorf("analysis: fit model: point %d: %s = %g, want a positive finite value", i, params[l], x)
			}
		}
		if math.IsNaN(pt.Value) || math.IsInf(pt.Value, 0) {
			return nil, fmt.Errorf("analysis: fit model: point %d: value %g, want a finite value", i, pt.Value)
		}
	}
	y := make([]float64, len(points))
	for i, pt := range points {
		y[i] = pt.Value
	}

	// cands[l] are parameter l's best single-parameter factors, best
	// first; empty when the constant model wins.
	var cands [][]Factor
	if len(params) == 1 {
		x := make([]float64, len(points))
		for i, pt := range points {
			x[i] = pt.Params[0]
		}
		if err := checkDistinct(params[0], x); err != nil {
			return nil, err
		}
		cands = append(cands, bestFactors(0, x, y, 1))
	} else {
		for l := range params {
			x, ly := line(points, l)
			if err := checkDistinct(params[l], x); err != nil {
				return nil, fmt.Errorf("%w %w", err, ErrNoLines)
			}
			cands = append(cands, bestFactors(l, x, ly, singleCandidates))
		}
	}
	cands = slices.DeleteFunc(cands, func(c []Factor) bool { return len(c) == 0 })

	d := newDesign(points, y)
	var hs []*hypothesis
	for _, factors := range product(cands) {
		for _, terms := range combinations(factors) {
			if h := d.fit(terms); h != nil && h.significant(y) {
				hs = append(hs, h)
			}
		}
	}
	best := pick(hs)
	if best == nil {
		best = d.fit(nil)
		if best == nil {
			return nil, errors.New("analysis: fit model: even the constant model cannot be fitted")
		}
	}
	return best.model(params, y), nil
}

// ErrNoLines is what FitModel's error wraps when several parameters vary
// but one of them has fewer than three distinct values along every line of
// points where the others are fixed, so the multi-parameter search cannot
// tell the parameters apart.
var ErrNoLines = errors.New("on a line where the other parameters are fixed")

// singleCandidates is how many of each parameter's best single-parameter
// terms the multi-parameter search combines.
const singleCandidates = 3

// product is the Cartesian product of the candidate lists: every choice of
// one factor per list.
func product(cands [][]Factor) [][]Factor {
	if len(cands) == 0 {
		return [][]Factor{nil}
	}
	var out [][]Factor
	for _, rest := range product(cands[1:]) {
		for _, f := range cands[0] {
			out = append(out, append([]Factor{f}, rest...))
		}
	}
	return out
}

func checkDistinct(name string, x []float64) error {
	u := slices.Clone(x)
	slices.Sort(u)
	if n := len(slices.Compact(u)); n < 3 {
		return fmt.Errorf("analysis: fit model: parameter %s has %d distinct values, need at least 3", name, n)
	}
	return nil
}

// bestFactors is the single-parameter search for parameter l over values
// x and measurements y. The hypotheses are the constant and constant + one
// term; when pick chooses the constant it returns nothing, else the k
// terms of smallest leave-one-out SMAPE, best first.
func bestFactors(l int, x, y []float64, k int) []Factor {
	pts := make([]Point, len(x))
	for i := range x {
		params := make([]float64, l+1)
		params[l] = x[i]
		pts[i] = Point{Params: params, Value: y[i]}
	}
	logOK := slices.Min(x) >= 1
	d := newDesign(pts, y)
	var hs []*hypothesis
	if c := d.fit(nil); c != nil {
		hs = append(hs, c)
	}
	for _, i := range polyExponents {
		for _, j := range logExponents {
			if i.Num == 0 && j == 0 || j != 0 && !logOK {
				continue
			}
			f := Factor{Param: l, I: i, J: j}
			if h := d.fit([][]Factor{{f}}); h != nil && h.significant(y) {
				hs = append(hs, h)
			}
		}
	}
	best := pick(hs)
	if best == nil || len(best.terms) == 0 {
		return nil
	}
	hs = slices.DeleteFunc(hs, func(h *hypothesis) bool {
		return len(h.terms) == 0
	})
	slices.SortStableFunc(hs, func(a, b *hypothesis) int { return cmp.Compare(a.cvsmape, b.cvsmape) })
	var fs []Factor
	for _, h := range hs[:min(k, len(hs))] {
		fs = append(fs, h.terms[0][0])
	}
	return fs
}

// pick chooses among fitted hypotheses by the one-standard-error rule of
// cross-validation: of those whose leave-one-out SMAPE is within one
// standard error of the smallest, the one with the fewest terms, and of
// those the smallest leave-one-out SMAPE. Nil for none.
func pick(hs []*hypothesis) *hypothesis {
	var low *hypothesis
	for _, h := range hs {
		if low == nil || h.cvsmape < low.cvsmape {
			low = h
		}
	}
	if low == nil {
		return nil
	}
	var best *hypothesis
	for _, h := range hs {
		if h.cvsmape > low.cvsmape+low.cvse {
			continue
		}
		if best == nil || len(h.terms) < len(best.terms) ||
			len(h.terms) == len(best.terms) && h.cvsmape < best.cvsmape {
			best = h
		}
	}
	return best
}

// combinations are the multi-parameter hypotheses built from the best
// single-parameter factors, as Extra-P builds them; each hypothesis is a
// list of terms, each term a list of factors.
func combinations(fs []Factor) [][][]Factor {
	prod := func(idx ...int) []Factor {
		t := make([]Factor, len(idx))
		for k, i := range idx {
			t[k] = fs[i]
		}
		return t
	}
	switch len(fs) {
	case 0:
		return nil
	case 1:
		return [][][]Factor{{prod(0)}}
	case 2:
		ab, a, b := prod(0, 1), prod(0), prod(1)
		return [][][]Factor{{ab}, {a, b}, {a, ab}, {b, ab}}
	case 3:
		xyz, x, y, z := prod(0, 1, 2), prod(0), prod(1), prod(2)
		xy, yz, xz := prod(0, 1), prod(1, 2), prod(0, 2)
		return [][][]Factor{
			{xyz}, {x, y, z},
			{xyz, x}, {xyz, y}, {xyz, z},
			{xyz, xy}, {xyz, yz}, {xyz, xz},
			{xyz, xy, z}, {xyz, yz, x}, {xyz, xz, y},
			{xyz, x, y}, {xyz, x, z}, {xyz, y, z},
			{xy, z}, {xy, z, y}, {xy, z, x},
			{xz, y}, {xz, y, x}, {xz, y, z},
			{yz, x}, {yz, x, y}, {yz, x, z},
		}
	}
	all := make([]int, len(fs))
	sum := make([][]Factor, len(fs))
	for i := range fs {
		all[i] = i
		sum[i] = prod(i)
	}
	return [][][]Factor{{prod(all...)}, sum}
}

// line is the one-parameter data for parameter l: the points on the
// longest lines along l (other parameters fixed) that share their values
// of l, averaged per value over those lines. Where longest lines differ in
// their values of l, the values most of them share are taken, then the
// least (compared value by value), so that the line, and the model, do
// not depend on the order of the points: the first line given had been
// taken, and the same points reversed had fitted another model. x is
// sorted.
func line(points []Point, l int) (x, y []float64) {
	type group struct {
		sum map[float64]float64
		n   map[float64]int
	}
	groups := make(map[string]*group)
	for _, pt := range points {
		other := slices.Concat(pt.Params[:l], pt.Params[l+1:])
		key := fmt.Sprint(other)
		g := groups[key]
		if g == nil {
			g = &group{sum: make(map[float64]float64), n: make(map[float64]int)}
			groups[key] = g
		}
		g.sum[pt.Params[l]] += pt.Value
		g.n[pt.Params[l]]++
	}
	longest := 0
	for _, g := range groups {
		longest = max(longest, len(g.n))
	}
	// The longest lines by their values of l.
	type valueSet struct {
		xs    []float64
		lines []*group
	}
	var sets []*valueSet
	for _, key := range slices.Sorted(maps.Keys(groups)) { // sums in one order
		g := groups[key]
		if len(g.n) != longest {
			continue
		}
		xs := slices.Sorted(maps.Keys(g.n))
		k := slices.IndexFunc(sets, func(s *valueSet) bool { return slices.Equal(s.xs, xs) })
		if k < 0 {
			sets = append(sets, &valueSet{xs: xs})
			k = len(sets) - 1
		}
		sets[k].lines = append(sets[k].lines, g)
	}
	ref := slices.MinFunc(sets, func(a, b *valueSet) int {
		if c := cmp.Compare(len(b.lines), len(a.lines)); c != 0 {
			return c
		}
		return slices.Compare(a.xs, b.xs)
	})
	for _, v := range ref.xs {
		sum := 0.0
		for _, g := range ref.lines {
			sum += g.sum[v] / float64(g.n[v])
		}
		x = append(x, v)
		y = append(y, sum/float64(len(ref.lines)))
	}
	return x, y
}

// hypothesis is one least-squares fit of constant + terms.
type hypothesis struct {
	terms    [][]Factor
	coef     []float64 // coef[0] the constant, coef[k+1] of terms[k]
	cols     [][]float64
	rss      float64 // Σ (wᵢ eᵢ)², weighted residual sum of squares
	sse      float64 // Σ eᵢ², plain residual sum of squares
	smape    float64
	cvsmape  float64
	cvse     float64 // standard error of cvsmape: sd of the points' errors / sqrt(n)
	loo      []float64
	relative bool // weights 1/|yᵢ| (else 1)
	scale    []float64
	rinv     *mat.TriDense
}

// design is the data of a model search with a cache of factor columns.
type design struct {
	points []Point
	y      []float64
	w      []float64 // weights 1/|yᵢ|, or all 1
	cache  map[Factor][]float64
}

func newDesign(points []Point, y []float64) *design {
	d := &design{points: points, y: y, w: make([]float64, len(y)), cache: make(map[Factor][]float64)}
	for i, v := range y {
		if v == 0 {
			for i := range d.w {
				d.w[i] = 1
			}
			break
		}
		d.w[i] = 1 / math.Abs(v)
	}
	return d
}

// column is the basis of a term at each point.
func (d *design) column(term []Factor) []float64 {
	c := make([]float64, len(d.y))
	for i := range c {
		c[i] = 1
	}
	for _, f := range term {
		fc, ok := d.cache[f]
		if !ok {
			fc = make([]float64, len(d.y))
			for i, pt := range d.points {
				fc[i] = f.Eval(pt.Params[f.Param])
			}
			d.cache[f] = fc
		}
		for i, v := range fc {
			c[i] *= v
		}
	}
	return c
}

// fit fits y ≈ c₀ + Σ c_k·basis(terms[k]) by weighted least squares,
// minimizing Σ wᵢ²(yᵢ - f(xᵢ))² with wᵢ = 1/|yᵢ| (relative residuals;
// wᵢ = 1 for all points when some yᵢ is 0), by QR of the weighted,
// column-scaled design. It returns nil when the fit is ill-posed: fewer
// points than coefficients plus one, a singular design, or a point of
// leverage 1 (no leave-one-out prediction).
func (d *design) fit(terms [][]Factor) *hypothesis {
	y, w := d.y, d.w
	n, p := len(y), len(terms)+1
	if n < p+1 {
		return nil
	}
	h := &hypothesis{terms: terms, cols: make([][]float64, p), scale: make([]float64, p), relative: !slices.Contains(y, 0)}
	h.cols[0] = d.column(nil)
	for k, t := range terms {
		h.cols[k+1] = d.column(t)
	}
	x := mat.NewDense(n, p, nil)
	for k, c := range h.cols {
		s := 0.0
		for i, v := range c {
			s = max(s, math.Abs(v*w[i]))
		}
		if !(s > 0) || math.IsInf(s, 1) {
			return nil
		}
		h.scale[k] = s
		for i, v := range c {
			x.Set(i, k, v*w[i]/s)
		}
	}
	var qr mat.QR
	qr.Factorize(x)
	if qr.Cond() > 1e12 {
		return nil
	}
	wy := make([]float64, n)
	for i := range y {
		wy[i] = y[i] * w[i]
	}
	var beta mat.VecDense
	if err := qr.SolveVecTo(&beta, false, mat.NewVecDense(n, wy)); err != nil {
		return nil
	}
	var r mat.Dense
	qr.RTo(&r)
	rt := mat.NewTriDense(p, mat.Upper, nil)
	for i := range p {
		for j := i; j < p; j++ {
			rt.SetTri(i, j, r.At(i, j))
		}
	}
	h.rinv = mat.NewTriDense(p, mat.Upper, nil)
	if err := h.rinv.InverseTri(rt); err != nil {
		return nil
	}
	h.coef = make([]float64, p)
	for k := range p {
		h.coef[k] = beta.AtVec(k) / h.scale[k]
	}
	// The leverage hᵢᵢ is the squared norm of row i of Q = X R⁻¹.
	var q mat.Dense
	q.Mul(x, h.rinv)
	pred := make([]float64, n)
	loo := make([]float64, n)
	for i := range n {
		for k := range p {
			pred[i] += h.coef[k] * h.cols[k][i]
		}
		qi := q.RawRowView(i)
		lev := floats.Dot(qi, qi)
		if 1-lev < 1e-10 {
			return nil
		}
		e := y[i] - pred[i]
		h.rss += e * e * w[i] * w[i]
		h.sse += e * e
		loo[i] = y[i] - e/(1-lev)
	}
	h.smape = smape(pred, y)
	h.cvsmape, h.cvse = smapeSE(loo, y)
	h.loo = loo
	return h
}

// significant is Extra-P's filter: every term has a nonzero coefficient and
// contributes at least minContribution of some measured value.
func (h *hypothesis) significant(y []float64) bool {
	for k := 1; k < len(h.coef); k++ {
		if h.coef[k] == 0 {
			return false
		}
		c := 0.0
		for i, v := range y {
			if v != 0 {
				c = max(c, math.Abs(h.coef[k]*h.cols[k][i]/v))
			}
		}
		if c < minContribution {
			return false
		}
	}
	return true
}

func (h *hypothesis) model(params []string, y []float64) *Model {
	n, p := len(y), len(h.coef)
	tss := 0.0 // the total sum of squares
	if n > 1 {
		tss = stat.Variance(y, nil) * float64(n-1)
	}
	ar2 := 1.0
	if tss > 0 {
		ar2 = 1 - h.sse/tss*float64(n-1)/float64(n-p)
	}
	m := &Model{
		Params:   slices.Clone(params),
		Constant: h.coef[0],
		SMAPE:    h.smape,
		CVSMAPE:  h.cvsmape,
		LOO:      slices.Clone(h.loo),
		AR2:      ar2,
		N:        n,
		s2:       h.rss / float64(n-p),
		dof:      n - p,
		relative: h.relative,
		scale:    h.scale,
		rinv:     h.rinv,
	}
	for k, t := range h.terms {
		m.Terms = append(m.Terms, Term{Coef: h.coef[k+1], Factors: t})
	}
	return m
}

// smape is 100/n · Σ 2|pᵢ - yᵢ| / (|pᵢ| + |yᵢ|), terms with pᵢ = yᵢ = 0
// counting 0.
func smape(pred, y []float64) float64 {
	m, _ := smapeSE(pred, y)
	return m
}

// smapeSE is smape and its standard error: the standard deviation of the
// points' terms over sqrt(n).
func smapeSE(pred, y []float64) (mean, se float64) {
	e := make([]float64, len(y))
	for i := range y {
		if d := math.Abs(pred[i]) + math.Abs(y[i]); d != 0 {
			e[i] = 200 * math.Abs(pred[i]-y[i]) / d
		}
	}
	mean, sd := stat.MeanStdDev(e, nil)
	return mean, sd / math.Sqrt(float64(len(e)))
}
