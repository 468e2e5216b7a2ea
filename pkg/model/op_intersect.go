package model

import (
	"math"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/model/internal/vmath"
)

// Intersection (docs/model.md §4), the same in ConE and RoConE. For n ≥ 2 input cones
// (a_j, h_j), per row and dimension:
//
//	z_j   = [a_j − h_j ; a_j + h_j]                     boundaries, 2d
//
//	SemanticAverage (axis):
//	g_j   = W2·ReLU(W1·z_j + b1) + b2                   attention logits
//	α_j   = softmax_j(g_j)                              over branches, per dimension
//	x, y  = Σ_j α_j cos a_j, Σ_j α_j sin a_j
//	x     = 1e-3 where |x| < 1e-3                       (ConE's clamp)
//	a'    = atan(y/x), + π where x < 0 ≤ y, − π where x < 0 and y < 0
//
//	CardMin (aperture):
//	gate  = σ(W4·mean_j ReLU(W3·z_j + b3) + b4)
//	h'    = min_j(mask_j ⊙ h_j) · gate
//
// mask is the dropout on the input apertures, supplied by the caller: each entry 0
// (dropped) or 1/(1−p) (kept, inverted scaling), or nil for no dropout (evaluation).
// The features z_j use the apertures before dropout, as ConE does.
//
// The axis is computed exactly as ConE's code computes it (QE-ConE's ConeIntersection),
// not as atan2(y, x), though the two agree almost everywhere: where they differ the
// result feeds a non-periodic layer (ConE's projection MLP, the next intersection's
// attention), so the same weights must give the same side of the ±π cut. So: the cosine
// sum is clamped to +1e-3 where |x| < 1e-3 (an axis near ±π/2 whatever the true sign of
// x), the quotient y/x is rounded to T before the arctangent, and the quadrant is fixed
// by the signs of the clamped x and of y, with y = −0 counted as non-negative (so x < 0,
// y = −0 gives +π where atan2 gives −π). The fixtures of QE-ConE (parity_test.go) check
// the cut cases.
//
// A NaN in any branch's (dropped-out) aperture makes the minimum NaN, its index the first
// NaN branch, as PyTorch's min(dim) does: a less-than alone would keep an earlier
// branch's number over a later NaN, and the NaN, which training and ranking refuse,
// would pass unseen.
//
// Subgradients: ReLU'(0) = 0; the min over branches sends the whole gradient to the first
// minimal branch (PyTorch's min(dim) picks one index; for a NaN minimum, its first NaN
// branch). Where x was clamped its gradient is 0 (the clamp is an assignment in ConE's
// code) and y's is x/(x² + y²) with the clamped x; elsewhere the arctangent's usual
// −y/r², x/r². The backward pass knows x was clamped by x = 1e-3 exactly (an unclamped
// sum of exactly float32(1e-3) is taken as clamped too, a measure-zero difference), as the
// CUDA kernel does with no extra buffer.

// IntersectState is what IntersectBackward needs from the forward pass. Tensors marked
// [n·N] hold branch j's rows at j·N … (j+1)·N − 1.
type IntersectState[T Float] struct {
	z      []T     // [n·N][2d] boundary features
	att    []T     // [n·N][d] ReLU(W1·z + b1)
	alpha  []T     // [n·N][d] attention weights
	x, y   []T     // [N][d] attention-weighted cos and sin of the axes (x after the clamp)
	set    []T     // [n·N][d] ReLU(W3·z + b3), the DeepSets elements
	mean   []T     // [N][d] their mean over branches
	gate   []T     // [N][d]
	sin    []T     // [n·N][d] sin a_j
	cos    []T     // [n·N][d] cos a_j
	hmin   []T     // [N][d] min over branches of the dropped-out apertures
	argmin []int32 // [N][d] the branch that gave hmin
	mask   []T     // [n·N][d] or nil
}

