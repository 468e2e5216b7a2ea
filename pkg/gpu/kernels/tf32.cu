// TF32 matrix products on the tensor cores (train --matmul tf32; PyTorch's allow_tf32):
// the GEMMs of the linear layers with mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32,
// both factors rounded to TF32 (tf32_round: as cvt.rna.tf32.f32), products accumulated in
// float32.
//
//	gemm_tf32_nt   C = A·Bᵀ (+ bias)   y  = x·Wᵀ + b    M=rows N=out K=in
//	gemm_tf32_nn   C += A·B            dx += dy·W       M=rows N=in  K=out
//	gemm_tf32_tn   C += Aᵀ·B           dW += dyᵀ·x      M=out  N=in  K=rows
//	tf32_round_f32 y[i] = tf32_round(x[i]), for the tests of the rounding
//
// They take linear.cu's arguments, split-K and epilogue, and the host chooses their tiles
// as for FP32 (op_linear.go): the pipelined kernels gemm_tf32_pipe_* where the operands'
// rows are 16-byte aligned, else the register-staged ones (both 128×128 block tiles, or
// 64×64 ones, *_64), and the first versions, gemm64_tf32_* (the old FP32 kernels'
// launch: block 256, grid (ceil(N/64), min(ceil(M/64), 65535)), y grid-strided), kept for
// the kernel bench. In the first versions the tile of C (64×64) is split over the 8 warps,
// 32 rows × 16 columns each: 2×2 MMAs of 16×8 per step of 8 along K, each loading its own
// fragments. Their K slices (16) of A and B are staged in shared memory k-major, [k][m]
// and [k][n], rows padded to 72 floats so that a warp's fragment loads hit 32 distinct
// banks, and are rounded to TF32 once, as they are stored there.
//
// On the device the MMA is the instruction itself (sm_80 and later: the H100 runs this
// PTX). Under the launch emulator (package emu: this file compiled as C++) mma_tf32 does
// with the lanes' fragment registers what the instruction does: the warp's lanes pool
// their fragments, and each computes its four outputs from the whole 16×8×8 tile,
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

// tf32_round rounds x to TF32, round to nearest with ties away from zero, by its definition
// in bits, which is Go's compute.RoundTF32: add half of the last kept place (bit 12) to
// the magnitude and clear the 13 low mantissa bits; ±Inf stays itself, and a NaN stays a
// (quiet) NaN. For every value but a NaN this is what cvt.rna.tf32.f32 is on sm_80 and
// sm_90: ptxas expands that instruction into the same add and mask, the add skipped for
// ±Inf and NaN; but the mask still clears a NaN's low bits, so the H200's cvt.rna turns a
// NaN whose payload lies only in the 13 dropped bits (0x7f800001) into +Inf, which would
// hide a diverged run. So the device and the emulator run this same code:
// an add, a mask and a select for the NaN, some 6 instructions where cvt.rna with a NaN
// guard of its own took 11, once per value copied into a GEMM's shared tiles (the same
// bit patterns are tested on the device, in the emulator and in Go: TestTF32Round*).
__device__ __forceinline__ float tf32_round(float x) {
	unsigned u;
	memcpy(&u, &x, 4);
	unsigned r = (u + 0x1000u) & 0xffffe000u;                     // finite, and ±Inf (no carry)
	if ((u & 0x7fffffffu) > 0x7f800000u) r = (u | 0x00400000u) & 0xffffe000u; // NaN: quiet, payload's high bits kept
	memcpy(&x, &r, 4);
	return x;
}

// tf32_round_n rounds n float4s in place as tf32_round, the common case first: the add
// and mask of each value, and one NaN test for all of them (FSETP.NAN takes two values;
// the tests are or-ed bitwise, so that they compile to one chain of predicates and one
// branch, not a branch each); only if one is a NaN (a diverged run), tf32_round of each.
// About 3 instructions a value for the 8 of an operand's chunks that a lane rounds a
// slice of the pipelined GEMMs, where tf32_round's NaN test and select take 6.
template <int n>
__device__ __forceinline__ void tf32_round_n(float4 v[n]) {
	bool nan = false;
	for (int i = 0; i < n; i++) nan = nan | (v[i].x != v[i].x) | (v[i].y != v[i].y) | (v[i].z != v[i].z) | (v[i].w != v[i].w);
	if (nan) {
		for (int i = 0; i < n; i++)
			v[i] = make_float4(tf32_round(v[i].x), tf32_round(v[i].y), tf32_round(v[i].z), tf32_round(v[i].w));
		return;
	}
	for (int i = 0; i < n; i++)
		v[i] = make_float4(__uint_as_float((__float_as_uint(v[i].x) + 0x1000u) & 0xffffe000u),
		                   __uint_as_float((__float_as_uint(v[i].y) + 0x1000u) & 0xffffe000u),
		                   __uint_as_float((__float_as_uint(v[i].z) + 0x1000u) & 0xffffe000u),
		                   __uint_as_float((__float_as_uint(v[i].w) + 0x1000u) & 0xffffe000u));
}

