// SGEMM for the linear layer y = x·Wᵀ + b (W [out][in], PyTorch layout) and its
// backward. One template, three shapes:
//
//	gemm_nt   C = A·Bᵀ (+ bias)     y  = x·Wᵀ + b    M=rows N=out K=in
//	gemm_nn   C += A·B              dx += dy·W       M=rows N=in  K=out
//	gemm_tn   C += Aᵀ·B             dW += dyᵀ·x      M=out  N=in  K=rows
//	col_sum   db[c] += Σ_r dy[r][c]
//	relu_fwd / relu_bwd, the activation between the layers (in place)
//
// gemm_* (and gemm_*_64) are the register-tiled kernels described below gemm_reg;
// gemm_pipe_tn and gemm_pipe_nn (and _64) are gemm_tn and gemm_nn with their k-major
// operands' slices copied by cp.async (below gemm_pipe);
// the first versions, gemm64_* (64×64 tiles, 256 threads of 4×4 outputs spaced 16 apart,
// scalar shared reads), stay for the kernel bench (so does tf32.cu's gemm64_tf32_*, on
// their launch geometry). Plain FP32 FMA, no tensor cores (TF32 is tf32.cu's, opt-in).
// Every GEMM ends its outputs with gemm_epilogue (common.h): the bias, the accumulation
// into C, and the ReLU (relu, nt) or the gradient through one (mask, nn).
//
// Launch: gemm64_*: block 256, grid (ceil(N/64), min(ceil(M/64), 65535)); gemm_*,
// gemm_pipe_*: block 256, grid (ceil(N/128), min(ceil(M/128), 65535), splits); the _64
// kernels: block 64, grid (ceil(N/64), min(ceil(M/64), 65535), splits). The y dimension
// is grid-strided, so any M works.
#include "common.h"

#define TM 64
#define TN 64
#define TK 16
#define TILE_THREADS 256

// C[m][n] (row stride ldc) = (accumulate ? C[m][n] : 0) + Σ_k A(m,k)·B(k,n) + bias[n],
// A(m,k) = TA ? A[k·lda + m] : A[m·lda + k], B(k,n) = TB ? B[n·ldb + k] : B[k·ldb + n].
template <bool TA, bool TB>
__device__ __forceinline__ void gemm_tiled(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C,
                                           int ldc, const float* bias, int accumulate, int relu, const float* mask) {
	gemm_end_for<TA, TB>(relu, mask);
	SHARED(float, As, [TK][TM + 1]);
	SHARED(float, Bs, [TK][TN + 1]);
	const int t = threadIdx.x, tx = t & 15, ty = t >> 4;
	const int n0 = blockIdx.x * TN;
	for (int m0 = blockIdx.y * TM; m0 < M; m0 += gridDim.y * TM) {
		float acc[4][4];
		for (int i = 0; i < 4; i++)
			for (int j = 0; j < 4; j++) acc[i][j] = 0.f;
		for (int k0 = 0; k0 < K; k0 += TK) {
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
				As[k][m] = v;
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
				Bs[k][n] = v;
			}
			__syncthreads();
			for (int kk = 0; kk < TK; kk++) {
				float a[4], b[4];
				for (int i = 0; i < 4; i++) a[i] = As[kk][ty + 16 * i];
				for (int j = 0; j < 4; j++) b[j] = Bs[kk][tx + 16 * j];
				for (int i = 0; i < 4; i++)
					for (int j = 0; j < 4; j++) acc[i][j] += a[i] * b[j];
			}
			__syncthreads();
		}
		for (int i = 0; i < 4; i++) {
			int gm = m0 + ty + 16 * i;
			if (gm >= M) continue;
			for (int j = 0; j < 4; j++) {
				int gn = n0 + tx + 16 * j;
				if (gn >= N) continue;
				gemm_epilogue(C, ldc, gm, gn, acc[i][j], bias, accumulate, relu, mask);
			}
		}
	}
}

// The first versions, kept for the kernel bench (kernelbench_test.go); tf32.cu's first
// versions, gemm64_tf32_*, have their launch geometry.
KERNEL gemm64_nt(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                 const float* bias, int accumulate, int relu, const float* mask) {
	gemm_tiled<false, true>(M, N, K, A, lda, B, ldb, C, ldc, bias, accumulate, relu, mask);
}

KERNEL gemm64_nn(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                 const float* bias, int accumulate, int relu, const float* mask) {
	gemm_tiled<false, false>(M, N, K, A, lda, B, ldb, C, ldc, bias, accumulate, relu, mask);
}

