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

// dropout_bits is the high 32 bits of SplitMix64's finaliser of seed + (i+1)·φ, the draw
// of element i of a dropout mask (model.DropoutKeep computes the same bits on the CPU).
__device__ __forceinline__ unsigned dropout_bits(unsigned long long seed, unsigned long long i) {
	unsigned long long x = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
	x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
	x ^= x >> 31;
	return (unsigned)(x >> 32);
}

// An inverted-dropout mask made where it is used: mask[i] = keep if dropout_bits(seed, i)
// is at least threshold, else 0. seed arrives as two 32-bit halves.
KERNEL dropout_mask(float* mask, int n, unsigned seedLo, unsigned seedHi, unsigned threshold, float keep) {
	const unsigned long long seed = ((unsigned long long)seedHi << 32) | seedLo;
	GRID_STRIDE(i, n) { mask[i] = dropout_bits(seed, (unsigned long long)i) >= threshold ? keep : 0.f; }
}

// The dropout masks of several intersection steps batched into one ragged intersection
// (intersect.cu's layout: counts [J], branch j of output r is input row base[j] + r),
// written as one [rows][d] mask over its input rows, rows = Σ counts. Step (segment) s
// owns the outputs segOff[s] … segOff[s+1] − 1 (segOff [S+1], segOff[0] = 0, segOff[S] =
// counts[0]; all of a segment's n_s outputs have the same branch count nb_s) and has its
// own seed, seeds[2s] | seeds[2s+1] << 32; its mask, as the CPU model draws it, is the
// [nb_s][n_s][d] array whose element (j, r', k) is draw j·n_s·d + r'·d + k. So input row
// base[j] + r, column k, with r in segment s, gets keep or 0 by draw
// j·n_s·d + (r − segOff[s])·d + k of seed s.
KERNEL dropout_mask_ragged(float* mask, const int* counts, int J, const int* segOff, int S, const unsigned* seeds, int rows,
                           int d, unsigned threshold, float keep) {
	GRID_STRIDE(e, (long long)rows * d) {
		const long long R = e / d, k = e - R * d;
		// The branch j and output r of input row R.
		int j = 0;
		long long base = 0;
		while (j < J - 1 && R >= base + counts[j]) base += counts[j++];
		const long long r = R - base;
		// The segment: the last s with segOff[s] ≤ r (it is not empty: segOff[S] > r).
		int lo = 0, hi = S - 1;
		while (lo < hi) {
			int mid = (lo + hi + 1) / 2;
			if (segOff[mid] <= r)
				lo = mid;
			else
				hi = mid - 1;
		}
		const long long first = segOff[lo], ns = segOff[lo + 1] - first;
		const unsigned long long seed = ((unsigned long long)seeds[2 * lo + 1] << 32) | seeds[2 * lo];
		const long long i = ((long long)j * ns + (r - first)) * d + k;
		mask[e] = dropout_bits(seed, (unsigned long long)i) >= threshold ? keep : 0.f;
	}
}