// mma_tf32 is one warp's D += A·B on the tensor cores for a 16×8×8 tile, from its lanes'
// fragments in the layout of the PTX ISA (mma.m16n8k8 with .tf32 operands): with g =
// lane/4 and t = lane%4, a lane holds
//
//	a = {A(g, t), A(g+8, t), A(g, t+4), A(g+8, t+4)}   b = {B(t, g), B(t+4, g)}
//	d = {D(g, 2t), D(g, 2t+1), D(g+8, 2t), D(g+8, 2t+1)}
//
// the factors already rounded to TF32. All 32 lanes of the warp call it together. On the
// device it is the instruction. The emulator does what the instruction does with the
// registers: each lane publishes its fragments to its warp through shared memory and
// computes its four outputs from the whole tile, d + A(m,0)·B(0,n) + … + A(m,7)·B(7,n)
// in float32, k in order. So the lanes' fragment loads, the part of a kernel the
// emulator cannot take on trust, are the device's own code, checked on the CPU against
// the ISA's layout. (The emulator synchronises the whole block once an MMA: every thread
// of the block must call it the same number of times, as the GEMMs below do.)
__device__ __forceinline__ void mma_tf32(float d[4], const unsigned a[4], const unsigned b[2]) {
#ifdef __CUDA_ARCH__
	asm volatile(
	    "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, "
	    "%3};\n"
	    : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
	    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#else
	// Two scratch buffers, used in turn (each lane's phase): an MMA's lanes write one while
	// the lanes of the last may still read the other, so one barrier an MMA suffices.
	SHARED(unsigned, frag, [2][32][32][6]); // [phase][warp][lane]: a0 … a3, b0, b1
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
	const int ph = emu_lane_phase[threadIdx.x] & 1; // bit 0: mma_tf32's; bit 1: ldsm_x4's
	emu_lane_phase[threadIdx.x] ^= 1;
	for (int r = 0; r < 4; r++) frag[ph][warp][lane][r] = a[r];
	frag[ph][warp][lane][4] = b[0];
	frag[ph][warp][lane][5] = b[1];
	__syncthreads();
	const unsigned(*f)[6] = frag[ph][warp];
	for (int q = 0; q < 4; q++) {
		const int m = g + 8 * (q >> 1), n = 2 * t + (q & 1);
		float s = d[q];
		for (int k = 0; k < 8; k++) // A(m, k): lane (m%8)·4 + k%4, a[m/8 + 2·(k/4)]; B(k, n): lane 4n + k%4, b[k/4]
			s += __uint_as_float(f[(m & 7) * 4 + (k & 3)][(m >> 3) + 2 * (k >> 2)]) *
			     __uint_as_float(f[n * 4 + (k & 3)][4 + (k >> 2)]);
		d[q] = s;
	}
#endif
}

// mma_tf32_16x8x8: one warp's D += A·B for a 16×8×8 tile, A(m, k) = As[k·lda + m] and
// B(k, n) = Bs[k·ldb + n] in shared memory, already rounded to TF32; d is this lane's part
// of the accumulator (mma_tf32's layout). The first version's fragments: loaded for every
// MMA.
__device__ __forceinline__ void mma_tf32_16x8x8(float d[4], const float* As, int lda, const float* Bs, int ldb) {
	const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
	const unsigned a[4] = {__float_as_uint(As[t * lda + g]), __float_as_uint(As[t * lda + g + 8]),
	                       __float_as_uint(As[(t + 4) * lda + g]), __float_as_uint(As[(t + 4) * lda + g + 8])};
	const unsigned b[2] = {__float_as_uint(Bs[t * ldb + g]), __float_as_uint(Bs[(t + 4) * ldb + g])};
	mma_tf32(d, a, b);
}

// C[m][n] (row stride ldc) = (accumulate ? C[m][n] : 0) + Σ_k r(A(m,k))·r(B(k,n)) + bias[n],
// r = tf32_round, A(m,k) = TA ? A[k·lda + m] : A[m·lda + k], B(k,n) = TB ? B[n·ldb + k] :
// B[k·ldb + n]. blockDim.x must be 256. The first version (gemm64_tf32_*).
template <bool TA, bool TB>
__device__ __forceinline__ void gemm_tf32_tiled(int M, int N, int K, const float* A, int lda, const float* B, int ldb,
                                                float* C, int ldc, const float* bias, int accumulate, int relu,
                                                const float* mask) {
	gemm_end_for<TA, TB>(relu, mask);
	SHARED(float, As, [TF_TK * TF_PAD]);
	SHARED(float, Bs, [TF_TK * TF_PAD]);
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
					gemm_epilogue(C, ldc, gm, gn, acc[i][j][q], bias, accumulate, relu, mask);
				}
	}
}

KERNEL gemm64_tf32_nt(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                    const float* bias, int accumulate, int relu, const float* mask) {
	gemm_tf32_tiled<false, true>(M, N, K, A, lda, B, ldb, C, ldc, bias, accumulate, relu, mask);
}

KERNEL gemm64_tf32_nn(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                    const float* bias, int accumulate, int relu, const float* mask) {
	gemm_tf32_tiled<false, false>(M, N, K, A, lda, B, ldb, C, ldc, bias, accumulate, relu, mask);
}

KERNEL gemm64_tf32_tn(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                    const float* bias, int accumulate, int relu, const float* mask) {
	gemm_tf32_tiled<true, false>(M, N, K, A, lda, B, ldb, C, ldc, bias, accumulate, relu, mask);
}

