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

// The loss's transcendentals spread over the device (one block took 0.1 ms an update at
// b=512, n=128): loss_head_fwd_terms computes each query's three terms, a warp per query
// (LOSS_QUERIES per block) with its lanes over the negatives, and loss_head_fwd_sum adds
// them up in one block.
#define LOSS_QUERIES 8

// logit_of is the logit γ − m·dist: logit_fwd's, and the loss head's (one function, so the
// same bits).
__device__ __forceinline__ float logit_of(float gamma, float m, float dist) { return gamma - m * dist; }

// logit[i] = γ − m·dist[i], with the modulus m read from the device (modulus[0]).
KERNEL logit_fwd(float* logit, const float* dist, const float* modulus, float gamma, int n) {
	float m = modulus[0];
	GRID_STRIDE(i, n) { logit[i] = logit_of(gamma, m, dist[i]); }
}

// Whether branch value v replaces the union's s so far: it is greater, or it is the first
// NaN (a NaN in any branch makes the max NaN, as on the CPU: model.UnionMaxForward).
__device__ __forceinline__ bool union_takes(float v, float s) { return v > s || (v != v && s == s); }

// score[i] = max_b branches[b][i], arg[i] = the first b attaining it; branches [nb][n].
KERNEL union_max_fwd(float* score, int* arg, const float* branches, int nb, int n) {
	GRID_STRIDE(i, n) {
		float s = branches[i];
		int a = 0;
		for (int b = 1; b < nb; b++) {
			float v = branches[(long long)b * n + i];
			if (union_takes(v, s)) {
				s = v;
				a = b;
			}
		}
		score[i] = s;
		arg[i] = a;
	}
}

// ---------------------------------------------------------------------------------------
// The loss head (Device.LossHeadForward, LossHeadBackward): from the distances of every
// query's DNF branch roots to its candidates (the positive first) straight to the loss and
// back, two launches each way, where the logits, the union's max, the split into positives
// and negatives and the loss took a launch and a temporary each (nine to eleven launches
// an update; logit_fwd and union_max_fwd above remain for ranking). The queries come in classes, those with the
// same number of branches nb; cls [ncls][4] holds each class's (nb, q, root, qoff): its q
// queries are the loss's queries qoff … qoff+q−1, and its branch roots are the rows
// root … root+nb·q−1 of dist [roots][K], branch-major ([nb][q]). The classes are
// consecutive in both (LossHead's checks).
struct head_class {
	int nb, q, root, qoff;
};

__device__ __forceinline__ head_class head_class_at(const int* cls, int i) {
	head_class c;
	c.nb = cls[4 * i];
	c.q = cls[4 * i + 1];
	c.root = cls[4 * i + 2];
	c.qoff = cls[4 * i + 3];
	return c;
}

// The class of the loss's query g.
__device__ __forceinline__ head_class head_class_of_query(const int* cls, int ncls, long long g) {
	head_class c = head_class_at(cls, 0);
	for (int i = 1; i < ncls && g >= (long long)c.qoff + c.q; i++) c = head_class_at(cls, i);
	return c;
}

// The class of dist's root row r.
__device__ __forceinline__ head_class head_class_of_root(const int* cls, int ncls, long long r) {
	head_class c = head_class_at(cls, 0);
	for (int i = 1; i < ncls && r >= (long long)c.root + (long long)c.nb * c.q; i++) c = head_class_at(cls, i);
	return c;
}

// The score of candidate j of query ql of class c: the max over its branches of their
// logits, and in *arg the first branch attaining it (union_max_fwd's order, so its bits).
__device__ __forceinline__ float head_score(const float* dist, head_class c, long long ql, int j, int K, float m, float gamma,
                                            int* arg) {
	const long long r = c.root + ql;
	float s = logit_of(gamma, m, dist[r * K + j]);
	int a = 0;
	for (int b = 1; b < c.nb; b++) {
		const float v = logit_of(gamma, m, dist[(r + (long long)b * c.q) * K + j]);
		if (union_takes(v, s)) {
			s = v;
			a = b;
		}
	}
	*arg = a;
	return s;
}

