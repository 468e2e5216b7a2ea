package gpumodel

import (
	"fmt"
	"slices"

	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/model"
)

// devWalk is the device's model.Executor for one update (training) or one rank batch:
// the model.Walk over the batch's plans runs each operator once per level, for every
// group at once, so an update costs a few launches per level and operator, not per group.
//
// Every cone of the batch lives in one table, [2][rows][d]: all axes, then all
// half-apertures, in the same row order. An operator's outputs at a level are one block
// of rows (its ops' outputs back to back); its inputs, scattered over lower levels, are
// gathered into a staged block per level in one launch (StageForward), and their
// gradients are added back into the gradient table in one launch (StageBackward). All
// index arrays are laid out on the host before anything is launched and go up in one
// copy.
type devWalk struct {
	m      *Model
	s      *scratch
	groups []*group
	walk   *model.Walk
	train  bool    // dropout, and the backward pass
	head   devHead // the loss (training) or the scores (rank)

	ints   slab[int32]
	floats slab[float32]
	iv     []*gpu.I32 // the uploaded parts of ints
	fv     []*gpu.F32 // and of floats
	// tablePart is the floats part holding the cone table when the cones are given
	// (RankBatch with cones: coneTable) instead of walked.
	tablePart int
	th        angleTables

	rows   int     // cone rows in the table
	at     [][]int // per group and cone: the cone's first row
	levels []devLevel

	table, dTable  *gpu.F32 // the cones and (training) their gradients, [2][rows][d]
	dThEnt, dThRel *gpu.F32 // training: the gradients of the angle tables (Model.dTheta)

	// The projections' relation rows of every level, gathered in one launch at the first
	// level's Project (they are parameters, known before the walk), and their gradients
	// summed into the relation tables in one launch at the last ProjectBackward: level l's
	// block is rows devLevel.relRow … of relAll ([nRel][P][d] each, as relIDs).
	relIDs       int      // ints part: every level's relation ids (and + relations: their apertures), level after level
	relIx        rowIndex // training: their CSR over nRel·relations rows
	relRows      int      // rows of relIDs
	relFirst     int      // the lowest level with projections, whose ProjectBackward is the last
	relAll       *gpu.F32 // [relRows][d] the gathered relation angles
	relShiftAll  *gpu.F32 // rocone-se: [relRows][d] the gathered shifts (nRel = 1)
	dRelAll      *gpu.F32 // training: their gradients, as relAll
	dRelShiftAll *gpu.F32
}

// devLevel is one level's layout, and its device buffers while the walk runs.
type devLevel struct {
	out, n [model.NumOperators]int // each operator's first output row, and its rows
	in     [model.NumOperators]int // each operator's first staged input row
	staged int                     // staged input rows M
	stage  int                     // ints part [2M]: the table rows staged (axes, then half-apertures)

	scatter  rowIndex // the staged rows' gradients back into the table (CSR over 2·rows)
	anchors  int      // ints part: the anchors' entity ids, in output row order
	anchorIx rowIndex
	relRow   int // the first row of the level's [nRel][P] relation rows in devWalk.relAll
	inter    levelInter

	stageBuf, dStageBuf                  *gpu.F32 // [2][M][d]
	relAng, relShift, dRelAng, dRelShift *gpu.F32 // [nRel][P][d], [P][d]
	x, h1, h2                            *gpu.F32 // ConE's MLP: its input and hidden layers
}

// levelInter is a level's intersections, as one ragged batch (gpu.Branches): the ops
// sorted by non-increasing branch count, branch j of every op with more than j branches
// staged back to back, each op's dropout mask drawn from its own seed in one launch.
type levelInter struct {
	counts      []int // the ragged layout: outputs with more than j branches
	countsPart  int   // ints part: counts on the device
	segOff      int   // ints part [S+1]: each op's first output (in sorted order)
	seeds       int   // ints part [2S]: each op's dropout seed, low and high 32 bits
	dropout     bool  // the masks are on (training with dropout)
	threshold   uint32
	keep        float32
	state       *gpu.IntersectState
	stagedRows  int // Σ counts
	firstStaged int // the level's first staged row of the intersections' inputs
	firstOut    int // their first output row
	outputs     int // their outputs
}