// ---------------------------------------------------------------------------------------
// The register-tiled TF32 GEMM: gemm_tf32_nt / nn / tn with 128×128 block tiles (256
// threads, 8 warps of 64×32: 4×4 MMAs per K step of 8) and gemm_tf32_*_64 with 64×64
// tiles (128 threads, 4 warps of 32×32: 2×4 MMAs), the same arguments, split-K and host
// choice as linear.cu's gemm_reg (see op_linear.go's Device.gemm).
//
// A warp loads its A fragments (4 registers per 16 rows) and B fragments (2 per 8
// columns) once per K step and issues every MMA of its tile from them: 1.5 shared loads
// per MMA, against 6 in gemm64_tf32_*. K is walked in slices of 8 (one K step), double
// buffered as in gemm_reg: the next slice's global loads (16 bytes where the host
// allows, vecA/vecB) are in flight during the MMAs of the current one, then rounded to
// TF32 and stored into the other buffer, one barrier per slice. The shared slices are k-major, [k][m] and
// [k][n], rows padded by 8 floats (a row ≡ 8 banks mod 32): a warp's fragment loads (rows
// t and t+4, columns g, t = lane%4, g = lane/4) hit 32 distinct banks, and every fragment
// address is the lane's base plus a constant. The transposing stores of the operands
// whose rows run along k (4 consecutive k of one m or n per lane, 16 rows × 2 k-groups
// per warp) would hit 16 banks twice if all lanes stored their c-th value together; the
// lanes of the second k-group store theirs from the third on (tf_rot4), which spreads
// them over 32. (Slices of 8 rather than 16 keep the registers at 128 without spills:
// 64 accumulators, 8 for the next slice, 12 of fragments.)
//
// Each output is accumulated over the K steps in order by one lane's MMAs: deterministic,
// and under the emulator (which computes each MMA per lane, as described above) the same
// sums in the same order as gemm64_tf32_*.
#define TF_BK 8

// tf_rot4 sets v[c] = r[(c + s) mod 4] (s in 0 … 3) by selects, not by an index that
// would put r in local memory.
__device__ __forceinline__ void tf_rot4(float v[4], const float r[4], int s) {
	const bool s1 = s & 1, s2 = s & 2;
	const float a0 = s1 ? r[1] : r[0], a1 = s1 ? r[2] : r[1], a2 = s1 ? r[3] : r[2], a3 = s1 ? r[0] : r[3];
	v[0] = s2 ? a2 : a0, v[1] = s2 ? a3 : a1, v[2] = s2 ? a0 : a2, v[3] = s2 ? a1 : a3;
}

// tf_mma_tile: one warp's MI×NJ MMAs of one K step of 8 at k: acc[i][j] += A(16i…, k…)·
// B(k…, 8j…), A(m, k) at As[k·LA + m] for the warp's rows wm…, B(k, n) at Bs[k·LB + n]
// for its columns wn…, shared and already rounded to TF32. All 32 lanes of the warp call
// it together.
template <int LA, int LB, int MI, int NJ>
__device__ __forceinline__ void tf_mma_tile(float acc[MI][NJ][4], const float* As, const float* Bs, int k, int wm,
                                            int wn) {
	const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
	const int k0 = k + t, k1 = k + t + 4;
	// B's fragments first, then A's one 16-row block at a time with its NJ MMAs: every
	// fragment loaded once, and 4 + 2·NJ of them live rather than 4·MI + 2·NJ.
	unsigned b[NJ][2];
	for (int j = 0; j < NJ; j++) {
		const int n = wn + 8 * j + g;
		b[j][0] = __float_as_uint(Bs[k0 * LB + n]);
		b[j][1] = __float_as_uint(Bs[k1 * LB + n]);
	}
	for (int i = 0; i < MI; i++) {
		const int m = wm + 16 * i + g;
		const unsigned a[4] = {__float_as_uint(As[k0 * LA + m]), __float_as_uint(As[k0 * LA + m + 8]),
		                       __float_as_uint(As[k1 * LA + m]), __float_as_uint(As[k1 * LA + m + 8])};
		for (int j = 0; j < NJ; j++) mma_tf32(acc[i][j], a, b[j]);
	}
}

// tf_out_tile writes a warp's MI×NJ MMA accumulators (mma_tf32's layout) of the block of
// outputs at (m0, n0) through gemm_out.
template <int MI, int NJ>
__device__ __forceinline__ void tf_out_tile(const float acc[MI][NJ][4], float* C, int ldc, float* W, int M, int N,
                                            int m0, int n0, const float* bias, int accumulate, int relu,
                                            const float* mask) {
	const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
#pragma unroll
	for (int i = 0; i < MI; i++)
#pragma unroll
		for (int j = 0; j < NJ; j++)
#pragma unroll
			for (int q = 0; q < 4; q++) {
				const int gm = m0 + 16 * i + g + 8 * (q >> 1), gn = n0 + 8 * j + 2 * t + (q & 1);
				if (gm >= M || gn >= N) continue;
				gemm_out(C, ldc, W, M, N, gm, gn, acc[i][j][q], bias, accumulate, relu, mask);
			}
}

