package computetest

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/rocone/rocone/pkg/compute"
)

// TF32Case is one float32 bit pattern and its TF32 rounding (compute.RoundTF32, the
// hardware's cvt.rna.tf32.f32).
type TF32Case struct {
	Name    string
	In, Out uint32
}

// TF32Cases are the hand-picked patterns every implementation of the TF32 rounding is
// tested on (Go's compute.RoundTF32, the kernels' tf32_round under the emulator and on the
// device): the cases where round-to-nearest-ties-away differs from truncation and from
// ties-to-even, carries into the exponent and to infinity, subnormals, zeros, Inf, NaN.
var TF32Cases = []TF32Case{
	{"+0", 0x00000000, 0x00000000},
	{"-0", 0x80000000, 0x80000000},
	{"1", 0x3f800000, 0x3f800000},
	{"already tf32", 0x3f802000, 0x3f802000},
	{"below half", 0x3f800fff, 0x3f800000},
	{"tie, even kept bit: away (even would stay)", 0x3f801000, 0x3f802000},
	{"tie, odd kept bit", 0x3f803000, 0x3f804000},
	{"negative tie: away from zero", 0xbf801000, 0xbf802000},
	{"above half", 0x3f801001, 0x3f802000},
	{"negative below half", 0xbf800fff, 0xbf800000},
	{"carry into the exponent", 0x3fffffff, 0x40000000},
	{"tie carrying into the exponent", 0x3ffff000, 0x40000000},
	{"just below the carry", 0x3fffefff, 0x3fffe000},
	{"largest tf32", 0x7f7fe000, 0x7f7fe000},
	{"below the largest tf32's half-way", 0x7f7fefff, 0x7f7fe000},
	{"tie above the largest tf32: Inf", 0x7f7ff000, 0x7f800000},
	{"largest float32: Inf", 0x7f7fffff, 0x7f800000},
	{"negative largest float32: -Inf", 0xff7fffff, 0xff800000},
	{"smallest normal", 0x00800000, 0x00800000},
	{"subnormal below half: 0", 0x00000fff, 0x00000000},
	{"smallest subnormal: 0", 0x00000001, 0x00000000},
	{"subnormal tie", 0x00001000, 0x00002000},
	{"negative subnormal tie", 0x80001000, 0x80002000},
	{"subnormal odd tie", 0x00003000, 0x00004000},
	{"largest subnormal: smallest normal", 0x007fffff, 0x00800000},
	{"+Inf", 0x7f800000, 0x7f800000},
	{"-Inf", 0xff800000, 0xff800000},
	{"quiet NaN", 0x7fc00000, 0x7fc00000},
	{"NaN with low payload only", 0x7f800001, 0x7fc00000},
	{"negative NaN", 0xffc01234, 0xffc00000},
	{"NaN all ones", 0x7fffffff, 0x7fffe000},
}

// RoundTF32Ref is an independent reference for compute.RoundTF32 on finite values: x
// rounded to the nearest multiple of its TF32 spacing 2^(e−10) (e its exponent, at least
// −126 for subnormals), halves away from zero (math.Round), in float64, where every step
// is exact.
func RoundTF32Ref(x float32) float32 {
	if x == 0 || math.IsInf(float64(x), 0) || math.IsNaN(float64(x)) {
		return x
	}
	_, e := math.Frexp(float64(x)) // x = f·2^e, f in [0.5, 1): the leading bit is 2^(e−1)
	e = max(e-1, -126)
	q := math.Ldexp(1, e-10)
	return float32(math.Round(float64(x)/q) * q)
}

// LinearTF32 is what one linear layer (y = x·Wᵀ + b, dx += dy·W, dW += dyᵀ·x) must give
// with TF32 products, for checking a backend's TF32 GEMMs: for each output, the result
// in float64 from the factors rounded to TF32 (TF32) and from the unrounded factors
// (FP32), and its scale Σ|a·b| (+|b| or |initial value|), the natural unit of a sum's
// rounding error.
type LinearTF32 struct {
	Rows, In, Out int
	X, W, B, DY   []float32 // the inputs
	DX0, DW0      []float32 // the initial gradients the backward adds to
	Y, DX, DW     Expect
}

// Expect is one output of LinearTF32.
type Expect struct{ TF32, FP32, Scale []float64 }

