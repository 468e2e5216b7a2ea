// Negation (docs/model.md §5): a' = a − π if a ≥ 0 else a + π; h' = π − h.
#include "common.h"

KERNEL negate_fwd(float* outAxis, float* outHalf, const float* inAxis, const float* inHalf, int n) {
	GRID_STRIDE(i, n) {
		float a = inAxis[i];
		outAxis[i] = a >= 0.f ? a - PI_F : a + PI_F;
		outHalf[i] = PI_F - inHalf[i];
	}
}

// Jacobian diag(1, −1): dInAxis += dOutAxis, dInHalf −= dOutHalf.
KERNEL negate_bwd(float* dInAxis, float* dInHalf, const float* dOutAxis, const float* dOutHalf, int n) {
	GRID_STRIDE(i, n) {
		if (dInAxis) dInAxis[i] += dOutAxis[i];
		if (dInHalf) dInHalf[i] -= dOutHalf[i];
	}
}
