package cudamodel

import (
	"fmt"

	"github.com/rocone/rocone/pkg/compute/cuda"
	"github.com/rocone/rocone/pkg/model"
)

// slab packs a step's host arrays into one upload.
type slab[T int32 | float32] struct {
	data []T
	offs [][2]int // offset, length of each part
}

func (s *slab[T]) add(x []T) int {
	s.offs = append(s.offs, [2]int{len(s.data), len(x)})
	s.data = append(s.data, x...)
	return len(s.offs) - 1
}

// upload copies the slab into an arena buffer and returns a view per part.
func upload[T int32 | float32](a *cuda.Arena, s *slab[T]) ([]*cuda.Buffer[T], error) {
	buf, err := cuda.Take[T](a, max(len(s.data), 1))
	if err != nil {
		return nil, err
	}
	if err := buf.Upload(s.data); err != nil {
		return nil, err
	}
	views := make([]*cuda.Buffer[T], len(s.offs))
	for i, o := range s.offs {
		views[i] = buf.Slice(o[0], o[1])
	}
	return views, nil
}

// rowIndex is where a gather's CSR index lives in the int slab.
type rowIndex struct{ rows, start, pairs, n int }

func addIndex(s *slab[int32], ix cuda.RowIndex) rowIndex {
	return rowIndex{rows: s.add(ix.Rows), start: s.add(ix.Start), pairs: s.add(ix.Pairs), n: len(ix.Rows)}
}

func (r rowIndex) on(v []*cuda.I32) cuda.DeviceRowIndex {
	return cuda.DeviceRowIndex{Rows: v[r.rows], Start: v[r.start], Pairs: v[r.pairs], N: r.n}
}

// groupSlots are a group's parts of the uploads.
type groupSlots struct {
	anchors, rels   []int      // ids per slot
	anchorIx, relIx []rowIndex // their CSR indices
	cand            int
	candIx          rowIndex
}

// stepState is what a plan step's backward needs.
type stepState struct {
	relAxis, relAperture, relShift *cuda.F32 // projection: the gathered relation rows
	x, h1, h2                      *cuda.F32 // ConE's MLP: input and hidden layers
	inter                          *cuda.IntersectState
	inCat                          cuda.Cones // intersection: its inputs back to back
}

// scratch hands out an update's temporaries from the arena and keeps the first error, so
// that a sequence of enqueues reads straight and is checked once.
type scratch struct {
	a   *cuda.Arena
	dim int
	err error
}

func (s *scratch) take(n int) *cuda.F32 {
	if s.err != nil {
		return nil
	}
	buf, err := cuda.Take[float32](s.a, n)
	s.err = err
	return buf
}

func (s *scratch) takeI(n int) *cuda.I32 {
	if s.err != nil {
		return nil
	}
	buf, err := cuda.Take[int32](s.a, n)
	s.err = err
	return buf
}

func (s *scratch) cones(n int) cuda.Cones {
	return cuda.Cones{Axis: s.take(n * s.dim), Half: s.take(n * s.dim), N: n, Dim: s.dim}
}

func (s *scratch) ok(e error) {
	if s.err == nil && e != nil {
		s.err = e
	}
}

// angleTables are the parameter tables mapped to angles (π·tanh(x/R)) for one update.
type angleTables struct {
	ent, relAxis, relAperture *cuda.F32 // relAperture nil for rocone-se and ConE
}

// groupRun is one group's forward pass: every step's cone and what its backward needs.
type groupRun struct {
	cones  []cuda.Cones
	states []stepState
	dist   []*cuda.F32 // training: per branch [n][K]
	logits *cuda.F32   // training: [nb][n][K]
	arg    *cuda.I32
}

