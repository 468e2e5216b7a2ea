// Intersection pieces (docs/model.md §4), over a ragged batch: N output cones whose branch
// counts may differ (a 2-branch and a 3-branch intersection in one call). The outputs are
// sorted by non-increasing branch count and the inputs stored branch by branch: counts[j]
// (j < J, J the largest branch count) is the number of outputs with more than j
// branches, so counts[0] = N and counts is non-increasing, and branch j of output r
// (r < counts[j]) is input row base[j] + r, base[j] = counts[0] + … + counts[j−1]; the
// inputs are [R][d] arrays, R = Σ counts. With counts NULL every output has J branches
// (counts[j] = N for all j): branch j's cones are rows j·N … (j+1)·N − 1, the uniform
// layout, computed bit for bit as with the counts spelled out. The linear layers run
// through the GEMM kernels and ReLUs (linear.cu) in between, once over all R input rows:
//
//	z      = intersect_features(a, h)                 [R][2d]
//	[att | set] = relu(z·[W1; W3]ᵀ + [b1; b3])        [R][2d]: one GEMM where W3 follows W1
//	logits = att·W2ᵀ + b2                             [R][d]
//	a'     = intersect_attention_fwd(logits → α)      softmax over branches + ConE's arctangent
//	mean   = branch_mean(set)                         [N][d]
//	gate   = mean·W4ᵀ + b4                            [N][d]
//	h'     = cardmin_fwd(gate → σ(gate), h, mask)     min over branches × gate
//
// The dropout on the intersection's input apertures (ConE's) has its masks
// made here too: dropout_mask, and dropout_mask_ragged for a ragged batch.
//
// The kernels that loop over branches take one thread per output element p = r·d + k
// (p < N·d); that element's branch j is input element base[j]·d + p.
#include "common.h"

// z[r][i] = a[r][i] − h[r][i], z[r][d+i] = a[r][i] + h[r][i] for r < rows.
KERNEL intersect_features(float* z, const float* axis, const float* half, int rows, int d) {
	GRID_STRIDE(e, (long long)rows * d) {
		long long r = e / d, i = e - r * d;
		float a = axis[e], h = half[e];
		z[r * 2 * d + i] = a - h;
		z[r * 2 * d + d + i] = a + h;
	}
}

// The gradient through intersect_features: dAxis += dlo + dhi, dHalf += dhi − dlo.
KERNEL intersect_features_bwd(float* dAxis, float* dHalf, const float* dz, int rows, int d) {
	GRID_STRIDE(e, (long long)rows * d) {
		long long r = e / d, i = e - r * d;
		float lo = dz[r * 2 * d + i], hi = dz[r * 2 * d + d + i];
		if (dAxis) dAxis[e] += lo + hi;
		if (dHalf) dHalf[e] += hi - lo;
	}
}

// branch_rows is counts[j], the number of outputs with more than j branches (n with
// counts NULL: the uniform layout).
__device__ __forceinline__ int branch_rows(const int* counts, int j, int n) { return counts ? counts[j] : n; }

// branches_of is the number of branches of output row r: the j < J with counts[j] > r.
__device__ __forceinline__ int branches_of(const int* counts, int J, long long r) {
	if (!counts) return J;
	int nb = 0;
	while (nb < J && counts[nb] > r) nb++;
	return nb;
}

// SemanticAverage. alpha holds the attention logits [R][d] on entry and the softmax over
// each output's branches on exit; x, y [N][d] get Σ_j α_j cos a_j and Σ_j α_j sin a_j, x
// clamped to 1e-3 where |x| < 1e-3, and outAxis [N][d] = atan(y/x) ± π by the signs of x
// and y, as ConE's code (and model.IntersectForward, whose comment says why) computes it.
// axis is the inputs' axes [R][d].
KERNEL intersect_attention_fwd(float* outAxis, float* alpha, float* x, float* y, const float* axis, const int* counts, int J,
                               int n, int d) {
	GRID_STRIDE(p, (long long)n * d) {
		const int nb = branches_of(counts, J, p / d);
		float g = alpha[p];
		long long q = p + (long long)branch_rows(counts, 0, n) * d;
		for (int j = 1; j < nb; j++) {
			g = fmax_nan(g, alpha[q]);
			q += (long long)branch_rows(counts, j, n) * d;
		}
		float sum = 0.f;
		q = p;
		for (int j = 0; j < nb; j++) {
			float e = expf(alpha[q] - g);
			alpha[q] = e;
			sum += e;
			q += (long long)branch_rows(counts, j, n) * d;
		}
		float sx = 0.f, sy = 0.f;
		q = p;
		for (int j = 0; j < nb; j++) {
			float al = alpha[q] / sum;
			alpha[q] = al;
			float s, c;
			sincosf(axis[q], &s, &c);
			sx += al * c;
			sy += al * s;
			q += (long long)branch_rows(counts, j, n) * d;
		}
		if (sx > -1e-3f && sx < 1e-3f) sx = 1e-3f;
		x[p] = sx;
		y[p] = sy;
		float a = atanf(sy / sx);
		if (sx < 0.f) a = sy < 0.f ? a - PI_F : a + PI_F;
		outAxis[p] = a;
	}
}

