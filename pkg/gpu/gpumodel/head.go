package gpumodel

import (
	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/model"
)

// lossHead is the training head's layout: every query's DNF branch roots scored against
// its candidates (positive first) in one batch, and the loss from their distances
// (gpu.LossHeadForward: the logits, the max over branches and the loss in one pass), as
// pkg/model's LossTape computes it group by group.
//
// The queries are ordered by class (the groups with the same number of DNF branches),
// and a class's root cones as [nb][q], so that all branches of all queries are scored in
// one launch.
type lossHead struct {
	classes  []gpu.LossClass
	Q, k     int
	roots    int // root rows: Σ nb·q over the classes
	rootIdx  int // ints part [2·roots]: the table rows of the roots (axes, then half-apertures)
	scatter  rowIndex
	cand     int // ints part [roots][K]: each root row's candidates
	candIx   rowIndex
	table    int      // ints part: the classes (gpu.LossClassTable)
	weight   int      // floats part [Q]: the subsampling weights, in class order
	stats    *gpu.F64 // where the loss goes
	rootsBuf *gpu.F32
	dist     *gpu.F32
}

// layoutLoss lays out the loss head of batch b into the walk's slabs; the loss will go to
// stats.
func (w *devWalk) layoutLoss(b *model.Batch, stats *gpu.F64) *lossHead {
	m := w.m
	h := &lossHead{k: b.NumNegative, stats: stats}
	byNB := map[int][]int{}
	var nbs []int
	for gi, g := range w.groups {
		nb := len(g.plan.Branches())
		if _, ok := byNB[nb]; !ok {
			nbs = append(nbs, nb)
		}
		byNB[nb] = append(byNB[nb], gi)
	}
	hb := &m.hostBufs
	rows, cand, weight := hb.rows[:0], hb.cand[:0], hb.weight[:0]
	for _, nb := range nbs {
		c := gpu.LossClass{Branches: nb, QueryOff: h.Q, RootOff: len(rows)}
		for _, gi := range byNB[nb] {
			c.Queries += w.groups[gi].n
			for _, q := range w.groups[gi].queries {
				weight = append(weight, float32(b.Weight[q]))
			}
		}
		for br := range nb {
			for _, gi := range byNB[nb] {
				g := w.groups[gi]
				root := w.at[gi][g.plan.Branches()[br]]
				for r := range g.n {
					rows = append(rows, int32(root+r))
				}
				cand = append(cand, g.cand...)
			}
		}
		h.Q += c.Queries
		h.classes = append(h.classes, c)
	}
	h.roots = len(rows)
	rows = append(rows, rows...)
	for i := h.roots; i < len(rows); i++ {
		rows[i] += int32(w.rows)
	}
	h.rootIdx = w.ints.add(rows)
	h.scatter = w.addCSR(rows, 2*w.rows)
	h.cand = w.ints.add(cand)
	h.candIx = w.addCSR(cand, m.cfg.NumEntities)
	h.weight = w.floats.add(weight)
	hb.classes = gpu.LossClassTable(hb.classes[:0], h.classes)
	h.table = w.ints.add(hb.classes)
	hb.rows, hb.cand, hb.weight = rows, cand, weight // copied into the slabs: reusable
	return h
}

// layout is the head's gpu.LossHead, its class table on the device.
func (h *lossHead) layout(w *devWalk) gpu.LossHead {
	return gpu.LossHead{Classes: h.classes, Table: w.iv[h.table], Q: h.Q, K: h.k + 1}
}

// forward scores the roots against their candidates and enqueues the loss into h.stats.
func (h *lossHead) forward(w *devWalk) error {
	m, s := w.m, w.s
	dev, d, K := m.dev, m.cfg.Dim, h.k+1
	h.rootsBuf, h.dist = s.take(2*h.roots*d), s.take(h.roots*K)
	if s.err != nil {
		return s.err
	}
	roots := w.cones(h.rootsBuf, h.roots, 0, h.roots)
	s.ok(dev.GatherRows(h.rootsBuf, w.table, w.iv[h.rootIdx], d))
	// From the entities' half-angle table where the model keeps one (Model.entSC, as in
	// backward), else from the angles.
	if m.entSC != nil {
		s.ok(dev.DistanceForwardETab(h.dist, roots.Axis, roots.Half, w.th.ent, m.entSC, w.iv[h.cand], h.roots, K, d, float32(m.cfg.CenterReg)))
	} else {
		s.ok(dev.DistanceForward(h.dist, roots.Axis, roots.Half, w.th.ent, w.iv[h.cand], h.roots, K, d, float32(m.cfg.CenterReg)))
	}
	s.ok(dev.LossHeadForward(h.stats, h.dist, m.p.modulus, w.fv[h.weight], h.layout(w), float32(m.cfg.Gamma)))
	return s.err
}

// backward enqueues the loss's gradient down to the roots' cones, the entity angles and
// the modulus.
func (h *lossHead) backward(w *devWalk) error {
	m, s := w.m, w.s
	dev, d, K := m.dev, m.cfg.Dim, h.k+1
	dDist, dRootsBuf := s.take(h.roots*K), s.take(2*h.roots*d)
	if s.err != nil {
		return s.err
	}
	s.ok(dev.LossHeadBackward(dDist, m.g.modulus, h.dist, m.p.modulus, w.fv[h.weight], h.stats, h.layout(w), float32(m.cfg.Gamma), 1))
	roots, dRoots := w.cones(h.rootsBuf, h.roots, 0, h.roots), w.cones(dRootsBuf, h.roots, 0, h.roots)
	candIx := h.candIx.on(w.iv)
	// The candidates' side from the table of the entities' half-angle sines and cosines
	// that comes with the angles (Model.entSC: the same bits as from the angles, a third
	// fewer instructions in the issue-bound backward for twice the gathered bytes), or,
	// with that table reverted (gpu.Reverts.EntityTable), from the angles.
	if m.entSC != nil {
		s.ok(dev.DistanceBackwardETab(dRoots.Axis, dRoots.Half, w.dThEnt, dDist, roots.Axis, roots.Half, w.th.ent, m.entSC,
			w.iv[h.cand], &candIx, h.roots, K, d, float32(m.cfg.CenterReg)))
	} else {
		s.ok(dev.DistanceBackward(dRoots.Axis, dRoots.Half, w.dThEnt, dDist, roots.Axis, roots.Half, w.th.ent,
			w.iv[h.cand], &candIx, h.roots, K, d, float32(m.cfg.CenterReg)))
	}
	s.ok(dev.RowsSum(w.dTable, dRootsBuf, h.scatter.on(w.iv), d))
	return s.err
}
