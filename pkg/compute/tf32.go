package compute

import (
	"fmt"
	"math"
)

// Matmul is the precision of the matrix products of the linear layers (ConE's
// projection MLP, the attention intersection): train --matmul, stored in the training
// configuration and the model configuration of a checkpoint.
//
// PyTorch 1.7–1.11 computed matrix products in TF32 on Ampere GPUs by default
// (torch.backends.cuda.matmul.allow_tf32 = True), which is how the paper's runs on A100s
// were computed; here FP32 stays the default and TF32 is opt-in.
type Matmul string

const (
	// MatmulFP32 computes every product in float32 (the default; the zero value "" means
	// the same).
	MatmulFP32 Matmul = "fp32"
	// MatmulTF32 rounds both factors of every matrix product to TF32 (RoundTF32) and
	// accumulates in float32: tensor-core MMA on the CUDA device, the rounding reference
	// (TF32Kernels) on the CPU. Bias additions and the bias gradient (a column sum) are not
	// matrix products and stay float32, as in PyTorch.
	MatmulTF32 Matmul = "tf32"
)

// ParseMatmul reads a --matmul value: fp32 or tf32 ("" is fp32).
func ParseMatmul(s string) (Matmul, error) {
	switch Matmul(s) {
	case "", MatmulFP32:
		return MatmulFP32, nil
	case MatmulTF32:
		return MatmulTF32, nil
	}
	return "", fmt.Errorf("matmul %q: want fp32 or tf32", s)
}

// TF32 reports whether m selects TF32 products.
func (m Matmul) TF32() bool { return m == MatmulTF32 }

// RoundTF32 rounds x to TF32 (1 sign bit, 8 exponent bits, 10 explicit mantissa bits,
// held in a float32 whose 13 low mantissa bits are zero) the way the PTX instruction
// cvt.rna.tf32.f32 does: to the nearest representable value, ties away from zero.
// Subnormals round the same way (no flush to zero); a carry out of the mantissa moves
// into the exponent, and a finite value above the largest TF32 (0x7f7fe000) rounds to
// ±Inf; ±Inf is kept; a NaN stays a NaN (quiet, its sign kept, its payload truncated to
// the TF32 bits). The same function, written in C, is tf32_round in
// cuda/kernels/common.h; both are tested against the same bit patterns.
func RoundTF32(x float32) float32 {
	u := math.Float32bits(x)
	if u&0x7f800000 == 0x7f800000 { // Inf or NaN
		if u&0x007fffff != 0 {
			u |= 0x00400000 // a NaN: quiet, so that it stays a NaN once truncated
		}
		return math.Float32frombits(u & 0xffffe000)
	}
	// Adding half of the last kept place to the magnitude bits and truncating rounds
	// halves up in magnitude: away from zero.
	return math.Float32frombits((u + 0x1000) & 0xffffe000)
}

// TF32Kernels are the kernels of Inner with TF32 matrix products: the factors of every
// product of LinearForward and LinearBackward are rounded to TF32 (RoundTF32) into
// scratch copies, and Inner's own kernel multiplies those (in float32 for a float32
// backend: the product of two TF32 values is exact in float32, so only the order of the
// float32 additions differs from the tensor cores'). The bias and the bias gradient are
// float32 as in PyTorch. The distance kernels are Inner's.
//
// It is the CPU side of Matmul TF32 (slower than the fp32 path by the copies, which is
// fine for a setting meant for the GPU) and the reference the CUDA TF32 kernels are tested
// against. For float64 the values are rounded through float32.
type TF32Kernels[T Float] struct {
	Inner Kernels[T]
}

// WithMatmul returns k computing its matrix products in precision m: k itself for FP32,
// TF32Kernels{k} for TF32.
func WithMatmul[T Float](k Kernels[T], m Matmul) Kernels[T] {
	if !m.TF32() {
		return k
	}
	if t, ok := k.(TF32Kernels[T]); ok {
		return t
	}
	return TF32Kernels[T]{Inner: k}
}

var (
	_ Kernels[float32]        = TF32Kernels[float32]{}
	_ EntityPreparer[float32] = TF32Kernels[float32]{}
)

// roundTF32 returns a copy of x[:n] rounded to TF32.
func roundTF32[T Float](x []T, n int) []T {
	out := make([]T, n)
	for i, v := range x[:n] {
		out[i] = T(RoundTF32(float32(v)))
	}
	return out
}

// LinearForward implements Kernels.LinearForward with TF32 products.
func (k TF32Kernels[T]) LinearForward(y, x, w, b []T, rows, in, out int) {
	checkLen("linear x", x, rows*in)
	checkLen("linear w", w, out*in)
	k.Inner.LinearForward(y, roundTF32(x, rows*in), roundTF32(w, out*in), b, rows, in, out)
}

// LinearBackward implements Kernels.LinearBackward with TF32 products: dx += r(dy)·r(W),
// dW += r(dy)ᵀ·r(x), and db += Σ_r dy from the unrounded dy, summed row by row as in
// Reference.
func (k TF32Kernels[T]) LinearBackward(dx, dw, db, dy, x, w []T, rows, in, out int) {
	checkLen("linear dy", dy, rows*out)
	checkLen("linear x", x, rows*in)
	checkLen("linear w", w, out*in)
	if db != nil {
		checkLen("linear db", db, out)
		for r := 0; r < rows; r++ {
			for o, g := range dy[r*out : (r+1)*out] {
				db[o] += g
			}
		}
	}
	k.Inner.LinearBackward(dx, dw, nil, roundTF32(dy, rows*out), roundTF32(x, rows*in), roundTF32(w, out*in), rows, in, out)
}

// DistanceForward implements Kernels.DistanceForward: Inner's.
func (k TF32Kernels[T]) DistanceForward(dist, axis, half, ent []T, cand []int32, queries, cands, dim int, lambda T) {
	k.Inner.DistanceForward(dist, axis, half, ent, cand, queries, cands, dim, lambda)
}

// DistanceBackward implements Kernels.DistanceBackward: Inner's.
func (k TF32Kernels[T]) DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, ent []T, cand []int32, queries, cands, dim int, lambda T) {
	k.Inner.DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, ent, cand, queries, cands, dim, lambda)
}

// PrepareEntities implements EntityPreparer: Inner's table, or the plain fallback.
func (k TF32Kernels[T]) PrepareEntities(ent []T, rows, dim int) PreparedEntities[T] {
	return PrepareEntities(k.Inner, ent, rows, dim)
}
