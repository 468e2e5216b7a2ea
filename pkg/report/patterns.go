package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"
	"time"
)

// Relation patterns in the lemma form of the RoConE paper. A relation r rotates a cone's
// axis by θ_r (one angle per dimension). Then
//
//	symmetry     r∘r = 1      ⇔ 2θ_r ≡ 0 (mod 2π) in every dimension
//	inversion    r1∘r2 = 1    ⇔ θ_r1 + θ_r2 ≡ 0
//	composition  r1∘r2 = r3   ⇔ θ_r1 + θ_r2 ≡ θ_r3
//
// and each is scored by its mean angular error per dimension, the mean of |wrap(·)| over
// the dimensions, in radians (0 is exact; a random rotation scores about π/2).

// PatternScore is one relation, pair or triple and its mean angular error.
type PatternScore struct {
	Relations []int
	Error     float64
}

// Patterns holds the strongest patterns of each kind, best first.
type Patterns struct {
	Symmetric   []PatternScore
	Inverse     []PatternScore
	Composition []PatternScore
}

// wrapAbs is |x| after wrapping x into [-π, π]. The lemma sums add at most three angles of
// (-π, π], so a step of 2π replaces math.Remainder in the inner loop; a sum beyond 3π
// (MeanAngularError's caller's own angles) is reduced by math.Remainder first, which
// also makes an infinite sum NaN rather than a loop that never ends.
func wrapAbs(x float64) float64 {
	x = math.Abs(x)
	if x > 3*math.Pi {
		x = math.Abs(math.Remainder(x, 2*math.Pi))
	}
	for x > math.Pi {
		x = math.Abs(x - 2*math.Pi)
	}
	return x
}

// MeanAngularError is the mean over dimensions of |wrap(Σ sign_k·θ_k)|, the lemma error of
// a relation pattern with the given signed terms.
func MeanAngularError(terms ...[]float64) float64 { return meanError(terms, nil) }

func meanError(terms [][]float64, signs []float64) float64 {
	d := len(terms[0])
	sum := 0.0
	for j := 0; j < d; j++ {
		x := 0.0
		for k, t := range terms {
			if signs != nil {
				x += signs[k] * t[j]
			} else {
				x += t[j]
			}
		}
		sum += wrapAbs(x)
	}
	return sum / float64(d)
}

// FindPatterns scores every relation for symmetry, every pair for inversion and every
// unordered pair with every third relation for composition (rotations commute), keeping
// the top of each, exactly. axes[r] holds relation r's axis rotation angles (any angle is
// taken mod 2π into [-π, π], which the composition search relies on). The composition
// search's progress goes to log (nil: none).
func FindPatterns(axes [][]float64, top int, log io.Writer) Patterns {
	n := len(axes)
	wrapped := make([][]float64, n)
	for r, ax := range axes {
		wrapped[r] = make([]float64, len(ax))
		for j, x := range ax {
			wrapped[r][j] = math.Remainder(x, 2*math.Pi) // exact; x itself within [-π, π]
		}
	}
	axes = wrapped
	var p Patterns
	for r := 0; r < n; r++ {
		p.Symmetric = append(p.Symmetric, PatternScore{[]int{r}, meanError([][]float64{axes[r], axes[r]}, nil)})
	}
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			p.Inverse = append(p.Inverse, PatternScore{[]int{a, b}, meanError([][]float64{axes[a], axes[b]}, nil)})
		}
	}
	p.Symmetric = best(p.Symmetric, top)
	p.Inverse = best(p.Inverse, top)
	p.Composition = compositions(axes, top, log)
	return p
}

func best(s []PatternScore, top int) []PatternScore {
	slices.SortStableFunc(s, func(x, y PatternScore) int { return cmp.Compare(x.Error, y.Error) })
	if len(s) > top {
		s = s[:top]
	}
	return s
}