// forward enqueues group g's plan: run.cones[c] is cone c of every query of the group.
// dropout applies the group's masks (training); without it none (evaluation).
func (m *Model) forward(s *scratch, g *group, sl *groupSlots, iv []*cuda.I32, th angleTables, run *groupRun, dropout bool) error {
	dev, d, n := m.dev, m.cfg.Dim, g.n
	proj := m.p.proj
	run.cones = make([]cuda.Cones, g.plan.NumCones())
	run.states = make([]stepState, len(g.steps))
	for i, st := range g.steps {
		out, ss := s.cones(n), &run.states[i]
		if s.err != nil {
			return s.err
		}
		switch st.Kind {
		case model.StepAnchor:
			s.ok(dev.GatherRows(out.Axis, th.ent, iv[sl.anchors[st.Slot]], d)) // half-aperture 0
		case model.StepProject:
			in, ids := run.cones[st.In[0]], iv[sl.rels[st.Slot]]
			ss.relAxis = s.take(n * d)
			s.ok(dev.GatherRows(ss.relAxis, th.relAxis, ids, d))
			if th.relAperture != nil {
				ss.relAperture = s.take(n * d)
				s.ok(dev.GatherRows(ss.relAperture, th.relAperture, ids, d))
			}
			if m.p.relShift != nil {
				ss.relShift = s.take(n * d)
				s.ok(dev.GatherRows(ss.relShift, m.p.relShift, ids, d))
			}
			if s.err != nil {
				return s.err
			}
			if m.cfg.Variant != model.ConE {
				s.ok(dev.RotateForward(rotation(m.cfg.Variant), out, in, ss.relAxis, ss.relAperture, ss.relShift))
				break
			}
			hid := proj[1].Len()
			ss.x, ss.h1, ss.h2 = s.take(n*2*d), s.take(n*hid), s.take(n*hid)
			y := s.take(n * 2 * d)
			if s.err != nil {
				return s.err
			}
			s.ok(dev.MLPInput(ss.x, in, ss.relAxis, ss.relAperture))
			s.ok(dev.LinearForward(ss.h1, ss.x, proj[0], proj[1], n, 2*d, hid))
			s.ok(dev.ReLUForward(ss.h1))
			s.ok(dev.LinearForward(ss.h2, ss.h1, proj[2], proj[3], n, hid, hid))
			s.ok(dev.ReLUForward(ss.h2))
			s.ok(dev.LinearForward(y, ss.h2, proj[4], proj[5], n, hid, 2*d))
			s.ok(dev.MLPOutput(out, y))
		case model.StepNegate:
			s.ok(dev.NegateForward(out, run.cones[st.In[0]]))
		case model.StepIntersect:
			nb := len(st.In)
			ss.inCat = s.cones(nb * n)
			if s.err != nil {
				return s.err
			}
			for j, c := range st.In {
				s.ok(ss.inCat.Axis.Slice(j*n*d, n*d).CopyFrom(run.cones[c].Axis))
				s.ok(ss.inCat.Half.Slice(j*n*d, n*d).CopyFrom(run.cones[c].Half))
			}
			var mask *cuda.F32
			if dropout && g.masks[i].on {
				mk := g.masks[i]
				mask = s.take(nb * n * d)
				if s.err == nil {
					s.ok(dev.DropoutMask(mask, mk.seed, mk.threshold, mk.keep))
				}
			}
			if s.err == nil {
				ss.inter, s.err = dev.IntersectForward(m.p.inter, out, ss.inCat, nb, mask)
			}
		}
		if s.err != nil {
			return fmt.Errorf("step %d of %s: %w", i, g.plan.Structure, s.err)
		}
		run.cones[st.Out] = out
	}
	return nil
}

