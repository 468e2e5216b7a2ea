package adam

import (
	"fmt"
	"math"
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