// C[m][n] (row stride ldc) = (accumulate ? C[m][n] : 0) + Σ_k r(A(m,k))·r(B(k,n)) + bias[n]
// as gemm_tf32_tiled, the grid's layer z summing k in [z·kSplit, min(K, (z+1)·kSplit))
// (split-K into the workspace W, added up by gemm_split_fixup, or gemm_splitk_sum when
// tickets is NULL; one layer: the whole GEMM). BM×BN block tiles of warps of WM×WN;
// blockDim.x must be 32·(BM/WM)·(BN/WN).
template <bool TA, bool TB, int BM, int BN, int WM, int WN>
__device__ __forceinline__ void gemm_tf32_reg(int M, int N, int K, const float* A, int lda, const float* B, int ldb,
                                              float* C, int ldc, const float* bias, int accumulate, int relu,
                                              const float* mask, int vecA, int vecB, int kSplit, float* W, int* tickets) {
	gemm_split_k<TA, TB>(K, A, lda, B, ldb, kSplit);
	gemm_end_for<TA, TB>(relu, mask);
	constexpr int WX = BN / WN, T = 32 * WX * (BM / WM), MI = WM / 16, NJ = WN / 8;
	constexpr int QA = BM * TF_BK / (4 * T), QB = BN * TF_BK / (4 * T); // 16-byte loads per thread per slice
	static_assert(QA * 4 * T == BM * TF_BK && QB * 4 * T == BN * TF_BK, "a slice is whole 16-byte loads");
	static_assert(TF_BK == 8, "the stores' rotation spreads 2 k-groups (see above)");
	constexpr int LA = BM + 8, LB = BN + 8; // padded rows, ≡ 8 banks mod 32
	static_assert(BM % 32 == 0 && BN % 32 == 0, "rows of whole bank cycles before the padding");
	SHARED(__align__(16) float, As, [2][TF_BK][LA]);
	SHARED(__align__(16) float, Bs, [2][TF_BK][LB]);
	const int t = threadIdx.x, warp = t >> 5;
	const int wm = warp / WX * WM, wn = warp % WX * WN;
	const int n0 = blockIdx.x * BN;
	for (int m0 = blockIdx.y * BM; m0 < M; m0 += gridDim.y * BM) {
		float ra[QA][4], rb[QB][4];
		// Global → registers: slice k0 of A's rows m0… and of B's columns n0…, as gemm_reg.
		auto load = [&](int k0) {
			rt_load_slice<TA, BM, QA, T>(ra, A, lda, m0, M, k0, K, t, vecA);
			rt_load_slice<!TB, BN, QB, T>(rb, B, ldb, n0, N, k0, K, t, vecB);
		};
		// Registers → shared buffer buf: rounded to TF32, k-major. A lane whose 4 values run
		// along k stores them from 2·its k-group's number on (tf_rot4; see above).
		auto store = [&](int buf) {
			for (int i = 0; i < QA; i++) {
				const int q = t + i * T;
				if (TA) {
					const int kk = q / (BM / 4), mq = q % (BM / 4) * 4;
					*(float4*)&As[buf][kk][mq] =
					    make_float4(tf32_round(ra[i][0]), tf32_round(ra[i][1]), tf32_round(ra[i][2]), tf32_round(ra[i][3]));
				} else {
					const int row = q / (TF_BK / 4), g4 = q % (TF_BK / 4), kq = g4 * 4;
					float v[4];
					tf_rot4(v, ra[i], 2 * g4);
					for (int c = 0; c < 4; c++) As[buf][kq + (c + 2 * g4) % 4][row] = tf32_round(v[c]);
				}
			}
			for (int i = 0; i < QB; i++) {
				const int q = t + i * T;
				if (TB) {
					const int col = q / (TF_BK / 4), g4 = q % (TF_BK / 4), kq = g4 * 4;
					float v[4];
					tf_rot4(v, rb[i], 2 * g4);
					for (int c = 0; c < 4; c++) Bs[buf][kq + (c + 2 * g4) % 4][col] = tf32_round(v[c]);
				} else {
					const int kk = q / (BN / 4), nq = q % (BN / 4) * 4;
					*(float4*)&Bs[buf][kk][nq] =
					    make_float4(tf32_round(rb[i][0]), tf32_round(rb[i][1]), tf32_round(rb[i][2]), tf32_round(rb[i][3]));
				}
			}
		};
		float acc[MI][NJ][4];
		for (int i = 0; i < MI; i++)
			for (int j = 0; j < NJ; j++)
				for (int q = 0; q < 4; q++) acc[i][j][q] = 0.f;
		load(0);
		store(0);
		__syncthreads();
		for (int k0 = 0, buf = 0; k0 < K; k0 += TF_BK, buf ^= 1) {
			const bool more = k0 + TF_BK < K;
			if (more) load(k0 + TF_BK);
			tf_mma_tile<LA, LB, MI, NJ>(acc, &As[buf][0][0], &Bs[buf][0][0], 0, wm, wn);
			if (more) store(buf ^ 1);
			__syncthreads();
		}
		tf_out_tile<MI, NJ>(acc, C, ldc, W, M, N, m0 + wm, n0 + wn, bias, accumulate, relu, mask);
		gemm_split_fixup<BM, BN>(C, ldc, W, M, N, m0, n0, bias, accumulate, relu, mask, tickets, &As[0][0][0]);
	}
}

