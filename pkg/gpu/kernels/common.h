// Shared definitions of the RoConE CUDA kernels.
//
// Every .cu file in this directory is compiled twice from the same text:
//   - by nvcc to PTX for compute_80 (`go generate`, see generate.go), embedded in the Go
//     binary and loaded by the CUDA driver at run time;
//   - by g++ through cgo in package emu, with emu.h supplying the CUDA built-ins
//     (threadIdx, __syncthreads, atomicAdd, ...), so that the tests run every kernel
//     without a GPU.
// So the kernels use only the common subset: plain C++ (templates allowed), the CUDA
// built-in variables, __syncthreads, atomicAdd on float, static shared arrays (SHARED, no
// dynamic shared memory, no warp intrinsics), and the single-precision <math.h>
// functions.
//
// Conventions (those of package compute):
//   - tensors are flat row-major float arrays; sizes are int (each < 2^31);
//   - backward kernels ADD (+=) into gradient outputs unless documented as "writes";
//   - a NULL gradient output is skipped;
//   - element-wise kernels use grid-stride loops, so any grid size is correct.
#ifndef ROCONE_KERNELS_COMMON_H
#define ROCONE_KERNELS_COMMON_H

#define KERNEL extern "C" __global__ void

#define PI_F 3.14159265358979323846f
#define PI_D 3.14159265358979323846

// SHARED(T, name, dims) declares a block's shared array, `__shared__ T name dims` on the
// device. Shared memory begins each block holding whatever the SM's previous block left
// there, so a kernel that reads an element before a thread of its block has written it
// reads garbage on the device. Under the emulator a __shared__ array is a thread-local
// C array that keeps the last block's values, often the very values the read wanted, so
// the same defect passes the tests: there, SHARED fills the array with 0xFF bytes (a NaN
// in every float and double, −1 in every integer) when the block's first thread reaches
// the declaration, and such a read shows as a NaN or a wild index. Kernels declare their
// shared arrays with it alone: the emulator does not define __shared__.
#ifdef __CUDA_ARCH__
#define SHARED(T, name, dims) __shared__ T name dims
#else
#define SHARED(T, name, dims)                        \
	static thread_local T name dims;                 \
	static thread_local unsigned long long name##_block; \
	emu_poison_shared(&name##_block, &name, sizeof name)
#endif

// Grid-stride loop over [0, n) along x.
#define GRID_STRIDE(i, n)                                                        \
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
	     i += (long long)blockDim.x * gridDim.x)

// angle_of is the angle map θ = π·tanh(x/R) of a raw table value x: angle_fwd's, and
// Adam's where it writes the angles of the values it has just updated (adam.cu), one
// function so that both give the same bits.
__device__ __forceinline__ float angle_of(float raw, float R) { return PI_F * tanhf(raw / R); }

// angle_grad is the gradient through the angle map θ = π·tanh(x/R), from its output θ:
// dθ·(π/R)·(1 − (θ/π)²). angle_bwd and Adam's fused angle tensors (adam.cu) both use it,
// rounded one operation at a time (no FMA contraction, whatever the code around it), so
// that they agree bit for bit.
__device__ __forceinline__ float angle_grad(float dTheta, float theta, float R) {
	float t = theta / PI_F;
	return __fmul_rn(__fmul_rn(dTheta, PI_F / R), __fsub_rn(1.f, __fmul_rn(t, t)));
}

// half_sincos: sin x and cos x for a half angle x (angles are π·tanh(·) or ConE's maps,
// within [−π, π], so their halves lie within [−π/2, π/2]). There, two minimax
// polynomials in t = x² (sin: x + x³·P(t), odd, so sin(−x) = −sin x and sin 0 = 0 exactly;
// cos: 1 + t·Q(t), cos 0 = 1), 11 multiply-adds and no range reduction, where sincosf
// spends some 40 instructions and a branch to its large-argument path. Absolute error
// below 1.1e-7 for both over |x| ≤ 1.5708 (sin within 1.7 ulp; cos, whose values near π/2
// are tiny, to the same absolute accuracy as the products it enters, which round at
// 6e-8). Outside that interval, sincosf. Explicit fmaf, so that the emulator's bits are
// the device's.
__device__ __forceinline__ void half_sincos(float x, float* s, float* c) {
	if (fabsf(x) <= 1.5708f) {
		const float t = x * x;
		float p = fmaf(fmaf(fmaf(fmaf(-2.388892284e-08f, t, 2.752538421e-06f), t, -1.984086848e-04f), t, 8.333330974e-03f), t,
		               -1.666666716e-01f);
		*s = fmaf(x * t, p, x);
		float q = fmaf(fmaf(fmaf(fmaf(-2.607712588e-07f, t, 2.476188820e-05f), t, -1.388840377e-03f), t, 4.166664183e-02f), t,
		               -5.000000000e-01f);
		*c = fmaf(q, t, 1.f);
	} else {
		sincosf(x, s, c);
	}
}

