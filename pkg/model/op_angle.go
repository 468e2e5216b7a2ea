package model

import (
	"math"

	"github.com/rocone/rocone/pkg/model/internal/vmath"
)

// Small generic wrappers over package math (computed in float64, rounded to T).

const pi = math.Pi

func tanh[T Float](x T) T              { return T(math.Tanh(float64(x))) }
func sincos[T Float](x T) (sin, cos T) { s, c := math.Sincos(float64(x)); return T(s), T(c) }
func sigmoid[T Float](x T) T           { return T(1 / (1 + math.Exp(-float64(x)))) }

// sign is the subgradient of |x|: sign(0) = 0, as PyTorch's abs backward.
func sign[T Float](x T) T {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// ---------------------------------------------------------------------------------------
// Angle mapping (docs/model.md §1.3): a raw table value x becomes the angle θ = π·tanh(x/R).

// AngleForward sets theta[i] = π·tanh(raw[i]/R). In float32 tanh is vmath.Tanh's
// approximation (within 5e-7 relative); in float64, math.Tanh.
func AngleForward[T Float](theta, raw []T, R T) {
	if th, ok := any(theta).([]float32); ok {
		vmath.Tanh(th, any(raw).([]float32), float32(R), pi, 0)
		return
	}
	for i, x := range raw {
		theta[i] = pi * tanh(x/R)
	}
}

// AngleBackward adds to dRaw the gradient through AngleForward, using its output θ:
// dθ/dx = (π/R)·(1 − tanh²(x/R)) = (π/R)·(1 − (θ/π)²).
func AngleBackward[T Float](dRaw, dTheta, theta []T, R T) {
	if d32, ok := any(dRaw).([]float32); ok {
		vmath.AngleBackward(d32, any(dTheta).([]float32), any(theta).([]float32), float32(R))
		return
	}
	for i, g := range dTheta {
		t := theta[i] / pi
		dRaw[i] += g * (pi / R) * (1 - t*t)
	}
}

// ---------------------------------------------------------------------------------------
// Wrap and fold (docs/model.md §3.2).

// wrap maps an angle into [−π, π): wrap(x) = ((x + π) mod 2π) − π, with a floored mod.
// Its derivative is 1 everywhere (the jumps at odd multiples of π are not differentiated,
// as PyTorch's remainder backward).
func wrap[T Float](x T) T {
	y := float64(x) + pi
	return T(y - 2*pi*math.Floor(y/(2*pi)) - pi)
}

// fold maps a half-aperture into [0, π]: fold(s) = |wrap(s)|. It is a triangle wave,
// with slope sign(wrap(s)) (0 at the kink s ≡ 0 mod 2π, by sign(0) = 0).
func fold[T Float](s T) T {
	w := wrap(s)
	if w < 0 {
		return -w
	}
	return w
}

// foldSlope is dfold/ds.
func foldSlope[T Float](s T) T { return sign(wrap(s)) }