// A TF32 GEMM kernel from its template (gemm_tf32_reg, gemm_tf32_pipe). Launch bounds: 2
// blocks of 8 warps (or 4 of 4) per SM, i.e. at most 128 registers.
#define GEMM_TF32(name, impl, TA, TB, BM, BN, WM, WN)                                                          \
	extern "C" __global__ void __launch_bounds__(32 * (BM / WM) * (BN / WN), 16 / ((BM / WM) * (BN / WN)))       \
	    name(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,            \
	         const float* bias, int accumulate, int relu, const float* mask, int vecA, int vecB, int kSplit,      \
	         float* W, int* tickets) {                                                                           \
		impl<TA, TB, BM, BN, WM, WN>(M, N, K, A, lda, B, ldb, C, ldc, bias, accumulate, relu, mask, vecA, vecB, \
		                             kSplit, W, tickets);                                                     \
	}

GEMM_TF32(gemm_tf32_nt, gemm_tf32_reg, false, true, 128, 128, 64, 32)
GEMM_TF32(gemm_tf32_nn, gemm_tf32_reg, false, false, 128, 128, 64, 32)
GEMM_TF32(gemm_tf32_tn, gemm_tf32_reg, true, false, 128, 128, 64, 32)
GEMM_TF32(gemm_tf32_nt_64, gemm_tf32_reg, false, true, 64, 64, 32, 32)
GEMM_TF32(gemm_tf32_nn_64, gemm_tf32_reg, false, false, 64, 64, 32, 32)
GEMM_TF32(gemm_tf32_tn_64, gemm_tf32_reg, true, false, 64, 64, 32, 32)

// ---------------------------------------------------------------------------------------
// The pipelined TF32 GEMM: gemm_tf32_pipe_nt / nn / tn (128×128 tiles, 8 warps of 64×32)
// and gemm_tf32_pipe_*_64 (64×64, 4 warps of 32×32), gemm_tf32_reg's arguments, tiles,
// split-K and results, for operands whose rows are 16-byte aligned (vecA and vecB: the
// host launches them only then). What changes from gemm_tf32_reg:
//
//   - The slices of K are 16 deep, copied from global to shared memory by cp.async
//     (sm_80), 16 bytes at a time and without passing through registers, on a ring of 3
//     stages: while the warps multiply slice s, slice s+1 is being rounded and slice s+2
//     is in flight. One barrier a slice (two K steps of 8, 32 MMAs a warp at 128×128).
//   - The shared tiles keep the operands' own layouts, so that every copy is a whole
//     16-byte chunk: rows along k ([m][k], [n][k]: 16 floats, 4 chunks) or along m / n
//     ([k][m], [k][n]: BX floats). They are not padded but swizzled (tp_at): a chunk's
//     place in its row is its index XOR a few bits of the row, so that a stage is exactly
//     BM·16 + BN·16 floats (16 KiB at 128×128) and three fit in the 48 KiB of static
//     shared memory, where padded rows left room for two.
//   - Each lane rounds to TF32 the values it copied, in place, once its copies have
//     landed (the same tf32_round, once per value, as gemm_tf32_reg rounds them on their
//     way in): for slice s+1, between the MMAs of slice s and the barrier that publishes
//     both, so that the rounding overlaps other warps' MMAs instead of holding the block.
//   - The fragments of an operand whose rows run along k (A in _nt and _nn, B in _nt)
//     come by ldmatrix (ldsm_x4): one instruction loads a lane's four A registers of a
//     16×8 block, or its B registers of two 8×8 blocks, straight into the registers the
//     MMA reads, where 32-bit loads took four (and 8-byte loads of k pairs two, and four
//     register moves). The others ([k][x] tiles, whose fragments are columns) load
//     32 bits at a time (tp_frag).
//
// Bank use (g = lane/4, t = lane%4; a bank is 4 bytes, 32 of them), by the swizzles of
// tp_at:
//   - [k][x] rows: lane (g, t) reads k = t (+4), x = x0 + g (+8) with x0 a multiple of 16;
//     chunk x/4 is stored at chunk x/4 XOR 2·(k mod 4), so the lanes' chunks (x0/4 + g/4)
//     XOR 2t are 8 distinct ones mod 8: with x mod 4 = g mod 4, 32 banks.
//   - [x][k] rows: ldmatrix reads a matrix's 8 rows of 16 bytes (one chunk each, rows r0
//     … r0+7 with r0 a multiple of 8) in one phase; row r's chunks are XORed with (r/2)
//     mod 4, and rows are 64 bytes, so rows r and r+1 lie 16 banks apart and rows 2i and
//     2i+2 at distinct chunks: 8 rows, 32 banks.
// A warp's cp.async stores fill whole rows, or 8 rows of 4 chunks, 512 contiguous bytes
// whatever the permutation within a row.
#define TP_BK 16
#define TP_STAGES 3

// tp_at is where element (x, k) of a slice's tile lives (k < TP_BK): KMAJOR, tile [k][x]
// of rows of BX floats; otherwise [x][k], rows of TP_BK (see above).
template <bool KMAJOR, int BX>
__device__ __forceinline__ int tp_at(int x, int k) {
	if (KMAJOR) return k * BX + ((((x >> 2) ^ ((k & 3) << 1))) << 2) + (x & 3);
	return x * TP_BK + (((k >> 2) ^ ((x >> 1) & 3)) << 2) + (k & 3);
}