// sign with sign(0) = 0: the subgradient of |x| (PyTorch's abs backward).
__device__ __forceinline__ float sgnf(float x) { return x > 0.f ? 1.f : (x < 0.f ? -1.f : 0.f); }

// sgn_mul is sgnf(s)·y, bit for bit for y not a NaN, in four instructions where the
// product takes six: where s is non-zero (and not a NaN) the product is y with its sign
// flipped when s < 0, s's sign bit XORed onto y's; elsewhere sgnf(s) = +0 and it is +0·y.
__device__ __forceinline__ float sgn_mul(float s, float y) {
	const float flipped = __uint_as_float(__float_as_uint(y) ^ (__float_as_uint(s) & 0x80000000u));
	return fabsf(s) > 0.f ? flipped : 0.f * y;
}

// minWeights: how the gradient of min(x, y) splits between x and y (half each on a tie,
// as torch.min(a, b)).
__device__ __forceinline__ void min_weights(float x, float y, float* wx, float* wy) {
	if (x < y) {
		*wx = 1.f;
		*wy = 0.f;
	} else if (x > y) {
		*wx = 0.f;
		*wy = 1.f;
	} else {
		*wx = 0.5f;
		*wy = 0.5f;
	}
}

// fmin_nan and fmax_nan are Go's built-in min and max, which the CPU reference takes
// (pkg/model, pkg/compute): a NaN in either operand gives a NaN, and −0 < +0. fminf and
// fmaxf return the other operand where one is a NaN, so a NaN that had already appeared
// (a diverged parameter, an overflow) came out of a clamp or a minimum as a number on the
// device, and passed the loss's and the ranking's NaN checks unseen. The kernels' clamps
// and minima of two values take these (rotate.cu, distance.cu, score.cu), and so does the
// softmax's running max (intersect.cu). On the device one instruction each, PTX's
// min.NaN.f32 and max.NaN.f32 (PTX ISA 7.0, sm_80: the canonical NaN 0x7fffffff, and
// +0 > −0); in the emulator the same in C++, that NaN included.
__device__ __forceinline__ float fmin_nan(float x, float y) {
#ifdef __CUDA_ARCH__
	float r;
	asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(y));
	return r;
#else
	if (x != x || y != y) return __uint_as_float(0x7fffffffu);
	if (x == y) return __uint_as_float(__float_as_uint(x) | __float_as_uint(y)); // −0 where one is −0
	return x < y ? x : y;
#endif
}

__device__ __forceinline__ float fmax_nan(float x, float y) {
#ifdef __CUDA_ARCH__
	float r;
	asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(y));
	return r;
#else
	if (x != x || y != y) return __uint_as_float(0x7fffffffu);
	if (x == y) return __uint_as_float(__float_as_uint(x) & __float_as_uint(y)); // +0 where one is +0
	return x > y ? x : y;
#endif
}

// nanf_ is a quiet NaN: what a kernel writes where it was asked for something it does not
// know (a rule number outside projection.h), so that the result cannot be used unnoticed.
__device__ __forceinline__ float nanf_() { return __builtin_nanf(""); }

__device__ __forceinline__ float sigmoidf_(float x) { return 1.f / (1.f + expf(-x)); }

// wrap maps an angle into [-pi, pi): ((x + pi) mod 2pi) - pi with a floored mod. Computed
// in double so that the jump lands where the float64 reference puts it.
__device__ __forceinline__ float wrapf(float x) {
	double y = (double)x + PI_D;
	return (float)(y - 2.0 * PI_D * floor(y / (2.0 * PI_D)) - PI_D);
}

