package gpu

import (
	"fmt"
)

// LogitForward sets logit = γ − m·dist with the modulus m = modulus[0] on the device.
func (d *Device) LogitForward(logit, dist, modulus *F32, gamma float32) error {
	n := dist.Len()
	c := check{op: "LogitForward"}
	c.f("logit", logit, n)
	c.f("modulus", modulus, 1)
	if c.err != nil {
		return c.err
	}
	// Reads dist and m, writes logit; one multiply-add each.
	return d.each("logit_fwd", n, Work{Bytes: words(2*n, 1), FLOPs: flops(n, 2)}, ptr(logit), ptr(dist), ptr(modulus), f32(gamma), i32(n))
}

// LogitBackward adds −m·dLogit into dDist (if not nil) and −Σ dLogit·dist into
// dModulus[0] (if not nil; summed in double in a fixed order, deterministic).
func (d *Device) LogitBackward(dDist, dModulus, dLogit, dist, modulus *F32) error {
	n := dLogit.Len()
	c := check{op: "LogitBackward"}
	c.opt("dDist", dDist, n)
	c.opt("dModulus", dModulus, 1)
	c.f("dist", dist, n)
	c.f("modulus", modulus, 1)
	if c.err != nil {
		return c.err
	}
	if dDist != nil {
		// Reads dLogit and m, reads and writes dDist; one multiply-add each.
		if err := d.each("logit_bwd", n, Work{Bytes: words(3*n, 1), FLOPs: flops(n, 2)}, ptr(dDist), ptr(dLogit), ptr(modulus), i32(n)); err != nil {
			return err
		}
	}
	if dModulus != nil && n > 0 {
		// The parts: a block per 4·reduceThreads elements, at most modulusParts (fixed by
		// n alone: the order of the sums, and so the bits, do not depend on the device).
		parts := min(ceilDiv(n, 4*reduceThreads), modulusParts)
		part, err := scratch[float64](d, parts)
		if err != nil {
			return err
		}
		defer part.Free()
		// Reads dLogit and dist, writes a double per block; one multiply-add each.
		w := Work{Bytes: words(2*n) + int64(8*parts), FLOPs: flops(n, 2)}
		if err := d.launch("logit_bwd_modulus_part", w, [3]int{parts, 1, 1}, [3]int{reduceThreads, 1, 1}, ptr(part), ptr(dLogit), ptr(dist), i32(n)); err != nil {
			return err
		}
		w = Work{Bytes: int64(8*parts) + words(2), FLOPs: flops(parts, 1)}
		return d.launch("logit_bwd_modulus_sum", w, [3]int{1, 1, 1}, [3]int{reduceThreads, 1, 1}, ptr(dModulus), ptr(part), i32(parts))
	}
	return nil
}

// modulusParts caps logit_bwd_modulus_part's blocks: about two per SM.
const modulusParts = 256

// UnionMaxForward sets score[i] = max_b branches[b][i] and arg[i] the first b attaining
// it, for branches [nb][n] back to back.
func (d *Device) UnionMaxForward(score *F32, arg *I32, branches *F32, nb int) error {
	n := score.Len()
	c := check{op: "UnionMaxForward"}
	c.i("arg", arg, n)
	c.f("branches", branches, nb*n)
	if c.err != nil {
		return c.err
	}
	// Reads the branches, writes score and arg; nb−1 comparisons each.
	w := Work{Bytes: words(nb*n, 2*n), FLOPs: flops(n, max(nb-1, 0))}
	return d.each("union_max_fwd", n, w, ptr(score), ptr(arg), ptr(branches), i32(nb), i32(n))
}

// UnionMaxBackward adds dScore[i] into dBranches[arg[i]][i].
func (d *Device) UnionMaxBackward(dBranches, dScore *F32, arg *I32) error {
	n := dScore.Len()
	c := check{op: "UnionMaxBackward"}
	c.i("arg", arg, n)
	if c.err != nil {
		return c.err
	}
	// Reads dScore and arg, reads and writes the one chosen branch element; one add each.
	return d.each("union_max_bwd", n, Work{Bytes: words(4 * n), FLOPs: flops(n, 1)}, ptr(dBranches), ptr(dScore), ptr(arg), i32(n))
}

