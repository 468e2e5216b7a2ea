package gpu

import (
	"math"

	"github.com/rocone/rocone/pkg/model"
)

// testLogitUnion checks the ranking's logits and union against the CPU's.
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

	branches := make([][]float32, nb)
	flat := make([]float32, 0, nb*n)
	for b := range branches {
		branches[b] = h.uniform(n, -5, 5)
		// NaNs in some elements of each branch (and in two branches of some elements):
		// the union's score is NaN there, as on the CPU, not a number of another branch.
		for i := 7 * (b + 1); i < n; i += 97 {
			branches[b][i] = float32(math.NaN())
		}
		flat = append(flat, branches[b]...)
	}
	score, arg := make([]float32, n), make([]int32, n)
	model.UnionMaxForward(score, arg, branches)
	S, Arg := h.zeros(n), h.upI(make([]int32, n))
	h.ok(h.d.UnionMaxForward(S, Arg, h.up(flat), nb))
	got := h.down(S)
	for i := range score {
		anyNaN := false
		for b := range branches {
			anyNaN = anyNaN || branches[b][i] != branches[b][i]
		}
		if (score[i] != score[i]) != anyNaN || (got[i] != got[i]) != anyNaN {
			h.t.Fatalf("element %d: CPU score %v, device %v; a branch NaN there: %v (a NaN in any branch makes the max NaN)", i, score[i], got[i], anyNaN)
		}
		if anyNaN {
			score[i], got[i] = 0, 0 // compared: both NaN
		}
	}
	compare(h.t, "score", score, got)
	gotArg, err := Arg.ToHost()
	h.ok(err)
	for i := range arg {
		if arg[i] != gotArg[i] {
			h.t.Fatalf("arg[%d] = %d, want %d", i, gotArg[i], arg[i])
		}
	}
}

// testLossHead runs the loss head at shapes of one query, fewer and more negatives than a
// warp's lanes, a batch that strides over the grid (with the tiny geometry), classes of
// one to three branches with ties between them, and enough elements that the modulus's
// gradient takes more than modulusParts blocks' worth (each block then strides).
func testLossHead(h *harness) {
	for _, s := range []struct {
		k       int
		classes [][2]int // branches, queries
	}{
		{19, [][2]int{{1, 37}}},
		{1, [][2]int{{1, 1}}},
		{70, [][2]int{{1, 9}}},
		{128, [][2]int{{1, 513}}},
		{19, [][2]int{{1, 37}, {2, 5}, {3, 4}}},
		{5, [][2]int{{2, 1}}},
		{128, [][2]int{{1, 1500}, {2, 300}}},
	} {
		var classes []LossClass
		var Q, roots int
		for _, c := range s.classes {
			classes = append(classes, LossClass{Branches: c[0], Queries: c[1], RootOff: roots, QueryOff: Q})
			Q += c[1]
			roots += c[0] * c[1]
		}
		testLossHeadShape(h, classes, Q, roots, s.k)
	}
}

