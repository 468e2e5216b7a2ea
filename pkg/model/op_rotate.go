package model

import (
	"fmt"
	"math"
)

// RoConE's rotation projection (docs/model.md §3). Per dimension, with the relation's axis
// angle θax = π·tanh(A_r/R) and aperture offset φ = π·tanh(P_r/R):
//
//	a' = wrap(a + θax)
//	h' = fold(h + φ)                               rocone       (|wrap(s)|, in [0, π])
//	h' = clamp(h + φ, 0, π)                        rocone-trunc
//	h' = π·σ(logit(clip(h/π, ε, 1−ε)) + s_r)       rocone-se    (ε = 1e-6, φ unused)
//
// Subgradients: wrap has slope 1; fold has slope sign(wrap(s)) (0 at s ≡ 0); clamp passes
// the gradient on the closed interval [0, π] and blocks it outside (PyTorch's clamp); clip
// likewise passes it on [ε, 1−ε].

// seClip is the ε that keeps the S.E. logit finite.
const seClip = 1e-6

// RotateForward applies the rotation projection p (a rotating variant's, Variant.Projection) to the batch in,
// with per-row relation angles relAxis, relAperture and (rocone-se) raw shifts relShift,
// all [N][d], writing out. relAperture is unused by rocone-se, relShift by the others.
func RotateForward[T Float](p Projection, out, in Cones[T], relAxis, relAperture, relShift []T) {
	for i, a := range in.Axis {
		out.Axis[i] = wrap(a + relAxis[i])
	}
	switch p {
	case ProjectFold:
		for i, h := range in.Half {
			out.Half[i] = fold(h + relAperture[i])
		}
	case ProjectTrunc:
		for i, h := range in.Half {
			out.Half[i] = min(max(h+relAperture[i], 0), pi)
		}
	case ProjectShift:
		for i, h := range in.Half {
			p := min(max(h/pi, seClip), 1-seClip)
			out.Half[i] = pi * sigmoid(T(logit(float64(p)))+relShift[i])
		}
	default:
		panic(fmt.Sprintf("model: RotateForward: projection %d does not rotate", p))
	}
}

// RotateBackward adds the gradients of RotateForward given dOut: into dIn (the input
// cones), dRelAxis, dRelAperture (relation angles) and dRelShift. out is RotateForward's
// output. Gradient outputs a variant does not use may be nil.
func RotateBackward[T Float](p Projection, dIn Cones[T], dRelAxis, dRelAperture, dRelShift []T,
	dOut, in, out Cones[T], relAperture []T) {
	// The axis: a' = wrap(a + θax) has slope 1 in both a and θax.
	for i, g := range dOut.Axis {
		dIn.Axis[i] += g
		dRelAxis[i] += g
	}
	switch p {
	case ProjectFold:
		for i, g := range dOut.Half {
			gs := g * foldSlope(in.Half[i]+relAperture[i])
			dIn.Half[i] += gs
			dRelAperture[i] += gs
		}
	case ProjectTrunc:
		for i, g := range dOut.Half {
			if s := in.Half[i] + relAperture[i]; s >= 0 && s <= pi {
				dIn.Half[i] += g
				dRelAperture[i] += g
			}
		}
	case ProjectShift:
		for i, g := range dOut.Half {
			// h' = π·σ(z), z = logit(p) + s, p = h/π (when not clipped):
			// ∂h'/∂s = π·q(1−q) with q = h'/π, and ∂z/∂h = 1/(π·p(1−p)).
			q := out.Half[i] / pi
			gz := g * pi * q * (1 - q)
			dRelShift[i] += gz
			if p := in.Half[i] / pi; p >= seClip && p <= 1-seClip {
				dIn.Half[i] += gz / (pi * p * (1 - p))
			}
		}
	default:
		panic(fmt.Sprintf("model: RotateBackward: projection %d does not rotate", p))
	}
}

func logit(p float64) float64 { return math.Log(p / (1 - p)) }