// ldsm_x4 is ldmatrix.sync.aligned.m8n8.x4.shared.b16 on 32-bit values: lane l gives the
// address of row l%8 of matrix l/8 (4 floats, 16-byte aligned, in shared memory) and gets
// r[i] = float t of row g of matrix i. All 32 lanes of the warp call it together. The
// emulator does what the instruction does: each lane publishes its row's address to its
// warp through shared memory, and reads its four values from its lanes' rows (one block
// barrier a call, two scratch buffers used in turn, as mma_tf32).
__device__ __forceinline__ void ldsm_x4(unsigned r[4], const float* row) {
#ifdef __CUDA_ARCH__
	const unsigned a = (unsigned)__cvta_generic_to_shared(row);
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
	             : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
	             : "r"(a)
	             : "memory");
#else
	SHARED(const float*, rows, [2][32][32]); // [phase][warp][lane]
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
	emu_require_aligned(row, 16, "ldmatrix's row");
	const int ph = (emu_lane_phase[threadIdx.x] >> 1) & 1;
	emu_lane_phase[threadIdx.x] ^= 2;
	rows[ph][warp][lane] = row;
	__syncthreads();
	for (int i = 0; i < 4; i++) r[i] = __float_as_uint(rows[ph][warp][8 * i + g][t]);
#endif
}

// tp_src is lane t's share of one GEMM operand X's slices (TP_BK along k from k0, BX
// along x from x0; X(x, k) = X[k·ld + x] when KMAJOR, else X[x·ld + k]): Q chunks of 16
// bytes, chunk i being the (t + i·T)-th of a slice. Its place in X, in the swizzled tile
// (tp_at) and along x are worked out once a tile, so that a slice's copies cost an add and
// a compare a chunk. With T a multiple of a row's chunks, chunk i is chunk 0 moved by
// a fixed step: KMAJOR, DK rows of k further (DK = T / (BX/4)) at the same x; otherwise DX
// rows of x further (DX = T / 4) at the same k.
template <bool KMAJOR, int BX, int Q, int T>
struct tp_src {
	static constexpr int CPR = KMAJOR ? BX / 4 : TP_BK / 4; // chunks a tile row
	static_assert(T % CPR == 0, "a lane's chunks share their place along the row");
	static constexpr int DK = KMAJOR ? T / CPR : 0, DX = KMAJOR ? 0 : T / CPR;
	static constexpr int DS = KMAJOR ? DK * BX : DX * TP_BK; // from chunk i to i+1 in the tile
	const float* p; // chunk 0 of slice 0 (not dereferenced unless it exists)
	int at;         // chunk 0's place in a stage's tile
	int kc;         // chunk 0's k within the slice
	int xn[KMAJOR ? 1 : Q]; // KMAJOR: the values along x that exist (0 … 4), every chunk's; else whether chunk i's row does
	bool inside;    // the tile's BX rows (or columns) all lie inside X: a slice within K is whole chunks

	__device__ __forceinline__ tp_src(const float* X, int ld, int x0, int XN, int t) {
		const int xc = t % CPR * (KMAJOR ? 4 : 1), xr = t / CPR; // along the row, and the row
		inside = x0 + BX <= XN;
		if (KMAJOR) {
			kc = xr;
			p = X + (long long)kc * ld + x0 + xc;
			at = tp_at<true, BX>(xc, kc);
			xn[0] = rt_clamp4(XN - x0 - xc);
		} else {
			kc = xc * 4;
			p = X + (long long)(x0 + xr) * ld + kc;
			at = tp_at<false, BX>(xr, kc);
			for (int i = 0; i < Q; i++) xn[i] = x0 + xr + i * DX < XN;
		}
	}

	// whole reports whether slice sl's copies are all 16 bytes read from X: the tile inside
	// X along x, and the slice inside K.
	__device__ __forceinline__ bool whole(int sl, int K) const { return inside && (sl + 1) * TP_BK <= K; }

	// copy_whole is copy for a slice that is whole (see whole): no bounds to test, chunk i
	// a fixed step from chunk 0, 16 bytes each: 7 to 13 instructions a chunk on sm_90,
	// where copy's sizes and fallback addresses take ~25; and most slices of a big GEMM
	// are whole.
	__device__ __forceinline__ void copy_whole(float* S, int ld, int sl) const {
		const float* q = p + (KMAJOR ? (long long)sl * TP_BK * ld : (long long)sl * TP_BK);
		const long long step = (long long)(KMAJOR ? DK : DX) * ld;
		for (int i = 0; i < Q; i++) cp_async16(&S[at + i * DS], q + i * step, 16);
	}

	// copy starts the lane's copies of slice sl (of K along k) of X (row stride ld) into the
	// stage S; a chunk wholly outside X is zeros, its copy reading nothing (from X itself).
	__device__ __forceinline__ void copy(float* S, const float* X, int ld, int sl, int K) const {
		const int k = sl * TP_BK + kc;
		const float* q = p + (KMAJOR ? (long long)sl * TP_BK * ld : (long long)sl * TP_BK);
		for (int i = 0; i < Q; i++) {
			const int n = KMAJOR ? (k + i * DK < K ? xn[0] : 0) : (xn[i] ? rt_clamp4(K - k) : 0);
			cp_async16(&S[at + i * DS], n ? q + (long long)i * (KMAJOR ? DK : DX) * ld : X, 4 * n);
		}
	}

