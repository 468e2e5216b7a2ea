// Package vmath holds float32 loops of the model's element-wise maths, with AVX-512
// versions on amd64 (and AVX2 ones, with the same bits, where AVX-512 is missing): tanh by
// a rational approximation (bounded error, see Tanh), sin and cos, the angle mapping's
// backward, and ReLU (AVX-512 only: it is exact either way). Package model uses them for float32 only; its float64 path (the gradient checks)
// keeps package math.
package vmath

import (
	"math"
	"math/bits"
)

// Tanh sets dst[i] = mul·tanh(src[i]/div) + add for i < len(src) (dst may be src, but
// must not overlap it otherwise).
//
// For |x| < 7 (x = src[i]/div, the float32 quotient, as the exact path computes it), the
// assembly loops (AVX-512, or AVX2 and FMA, with the same bits) compute Eigen's rational
// approximation (generic_fast_tanh_float, with FMA; tanhEigen is it in Go): x itself for
// |x| < 0.0004, else x·P(x²)/Q(x²) with P of degree 6 and Q of degree 3, within 5e-7
// relative of the exact tanh (a few float32 ulp). Without them (or with PureGo) tanh is
// float64 math.Tanh rounded to float32, the exactly rounded value: the same rational
// evaluated without FMA drifts further from PyTorch's tanh (QE-ConE's gradient of the
// intersection's first layer 1.11e-5 of its scale off against 4.4e-6 exactly rounded,
// issue 11's tolerance being 1e-5). NaN stays NaN.
//
// For |x| ≥ 7 it is PyTorch's float32 tanh (Sleef's tanhf, which ConE's reference code
// runs): ±1 beyond ±8.664339742 (where Sleef saturates, earlier than the exact rounding
// at 9.011; Eigen's saturates at 7.9053), else the exactly rounded tanh, which is
// Sleef's there (PyTorch 1.13 differs from it in none of 200,001 grid points on
// [4, 8.664]). This is
// where it matters: an angle π·tanh(x) within a few ulp of ±π is float32(π) (tanh = 1)
// or a float32 below it, whose sines have opposite signs, and that sign decides on which
// side of the ±π cut an intersection of such cones lands (model's intersection), which
// ConE's MLP then sees as a different input. So the angles there are bit-for-bit the
// reference's. Below 7, 1 − tanh > 1.6e-6, the angle is at least 5e-6 from ±π, and
// the approximation's few ulp cannot move it across. The exact band costs a float64
// tanh per element in [7, 8.66]; beyond it, ±1 costs nothing.
func Tanh(dst, src []float32, div, mul, add float32) {
	dst = dst[:len(src)]
	if len(src) == 0 {
		return
	}
	if !hasAsm || PureGo {
		for i, s := range src {
			if x := s / div; x >= tanhExactFrom || x <= -tanhExactFrom { // NaN: neither
				dst[i] = float32(mul*tanhTorch(x)) + add
			} else {
				dst[i] = mul*tanhRounded(x) + add
			}
		}
		return
	}
	if &dst[0] != &src[0] {
		tanhAsm(dst, src, div, mul, add)
		tanhFixSaturated(dst, src, div, mul, add)
		return
	}
	// In place: the exact values need src, which the assembly overwrites, so each chunk
	// goes through a copy.
	var in [tanhChunk]float32
	for lo := 0; lo < len(src); lo += tanhChunk {
		hi := min(lo+tanhChunk, len(src))
		c := in[:hi-lo]
		copy(c, src[lo:hi])
		tanhAsm(dst[lo:hi], c, div, mul, add)
		tanhFixSaturated(dst[lo:hi], c, div, mul, add)
	}
}

// tanhFixSaturated overwrites dst[i] with the exact value (tanhTorch) where |src[i]/div|
// ≥ 7. |src[i]| < 6.99·|div| implies |src[i]/div| < 7 after rounding (0.01 leaves room
// for the rounding of both products), so only the others pay for the division; the test
// compares the bits of |src[i]| (ordered as the floats, NaN above all), by blocks of 8
// (overAsm, or the scalar loop past the whole blocks), and most blocks hold none.
func tanhFixSaturated(dst, src []float32, div, mul, add float32) {
	lim := math.Float32bits(float32(6.99)*float32(math.Abs(float64(div)))) - 1
	dst = dst[:len(src)]
	var masks [tanhChunk / 8]uint8
	for lo := 0; lo < len(src); lo += tanhChunk {
		hi := min(lo+tanhChunk, len(src))
		nb := (hi - lo + 7) / 8
		whole := overAsm(masks[:], src[lo:hi], lim)
		for b := whole; b < nb; b++ { // the blocks left, the last maybe partial
			var m uint8
			for j, s := range src[lo+8*b : min(lo+8*b+8, hi)] {
				m |= uint8((lim-math.Float32bits(s)&^(1<<31))>>31) << j
			}
			masks[b] = m
		}
		for b, m := range masks[:nb] {
			for ; m != 0; m &= m - 1 {
				i := lo + 8*b + bits.TrailingZeros8(m)
				if x := src[i] / div; x >= tanhExactFrom || x <= -tanhExactFrom { // NaN: neither
					dst[i] = float32(mul*tanhTorch(x)) + add
				}
			}
		}
	}
}

