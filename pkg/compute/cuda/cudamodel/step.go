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

// step enqueues the update: uploads, forward, loss, backward, Adam.
func (m *Model) step(b *model.Batch, groups []*group, stats *cuda.F64) error {
	dev, a, cfg := m.dev, m.arena, m.cfg
	d, k := cfg.Dim, b.NumNegative
	K, Q := k+1, len(b.Queries)
	R := float32(cfg.EmbeddingRange())
	lambda, gamma := float32(cfg.CenterReg), float32(cfg.Gamma)
	rotates := cfg.Variant != model.ConE

	// Host: the index arrays and their CSR groupings, and the weights (in group order), in
	// two uploads. The dropout masks are made on the device from their seeds.
	var ints slab[int32]
	var floats slab[float32]
	slots := make([]groupSlots, len(groups))
	for gi, g := range groups {
		sl := &slots[gi]
		for _, ids := range g.anchors {
			sl.anchors = append(sl.anchors, ints.add(ids))
			sl.anchorIx = append(sl.anchorIx, addIndex(&ints, cuda.RowCSR(ids, cfg.NumEntities, m.count)))
		}
		for _, ids := range g.rels {
			sl.rels = append(sl.rels, ints.add(ids))
			sl.relIx = append(sl.relIx, addIndex(&ints, cuda.RowCSR(ids, cfg.NumRelations, m.count)))
		}
		sl.cand = ints.add(g.cand)
		sl.candIx = addIndex(&ints, cuda.RowCSR(g.cand, cfg.NumEntities, m.count))
	}
	w := make([]float32, 0, Q)
	for _, g := range groups {
		for _, q := range g.queries {
			w = append(w, float32(b.Weight[q]))
		}
	}
	wSlot := floats.add(w)
	iv, err := upload(a, &ints)
	if err != nil {
		return err
	}
	fv, err := upload(a, &floats)
	if err != nil {
		return err
	}

	take := func(n int) *cuda.F32 {
		if err != nil {
			return nil
		}
		var buf *cuda.F32
		buf, err = cuda.Take[float32](a, n)
		return buf
	}
	cones := func(n int) cuda.Cones { return cuda.Cones{Axis: take(n * d), Half: take(n * d), N: n, Dim: d} }
	ok := func(e error) {
		if err == nil && e != nil {
			err = e
		}
	}

	// The angle tables, mapped once for this update, and their gradients.
	thEnt := take(m.p.entity.Len())
	dThEnt := take(m.p.entity.Len())
	var thRelAxis, dThRelAxis, thRelAp, dThRelAp *cuda.F32
	thRelAxis, dThRelAxis = take(m.p.relAxis.Len()), take(m.p.relAxis.Len())
	if m.p.relAperture != nil {
		thRelAp, dThRelAp = take(m.p.relAperture.Len()), take(m.p.relAperture.Len())
	}
	if err != nil {
		return err
	}
	ok(dev.AngleForward(thEnt, m.p.entity, R))
	ok(dev.AngleForward(thRelAxis, m.p.relAxis, R))
	if thRelAp != nil {
		ok(dev.AngleForward(thRelAp, m.p.relAperture, R))
	}

	// Forward, group by group.
	type groupRun struct {
		cones  []cuda.Cones
		states []stepState
		dist   []*cuda.F32 // per branch [n][K]
		logits *cuda.F32   // [nb][n][K]
		arg    *cuda.I32
	}
	runs := make([]groupRun, len(groups))
	pos, neg := take(Q), take(Q*k)
	proj := m.p.proj
	for gi, g := range groups {
		sl, run, n := &slots[gi], &runs[gi], g.n
		run.cones = make([]cuda.Cones, g.plan.NumCones())
		run.states = make([]stepState, len(g.steps))
		for i, st := range g.steps {
			out, ss := cones(n), &run.states[i]
			if err != nil {
				return err
			}
			switch st.Kind {
			case model.StepAnchor:
				ok(dev.GatherRows(out.Axis, thEnt, iv[sl.anchors[st.Slot]], d)) // half-aperture 0
			case model.StepProject:
				in, ids := run.cones[st.In[0]], iv[sl.rels[st.Slot]]
				ss.relAxis = take(n * d)
				ok(dev.GatherRows(ss.relAxis, thRelAxis, ids, d))
				if thRelAp != nil {
					ss.relAperture = take(n * d)
					ok(dev.GatherRows(ss.relAperture, thRelAp, ids, d))
				}
				if m.p.relShift != nil {
					ss.relShift = take(n * d)
					ok(dev.GatherRows(ss.relShift, m.p.relShift, ids, d))
				}
				if err != nil {
					return err
				}
				if rotates {
					ok(dev.RotateForward(rotation(cfg.Variant), out, in, ss.relAxis, ss.relAperture, ss.relShift))
					break
				}
				hid := proj[1].Len()
				ss.x, ss.h1, ss.h2 = take(n*2*d), take(n*hid), take(n*hid)
				y := take(n * 2 * d)
				if err != nil {
					return err
				}
				ok(dev.MLPInput(ss.x, in, ss.relAxis, ss.relAperture))
				ok(dev.LinearForward(ss.h1, ss.x, proj[0], proj[1], n, 2*d, hid))
				ok(dev.ReLUForward(ss.h1))
				ok(dev.LinearForward(ss.h2, ss.h1, proj[2], proj[3], n, hid, hid))
				ok(dev.ReLUForward(ss.h2))
				ok(dev.LinearForward(y, ss.h2, proj[4], proj[5], n, hid, 2*d))
				ok(dev.MLPOutput(out, y))
			case model.StepNegate:
				ok(dev.NegateForward(out, run.cones[st.In[0]]))
			case model.StepIntersect:
				nb := len(st.In)
				ss.inCat = cones(nb * n)
				if err != nil {
					return err
				}
				for j, c := range st.In {
					ok(ss.inCat.Axis.Slice(j*n*d, n*d).CopyFrom(run.cones[c].Axis))
					ok(ss.inCat.Half.Slice(j*n*d, n*d).CopyFrom(run.cones[c].Half))
				}
				var mask *cuda.F32
				if mk := g.masks[i]; mk.on {
					mask = take(nb * n * d)
					if err == nil {
						ok(dev.DropoutMask(mask, mk.seed, mk.threshold, mk.keep))
					}
				}
				if err == nil {
					ss.inter, err = dev.IntersectForward(m.p.inter, out, ss.inCat, nb, mask)
				}
			}
			if err != nil {
				return fmt.Errorf("step %d of %s: %w", i, g.plan.Structure, err)
			}
			run.cones[st.Out] = out
		}
		// Scores: per branch γ − m·dist, the max over branches, then pos/neg.
		branches := g.plan.Branches()
		nb := len(branches)
		run.logits, run.arg = take(nb*n*K), nil
		score := take(n * K)
		if err != nil {
			return err
		}
		if run.arg, err = cuda.Take[int32](a, n*K); err != nil {
			return err
		}
		cand := iv[sl.cand]
		for br, c := range branches {
			dist := take(n * K)
			if err != nil {
				return err
			}
			ok(dev.DistanceForward(dist, run.cones[c].Axis, run.cones[c].Half, thEnt, cand, n, K, d, lambda))
			ok(dev.LogitForward(run.logits.Slice(br*n*K, n*K), dist, m.p.modulus, gamma))
			run.dist = append(run.dist, dist)
		}
		ok(dev.UnionMaxForward(score, run.arg, run.logits, nb))
		ok(dev.SplitScores(pos.Slice(g.off, n), neg.Slice(g.off*k, n*k), score, n, K))
		if err != nil {
			return err
		}
	}

	// The loss and its gradient.
	dPos, dNeg := take(Q), take(Q*k)
	if err != nil {
		return err
	}
	wBuf := fv[wSlot]
	ok(dev.LossForward(stats, pos, neg, wBuf, Q, k))
	ok(dev.LossBackward(dPos, dNeg, pos, neg, wBuf, stats, Q, k, 1))

	// Backward, group by group, each plan in reverse.
	for gi, g := range groups {
		sl, run, n := &slots[gi], &runs[gi], g.n
		branches := g.plan.Branches()
		nb := len(branches)
		dScore, dLogits := take(n*K), take(nb*n*K)
		dc := make([]cuda.Cones, len(run.cones))
		for i := range dc {
			dc[i] = cones(n)
		}
		if err != nil {
			return err
		}
		ok(dev.SplitScoresBackward(dScore, dPos.Slice(g.off, n), dNeg.Slice(g.off*k, n*k), n, K))
		ok(dev.UnionMaxBackward(dLogits, dScore, run.arg))
		cand, candIx := iv[sl.cand], sl.candIx.on(iv)
		ci := &cuda.CandIndex{Rows: candIx.Rows, Start: candIx.Start, Pairs: candIx.Pairs, N: candIx.N}
		for br, c := range branches {
			dDist := take(n * K)
			if err != nil {
				return err
			}
			ok(dev.LogitBackward(dDist, m.g.modulus, dLogits.Slice(br*n*K, n*K), run.dist[br], m.p.modulus))
			cc := run.cones[c]
			ok(dev.DistanceBackward(dc[c].Axis, dc[c].Half, dThEnt, dDist, cc.Axis, cc.Half, thEnt, cand, ci, n, K, d, lambda))
		}
		for i := len(g.steps) - 1; i >= 0; i-- {
			st, ss := g.steps[i], &run.states[i]
			dOut := dc[st.Out]
			switch st.Kind {
			case model.StepAnchor:
				ok(dev.RowsSum(dThEnt, dOut.Axis, sl.anchorIx[st.Slot].on(iv), d))
			case model.StepProject:
				in, out, ix := run.cones[st.In[0]], run.cones[st.Out], sl.relIx[st.Slot].on(iv)
				dRelAxis := take(n * d)
				var dRelAp, dRelShift *cuda.F32
				if ss.relAperture != nil {
					dRelAp = take(n * d)
				}
				if ss.relShift != nil {
					dRelShift = take(n * d)
				}
				if err != nil {
					return err
				}
				if rotates {
					ok(dev.RotateBackward(rotation(cfg.Variant), dc[st.In[0]], dRelAxis, dRelAp, dRelShift, dOut, in, out, ss.relAperture))
				} else {
					hid := proj[1].Len()
					gp := m.g.proj
					dy, dh1, dh2, dx := take(n*2*d), take(n*hid), take(n*hid), take(n*2*d)
					if err != nil {
						return err
					}
					ok(dev.MLPOutputBackward(dy, dOut, out))
					ok(dev.LinearBackward(dh2, gp[4], gp[5], dy, ss.h2, proj[4], n, hid, 2*d))
					ok(dev.ReLUBackward(dh2, ss.h2))
					ok(dev.LinearBackward(dh1, gp[2], gp[3], dh2, ss.h1, proj[2], n, hid, hid))
					ok(dev.ReLUBackward(dh1, ss.h1))
					ok(dev.LinearBackward(dx, gp[0], gp[1], dh1, ss.x, proj[0], n, 2*d, hid))
					ok(dev.MLPInputBackward(dc[st.In[0]], dRelAxis, dRelAp, dx, n, d))
				}
				ok(dev.RowsSum(dThRelAxis, dRelAxis, ix, d))
				if dRelAp != nil {
					ok(dev.RowsSum(dThRelAp, dRelAp, ix, d))
				}
				if dRelShift != nil {
					ok(dev.RowsSum(m.g.relShift, dRelShift, ix, d))
				}
			case model.StepNegate:
				ok(dev.NegateBackward(dc[st.In[0]], dOut))
			case model.StepIntersect:
				nb := len(st.In)
				dIn := cones(nb * n)
				if err != nil {
					return err
				}
				ok(dev.IntersectBackward(m.p.inter, m.g.inter, ss.inter, dIn, dOut, ss.inCat))
				for j, c := range st.In {
					ok(dev.Add(dc[c].Axis, dIn.Axis.Slice(j*n*d, n*d)))
					ok(dev.Add(dc[c].Half, dIn.Half.Slice(j*n*d, n*d)))
				}
			}
			if err != nil {
				return fmt.Errorf("backward step %d of %s: %w", i, g.plan.Structure, err)
			}
		}
	}

	// Through the angle maps into the raw tables, then Adam (which clears the gradients).
	ok(dev.AngleBackward(m.g.entity, dThEnt, thEnt, R))
	ok(dev.AngleBackward(m.g.relAxis, dThRelAxis, thRelAxis, R))
	if dThRelAp != nil {
		ok(dev.AngleBackward(m.g.relAperture, dThRelAp, thRelAp, R))
	}
	if err != nil || m.keepGrads {
		return err
	}
	return m.adam.Step(true)
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
