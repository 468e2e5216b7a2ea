package gpu

import (
	"fmt"
	"math"
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

// ReadLoss downloads LossHeadForward's result: L, L_pos, L_neg.
func ReadLoss(stats *F64) (loss, lossPos, lossNeg float64, err error) {
	s := make([]float64, 4)
	if err := stats.Download(s); err != nil {
		return 0, 0, 0, err
	}
	return s[0], s[1], s[2], nil
}

// LossClass is one class of the loss head's queries, those with the same number of DNF
// branches: the loss's queries QueryOff … QueryOff+Queries−1, whose branch roots are the
// distances' rows RootOff … RootOff+Branches·Queries−1, branch-major ([Branches][Queries]).
type LossClass struct{ Branches, Queries, RootOff, QueryOff int }

// LossHead is the training head's layout: Q queries in classes (consecutive, in the
// loss's order and in the distances' rows), each root scored against K candidates (the
// positive first, then K−1 negatives). Table is the classes on the device, as
// LossClassTable writes them.
type LossHead struct {
	Classes []LossClass
	Table   *I32
	Q, K    int
}

// LossClassTable is the classes as the kernels read them: [len(classes)][4] ints.
func LossClassTable(dst []int32, classes []LossClass) []int32 {
	for _, c := range classes {
		dst = append(dst, int32(c.Branches), int32(c.Queries), int32(c.RootOff), int32(c.QueryOff))
	}
	return dst
}

// Roots is the number of branch roots: the distances' rows.
func (h LossHead) Roots() int {
	n := 0
	for _, c := range h.Classes {
		n += c.Branches * c.Queries
	}
	return n
}

// check reports a layout whose classes are not consecutive or do not cover the Q queries.
func (h LossHead) check(c *check) {
	if c.err != nil {
		return
	}
	q, r := 0, 0
	for i, cl := range h.Classes {
		if cl.Branches < 1 || cl.Queries < 1 || cl.QueryOff != q || cl.RootOff != r {
			c.err = fmt.Errorf("cuda: %s: loss class %d %+v does not follow %d queries and %d roots", c.op, i, cl, q, r)
			return
		}
		q += cl.Queries
		r += cl.Branches * cl.Queries
	}
	switch {
	case len(h.Classes) == 0 || q != h.Q:
		c.err = fmt.Errorf("cuda: %s: the loss classes hold %d queries, not %d", c.op, q, h.Q)
	case h.K < 2:
		c.err = fmt.Errorf("cuda: %s: %d candidates a query, needs the positive and a negative", c.op, h.K)
	case int64(r)*int64(h.K) > math.MaxInt32:
		c.err = fmt.Errorf("cuda: %s: %d roots × %d candidates overflow the kernels' int32 index", c.op, r, h.K)
	default:
		c.i("classes' table", h.Table, 4*len(h.Classes))
	}
}

const lossQueries = 8 // loss.cu LOSS_QUERIES

// modulusParts caps loss_head_bwd's blocks (LossHeadBackward): about two per SM.
const modulusParts = 256

// LossHeadForward computes the training loss from the distances dist [roots][K] of every
// query's branch roots to its candidates (docs/model.md §7, §6, §9): logits γ − m·dist
// (m = modulus[0]), each query's score the max over its branches, and model.LossForward's
// L, L_pos, L_neg and Σw (float64) into stats [4] for weights w [Q]. Two launches: each
// query's three terms (a warp a query), then their sums in one block, in a fixed order.
// Read the loss with ReadLoss; LossHeadBackward reads Σw from stats on the device.
func (d *Device) LossHeadForward(stats *F64, dist, modulus, w *F32, h LossHead, gamma float32) error {
	c := check{op: "LossHeadForward"}
	h.check(&c)
	c.len("stats", stats.Len(), 4, false, stats != nil)
	c.f("dist", dist, h.Roots()*h.K)
	c.f("modulus", modulus, 1)
	c.f("w", w, h.Q)
	if c.err != nil {
		return c.err
	}
	part, err := scratch[float64](d, 3*h.Q)
	if err != nil {
		return err
	}
	defer part.Free()
	// Reads every root's distances (a query's K scores read its nb branches') and w,
	// writes three doubles a query; per score and branch the logit (2) and a comparison,
	// per score a log-sigmoid (exp, log1p and 4 more) and an add, 6 more per query.
	n := h.Roots() * h.K
	blocks := min(ceilDiv(h.Q, lossQueries), d.maxBlocks)
	terms := Work{Bytes: words(n, h.Q, 4*len(h.Classes)) + int64(24*h.Q), FLOPs: flops(n, 3) + flops(h.Q*h.K, 8) + flops(h.Q, 6)}
	if err := d.launch("loss_head_fwd_terms", terms, [3]int{blocks, 1, 1}, [3]int{32 * lossQueries, 1, 1},
		ptr(part), ptr(dist), ptr(h.Table), i32(len(h.Classes)), ptr(modulus), f32(gamma), ptr(w), i32(h.Q), i32(h.K)); err != nil {
		return err
	}
	// Reads the terms, writes 4 doubles; three adds a query and 6 more.
	sum := Work{Bytes: int64(24*h.Q) + 32, FLOPs: flops(h.Q, 3) + 6}
	return d.launch("loss_head_fwd_sum", sum, [3]int{1, 1, 1}, [3]int{reduceThreads, 1, 1}, ptr(stats), ptr(part), i32(h.Q))
}

// LossHeadBackward is LossHeadForward's gradient times dLoss: it writes dDist [roots][K]
// (each distance's −m·∂L/∂logit where the query's score took its branch, 0 elsewhere:
// the first maximal branch takes the whole gradient, as PyTorch's max) and adds
// ∂L/∂m = −Σ ∂L/∂logit·dist into dModulus[0], summed in double over a grid fixed by the
// size alone, so deterministic. stats is LossHeadForward's output. Two launches.
func (d *Device) LossHeadBackward(dDist, dModulus, dist, modulus, w *F32, stats *F64, h LossHead, gamma float32, dLoss float64) error {
	c := check{op: "LossHeadBackward"}
	h.check(&c)
	n := h.Roots() * h.K
	c.len("stats", stats.Len(), 4, false, stats != nil)
	c.f("dDist", dDist, n)
	c.f("dModulus", dModulus, 1)
	c.f("dist", dist, n)
	c.f("modulus", modulus, 1)
	c.f("w", w, h.Q)
	if c.err != nil {
		return c.err
	}
	// The parts: a block per 4·reduceThreads elements, at most modulusParts (fixed by n
	// alone: the order of the sums, and so the bits, do not depend on the device).
	parts := min(ceilDiv(n, 4*reduceThreads), modulusParts)
	part, err := scratch[float64](d, parts)
	if err != nil {
		return err
	}
	defer part.Free()
	// Reads each element's nb branches' distances (the score again) and its weight,
	// writes dDist and a double a block; per element the score (3 per branch), the
	// gradient (a sigmoid: exp and 3 more, and the weight factor's 3), −m· (1) and the
	// modulus's multiply-add (2).
	bwd := Work{Bytes: words(2*n, h.Q, 4*len(h.Classes)) + int64(8*parts+32), FLOPs: flops(n, 14)}
	if err := d.launch("loss_head_bwd", bwd, [3]int{parts, 1, 1}, [3]int{reduceThreads, 1, 1},
		ptr(dDist), ptr(part), ptr(dist), ptr(h.Table), i32(len(h.Classes)), ptr(modulus), f32(gamma), ptr(w), ptr(stats),
		i32(h.K), f64(dLoss), i32(n)); err != nil {
		return err
	}
	sum := Work{Bytes: int64(8*parts) + words(2), FLOPs: flops(parts, 1)}
	return d.launch("loss_head_bwd_modulus", sum, [3]int{1, 1, 1}, [3]int{reduceThreads, 1, 1}, ptr(dModulus), ptr(part), i32(parts))
}