	// round rounds the lane's chunks of the stage S to TF32 in place, once they have
	// landed, with one NaN test for them all (tf32_round_n).
	__device__ __forceinline__ void round(float* S) const {
		float4 v[Q];
		for (int i = 0; i < Q; i++) v[i] = *(const float4*)&S[at + i * DS];
		tf32_round_n<Q>(v);
		for (int i = 0; i < Q; i++) *(float4*)&S[at + i * DS] = v[i];
	}
};

// tp_frag is where a lane's fragments of one operand lie in a stage's tile, as tp_at
// places them, worked out once so that every load is a lane register plus a constant
// (the swizzles' XORs, left to the compiler, took a register a fragment, 24, and spilled).
//   - [k][x] (KMAJOR), 32-bit loads: the lane's values are x = w0 + X1 + g + e (w0 the
//     warp's first row or column, a multiple of 32; X1 the fragment's, a multiple of 8;
//     e = 0 or 8 for A's second 8 rows) at k = kf + t (kf a multiple of 4), at
//     kf·BX + w0 + 4·((X1/4) & ~7) + L[Z/2], Z = ((X1 + e)/4) mod 8: the chunk
//     (w0 + X1 + g + e)/4 XOR 2t has low bits Z XOR (g/4 XOR 2t).
//   - [x][k], ldmatrix: the lane gives the row w0 + X1 + r + 8·u of the matrix it names
//     (r = lane mod 8; its matrix's u and v = 0 or 1, below) at k = kk + 4·v, kk = 0 or 8:
//     at (X1)·16 + L[kk/8], the row's swizzle (r/2 mod 4) the lane's alone. For A, matrix
//     i = lane/8 is rows +8·(i mod 2), k +4·(i/2) (a0 … a3 of mma_tf32); for B, two
//     fragments j, j+1: rows +8·(i/2), k +4·(i mod 2) (b[j][0], b[j][1], b[j+1][0], b[j+1][1]).
template <bool KMAJOR, int BX, bool IS_A>
struct tp_frag {
	int L[KMAJOR ? 4 : 2];
	__device__ __forceinline__ tp_frag(int w0) {
		const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
		if (KMAJOR) {
			const int v = (g >> 2) ^ (t << 1);
			for (int i = 0; i < 4; i++) L[i] = w0 + 4 * ((2 * i) ^ v) + (g & 3) + t * BX;
		} else {
			const int r = lane & 7, m = lane >> 3;
			const int u = IS_A ? m & 1 : m >> 1, v = IS_A ? m >> 1 : m & 1;
			const int row = w0 + r + 8 * u;
			for (int i = 0; i < 2; i++) L[i] = tp_at<false, BX>(row, 8 * i + 4 * v);
		}
	}
	// at is the place of the lane's value, or of its ldmatrix row, at X1, e and kf (or kk).
	__device__ __forceinline__ int at(int X1, int e, int kf) const {
		if (KMAJOR) return kf * BX + 4 * ((X1 >> 2) & ~7) + L[(((X1 + e) >> 2) & 7) >> 1];
		return X1 * TP_BK + L[kf >> 3];
	}
};

// tp_mma_step: one warp's MI×NJ MMAs of the K step of 8 at k of a stage, A's tile at As
// ([k][m] when TA, else [m][k]), B's at Bs ([n][k] when TB, else [k][n]), swizzled by
// tp_at, the lane's fragments found by fa and fb (see tp_frag).
template <bool TA, bool TB, int BM, int BN, int MI, int NJ>
__device__ __forceinline__ void tp_mma_step(float acc[MI][NJ][4], const float* As, const float* Bs, int k,
                                            const tp_frag<TA, BM, true>& fa, const tp_frag<!TB, BN, false>& fb) {
	static_assert(NJ % 2 == 0, "B's fragments by ldmatrix come in pairs");
	unsigned b[NJ][2];
	if (TB) {
		for (int j = 0; j < NJ; j += 2) {
			unsigned r[4];
			ldsm_x4(r, &Bs[fb.at(8 * j, 0, k)]);
			b[j][0] = r[0], b[j][1] = r[1], b[j + 1][0] = r[2], b[j + 1][1] = r[3];
		}
	} else {
		for (int j = 0; j < NJ; j++) {
			b[j][0] = __float_as_uint(Bs[fb.at(8 * j, 0, k)]);
			b[j][1] = __float_as_uint(Bs[fb.at(8 * j, 0, k + 4)]);
		}
	}
	for (int i = 0; i < MI; i++) {
		unsigned a[4];
		if (!TA) {
			ldsm_x4(a, &As[fa.at(16 * i, 0, k)]);
		} else {
			a[0] = __float_as_uint(As[fa.at(16 * i, 0, k)]);
			a[1] = __float_as_uint(As[fa.at(16 * i, 8, k)]);
			a[2] = __float_as_uint(As[fa.at(16 * i, 0, k + 4)]);
			a[3] = __float_as_uint(As[fa.at(16 * i, 8, k + 4)]);
		}
		for (int j = 0; j < NJ; j++) mma_tf32(acc[i][j], a, b[j]);
	}
}

