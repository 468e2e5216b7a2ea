package gpumodel

import (
	"fmt"

	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/query"
)

// RankBatch computes the filtered rank of every hard answer of every query (docs/queries.md
// §5), the whole evaluation on the device: the queries are embedded by the same forward
// pass as training's (without dropout), scored against every entity from half-angle
// tables (gpu.DistanceAll), turned into logits γ − m·dist with the maximum over DNF
// branches, and ranked there (gpu.FilteredRanks). Only the ids go up and only the
// ranks come back, so the host's share is small and the scores never cross the bus.
//
// It computes what pkg/model's Scorer and pkg/eval's Ranker compute on the CPU, up to
// the float rounding of the distance (whose order of summation differs), which can move
// a rank where two scores are within rounding of each other. easy and hard are each
// query's answer lists, which must be valid (ids in range, no repeats, disjoint; the
// caller checks: pkg/eval.RankQueries does); the ranks are in the order of hard.
//
// It implements pkg/eval.BatchRanker. It waits for the device, and is not safe for
// concurrent use.
func (m *Model) RankBatch(queries []query.Grounded, easy, hard [][]int32) ([][]int32, error) {
	if len(easy) != len(queries) || len(hard) != len(queries) {
		return nil, fmt.Errorf("gpumodel: RankBatch: %d queries, %d easy and %d hard answer lists", len(queries), len(easy), len(hard))
	}
	out := make([][]int32, len(queries))
	if len(queries) == 0 {
		return out, nil
	}
	groups, err := m.group(queries)
	if err != nil {
		return nil, err
	}
	if err := m.arena.Reset(); err != nil {
		return nil, err
	}
	m.dev.UseArena(m.arena)
	defer m.dev.UseArena(nil)

	// The walk's ids, and the answers in CSR form, rows in group order; one upload.
	w, err := m.newWalk(groups, false)
	if err != nil {
		return nil, err
	}
	B, N := len(queries), m.cfg.NumEntities
	hardStart, ansStart := make([]int32, 1, B+1), make([]int32, 1, B+1)
	var hardIDs, ansIDs []int32
	for _, g := range groups {
		for _, q := range g.queries {
			hardIDs = append(hardIDs, hard[q]...)
			ansIDs = append(append(ansIDs, easy[q]...), hard[q]...)
			hardStart, ansStart = append(hardStart, int32(len(hardIDs))), append(ansStart, int32(len(ansIDs)))
		}
	}
	for _, id := range ansIDs {
		if id < 0 || int(id) >= N {
			return nil, fmt.Errorf("gpumodel: RankBatch: answer %d out of range [0,%d)", id, N)
		}
	}
	hsSlot, hSlot, asSlot, aSlot := w.ints.add(hardStart), w.ints.add(hardIDs), w.ints.add(ansStart), w.ints.add(ansIDs)
	if err := w.upload(); err != nil {
		return nil, err
	}
	iv := w.iv

	dev, s := m.dev, w.s
	w.th = m.angles(s)
	if err := w.allocate(); err != nil {
		return nil, err
	}
	rh := &rankHead{}
	w.head = rh
	if err := w.walk.Forward(w); err != nil {
		return nil, err
	}
	scores := rh.scores
	ranks := s.takeI(max(len(hardIDs), 1))
	if s.err != nil {
		return nil, s.err
	}
	if err := dev.FilteredRanks(ranks, scores, iv[hsSlot], iv[hSlot], iv[asSlot], iv[aSlot], B, N); err != nil {
		return nil, err
	}
	all := make([]int32, len(hardIDs))
	if err := ranks.Slice(0, len(all)).Download(all); err != nil {
		return nil, err
	}
	for _, g := range groups {
		for _, q := range g.queries {
			out[q], all = all[:len(hard[q]):len(hard[q])], all[len(hard[q]):]
			for _, v := range out[q] {
				if v == 0 {
					return nil, fmt.Errorf("gpumodel: query %d (%s): a score is NaN", q, g.plan.Structure)
				}
			}
		}
	}
	return out, nil
}

// rankHead scores every query against every entity: per group and DNF branch the
// distances from half-angle tables (gpu.DistanceAll), the logits γ − m·dist, and the max
// over branches, into scores [queries][entities] in group order.
type rankHead struct{ scores *gpu.F32 }

func (h *rankHead) forward(w *devWalk) error {
	m, s := w.m, w.s
	dev, d, N := m.dev, m.cfg.Dim, m.cfg.NumEntities
	lambda, gamma := float32(m.cfg.CenterReg), float32(m.cfg.Gamma)
	B := 0
	for _, g := range w.groups {
		B += g.n
	}
	etab := s.take(2 * m.p.entity.Len())
	h.scores = s.take(B * N)
	if s.err != nil {
		return s.err
	}
	s.ok(dev.EntityHalfAngles(etab, w.th.ent))
	for gi, g := range w.groups {
		branches, n := g.plan.Branches(), g.n
		nb := len(branches)
		rows := h.scores.Slice(g.off*N, n*N)
		logits := rows // one branch: the logits are the scores
		var arg *gpu.I32
		if nb > 1 {
			logits, arg = s.take(nb*n*N), s.takeI(n*N)
		}
		qtab := s.take(n * d * gpu.QueryTableWidth)
		for br, c := range branches {
			dist := logits.Slice(br*n*N, n*N) // γ − m·dist is computed in place
			if s.err != nil {
				return s.err
			}
			cone := w.cone(gi, c)
			s.ok(dev.QueryHalfAngles(qtab, cone.Axis, cone.Half))
			s.ok(dev.DistanceAll(dist, qtab, etab, n, N, d, lambda))
			s.ok(dev.LogitForward(dist, dist, m.p.modulus, gamma))
		}
		if nb > 1 {
			s.ok(dev.UnionMaxForward(rows, arg, logits, nb))
		}
		if s.err != nil {
			return fmt.Errorf("scoring %s: %w", g.plan.Structure, s.err)
		}
	}
	return nil
}

func (h *rankHead) backward(*devWalk) error {
	return fmt.Errorf("gpumodel: ranking has no backward pass")
}