KERNEL gemm64_tn(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,
                 const float* bias, int accumulate, int relu, const float* mask) {
	gemm_tiled<true, false>(M, N, K, A, lda, B, ldb, C, ldc, bias, accumulate, relu, mask);
}

// ---------------------------------------------------------------------------------------
// The register-tiled SGEMM: gemm_nt / gemm_nn / gemm_tn, each in two block tiles (the
// host picks by shape: 128×128 when that fills the device, else 64×64).
//
// A block computes a BM×BN tile of C with (BM/8)·(BN/8) threads, each an 8×8 block of
// outputs in four 4×4 quadrants (rows ty·4 + i and BM/2 + ty·4 + i, columns tx·4 + j and
// BN/2 + tx·4 + j), so that a thread's operands are two 16-byte shared-memory reads per
// matrix per k and a warp's reads hit distinct banks. K is walked in slices of 8, double
// buffered: the next slice's global loads (16 bytes where the layout and alignment allow,
// vecA/vecB from the host; scalar with bounds otherwise) are in flight while the current
// slice is multiplied, then stored into the other buffer, one barrier per slice. Shared
// tiles are k-major ([k][m], [k][n]) whatever the layout, transposed on store.
//
// Each output is Σ_k in order 0…K−1, accumulated as `acc += a·b` exactly as gemm64_*
// does, and its epilogue is theirs (bias, then the accumulation into C): whatever the
// tile, every output gets the same bits as from gemm64_* (nvcc contracts the product and
// sum into an FMA in both; the emulator, compiled without FMA, in neither).
//
// Split K (gridDim.z = S > 1, the host's choice for layers of few tiles): block z sums its
// slice of K (kSplit) into the workspace W [S][M][N], and the tile's last block to finish
// adds the S partial sums in order (gemm_split_fixup, common.h; tickets: one int per
// tile, zero between launches), or, with tickets NULL, gemm_splitk_sum does in a launch of
// its own.
#define RT_BK 8

// rt_mma_slice: a thread's 8×8 outputs of a BM×BN tile (rows ty·4 + i and BM/2 + ty·4 + i,
// columns tx·4 + j and BN/2 + tx·4 + j) over one slice of RT_BK along k, from the slice's
// k-major shared tiles As [RT_BK][BM] and Bs [RT_BK][BN]: two 16-byte reads of each per k,
// and acc += a·b for each output, k in order.
template <int BM, int BN>
__device__ __forceinline__ void rt_mma_slice(float acc[8][8], const float (*As)[BM], const float (*Bs)[BN], int tx,
                                             int ty) {
	constexpr int UNROLL_KK = BM == 128 ? RT_BK : 1; // the 64-tile kernels would spill
#pragma unroll(UNROLL_KK)
	for (int kk = 0; kk < RT_BK; kk++) {
		float a[8], b[8];
		const float4 a0 = *(const float4*)&As[kk][ty * 4];
		const float4 a1 = *(const float4*)&As[kk][BM / 2 + ty * 4];
		const float4 b0 = *(const float4*)&Bs[kk][tx * 4];
		const float4 b1 = *(const float4*)&Bs[kk][BN / 2 + tx * 4];
		a[0] = a0.x, a[1] = a0.y, a[2] = a0.z, a[3] = a0.w, a[4] = a1.x, a[5] = a1.y, a[6] = a1.z, a[7] = a1.w;
		b[0] = b0.x, b[1] = b0.y, b[2] = b0.z, b[3] = b0.w, b[4] = b1.x, b[5] = b1.y, b[6] = b1.z, b[7] = b1.w;
		for (int i = 0; i < 8; i++)
			for (int j = 0; j < 8; j++) acc[i][j] += a[i] * b[j];
	}
}

// rt_store_slice stores thread t's share of a slice (rt_load_slice's registers r) into the
// k-major shared tile S [RT_BK][BX]: as they are when the operand is KMAJOR, transposed
// (4 consecutive k of one x) otherwise.
template <bool KMAJOR, int BX, int Q, int T>
__device__ __forceinline__ void rt_store_slice(float (*S)[BX], const float r[Q][4], int t) {
	for (int i = 0; i < Q; i++) {
		const int q = t + i * T;
		if (KMAJOR) {
			const int kk = q / (BX / 4), xq = q % (BX / 4) * 4;
			for (int c = 0; c < 4; c++) S[kk][xq + c] = r[i][c];
		} else {
			const int row = q / 2, kq = q % 2 * 4;
			for (int c = 0; c < 4; c++) S[kq + c][row] = r[i][c];
		}
	}
}

