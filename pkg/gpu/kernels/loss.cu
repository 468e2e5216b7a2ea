// Scores and the loss (docs/model.md §7, §6, §9): logits γ − m·dist, the DNF union (max over
// branches), and the weighted logsigmoid loss
//
//	L_pos = −Σ_q w_q·log σ(pos_q) / Σ_q w_q
//	L_neg = −Σ_q w_q·(1/k)·Σ_j log σ(−neg_qj) / Σ_q w_q
//	L     = (L_pos + L_neg)/2
//
// The reductions run in double, in a fixed order: deterministic. Their final stages run in
// ONE block of REDUCE_THREADS threads (a power of two).
#include "common.h"

#define REDUCE_THREADS 256

// Block-wide sum of v over REDUCE_THREADS threads into red[0] (all threads call it).
__device__ __forceinline__ double block_sum(double* red, double v) {
	unsigned t = threadIdx.x;
	red[t] = v;
	__syncthreads();
	for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
		if (t < s) red[t] += red[t + s];
		__syncthreads();
	}
	double r = red[0];
	__syncthreads();
	return r;
}

// log σ(x) = min(x, 0) − log1p(exp(−|x|)), stable.
__device__ __forceinline__ double log_sigmoid(double x) { return fmin(x, 0.0) - log1p(exp(-fabs(x))); }

__device__ __forceinline__ double sigmoid_d(double x) { return 1.0 / (1.0 + exp(-x)); }

// The loss in two launches, so that its transcendentals spread over the device (one block
// took 0.1 ms an update at b=512, n=128): loss_fwd_terms computes each query's three
// terms, a warp per query (LOSS_QUERIES per block) with its lanes over the negatives, and
// loss_fwd_sum adds them up in one block. Both sum in a fixed order: deterministic.
#define LOSS_QUERIES 8

// part [3][Q] = w_q, w_q·log σ(pos_q), w_q·(1/k)·Σ_j log σ(−neg_qj).
// Blocks of 32·LOSS_QUERIES threads.
KERNEL loss_fwd_terms(double* part, const float* pos, const float* neg, const float* w, int Q, int k) {
	__shared__ double red[LOSS_QUERIES][32];
	int lane = threadIdx.x & 31, row = threadIdx.x >> 5;
	for (long long q0 = (long long)blockIdx.x * LOSS_QUERIES; q0 < Q; q0 += (long long)gridDim.x * LOSS_QUERIES) {
		long long q = q0 + row;
		double s = 0.0;
		if (q < Q)
			for (int j = lane; j < k; j += 32) s += log_sigmoid(-(double)neg[q * k + j]);
		red[row][lane] = s;
		__syncthreads();
		for (int h = 16; h > 0; h >>= 1) {
			if (lane < h) red[row][lane] += red[row][lane + h];
			__syncthreads();
		}
		if (lane == 0 && q < Q) {
			double wq = (double)w[q];
			part[q] = wq;
			part[Q + q] = wq * log_sigmoid((double)pos[q]);
			part[2LL * Q + q] = wq * red[row][0] / (double)k;
		}
		__syncthreads();
	}
}

// stats[0..3] = L, L_pos, L_neg, Σw from loss_fwd_terms' part [3][Q]. One block of
// REDUCE_THREADS threads.
KERNEL loss_fwd_sum(double* stats, const double* part, int Q) {
	__shared__ double red[REDUCE_THREADS];
	double sw = 0.0, sp = 0.0, sn = 0.0;
	for (int q = threadIdx.x; q < Q; q += blockDim.x) {
		sw += part[q];
		sp -= part[Q + q];
		sn -= part[2LL * Q + q];
	}
	sw = block_sum(red, sw);
	sp = block_sum(red, sp);
	sn = block_sum(red, sn);
	if (threadIdx.x == 0) {
		sp /= sw;
		sn /= sw;
		stats[0] = (sp + sn) / 2.0;
		stats[1] = sp;
		stats[2] = sn;
		stats[3] = sw;
	}
}

// Adds the gradient of L (times dLoss) into dPos [Q] and dNeg [Q][k]:
//	∂L/∂pos_q = −w_q·σ(−pos_q)/(2Σw),  ∂L/∂neg_qj = w_q·σ(neg_qj)/(2kΣw),
// with Σw = stats[3] from loss_fwd (read on the device: no round trip).
KERNEL loss_bwd(float* dPos, float* dNeg, const float* pos, const float* neg, const float* w, const double* stats, int Q, int k,
                double dLoss) {
	double sumW = stats[3];
	GRID_STRIDE(e, (long long)Q * (k + 1)) {
		if (e < Q) {
			double c = dLoss * (double)w[e] / (2.0 * sumW);
			dPos[e] += (float)(-c * sigmoid_d(-(double)pos[e]));
		} else {
			long long j = e - Q;
			long long q = j / k;
			double c = dLoss * (double)w[q] / (2.0 * sumW);
			dNeg[j] += (float)(c / (double)k * sigmoid_d((double)neg[j]));
		}
	}
}

// logit[i] = γ − m·dist[i], with the modulus m read from the device (modulus[0]).
KERNEL logit_fwd(float* logit, const float* dist, const float* modulus, float gamma, int n) {
	float m = modulus[0];
	GRID_STRIDE(i, n) { logit[i] = gamma - m * dist[i]; }
}

// dDist[i] −= m·dLogit[i].
KERNEL logit_bwd(float* dDist, const float* dLogit, const float* modulus, int n) {
	float m = modulus[0];
	GRID_STRIDE(i, n) { dDist[i] -= m * dLogit[i]; }
}

// dModulus[0] += −Σ_i dLogit[i]·dist[i], summed in double in two launches:
// logit_bwd_modulus_part's block b sums i ≡ b·REDUCE_THREADS + t (mod gridDim.x·REDUCE_THREADS)
// into part[b], and logit_bwd_modulus_sum adds the parts in one block. The grid is fixed
// by n (Device.LogitBackward), so the order is too: deterministic.
KERNEL logit_bwd_modulus_part(double* part, const float* dLogit, const float* dist, int n) {
	__shared__ double red[REDUCE_THREADS];
	double s = 0.0;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
		s -= (double)dLogit[i] * (double)dist[i];
	s = block_sum(red, s);
	if (threadIdx.x == 0) part[blockIdx.x] = s;
}

// dModulus[0] += Σ_b part[b], b < parts. One block of REDUCE_THREADS threads.
KERNEL logit_bwd_modulus_sum(float* dModulus, const double* part, int parts) {
	__shared__ double red[REDUCE_THREADS];
	double s = 0.0;
	for (int b = threadIdx.x; b < parts; b += blockDim.x) s += part[b];
	s = block_sum(red, s);
	if (threadIdx.x == 0) dModulus[0] += (float)s;
}

// score[i] = max_b branches[b][i], arg[i] = the first b attaining it; branches [nb][n].
KERNEL union_max_fwd(float* score, int* arg, const float* branches, int nb, int n) {
	GRID_STRIDE(i, n) {
		float s = branches[i];
		int a = 0;
		for (int b = 1; b < nb; b++) {
			float v = branches[(long long)b * n + i];
			if (v > s) {
				s = v;
				a = b;
			}
		}
		score[i] = s;
		arg[i] = a;
	}
}

// dBranches[arg[i]][i] += dScore[i].
KERNEL union_max_bwd(float* dBranches, const float* dScore, const int* arg, int n) {
	GRID_STRIDE(i, n) { dBranches[(long long)arg[i] * n + i] += dScore[i]; }
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