// The ring, slice by slice (stage = slice mod 3): before the loop, slices 0, 1 and 2 are
// copied (one commit group each, empty past the end) and slice 0 rounded and published.
// Iteration s waits for its lane's copies of slice s+1 (one group, s+2's, may stay in
// flight), rounds them, multiplies slice s, meets the block at the barrier (slice s+1 is
// then whole and rounded, and every warp is done with slice s's stage), and copies slice
// s+3 into that stage.
template <bool TA, bool TB, int BM, int BN, int WM, int WN>
__device__ __forceinline__ void gemm_tf32_pipe(int M, int N, int K, const float* A, int lda, const float* B, int ldb,
                                               float* C, int ldc, const float* bias, int accumulate, int relu,
                                               const float* mask, int /*vecA*/, int /*vecB*/, int kSplit, float* W,
                                               int* tickets) {
	gemm_split_k<TA, TB>(K, A, lda, B, ldb, kSplit);
	gemm_end_for<TA, TB>(relu, mask);
	constexpr int WX = BN / WN, T = 32 * WX * (BM / WM), MI = WM / 16, NJ = WN / 8;
	constexpr int QA = BM * TP_BK / (4 * T), QB = BN * TP_BK / (4 * T); // 16-byte chunks per lane per slice
	static_assert(QA * 4 * T == BM * TP_BK && QB * 4 * T == BN * TP_BK, "a slice is whole chunks");
	static_assert(BM % 32 == 0 && BN % 32 == 0, "[k][x] rows of at least 8 chunks, for the swizzle");
	constexpr int SA = BM * TP_BK, SB = BN * TP_BK; // a stage's floats
	SHARED(__align__(16) float, As, [TP_STAGES][SA]);
	SHARED(__align__(16) float, Bs, [TP_STAGES][SB]);
	const int t = threadIdx.x, warp = t >> 5;
	const int wm = warp / WX * WM, wn = warp % WX * WN;
	const int n0 = blockIdx.x * BN, slices = (K + TP_BK - 1) / TP_BK;
	const tp_frag<TA, BM, true> fa(wm);
	const tp_frag<!TB, BN, false> fb(wn);
	for (int m0 = blockIdx.y * BM; m0 < M; m0 += gridDim.y * BM) {
		const tp_src<TA, BM, QA, T> a(A, lda, m0, M, t);
		const tp_src<!TB, BN, QB, T> b(B, ldb, n0, N, t);
		// Copies slice sl into its stage, if it exists; the commit group either way, so that
		// a lane's groups are one a slice and cp_async_wait<1> means "all but the last".
		auto copy = [&](int sl) {
			if (sl < slices) {
				if (a.whole(sl, K))
					a.copy_whole(As[sl % TP_STAGES], lda, sl);
				else
					a.copy(As[sl % TP_STAGES], A, lda, sl, K);
				if (b.whole(sl, K))
					b.copy_whole(Bs[sl % TP_STAGES], ldb, sl);
				else
					b.copy(Bs[sl % TP_STAGES], B, ldb, sl, K);
			}
			cp_async_commit();
		};
		auto round = [&](int sl) {
			if (sl < slices) {
				a.round(As[sl % TP_STAGES]);
				b.round(Bs[sl % TP_STAGES]);
			}
		};
		float acc[MI][NJ][4];
		for (int i = 0; i < MI; i++)
			for (int j = 0; j < NJ; j++)
				for (int q = 0; q < 4; q++) acc[i][j][q] = 0.f;
		copy(0);
		copy(1);
		copy(2);
		cp_async_wait<2>();
		round(0);
		__syncthreads();
		for (int sl = 0; sl < slices; sl++) {
			const int s = sl % TP_STAGES;
			cp_async_wait<1>(); // this lane's copies of slice sl+1 have landed
			round(sl + 1);
			tp_mma_step<TA, TB, BM, BN, MI, NJ>(acc, As[s], Bs[s], 0, fa, fb);
			tp_mma_step<TA, TB, BM, BN, MI, NJ>(acc, As[s], Bs[s], 8, fa, fb);
			__syncthreads(); // slice sl+1 whole and rounded; every warp done with stage s
			copy(sl + TP_STAGES);
		}
		cp_async_wait_all(); // the empty groups past the end, before the stages are lent
		tf_out_tile<MI, NJ>(acc, C, ldc, W, M, N, m0 + wm, n0 + wn, bias, accumulate, relu, mask);
		gemm_split_fixup<BM, BN>(C, ldc, W, M, N, m0, n0, bias, accumulate, relu, mask, tickets, &As[0][0]);
		__syncthreads(); // before the next tile's copies reuse the stages
	}
}

GEMM_TF32(gemm_tf32_pipe_nt, gemm_tf32_pipe, false, true, 128, 128, 64, 32)
GEMM_TF32(gemm_tf32_pipe_nn, gemm_tf32_pipe, false, false, 128, 128, 64, 32)
GEMM_TF32(gemm_tf32_pipe_tn, gemm_tf32_pipe, true, false, 128, 128, 64, 32)
GEMM_TF32(gemm_tf32_pipe_nt_64, gemm_tf32_pipe, false, true, 64, 64, 32, 32)
GEMM_TF32(gemm_tf32_pipe_nn_64, gemm_tf32_pipe, false, false, 64, 64, 32, 32)
GEMM_TF32(gemm_tf32_pipe_tn_64, gemm_tf32_pipe, true, false, 64, 64, 32, 32)

// y[i] = tf32_round(x[i]): the rounding alone, for its tests (the emulator's bits and the
// device's cvt.rna.tf32.f32 against Go's compute.RoundTF32).
KERNEL tf32_round_f32(float* y, const float* x, int n) {
	GRID_STRIDE(i, n) { y[i] = tf32_round(x[i]); }
}
