// Scores and the loss (docs/model.md §7, §6, §9): logits γ − m·dist, the DNF union (max over
// branches), and the weighted logsigmoid loss
//
//	L_pos = −Σ_q w_q·log σ(pos_q) / Σ_q w_q
//	L_neg = −Σ_q w_q·(1/k)·Σ_j log σ(−neg_qj) / Σ_q w_q
//	L     = (L_pos + L_neg)/2
//
// The reductions run in one block, in double, in a fixed order: deterministic. Launch
// them with ONE block of REDUCE_THREADS threads (a power of two).
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

// stats[0..3] = L, L_pos, L_neg, Σw for logits pos [Q], neg [Q][k] and weights w [Q].
// One block of REDUCE_THREADS threads.
KERNEL loss_fwd(double* stats, const float* pos, const float* neg, const float* w, int Q, int k) {
	__shared__ double red[REDUCE_THREADS];
	double sw = 0.0, sp = 0.0, sn = 0.0;
	for (int q = threadIdx.x; q < Q; q += blockDim.x) {
		double wq = (double)w[q];
		sw += wq;
		sp -= wq * log_sigmoid((double)pos[q]);
		double s = 0.0;
		for (int j = 0; j < k; j++) s += log_sigmoid(-(double)neg[(long long)q * k + j]);
		sn -= wq * s / (double)k;
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

// dModulus[0] += −Σ_i dLogit[i]·dist[i] (summed in double). One block of REDUCE_THREADS.
KERNEL logit_bwd_modulus(float* dModulus, const float* dLogit, const float* dist, int n) {
	__shared__ double red[REDUCE_THREADS];
	double s = 0.0;
	for (int i = threadIdx.x; i < n; i += blockDim.x) s -= (double)dLogit[i] * (double)dist[i];
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
