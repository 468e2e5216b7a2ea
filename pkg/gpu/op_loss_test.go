package gpu

import (
	"fmt"
	"math"

	"github.com/rocone/rocone/pkg/model"
)

func testLogitUnion(h *harness) {
	const n, nb = 1000, 3
	const gamma = 20
	dist := h.uniform(n, 0, 40)
	modulus := []float32{0.0137}
	logit := make([]float32, n)
	model.LogitForward(logit, dist, gamma, modulus[0])
	L, D, M := h.zeros(n), h.up(dist), h.up(modulus)
	h.ok(h.d.LogitForward(L, D, M, gamma))
	compare(h.t, "logit", logit, h.down(L))
	dLogit, dDist := h.uniform(n, -1, 1), h.uniform(n, -1, 1)
	DD, DM := h.up(dDist), h.up([]float32{0.25})
	dm := model.LogitBackward(dDist, dLogit, dist, modulus[0])
	h.ok(h.d.LogitBackward(DD, DM, h.up(dLogit), D, M))
	compare(h.t, "dDist", dDist, h.down(DD))
	compare(h.t, "dModulus", []float32{float32(0.25 + dm)}, h.down(DM))
	// The modulus's sum over one part, several, and more than modulusParts blocks (each
	// then strides), against the reference's double sum.
	for _, n := range []int{1, 5000, 4*reduceThreads*modulusParts + 777} {
		dist, dLogit := h.uniform(n, 0, 40), h.uniform(n, -1, 1)
		DM := h.up([]float32{0.25})
		h.ok(h.d.LogitBackward(nil, DM, h.up(dLogit), h.up(dist), M))
		dm := model.LogitBackward(make([]float32, n), dLogit, dist, modulus[0])
		if got, want := h.down(DM)[0], float32(0.25+dm); math.Abs(float64(got-want)) > 1e-6*math.Abs(float64(want)) {
			h.t.Fatalf("n=%d: dModulus %.9g, reference %.9g", n, got, want)
		}
	}

	branches := make([][]float32, nb)
	flat := make([]float32, 0, nb*n)
	for b := range branches {
		branches[b] = h.uniform(n, -5, 5)
		flat = append(flat, branches[b]...)
	}
	score, arg := make([]float32, n), make([]int32, n)
	model.UnionMaxForward(score, arg, branches)
	S, Arg := h.zeros(n), h.upI(make([]int32, n))
	h.ok(h.d.UnionMaxForward(S, Arg, h.up(flat), nb))
	compare(h.t, "score", score, h.down(S))
	gotArg, err := Arg.ToHost()
	h.ok(err)
	for i := range arg {
		if arg[i] != gotArg[i] {
			h.t.Fatalf("arg[%d] = %d, want %d", i, gotArg[i], arg[i])
		}
	}
	dScore := h.uniform(n, -1, 1)
	dBr := make([][]float32, nb)
	dFlat := h.uniform(nb*n, -1, 1)
	for b := range dBr {
		dBr[b] = clone(dFlat[b*n : (b+1)*n])
	}
	DB := h.up(dFlat)
	model.UnionMaxBackward(dBr, dScore, arg)
	h.ok(h.d.UnionMaxBackward(DB, h.up(dScore), Arg))
	gotB := h.down(DB)
	for b := range dBr {
		compare(h.t, fmt.Sprint("dBranch", b), dBr[b], gotB[b*n:(b+1)*n])
	}
}

// testLoss runs the loss at shapes of one query, fewer and more negatives than a warp's
// lanes, and a batch that strides over the grid (with the tiny geometry).
func testLoss(h *harness) {
	for _, s := range []struct{ Q, k int }{{37, 19}, {1, 1}, {9, 70}, {513, 128}} {
		testLossShape(h, s.Q, s.k)
	}
}

func testLossShape(h *harness, Q, k int) {
	pos, neg := h.uniform(Q, -30, 30), h.uniform(Q*k, -30, 30)
	w := h.uniform(Q, 0.05, 0.5)
	L, Lp, Ln := model.LossForward(pos, neg, w, k)
	P, N, W := h.up(pos), h.up(neg), h.up(w)
	stats, err := Alloc[float64](h.d, 4)
	h.ok(err)
	defer stats.Free()
	h.ok(h.d.LossForward(stats, P, N, W, Q, k))
	gl, glp, gln, err := ReadLoss(stats)
	h.ok(err)
	for _, c := range []struct {
		name      string
		want, got float64
	}{{"L", L, gl}, {"L_pos", Lp, glp}, {"L_neg", Ln, gln}} {
		if math.Abs(c.got-c.want) > 1e-6*math.Abs(c.want) {
			h.t.Fatalf("Q=%d k=%d: %s = %.12g, reference %.12g", Q, k, c.name, c.got, c.want)
		}
	}
	dPos, dNeg := h.uniform(Q, -1, 1), h.uniform(Q*k, -1, 1)
	DP, DN := h.up(dPos), h.up(dNeg)
	model.LossBackward(dPos, dNeg, pos, neg, w, k, 0.75)
	h.ok(h.d.LossBackward(DP, DN, P, N, W, stats, Q, k, 0.75))
	compare(h.t, "dPos", dPos, h.down(DP))
	compare(h.t, "dNeg", dNeg, h.down(DN))
}