// IntersectForward intersects the cones in (n batches of N cones each) into out.
func IntersectForward[T Float](k compute.Kernels[T], w *IntersectionWeights[T], out Cones[T],
	in []Cones[T], mask []T) *IntersectState[T] {
	nb, n, d := len(in), out.N, out.Dim
	rows := nb * n
	st := &IntersectState[T]{
		z:     make([]T, rows*2*d),
		att:   make([]T, rows*d),
		alpha: make([]T, rows*d),
		x:     make([]T, n*d), y: make([]T, n*d),
		set:  make([]T, rows*d),
		mean: make([]T, n*d), gate: make([]T, n*d),
		sin: make([]T, rows*d), cos: make([]T, rows*d),
		hmin: make([]T, n*d), argmin: make([]int32, n*d),
		mask: mask,
	}
	for j, c := range in {
		sinCos(st.sin[j*n*d:(j+1)*n*d], st.cos[j*n*d:(j+1)*n*d], c.Axis)
	}
	for j, c := range in {
		for r := 0; r < n; r++ {
			zr := st.z[(j*n+r)*2*d:]
			for i := 0; i < d; i++ {
				a, h := c.Axis[r*d+i], c.Half[r*d+i]
				zr[i] = a - h
				zr[d+i] = a + h
			}
		}
	}

	// SemanticAverage: attention logits, softmax over branches, weighted mean direction.
	k.LinearForward(st.att, st.z, w.W1, w.B1, rows, 2*d, d)
	reluForward(st.att)
	k.LinearForward(st.alpha, st.att, w.W2, w.B2, rows, d, d) // logits g, softmaxed in place
	for p := 0; p < n*d; p++ {
		g := st.alpha[p]
		for j := 1; j < nb; j++ {
			g = max(g, st.alpha[j*n*d+p])
		}
		var sum T
		for j := 0; j < nb; j++ {
			e := T(math.Exp(float64(st.alpha[j*n*d+p] - g)))
			st.alpha[j*n*d+p] = e
			sum += e
		}
		var x, y T
		for j := 0; j < nb; j++ {
			st.alpha[j*n*d+p] /= sum
			x += st.alpha[j*n*d+p] * st.cos[j*n*d+p]
			y += st.alpha[j*n*d+p] * st.sin[j*n*d+p]
		}
		if x > -intersectClamp && x < intersectClamp { // |x| < 1e-3, in T as ConE's torch.abs(x) < 1e-3
			x = intersectClamp
		}
		st.x[p], st.y[p] = x, y
		out.Axis[p] = coneAxis(x, y)
	}

	// CardMin: DeepSets gate times the minimum dropped-out aperture.
	k.LinearForward(st.set, st.z, w.W3, w.B3, rows, 2*d, d)
	reluForward(st.set)
	for p := 0; p < n*d; p++ {
		var s T
		for j := 0; j < nb; j++ {
			s += st.set[j*n*d+p]
		}
		st.mean[p] = s / T(nb)
	}
	k.LinearForward(st.gate, st.mean, w.W4, w.B4, n, d, d)
	for p := 0; p < n*d; p++ {
		st.gate[p] = sigmoid(st.gate[p])
		best, arg := dropped(in[0].Half[p], mask, p), int32(0)
		for j := 1; j < nb; j++ {
			if h := dropped(in[j].Half[p], mask, j*n*d+p); h < best || (h != h && best == best) {
				best, arg = h, int32(j)
			}
		}
		st.hmin[p], st.argmin[p] = best, arg
		out.Half[p] = best * st.gate[p]
	}
	return st
}

// intersectClamp is ConE's floor on |x| (x_embeddings[torch.abs(x_embeddings) < 1e-3] =
// 1e-3), in T: float32(1e-3) for float32, as PyTorch compares and assigns in float32.
const intersectClamp = 1e-3

// coneAxis is ConE's arctangent with its quadrant fix, from the clamped x (never 0):
// atan(T(y/x)), then + π where x < 0 and y ≥ 0 (−0 included), − π where x < 0 and y < 0;
// each operation rounded to T as PyTorch's float32 ops are.
func coneAxis[T Float](x, y T) T {
	q := y / x
	a := T(math.Atan(float64(q)))
	if x < 0 {
		if y < 0 {
			a -= pi
		} else {
			a += pi
		}
	}
	return a
}

// dropped is h·mask[i], or h when mask is nil.
func dropped[T Float](h T, mask []T, i int) T {
	if mask == nil {
		return h
	}
	return h * mask[i]
}