// newWalk lays out the walk of groups (model.Walk's levels, the cone table, the staging
// and scatter indices, the ids) into the int slab.
func (m *Model) newWalk(groups []*group, train bool) (*devWalk, error) {
	plans := make([]*model.Plan, len(groups))
	w := &devWalk{m: m, s: &scratch{a: m.arena, dim: m.cfg.Dim}, groups: groups, train: train}
	hb := &m.hostBufs
	w.ints = slab[int32]{data: hb.ints[:0], offs: hb.intOffs[:0]}
	w.floats = slab[float32]{data: hb.floats[:0], offs: hb.fltOffs[:0]}
	w.at = make([][]int, len(groups))
	for gi, g := range groups {
		plans[gi] = g.plan
		w.at[gi] = make([]int, g.plan.NumCones())
		w.rows += g.n * g.plan.NumCones()
	}
	w.walk = model.NewWalk(plans)
	w.levels = make([]devLevel, w.walk.NumLevels())
	nRel := 1
	if m.p.relAperture != nil {
		nRel = 2
	}
	nE, nR := m.cfg.NumEntities, m.cfg.NumRelations
	next := 0
	var relIDs []int32
	w.relFirst = -1
	for l := range w.levels {
		lv := &w.levels[l]
		var stage, anchors, rels []int32
		for o := range model.NumOperators {
			lv.out[o], lv.in[o] = next, len(stage)
			ops := w.walk.Ops(l, model.Operator(o))
			if model.Operator(o) == model.OpIntersect {
				stage = w.layoutIntersections(lv, ops, stage, next)
				next += lv.inter.outputs
				lv.n[o] = next - lv.out[o]
				continue
			}
			for _, op := range ops {
				g := groups[op.Group]
				w.at[op.Group][op.Out] = next
				switch model.Operator(o) {
				case model.OpAnchor:
					anchors = append(anchors, g.anchors[op.Slot]...)
				case model.OpProject:
					rels = append(rels, g.rels[op.Slot]...)
				}
				for _, c := range op.In { // none for an anchor, one for a projection or negation
					for r := range g.n {
						stage = append(stage, int32(w.at[op.Group][c]+r))
					}
				}
				next += g.n
			}
			lv.n[o] = next - lv.out[o]
		}
		if lv.staged = len(stage); lv.staged > 0 {
			stage = append(stage, stage...)
			for i := lv.staged; i < len(stage); i++ {
				stage[i] += int32(w.rows)
			}
			lv.stage = w.ints.add(stage)
			if train {
				lv.scatter = w.addCSR(stage, 2*w.rows)
			}
		}
		if len(anchors) > 0 {
			lv.anchors = w.ints.add(anchors)
			if train {
				lv.anchorIx = w.addCSR(anchors, nE)
			}
		}
		if P := len(rels); P > 0 {
			if nRel == 2 {
				rels = append(rels, rels...)
				for i := P; i < 2*P; i++ {
					rels[i] += int32(nR)
				}
			}
			if w.relFirst < 0 {
				w.relFirst = l
			}
			lv.relRow = len(relIDs)
			relIDs = append(relIDs, rels...)
		}
	}
	if w.relRows = len(relIDs); w.relRows > 0 {
		w.relIDs = w.ints.add(relIDs)
		if train {
			w.relIx = w.addCSR(relIDs, nRel*nR)
		}
	}
	if next != w.rows {
		return nil, fmt.Errorf("gpumodel: the walk wrote %d cone rows, the plans have %d", next, w.rows)
	}
	return w, nil
}

// intersects reports whether the walk has an intersection (and so a gradient of the
// intersection's weights).
func (w *devWalk) intersects() bool {
	for _, lv := range w.levels {
		if lv.inter.outputs > 0 {
			return true
		}
	}
	return false
}