// compositions is the exact top of every triple (r1 < r2, r3 neither): each θ_r1+θ_r2 is
// compared with every θ_r3 over all dimensions. The search is exact, not a shortlist: a
// triple's error sum only grows with the dimensions, so one is dropped as soon as its
// partial sum exceeds the worker's current top-th best sum (which is never below the
// final one), and a strong composition is never missed, whatever dimensions carry it.
// On a trained model the bound drops most triples within a few blocks of dimensions; on
// an untrained one, whose best triples score near a random one's π/2, nearly every triple
// is summed in full: n³d/2 terms, so progress goes to log (nil: none).
func compositions(axes [][]float64, top int, log io.Writer) []PatternScore {
	n := len(axes)
	if n < 3 {
		return nil
	}
	d := len(axes[0])
	const block = 32 // dimensions between two bound checks
	var mu sync.Mutex
	var all []PatternScore
	var wg sync.WaitGroup
	rows := make(chan int)
	prog := newPairProgress(log, n*(n-1)/2)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := topList{size: top}
			s := make([]float64, d)
			for a := range rows {
				for b := a + 1; b < n; b++ { // rotations commute: r1∘r2 = r2∘r1
					for j := range s {
						s[j] = axes[a][j] + axes[b][j]
					}
					for c := 0; c < n; c++ {
						if c == a || c == b {
							continue
						}
						bound := local.bound()
						ax := axes[c][:d]
						sum := 0.0
						for j0 := 0; j0 < d && sum <= bound; j0 += block {
							sum += blockError(s[j0:min(j0+block, d)], ax[j0:min(j0+block, d)])
						}
						if sum <= bound {
							local.add(PatternScore{[]int{a, b, c}, sum / float64(d)}, sum)
						}
					}
				}
				prog.add(n - 1 - a)
			}
			mu.Lock()
			all = append(all, local.items...)
			mu.Unlock()
		}()
	}
	for a := 0; a < n; a++ {
		rows <- a
	}
	close(rows)
	wg.Wait()
	prog.finish()
	slices.SortStableFunc(all, comparePatterns)
	if len(all) > top {
		all = all[:top]
	}
	return all
}

// blockError is Σ_j wrapAbs(s_j − θ_j) over a block, for |s_j − θ_j| < 3π (s a sum of two
// angles of [-π, π], θ one), without branches, in four independent sums for the CPU's
// pipelines; always in this order, so the result does not depend on scheduling.
func blockError(s, theta []float64) float64 {
	theta = theta[:len(s)]
	var e0, e1, e2, e3 float64
	j := 0
	for ; j+4 <= len(s); j += 4 {
		x0, x1 := math.Abs(s[j]-theta[j]), math.Abs(s[j+1]-theta[j+1])
		x2, x3 := math.Abs(s[j+2]-theta[j+2]), math.Abs(s[j+3]-theta[j+3])
		e0 += min(x0, math.Abs(x0-2*math.Pi))
		e1 += min(x1, math.Abs(x1-2*math.Pi))
		e2 += min(x2, math.Abs(x2-2*math.Pi))
		e3 += min(x3, math.Abs(x3-2*math.Pi))
	}
	for ; j < len(s); j++ {
		x := math.Abs(s[j] - theta[j])
		e0 += min(x, math.Abs(x-2*math.Pi))
	}
	return (e0 + e1) + (e2 + e3)
}

// comparePatterns orders by error, then by relation ids, so that a result does not depend
// on how the work was scheduled.
func comparePatterns(x, y PatternScore) int {
	if c := cmp.Compare(x.Error, y.Error); c != 0 {
		return c
	}
	return slices.Compare(x.Relations, y.Relations)
}

// topList keeps the size best patterns seen, in a heap with the worst of them on top,
// whose error sum is the bound a candidate must not exceed.
type topList struct {
	size  int
	items []PatternScore
	sums  []float64
}

