package report

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"
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
// (-π, π], so a few steps of 2π replace math.Mod in the inner loop.
func wrapAbs(x float64) float64 {
	x = math.Abs(x)
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
// taken mod 2π into [-π, π], which the composition search relies on).
func FindPatterns(axes [][]float64, top int) Patterns {
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
	p.Composition = compositions(axes, top)
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
func compositions(axes [][]float64, top int) []PatternScore {
	n := len(axes)
	if n < 3 {
		return nil
	}
	d := len(axes[0])
	const checkEvery = 32 // dimensions between two bound checks
	var mu sync.Mutex
	var all []PatternScore
	var wg sync.WaitGroup
	rows := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local topList
			local.size = top
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
						ax := axes[c]
						sum := 0.0
						for j0 := 0; j0 < d && sum <= bound; j0 += checkEvery {
							for j := j0; j < min(j0+checkEvery, d); j++ {
								// wrapAbs for |x| < 3π, without branches: the two angles are
								// within 2π and π of 0.
								x := math.Abs(s[j] - ax[j])
								sum += min(x, math.Abs(x-2*math.Pi))
							}
						}
						if sum <= bound {
							local.add(PatternScore{[]int{a, b, c}, sum / float64(d)}, sum)
						}
					}
				}
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
	slices.SortStableFunc(all, comparePatterns)
	if len(all) > top {
		all = all[:top]
	}
	return all
}

// comparePatterns orders by error, then by relation ids, so that a result does not depend
// on how the work was scheduled.
func comparePatterns(x, y PatternScore) int {
	if c := cmp.Compare(x.Error, y.Error); c != 0 {
		return c
	}
	return slices.Compare(x.Relations, y.Relations)
}

// topList keeps the size best patterns seen, in comparePatterns order, with the error sum
// of the worst of them as the bound a candidate must not exceed.
type topList struct {
	size  int
	items []PatternScore
	sums  []float64
}

func (t *topList) bound() float64 {
	if len(t.items) < t.size {
		return math.Inf(1)
	}
	return t.sums[len(t.sums)-1]
}

func (t *topList) add(p PatternScore, sum float64) {
	i, _ := slices.BinarySearchFunc(t.items, p, comparePatterns)
	if i >= t.size {
		return
	}
	t.items = slices.Insert(t.items, i, p)
	t.sums = slices.Insert(t.sums, i, sum)
	if len(t.items) > t.size {
		t.items, t.sums = t.items[:t.size], t.sums[:t.size]
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
