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
// unordered pair for its best composition (rotations commute), keeping the top of each. axes[r] holds relation r's axis
// rotation angles. Composition compares θ_r1+θ_r2 with every θ_r3 (r3 other than r1, r2):
// a shortlist of 3 by the first 16 dimensions, then the exact error over all of them.
func FindPatterns(axes [][]float64, top int) Patterns {
	n := len(axes)
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

func compositions(axes [][]float64, top int) []PatternScore {
	n := len(axes)
	if n < 3 {
		return nil
	}
	d := len(axes[0])
	probe := min(d, 16)
	const shortlist = 3
	type cand struct {
		err float64
		r3  int
	}
	var mu sync.Mutex
	var all []PatternScore
	var wg sync.WaitGroup
	rows := make(chan int)
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var local []PatternScore
			s := make([]float64, d)
			short := make([]cand, 0, shortlist+1)
			for a := range rows {
				for b := a + 1; b < n; b++ { // rotations commute: r1∘r2 = r2∘r1
					for j := range s {
						s[j] = axes[a][j] + axes[b][j]
					}
					// Shortlist by the first dimensions, kept sorted by insertion.
					short = short[:0]
					for c := 0; c < n; c++ {
						if c == a || c == b {
							continue
						}
						e := 0.0
						for j := 0; j < probe; j++ {
							e += wrapAbs(s[j] - axes[c][j])
						}
						if len(short) == shortlist && e >= short[shortlist-1].err {
							continue
						}
						i := len(short)
						short = append(short, cand{})
						for i > 0 && short[i-1].err > e {
							short[i] = short[i-1]
							i--
						}
						short[i] = cand{e, c}
						if len(short) > shortlist {
							short = short[:shortlist]
						}
					}
					for _, c := range short {
						local = append(local, PatternScore{[]int{a, b, c.r3}, meanError([][]float64{s, axes[c.r3]}, []float64{1, -1})})
					}
				}
				local = best(local, top)
			}
			mu.Lock()
			all = append(all, local...)
			mu.Unlock()
		}()
	}
	for a := 0; a < n; a++ {
		rows <- a
	}
	close(rows)
	wg.Wait()
	// Ties are broken by relation ids, so the result does not depend on scheduling.
	slices.SortStableFunc(all, func(x, y PatternScore) int {
		if c := cmp.Compare(x.Error, y.Error); c != 0 {
			return c
		}
		return slices.Compare(x.Relations, y.Relations)
	})
	if len(all) > top {
		all = all[:top]
	}
	return all
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
