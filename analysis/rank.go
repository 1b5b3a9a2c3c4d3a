package analysis

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/floats"
	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"
)

// Outcome is the result of a three-way comparison of a against b.
type Outcome int

const (
	// Faster: a is noticeably faster than b (paper 004, outcome A, "<").
	Faster Outcome = iota - 1
	// Equivalent: a is as good as b (outcome B, "~").
	Equivalent
	// Slower: a is noticeably slower than b (outcome C, ">").
	Slower
)

// String gives the paper's symbol and a word: "< faster", "~ equivalent",
// "> slower".
func (o Outcome) String() string {
	switch o {
	case Faster:
		return "< faster"
	case Equivalent:
		return "~ equivalent"
	case Slower:
		return "> slower"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// CompareOptions are the parameters of the bootstrapped comparison
// (Procedure 2 of paper 004).
type CompareOptions struct {
	// M is the number of bootstrap draws, at least 1. With M = 1 the outcome
	// is Equivalent only on a tie of the draw's minima.
	M int
	// KMin and KMax bound the bootstrap sample size K: each draw takes K
	// values with K uniform in [KMin, KMax], 1 <= KMin <= KMax. The paper
	// recommends K chosen at random from [5, 10].
	KMin, KMax int
	// Threshold is the share of draws one side must win to be called
	// faster, in [0.5, 1). At 0.5 the outcome is Equivalent only when
	// each side wins exactly half the draws; towards 1 it becomes the
	// usual outcome. The paper allows 1, where Slower is
	// impossible (c/M < 0 never holds) and the sort keeps its random
	// starting order: a configuration twice as slow came out "equivalent".
	Threshold float64
}

// DefaultCompareOptions are the paper's settings: M = 30, K in [5, 10],
// threshold 0.9.
func DefaultCompareOptions() CompareOptions {
	return CompareOptions{M: 30, KMin: 5, KMax: 10, Threshold: 0.9}
}

// Validate reports the first option outside its valid range.
func (o CompareOptions) Validate() error {
	switch {
	case o.M < 1:
		return fmt.Errorf("analysis: M = %d bootstrap draws, want M >= 1", o.M)
	case o.KMin < 1 || o.KMax < o.KMin:
		return fmt.Errorf("analysis: K range [%d, %d], want 1 <= KMin <= KMax", o.KMin, o.KMax)
	case !(o.Threshold >= 0.5 && o.Threshold < 1):
		return fmt.Errorf("analysis: threshold %g, want a value in [0.5, 1)", o.Threshold)
	}
	return nil
}

// Compare is the three-way comparison of two timing samples (paper 004,
// Procedure 2). In each of M draws it samples K values from a and K from b
// (with replacement, K uniform in [KMin, KMax] and shared by both sides of
// the draw) and compares the minima e_a and e_b. With c the number of draws
// where e_a < e_b, plus half of those where e_a = e_b, and t the threshold:
//
//	c/M >= t          a is Faster than b (c/M = 1/2 is not, even at t = 1/2)
//	(M - c)/M >= t    a is Slower than b (b's share of the wins, alike)
//	otherwise         a and b are Equivalent
//
// The paper counts e_a <= e_b, so that of two identical samples (a tune
// sweep's predictions with no standard error) each was faster than the
// other; a tie counts half a win here, and identical samples are
// Equivalent. The paper's Slower is c/M < 1 - t: b's share judged
// strictly where a's is judged inclusively, and through the rounding of
// 1 - t (1 - 0.9 is 0.0999...98), so that at a share of exactly 1 - t
// the outcome had depended on t. Judged alike, the outcome of b against a
// is the reverse of a against b for the same draws.
func Compare(a, b []float64, opt CompareOptions, rng *rand.Rand) (Outcome, error) {
	if err := opt.Validate(); err != nil {
		return 0, err
	}
	if err := checkTimes("compare", "a", a); err != nil {
		return 0, err
	}
	if err := checkTimes("compare", "b", b); err != nil {
		return 0, err
	}
	if rng == nil {
		return 0, errors.New("analysis: compare: nil random source")
	}
	return compare(a, b, opt, rng), nil
}

// compare is Compare without the checks.
func compare(a, b []float64, opt CompareOptions, rng *rand.Rand) Outcome {
	c := 0 // twice the wins: a tie is half of one
	for range opt.M {
		k := opt.KMin + rng.IntN(opt.KMax-opt.KMin+1)
		switch ea, eb := bootMin(a, k, rng), bootMin(b, k, rng); {
		case ea < eb:
			c += 2
		case ea == eb:
			c++
		}
	}
	return outcome(c, opt.M, opt.Threshold)
}

// outcome is Compare's verdict on a's doubled wins c (a tie is one) of m
// draws at threshold t.
func outcome(c, m int, t float64) Outcome {
	share := func(wins int) float64 { return float64(wins) / float64(2*m) }
	switch p, q := share(c), share(2*m-c); {
	case p >= t && p > 0.5: // an even share is no win, at threshold 0.5 too
		return Faster
	case q >= t && q > 0.5:
		return Slower
	}
	return Equivalent
}

// bootMin is the minimum of k values drawn with replacement from x.
func bootMin(x []float64, k int, rng *rand.Rand) float64 {
	m := math.Inf(1)
	for range k {
		m = min(m, x[rng.IntN(len(x))])
	}
	return m
}

// checkTimes reports an empty sample or a non-finite timing; op and name
// say where.
func checkTimes(op, name string, x []float64) error {
	if len(x) == 0 {
		return fmt.Errorf("analysis: %s: %s: no timings", op, name)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("analysis: %s: %s: timing %d is %g, want a finite value", op, name, i, v)
		}
	}
	return nil
}

// RankOptions are the parameters of Rank: the comparison's and the number of
// repetitions of the sort (Procedure 4 of paper 004).
type RankOptions struct {
	CompareOptions
	// Rep is the number of repetitions of the sort, at least 1.
	Rep int
}

// DefaultRankOptions are the paper's settings: DefaultCompareOptions and
// Rep = 100.
func DefaultRankOptions() RankOptions {
	return RankOptions{CompareOptions: DefaultCompareOptions(), Rep: 100}
}

// Validate reports the first option outside its valid range.
func (o RankOptions) Validate() error {
	if o.Rep < 1 {
		return fmt.Errorf("analysis: Rep = %d repetitions, want Rep >= 1", o.Rep)
	}
	return o.CompareOptions.Validate()
}

// Sample is one configuration's timings, named.
type Sample struct {
	Name  string
	Times []float64
}

// Member is one configuration in a performance class.
type Member struct {
	Name string
	// Score is the relative score: the share of the Rep sorts in which the
	// configuration was ranked 1 (paper 004, Procedure 4).
	Score float64
	// Mean and Min summarize the configuration's timings; N is their count.
	Mean, Min float64
	N         int
}

// Class is a performance class: configurations the sort ranked equal.
type Class struct {
	// Rank is the class number, 1 for the fastest.
	Rank    int
	Members []Member
}

// Ranking is the result of Rank.
type Ranking struct {
	// Classes are the performance classes of the most frequent outcome of
	// the Rep sorts, fastest first; members within a class by descending
	// score, then mean time.
	Classes []Class
	// Support is the share of the Rep sorts that produced exactly these
	// classes.
	Support float64
}

// Scores maps each configuration's name to its relative score.
func (r Ranking) Scores() map[string]float64 {
	m := make(map[string]float64)
	for _, c := range r.Classes {
		for _, mb := range c.Members {
			m[mb.Name] = mb.Score
		}
	}
	return m
}

// ClassOf is the class number of the named configuration, 0 if absent.
func (r Ranking) ClassOf(name string) int {
	for _, c := range r.Classes {
		for _, mb := range c.Members {
			if mb.Name == name {
				return c.Rank
			}
		}
	}
	return 0
}

// Rank sorts configurations into performance classes (paper 004,
// Procedures 3 and 4). Each of Rep repetitions runs bubble sort with the
// three-way Compare on adjacent configurations and merges ranks: when the
// later one is faster the two swap (and ranks are fixed up so a faster
// configuration that beat its whole class leaves it), when they are
// equivalent the later one takes the earlier one's rank. The relative score
// of a configuration is the share of repetitions in which it got rank 1.
// The classes returned are the most frequent outcome of the repetitions.
//
// As in the authors' code, each repetition starts from a random order of
// the configurations and compares a pair at most once (later comparisons of
// the same pair reuse the result).
func Rank(samples []Sample, opt RankOptions, rng *rand.Rand) (Ranking, error) {
	return RankContext(context.Background(), samples, opt, rng)
}

// RankContext is Rank, stopped with ctx's error when ctx ends: the sort's
// cost grows with the square of the configurations (a minute for 1200).
func RankContext(ctx context.Context, samples []Sample, opt RankOptions, rng *rand.Rand) (Ranking, error) {
	if err := opt.Validate(); err != nil {
		return Ranking{}, err
	}
	if len(samples) == 0 {
		return Ranking{}, errors.New("analysis: rank: no configurations")
	}
	if rng == nil {
		return Ranking{}, errors.New("analysis: rank: nil random source")
	}
	seen := make(map[string]bool)
	for _, s := range samples {
		if seen[s.Name] {
			return Ranking{}, fmt.Errorf("analysis: rank: configuration %q given twice", s.Name)
		}
		seen[s.Name] = true
		if err := checkTimes("rank", s.Name, s.Times); err != nil {
			return Ranking{}, err
		}
	}
	p := len(samples)
	firsts := make([]int, p)
	counts := make(map[string]int)
	outcomes := make(map[string][]int)
	for range opt.Rep {
		if err := ctx.Err(); err != nil {
			return Ranking{}, fmt.Errorf("analysis: rank: %w", err)
		}
		ranks := sortOnce(samples, opt.CompareOptions, rng)
		for i, r := range ranks {
			if r == 1 {
				firsts[i]++
			}
		}
		key := rankKey(ranks)
		counts[key]++
		if _, ok := outcomes[key]; !ok {
			outcomes[key] = ranks
		}
	}
	best := ""
	for k, n := range counts {
		if best == "" || n > counts[best] || n == counts[best] && k < best {
			best = k
		}
	}
	ranks := outcomes[best]
	nc := slices.Max(ranks)
	res := Ranking{Classes: make([]Class, nc), Support: float64(counts[best]) / float64(opt.Rep)}
	for c := range res.Classes {
		res.Classes[c].Rank = c + 1
	}
	for i, s := range samples {
		m := Member{
			Name:  s.Name,
			Score: float64(firsts[i]) / float64(opt.Rep),
			Mean:  stat.Mean(s.Times, nil),
			Min:   floats.Min(s.Times),
			N:     len(s.Times),
		}
		c := &res.Classes[ranks[i]-1]
		c.Members = append(c.Members, m)
	}
	for _, c := range res.Classes {
		slices.SortStableFunc(c.Members, func(x, y Member) int {
			if x.Score != y.Score {
				return cmp.Compare(y.Score, x.Score)
			}
			return cmp.Compare(x.Mean, y.Mean)
		})
	}
	return res, nil
}

// sortOnce is one run of Procedure 3 (SortAlgs) from a random initial
// order, each pair compared at most once. It returns the rank of each
// configuration, indexed as samples.
func sortOnce(samples []Sample, opt CompareOptions, rng *rand.Rand) []int {
	p := len(samples)
	// memo[x*p+y] is the outcome of x against y shifted by 2, so that the
	// zero value means "not compared yet".
	memo := make([]int8, p*p)
	return bubbleRank(rng.Perm(p), func(x, y int) Outcome {
		if v := memo[x*p+y]; v != 0 {
			return Outcome(v - 2)
		}
		o := compare(samples[x].Times, samples[y].Times, opt, rng)
		memo[x*p+y] = int8(o + 2)
		memo[y*p+x] = int8(-o + 2)
		return o
	})
}

// bubbleRank is Procedure 3's bubble sort with rank merging. s is the
// initial order (s[j] is the configuration at position j, and is sorted in
// place); three(x, y) compares configuration x against y. It returns the
// rank of each configuration.
func bubbleRank(s []int, three func(x, y int) Outcome) []int {
	p := len(s)
	r := make([]int, p) // r[j]: rank at position j
	for j := range r {
		r[j] = j + 1
	}
	shift := func(from, d int) {
		for k := from; k < p; k++ {
			r[k] += d
		}
	}
	for i := 1; i <= p; i++ {
		for j := 0; j <= p-i-1; j++ {
			switch three(s[j], s[j+1]) {
			case Slower: // s[j+1] is faster than s[j]
				s[j], s[j+1] = s[j+1], s[j]
				if r[j+1] == r[j] {
					// s[j+1] beat the rest of its class: the others drop a rank.
					if j == 0 || r[j-1] != r[j] {
						shift(j+1, 1)
					}
				} else if j != 0 && r[j-1] == r[j] {
					// The slower one keeps the class it was merged
					// into and the faster one joins that class.
					shift(j+1, -1)
				}
			case Equivalent:
				if r[j+1] != r[j] {
					shift(j+1, -1)
				}
			}
		}
	}
	ranks := make([]int, p)
	for j, x := range s {
		ranks[x] = r[j]
	}
	return ranks
}

func rankKey(ranks []int) string {
	var b strings.Builder
	for i, r := range ranks {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(r))
	}
	return b.String()
}

// SampleNormal draws n timings from the normal distribution N(mean, se²),
// for configurations known only by a prediction (a mean and its standard
// error) so that Compare and Rank can weigh them against measured ones.
// se = 0 gives n copies of mean.
func SampleNormal(mean, se float64, n int, rng *rand.Rand) ([]float64, error) {
	switch {
	case math.IsNaN(mean) || math.IsInf(mean, 0):
		return nil, fmt.Errorf("analysis: sample normal: mean %g, want a finite value", mean)
	case !(se >= 0) || math.IsInf(se, 1):
		return nil, fmt.Errorf("analysis: sample normal: standard error %g, want a finite value >= 0", se)
	case n < 1:
		return nil, fmt.Errorf("analysis: sample normal: n = %d, want n >= 1", n)
	case rng == nil:
		return nil, errors.New("analysis: sample normal: nil random source")
	}
	x := make([]float64, n)
	if se == 0 {
		for i := range x {
			x[i] = mean
		}
		return x, nil
	}
	d := distuv.Normal{Mu: mean, Sigma: se, Src: rng}
	for i := range x {
		x[i] = d.Rand()
	}
	return x, nil
}
