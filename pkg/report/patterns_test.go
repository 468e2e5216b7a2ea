package report

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestFindPatterns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	d := 32
	randomAngles := func() []float64 {
		v := make([]float64, d)
		for j := range v {
			v[j] = (rng.Float64()*2 - 1) * math.Pi
		}
		return v
	}
	wrap := func(x float64) float64 { return math.Remainder(x, 2*math.Pi) }
	axes := make([][]float64, 12)
	for r := range axes {
		axes[r] = randomAngles()
	}
	// relation 3 is symmetric (every angle 0 or π), 5 and 8 are inverses, 2∘7 = 10.
	for j := 0; j < d; j++ {
		axes[3][j] = float64(j%2) * math.Pi
		axes[8][j] = -axes[5][j]
		axes[10][j] = wrap(axes[2][j] + axes[7][j])
	}
	p := FindPatterns(axes, 3, nil)
	if p.Symmetric[0].Relations[0] != 3 || p.Symmetric[0].Error > 1e-9 {
		t.Errorf("symmetric: %+v", p.Symmetric)
	}
	if r := p.Inverse[0].Relations; r[0] != 5 || r[1] != 8 || p.Inverse[0].Error > 1e-9 {
		t.Errorf("inverse: %+v", p.Inverse)
	}
	found := false
	for _, c := range p.Composition[:2] { // 2∘7 and 7∘2 both compose to 10
		r := c.Relations
		found = found || (r[2] == 10 && ((r[0] == 2 && r[1] == 7) || (r[0] == 7 && r[1] == 2)) && c.Error < 1e-9)
	}
	if !found {
		t.Errorf("composition: %+v", p.Composition)
	}
	if e := p.Symmetric[1].Error; e < 0.5 {
		t.Errorf("a random relation scored %.3f for symmetry", e)
	}
	var b bytes.Buffer
	WritePatterns(&b, p, []string{"", "", "+a", "+sym"})
	if !strings.Contains(b.String(), "| 3 +sym | 0.0000 |") {
		t.Errorf("table:\n%s", b.String())
	}
}

func TestMeanAngularError(t *testing.T) {
	if e := MeanAngularError([]float64{math.Pi - 0.1, 3}, []float64{math.Pi - 0.1, 3}); !(math.Abs(e-(0.2+(2*math.Pi-6))/2) <= 1e-12) {
		t.Errorf("got %v", e)
	}
	// Angles of the caller's own, beyond the lemma sums' 3π: wrapped all the same, and an
	// infinite or NaN one gives NaN (it once looped for ever on an infinity).
	for _, c := range []struct{ x, want float64 }{
		{10*math.Pi + 0.5, 0.5}, {-10*math.Pi - 0.5, 0.5}, {1e6, math.Abs(math.Remainder(1e6, 2*math.Pi))},
		{math.Inf(1), math.NaN()}, {math.Inf(-1), math.NaN()}, {math.NaN(), math.NaN()},
	} {
		got := MeanAngularError([]float64{c.x})
		if math.IsNaN(c.want) != math.IsNaN(got) || !math.IsNaN(got) && math.Abs(got-c.want) > 1e-9 {
			t.Errorf("MeanAngularError(%v) = %v, want %v", c.x, got, c.want)
		}
	}
}

// TestCompositionsExact: the composition list is the exact top over every triple, equal to
// a brute-force search (MeanAngularError on each), where the planted composition shows only
// in the later dimensions (a search that shortlists by the first ones misses it), and for
// angles at the ends of [-π, π].
func TestCompositionsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n, d := 40, 80
	axes := make([][]float64, n)
	for r := range axes {
		axes[r] = make([]float64, d)
		for j := range axes[r] {
			axes[r][j] = (rng.Float64()*2 - 1) * math.Pi
		}
	}
	for j := 20; j < d; j++ { // 3∘7 = 11 in the last 60 dimensions only
		axes[11][j] = math.Remainder(axes[3][j]+axes[7][j], 2*math.Pi)
	}
	for j := 0; j < 8; j++ { // saturated angles
		axes[20][j], axes[21][j], axes[22][j] = math.Pi, math.Pi, -math.Pi
	}
	var want []PatternScore
	for a := 0; a < n; a++ {
		for b := a + 1; b < n; b++ {
			s := make([]float64, d)
			for j := range s {
				s[j] = axes[a][j] + axes[b][j]
			}
			for c := 0; c < n; c++ {
				if c != a && c != b {
					neg := make([]float64, d)
					for j := range neg {
						neg[j] = -axes[c][j]
					}
					want = append(want, PatternScore{[]int{a, b, c}, MeanAngularError(s, neg)})
				}
			}
		}
	}
	slices.SortStableFunc(want, comparePatterns)
	for _, top := range []int{1, 5, 40, 100000} { // the last: every triple (29,640)
		w := want[:min(top, len(want))]
		got := FindPatterns(axes, top, nil).Composition
		if !slices.EqualFunc(got, w, func(x, y PatternScore) bool {
			return slices.Equal(x.Relations, y.Relations) && math.Abs(x.Error-y.Error) < 1e-12
		}) {
			t.Errorf("top %d: got %d patterns, want %d; the first: %v, want %v", top, len(got), len(w), got[:min(5, len(got))], w[:min(5, len(w))])
		}
	}
	if r := FindPatterns(axes, 1, nil).Composition[0].Relations; !slices.Equal(r, []int{3, 7, 11}) {
		t.Errorf("the planted 3∘7 = 11 is not the strongest composition: %v", r)
	}
}

// TestPatternsEveryRelation: with a top above the counts, every relation is scored for
// symmetry, every pair for inversion and every triple for composition (none below three
// relations), each with its lemma error, best first. Small counts are where a bound off
// by one drops the last relation or the only triples.
func TestPatternsEveryRelation(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for n := 1; n <= 5; n++ {
		axes := make([][]float64, n)
		for r := range axes {
			axes[r] = make([]float64, 7)
			for j := range axes[r] {
				axes[r][j] = (rng.Float64()*2 - 1) * math.Pi
			}
		}
		neg := func(r int) []float64 {
			v := make([]float64, len(axes[r]))
			for j, x := range axes[r] {
				v[j] = -x
			}
			return v
		}
		var sym, inv, comp []PatternScore
		for a := range n {
			sym = append(sym, PatternScore{[]int{a}, MeanAngularError(axes[a], axes[a])})
			for b := a + 1; b < n; b++ {
				inv = append(inv, PatternScore{[]int{a, b}, MeanAngularError(axes[a], axes[b])})
				for c := range n {
					if c != a && c != b {
						comp = append(comp, PatternScore{[]int{a, b, c}, MeanAngularError(axes[a], axes[b], neg(c))})
					}
				}
			}
		}
		p := FindPatterns(axes, 100, nil)
		for _, k := range []struct {
			name      string
			got, want []PatternScore
		}{{"symmetric", p.Symmetric, sym}, {"inverse", p.Inverse, inv}, {"composition", p.Composition, comp}} {
			slices.SortStableFunc(k.want, comparePatterns)
			if !slices.EqualFunc(k.got, k.want, func(x, y PatternScore) bool {
				return slices.Equal(x.Relations, y.Relations) && math.Abs(x.Error-y.Error) < 1e-12
			}) {
				t.Errorf("%d relations, %s: got %v, want %v", n, k.name, k.got, k.want)
			}
		}
	}
}