// rt_load4 (the GEMMs of linear.cu and tf32.cu) reads four consecutive elements at
// p[base …] of which the first `valid` exist (0 … 4), zero-filling the rest; in one 16-byte
// load when vec (the host's check that the rows are 16-byte aligned) and all four exist.
__device__ __forceinline__ void rt_load4(float r[4], const float* p, long long base, int valid, int vec) {
#ifndef __CUDA_ARCH__
	emu_require_inside(p + base, 4LL * valid, "a GEMM operand's load");
#endif
	if (vec && valid == 4) {
		float4 v = *(const float4*)(p + base);
		r[0] = v.x, r[1] = v.y, r[2] = v.z, r[3] = v.w;
		return;
	}
	for (int c = 0; c < 4; c++) r[c] = c < valid ? p[base + c] : 0.f;
}

// rt_clamp4 clamps a count of remaining elements to rt_load4's 0 … 4.
__device__ __forceinline__ int rt_clamp4(int n) { return n < 0 ? 0 : (n > 4 ? 4 : n); }

// rt_load_slice is thread t's share (Q loads of 4 elements, of T threads) of a slice of 8
// along k of one GEMM operand X, for the register-tiled GEMMs of linear.cu and tf32.cu:
// the BX values of x from x0 (of X's XN) and k from k0 (of K). KMAJOR: X(x, k) = X[k·ld +
// x], each load 4 consecutive x of one k; otherwise X(x, k) = X[x·ld + k], 4 consecutive k
// of one x. A is (m, k), KMAJOR when transposed; B is (n, k), KMAJOR when not.
template <bool KMAJOR, int BX, int Q, int T>
__device__ __forceinline__ void rt_load_slice(float r[Q][4], const float* X, int ld, int x0, int XN, int k0, int K, int t,
                                              int vec) {
	for (int i = 0; i < Q; i++) {
		const int q = t + i * T;
		if (KMAJOR) {
			const int kk = q / (BX / 4), xq = q % (BX / 4) * 4, gk = k0 + kk, gx = x0 + xq;
			rt_load4(r[i], X, (long long)gk * ld + gx, gk < K ? rt_clamp4(XN - gx) : 0, vec);
		} else {
			const int row = q / 2, kq = q % 2 * 4, gx = x0 + row, gk = k0 + kq;
			rt_load4(r[i], X, (long long)gx * ld + gk, gx < XN ? rt_clamp4(K - gk) : 0, vec);
		}
	}
}

// cp_async16 copies the 16 bytes at src (global) to dst (shared), of which the first
// `bytes` (0 … 16) are read and the rest are zeros: asynchronously on the device
// (cp.async.cg, sm_80), and in the emulator at once or as late as the waits allow
// (emu.h's emu_cp_async). cp_async_commit closes the lane's group
// of copies; cp_async_wait<N> waits until at most N of the lane's groups are still in
// flight (the older ones have landed: visible to the lane, and to the block after a
// barrier), cp_async_wait_all until none is. The pipelined GEMMs (linear.cu, tf32.cu).
__device__ __forceinline__ void cp_async16(float* dst, const float* src, int bytes) {
#ifdef __CUDA_ARCH__
	const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src), "r"(bytes) : "memory");
#else
	emu_cp_async(dst, src, bytes);
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#ifdef __CUDA_ARCH__
	asm volatile("cp.async.commit_group;\n" ::: "memory");
#else
	emu_cp_commit();
#endif
}

template <int N>
__device__ __forceinline__ void cp_async_wait() {
#ifdef __CUDA_ARCH__
	asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#else
	emu_cp_wait(N);
#endif
}

__device__ __forceinline__ void cp_async_wait_all() {
#ifdef __CUDA_ARCH__
	asm volatile("cp.async.wait_all;\n" ::: "memory");
#else
	emu_cp_wait(-1);
#endif
}

