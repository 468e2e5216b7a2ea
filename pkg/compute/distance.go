package compute

import "math"

// The cone distance of docs/model.md §7, per dimension, for an entity angle θ and a query cone
// with axis a and HALF-aperture h:
//
//	t   = |sin((θ − a)/2)|                       distance to the axis
//	β   = |sin(h/2)|                             the cone's "radius"
//	lo  = |sin((θ − (a − h))/2)|                 distance to the lower boundary
//	hi  = |sin((θ − (a + h))/2)|                 distance to the upper boundary
//	d_o = 0 if t < β (inside), else min(lo, hi)  outside distance
//	d_i = min(t, β)                              inside distance
//
// and the query's distance is Σ_j d_o + λ·Σ_j d_i.
//
// Subgradients (the ones PyTorch's autograd takes on the reference code):
//   - |x|' = sign(x) with sign(0) = 0;
//   - min(x, y) of two tensors (torch.min(a, b)) sends the gradient to the smaller one,
//     half to each on a tie;
//   - the inside test is strict (t < β) and, where it holds, d_o is a constant 0.

// dimDistance returns d_o + λ·d_i for one dimension.
func dimDistance[T Float](theta, a, h, lambda T) T {
	t := math.Abs(math.Sin(float64(theta-a) / 2))
	beta := math.Abs(math.Sin(float64(h) / 2))
	dIn := math.Min(t, beta)
	if t < beta {
		return lambda * T(dIn)
	}
	lo := math.Abs(math.Sin(float64(theta-a+h) / 2))
	hi := math.Abs(math.Sin(float64(theta-a-h) / 2))
	return T(math.Min(lo, hi)) + lambda*T(dIn)
}

// dimDistanceGrad returns the partial derivatives of dimDistance with respect to θ, a
// and h.
func dimDistanceGrad[T Float](theta, a, h, lambda T) (gTheta, gA, gH T) {
	// d|sin(u/2)|/du = sign(sin(u/2))·cos(u/2)/2
	halfSinGrad := func(u float64) (val, grad float64) {
		s, c := math.Sincos(u / 2)
		return math.Abs(s), sign(s) * c / 2
	}
	t, gt := halfSinGrad(float64(theta - a)) // ∂t/∂θ = gt, ∂t/∂a = −gt
	beta, gb := halfSinGrad(float64(h))      // ∂β/∂h = gb
	// Outside term: min(lo, hi), gradient to the smaller, split on a tie.
	if !(t < beta) {
		lo, gl := halfSinGrad(float64(theta - a + h)) // ∂/∂(θ, a, h) = (gl, −gl, +gl)
		hi, gh := halfSinGrad(float64(theta - a - h)) // ∂/∂(θ, a, h) = (gh, −gh, −gh)
		wl, wh := minWeights(lo, hi)
		gTheta += T(wl*gl + wh*gh)
		gA += T(-wl*gl - wh*gh)
		gH += T(wl*gl - wh*gh)
	}
	// Inside term: λ·min(t, β).
	wt, wb := minWeights(t, beta)
	gTheta += lambda * T(wt*gt)
	gA -= lambda * T(wt*gt)
	gH += lambda * T(wb*gb)
	return gTheta, gA, gH
}

// minWeights returns how the gradient of min(x, y) splits between x and y.
func minWeights(x, y float64) (wx, wy float64) {
	switch {
	case x < y:
		return 1, 0
	case x > y:
		return 0, 1
	}
	return 0.5, 0.5
}

func sign(x float64) float64 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}

// candidateRow returns the row of ent that candidate k of query q refers to.
func candidateRow(cand []int32, q, k, cands int) int {
	if cand == nil {
		return k
	}
	return int(cand[q*cands+k])
}

// DistanceForward implements Kernels.DistanceForward.
func (Reference[T]) DistanceForward(dist, axis, half, ent []T, cand []int32, queries, cands, dim int, lambda T) {
	checkLen("distance dist", dist, queries*cands)
	checkLen("distance axis", axis, queries*dim)
	checkLen("distance half", half, queries*dim)
	if cand != nil {
		checkLen("distance cand", cand, queries*cands)
	}
	for q := 0; q < queries; q++ {
		a := axis[q*dim : (q+1)*dim]
		h := half[q*dim : (q+1)*dim]
		for k := 0; k < cands; k++ {
			c := candidateRow(cand, q, k, cands)
			theta := ent[c*dim : (c+1)*dim]
			var s T
			for j := range dim {
				s += dimDistance(theta[j], a[j], h[j], lambda)
			}
			dist[q*cands+k] = s
		}
	}
}

// DistanceBackward implements Kernels.DistanceBackward.
func (Reference[T]) DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, ent []T, cand []int32, queries, cands, dim int, lambda T) {
	checkLen("distance dDist", dDist, queries*cands)
	checkLen("distance axis", axis, queries*dim)
	checkLen("distance half", half, queries*dim)
	for q := 0; q < queries; q++ {
		a := axis[q*dim : (q+1)*dim]
		h := half[q*dim : (q+1)*dim]
		for k := 0; k < cands; k++ {
			g := dDist[q*cands+k]
			if g == 0 {
				continue
			}
			c := candidateRow(cand, q, k, cands)
			theta := ent[c*dim : (c+1)*dim]
			for j := range dim {
				gTheta, gA, gH := dimDistanceGrad(theta[j], a[j], h[j], lambda)
				if dAxis != nil {
					dAxis[q*dim+j] += g * gA
				}
				if dHalf != nil {
					dHalf[q*dim+j] += g * gH
				}
				if dEnt != nil {
					dEnt[c*dim+j] += g * gTheta
				}
			}
		}
	}
}