const (
	tanhChunk     = 256 // in place, Tanh's copy of a chunk of src (on the stack)
	tanhExactFrom = 7
	// sleefTanhSat is where Sleef's tanhf returns ±1 (|x| > it, in float32).
	sleefTanhSat float32 = 8.664339742
)

// tanhTorch is PyTorch's float32 tanh for |x| ≥ 7 (see Tanh): ±1 beyond the saturation
// point, else the exactly rounded tanh, looked up. On [7, 8.664] the rounded tanh takes
// only 28 values (1 − k·2⁻²⁴), at least 0.018 apart in x; the band is cut into satCells
// cells of 0.0065, each holding at most one change of value: its value at the cell's
// start, where it changes and the value after.
func tanhTorch(x float32) float32 {
	ax := x
	if ax < 0 {
		ax = -ax
	}
	t := float32(1)
	if ax <= sleefTanhSat {
		c := &satTable[min(int((ax-tanhExactFrom)*satScale), satCells-1)]
		t = c.t0
		if ax >= c.x1 {
			t = c.t1
		}
	}
	if x < 0 {
		return -t
	}
	return t
}

const satCells = 256

// satScale is cells per unit of x.
const satScale = satCells / (sleefTanhSat - tanhExactFrom)

type satCell struct{ t0, x1, t1 float32 }

var satTable [satCells]satCell

// init fills satTable from the exactly rounded tanh, and checks that no cell holds two
// changes of value.
func init() {
	round := func(x float32) float32 { return float32(math.Tanh(float64(x))) }
	// next is the smallest float32 above x (≤ the saturation point + 1 ulp) whose rounded
	// tanh exceeds round(x); tanh is monotone and positive floats order as their bits.
	next := func(x float32) float32 {
		t := round(x)
		lo, hi := math.Float32bits(x), math.Float32bits(sleefTanhSat)+1
		for lo+1 < hi {
			mid := lo + (hi-lo)/2
			if round(math.Float32frombits(mid)) > t {
				hi = mid
			} else {
				lo = mid
			}
		}
		return math.Float32frombits(hi)
	}
	for i := range satTable {
		start := float32(tanhExactFrom) + float32(i)/satScale
		// The cell of the first float32 at or after start, as tanhTorch computes it.
		for start > tanhExactFrom && int((start-tanhExactFrom)*satScale) >= i {
			start = math.Nextafter32(start, 0)
		}
		for int((start-tanhExactFrom)*satScale) < i {
			start = math.Nextafter32(start, 2*sleefTanhSat)
		}
		c := satCell{t0: round(start), x1: float32(math.Inf(1))}
		c.t1 = c.t0
		if x := next(start); x <= sleefTanhSat && int((x-tanhExactFrom)*satScale) == i {
			c.x1, c.t1 = x, round(x)
			if y := next(x); y <= sleefTanhSat && int((y-tanhExactFrom)*satScale) == i {
				panic("vmath: two tanh changes in one saturation cell")
			}
		}
		satTable[i] = c
	}
}

// PureGo disables the assembly loops (tests compare the two).
var PureGo bool

// The rational approximation's coefficients.
const (
	tanhClamp = 7.90531110763549805
	tanhTiny  = 0.0004
	alpha1    = 4.89352455891786e-03
	alpha3    = 6.37261928875436e-04
	alpha5    = 1.48572235717979e-05
	alpha7    = 5.12229709037114e-08
	alpha9    = -8.60467152213735e-11
	alpha11   = 2.00018790482477e-13
	alpha13   = -2.76076847742355e-16
	beta0     = 4.89352518554385e-03
	beta2     = 2.26843463243900e-03
	beta4     = 1.18534705686654e-04
	beta6     = 1.19825839466702e-06
)