// async_copy_slice starts lane t's Q chunk copies (of T lanes, 16 bytes each) of a slice
// of a k-major GEMM operand X(x, k) = X[k·ld + x] into the tile S [k][x] (rows of LD
// floats): chunk i is the (t + i·T)-th of the slice's rows of BX values of x from x0 (of
// X's XN), k from k0 (of K); values past the operand's edge are zeros. The tile keeps the
// operand's layout, so that every chunk is 16 bytes of one row: the rows must be 16-byte
// aligned. The FP32 pipelined GEMMs (linear.cu); the TF32 ones place their chunks
// themselves (tf32.cu's tp_src, swizzled).
template <int BX, int LD, int Q, int T>
__device__ __forceinline__ void async_copy_slice(float* S, const float* X, int ld, int x0, int XN, int k0, int K, int t) {
	for (int i = 0; i < Q; i++) {
		const int q = t + i * T;
		const int kk = q / (BX / 4), xq = q % (BX / 4) * 4, gk = k0 + kk, gx = x0 + xq;
		const int valid = gk < K ? rt_clamp4(XN - gx) : 0;
		cp_async16(&S[kk * LD + xq], valid ? X + (long long)gk * ld + gx : X, 4 * valid);
	}
}

// async_src is async_copy_slice for one tile (x0, from lane t) with its chunks' places
// worked out once: a slice that is whole (the tile's BX values of x inside XN, its RK
// rows of k inside K) is copied without bounds, 16 bytes a chunk, chunk i a fixed step
// from chunk 0, without the bounds and the zero fill (gemm_pipe_tn's copies of a slice
// ~80 → ~67 instructions on sm_90); any other slice by async_copy_slice.
template <int BX, int LD, int Q, int T>
struct async_src {
	static constexpr int CPR = BX / 4, RK = Q * T / CPR; // chunks a row; a slice's rows of k
	static_assert(T % CPR == 0 && RK * CPR == Q * T, "a lane's chunks share their x");
	static constexpr int DK = T / CPR; // chunk i + 1 lies DK rows of k below chunk i
	const float* p; // chunk 0 of slice 0 (not dereferenced unless the slice is whole)
	int at;         // chunk 0's place in a stage
	bool inside;    // the tile's x inside XN

	__device__ __forceinline__ async_src(const float* X, int ld, int x0, int XN, int t) {
		const int kk = t / CPR, xq = t % CPR * 4;
		p = X + (long long)kk * ld + x0 + xq;
		at = kk * LD + xq;
		inside = x0 + BX <= XN;
	}

	// copy starts the lane's copies of slice sl (rows of k from sl·RK) into the stage S.
	__device__ __forceinline__ void copy(float* S, const float* X, int ld, int x0, int XN, int sl, int K, int t) const {
		const int k0 = sl * RK;
		if (inside && k0 + RK <= K) {
			const float* q = p + (long long)k0 * ld;
			for (int i = 0; i < Q; i++) cp_async16(&S[at + i * DK * LD], q + (long long)i * DK * ld, 16);
			return;
		}
		async_copy_slice<BX, LD, Q, T>(S, X, ld, x0, XN, k0, K, t);
	}
};

// gemm_split_k narrows a GEMM to its block's split of K (blockIdx.z, the register-tiled
// GEMMs of linear.cu and tf32.cu): block z sums k in [z·kSplit, min(K, (z+1)·kSplit)); one
// split (gridDim.z = 1) is the whole GEMM. TA, TB: whether A, B are stored transposed
// ([k][m], [n][k]).
template <bool TA, bool TB>
__device__ __forceinline__ void gemm_split_k(int& K, const float*& A, int lda, const float*& B, int ldb, int kSplit) {
	const int kb = blockIdx.z * kSplit;
	K = K - kb < kSplit ? K - kb : kSplit;
	A += TA ? (long long)kb * lda : kb;
	B += TB ? kb : (long long)kb * ldb;
}

// gemm_epilogue writes one GEMM output: C[m][n] = f((accumulate ? C[m][n] : 0) + (v +
// bias[n])), the order every GEMM kernel (and the split-K sum) adds in, where f is the
// identity, or with relu the ReLU (negative values to 0, as relu_fwd: y = ReLU(x·Wᵀ + b)),
// or with mask (a tensor laid out as C) 0 where !(mask[m][n] > 0), as relu_bwd: the
// gradient taken back through the ReLU whose output is mask. The same bits as the GEMM
// and then relu_fwd or relu_bwd.
__device__ __forceinline__ void gemm_epilogue(float* C, int ldc, long long m, long long n, float v, const float* bias,
                                              int accumulate, int relu, const float* mask) {
	if (bias) v += bias[n];
	float* c = &C[m * ldc + n];
	v = accumulate ? *c + v : v;
	if (relu && v < 0.f) v = 0.f;
	if (mask && !(mask[m * ldc + n] > 0.f)) v = 0.f;
	*c = v;
}

