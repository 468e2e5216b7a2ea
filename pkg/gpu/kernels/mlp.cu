// The element-wise ends of ConE's projection MLP (docs/model.md §2; pkg/model/op_mlp.go): its
// input rows x = [a + θax ; h + θap] and its output squashing a' = π·tanh(u),
// h' = (π/2)·tanh(2v) + π/2 from y = [u ; v]. The three linear layers run on the GEMM
// kernels and the ReLUs on intersect.cu's.
#include "common.h"

// x[r] = [axis[r] + relAxis[r] ; half[r] + relAperture[r]], x [n][2d], the others [n][d].
KERNEL mlp_input_fwd(float* x, const float* axis, const float* half, const float* relAxis, const float* relAperture, int n,
                     int d) {
	GRID_STRIDE(i, (long long)n * d) {
		long long r = i / d, j = i - r * d;
		x[r * 2 * d + j] = axis[i] + relAxis[i];
		x[r * 2 * d + d + j] = half[i] + relAperture[i];
	}
}

// The gradient of mlp_input_fwd: dx's axis half goes to dAxis and dRelAxis, its aperture
// half to dHalf and dRelAperture (each added; NULL skipped).
KERNEL mlp_input_bwd(float* dAxis, float* dHalf, float* dRelAxis, float* dRelAperture, const float* dx, int n, int d) {
	GRID_STRIDE(i, (long long)n * d) {
		long long r = i / d, j = i - r * d;
		float ga = dx[r * 2 * d + j], gh = dx[r * 2 * d + d + j];
		if (dAxis) dAxis[i] += ga;
		if (dRelAxis) dRelAxis[i] += ga;
		if (dHalf) dHalf[i] += gh;
		if (dRelAperture) dRelAperture[i] += gh;
	}
}

// outAxis[r][j] = π·tanh(y[r][j]), outHalf[r][j] = (π/2)·tanh(2·y[r][d+j]) + π/2.
KERNEL mlp_output_fwd(float* outAxis, float* outHalf, const float* y, int n, int d) {
	GRID_STRIDE(i, (long long)n * d) {
		long long r = i / d, j = i - r * d;
		outAxis[i] = PI_F * tanhf(y[r * 2 * d + j]);
		outHalf[i] = 0.5f * PI_F * tanhf(2.f * y[r * 2 * d + d + j]) + 0.5f * PI_F;
	}
}

// Writes dy [n][2d], the gradient through mlp_output_fwd, from its outputs: with
// t = a'/π, da'/du = π(1 − t²); with t = 2h'/π − 1, dh'/dv = π(1 − t²).
KERNEL mlp_output_bwd(float* dy, const float* dOutAxis, const float* dOutHalf, const float* outAxis, const float* outHalf,
                      int n, int d) {
	GRID_STRIDE(i, (long long)n * d) {
		long long r = i / d, j = i - r * d;
		float ta = outAxis[i] / PI_F;
		dy[r * 2 * d + j] = dOutAxis[i] * PI_F * (1.f - ta * ta);
		float th = 2.f * outHalf[i] / PI_F - 1.f;
		dy[r * 2 * d + d + j] = dOutHalf[i] * PI_F * (1.f - th * th);
	}
}
