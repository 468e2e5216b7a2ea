package model

import "math"

// The distance itself (docs/model.md §7) is a hot kernel and lives behind the compute seam:
// see compute.Kernels.DistanceForward / DistanceBackward. What follows turns distances
// into logits, takes the DNF union and computes the loss.

// ---------------------------------------------------------------------------------------
// Logit (docs/model.md §7): logit = γ − m·dist, m the trainable modulus.

// LogitForward sets logit[i] = γ − m·dist[i].
func LogitForward[T Float](logit, dist []T, gamma, modulus T) {
	for i, v := range dist {
		logit[i] = gamma - modulus*v
	}
}

// LogitBackward adds the gradients of LogitForward given dLogit: dDist += −m·dLogit, and
// returns ∂/∂m = −Σ dLogit·dist (summed in float64).
func LogitBackward[T Float](dDist, dLogit, dist []T, modulus T) (dModulus float64) {
	for i, g := range dLogit {
		dDist[i] -= modulus * g
		dModulus -= float64(g) * float64(dist[i])
	}
	return dModulus
}

// ---------------------------------------------------------------------------------------
// Union (docs/model.md §6): the score of a DNF query is the max over its branches' logits.
// Subgradient: the whole gradient goes to the first maximal branch (PyTorch's max(dim)).

// UnionMaxForward sets score[i] = max_b branches[b][i] and arg[i] = the first b attaining it.
// A NaN in any branch makes the score NaN (arg its first NaN branch), as PyTorch's max
// does: a greater-than alone would keep an earlier branch's number over a later NaN, and
// the NaN, which ranking refuses, would pass unseen.
func UnionMaxForward[T Float](score []T, arg []int32, branches [][]T) {
	copy(score, branches[0])
	clear(arg)
	for b := 1; b < len(branches); b++ {
		for i, v := range branches[b] {
			if s := score[i]; v > s || (v != v && s == s) {
				score[i], arg[i] = v, int32(b)
			}
		}
	}
}

// UnionMaxBackward adds dScore to the selected branch: dBranches[arg[i]][i] += dScore[i].
func UnionMaxBackward[T Float](dBranches [][]T, dScore []T, arg []int32) {
	for i, g := range dScore {
		dBranches[arg[i]][i] += g
	}
}

// ---------------------------------------------------------------------------------------
// Loss (docs/model.md §9). For Q queries with weights w, one positive logit pos[q] and k
// negative logits neg[q][j]:
//
//	L_pos = −Σ_q w_q·log σ(pos_q) / Σ_q w_q
//	L_neg = −Σ_q w_q·(1/k)·Σ_j log σ(−neg_qj) / Σ_q w_q
//	L     = (L_pos + L_neg)/2
//
// Sums are taken in float64.

// logSigmoid is log σ(x) = −softplus(−x), computed stably.
func logSigmoid(x float64) float64 {
	return min(x, 0) - math.Log1p(math.Exp(-math.Abs(x)))
}

// LossForward returns L, L_pos and L_neg for logits pos [Q], neg [Q][k], weights w [Q].
func LossForward[T Float](pos, neg, w []T, k int) (loss, lossPos, lossNeg float64) {
	var sumW float64
	for q, wq := range w {
		sumW += float64(wq)
		lossPos -= float64(wq) * logSigmoid(float64(pos[q]))
		var s float64
		for _, v := range neg[q*k : (q+1)*k] {
			s += logSigmoid(-float64(v))
		}
		lossNeg -= float64(wq) * s / float64(k)
	}
	lossPos /= sumW
	lossNeg /= sumW
	return (lossPos + lossNeg) / 2, lossPos, lossNeg
}

// LossBackward adds the gradients of L (times dLoss) to dPos and dNeg:
//
//	∂L/∂pos_q  = −w_q·σ(−pos_q) / (2Σw)
//	∂L/∂neg_qj =  w_q·σ(neg_qj) / (2kΣw)
func LossBackward[T Float](dPos, dNeg, pos, neg, w []T, k int, dLoss float64) {
	var sumW float64
	for _, wq := range w {
		sumW += float64(wq)
	}
	for q, wq := range w {
		c := dLoss * float64(wq) / (2 * sumW)
		dPos[q] += T(-c * sigmoid64(-float64(pos[q])))
		for j := q * k; j < (q+1)*k; j++ {
			dNeg[j] += T(c / float64(k) * sigmoid64(float64(neg[j])))
		}
	}
}

func sigmoid64(x float64) float64 { return 1 / (1 + math.Exp(-x)) }