// layoutIntersections lays out a level's intersections as one ragged batch whose outputs
// start at table row first, appending their staged input rows to stage.
func (w *devWalk) layoutIntersections(lv *devLevel, ops []model.Op, stage []int32, first int) []int32 {
	li := &lv.inter
	li.firstStaged, li.firstOut = len(stage), first
	if len(ops) == 0 {
		return stage
	}
	sorted := slices.Clone(ops)
	slices.SortStableFunc(sorted, func(a, b model.Op) int { return len(b.In) - len(a.In) })
	segOff := make([]int32, 0, len(sorted)+1)
	seeds := make([]int32, 0, 2*len(sorted))
	next := first
	for _, op := range sorted {
		g := w.groups[op.Group]
		segOff = append(segOff, int32(next-first))
		w.at[op.Group][op.Out] = next
		next += g.n
		mk := g.masks[op.Step]
		if w.train && mk.on {
			li.dropout, li.threshold, li.keep = true, mk.threshold, mk.keep
		}
		seeds = append(seeds, int32(uint32(mk.seed)), int32(uint32(mk.seed>>32)))
		for j := range op.In {
			for len(li.counts) <= j {
				li.counts = append(li.counts, 0)
			}
			li.counts[j] += g.n
		}
	}
	li.outputs = next - first
	segOff = append(segOff, int32(li.outputs))
	for j := range li.counts {
		for _, op := range sorted {
			if j < len(op.In) {
				for r := range w.groups[op.Group].n {
					stage = append(stage, int32(w.at[op.Group][op.In[j]]+r))
				}
			}
		}
	}
	li.stagedRows = len(stage) - li.firstStaged
	counts := make([]int32, len(li.counts))
	for j, c := range li.counts {
		counts[j] = int32(c)
	}
	li.countsPart, li.segOff, li.seeds = w.ints.add(counts), w.ints.add(segOff), w.ints.add(seeds)
	return stage
}

// counts is RowCSR's scratch of at least n zeros.
func (m *Model) counts(n int) []int32 {
	if len(m.count) < n {
		m.count = make([]int32, n)
	}
	return m.count
}

// upload copies the slabs to the device and gives their storage back to the Model
// (hostBufs): the walk reads only the device's copies after it.
func (w *devWalk) upload() (err error) {
	defer func() {
		hb := &w.m.hostBufs
		hb.ints, hb.intOffs = w.ints.data[:0], w.ints.offs[:0]
		hb.floats, hb.fltOffs = w.floats.data[:0], w.floats.offs[:0]
		w.ints, w.floats = slab[int32]{}, slab[float32]{}
	}()
	if w.iv, err = upload(w.m.arena, &w.ints); err != nil {
		return err
	}
	w.fv, err = upload(w.m.arena, &w.floats)
	return err
}

// allocate takes the cone table and, for training, the gradient tables.
func (w *devWalk) allocate() error {
	d, s := w.m.cfg.Dim, w.s
	w.table = s.take(2 * w.rows * d)
	if w.train {
		w.dTable = s.take(2 * w.rows * d)
		// The model's own, zero: Adam cleared them after the last update.
		w.dThEnt, w.dThRel = w.m.dTheta.ent, w.m.dTheta.rel
	}
	return s.err
}

// cones returns n cones of the [2][total][d] block buf from row r.
func (w *devWalk) cones(buf *gpu.F32, total, r, n int) gpu.Cones {
	d := w.m.cfg.Dim
	return gpu.Cones{Axis: buf.Slice(r*d, n*d), Half: buf.Slice((total+r)*d, n*d), N: n, Dim: d}
}

// cone returns group gi's cone c.
func (w *devWalk) cone(gi, c int) gpu.Cones {
	return w.cones(w.table, w.rows, w.at[gi][c], w.groups[gi].n)
}