// rt_out_tile writes a thread's 8×8 outputs (rt_mma_slice's) of the tile at (m0, n0)
// through gemm_out.
template <int BM, int BN>
__device__ __forceinline__ void rt_out_tile(const float acc[8][8], float* C, int ldc, float* W, int M, int N, int m0,
                                            int n0, int tx, int ty, const float* bias, int accumulate, int relu,
                                            const float* mask) {
#pragma unroll
	for (int i = 0; i < 8; i++) {
		const int gm = m0 + (i < 4 ? ty * 4 + i : BM / 2 + ty * 4 + i - 4);
		if (gm >= M) continue;
#pragma unroll
		for (int j = 0; j < 8; j++) {
			const int gn = n0 + (j < 4 ? tx * 4 + j : BN / 2 + tx * 4 + j - 4);
			if (gn >= N) continue;
			gemm_out(C, ldc, W, M, N, gm, gn, acc[i][j], bias, accumulate, relu, mask);
		}
	}
}

template <bool TA, bool TB, int BM, int BN>
__device__ __forceinline__ void gemm_reg(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C,
                                         int ldc, const float* bias, int accumulate, int relu, const float* mask, int vecA,
                                         int vecB, int kSplit, float* W, int* tickets) {
	gemm_split_k<TA, TB>(K, A, lda, B, ldb, kSplit);
	gemm_end_for<TA, TB>(relu, mask);
	constexpr int TX = BN / 8, TY = BM / 8, T = TX * TY;
	constexpr int QA = BM * RT_BK / (4 * T), QB = BN * RT_BK / (4 * T); // 16-byte loads per thread per slice
	SHARED(__align__(16) float, As, [2][RT_BK][BM]);
	SHARED(__align__(16) float, Bs, [2][RT_BK][BN]);
	const int t = threadIdx.x, tx = t % TX, ty = t / TX;
	const int n0 = blockIdx.x * BN;
	for (int m0 = blockIdx.y * BM; m0 < M; m0 += gridDim.y * BM) {
		float ra[QA][4], rb[QB][4];
		// Global → registers: slice k0 of A's rows m0… and of B's columns n0….
		auto load = [&](int k0) {
			rt_load_slice<TA, BM, QA, T>(ra, A, lda, m0, M, k0, K, t, vecA);
			rt_load_slice<!TB, BN, QB, T>(rb, B, ldb, n0, N, k0, K, t, vecB);
		};
		// Registers → shared buffer buf, k-major.
		auto store = [&](int buf) {
			rt_store_slice<TA, BM, QA, T>(As[buf], ra, t);
			rt_store_slice<!TB, BN, QB, T>(Bs[buf], rb, t);
		};
		float acc[8][8];
		for (int i = 0; i < 8; i++)
			for (int j = 0; j < 8; j++) acc[i][j] = 0.f;
		load(0);
		store(0);
		__syncthreads();
		for (int k0 = 0, buf = 0; k0 < K; k0 += RT_BK, buf ^= 1) {
			const bool more = k0 + RT_BK < K;
			if (more) load(k0 + RT_BK);
			rt_mma_slice<BM, BN>(acc, As[buf], Bs[buf], tx, ty);
			if (more) store(buf ^ 1);
			__syncthreads();
		}
		rt_out_tile<BM, BN>(acc, C, ldc, W, M, N, m0, n0, tx, ty, bias, accumulate, relu, mask);
		gemm_split_fixup<BM, BN>(C, ldc, W, M, N, m0, n0, bias, accumulate, relu, mask, tickets, &As[0][0][0]);
	}
}

// An FP32 GEMM kernel from its template (gemm_reg, gemm_pipe): threads of 8×8 outputs,
// 2 blocks of 256 (or 8 of 64) per SM, i.e. at most 128 registers.
#define GEMM_FP32(name, impl, TA, TB, BM, BN)                                                                      \
	extern "C" __global__ void __launch_bounds__(BM * BN / 64, BM == 128 ? 2 : 8)                                 \
	name(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc,                  \
	     const float* bias, int accumulate, int relu, const float* mask, int vecA, int vecB, int kSplit, float* W,  \
	     int* tickets) {                                                                                           \
		impl<TA, TB, BM, BN>(M, N, K, A, lda, B, ldb, C, ldc, bias, accumulate, relu, mask, vecA, vecB, kSplit,   \
		                     W, tickets);                                                                        \
	}

GEMM_FP32(gemm_nt, gemm_reg, false, true, 128, 128)
GEMM_FP32(gemm_nn, gemm_reg, false, false, 128, 128)
GEMM_FP32(gemm_tn, gemm_reg, true, false, 128, 128)
GEMM_FP32(gemm_nt_64, gemm_reg, false, true, 64, 64)
GEMM_FP32(gemm_nn_64, gemm_reg, false, false, 64, 64)
GEMM_FP32(gemm_tn_64, gemm_reg, true, false, 64, 64)

