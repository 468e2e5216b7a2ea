package model

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Finite-difference gradient checking, shared by all tests.
//
// The numerical derivative is the fourth-order central difference
//
//	D(h) = [8(f(x+h) − f(x−h)) − (f(x+2h) − f(x−2h))] / 12h,
//
// whose truncation error is O(h⁴) instead of the O(h²) of the two-point one, so the
// comparison is limited by float64 rounding (about 1e-16·|f|/h), not by the formula.
// Operator tests use h = 1e-3; the full-loss tests use h = 1e-4 (their scalar is O(1),
// and the smaller step keeps the many kinks of a whole query graph out of the margin).
//
// Kinks. Every point is checked to be at least 2h away from any kink or jump (ReLU, min,
// max, fold, clamp, wrap, the inside test, ...): D(h) is compared with D(h/2), which
// agree to rounding when f is smooth on [x−2h, x+2h] and differ when a kink lies inside.
// Inputs that the tests construct near a kink (apertures near 0 and π, axes near ±π) are
// placed 5e-3 or more from it; random draws that happen to fall within the margin are
// redrawn from the next seed (never silently skipped), and each test passes only on a
// draw where every component was checked.
//
// Error measure, per component: |analytic − numeric| / max(|analytic|, |numeric|, fdFloor),
// which must be below fdTol. The floor keeps components that are zero or nearly so
// (|g| < 1e-5) from dividing rounding noise by zero: those are held to an absolute error
// of 1e-10.
const (
	fdTol     = 1e-5
	fdFloor   = 1e-5
	maxRedraw = 30
)

// fdParam is one input of the function under test: the values the check perturbs in
// place and the analytic gradient to compare with.
type fdParam struct {
	name string
	x    []float64
	grad []float64
}

type fdResult struct {
	maxErr  float64
	worst   string
	kink    string // non-empty when a component sits within the margin of a kink
	checked int
}

// fdCheck compares the analytic gradients of ps with finite differences of f.
func fdCheck(f func() float64, ps []fdParam, step float64) fdResult {
	var res fdResult
	deriv := func(x []float64, i int, h float64) float64 {
		x0 := x[i]
		at := func(dx float64) float64 { x[i] = x0 + dx; return f() }
		v := (8*(at(h)-at(-h)) - (at(2*h) - at(-2*h))) / (12 * h)
		x[i] = x0
		return v
	}
	for _, p := range ps {
		for i := range p.x {
			num := deriv(p.x, i, step)
			half := deriv(p.x, i, step/2)
			// A kink inside the stencil shows as D(h) ≠ D(h/2); flag any disagreement
			// that could reach half the tolerance.
			if !(math.Abs(num-half) <= fdTol/2*math.Max(math.Abs(half), fdFloor)) {
				res.kink = fmt.Sprintf("%s[%d] (D(h)=%g, D(h/2)=%g)", p.name, i, num, half)
				return res
			}
			a := p.grad[i]
			err := math.Abs(a-half) / math.Max(math.Max(math.Abs(a), math.Abs(half)), fdFloor)
			res.checked++
			if err > res.maxErr || math.IsNaN(err) {
				res.maxErr = err
				res.worst = fmt.Sprintf("%s[%d]: analytic %.12g, numeric %.12g", p.name, i, a, half)
			}
		}
	}
	return res
}

// gradTest draws a case from seed, redrawing from the next seed while the point lies
// within the margin of a kink, and checks it with step 1e-3. build returns the function
// and its inputs with their analytic gradients.
func gradTest(t *testing.T, seed uint64, build func(rng *rand.Rand) (func() float64, []fdParam)) {
	t.Helper()
	gradTestStep(t, seed, 1e-3, build)
}

// gradTestStep is gradTest with a given finite-difference step.
func gradTestStep(t *testing.T, seed uint64, step float64, build func(rng *rand.Rand) (func() float64, []fdParam)) {
	t.Helper()
	for try := 0; try < maxRedraw; try++ {
		rng := rand.New(rand.NewPCG(seed, uint64(try)))
		f, ps := build(rng)
		res := fdCheck(f, ps, step)
		if res.kink != "" {
			t.Logf("draw %d lies within the kink margin at %s; redrawing", try, res.kink)
			continue
		}
		if res.maxErr > fdTol || math.IsNaN(res.maxErr) {
			t.Fatalf("gradient mismatch: relative error %.3g > %g at %s", res.maxErr, fdTol, res.worst)
		}
		if res.checked == 0 {
			t.Fatal("nothing checked")
		}
		t.Logf("checked %d components on draw %d: max relative error %.2g", res.checked, try, res.maxErr)
		return
	}
	t.Fatalf("no draw away from kinks in %d tries", maxRedraw)
}

// dot is Σ c_i·x_i: the scalar that op tests differentiate, c being random weights (so
// the analytic gradient is the backward pass with dOut = c).
func dot(c, x []float64) float64 {
	var s float64
	for i := range c {
		s += c[i] * x[i]
	}
	return s
}

func uniform(rng *rand.Rand, n int, lo, hi float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = lo + (hi-lo)*rng.Float64()
	}
	return out
}

// edgeAxes draws axes in [−π, π), about a third of them within [5e-3, 5e-2] of ±π, the
// wrap point.
func edgeAxes(rng *rand.Rand, n int) []float64 {
	out := uniform(rng, n, -math.Pi, math.Pi)
	for i := range out {
		switch rng.IntN(6) {
		case 0:
			out[i] = math.Pi - (5e-3 + 4.5e-2*rng.Float64())
		case 1:
			out[i] = -math.Pi + (5e-3 + 4.5e-2*rng.Float64())
		}
	}
	return out
}

// edgeApertures draws half-apertures in (0, π), about a third of them within
// [5e-3, 5e-2] of 0 or of π.
func edgeApertures(rng *rand.Rand, n int) []float64 {
	out := uniform(rng, n, 0, math.Pi)
	for i := range out {
		switch rng.IntN(6) {
		case 0:
			out[i] = 5e-3 + 4.5e-2*rng.Float64()
		case 1:
			out[i] = math.Pi - (5e-3 + 4.5e-2*rng.Float64())
		}
	}
	return out
}

func randCones(rng *rand.Rand, n, d int) Cones[float64] {
	return Cones[float64]{Axis: edgeAxes(rng, n*d), Half: edgeApertures(rng, n*d), N: n, Dim: d}
}
