package adam

import (
	"fmt"
	"math"
	"math/big"
	"testing"
)

func TestAt(t *testing.T) {
	c := Default(1e-3)
	for _, tc := range []struct {
		t                 int64
		stepSize, bc2Sqrt float64 // lr/(1−β1^t), √(1−β2^t), worked out by hand
	}{
		{1, 1e-3 / 0.1, math.Sqrt(0.001)},
		{2, 1e-3 / 0.19, math.Sqrt(1 - 0.999*0.999)},
		{3, 1e-3 / (1 - 0.729), math.Sqrt(1 - 0.999*0.999*0.999)},
		{1_000_000, 1e-3, 1}, // the corrections have died out
	} {
		f := c.At(tc.t)
		want := Factors{
			B1: 0.9, B2: 0.999, C1: float32(1 - 0.9), C2: float32(1 - 0.999),
			StepSize: float32(tc.stepSize), BC2Sqrt: float32(tc.bc2Sqrt), Eps: 1e-8,
		}
		// The step factors within one float32 rounding of the hand-worked value: At
		// computes in float64 and rounds once, as PyTorch passes its Python floats.
		near := func(got, want float32) bool {
			return math.Abs(float64(got-want)) <= float64(math.Nextafter32(want, 2*want)-want)
		}
		if f.B1 != want.B1 || f.B2 != want.B2 || f.C1 != want.C1 || f.C2 != want.C2 || f.Eps != want.Eps ||
			!near(f.StepSize, want.StepSize) || !near(f.BC2Sqrt, want.BC2Sqrt) {
			t.Errorf("At(%d) = %+v, want %+v", tc.t, f, want)
		}
	}
	// 1−β1 is rounded from float64, not computed in float32 (1 − float32(0.9) differs).
	if got, f32 := c.At(1).C1, float32(1)-float32(0.9); got == f32 {
		t.Errorf("C1 = %v is 1−float32(0.9): it should be float32(1−0.9)", got)
	}
}

// One update of one element by the formula in the package comment, with the factors of
// the first update: Adam's first step moves a parameter by about lr, whatever the
// gradient's size.
func ExampleConfig_At() {
	f := Default(0.01).At(1)
	p, m, v, g := float32(1), float32(0), float32(0), float32(250)
	m = f.B1*m + f.C1*g
	v = f.B2*v + f.C2*g*g
	p -= f.StepSize * m / (float32(math.Sqrt(float64(v)))/f.BC2Sqrt + f.Eps)
	fmt.Printf("%.4f\n", p)
	// Output: 0.9900
}

// TestAtRoundedOnce: At's step factors are the exact lr/(1−β1^t) and √(1−β2^t), worked out
// here in 256-bit arithmetic from the same float64 hyperparameters, rounded to the
// nearest float32, once, for every update t up to 3,000 and hyperparameters other than
// the defaults too. Rounding an intermediate to float32 on the way (1−β2^t before its
// root, say) moves a factor by an ulp at many t, which TestAt's tolerance of an ulp
// allows; PyTorch rounds the Python float it passes once. Where the exact value lies
// within a billionth of the midpoint of two float32s, float64's own rounding may tip it
// either way, and either is accepted.
func TestAtRoundedOnce(t *testing.T) {
	const prec = 256
	bigf := func(x float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(x) }
	// check reports whether got is the float32 nearest to exact.
	check := func(got float32, exact *big.Float) bool {
		near, _ := exact.Float32()
		if got == near {
			return true
		}
		// The midpoint between near and its neighbour toward got: exact may be on either
		// side of it within float64's error.
		other := math.Nextafter32(near, got)
		if other != got {
			return false
		}
		mid := new(big.Float).SetPrec(prec).Add(bigf(float64(near)), bigf(float64(other)))
		mid.Quo(mid, bigf(2))
		dist := new(big.Float).SetPrec(prec).Sub(exact, mid)
		dist.Quo(dist, exact)
		d, _ := dist.Float64()
		return math.Abs(d) < 1e-9
	}
	for _, c := range []Config{
		Default(1e-3),
		Default(0.05),
		{LR: 3e-4, Beta1: 0.8, Beta2: 0.95, Eps: 1e-6},
		{LR: 1, Beta1: 0.5, Beta2: 0.9999, Eps: 1e-8},
	} {
		pow1, pow2 := bigf(1), bigf(1) // β1^t, β2^t
		for step := int64(1); step <= 3000; step++ {
			pow1.Mul(pow1, bigf(c.Beta1))
			pow2.Mul(pow2, bigf(c.Beta2))
			stepSize := new(big.Float).SetPrec(prec).Sub(bigf(1), pow1)
			stepSize.Quo(bigf(c.LR), stepSize)
			bc2Sqrt := new(big.Float).SetPrec(prec).Sub(bigf(1), pow2)
			bc2Sqrt.Sqrt(bc2Sqrt)
			f := c.At(step)
			if !check(f.StepSize, stepSize) {
				t.Fatalf("%+v: At(%d).StepSize = %v, want %v rounded once to float32", c, step, f.StepSize, stepSize)
			}
			if !check(f.BC2Sqrt, bc2Sqrt) {
				t.Fatalf("%+v: At(%d).BC2Sqrt = %v, want %v rounded once to float32", c, step, f.BC2Sqrt, bc2Sqrt)
			}
		}
	}
}
