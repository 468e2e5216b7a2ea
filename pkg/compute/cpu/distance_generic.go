package cpu

import "math"

// genericDist is the portable implementation of the distance's inner loops, one
// dimension at a time, in the same table layouts as the assembly.
var genericDist = distKernels{name: "go", sincos: sincosGo, fwd4: fwd4Go, bwd: bwdGo}

// Coefficients of the single-precision sine and cosine on [−π/4, π/4] (Cephes sinf.c,
// cosf.c; minimax, error below 1 ulp of float32):
//
//	sin r ≈ r + r·z·(s1 + z·(s2 + z·s3)),  cos r ≈ 1 − z/2 + z²·(c1 + z·(c2 + z·c3)),  z = r².
const (
	sinC1 = -1.6666654611e-1
	sinC2 = 8.3321608736e-3
	sinC3 = -1.9515295891e-4
	cosC1 = 4.166664568298827e-2
	cosC2 = -1.388731625493765e-3
	cosC3 = 2.443315711809948e-5
	// sincosLimit bounds |x| for the polynomial path; beyond it (never, for angles from
	// the model) math.Sincos is used. The assembly reduces with a three-part π/2 in
	// float32 and is accurate well past it.
	sincosLimit = 8192
)

// sincosf returns sin x and cos x to about 1e-7: x = j·π/2 + r with |r| ≤ π/4, the
// polynomials above, and the quadrant j mod 4 selecting and negating them. The reduction
// is done in float64, exact enough for |x| ≤ sincosLimit.
func sincosf(x float32) (sin, cos float32) {
	xf := float64(x)
	if !(math.Abs(xf) <= sincosLimit) {
		s, c := math.Sincos(xf)
		return float32(s), float32(c)
	}
	j := math.RoundToEven(xf * (2 / math.Pi))
	r := xf - j*(math.Pi/2)
	z := r * r
	s := r + r*z*(sinC1+z*(sinC2+z*sinC3))
	c := 1 - 0.5*z + z*z*(cosC1+z*(cosC2+z*cosC3))
	switch int64(j) & 3 {
	case 0:
		return float32(s), float32(c)
	case 1:
		return float32(c), float32(-s)
	case 2:
		return float32(-s), float32(-c)
	}
	return float32(-c), float32(s)
}

func sincosGo(x []float32, nblk int, out []float32, stride int, _ []float32) {
	for b := 0; b < nblk; b++ {
		xs := x[b*lanes : (b+1)*lanes]
		o := out[b*stride : b*stride+2*lanes]
		for i, v := range xs {
			o[i], o[lanes+i] = sincosf(0.5 * v)
		}
	}
}

func fwd4Go(q []float32, e *[4][]float32, nblk int, out *[8]float32) {
	for i, er := range e {
		var so, si float32
		for b := 0; b < nblk; b++ {
			qb := q[b*qBlock : (b+1)*qBlock]
			eb := er[b*eBlock : (b+1)*eBlock]
			for l := 0; l < lanes; l++ {
				su, cu := eb[l], eb[lanes+l]
				st := float32(su*qb[qCosA+l]) - float32(cu*qb[qSinA+l])
				sLo := float32(su*qb[qCosLo+l]) - float32(cu*qb[qSinLo+l])
				sHi := float32(su*qb[qCosHi+l]) - float32(cu*qb[qSinHi+l])
				si += min(abs32(st), qb[qBeta+l])
				if !(sLo*sHi < 0) { // outside (see insideTest)
					so += min(abs32(sLo), abs32(sHi))
				}
			}
		}
		out[2*i], out[2*i+1] = so, si
	}
}

func bwdGo(q, e []float32, nblk, tail int, c, lambda float32, dAxis, dHalf, dEnt, _ []float32) {
	for b := 0; b < nblk; b++ {
		qb := q[b*qBlock : (b+1)*qBlock]
		eb := e[b*eBlock : (b+1)*eBlock]
		n := lanes
		if b == nblk-1 {
			n = tail
		}
		for l := 0; l < n; l++ {
			su, cu := eb[l], eb[lanes+l]
			sa, ca := qb[qSinA+l], qb[qCosA+l]
			sl, cl := qb[qSinLo+l], qb[qCosLo+l]
			sh, ch := qb[qSinHi+l], qb[qCosHi+l]
			// Sines and cosines of (θ − a)/2, (θ − a + h)/2, (θ − a − h)/2. The explicit
			// conversions round each product, so that no compiler fuses them into an
			// FMA: the sines are then exactly 0 where the half-angles are equal (θ = a),
			// and sign(0) = 0 picks the reference's subgradient.
			st, ct := float32(su*ca)-float32(cu*sa), cu*ca+su*sa
			sLo, cLo := float32(su*cl)-float32(cu*sl), cu*cl+su*sl
			sHi, cHi := float32(su*ch)-float32(cu*sh), cu*ch+su*sh
			p := sLo * sHi         // sign(t − β), see insideTest
			var gTheta, gH float32 // twice the gradients of the distance wrt θ and h
			if !(p < 0) {
				gLo, gHi := sign32(sLo)*cLo, sign32(sHi)*cHi
				switch lo, hi := abs32(sLo), abs32(sHi); {
				case lo < hi:
					gTheta, gH = gLo, gLo
				case lo > hi:
					gTheta, gH = gHi, -gHi
				default:
					gTheta, gH = 0.5*(gLo+gHi), 0.5*(gLo-gHi)
				}
			}
			gt := sign32(st) * ct
			switch {
			case p < 0: // t < β
				gTheta += lambda * gt
			case p > 0: // t > β
				gH += qb[qLamGBeta+l]
			default:
				gTheta += lambda * 0.5 * gt
				gH += 0.5 * qb[qLamGBeta+l]
			}
			j := b*lanes + l
			dEnt[j] += c * gTheta
			dAxis[j] -= c * gTheta
			dHalf[j] += c * gH
		}
	}
}