// out returns operator o's outputs at level l (and their gradients).
func (w *devWalk) out(lv *devLevel, o model.Operator) (out, dOut gpu.Cones) {
	out = w.cones(w.table, w.rows, lv.out[o], lv.n[o])
	if w.dTable != nil {
		dOut = w.cones(w.dTable, w.rows, lv.out[o], lv.n[o])
	}
	return out, dOut
}

// ends returns a one-input operator's staged inputs and outputs at level l, and their
// gradients.
func (w *devWalk) ends(lv *devLevel, o model.Operator) (in, dIn, out, dOut gpu.Cones) {
	in, dIn = w.staged(lv, lv.in[o], lv.n[o])
	out, dOut = w.out(lv, o)
	return in, dIn, out, dOut
}

// staged returns n staged input cones of level lv from row r (and their gradients).
func (w *devWalk) staged(lv *devLevel, r, n int) (in, dIn gpu.Cones) {
	in = w.cones(lv.stageBuf, lv.staged, r, n)
	if lv.dStageBuf != nil {
		dIn = w.cones(lv.dStageBuf, lv.staged, r, n)
	}
	return in, dIn
}

// levelErr is the first error of a level's operator, wrapped with where it happened, or
// nil if the operator's launches all succeeded.
func (w *devWalk) levelErr(l int, o string) error {
	if w.s.err != nil {
		return fmt.Errorf("level %d, %s: %w", l, o, w.s.err)
	}
	return nil
}

// devHead is the device's end of a walk (model.Head): the loss head (training: head.go),
// the scoring of every entity (rank.go: rankHead) or the branch cones' gather
// (rank.go: embedHead).
type devHead interface {
	forward(w *devWalk) error
	backward(w *devWalk) error
}

// Head runs the head after the last level.
func (w *devWalk) Head() error { return w.head.forward(w) }

// HeadBackward runs the head's backward before the levels'.
func (w *devWalk) HeadBackward() error { return w.head.backward(w) }

// StageForward gathers every input cone of level l into its staged block.
func (w *devWalk) StageForward(l int, _ *model.LevelOps) error {
	lv, s := &w.levels[l], w.s
	if lv.staged == 0 {
		return nil
	}
	lv.stageBuf = s.take(2 * lv.staged * w.m.cfg.Dim)
	if w.train {
		lv.dStageBuf = s.take(2 * lv.staged * w.m.cfg.Dim)
	}
	if s.err == nil {
		s.ok(w.m.dev.GatherRows(lv.stageBuf, w.table, w.iv[lv.stage], w.m.cfg.Dim))
	}
	return w.levelErr(l, "staging")
}

// StageBackward adds the gradients of level l's staged inputs into the gradient table.
func (w *devWalk) StageBackward(l int, _ *model.LevelOps) error {
	lv := &w.levels[l]
	if lv.staged > 0 {
		w.s.ok(w.m.dev.RowsSum(w.dTable, lv.dStageBuf, lv.scatter.on(w.iv), w.m.cfg.Dim))
	}
	return w.levelErr(l, "unstaging")
}

// Anchor gathers the anchors' entity angles (half-aperture 0: the table starts zeroed).
func (w *devWalk) Anchor(l int, _ []model.Op) error {
	lv := &w.levels[l]
	out, _ := w.out(lv, model.OpAnchor)
	w.s.ok(w.m.dev.GatherRows(out.Axis, w.th.ent, w.iv[lv.anchors], w.m.cfg.Dim))
	return w.levelErr(l, "anchor")
}

// AnchorBackward adds the anchors' axis gradients into their entity rows.
func (w *devWalk) AnchorBackward(l int, _ []model.Op) error {
	lv := &w.levels[l]
	_, dOut := w.out(lv, model.OpAnchor)
	w.s.ok(w.m.dev.RowsSum(w.dThEnt, dOut.Axis, lv.anchorIx.on(w.iv), w.m.cfg.Dim))
	return w.levelErr(l, "anchor backward")
}