// part [3][Q] = w_g, w_g·log σ(pos_g), w_g·(1/k)·Σ_j log σ(−neg_gj) for the loss's queries
// g, k = K − 1, their scores from dist (head_score).
// A warp per query, LOSS_QUERIES per block of 32·LOSS_QUERIES threads, grid-strided.
KERNEL loss_head_fwd_terms(double* part, const float* dist, const int* cls, int ncls, const float* modulus, float gamma,
                           const float* w, int Q, int K) {
	SHARED(double, red, [LOSS_QUERIES][32]);
	const int lane = threadIdx.x & 31, row = threadIdx.x >> 5, k = K - 1;
	const float m = modulus[0];
	for (long long q0 = (long long)blockIdx.x * LOSS_QUERIES; q0 < Q; q0 += (long long)gridDim.x * LOSS_QUERIES) {
		const long long g = q0 + row;
		double s = 0.0;
		head_class c = head_class_at(cls, 0);
		if (g < Q) {
			c = head_class_of_query(cls, ncls, g);
			for (int j = lane; j < k; j += 32) {
				int a;
				s += log_sigmoid(-(double)head_score(dist, c, g - c.qoff, j + 1, K, m, gamma, &a));
			}
		}
		red[row][lane] = s;
		__syncthreads();
		for (int h = 16; h > 0; h >>= 1) {
			if (lane < h) red[row][lane] += red[row][lane + h];
			__syncthreads();
		}
		if (lane == 0 && g < Q) {
			int a;
			const double wq = (double)w[g];
			part[g] = wq;
			part[Q + g] = wq * log_sigmoid((double)head_score(dist, c, g - c.qoff, 0, K, m, gamma, &a));
			part[2LL * Q + g] = wq * red[row][0] / (double)k;
		}
		__syncthreads();
	}
}

// stats[0..3] = L, L_pos, L_neg, Σw from loss_head_fwd_terms' part [3][Q]. One block of
// REDUCE_THREADS threads.
KERNEL loss_head_fwd_sum(double* stats, const double* part, int Q) {
	SHARED(double, red, [REDUCE_THREADS]);
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

// The loss's gradient (times dLoss) down to the distances: writes dDist [n = roots·K],
// each element −m·∂L/∂logit where its branch is the one its score took (head_score) and
// 0 elsewhere,
//	∂L/∂pos_g = −w_g·σ(−pos_g)/(2Σw),  ∂L/∂neg_gj = w_g·σ(neg_gj)/(2kΣw),
// Σw = stats[3] (loss_head_fwd_sum's, read on the device); and block b's share of
// ∂L/∂m = −Σ_i ∂L/∂logit_i·dist_i into part[b], element i ≡ b·REDUCE_THREADS + t (mod
// gridDim.x·REDUCE_THREADS), for loss_head_bwd_modulus to add up. The grid is fixed by n
// (Device.LossHeadBackward), so the order of the sums is too: deterministic. ∂L/∂logit is
// rounded to float before it is used, as model.LossBackward stores it.
KERNEL loss_head_bwd(float* dDist, double* part, const float* dist, const int* cls, int ncls, const float* modulus, float gamma,
                     const float* w, const double* stats, int K, double dLoss, int n) {
	SHARED(double, red, [REDUCE_THREADS]);
	const float m = modulus[0];
	const double sumW = stats[3];
	const int k = K - 1;
	double s = 0.0;
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
		const long long r = i / K;
		const int j = (int)(i - r * K);
		const head_class c = head_class_of_root(cls, ncls, r);
		const long long b = (r - c.root) / c.q, ql = r - c.root - b * c.q;
		int a;
		const float score = head_score(dist, c, ql, j, K, m, gamma, &a);
		float dLogit = 0.f;
		if (a == b) {
			const double cw = dLoss * (double)w[c.qoff + ql] / (2.0 * sumW);
			dLogit = j == 0 ? (float)(-cw * sigmoid_d(-(double)score)) : (float)(cw / (double)k * sigmoid_d((double)score));
		}
		float dd = 0.f;
		dd -= m * dLogit;
		dDist[i] = dd;
		s -= (double)dLogit * (double)dist[i];
	}
	s = block_sum(red, s);
	if (threadIdx.x == 0) part[blockIdx.x] = s;
}

// dModulus[0] += Σ_b part[b], b < parts. One block of REDUCE_THREADS threads.
KERNEL loss_head_bwd_modulus(float* dModulus, const double* part, int parts) {
	SHARED(double, red, [REDUCE_THREADS]);
	double s = 0.0;
	for (int b = threadIdx.x; b < parts; b += blockDim.x) s += part[b];
	s = block_sum(red, s);
	if (threadIdx.x == 0) dModulus[0] += (float)s;
}