// tanhRounded is the exactly rounded float32 tanh (the pure-Go loop's).
func tanhRounded(x float32) float32 { return float32(math.Tanh(float64(x))) }

// tanhEigen is the AVX-512 loop's approximation for one value, in Go without FMA (so
// within a few ulp of the loop's), for its tests.
func tanhEigen(a float32) float32 {
	if a > -tanhTiny && a < tanhTiny {
		return a
	}
	x := a
	if x > tanhClamp {
		x = tanhClamp
	} else if x < -tanhClamp {
		x = -tanhClamp
	}
	x2 := x * x
	p := x2*alpha13 + alpha11
	p = x2*p + alpha9
	p = x2*p + alpha7
	p = x2*p + alpha5
	p = x2*p + alpha3
	p = x2*p + alpha1
	p = x * p
	q := x2*beta6 + beta4
	q = x2*q + beta2
	q = x2*q + beta0
	return p / q
}

// AngleBackward adds to dRaw the gradient through θ = π·tanh(raw/R), from θ:
// dRaw[i] += dTheta[i]·(π/R)·(1 − t²), t = θ[i]/π (float32 operations in that order).
func AngleBackward(dRaw, dTheta, theta []float32, R float32) {
	dRaw, theta = dRaw[:len(dTheta)], theta[:len(dTheta)]
	c := float32(math.Pi) / R
	done := 0
	if hasAsm && !PureGo {
		done = angleBwdAsm(dRaw, dTheta, theta, c)
	}
	for i := done; i < len(dTheta); i++ {
		t := theta[i] / math.Pi
		dRaw[i] += dTheta[i] * c * (1 - t*t)
	}
}

// ReLU sets x[i] = 0 where x[i] < 0 (NaN and −0 stay as they are).
func ReLU(x []float32) {
	done := 0
	if hasAVX512 && !PureGo {
		done = reluAsm(x)
	}
	for i := done; i < len(x); i++ {
		if x[i] < 0 {
			x[i] = 0
		}
	}
}

// ReLUBackward sets dx[i] = 0 where !(out[i] > 0).
func ReLUBackward(dx, out []float32) {
	out = out[:len(dx)]
	done := 0
	if hasAVX512 && !PureGo {
		done = reluBwdAsm(dx, out)
	}
	for i := done; i < len(dx); i++ {
		if !(out[i] > 0) {
			dx[i] = 0
		}
	}
}

// Prefetch hints that the n float32 values from x[0] will be read soon (a no-op where
// there is no assembly). It never faults.
func Prefetch(x []float32) {
	if len(x) > 0 && hasAVX512 {
		prefetchAsm(x)
	}
}

// sinCosLimit is the largest |x| for which SinCos's reduction is accurate; beyond it (or
// for NaN) SinCos uses math.Sincos.
const sinCosLimit = 8192

// Cephes sinf/cosf coefficients on [−π/4, π/4].
const (
	sinC1 = -1.6666654611e-1
	sinC2 = 8.3321608736e-3
	sinC3 = -1.9515295891e-4
	cosC1 = 4.166664568298827e-2
	cosC2 = -1.388731625493765e-3
	cosC3 = 2.443315711809948e-5
)

// SinCos sets s[i], c[i] = sin x[i], cos x[i], to about 1e-7 absolute (Cephes sinf and
// cosf: x reduced by multiples of π/2, polynomials on [−π/4, π/4]).
func SinCos(s, c, x []float32) {
	s, c = s[:len(x)], c[:len(x)]
	done := 0
	if hasAsm && !PureGo {
		done = sinCosAsm(s, c, x)
	}
	for i := done; i < len(x); i++ {
		s[i], c[i] = sincos32(x[i])
	}
}

// sincos32 is SinCos for one value (the reduction in float64).
func sincos32(x float32) (sin, cos float32) {
	xf := float64(x)
	if !(math.Abs(xf) <= sinCosLimit) {
		s, c := math.Sincos(xf)
		return float32(s), float32(c)
	}
	j := math.RoundToEven(xf * (2 / math.Pi))
	r := float32(xf - j*(math.Pi/2))
	z := r * r
	sn := r + r*z*(sinC1+z*(sinC2+z*sinC3))
	cs := 1 - 0.5*z + z*z*(cosC1+z*(cosC2+z*cosC3))
	switch int64(j) & 3 {
	case 0:
		return sn, cs
	case 1:
		return cs, -sn
	case 2:
		return -sn, -cs
	}
	return -cs, sn
}