// NewLinearTF32 draws the inputs of a layer of the given shape, uniform in [−1, 1), and
// computes the expectations.
func NewLinearTF32(rng *rand.Rand, rows, in, out int) *LinearTF32 {
	l := &LinearTF32{Rows: rows, In: in, Out: out,
		X: randSlice(rng, rows*in), W: randSlice(rng, out*in), B: randSlice(rng, out), DY: randSlice(rng, rows*out),
		DX0: randSlice(rng, rows*in), DW0: randSlice(rng, out*in)}
	x, w, b, dy := f64(l.X), f64(l.W), f64(l.B), f64(l.DY)
	abs := func(v []float64) []float64 {
		out := make([]float64, len(v))
		for i, x := range v {
			out[i] = math.Abs(x)
		}
		return out
	}
	ref := compute.Reference[float64]{}
	tf := compute.WithMatmul[float64](ref, compute.MatmulTF32)
	id := func(v []float64) []float64 { return v }
	for _, c := range []struct {
		k   compute.Kernels[float64]
		f   func([]float64) []float64 // applied to every input: the scale is the sum of |terms|
		out func(*Expect) *[]float64
	}{
		{tf, id, func(e *Expect) *[]float64 { return &e.TF32 }},
		{ref, id, func(e *Expect) *[]float64 { return &e.FP32 }},
		{ref, abs, func(e *Expect) *[]float64 { return &e.Scale }},
	} {
		y := make([]float64, rows*out)
		c.k.LinearForward(y, c.f(x), c.f(w), c.f(b), rows, in, out)
		dx, dw := c.f(f64(l.DX0)), c.f(f64(l.DW0))
		c.k.LinearBackward(dx, dw, nil, c.f(dy), c.f(x), c.f(w), rows, in, out)
		*c.out(&l.Y), *c.out(&l.DX), *c.out(&l.DW) = y, dx, dw
	}
	return l
}

func f64(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

// TF32AccumulationTol is the error a float32 sum of k+2 terms (k products, a bias or an
// initial value, and the output's own rounding) may have relative to its scale Σ|terms|,
// doubled for the tensor cores' truncating additions: (k+2)·2⁻²³.
func TF32AccumulationTol(k int) float64 { return float64(k+2) * 0x1p-23 }

// TF32MaxError bounds the effect of TF32 on a product sum relative to its scale: each
// factor is off by at most 2⁻¹¹ relative, so a product by 2⁻¹⁰ (+2⁻²²).
const TF32MaxError = 0x1p-10 + 0x1p-22

// CheckTF32 checks got, a backend's TF32 result for e over a reduction of length k: it
// must equal e.TF32 within the float32 accumulation error (TF32AccumulationTol), and its
// distance from the FP32 result must look like TF32's rounding, between 2⁻¹⁶ (far above
// float32 noise) and TF32MaxError relative to the scale, and at least 8 times its distance
// from e.TF32 — so that a backend that forgot to round (or rounded too much) fails. (That
// second check needs enough products for its largest effect to be typical: it is made
// when the output has at least 256 products, len(got)·k.) It returns the two largest
// relative errors.
func CheckTF32(what string, got []float32, e Expect, k int) (errTF32, errFP32 float64, err error) {
	if len(got) != len(e.TF32) {
		return 0, 0, fmt.Errorf("%s: %d values, want %d", what, len(got), len(e.TF32))
	}
	for i, g := range got {
		s := math.Max(e.Scale[i], 1e-30)
		d := math.Abs(float64(g)-e.TF32[i]) / s
		if d > TF32AccumulationTol(k) || math.IsNaN(float64(g)) {
			return d, 0, fmt.Errorf("%s[%d] = %.9g, the TF32 reference %.9g: |Δ| = %.3g of the scale %.3g, tolerance %.3g",
				what, i, g, e.TF32[i], d, s, TF32AccumulationTol(k))
		}
		errTF32 = math.Max(errTF32, d)
		errFP32 = math.Max(errFP32, math.Abs(float64(g)-e.FP32[i])/s)
	}
	if len(got)*k >= 256 && !(errFP32 >= 0x1p-16 && errFP32 <= TF32MaxError+TF32AccumulationTol(k) && errFP32 >= 8*errTF32) {
		return errTF32, errFP32, fmt.Errorf("%s: the largest distance from the FP32 result is %.3g of the scale (from the TF32 reference %.3g): "+
			"not TF32's rounding, which is between %.3g and %.3g and far above the accumulation error", what, errFP32, errTF32, 0x1p-16, TF32MaxError)
	}
	return errTF32, errFP32, nil
}
