// Tiled SGEMM for the linear layer y = x·Wᵀ + b (W [out][in], PyTorch layout) and its
// backward. One template, three shapes:
//
//	gemm_nt   C = A·Bᵀ (+ bias)     y  = x·Wᵀ + b    M=rows N=out K=in
//	gemm_nn   C += A·B              dx += dy·W       M=rows N=in  K=out
//	gemm_tn   C += Aᵀ·B             dW += dyᵀ·x      M=out  N=in  K=rows
//	col_sum   db[c] += Σ_r dy[r][c]
//	relu_fwd / relu_bwd, the activation between the layers (in place)
//
// Each block computes a TM×TN tile of C with TILE_THREADS threads: the K dimension is
// walked in slices of TK, each slice of A and B staged in shared memory (loads arranged
// so that consecutive threads read consecutive addresses for either layout), with a
// __syncthreads before and after the inner product; each thread accumulates a 4×4
// register tile spaced 16 apart (conflict-free shared reads). Plain FP32 FMA, no tensor
// cores (TF32 would not meet the 1e-4 parity tolerance).
//
// Launch: block (TILE_THREADS), grid (ceil(N/TN), min(ceil(M/TM), 65535)); the y
// dimension is grid-strided, so any M works.
#include "common.h"

#define TM 64
#define TN 64
#define TK 16
#define TILE_THREADS 256

// C[m][n] (row stride ldc) = (accumulate ? C[m][n] : 0) + Σ_k A(m,k)·B(k,n) + bias[n],
// A(m,k) = TA ? A[k·lda + m] : A[m·lda + k], B(k,n) = TB ? B[n·ldb + k] : B[k·ldb + n].
template <bool TA, bool TB>
__device__ __forceinline__ void gemm_tiled(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C,
                                           int ldc, const float* bias, int accumulate) {
	__shared__ float As[TK][TM + 1];
	__shared__ float Bs[TK][TN + 1];
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
				float v = acc[i][j];
				if (bias) v += bias[gn];
				float* c = &C[(long long)gm * ldc + gn];
				*c = accumulate ? *c + v : v;
			}
		}
	}
}

KERNEL gemm_nt(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc, const float* bias,
               int accumulate) {
	gemm_tiled<false, true>(M, N, K, A, lda, B, ldb, C, ldc, bias, accumulate);
}

KERNEL gemm_nn(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc, const float* bias,
               int accumulate) {
	gemm_tiled<false, false>(M, N, K, A, lda, B, ldb, C, ldc, bias, accumulate);
}

KERNEL gemm_tn(int M, int N, int K, const float* A, int lda, const float* B, int ldb, float* C, int ldc, const float* bias,
               int accumulate) {
	gemm_tiled<true, false>(M, N, K, A, lda, B, ldb, C, ldc, bias, accumulate);
}

// db[c] += Σ_r dy[r][c] for c < cols: blocks of 256 threads = 32 columns × 8 row lanes,
// reduced through shared memory in a fixed order (deterministic). Grid ceil(cols/32).
KERNEL col_sum(float* db, const float* dy, int rows, int cols) {
	__shared__ float red[8][33];
	const int t = threadIdx.x, tx = t & 31, ty = t >> 5;
	const int c = blockIdx.x * 32 + tx;
	float s = 0.f;
	if (c < cols)
		for (int r = ty; r < rows; r += 8) s += dy[(long long)r * cols + c];
	red[ty][tx] = s;
	__syncthreads();
	if (ty == 0 && c < cols) {
		float sum = 0.f;
		for (int l = 0; l < 8; l++) sum += red[l][tx];
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