// Backward of intersect_attention_fwd given dOutAxis [N][d]: adds the direct gradient
// α_j·(dy·cos a_j − dx·sin a_j) into dAxis [R][d] and WRITES dg [R][d], the gradient of
// the attention logits (through the softmax). x holds the clamped sum: where it is 1e-3
// (clamped) the arctangent's gradient with respect to x is 0.
KERNEL intersect_attention_bwd(float* dg, float* dAxis, const float* dOutAxis, const float* alpha, const float* x,
                               const float* y, const float* axis, const int* counts, int J, int n, int d) {
	GRID_STRIDE(p, (long long)n * d) {
		const int nb = branches_of(counts, J, p / d);
		float xv = x[p], yv = y[p];
		float r2 = xv * xv + yv * yv;
		if (r2 == 0.f) {
			long long q = p;
			for (int j = 0; j < nb; j++) {
				dg[q] = 0.f;
				q += (long long)branch_rows(counts, j, n) * d;
			}
			continue;
		}
		float go = dOutAxis[p];
		float dx = -yv / r2 * go, dy = xv / r2 * go;
		if (xv == 1e-3f) dx = 0.f;
		float dot = 0.f;
		long long q = p;
		for (int j = 0; j < nb; j++) {
			float s, c;
			sincosf(axis[q], &s, &c);
			float al = alpha[q];
			float dAlpha = dx * c + dy * s;
			if (dAxis) dAxis[q] += al * (dy * c - dx * s);
			dg[q] = dAlpha;
			dot += al * dAlpha;
			q += (long long)branch_rows(counts, j, n) * d;
		}
		q = p;
		for (int j = 0; j < nb; j++) {
			dg[q] = alpha[q] * (dg[q] - dot);
			q += (long long)branch_rows(counts, j, n) * d;
		}
	}
}

// mean[p] = (1/nb)·Σ_j set[j][p], the DeepSets mean over output p's own nb branches;
// set's rows are ld apart (the stacked first layers' output, [R][2d] with set in its
// second half: ld = 2d).
KERNEL branch_mean(float* mean, const float* set, int ld, const int* counts, int J, int n, int d) {
	GRID_STRIDE(p, (long long)n * d) {
		const int nb = branches_of(counts, J, p / d);
		float s = 0.f;
		long long q = p / d * ld + p % d;
		for (int j = 0; j < nb; j++) {
			s += set[q];
			q += (long long)branch_rows(counts, j, n) * ld;
		}
		mean[p] = s / (float)nb;
	}
}

// WRITES dSet[j][p] = dMean[p]/nb where set[j][p] > 0, else 0 (branch_mean's backward
// fused with the ReLU's); dSet and set both have rows ld apart.
KERNEL branch_mean_bwd(float* dSet, const float* dMean, const float* set, int ld, const int* counts, int J, int n, int d) {
	GRID_STRIDE(p, (long long)n * d) {
		const int nb = branches_of(counts, J, p / d);
		float g = dMean[p] / (float)nb;
		long long q = p / d * ld + p % d;
		for (int j = 0; j < nb; j++) {
			dSet[q] = set[q] > 0.f ? g : 0.f;
			q += (long long)branch_rows(counts, j, n) * ld;
		}
	}
}

// Whether branch value h replaces the minimum so far, best: it is smaller, or it is the
// first NaN (a NaN in any branch makes the minimum NaN, as PyTorch's min(dim) and the CPU
// reference, model.IntersectForward: a less-than alone would keep an earlier branch's
// number over a later NaN, which then passed the loss's and ranking's NaN checks unseen).
__device__ __forceinline__ bool cardmin_takes(float h, float best) { return h < best || (h != h && best == best); }

// CardMin. gate [N][d] holds the gate's pre-activation on entry and σ of it on exit;
// hmin [N][d] gets min_j(mask_j·h_j), argmin [N][d] the first branch attaining it (the
// first NaN branch where there is one: cardmin_takes), and outHalf [N][d] = hmin·gate.
// half and mask are [R][d]; mask may be NULL (no dropout).
KERNEL cardmin_fwd(float* outHalf, float* gate, float* hmin, int* argmin, const float* half, const float* mask,
                   const int* counts, int J, int n, int d) {
	GRID_STRIDE(p, (long long)n * d) {
		const int nb = branches_of(counts, J, p / d);
		float gt = sigmoidf_(gate[p]);
		gate[p] = gt;
		float best = mask ? half[p] * mask[p] : half[p];
		int arg = 0;
		long long q = p + (long long)branch_rows(counts, 0, n) * d;
		for (int j = 1; j < nb; j++) {
			float h = mask ? half[q] * mask[q] : half[q];
			if (cardmin_takes(h, best)) {
				best = h;
				arg = j;
			}
			q += (long long)branch_rows(counts, j, n) * d;
		}
		hmin[p] = best;
		argmin[p] = arg;
		outHalf[p] = best * gt;
	}
}

// Backward of cardmin_fwd given dOutHalf [N][d]: adds gate·mask·dOut into dHalf [R][d] at
// the arg-min branch only (the first NaN branch where the minimum is a NaN, as PyTorch's
// min(dim) backward sends it to the index it returned), and WRITES dPre [N][d], the
// gradient of the gate's pre-activation.
KERNEL cardmin_bwd(float* dHalf, float* dPre, const float* dOutHalf, const float* gate, const float* hmin, const int* argmin,
                   const float* mask, const int* counts, int n, int d) {
	GRID_STRIDE(p, (long long)n * d) {
		float g = dOutHalf[p], gt = gate[p];
		long long q = p;
		for (int j = 0; j < argmin[p]; j++) q += (long long)branch_rows(counts, j, n) * d;
		float dh = g * gt;
		if (mask) dh *= mask[q];
		if (dHalf) dHalf[q] += dh;
		dPre[p] = g * hmin[p] * gt * (1.f - gt);
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
