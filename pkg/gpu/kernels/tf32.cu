// TF32 matrix products on the tensor cores (train --matmul tf32; PyTorch's allow_tf32):
// the GEMMs of the linear layers with mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32,
// both factors rounded to TF32 (cvt.rna.tf32.f32), products accumulated in float32.
//
//	gemm_tf32_nt   C = A·Bᵀ (+ bias)   y  = x·Wᵀ + b    M=rows N=out K=in
//	gemm_tf32_nn   C += A·B            dx += dy·W       M=rows N=in  K=out
//	gemm_tf32_tn   C += Aᵀ·B           dW += dyᵀ·x      M=out  N=in  K=rows
//	tf32_round_f32 y[i] = tf32_round(x[i]), for the tests of the rounding
//
// They are linear.cu's gemm_nt/nn/tn (same arguments, same launch: block 256, grid
// (ceil(N/64), min(ceil(M/64), 65535)), y grid-strided) with the inner product on the
// tensor cores; linear.cu and its FP32 kernels are untouched. The tile of C (64×64) is
// split over the 8 warps, 32 rows × 16 columns each: 2×2 MMAs of 16×8 per step of 8 along
// K. The K slices (16) of A and B are staged in shared memory k-major, [k][m] and [k][n],
// rows padded to 72 floats so that a warp's fragment loads hit 32 distinct banks, and are
// rounded to TF32 once, as they are stored there.
//
// On the device the MMA is the instruction itself (sm_80 and later: the H100 runs this
// PTX). Under the launch emulator (package emu: this file compiled as C++) there is no
// warp to cooperate with, but there need not be: every lane reads the whole 16×8×8 tile
// from shared memory, so mma_tf32_16x8x8 computes each of its four outputs itself,
//
//	d = (((d + a₀b₀) + a₁b₁) + … + a₇b₇)   in float32, k in order,
//
// where each product of two TF32 values (11-bit significands) is exact in float32 (22
// bits), so only the order and rounding of the additions can differ from the hardware's.
// And they do: the tensor cores add the eight products and the accumulator in one
// operation of their own (aligned to the largest exponent, with truncation rather than
// IEEE round-to-nearest; NVIDIA does not specify it), not in IEEE steps. Device and
// emulator therefore agree to float32 accumulation error (≈1e-6 relative to Σ|a||b|), not
// bit for bit, and the tests compare with a tolerance; the rounding of the inputs, which
// is what makes TF32 differ from FP32 (≈1e-3 relative), is the same function on both
// and is compared exactly (TestTF32Round*). On the device each output is still computed
// by one thread in a fixed order by a deterministic instruction: two runs are bitwise equal.
#include "common.h"

#ifndef __CUDA_ARCH__
#include <string.h>
#endif

#define TF_TM 64
#define TF_TN 64
#define TF_TK 16
#define TF_PAD 72 // padded row of a shared tile: 72 ≡ 8 (mod 32) banks, conflict-free fragments

// tf32_round rounds x to TF32, round to nearest with ties away from zero: on the device the
// hardware's cvt.rna.tf32.f32; in the emulator its definition in bits, which is Go's
// compute.RoundTF32 (same bit patterns tested on both): add half of the last kept place
// (bit 12) to the magnitude and clear the 13 low mantissa bits. ±Inf and NaN are handled
// before the conversion on both: the H200's cvt.rna turns a NaN whose payload lies only in
// the 13 dropped bits (0x7f800001) into +Inf, which would hide a diverged run; here a NaN
// stays a (quiet) NaN.
__device__ __forceinline__ float tf32_round(float x) {
	unsigned u;
	memcpy(&u, &x, 4);
	if ((u & 0x7f800000u) == 0x7f800000u) { // Inf or NaN
		if (u & 0x007fffffu) u |= 0x00400000u;
		u &= 0xffffe000u;
		memcpy(&x, &u, 4);
		return x;
	}
#ifdef __CUDA_ARCH__
	unsigned r;
	asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
	return __uint_as_float(r);
#else
	u = (u + 0x1000u) & 0xffffe000u;
	memcpy(&x, &u, 4);
	return x;
#endif
}