// Project runs the level's projections: gathers their relations' angles (and rocone-se's
// shifts), then the variant's rotation or ConE's MLP over all of them.
func (w *devWalk) Project(l int, _ []model.Op) error {
	m, s, lv := w.m, w.s, &w.levels[l]
	dev, d, P := m.dev, m.cfg.Dim, lv.n[model.OpProject]
	in, _, out, _ := w.ends(lv, model.OpProject)
	if w.relAll == nil { // the first level with projections: every level's relations
		w.relAll = s.take(w.relRows * d)
		if m.p.relShift != nil {
			w.relShiftAll = s.take(w.relRows * d)
		}
		if s.err != nil {
			return w.levelErr(l, "project")
		}
		s.ok(dev.GatherRows(w.relAll, w.th.rel, w.iv[w.relIDs], d))
		if w.relShiftAll != nil {
			s.ok(dev.GatherRows(w.relShiftAll, m.p.relShift, w.iv[w.relIDs], d))
		}
	}
	if s.err != nil {
		return w.levelErr(l, "project")
	}
	lv.relAng = w.relAll.Slice(lv.relRow*d, w.th.nRel*P*d)
	if w.relShiftAll != nil {
		lv.relShift = w.relShiftAll.Slice(lv.relRow*d, P*d)
	}
	relAxis, relAperture := lv.relAng.Slice(0, P*d), lv.aperture(P, d)
	if m.proj != model.ProjectMLP {
		s.ok(dev.RotateForward(m.proj, out, in, relAxis, relAperture, lv.relShift))
		return w.levelErr(l, "project")
	}
	proj, hid := m.p.proj, m.p.proj[1].Len()
	lv.x, lv.h1, lv.h2 = s.take(P*2*d), s.take(P*hid), s.take(P*hid)
	y := s.take(P * 2 * d)
	if s.err != nil {
		return w.levelErr(l, "project")
	}
	s.ok(dev.MLPInput(lv.x, in, relAxis, relAperture))
	s.ok(dev.LinearReLUForward(lv.h1, lv.x, proj[0], proj[1], P, 2*d, hid))
	s.ok(dev.LinearReLUForward(lv.h2, lv.h1, proj[2], proj[3], P, hid, hid))
	s.ok(dev.LinearForward(y, lv.h2, proj[4], proj[5], P, hid, 2*d))
	s.ok(dev.MLPOutput(out, y))
	return w.levelErr(l, "project")
}

// aperture is the gathered aperture offsets' part of relAng (nil for rocone-se).
func (lv *devLevel) aperture(P, d int) *gpu.F32 {
	if lv.relAng.Len() == P*d {
		return nil
	}
	return lv.relAng.Slice(P*d, P*d)
}