// step enqueues the update: uploads, forward, loss, backward, Adam.
func (m *Model) step(b *model.Batch, groups []*group, stats *cuda.F64) error {
	dev, cfg := m.dev, m.cfg
	d, k := cfg.Dim, b.NumNegative
	K, Q := k+1, len(b.Queries)
	R := float32(cfg.EmbeddingRange())
	lambda, gamma := float32(cfg.CenterReg), float32(cfg.Gamma)
	s := &scratch{a: m.arena, dim: d}

	// Host: the index arrays and their CSR groupings, and the weights (in group order), in
	// two uploads. The dropout masks are made on the device from their seeds.
	var ints slab[int32]
	var floats slab[float32]
	slots := m.slots(&ints, groups, true)
	w := make([]float32, 0, Q)
	for _, g := range groups {
		for _, q := range g.queries {
			w = append(w, float32(b.Weight[q]))
		}
	}
	wSlot := floats.add(w)
	iv, err := upload(m.arena, &ints)
	if err != nil {
		return err
	}
	fv, err := upload(m.arena, &floats)
	if err != nil {
		return err
	}

	// The angle tables, mapped once for this update, and their gradients.
	th := m.angles(s)
	dThEnt := s.take(m.p.entity.Len())
	dThRelAxis := s.take(m.p.relAxis.Len())
	var dThRelAp *cuda.F32
	if th.relAperture != nil {
		dThRelAp = s.take(m.p.relAperture.Len())
	}
	if s.err != nil {
		return s.err
	}

	// Forward, group by group.
	runs := make([]groupRun, len(groups))
	pos, neg := s.take(Q), s.take(Q*k)
	for gi, g := range groups {
		sl, run, n := &slots[gi], &runs[gi], g.n
		if err := m.forward(s, g, sl, iv, th, run, true); err != nil {
			return err
		}
		// Scores: per branch γ − m·dist, the max over branches, then pos/neg.
		branches := g.plan.Branches()
		nb := len(branches)
		run.logits, run.arg = s.take(nb*n*K), s.takeI(n*K)
		score := s.take(n * K)
		cand := iv[sl.cand]
		for br, c := range branches {
			dist := s.take(n * K)
			if s.err != nil {
				return s.err
			}
			s.ok(dev.DistanceForward(dist, run.cones[c].Axis, run.cones[c].Half, th.ent, cand, n, K, d, lambda))
			s.ok(dev.LogitForward(run.logits.Slice(br*n*K, n*K), dist, m.p.modulus, gamma))
			run.dist = append(run.dist, dist)
		}
		if s.err != nil {
			return s.err
		}
		s.ok(dev.UnionMaxForward(score, run.arg, run.logits, nb))
		s.ok(dev.SplitScores(pos.Slice(g.off, n), neg.Slice(g.off*k, n*k), score, n, K))
		if s.err != nil {
			return s.err
		}
	}

	// The loss and its gradient.
	dPos, dNeg := s.take(Q), s.take(Q*k)
	if s.err != nil {
		return s.err
	}
	wBuf := fv[wSlot]
	s.ok(dev.LossForward(stats, pos, neg, wBuf, Q, k))
	s.ok(dev.LossBackward(dPos, dNeg, pos, neg, wBuf, stats, Q, k, 1))

	// Backward, group by group, each plan in reverse.
	proj := m.p.proj
	for gi, g := range groups {
		sl, run, n := &slots[gi], &runs[gi], g.n
		branches := g.plan.Branches()
		nb := len(branches)
		dScore, dLogits := s.take(n*K), s.take(nb*n*K)
		dc := make([]cuda.Cones, len(run.cones))
		for i := range dc {
			dc[i] = s.cones(n)
		}
		if s.err != nil {
			return s.err
		}
		s.ok(dev.SplitScoresBackward(dScore, dPos.Slice(g.off, n), dNeg.Slice(g.off*k, n*k), n, K))
		s.ok(dev.UnionMaxBackward(dLogits, dScore, run.arg))
		cand, candIx := iv[sl.cand], sl.candIx.on(iv)
		ci := &cuda.CandIndex{Rows: candIx.Rows, Start: candIx.Start, Pairs: candIx.Pairs, N: candIx.N}
		for br, c := range branches {
			dDist := s.take(n * K)
			if s.err != nil {
				return s.err
			}
			s.ok(dev.LogitBackward(dDist, m.g.modulus, dLogits.Slice(br*n*K, n*K), run.dist[br], m.p.modulus))
			cc := run.cones[c]
			s.ok(dev.DistanceBackward(dc[c].Axis, dc[c].Half, dThEnt, dDist, cc.Axis, cc.Half, th.ent, cand, ci, n, K, d, lambda))
		}
		for i := len(g.steps) - 1; i >= 0; i-- {
			st, ss := g.steps[i], &run.states[i]
			dOut := dc[st.Out]
			switch st.Kind {
			case model.StepAnchor:
				s.ok(dev.RowsSum(dThEnt, dOut.Axis, sl.anchorIx[st.Slot].on(iv), d))
			case model.StepProject:
				in, out, ix := run.cones[st.In[0]], run.cones[st.Out], sl.relIx[st.Slot].on(iv)
				dRelAxis := s.take(n * d)
				var dRelAp, dRelShift *cuda.F32
				if ss.relAperture != nil {
					dRelAp = s.take(n * d)
				}
				if ss.relShift != nil {
					dRelShift = s.take(n * d)
				}
				if s.err != nil {
					return s.err
				}
				if cfg.Variant != model.ConE {
					s.ok(dev.RotateBackward(rotation(cfg.Variant), dc[st.In[0]], dRelAxis, dRelAp, dRelShift, dOut, in, out, ss.relAperture))
				} else {
					hid := proj[1].Len()
					gp := m.g.proj
					dy, dh1, dh2, dx := s.take(n*2*d), s.take(n*hid), s.take(n*hid), s.take(n*2*d)
					if s.err != nil {
						return s.err
					}
					s.ok(dev.MLPOutputBackward(dy, dOut, out))
					s.ok(dev.LinearBackward(dh2, gp[4], gp[5], dy, ss.h2, proj[4], n, hid, 2*d))
					s.ok(dev.ReLUBackward(dh2, ss.h2))
					s.ok(dev.LinearBackward(dh1, gp[2], gp[3], dh2, ss.h1, proj[2], n, hid, hid))
					s.ok(dev.ReLUBackward(dh1, ss.h1))
					s.ok(dev.LinearBackward(dx, gp[0], gp[1], dh1, ss.x, proj[0], n, 2*d, hid))
					s.ok(dev.MLPInputBackward(dc[st.In[0]], dRelAxis, dRelAp, dx, n, d))
				}
				s.ok(dev.RowsSum(dThRelAxis, dRelAxis, ix, d))
				if dRelAp != nil {
					s.ok(dev.RowsSum(dThRelAp, dRelAp, ix, d))
				}
				if dRelShift != nil {
					s.ok(dev.RowsSum(m.g.relShift, dRelShift, ix, d))
				}
			case model.StepNegate:
				s.ok(dev.NegateBackward(dc[st.In[0]], dOut))
			case model.StepIntersect:
				nb := len(st.In)
				dIn := s.cones(nb * n)
				if s.err != nil {
					return s.err
				}
				s.ok(dev.IntersectBackward(m.p.inter, m.g.inter, ss.inter, dIn, dOut, ss.inCat))
				for j, c := range st.In {
					s.ok(dev.Add(dc[c].Axis, dIn.Axis.Slice(j*n*d, n*d)))
					s.ok(dev.Add(dc[c].Half, dIn.Half.Slice(j*n*d, n*d)))
				}
			}
			if s.err != nil {
				return fmt.Errorf("backward step %d of %s: %w", i, g.plan.Structure, s.err)
			}
		}
	}

	// Through the angle maps into the raw tables, then Adam (which clears the gradients).
	s.ok(dev.AngleBackward(m.g.entity, dThEnt, th.ent, R))
	s.ok(dev.AngleBackward(m.g.relAxis, dThRelAxis, th.relAxis, R))
	if dThRelAp != nil {
		s.ok(dev.AngleBackward(m.g.relAperture, dThRelAp, th.relAperture, R))
	}
	if s.err != nil || m.keepGrads {
		return s.err
	}
	return m.adam.Step(true)
}