// IntersectBackward adds the gradients of IntersectForward given dOut: into dIn (one
// batch per input) and the layers' weight gradients gw.
func IntersectBackward[T Float](k compute.Kernels[T], w, gw *IntersectionWeights[T], st *IntersectState[T],
	dIn []Cones[T], dOut Cones[T], in []Cones[T]) {
	nb, n, d := len(in), dOut.N, dOut.Dim
	rows := nb * n
	dz := make([]T, rows*2*d)

	// SemanticAverage. a' = atan(y/x) (+ a constant): ∂a'/∂x = −y/r², ∂a'/∂y = x/r², with
	// the clamped x, and ∂a'/∂x = 0 where x was clamped.
	dg := make([]T, rows*d) // gradient of the attention logits
	for p := 0; p < n*d; p++ {
		x, y := st.x[p], st.y[p]
		r2 := x*x + y*y
		if r2 == 0 {
			continue
		}
		dx, dy := -y/r2*dOut.Axis[p], x/r2*dOut.Axis[p]
		if x == intersectClamp { // clamped (or exactly 1e-3 by chance: measure zero)
			dx = 0
		}
		// x = Σ α_j cos a_j, y = Σ α_j sin a_j.
		var dot T // Σ_j α_j·dα_j, for the softmax
		for j := 0; j < nb; j++ {
			s, c := st.sin[j*n*d+p], st.cos[j*n*d+p]
			al := st.alpha[j*n*d+p]
			dAlpha := dx*c + dy*s
			dIn[j].Axis[p] += al * (dy*c - dx*s)
			dg[j*n*d+p] = dAlpha
			dot += al * dAlpha
		}
		// softmax: dg_j = α_j (dα_j − Σ_k α_k dα_k)
		for j := 0; j < nb; j++ {
			dg[j*n*d+p] = st.alpha[j*n*d+p] * (dg[j*n*d+p] - dot)
		}
	}
	dAtt := make([]T, rows*d)
	k.LinearBackward(dAtt, gw.W2, gw.B2, dg, st.att, w.W2, rows, d, d)
	reluBackward(dAtt, st.att)
	k.LinearBackward(dz, gw.W1, gw.B1, dAtt, st.z, w.W1, rows, 2*d, d)

	// CardMin. h' = hmin·gate.
	dPre := make([]T, n*d) // gradient of the gate's pre-activation
	for p := 0; p < n*d; p++ {
		g := dOut.Half[p]
		j := int(st.argmin[p])
		dHmin := g * st.gate[p]
		if st.mask != nil {
			dHmin *= st.mask[j*n*d+p]
		}
		dIn[j].Half[p] += dHmin
		gate := st.gate[p]
		dPre[p] = g * st.hmin[p] * gate * (1 - gate)
	}
	dMean := make([]T, n*d)
	k.LinearBackward(dMean, gw.W4, gw.B4, dPre, st.mean, w.W4, n, d, d)
	dSet := make([]T, rows*d)
	for j := 0; j < nb; j++ {
		for p := 0; p < n*d; p++ {
			dSet[j*n*d+p] = dMean[p] / T(nb)
		}
	}
	reluBackward(dSet, st.set)
	k.LinearBackward(dz, gw.W3, gw.B3, dSet, st.z, w.W3, rows, 2*d, d)

	// z_j = [a_j − h_j ; a_j + h_j].
	for j := 0; j < nb; j++ {
		for r := 0; r < n; r++ {
			dzr := dz[(j*n+r)*2*d:]
			for i := 0; i < d; i++ {
				lo, hi := dzr[i], dzr[d+i]
				dIn[j].Axis[r*d+i] += lo + hi
				dIn[j].Half[r*d+i] += hi - lo
			}
		}
	}
}

// sinCos sets s[i], c[i] = sin x[i], cos x[i] (float32: vmath.SinCos, to about 1e-7).
func sinCos[T Float](s, c, x []T) {
	if s32, ok := any(s).([]float32); ok {
		vmath.SinCos(s32, any(c).([]float32), any(x).([]float32))
		return
	}
	for i, v := range x {
		s[i], c[i] = sincos(v)
	}
}
