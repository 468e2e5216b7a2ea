// Adam, dense, with PyTorch's defaults and exact update order (torch.optim.Adam, no
// weight decay, no amsgrad): for step t ≥ 1,
//
//	m ← lerp(m, g, 1 − β1)            = m + (1 − β1)(g − m)
//	v ← β2·v + (1 − β2)·g²
//	p ← p − stepSize · m / (sqrt(v)/bc2Sqrt + eps)
//
// with stepSize = lr/(1 − β1^t), bc2Sqrt = sqrt(1 − β2^t), 1 − β1 and 1 − β2 computed by
// the host in double and rounded to float, as PyTorch passes its Python-float scalars. Every element is updated, gradient zero or not (training.md §1). When
// zeroGrad ≠ 0 the gradient is cleared after it is read, ready for the next step.
#include "common.h"

KERNEL adam_step(float* p, float* g, float* m, float* v, int n, float beta2, float oneMinusBeta1, float oneMinusBeta2,
                 float eps, float stepSize, float bc2Sqrt, int zeroGrad) {
	GRID_STRIDE(i, n) {
		float gi = g[i];
		float mi = m[i];
		// PyTorch's lerp with weight w < 0.5: self + w·(end − self).
		mi = mi + oneMinusBeta1 * (gi - mi);
		float vi = v[i] * beta2 + oneMinusBeta2 * (gi * gi);
		m[i] = mi;
		v[i] = vi;
		float denom = sqrtf(vi) / bc2Sqrt + eps;
		p[i] = p[i] - stepSize * (mi / denom);
		if (zeroGrad) g[i] = 0.f;
	}
}

// x[i] = value for i < n (fills, e.g. clearing gradients of a non-float32 view).
KERNEL fill_f32(float* x, float value, int n) {
	GRID_STRIDE(i, n) { x[i] = value; }
}