// gemm_end_for narrows a GEMM's epilogue options to those its layout is launched with:
// the ReLU for the forward product (nt), the mask for dX (nn), neither for dW (tn). The
// others become compile-time constants, so that a kernel carries no code or registers for
// them (the mask's loads in a dX kernel that also tested for the ReLU pushed
// gemm_tf32_pipe_nn over its registers); the host never asks a layout for the others
// (op_linear.go refuses to).
template <bool TA, bool TB>
__device__ __forceinline__ void gemm_end_for(int& relu, const float*& mask) {
	if (TA || !TB) relu = 0;
	if (TA || TB) mask = nullptr;
}

// gemm_out writes output (m, n) of a register-tiled GEMM's block: through the epilogue into
// C when K is not split; else its split's partial sum into the workspace W [S][M][N],
// which gemm_split_fixup (or gemm_splitk_sum) adds up.
__device__ __forceinline__ void gemm_out(float* C, int ldc, float* W, int M, int N, long long m, long long n, float v,
                                         const float* bias, int accumulate, int relu, const float* mask) {
	if (gridDim.z == 1)
		gemm_epilogue(C, ldc, m, n, v, bias, accumulate, relu, mask);
	else
		W[(long long)blockIdx.z * M * N + m * N + n] = v;
}

// gemm_split_fixup ends a split GEMM's tile (rows m0 …, columns n0 …, BM × BN) inside the
// kernel. Each of the tile's S blocks has stored its partial sums in W (gemm_out) and takes
// a ticket; the last of them to arrive adds the S partial sums in order s = 0 … S−1, as
// gemm_splitk_sum does (the same bits), and writes C through the epilogue. No block waits
// for another: the others are done. The tickets, one per tile (tickets[(m0/BM)·gridDim.x +
// blockIdx.x]), are zero between launches: the last block takes its tile's back to zero.
// With tickets NULL it does nothing, and gemm_splitk_sum adds the partial sums in a launch
// of its own (the first way, kept for the kernel bench). Every thread of the block calls
// it, with flag a float of the kernel's shared memory that nothing reads or writes until
// it returns (the GEMMs lend their operand tiles: a pipelined TF32 kernel's 48 KiB leave
// no room for a variable of its own).
template <int BM, int BN>
__device__ __forceinline__ void gemm_split_fixup(float* C, int ldc, const float* W, int M, int N, int m0, int n0,
                                                 const float* bias, int accumulate, int relu, const float* mask,
                                                 int* tickets, float* flag) {
	if (gridDim.z == 1 || !tickets) return;
	__threadfence(); // this thread's partial sums, visible before the block's ticket
	__syncthreads();
	if (threadIdx.x == 0) {
		int* ticket = &tickets[(m0 / BM) * gridDim.x + blockIdx.x];
		const bool lastBlock = atomicAdd(ticket, 1) == (int)gridDim.z - 1;
		if (lastBlock) atomicAdd(ticket, -(int)gridDim.z);
		*flag = lastBlock ? 1.f : 0.f;
	}
	__syncthreads();
	const bool last = *flag != 0.f;
	__syncthreads(); // flag read by all: the caller may reuse it
	if (!last) return;
	__threadfence();
	const long long MN = (long long)M * N;
	for (int i = threadIdx.x; i < BM * BN; i += blockDim.x) {
		const int m = m0 + i / BN, n = n0 + i % BN;
		if (m >= M || n >= N) continue;
		const volatile float* w = W + (long long)m * N + n; // written by other blocks: not from L1
		float v = w[0];
		for (int s = 1; s < (int)gridDim.z; s++) v += w[s * MN];
		gemm_epilogue(C, ldc, m, n, v, bias, accumulate, relu, mask);
	}
}

#endif
