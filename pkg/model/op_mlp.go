package model

import (
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/model/internal/vmath"
)

// ConE's projection (docs/model.md §2), shared by all relations. Per cone, with the relation
// angles θax = π·tanh(A_r/R) and θap = π·tanh(P_r/R):
//
//	x  = [a + θax ; h + θap]                  (2d)
//	h1 = ReLU(W1·x + b1)                      (H)
//	h2 = ReLU(W2·h1 + b2)                     (H)
//	[u ; v] = W3·h2 + b3                      (2d)
//	a' = π·tanh(u),  h' = (π/2)·tanh(2v) + π/2
//
// Subgradient: ReLU'(0) = 0 (PyTorch's, which tests the output > 0).

// MLPState is what ConeProjectBackward needs from the forward pass.
type MLPState[T Float] struct {
	x  []T // [N][2d] the MLP input
	h1 []T // [N][H] first hidden layer, after ReLU
	h2 []T // [N][H] second hidden layer, after ReLU
}

// ConeProjectForward applies ConE's MLP projection to in, with per-row relation angles
// relAxis and relAperture [N][d], writing out. It returns the state for backward.
func ConeProjectForward[T Float](k compute.Kernels[T], w *ProjectionMLP[T], out, in Cones[T],
	relAxis, relAperture []T) *MLPState[T] {
	n, d := in.N, in.Dim
	st := newMLPState[T](n, d, len(w.B1))
	mlpInput(st.x, in, relAxis, relAperture)
	mlpForward(k, w, st, out)
	return st
}

func newMLPState[T Float](n, d, hid int) *MLPState[T] {
	return &MLPState[T]{x: make([]T, n*2*d), h1: make([]T, n*hid), h2: make([]T, n*hid)}
}

// mlpInput writes the MLP input rows x = [a + θax ; h + θap] [N][2d].
func mlpInput[T Float](x []T, in Cones[T], relAxis, relAperture []T) {
	n, d := in.N, in.Dim
	for r := 0; r < n; r++ {
		xa, xh := x[r*2*d:r*2*d+d], x[r*2*d+d:r*2*d+2*d]
		a, h := in.Axis[r*d:(r+1)*d], in.Half[r*d:(r+1)*d]
		ra, rh := relAxis[r*d:(r+1)*d], relAperture[r*d:(r+1)*d]
		for j := range xa {
			xa[j] = a[j] + ra[j]
			xh[j] = h[j] + rh[j]
		}
	}
}

// mlpForward runs the MLP from st.x (out.N rows) and writes out.
func mlpForward[T Float](k compute.Kernels[T], w *ProjectionMLP[T], st *MLPState[T], out Cones[T]) {
	n, d, hid := out.N, out.Dim, len(w.B1)
	k.LinearForward(st.h1, st.x, w.W1, w.B1, n, 2*d, hid)
	reluForward(st.h1)
	k.LinearForward(st.h2, st.h1, w.W2, w.B2, n, hid, hid)
	reluForward(st.h2)
	y := make([]T, n*2*d)
	k.LinearForward(y, st.h2, w.W3, w.B3, n, hid, 2*d)
	if _, ok := any(y).([]float32); ok {
		// float32: vmath.Tanh's approximation; 2v/0.5 is 2v exactly.
		for r := 0; r < n; r++ {
			vmath.Tanh(any(out.Axis[r*d:(r+1)*d]).([]float32), any(y[r*2*d:r*2*d+d]).([]float32), 1, pi, 0)
			vmath.Tanh(any(out.Half[r*d:(r+1)*d]).([]float32), any(y[r*2*d+d:(r+1)*2*d]).([]float32), 0.5, pi/2, pi/2)
		}
		return
	}
	for r := 0; r < n; r++ {
		for j := 0; j < d; j++ {
			out.Axis[r*d+j] = pi * tanh(y[r*2*d+j])
			out.Half[r*d+j] = pi/2*tanh(2*y[r*2*d+d+j]) + pi/2
		}
	}
}

// ConeProjectBackward adds the gradients of ConeProjectForward given dOut: into dIn,
// dRelAxis, dRelAperture [N][d] and the MLP's weight gradients gw. out is the forward
// output, from which the tanh derivatives are taken.
func ConeProjectBackward[T Float](k compute.Kernels[T], w, gw *ProjectionMLP[T], st *MLPState[T],
	dIn Cones[T], dRelAxis, dRelAperture []T, dOut, out Cones[T]) {
	n, d := out.N, out.Dim
	dx := mlpBackward(k, w, gw, st, dOut, out)
	for r := 0; r < n; r++ {
		for j := 0; j < d; j++ {
			ga, gh := dx[r*2*d+j], dx[r*2*d+d+j]
			dIn.Axis[r*d+j] += ga
			dRelAxis[r*d+j] += ga
			dIn.Half[r*d+j] += gh
			dRelAperture[r*d+j] += gh
		}
	}
}

// mlpBackward adds the MLP's weight gradients to gw and returns the gradient of its
// input x [N][2d].
func mlpBackward[T Float](k compute.Kernels[T], w, gw *ProjectionMLP[T], st *MLPState[T], dOut, out Cones[T]) []T {
	n, d, hid := out.N, out.Dim, len(w.B1)
	// Through the output squashing: with t = tanh(u) = a'/π, da'/du = π(1 − t²);
	// with t = tanh(2v) = 2h'/π − 1, dh'/dv = π(1 − t²).
	dy := make([]T, n*2*d)
	for r := 0; r < n; r++ {
		for j := 0; j < d; j++ {
			ta := out.Axis[r*d+j] / pi
			dy[r*2*d+j] = dOut.Axis[r*d+j] * pi * (1 - ta*ta)
			th := 2*out.Half[r*d+j]/pi - 1
			dy[r*2*d+d+j] = dOut.Half[r*d+j] * pi * (1 - th*th)
		}
	}
	dh2 := make([]T, n*hid)
	k.LinearBackward(dh2, gw.W3, gw.B3, dy, st.h2, w.W3, n, hid, 2*d)
	reluBackward(dh2, st.h2)
	dh1 := make([]T, n*hid)
	k.LinearBackward(dh1, gw.W2, gw.B2, dh2, st.h1, w.W2, n, hid, hid)
	reluBackward(dh1, st.h1)
	dx := make([]T, n*2*d)
	k.LinearBackward(dx, gw.W1, gw.B1, dh1, st.x, w.W1, n, 2*d, hid)
	return dx
}

// reluForward applies ReLU in place.
func reluForward[T Float](x []T) {
	if x32, ok := any(x).([]float32); ok {
		vmath.ReLU(x32)
		return
	}
	for i, v := range x {
		if v < 0 {
			x[i] = 0
		}
	}
}

// reluBackward zeroes the gradient where the ReLU output is not positive.
func reluBackward[T Float](dx, out []T) {
	if dx32, ok := any(dx).([]float32); ok {
		vmath.ReLUBackward(dx32, any(out).([]float32))
		return
	}
	for i, v := range out {
		if !(v > 0) {
			dx[i] = 0
		}
	}
}