func testLossHeadShape(h *harness, classes []LossClass, Q, roots, k int) {
	const gamma = 24
	K := k + 1
	dist := h.uniform(roots*K, 0, 40)
	for i := 0; i < len(dist); i += 5 { // ties between branches: whole numbers
		dist[i] = float32(math.Round(float64(dist[i]) / 8))
	}
	w := h.uniform(Q, 0.05, 0.5)
	modulus := float32(0.73)

	// The CPU's: logits, each class's union and split, the loss; and back.
	logit := make([]float32, roots*K)
	model.LogitForward(logit, dist, gamma, modulus)
	pos, neg := make([]float32, Q), make([]float32, Q*k)
	args := make([][]int32, len(classes))
	for ci, c := range classes {
		branches := classBranches(logit, c, K)
		score := make([]float32, c.Queries*K)
		args[ci] = make([]int32, c.Queries*K)
		model.UnionMaxForward(score, args[ci], branches)
		for q := range c.Queries {
			pos[c.QueryOff+q] = score[q*K]
			copy(neg[(c.QueryOff+q)*k:], score[q*K+1:(q+1)*K])
		}
	}
	L, Lp, Ln := model.LossForward(pos, neg, w, k)
	dPos, dNeg := make([]float32, Q), make([]float32, Q*k)
	model.LossBackward(dPos, dNeg, pos, neg, w, k, 0.75)
	dLogit := make([]float32, roots*K)
	for ci, c := range classes {
		dBranches := classBranches(dLogit, c, K)
		dScore := make([]float32, c.Queries*K)
		for q := range c.Queries {
			dScore[q*K] = dPos[c.QueryOff+q]
			copy(dScore[q*K+1:(q+1)*K], dNeg[(c.QueryOff+q)*k:])
		}
		model.UnionMaxBackward(dBranches, dScore, args[ci])
	}
	dDist := make([]float32, roots*K)
	dm := model.LogitBackward(dDist, dLogit, dist, modulus)

	head := LossHead{Classes: classes, Table: h.upI(LossClassTable(nil, classes)), Q: Q, K: K}
	D, M, W := h.up(dist), h.up([]float32{modulus}), h.up(w)
	stats, err := Alloc[float64](h.d, 4)
	h.ok(err)
	defer stats.Free()
	h.ok(h.d.LossHeadForward(stats, D, M, W, head, gamma))
	gl, glp, gln, err := ReadLoss(stats)
	h.ok(err)
	for _, c := range []struct {
		name      string
		want, got float64
	}{{"L", L, gl}, {"L_pos", Lp, glp}, {"L_neg", Ln, gln}} {
		if !(math.Abs(c.got-c.want) <= 1e-6*math.Abs(c.want)) {
			h.t.Fatalf("%v k=%d: %s = %.12g, reference %.12g", classes, k, c.name, c.got, c.want)
		}
	}
	DD := h.up(h.uniform(roots*K, -1, 1)) // written, not added to
	DM := h.up([]float32{0.25})
	h.ok(h.d.LossHeadBackward(DD, DM, D, M, W, stats, head, gamma, 0.75))
	got := h.down(DD)
	compare(h.t, "dDist", dDist, got)
	for i, g := range got { // the branches a score did not take get exactly 0
		if (dLogit[i] == 0) != (g == 0) {
			h.t.Fatalf("%v k=%d: dDist[%d] = %g, the CPU's %g", classes, k, i, g, dDist[i])
		}
	}
	if got, want := h.down(DM)[0], float32(0.25+dm); !(math.Abs(float64(got-want)) <= 1e-6*math.Abs(float64(want))) {
		h.t.Fatalf("%v k=%d: dModulus %.9g, reference %.9g", classes, k, got, want)
	}
}

// classBranches are class c's branches' rows of x [roots][K], one view a branch.
func classBranches(x []float32, c LossClass, K int) [][]float32 {
	views := make([][]float32, c.Branches)
	for b := range views {
		at := (c.RootOff + b*c.Queries) * K
		views[b] = x[at : at+c.Queries*K]
	}
	return views
}

// testLossHeadErrors: layouts whose classes do not add up are refused.
func testLossHeadErrors(h *harness) {
	table := h.upI(make([]int32, 8))
	stats, err := Alloc[float64](h.d, 4)
	h.ok(err)
	defer stats.Free()
	dist, m, w := h.zeros(100), h.zeros(1), h.zeros(10)
	for _, c := range []struct {
		name string
		head LossHead
	}{
		{"no classes", LossHead{Table: table, Q: 0, K: 2}},
		{"a gap in the queries", LossHead{Classes: []LossClass{{1, 2, 0, 0}, {1, 2, 2, 3}}, Table: table, Q: 5, K: 2}},
		{"overlapping roots", LossHead{Classes: []LossClass{{2, 2, 0, 0}, {1, 2, 2, 2}}, Table: table, Q: 4, K: 2}},
		{"Q not the classes'", LossHead{Classes: []LossClass{{1, 2, 0, 0}}, Table: table, Q: 3, K: 2}},
		{"no negatives", LossHead{Classes: []LossClass{{1, 2, 0, 0}}, Table: table, Q: 2, K: 1}},
		{"no branches", LossHead{Classes: []LossClass{{0, 2, 0, 0}}, Table: table, Q: 2, K: 2}},
		{"a short table", LossHead{Classes: []LossClass{{1, 2, 0, 0}, {1, 1, 2, 2}, {1, 1, 3, 3}}, Table: table, Q: 4, K: 2}},
		{"short distances", LossHead{Classes: []LossClass{{1, 10, 0, 0}}, Table: table, Q: 10, K: 11}},
	} {
		if err := h.d.LossHeadForward(stats, dist, m, w, c.head, 1); err == nil {
			h.t.Errorf("%s: LossHeadForward accepted %+v", c.name, c.head)
		}
		if err := h.d.LossHeadBackward(dist, m, dist, m, w, stats, c.head, 1, 1); err == nil {
			h.t.Errorf("%s: LossHeadBackward accepted %+v", c.name, c.head)
		}
	}
}
