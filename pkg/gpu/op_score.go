package gpu

// Evaluation scoring (kernels/score.cu), the device side of model.Scorer for rank: the
// distance of every query against every entity row, from half-angle tables, and the
// filtered ranks, so that scores never leave the device.

const (
	scoreThreads = 256 // score.cu SCORE_THREADS
	scoreTQ      = 32  // SCORE_TQ
	scoreTE      = 128 // SCORE_TE
	// QueryTableWidth is the number of floats per (query, dimension) of a query table
	// (score.cu SCORE_QF).
	QueryTableWidth = 8
)

// EntityHalfAngles writes tab [len(ent)][2], the sine and cosine of half of every entity
// angle in ent: the entity table of DistanceAll, made once per scorer.
func (d *Device) EntityHalfAngles(tab, ent *F32) error {
	c := check{op: "EntityHalfAngles"}
	c.f("ent", ent, 0)
	c.f("tab", tab, 2*ent.Len())
	if c.err != nil {
		return c.err
	}
	// Reads ent, writes two floats each; a multiply and a sincosf.
	return d.each("ent_halfangles", ent.Len(), Work{Bytes: words(3 * ent.Len()), FLOPs: flops(ent.Len(), 2)}, ptr(tab), ptr(ent), i32(ent.Len()))
}

// QueryHalfAngles writes tab [len(axis)][QueryTableWidth], the query table of DistanceAll
// for the cones axis, half [queries][dim].
func (d *Device) QueryHalfAngles(tab, axis, half *F32) error {
	c := check{op: "QueryHalfAngles"}
	c.f("axis", axis, 0)
	n := axis.Len()
	c.f("half", half, n)
	c.f("tab", tab, n*QueryTableWidth)
	if c.err != nil {
		return c.err
	}
	// Reads the cones, writes QueryTableWidth floats each; 4 sincosf and 8 more.
	w := Work{Bytes: words(2*n, QueryTableWidth*n), FLOPs: flops(n, 12)}
	return d.each("query_halfangles", n, w, ptr(tab), ptr(axis), ptr(half), i32(n))
}

// DistanceAll computes dist [queries][cands], the distance of each query against entity
// rows 0 … cands−1: DistanceForward with cand nil, from the query table qtab
// [queries][dim][QueryTableWidth] (QueryHalfAngles) and the entity table etab
// [≥ cands][dim][2] (EntityHalfAngles). It agrees with DistanceForward to float
// rounding, and does not depend on the launch geometry.
func (d *Device) DistanceAll(dist, qtab, etab *F32, queries, cands, dim int, lambda float32) error {
	c := check{op: "DistanceAll"}
	c.nonneg(queries, cands, dim)
	c.f("dist", dist, queries*cands)
	c.f("qtab", qtab, queries*dim*QueryTableWidth)
	c.f("etab", etab, cands*dim*2)
	c.aligned("qtab", qtab, 16)
	c.aligned("etab", etab, 16)
	if c.err != nil || queries == 0 || cands == 0 {
		return c.err
	}
	// Reads both tables once, writes dist; per (query, entity, dim) three rotations by
	// the half angles (a multiply and a multiply-add each: 9), then 9 more.
	w := Work{Bytes: words(queries*dim*QueryTableWidth, cands*dim*2, queries*cands), FLOPs: flops(queries*cands*dim, 18)}
	grid := [3]int{ceilDiv(cands, scoreTE), min(ceilDiv(queries, scoreTQ), d.gridY), 1}
	return d.launch("score_all", w, grid, [3]int{scoreThreads, 1, 1},
		ptr(dist), ptr(qtab), ptr(etab), i32(queries), i32(cands), i32(dim), f32(lambda))
}

const ranksThreads = 64 // threads per query in filtered_ranks

// FilteredRanks computes the filtered rank of every hard answer of every query from the
// scores [queries][cands] (higher is better), as pkg/eval.Ranker does: hard answers
// hard[hardStart[q]:hardStart[q+1]] and all answers (easy and hard, which filter)
// ans[ansStart[q]:ansStart[q+1]] of query q, in CSR form. ranks [len(hard)] receives
// each rank, or 0 for every hard answer of a query whose scores hold a NaN. The answer
// lists must be valid (ids in range, no repeats, easy and hard disjoint): the host
// checks them; the device does not.
func (d *Device) FilteredRanks(ranks *I32, scores *F32, hardStart, hard, ansStart, ans *I32, queries, cands int) error {
	c := check{op: "FilteredRanks"}
	c.nonneg(queries, cands)
	c.f("scores", scores, queries*cands)
	c.i("hardStart", hardStart, queries+1)
	c.i("ansStart", ansStart, queries+1)
	c.i("ranks", ranks, hard.Len())
	if c.err != nil || queries == 0 || hard.Len() == 0 {
		return c.err
	}
	// Reads every score and the answer lists, writes a rank per hard answer; a
	// comparison per (hard answer, entity) at most: counted once per score (the least).
	w := Work{Bytes: words(queries*cands, 2*(queries+1), hard.Len(), ans.Len(), hard.Len()), FLOPs: flops(queries*cands, 1)}
	return d.launch("filtered_ranks", w, [3]int{min(queries, d.maxBlocks), 1, 1}, [3]int{ranksThreads, 1, 1},
		ptr(ranks), ptr(scores), ptr(hardStart), ptr(hard), ptr(ansStart), ptr(ans), i32(queries), i32(cands))
}
