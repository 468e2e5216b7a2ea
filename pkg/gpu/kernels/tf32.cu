// TF32 matrix products on the tensor cores (train --matmul tf32; PyTorch's allow_tf32):
// the GEMMs of the linear layers with mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32,
// both factors rounded to TF32 (cvt.rna.tf32.f32), products accumulated in float32.
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
	__shared__ unsigned frag[2][32][32][6]; // [phase][warp][lane]: a0 … a3, b0, b1
	const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
	const int ph = emu_lane_phase[threadIdx.x];
	emu_lane_phase[threadIdx.x] = ph ^ 1;
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
	__shared__ __align__(16) float As[2][TF_BK][LA];
	__shared__ __align__(16) float Bs[2][TF_BK][LB];
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
// host launches them only then). Three changes from gemm_tf32_reg:
//
//   - The slices of K are 16 deep, copied from global to shared memory by cp.async
//     (sm_80), 16 bytes at a time and without passing through registers: the next slice
//     is in flight while the warps multiply the current one, two K steps of 8 between
//     barriers instead of one, and no registers held for the copy.
//   - The shared tiles keep the operands' own layouts, so that every copy is 16 bytes:
//     rows along k ([m][k], [n][k]: 16 + 4 or 16 + 8 floats) or along m / n ([k][m],
//     [k][n]: 128 + 8). Each lane rounds the values it copied, in place, after its copies
//     land and before the barrier that publishes them (the same tf32_round, once per
//     value, as gemm_tf32_reg rounds them on their way in).
//   - When both operands' rows run along k (gemm_tf32_pipe_nt, the forward pass), the
//     MMA's k index is laid over k in pairs: lane t's fragment registers for k = t and
//     t + 4 hold the slice's k = 2t and 2t + 1, adjacent in shared memory, so each A
//     fragment pair and each B fragment is one 8-byte load (12 loads for 16 MMAs, not 24).
//     An MMA adds all eight products whatever their k, so the sum is the same one; the
//     emulator, which adds them in the order of the MMA's k, adds them in the order 0, 2,
//     4, 6, 1, 3, 5, 7 of the slice's, so its bits differ from gemm_tf32_reg's by the
//     order of the additions.
//
// Bank use, a warp's fragment loads (g = lane/4, t = lane%4): [k][x] rows of 136 floats,
// t·136 + g ≡ 8t + g (mod 32), 32 banks; [x][k] rows of 20, 20g + t and 20g + t + 4,
// 32 banks; the pairs' rows of 24: a half-warp's 8-byte loads at 24g + 2t cover 32 banks
// once. The stages take 48 KB (nt), 37 KB (nn), 35 KB (tn) of shared memory at 128×128.
#define TP_BK 16

// tp_round_slice rounds lane t's Q chunks of a slice in S (async_copy_slice's, slices of
// TP_BK) to TF32 in place, once they have landed.
template <bool KMAJOR, int BX, int LD, int Q, int T>
__device__ __forceinline__ void tp_round_slice(float* S, int t) {
	for (int i = 0; i < Q; i++) {
		long long off;
		int at, valid;
		async_chunk<KMAJOR, BX, TP_BK, LD, T>(i, t, 0, 0, 0, 0, 0, &off, &at, &valid);
		float4 v = *(float4*)&S[at];
		v.x = tf32_round(v.x), v.y = tf32_round(v.y), v.z = tf32_round(v.z), v.w = tf32_round(v.w);
		*(float4*)&S[at] = v;
	}
}