// ---------------------------------------------------------------------------------------
// The pipelined GEMMs: gemm_pipe, the kernels gemm_pipe_tn (dW), gemm_pipe_nn (dX) and
// their _64 twins, gemm_reg's with the same arguments, tiles, threads, inner loop and
// results, bit for bit, for operands whose rows are 16-byte aligned (the host launches
// them only then). An operand that is k-major in memory (both of tn's, dy [rows][out] and
// x [rows][in]; nn's W [out][in]) is k-major as gemm_reg's shared tiles are, so its slices
// need no transposition and are copied from global to shared memory by cp.async (sm_80),
// 16 bytes a chunk, without passing through registers: a ring of PIPE_STAGES slices of 8
// in flight, the lanes waiting for the oldest only. An operand that is not (nn's dy, read
// along k) still comes through registers one slice ahead and is transposed on its way
// into a double buffer, as in gemm_reg. One barrier a slice. (The forward product's two
// operands both need transposing: gemm_nt stays gemm_reg.)
#define PIPE_STAGES 4

template <bool TA, bool TB, int BM, int BN>
__device__ __forceinline__ void gemm_pipe(int M, int N, int K, const float* A, int lda, const float* B, int ldb,
                                          float* C, int ldc, const float* bias, int accumulate, int relu,
                                          const float* mask, int vecA, int vecB, int kSplit, float* W, int* tickets) {
	gemm_split_k<TA, TB>(K, A, lda, B, ldb, kSplit);
	gemm_end_for<TA, TB>(relu, mask);
	constexpr bool ASYNC_A = TA, ASYNC_B = !TB; // the k-major operands
	static_assert(ASYNC_A || ASYNC_B, "gemm_reg has no operand to copy asynchronously");
	constexpr int TX = BN / 8, TY = BM / 8, T = TX * TY, S = PIPE_STAGES;
	constexpr int QA = BM * RT_BK / (4 * T), QB = BN * RT_BK / (4 * T); // 16-byte chunks per thread per slice
	SHARED(__align__(16) float, As, [ASYNC_A ? S : 2][RT_BK][BM]);
	SHARED(__align__(16) float, Bs, [ASYNC_B ? S : 2][RT_BK][BN]);
	const int t = threadIdx.x, tx = t % TX, ty = t / TX;
	const int n0 = blockIdx.x * BN, slices = (K + RT_BK - 1) / RT_BK;
	for (int m0 = blockIdx.y * BM; m0 < M; m0 += gridDim.y * BM) {
		// The k-major operands' slice sl into stage sl mod S; a group is committed whether or
		// not there is a slice, so that "the oldest group" is always slice sl's.
		const async_src<BM, BM, QA, T> srcA(A, lda, m0, M, t);
		const async_src<BN, BN, QB, T> srcB(B, ldb, n0, N, t);
		static_assert(async_src<BM, BM, QA, T>::RK == RT_BK && async_src<BN, BN, QB, T>::RK == RT_BK, "slices of RT_BK");
		auto copy = [&](int sl) {
			if (sl < slices) {
				if (ASYNC_A) srcA.copy(&As[sl % S][0][0], A, lda, m0, M, sl, K, t);
				if (ASYNC_B) srcB.copy(&Bs[sl % S][0][0], B, ldb, n0, N, sl, K, t);
			}
			cp_async_commit();
		};
		// The other operand's slice sl: global → registers, then → its double buffer.
		float r[ASYNC_A ? QB : QA][4];
		auto load = [&](int sl) {
			if (!ASYNC_A) rt_load_slice<false, BM, QA, T>(r, A, lda, m0, M, sl * RT_BK, K, t, vecA);
			if (!ASYNC_B) rt_load_slice<false, BN, QB, T>(r, B, ldb, n0, N, sl * RT_BK, K, t, vecB);
		};
		auto store = [&](int sl) {
			if (!ASYNC_A) rt_store_slice<false, BM, QA, T>(As[sl % 2], r, t);
			if (!ASYNC_B) rt_store_slice<false, BN, QB, T>(Bs[sl % 2], r, t);
		};
		float acc[8][8];
		for (int i = 0; i < 8; i++)
			for (int j = 0; j < 8; j++) acc[i][j] = 0.f;
		if (!(ASYNC_A && ASYNC_B) && slices > 0) {
			load(0);
			store(0);
		}
		for (int sl = 0; sl < S - 1; sl++) copy(sl);
		for (int sl = 0; sl < slices; sl++) {
			const bool more = sl + 1 < slices;
			if (!(ASYNC_A && ASYNC_B) && more) load(sl + 1);
			cp_async_wait<S - 2>(); // this lane's copies of slice sl have landed
			__syncthreads();        // and every lane's, and the stores; every warp is done with slice sl − 1
			copy(sl + S - 1);       // into slice sl − 1's stage
			rt_mma_slice<BM, BN>(acc, As[ASYNC_A ? sl % S : sl % 2], Bs[ASYNC_B ? sl % S : sl % 2], tx, ty);
			if (!(ASYNC_A && ASYNC_B) && more) store(sl + 1); // into slice sl − 1's buffer
		}
		cp_async_wait_all(); // the ring's last (empty) groups
		__syncthreads();     // before the next tile's copies, or the flag, reuse the stages
		rt_out_tile<BM, BN>(acc, C, ldc, W, M, N, m0, n0, tx, ty, bias, accumulate, relu, mask);
		gemm_split_fixup<BM, BN>(C, ldc, W, M, N, m0, n0, bias, accumulate, relu, mask, tickets, &As[0][0][0]);
	}
}