func (t *topList) bound() float64 {
	if len(t.items) < t.size {
		return math.Inf(1)
	}
	return t.sums[0]
}

func (t *topList) add(p PatternScore, sum float64) {
	if len(t.items) < t.size {
		t.items, t.sums = append(t.items, p), append(t.sums, sum)
		t.up(len(t.items) - 1)
		return
	}
	if comparePatterns(p, t.items[0]) >= 0 {
		return
	}
	t.items[0], t.sums[0] = p, sum
	t.down(0)
}

// worse orders the heap: the worse pattern nearer the top.
func (t *topList) worse(i, j int) bool { return comparePatterns(t.items[i], t.items[j]) > 0 }

func (t *topList) swap(i, j int) {
	t.items[i], t.items[j] = t.items[j], t.items[i]
	t.sums[i], t.sums[j] = t.sums[j], t.sums[i]
}

func (t *topList) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !t.worse(i, p) {
			return
		}
		t.swap(i, p)
		i = p
	}
}

func (t *topList) down(i int) {
	for {
		w, l, r := i, 2*i+1, 2*i+2
		if l < len(t.items) && t.worse(l, w) {
			w = l
		}
		if r < len(t.items) && t.worse(r, w) {
			w = r
		}
		if w == i {
			return
		}
		t.swap(i, w)
		i = w
	}
}

// pairProgress reports the composition search's pairs done, rate and ETA on a log, at
// most every 5 seconds; safe for the workers to share.
type pairProgress struct {
	mu          sync.Mutex
	w           io.Writer
	total, done int
	start, last time.Time
	said        bool
}

func newPairProgress(w io.Writer, total int) *pairProgress {
	now := time.Now()
	return &pairProgress{w: w, total: total, start: now, last: now}
}

func (p *pairProgress) add(n int) {
	if p.w == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if time.Since(p.last) < 5*time.Second {
		return
	}
	p.last, p.said = time.Now(), true
	rate := float64(p.done) / time.Since(p.start).Seconds()
	fmt.Fprintf(p.w, "patterns: compositions: %d/%d relation pairs, %.0f/s, ETA %.0fs\n", p.done, p.total, rate, float64(p.total-p.done)/rate)
}

func (p *pairProgress) finish() {
	if p.w != nil && p.said {
		fmt.Fprintf(p.w, "patterns: compositions: %d relation pairs in %.1fs\n", p.done, time.Since(p.start).Seconds())
	}
}

// WritePatterns prints the patterns as Markdown tables, naming relations by names[r] when
// given.
func WritePatterns(w io.Writer, p Patterns, names []string) {
	name := func(r int) string {
		if r < len(names) && names[r] != "" {
			return fmt.Sprintf("%d %s", r, names[r])
		}
		return fmt.Sprint(r)
	}
	section := func(title, head string, s []PatternScore, row func(PatternScore) string) {
		fmt.Fprintf(w, "### %s\n\n| %s | mean angular error (rad) |\n|---|---:|\n", title, head)
		for _, x := range s {
			fmt.Fprintf(w, "| %s | %.4f |\n", row(x), x.Error)
		}
		fmt.Fprintln(w)
	}
	section("Symmetric relations (r∘r = 1)", "r", p.Symmetric, func(x PatternScore) string { return name(x.Relations[0]) })
	section("Inverse pairs (r1∘r2 = 1)", "r1, r2", p.Inverse, func(x PatternScore) string {
		return name(x.Relations[0]) + " ; " + name(x.Relations[1])
	})
	section("Compositions (r1∘r2 = r3)", "r1 ∘ r2 = r3", p.Composition, func(x PatternScore) string {
		return name(x.Relations[0]) + " ∘ " + name(x.Relations[1]) + " = " + name(x.Relations[2])
	})
	fmt.Fprintln(w, "Errors are means over dimensions of |wrap(·)| of the lemma's angle sum on the axis rotations; a random rotation scores about π/2 ≈ 1.571.")
}