// ProjectBackward adds the level's projections' gradients into their inputs and their
// relations' angle (and shift) rows.
func (w *devWalk) ProjectBackward(l int, _ []model.Op) error {
	m, s, lv := w.m, w.s, &w.levels[l]
	dev, d, P := m.dev, m.cfg.Dim, lv.n[model.OpProject]
	in, dIn, out, dOut := w.ends(lv, model.OpProject)
	if w.dRelAll == nil { // the highest level with projections: every level's gradients
		w.dRelAll = s.take(w.relRows * d)
		if w.relShiftAll != nil {
			w.dRelShiftAll = s.take(w.relRows * d)
		}
	}
	if s.err != nil {
		return w.levelErr(l, "project backward")
	}
	lv.dRelAng = w.dRelAll.Slice(lv.relRow*d, lv.relAng.Len())
	if lv.relShift != nil {
		lv.dRelShift = w.dRelShiftAll.Slice(lv.relRow*d, P*d)
	}
	dRelAxis, dRelAperture := lv.dRelAng.Slice(0, P*d), (*gpu.F32)(nil)
	if relAperture := lv.aperture(P, d); relAperture != nil {
		dRelAperture = lv.dRelAng.Slice(P*d, P*d)
	}
	if m.proj != model.ProjectMLP {
		s.ok(dev.RotateBackward(m.proj, dIn, dRelAxis, dRelAperture, lv.dRelShift, dOut, in, out, lv.aperture(P, d)))
	} else {
		proj, gp, hid := m.p.proj, m.g.proj, m.p.proj[1].Len()
		dy, dh1, dh2, dx := s.take(P*2*d), s.take(P*hid), s.take(P*hid), s.take(P*2*d)
		if s.err != nil {
			return w.levelErr(l, "project backward")
		}
		s.ok(dev.MLPOutputBackward(dy, dOut, out))
		s.ok(dev.LinearBackwardAfterReLU(dh2, gp[4], gp[5], dy, lv.h2, proj[4], P, hid, 2*d))
		s.ok(dev.LinearBackwardAfterReLU(dh1, gp[2], gp[3], dh2, lv.h1, proj[2], P, hid, hid))
		s.ok(dev.LinearBackward(dx, gp[0], gp[1], dh1, lv.x, proj[0], P, 2*d, hid))
		s.ok(dev.MLPInputBackward(dIn, dRelAxis, dRelAperture, dx, P, d))
	}
	if l == w.relFirst { // the walk's last ProjectBackward: every level's relation gradients
		s.ok(dev.RowsSum(w.dThRel, w.dRelAll, w.relIx.on(w.iv), d))
		if w.dRelShiftAll != nil {
			s.ok(dev.RowsSum(m.g.relShift, w.dRelShiftAll, w.relIx.on(w.iv), d))
		}
	}
	return w.levelErr(l, "project backward")
}

// Negate negates the level's staged negation inputs.
func (w *devWalk) Negate(l int, _ []model.Op) error {
	in, _, out, _ := w.ends(&w.levels[l], model.OpNegate)
	w.s.ok(w.m.dev.NegateForward(out, in))
	return w.levelErr(l, "negate")
}

// NegateBackward adds the negations' gradients into their inputs'.
func (w *devWalk) NegateBackward(l int, _ []model.Op) error {
	_, dIn, _, dOut := w.ends(&w.levels[l], model.OpNegate)
	w.s.ok(w.m.dev.NegateBackward(dIn, dOut))
	return w.levelErr(l, "negate backward")
}

// Intersect runs the level's intersections as one ragged batch, the dropout masks of all
// of them made on the device from their seeds in one launch.
func (w *devWalk) Intersect(l int, _ []model.Op) error {
	m, s, li := w.m, w.s, &w.levels[l].inter
	in, _ := w.staged(&w.levels[l], li.firstStaged, li.stagedRows)
	out, _ := w.out(&w.levels[l], model.OpIntersect)
	br := gpu.Branches{Counts: li.counts, Dev: w.iv[li.countsPart]}
	var mask *gpu.F32
	if li.dropout {
		mask = s.take(li.stagedRows * m.cfg.Dim)
		if s.err == nil {
			s.ok(m.dev.DropoutMaskRagged(mask, br, w.iv[li.segOff], w.iv[li.seeds], m.cfg.Dim, li.threshold, li.keep))
		}
	}
	if s.err == nil {
		li.state, s.err = m.dev.IntersectForwardRagged(m.p.inter, out, in, br, mask)
	}
	return w.levelErr(l, "intersect")
}

// IntersectBackward adds the intersections' gradients into their branches' and the
// intersection's weights.
func (w *devWalk) IntersectBackward(l int, _ []model.Op) error {
	m, li := w.m, &w.levels[l].inter
	in, dIn := w.staged(&w.levels[l], li.firstStaged, li.stagedRows)
	_, dOut := w.out(&w.levels[l], model.OpIntersect)
	w.s.ok(m.dev.IntersectBackward(m.p.inter, m.g.inter, li.state, dIn, dOut, in))
	return w.levelErr(l, "intersect backward")
}

var _ model.Executor = (*devWalk)(nil)
var _ model.Stager = (*devWalk)(nil)
var _ model.Head = (*devWalk)(nil)