GEMM_FP32(gemm_pipe_tn, gemm_pipe, true, false, 128, 128)
GEMM_FP32(gemm_pipe_nn, gemm_pipe, false, false, 128, 128)
GEMM_FP32(gemm_pipe_tn_64, gemm_pipe, true, false, 64, 64)
GEMM_FP32(gemm_pipe_nn_64, gemm_pipe, false, false, 64, 64)

// gemm_splitk_sum ends a split-K GEMM: C[m][n] = (accumulate ? C[m][n] : 0) + (Σ_s
// W[s][m][n] + bias[n]), the splits summed in order s = 0 … S−1 (deterministic), W
// [S][M][N]. When the rows of a GEMM are too few to give every SM a block (a layer of a
// few hundred rows and K in the thousands), splitting K gives the device S times the
// blocks, and this pass costs S·M·N reads (gemm_split_fixup, the GEMM ending its own
// split with the same sums, was slower: Device.splitFixup). A thread issues its element's
// partial sums' loads 8 at a time and then adds them in order (nvcc's unrolling issued
// them 4 at a time).
KERNEL gemm_splitk_sum(float* C, int ldc, const float* W, int S, int M, int N, const float* bias, int accumulate,
                       int relu, const float* mask) {
	const long long MN = (long long)M * N;
	GRID_STRIDE(i, MN) {
		const long long m = i / N, n = i % N;
		float v = W[i];
		for (int s0 = 1; s0 < S; s0 += 8) {
			float w[8];
			for (int u = 0; u < 8; u++) w[u] = s0 + u < S ? W[(long long)(s0 + u) * MN + i] : 0.f;
			for (int u = 0; u < 8; u++)
				if (s0 + u < S) v += w[u];
		}
		gemm_epilogue(C, ldc, m, n, v, bias, accumulate, relu, mask);
	}
}

// db[c] += Σ_r dy[r][c] for c < cols, dy's rows ld apart: blocks of COL_SUM_LANES·32 threads = 32 columns ×
// COL_SUM_LANES row lanes, each lane summing rows lane, lane + COL_SUM_LANES, … in order,
// then the lanes' sums added in order through shared memory (deterministic). Grid
// ceil(cols/32): at d = 1600 only 50 blocks, so the row lanes are what keeps a column's
// chain of dependent loads short (rows/32 of them).
#define COL_SUM_LANES 32
KERNEL col_sum(float* db, const float* dy, int ld, int rows, int cols) {
	SHARED(float, red, [COL_SUM_LANES][33]);
	const int t = threadIdx.x, tx = t & 31, ty = t >> 5;
	const int c = blockIdx.x * 32 + tx;
	float s = 0.f;
	if (c < cols)
		for (int r = ty; r < rows; r += COL_SUM_LANES) s += dy[(long long)r * ld + c];
	red[ty][tx] = s;
	__syncthreads();
	if (ty == 0 && c < cols) {
		float sum = 0.f;
		for (int l = 0; l < COL_SUM_LANES; l++) sum += red[l][tx];
		db[c] += sum;
	}
}

// x[i] = max(x[i], 0), in place.
KERNEL relu_fwd(float* x, int n) {
	GRID_STRIDE(i, n) {
		if (x[i] < 0.f) x[i] = 0.f;
	}
}

// dx[i] = 0 where the ReLU output out[i] is not positive (ReLU'(0) = 0).
KERNEL relu_bwd(float* dx, const float* out, int n) {
	GRID_STRIDE(i, n) {
		if (!(out[i] > 0.f)) dx[i] = 0.f;
	}
}