// LossForward computes model.LossForward on the device for logits pos [Q], neg [Q][k] and
// weights w [Q] into stats [4] (float64): L, L_pos, L_neg, Σw. Read them with
// ReadLoss; LossBackward reads Σw from stats on the device.
func (d *Device) LossForward(stats *F64, pos, neg, w *F32, Q, k int) error {
	c := check{op: "LossForward"}
	c.len("stats", stats.Len(), 4, false, stats != nil)
	c.f("pos", pos, Q)
	c.f("neg", neg, Q*k)
	c.f("w", w, Q)
	if c.err == nil && (Q < 1 || k < 1) {
		c.err = fmt.Errorf("cuda: LossForward: %d queries, %d negatives", Q, k)
	}
	if c.err != nil {
		return c.err
	}
	part, err := scratch[float64](d, 3*Q)
	if err != nil {
		return err
	}
	defer part.Free()
	// Reads pos, neg and w, writes three doubles a query; a log-sigmoid (exp, log1p and 4
	// more) and an add per logit (and a negation per negative), 6 more per query.
	blocks := min(ceilDiv(Q, lossQueries), d.maxBlocks)
	w3 := Work{Bytes: words(2*Q, Q*k) + int64(24*Q), FLOPs: flops(Q*k, 8) + flops(Q, 6)}
	if err := d.launch("loss_fwd_terms", w3, [3]int{blocks, 1, 1}, [3]int{32 * lossQueries, 1, 1}, ptr(part), ptr(pos), ptr(neg), ptr(w), i32(Q), i32(k)); err != nil {
		return err
	}
	// Reads the terms, writes 4 doubles; three adds a query and 6 more.
	w4 := Work{Bytes: int64(24*Q) + 32, FLOPs: flops(Q, 3) + 6}
	return d.launch("loss_fwd_sum", w4, [3]int{1, 1, 1}, [3]int{reduceThreads, 1, 1}, ptr(stats), ptr(part), i32(Q))
}

const lossQueries = 8 // loss.cu LOSS_QUERIES

// ReadLoss downloads LossForward's result: L, L_pos, L_neg.
func ReadLoss(stats *F64) (loss, lossPos, lossNeg float64, err error) {
	s := make([]float64, 4)
	if err := stats.Download(s); err != nil {
		return 0, 0, 0, err
	}
	return s[0], s[1], s[2], nil
}

// LossBackward adds the gradient of L (times dLoss) into dPos [Q] and dNeg [Q][k], as
// model.LossBackward; stats is LossForward's output.
func (d *Device) LossBackward(dPos, dNeg, pos, neg, w *F32, stats *F64, Q, k int, dLoss float64) error {
	c := check{op: "LossBackward"}
	c.len("stats", stats.Len(), 4, false, stats != nil)
	c.f("dPos", dPos, Q)
	c.f("dNeg", dNeg, Q*k)
	c.f("pos", pos, Q)
	c.f("neg", neg, Q*k)
	c.f("w", w, Q)
	if c.err != nil {
		return c.err
	}
	// Reads pos, neg, w and Σw; reads and writes dPos and dNeg; per logit the weight
	// factor (3), a sigmoid (exp and 3 more) and the scaled add (4).
	n := Q * (k + 1)
	w5 := Work{Bytes: words(3*n, Q, 2), FLOPs: flops(n, 11)}
	return d.each("loss_bwd", n, w5, ptr(dPos), ptr(dNeg), ptr(pos), ptr(neg), ptr(w), ptr(stats), i32(Q), i32(k), f64(dLoss))
}

// SplitScores splits score [n][K] (positive first) into pos [n] and neg [n][K−1].
func (d *Device) SplitScores(pos, neg, score *F32, n, K int) error {
	c := check{op: "SplitScores"}
	c.f("score", score, n*K)
	c.f("pos", pos, n)
	c.f("neg", neg, n*(K-1))
	if c.err != nil {
		return c.err
	}
	return d.each("split_scores", n*K, Work{Bytes: words(2 * n * K)}, ptr(pos), ptr(neg), ptr(score), i32(n), i32(K))
}

// SplitScoresBackward writes dScore [n][K] from dPos [n] and dNeg [n][K−1].
func (d *Device) SplitScoresBackward(dScore, dPos, dNeg *F32, n, K int) error {
	c := check{op: "SplitScoresBackward"}
	c.f("dScore", dScore, n*K)
	c.f("dPos", dPos, n)
	c.f("dNeg", dNeg, n*(K-1))
	if c.err != nil {
		return c.err
	}
	return d.each("split_scores_bwd", n*K, Work{Bytes: words(2 * n * K)}, ptr(dScore), ptr(dPos), ptr(dNeg), i32(n), i32(K))
}