// slots adds the groups' id arrays (and, for training, their CSR indices and candidates)
// to the int slab.
func (m *Model) slots(ints *slab[int32], groups []*group, training bool) []groupSlots {
	slots := make([]groupSlots, len(groups))
	for gi, g := range groups {
		sl := &slots[gi]
		for _, ids := range g.anchors {
			sl.anchors = append(sl.anchors, ints.add(ids))
			if training {
				sl.anchorIx = append(sl.anchorIx, addIndex(ints, cuda.RowCSR(ids, m.cfg.NumEntities, m.count)))
			}
		}
		for _, ids := range g.rels {
			sl.rels = append(sl.rels, ints.add(ids))
			if training {
				sl.relIx = append(sl.relIx, addIndex(ints, cuda.RowCSR(ids, m.cfg.NumRelations, m.count)))
			}
		}
		if training {
			sl.cand = ints.add(g.cand)
			sl.candIx = addIndex(ints, cuda.RowCSR(g.cand, m.cfg.NumEntities, m.count))
		}
	}
	return slots
}

// angles maps the entity and relation tables to angles.
func (m *Model) angles(s *scratch) angleTables {
	R := float32(m.cfg.EmbeddingRange())
	th := angleTables{ent: s.take(m.p.entity.Len()), relAxis: s.take(m.p.relAxis.Len())}
	if m.p.relAperture != nil {
		th.relAperture = s.take(m.p.relAperture.Len())
	}
	if s.err != nil {
		return th
	}
	s.ok(m.dev.AngleForward(th.ent, m.p.entity, R))
	s.ok(m.dev.AngleForward(th.relAxis, m.p.relAxis, R))
	if th.relAperture != nil {
		s.ok(m.dev.AngleForward(th.relAperture, m.p.relAperture, R))
	}
	return th
}

// rotation is the device's aperture rule for a rotating variant.
func rotation(v model.Variant) cuda.Rotation {
	switch v {
	case model.RoConETrunc:
		return cuda.RotateTrunc
	case model.RoConESE:
		return cuda.RotateSE
	default:
		return cuda.RotateFold
	}
}
