// RoConE's rotation projection (docs/model.md §3), per element of an [N][d] batch whose
// relation angles are already gathered and mapped per row:
//
//	a' = wrap(a + θax)
//	h' = fold(h + φ) = |wrap(h + φ)|             PROJECT_FOLD, rocone
//	h' = clamp(h + φ, 0, π)                      PROJECT_TRUNC, rocone-trunc
//	h' = π·σ(logit(clip(h/π, ε, 1−ε)) + s)       PROJECT_SHIFT, rocone-se (ε = 1e-6)
//
// The rule's numbers come from projection.h, generated from compute.Projections. Any other
// number (a rule the kernel does not know) makes every output NaN, which the loss's
// finiteness check stops the run on: never a silent stand-in rule. The host wrappers
// refuse such a rule before launching, so this is the last line.
// Subgradients as pkg/model: wrap has slope 1; fold has slope sign(wrap(s)); clamp passes
// the gradient on the closed interval [0, π]; clip passes it on [ε, 1−ε]. The clamp and the
// clip keep a NaN, as pkg/model's min and max do (fmin_nan, fmax_nan), where fminf and
// fmaxf would give the bound.
#include "common.h"
#include "projection.h"
#define SE_CLIP 1e-6f

KERNEL rotate_fwd(int rule, float* outAxis, float* outHalf, const float* inAxis, const float* inHalf,
                  const float* relAxis, const float* relAperture, const float* relShift, int n) {
	GRID_STRIDE(i, n) {
		outAxis[i] = wrapf(inAxis[i] + relAxis[i]);
		float h = inHalf[i];
		if (rule == PROJECT_FOLD) {
			outHalf[i] = fabsf(wrapf(h + relAperture[i]));
		} else if (rule == PROJECT_TRUNC) {
			outHalf[i] = fmin_nan(fmax_nan(h + relAperture[i], 0.f), PI_F);
		} else if (rule == PROJECT_SHIFT) {
			float p = fmin_nan(fmax_nan(h / PI_F, SE_CLIP), 1.f - SE_CLIP);
			float z = logf(p / (1.f - p)) + relShift[i];
			outHalf[i] = PI_F * sigmoidf_(z);
		} else {
			outAxis[i] = outHalf[i] = nanf_();
		}
	}
}

// Adds the gradients of rotate_fwd given dOut: into dIn (input cones), dRelAxis,
// dRelAperture (mapped relation angles, not the S.E. variant) and dRelShift (S.E. only).
// outHalf is rotate_fwd's output; relAperture is unused by S.E. Any gradient output may
// be NULL.
KERNEL rotate_bwd(int rule, float* dInAxis, float* dInHalf, float* dRelAxis, float* dRelAperture, float* dRelShift,
                  const float* dOutAxis, const float* dOutHalf, const float* inHalf, const float* outHalf,
                  const float* relAperture, int n) {
	GRID_STRIDE(i, n) {
		float ga = dOutAxis[i];
		if (dInAxis) dInAxis[i] += ga;
		if (dRelAxis) dRelAxis[i] += ga;
		float g = dOutHalf[i];
		if (rule == PROJECT_FOLD) {
			float gs = g * sgnf(wrapf(inHalf[i] + relAperture[i]));
			if (dInHalf) dInHalf[i] += gs;
			if (dRelAperture) dRelAperture[i] += gs;
		} else if (rule == PROJECT_TRUNC) {
			float s = inHalf[i] + relAperture[i];
			if (s >= 0.f && s <= PI_F) {
				if (dInHalf) dInHalf[i] += g;
				if (dRelAperture) dRelAperture[i] += g;
			}
		} else if (rule == PROJECT_SHIFT) {
			// h' = π·σ(z), z = logit(p) + s, p = h/π: ∂h'/∂z = π·q(1−q), q = h'/π;
			// ∂z/∂h = 1/(π·p(1−p)) where p is not clipped.
			float q = outHalf[i] / PI_F;
			float gz = g * PI_F * q * (1.f - q);
			if (dRelShift) dRelShift[i] += gz;
			float p = inHalf[i] / PI_F;
			if (dInHalf && p >= SE_CLIP && p <= 1.f - SE_CLIP) dInHalf[i] += gz / (PI_F * p * (1.f - p));
		} else if (dInHalf) {
			dInHalf[i] = nanf_();
		}
	}
}
