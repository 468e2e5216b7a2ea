// Angle mapping (docs/model.md §1.3): a raw table value x becomes θ = π·tanh(x/R), alone or
// fused with the gather of embedding rows by id (and the scatter of its gradient).
#include "common.h"

// theta[i] = π·tanh(raw[i]/R) (angle_of).
KERNEL angle_fwd(float* theta, const float* raw, int n, float R) {
	GRID_STRIDE(i, n) { theta[i] = angle_of(raw[i], R); }
}

// angle_fwd four elements at a time (float4, n4 = n/4, both 16-byte aligned): the
// mapping of the whole entity table, every update; the same bits.
KERNEL angle_fwd4(float4* theta, const float4* raw, int n4, float R) {
	GRID_STRIDE(i, n4) {
		float4 x = raw[i];
		theta[i] = make_float4(angle_of(x.x, R), angle_of(x.y, R), angle_of(x.z, R), angle_of(x.w, R));
	}
}

// dRaw[i] += dTheta[i]·(π/R)·(1 − (θ_i/π)²), from the forward output θ (angle_grad).
KERNEL angle_bwd(float* dRaw, const float* dTheta, const float* theta, int n, float R) {
	GRID_STRIDE(i, n) { dRaw[i] = __fadd_rn(dRaw[i], angle_grad(dTheta[i], theta[i], R)); }
}

// Gather and map: theta[r][j] = π·tanh(table[idx[r]][j]/R) for r < rows, j < d.
KERNEL angle_gather_fwd(float* theta, const float* table, const int* idx, int rows, int d, float R) {
	GRID_STRIDE(i, (long long)rows * d) {
		long long r = i / d, j = i - r * d;
		theta[i] = PI_F * tanhf(table[(long long)idx[r] * d + j] / R);
	}
}

// Scatter-add through the mapping: dTable[idx[r]][j] += dTheta[r][j]·(π/R)(1 − (θ/π)²).
// Rows may repeat, so the adds are atomic (the summation order is not deterministic).
KERNEL angle_scatter_bwd(float* dTable, const float* dTheta, const float* theta, const int* idx, int rows, int d, float R) {
	GRID_STRIDE(i, (long long)rows * d) {
		long long r = i / d, j = i - r * d;
		float t = theta[i] / PI_F;
		atomicAdd(&dTable[(long long)idx[r] * d + j], dTheta[i] * (PI_F / R) * (1.f - t * t));
	}
}