// tp_mma_step: one warp's MI×NJ MMAs of the K step of 8 at k of a stage, A's tile at As
// (rows of LA: [k][m] when TA, else [m][k]), B's at Bs (rows of LB: [n][k] when TB, else
// [k][n]); k in pairs when both run along k (see above).
template <bool TA, bool TB, int LA, int LB, int MI, int NJ>
__device__ __forceinline__ void tp_mma_step(float acc[MI][NJ][4], const float* As, const float* Bs, int k, int wm,
                                            int wn) {
	constexpr bool PAIRS = !TA && TB;
	const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
	unsigned b[NJ][2];
	for (int j = 0; j < NJ; j++) {
		const int n = wn + 8 * j + g;
		if (PAIRS) {
			const float2 v = *(const float2*)&Bs[n * LB + k + 2 * t];
			b[j][0] = __float_as_uint(v.x), b[j][1] = __float_as_uint(v.y);
		} else if (TB) {
			b[j][0] = __float_as_uint(Bs[n * LB + k + t]), b[j][1] = __float_as_uint(Bs[n * LB + k + t + 4]);
		} else {
			b[j][0] = __float_as_uint(Bs[(k + t) * LB + n]), b[j][1] = __float_as_uint(Bs[(k + t + 4) * LB + n]);
		}
	}
	for (int i = 0; i < MI; i++) {
		const int m = wm + 16 * i + g;
		unsigned a[4];
		if (PAIRS) {
			const float2 lo = *(const float2*)&As[m * LA + k + 2 * t], hi = *(const float2*)&As[(m + 8) * LA + k + 2 * t];
			a[0] = __float_as_uint(lo.x), a[1] = __float_as_uint(hi.x), a[2] = __float_as_uint(lo.y),
			a[3] = __float_as_uint(hi.y);
		} else if (TA) {
			a[0] = __float_as_uint(As[(k + t) * LA + m]), a[1] = __float_as_uint(As[(k + t) * LA + m + 8]);
			a[2] = __float_as_uint(As[(k + t + 4) * LA + m]), a[3] = __float_as_uint(As[(k + t + 4) * LA + m + 8]);
		} else {
			a[0] = __float_as_uint(As[m * LA + k + t]), a[1] = __float_as_uint(As[(m + 8) * LA + k + t]);
			a[2] = __float_as_uint(As[m * LA + k + t + 4]), a[3] = __float_as_uint(As[(m + 8) * LA + k + t + 4]);
		}
		for (int j = 0; j < NJ; j++) mma_tf32(acc[i][j], a, b[j]);
	}
}

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
	constexpr int LK = TP_BK + (!TA && TB ? 8 : 4); // a row along k
	constexpr int LA = TA ? BM + 8 : LK, LB = TB ? LK : BN + 8;
	constexpr int SA = (TA ? TP_BK : BM) * LA, SB = (TB ? BN : TP_BK) * LB; // a stage's floats
	__shared__ __align__(16) float As[2][SA];
	__shared__ __align__(16) float Bs[2][SB];
	const int t = threadIdx.x, warp = t >> 5;
	const int wm = warp / WX * WM, wn = warp % WX * WN;
	const int n0 = blockIdx.x * BN, slices = (K + TP_BK - 1) / TP_BK;
	for (int m0 = blockIdx.y * BM; m0 < M; m0 += gridDim.y * BM) {
		auto copy = [&](int s, int k0) {
			async_copy_slice<TA, BM, TP_BK, LA, QA, T>(As[s], A, lda, m0, M, k0, K, t);
			async_copy_slice<!TB, BN, TP_BK, LB, QB, T>(Bs[s], B, ldb, n0, N, k0, K, t);
			cp_async_commit();
		};
		float acc[MI][NJ][4];
		for (int i = 0; i < MI; i++)
			for (int j = 0; j < NJ; j++)
				for (int q = 0; q < 4; q++) acc[i][j][q] = 0.f;
		if (slices > 0) copy(0, 0);
		for (int sl = 0; sl < slices; sl++) {
			const int s = sl & 1;
			cp_async_wait_all();
			tp_round_slice<TA, BM, LA, QA, T>(As[s], t);
			tp_round_slice<!TB, BN, LB, QB, T>(Bs[s], t);
			__syncthreads(); // stage s is whole; every warp is done with stage s^1 (slice sl-1)
			if (sl + 1 < slices) copy(s ^ 1, (sl + 1) * TP_BK);
			tp_mma_step<TA, TB, LA, LB, MI, NJ>(acc, As[s], Bs[s], 0, wm, wn);
			tp_mma_step<TA, TB, LA, LB, MI, NJ>(acc, As[s], Bs[s], 8, wm, wn);
		}
		__syncthreads(); // before the next tile's copies reuse the stages
		tf_out_tile<MI, NJ>(acc, C, ldc, W, M, N, m0 + wm, n0 + wn, bias, accumulate, relu, mask);
		gemm_split_fixup<BM, BN>(C, ldc, W, M, N, m0, n0, bias, accumulate, relu, mask, tickets, &As[0][0]);
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