// mma_tf32_16x8x8: one warp's D += A·B for a 16×8×8 tile, A(m, k) = As[k·lda + m] and
// B(k, n) = Bs[k·ldb + n] in shared memory, already rounded to TF32. d is this lane's part
// of the 16×8 accumulator in the MMA's layout: with g = lane/4, t = lane%4, d[q] is
// element (g + 8·(q/2), 2t + q%2). All 32 lanes of the warp must call it together.
__device__ __forceinline__ void mma_tf32_16x8x8(float d[4], const float* As, int lda, const float* Bs, int ldb) {
	const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#ifdef __CUDA_ARCH__
	// The fragments (PTX ISA, mma.m16n8k8 .tf32): a0 (g, t), a1 (g+8, t), a2 (g, t+4),
	// a3 (g+8, t+4) of A [m][k]; b0 (t, g), b1 (t+4, g) of B [k][n].
	unsigned a0 = __float_as_uint(As[t * lda + g]), a1 = __float_as_uint(As[t * lda + g + 8]);
	unsigned a2 = __float_as_uint(As[(t + 4) * lda + g]), a3 = __float_as_uint(As[(t + 4) * lda + g + 8]);
	unsigned b0 = __float_as_uint(Bs[t * ldb + g]), b1 = __float_as_uint(Bs[(t + 4) * ldb + g]);
	asm volatile(
	    "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, "
	    "%3};\n"
	    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
	    : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
#else
	for (int q = 0; q < 4; q++) {
		const int m = g + 8 * (q >> 1), n = 2 * t + (q & 1);
		float s = d[q];
		for (int k = 0; k < 8; k++) s += As[k * lda + m] * Bs[k * ldb + n];
		d[q] = s;
	}
#endif
}

// C[m][n] (row stride ldc) = (accumulate ? C[m][n] : 0) + Σ_k r(A(m,k))·r(B(k,n)) + bias[n],
// r = tf32_round, A(m,k) = TA ? A[k·lda + m] : A[m·lda + k], B(k,n) = TB ? B[n·ldb + k] :
// B[k·ldb + n]. blockDim.x must be 256.
template <bool TA, bool TB>
__device__ __forceinline__ void gemm_tf32_tiled(int M, int N, int K, const float* A, int lda, const float* B, int ldb,
                                                float* C, int ldc, const float* bias, int accumulate) {
	__shared__ float As[TF_TK * TF_PAD];
	__shared__ float Bs[TF_TK * TF_PAD];
	const int t = threadIdx.x, warp = t >> 5, lane = t & 31, g = lane >> 2, tg = lane & 3;
	const int wm = (warp >> 2) * 32, wn = (warp & 3) * 16; // the warp's 32×16 part of the tile
	const int n0 = blockIdx.x * TF_TN;
	for (int m0 = blockIdx.y * TF_TM; m0 < M; m0 += gridDim.y * TF_TM) {
		float acc[2][2][4];
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 2; j++)
				for (int q = 0; q < 4; q++) acc[i][j][q] = 0.f;
		for (int k0 = 0; k0 < K; k0 += TF_TK) {
			// The loads of linear.cu's gemm_tiled: consecutive threads, consecutive addresses.
			for (int l = 0; l < 4; l++) {
				int m, k;
				if (TA) {
					k = (t >> 6) + 4 * l;
					m = t & 63;
				} else {
					m = (t >> 4) + 16 * l;
					k = t & 15;
				}
				int gm = m0 + m, gk = k0 + k;
				float v = 0.f;
				if (gm < M && gk < K) v = TA ? A[(long long)gk * lda + gm] : A[(long long)gm * lda + gk];
				As[k * TF_PAD + m] = tf32_round(v);
			}
			for (int l = 0; l < 4; l++) {
				int n, k;
				if (TB) {
					n = (t >> 4) + 16 * l;
					k = t & 15;
				} else {
					k = (t >> 6) + 4 * l;
					n = t & 63;
				}
				int gn = n0 + n, gk = k0 + k;
				float v = 0.f;
				if (gn < N && gk < K) v = TB ? B[(long long)gn * ldb + gk] : B[(long long)gk * ldb + gn];
				Bs[k * TF_PAD + n] = tf32_round(v);
			}
			__syncthreads();
			for (int kk = 0; kk < TF_TK; kk += 8)
				for (int i = 0; i < 2; i++)
					for (int j = 0; j < 2; j++)
						mma_tf32_16x8x8(acc[i][j], &As[kk * TF_PAD + wm + 16 * i], TF_PAD, &Bs[kk * TF_PAD + wn + 8 * j],
						                TF_PAD);
			__syncthreads();
		}
		for (int i = 0; i < 2; i++)
			for (int j = 0; j < 2; j++)
				for (int q = 0; q < 4; q++) {
					int gm = m0 + wm + 16 * i + g + 8 * (q >> 1), gn = n0 + wn + 8 * j + 2 * tg + (q & 1);
					if (gm >= M || gn >= N) continue;
					float v = acc[i][j][q];
					if (bias) v += bias[gn];
					float* c = &C[(long long)gm * ldc + gn];
					*c = accumulate ? *c + v : v;
				}
	}
}

KERNEL gemm_tf32_nt(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                    const float* bias, int accumulate) {
	gemm_tf32_tiled<false, true>(M, N, K, A, lda, B, ldb, C, ldc, bias, accumulate);
}

KERNEL gemm_tf32_nn(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                    const float* bias, int accumulate) {
	gemm_tf32_tiled<false, false>(M, N, K, A, lda, B, ldb, C, ldc, bias, accumulate);
}

KERNEL gemm_tf32_tn(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                    const float* bias, int accumulate) {
	gemm_tf32_tiled<true, false>(M, N, K, A, lda, B, ldb, C, ldc, bias, accumulate);
}

// y[i] = tf32_round(x[i]): the rounding alone, for its tests (the emulator's bits and the
// device's cvt.rna.tf32.f32 against Go's compute.RoundTF32).
KERNEL tf32_round_f32(float* y, const float* x, int n) {
	GRID_STRIDE(i, n) { y[i] = tf32_round(x[i]); }
}
