// Intersection pieces (model.md §4). The nb input batches of N cones each are stored
// back to back: branch j's cones are rows j·N … (j+1)·N − 1 of [nb·N][d] arrays, and
// "[nb][nd]" below means nb slices of nd = N·d elements. The linear layers run through
// the GEMM kernels (gemm.cu) in between:
//
//	z      = intersect_features(a, h)                 [nb·N][2d]
//	att    = relu(z·W1ᵀ + b1); logits = att·W2ᵀ + b2  [nb·N][d]
//	a'     = intersect_attention_fwd(logits → α)      softmax over branches + ConE's arctangent
//	set    = relu(z·W3ᵀ + b3)                         [nb·N][d]
//	mean   = branch_mean(set)                         [N][d]
//	gate   = mean·W4ᵀ + b4                            [N][d]
//	h'     = cardmin_fwd(gate → σ(gate), h, mask)     min over branches × gate
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

// SemanticAverage. alpha holds the attention logits [nb][nd] on entry and the softmax
// over branches on exit; x, y [nd] get Σ_j α_j cos a_j and Σ_j α_j sin a_j, x clamped to
// 1e-3 where |x| < 1e-3, and outAxis [nd] = atan(y/x) ± π by the signs of x and y, as
// ConE's code (and model.IntersectForward, whose comment says why) computes it.
// axis is the inputs' axes [nb][nd].
KERNEL intersect_attention_fwd(float* outAxis, float* alpha, float* x, float* y, const float* axis, int nb, int nd) {
	GRID_STRIDE(p, nd) {
		float g = alpha[p];
		for (int j = 1; j < nb; j++) g = fmaxf(g, alpha[(long long)j * nd + p]);
		float sum = 0.f;
		for (int j = 0; j < nb; j++) {
			float e = expf(alpha[(long long)j * nd + p] - g);
			alpha[(long long)j * nd + p] = e;
			sum += e;
		}
		float sx = 0.f, sy = 0.f;
		for (int j = 0; j < nb; j++) {
			float al = alpha[(long long)j * nd + p] / sum;
			alpha[(long long)j * nd + p] = al;
			float s, c;
			sincosf(axis[(long long)j * nd + p], &s, &c);
			sx += al * c;
			sy += al * s;
		}
		if (sx > -1e-3f && sx < 1e-3f) sx = 1e-3f;
		x[p] = sx;
		y[p] = sy;
		float a = atanf(sy / sx);
		if (sx < 0.f) a = sy < 0.f ? a - PI_F : a + PI_F;
		outAxis[p] = a;
	}
}

// Backward of intersect_attention_fwd given dOutAxis [nd]: adds the direct gradient
// α_j·(dy·cos a_j − dx·sin a_j) into dAxis [nb][nd] and WRITES dg [nb][nd], the gradient
// of the attention logits (through the softmax). x holds the clamped sum: where it is
// 1e-3 (clamped) the arctangent's gradient with respect to x is 0.
KERNEL intersect_attention_bwd(float* dg, float* dAxis, const float* dOutAxis, const float* alpha, const float* x,
                               const float* y, const float* axis, int nb, int nd) {
	GRID_STRIDE(p, nd) {
		float xv = x[p], yv = y[p];
		float r2 = xv * xv + yv * yv;
		if (r2 == 0.f) {
			for (int j = 0; j < nb; j++) dg[(long long)j * nd + p] = 0.f;
			continue;
		}
		float go = dOutAxis[p];
		float dx = -yv / r2 * go, dy = xv / r2 * go;
		if (xv == 1e-3f) dx = 0.f;
		float dot = 0.f;
		for (int j = 0; j < nb; j++) {
			long long q = (long long)j * nd + p;
			float s, c;
			sincosf(axis[q], &s, &c);
			float al = alpha[q];
			float dAlpha = dx * c + dy * s;
			if (dAxis) dAxis[q] += al * (dy * c - dx * s);
			dg[q] = dAlpha;
			dot += al * dAlpha;
		}
		for (int j = 0; j < nb; j++) {
			long long q = (long long)j * nd + p;
			dg[q] = alpha[q] * (dg[q] - dot);
		}
	}
}

// mean[p] = (1/nb)·Σ_j set[j][p], the DeepSets mean over branches.
KERNEL branch_mean(float* mean, const float* set, int nb, int nd) {
	GRID_STRIDE(p, nd) {
		float s = 0.f;
		for (int j = 0; j < nb; j++) s += set[(long long)j * nd + p];
		mean[p] = s / (float)nb;
	}
}

// WRITES dSet[j][p] = dMean[p]/nb where set[j][p] > 0, else 0 (branch_mean's backward
// fused with the ReLU's).
KERNEL branch_mean_bwd(float* dSet, const float* dMean, const float* set, int nb, int nd) {
	GRID_STRIDE(p, nd) {
		float g = dMean[p] / (float)nb;
		for (int j = 0; j < nb; j++) {
			long long q = (long long)j * nd + p;
			dSet[q] = set[q] > 0.f ? g : 0.f;
		}
	}
}

// CardMin. gate [nd] holds the gate's pre-activation on entry and σ of it on exit;
// hmin [nd] gets min_j(mask_j·h_j), argmin [nd] the first branch attaining it, and
// outHalf [nd] = hmin·gate. half and mask are [nb][nd]; mask may be NULL (no dropout).
KERNEL cardmin_fwd(float* outHalf, float* gate, float* hmin, int* argmin, const float* half, const float* mask, int nb, int nd) {
	GRID_STRIDE(p, nd) {
		float gt = sigmoidf_(gate[p]);
		gate[p] = gt;
		float best = mask ? half[p] * mask[p] : half[p];
		int arg = 0;
		for (int j = 1; j < nb; j++) {
			long long q = (long long)j * nd + p;
			float h = mask ? half[q] * mask[q] : half[q];
			if (h < best) {
				best = h;
				arg = j;
			}
		}
		hmin[p] = best;
		argmin[p] = arg;
		outHalf[p] = best * gt;
	}
}

// Backward of cardmin_fwd given dOutHalf [nd]: adds gate·mask·dOut into dHalf [nb][nd]
// at the arg-min branch only, and WRITES dPre [nd], the gradient of the gate's
// pre-activation.
KERNEL cardmin_bwd(float* dHalf, float* dPre, const float* dOutHalf, const float* gate, const float* hmin, const int* argmin,
                   const float* mask, int nb, int nd) {
	GRID_STRIDE(p, nd) {
		float g = dOutHalf[p], gt = gate[p];
		long long q = (long long)argmin[p] * nd + p;
		float dh = g * gt;
		if (mask) dh *= mask[q];
		if (dHalf) dHalf[q] += dh;
		dPre[p] = g * hmin[p] * gt * (1.f - gt);
	}
}
