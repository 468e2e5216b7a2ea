// Deterministic row sums for the gradients of gathered embedding rows.
//
// A batch gathers table rows by id (anchors, relations); ids repeat, and the gradient of
// a row is the sum over its occurrences. Atomic adds would make that sum's order, and so
// its last bits, vary from run to run. Instead the host groups the occurrences by id (a
// CSR index: rowIds, start, pairs, each row's occurrences in increasing position) and one
// thread per (row, dimension) adds them up in that order.
#include "common.h"

#define ROWS_THREADS 128

// dst[rowIds[u]][j] += Σ_{i ∈ [start[u], start[u+1])} src[pairs[i]][j], for u < nrows,
// j < d. Grid: x covers d in blocks of ROWS_THREADS, y strides over the rows.
KERNEL rows_sum_csr(float* dst, const float* src, const int* rowIds, const int* start, const int* pairs, int nrows, int d) {
	const int j = blockIdx.x * blockDim.x + threadIdx.x;
	if (j >= d) return;
	for (int u = blockIdx.y; u < nrows; u += gridDim.y) {
		float acc = 0.f;
		for (int i = start[u]; i < start[u + 1]; i++) acc += src[(long long)pairs[i] * d + j];
		dst[(long long)rowIds[u] * d + j] += acc;
	}
}

// dst[i] += src[i] for i < n.
KERNEL add_f32(float* dst, const float* src, int n) {
	GRID_STRIDE(i, n) { dst[i] += src[i]; }
}

// Splits scores [n][K] (column 0 the positive, then K−1 negatives) into pos [n] and
// neg [n][K−1].
KERNEL split_scores(float* pos, float* neg, const float* score, int n, int K) {
	GRID_STRIDE(i, (long long)n * K) {
		long long r = i / K, j = i - r * K;
		if (j == 0)
			pos[r] = score[i];
		else
			neg[r * (K - 1) + j - 1] = score[i];
	}
}

// The gradient of split_scores: writes dScore [n][K] from dPos [n] and dNeg [n][K−1].
KERNEL split_scores_bwd(float* dScore, const float* dPos, const float* dNeg, int n, int K) {
	GRID_STRIDE(i, (long long)n * K) {
		long long r = i / K, j = i - r * K;
		dScore[i] = j == 0 ? dPos[r] : dNeg[r * (K - 1) + j - 1];
	}
}

// An inverted-dropout mask made where it is used: mask[i] = keep if the high 32 bits of
// SplitMix64's finaliser of seed + (i+1)·φ are at least threshold, else 0
// (model.DropoutKeep computes the same bits on the CPU). seed arrives as two 32-bit halves.
KERNEL dropout_mask(float* mask, int n, unsigned seedLo, unsigned seedHi, unsigned threshold, float keep) {
	const unsigned long long seed = ((unsigned long long)seedHi << 32) | seedLo;
	GRID_STRIDE(i, n) {
		unsigned long long x = seed + (unsigned long long)(i + 1) * 0x9E3779B97F4A7C15ull;
		x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
		x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
		x ^= x >> 31;
		mask[i] = (unsigned)(x >> 32) >= threshold ? keep : 0.f;
	}
}
