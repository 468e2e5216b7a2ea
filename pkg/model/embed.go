package model

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/rocone/rocone/pkg/model/internal/vmath"

	"github.com/rocone/rocone/pkg/query"
)

// Embedding is the result of embedding a batch of queries of one structure: one cone
// batch per DNF branch, and the tape that Backward replays.
type Embedding[T Float] struct {
	// Branches holds one batch of N cones per DNF branch of the structure.
	Branches []Cones[T]

	m         *Model[T]
	plan      *Plan
	n         int
	cones     []Cones[T]     // every step's output
	states    []stepState[T] // what each step's backward needs
	anchors   []int32
	relations []int32
	batch     *embedBatch[T] // the embeddings computed with this one
}

// stepState is the tape entry of one step.
type stepState[T Float] struct {
	ids         []int32     // per query: the entity (anchor) or relation (projection) row
	relAxis     []T         // [N][d] θax of the relations used (projection)
	relAperture []T         // [N][d] φ of the relations used (projection; nil for rocone-se)
	relShift    []T         // [N][d] S.E. shifts of the relations used (rocone-se)
	wave        *mlpWave[T] // ConE's projection: the MLP batch it ran in
	waveOff     int         // its first row there
	inter       *IntersectState[T]
	ins         []Cones[T] // intersection inputs
}

// embedBatch is several embeddings (of any structures) computed together: the CPU's
// Executor of their Walk. Each operator gets the ops of all embeddings at one level;
// ConE's projections of a level go through the MLP as one batch (its weights are shared
// by all relations, and a few large matrix products run much faster than many small
// ones), the other operators run their ops in parallel, each on its own embedding's
// rows, as it would alone. The results are those of embedding each structure on its
// own, up to the rounding of the MLP's weight-gradient sums.
type embedBatch[T Float] struct {
	m     *Model[T]
	embs  []*Embedding[T]
	walk  *Walk
	masks [][][]T       // per embedding and step: the intersection's dropout mask (nil: none)
	waves []*mlpWave[T] // per level; nil where it has no ConE projection
	dcs   [][]Cones[T]  // backward: per embedding, the gradients of its cones
	g     *Grads[T]     // backward: where the parameters' gradients go
	proj  Projection    // the variant's projection
	head  cpuHead[T]    // the loss (LossTape), or nil: the walk ends at the cones
	// dBranches are, in a backward pass without a head, the gradients of the branch cones.
	dBranches [][]Cones[T]
}

// cpuHead is the CPU's end of a walk: HeadBackward returns the gradients of each
// embedding's branch cones.
type cpuHead[T Float] interface {
	Head() error
	HeadBackward() ([][]Cones[T], error)
}

// mlpWave is one MLP batch: the ConE projections of one level, their rows back to back.
type mlpWave[T Float] struct {
	segs []waveSeg
	rows int
	st   *MLPState[T]
	out  Cones[T] // the projections' outputs (each step's output cone is a window)
	dOut Cones[T] // backward: their gradients (likewise)
}

// waveSeg is one projection step in a wave: embedding emb's step, at row off.
type waveSeg struct{ emb, step, off int }

// window returns rows off … off+n−1 of c.
func (c Cones[T]) window(off, n int) Cones[T] {
	d := c.Dim
	return Cones[T]{Axis: c.Axis[off*d : (off+n)*d], Half: c.Half[off*d : (off+n)*d], N: n, Dim: d}
}

// Embed embeds n queries of structure s. anchors is [n][s.NumAnchors] and relations
// [n][s.NumRelations], the ids of each query in the structure's slot order. drop, when
// not nil and Config.Drop > 0, draws the intersection dropout masks (training); nil means
// no dropout (evaluation).
func (m *Model[T]) Embed(s *query.Structure, anchors, relations []int32, n int, drop *rand.Rand) (*Embedding[T], error) {
	e, err := m.newEmbedding(s, anchors, relations, n)
	if err != nil {
		return nil, err
	}
	if err := m.embedAll([]*Embedding[T]{e}, drop, nil); err != nil {
		return nil, err
	}
	return e, nil
}

// newEmbedding checks the ids and sets up an embedding, without computing it.
func (m *Model[T]) newEmbedding(s *query.Structure, anchors, relations []int32, n int) (*Embedding[T], error) {
	plan, err := m.Plan(s)
	if err != nil {
		return nil, err
	}
	if len(anchors) != n*s.NumAnchors || len(relations) != n*s.NumRelations {
		return nil, fmt.Errorf("model: structure %s needs %d anchors and %d relations per query; got %d and %d for %d queries",
			s, s.NumAnchors, s.NumRelations, len(anchors), len(relations), n)
	}
	for _, id := range anchors {
		if id < 0 || int(id) >= m.Config.NumEntities {
			return nil, fmt.Errorf("model: anchor entity %d out of range [0,%d)", id, m.Config.NumEntities)
		}
	}
	for _, id := range relations {
		if id < 0 || int(id) >= m.Config.NumRelations {
			return nil, fmt.Errorf("model: relation %d out of range [0,%d)", id, m.Config.NumRelations)
		}
	}
	return &Embedding[T]{
		m: m, plan: plan, n: n,
		cones:   make([]Cones[T], plan.numCones),
		states:  make([]stepState[T], len(plan.steps)),
		anchors: anchors, relations: relations,
	}, nil
}

// embedAll computes the embeddings together: one Walk over their plans with the batch as
// its Executor, ending with head when not nil. The dropout masks are drawn first, in the
// order of embedding one structure after the other, so that drop's stream is used
// exactly as it would be then.
func (m *Model[T]) embedAll(embs []*Embedding[T], drop *rand.Rand, head cpuHead[T]) error {
	proj, err := m.Config.Variant.Projection()
	if err != nil {
		return err
	}
	plans := make([]*Plan, len(embs))
	b := &embedBatch[T]{m: m, embs: embs, masks: make([][][]T, len(embs)), proj: proj, head: head}
	for ei, e := range embs {
		e.batch, plans[ei] = b, e.plan
		b.masks[ei] = make([][]T, len(e.plan.steps))
		for i, st := range e.plan.steps {
			if st.kind == stepIntersect {
				b.masks[ei][i] = m.dropoutMask(drop, len(st.in)*e.n*m.Config.Dim)
			}
		}
	}
	b.walk = NewWalk(plans)
	b.waves = make([]*mlpWave[T], b.walk.NumLevels())
	return b.walk.Forward(b)
}

// Head sets each embedding's branch cones, then runs the loss head if there is one.
func (b *embedBatch[T]) Head() error {
	for _, e := range b.embs {
		e.Branches = make([]Cones[T], len(e.plan.branches))
		for br, c := range e.plan.branches {
			e.Branches[br] = e.cones[c]
		}
	}
	if b.head == nil {
		return nil
	}
	return b.head.Head()
}

// HeadBackward sets up the cones' gradients from the head's gradients of the branch
// cones (the loss's, or those Backward was given).
func (b *embedBatch[T]) HeadBackward() error {
	dBranches := b.dBranches
	if b.head != nil {
		var err error
		if dBranches, err = b.head.HeadBackward(); err != nil {
			return err
		}
	}
	d := b.m.Config.Dim
	for _, w := range b.waves {
		if w != nil {
			w.dOut = NewCones[T](w.rows, d)
		}
	}
	b.dcs = make([][]Cones[T], len(b.embs))
	for ei, e := range b.embs {
		dc := make([]Cones[T], e.plan.numCones)
		for i, st := range e.plan.steps {
			if ss := &e.states[i]; ss.wave != nil {
				dc[st.out] = ss.wave.dOut.window(ss.waveOff, e.n)
			} else {
				dc[st.out] = NewCones[T](e.n, d)
			}
		}
		for br, c := range e.plan.branches {
			addTo(dc[c].Axis, dBranches[ei][br].Axis)
			addTo(dc[c].Half, dBranches[ei][br].Half)
		}
		b.dcs[ei] = dc
	}
	return nil
}

// each runs fn for every op, in parallel: the ops of a level write their own cones and
// tapes, and only read the parameters.
func (b *embedBatch[T]) each(ops []Op, fn func(e *Embedding[T], op Op)) error {
	parallelJobs(len(ops), func(j int) { fn(b.embs[ops[j].Group], ops[j]) })
	return nil
}

// output allocates op's output cone.
func (e *Embedding[T]) output(op Op) Cones[T] {
	out := NewCones[T](e.n, e.m.Config.Dim)
	e.cones[op.Out] = out
	return out
}

// Anchor sets each op's cone to its anchor entity's axis, half-aperture 0.
func (b *embedBatch[T]) Anchor(_ int, ops []Op) error {
	d, R := b.m.Config.Dim, b.m.embeddingRange()
	return b.each(ops, func(e *Embedding[T], op Op) {
		ss := &e.states[op.Step]
		ss.ids = column(e.anchors, e.plan.Structure.NumAnchors, op.Slot)
		angleRows(e.output(op).Axis, b.m.Params.Entity, ss.ids, d, R)
	})
}

// Project projects each op's input cone by its relation: RoConE's rotations one op at a
// time, ConE's MLP as one batch of the level's ops (a wave).
func (b *embedBatch[T]) Project(level int, ops []Op) error {
	if b.proj == ProjectMLP {
		b.projectWave(level, ops)
		return nil
	}
	m := b.m
	d, R, p := m.Config.Dim, m.embeddingRange(), m.Params
	return b.each(ops, func(e *Embedding[T], op Op) {
		ss := &e.states[op.Step]
		ss.ids = column(e.relations, e.plan.Structure.NumRelations, op.Slot)
		ss.relAxis = gatherAngles(p.RelAxis, ss.ids, d, R)
		if p.RelAperture != nil {
			ss.relAperture = gatherAngles(p.RelAperture, ss.ids, d, R)
		}
		if p.RelShift != nil {
			ss.relShift = gatherRows(p.RelShift, ss.ids, d)
		}
		RotateForward(b.proj, e.output(op), e.cones[op.In[0]], ss.relAxis, ss.relAperture, ss.relShift)
	})
}

// Negate negates each op's input cone.
func (b *embedBatch[T]) Negate(_ int, ops []Op) error {
	return b.each(ops, func(e *Embedding[T], op Op) { NegateForward(e.output(op), e.cones[op.In[0]]) })
}

// Intersect intersects each op's branches, with its dropout mask.
func (b *embedBatch[T]) Intersect(_ int, ops []Op) error {
	return b.each(ops, func(e *Embedding[T], op Op) {
		ss := &e.states[op.Step]
		ss.ins = make([]Cones[T], len(op.In))
		for j, c := range op.In {
			ss.ins[j] = e.cones[c]
		}
		ss.inter = IntersectForward(b.m.Kernels, &b.m.Params.Intersection, e.output(op), ss.ins, b.masks[op.Group][op.Step])
	})
}

// projectWave runs the ConE projections of a level through the MLP as one batch.
func (b *embedBatch[T]) projectWave(level int, ops []Op) {
	m := b.m
	d, R, p := m.Config.Dim, m.embeddingRange(), m.Params
	w := &mlpWave[T]{}
	for _, op := range ops {
		w.segs = append(w.segs, waveSeg{emb: op.Group, step: op.Step, off: w.rows})
		w.rows += b.embs[op.Group].n
	}
	w.st = newMLPState[T](w.rows, d, len(p.Projection.B1))
	w.out = NewCones[T](w.rows, d)
	for j, sg := range w.segs {
		e, op := b.embs[sg.emb], ops[j]
		ss := &e.states[sg.step]
		ss.ids = column(e.relations, e.plan.Structure.NumRelations, op.Slot)
		ss.relAxis = gatherAngles(p.RelAxis, ss.ids, d, R)
		ss.relAperture = gatherAngles(p.RelAperture, ss.ids, d, R)
		ss.wave, ss.waveOff = w, sg.off
		mlpInput(w.st.x[sg.off*2*d:(sg.off+e.n)*2*d], e.cones[op.In[0]], ss.relAxis, ss.relAperture)
		e.cones[op.Out] = w.out.window(sg.off, e.n)
	}
	mlpForward(m.Kernels, &p.Projection, w.st, w.out)
	b.waves[level] = w
}

// Backward adds to g the gradients of a loss given its gradients dBranches with respect
// to the branch cones (one batch per branch; a zero batch where a branch has none), and
// marks the entity and relation rows it writes. The embedding must come from Embed.
func (e *Embedding[T]) Backward(dBranches []Cones[T], g *Grads[T]) {
	if len(e.batch.embs) != 1 {
		panic("model: Backward of an embedding computed with others")
	}
	e.batch.backward([][]Cones[T]{dBranches}, g)
}

// backward is Backward for every embedding of the batch, dBranches[i] the gradients of
// embedding i's branches (nil when the batch has a head, which gives them): the walk
// backward, levels in reverse, each wave's MLP as one batch.
func (b *embedBatch[T]) backward(dBranches [][]Cones[T], g *Grads[T]) {
	b.dBranches, b.g = dBranches, g
	if err := b.walk.Backward(b); err != nil {
		panic(err) // the CPU's backward operators and its loss head do not fail
	}
	b.dcs, b.g, b.dBranches = nil, nil, nil
}

// AnchorBackward adds each anchor's axis gradient into its entity row (the
// half-aperture is the constant 0).
func (b *embedBatch[T]) AnchorBackward(_ int, ops []Op) error {
	d, R := b.m.Config.Dim, b.m.embeddingRange()
	for _, op := range ops {
		e, ss := b.embs[op.Group], &b.embs[op.Group].states[op.Step]
		angleRowsBackward(b.g.Entity, b.dcs[op.Group][op.Out].Axis, e.cones[op.Out].Axis, ss.ids, d, R)
		for _, id := range ss.ids {
			b.g.EntityRows.Add(id)
		}
	}
	return nil
}

// ProjectBackward adds the gradients of the level's projections: RoConE's rotations op
// by op, ConE's wave as one batch.
func (b *embedBatch[T]) ProjectBackward(level int, ops []Op) error {
	if b.proj == ProjectMLP {
		b.projectWaveBackward(b.waves[level])
		return nil
	}
	m, g := b.m, b.g
	d, R := m.Config.Dim, m.embeddingRange()
	for _, op := range ops {
		e, ss, dc := b.embs[op.Group], &b.embs[op.Group].states[op.Step], b.dcs[op.Group]
		n := e.n
		dRelAxis := make([]T, n*d)
		var dRelAperture, dRelShift []T
		if ss.relAperture != nil {
			dRelAperture = make([]T, n*d)
		}
		if ss.relShift != nil {
			dRelShift = make([]T, n*d)
		}
		RotateBackward(b.proj, dc[op.In[0]], dRelAxis, dRelAperture, dRelShift, dc[op.Out],
			e.cones[op.In[0]], e.cones[op.Out], ss.relAperture)
		for r, id := range ss.ids {
			row := func(t []T) []T { return t[int(id)*d : int(id+1)*d] }
			span := func(t []T) []T { return t[r*d : (r+1)*d] }
			AngleBackward(row(g.RelAxis), span(dRelAxis), span(ss.relAxis), R)
			if dRelAperture != nil {
				AngleBackward(row(g.RelAperture), span(dRelAperture), span(ss.relAperture), R)
			}
			if dRelShift != nil {
				addTo(row(g.RelShift), span(dRelShift))
			}
			g.RelationRows.Add(id)
		}
	}
	return nil
}

// NegateBackward adds each negation's gradient into its input's.
func (b *embedBatch[T]) NegateBackward(_ int, ops []Op) error {
	for _, op := range ops {
		NegateBackward(b.dcs[op.Group][op.In[0]], b.dcs[op.Group][op.Out])
	}
	return nil
}

// IntersectBackward adds each intersection's gradients into its branches' and the
// intersection's weights.
func (b *embedBatch[T]) IntersectBackward(_ int, ops []Op) error {
	m := b.m
	for _, op := range ops {
		ss, dc := &b.embs[op.Group].states[op.Step], b.dcs[op.Group]
		dIns := make([]Cones[T], len(op.In))
		for j, c := range op.In {
			dIns[j] = dc[c]
		}
		IntersectBackward(m.Kernels, &m.Params.Intersection, &b.g.Intersection, ss.inter, dIns, dc[op.Out], ss.ins)
	}
	return nil
}

// projectWaveBackward adds the gradients of a wave's projections given their output
// gradients w.dOut: the MLP's weights once for the whole batch, then each projection's
// input cone and relation rows.
func (b *embedBatch[T]) projectWaveBackward(w *mlpWave[T]) {
	m, g := b.m, b.g
	d, R, p := m.Config.Dim, m.embeddingRange(), m.Params
	dx := mlpBackward(m.Kernels, &p.Projection, &g.Projection, w.st, w.dOut, w.out)
	for _, sg := range w.segs {
		e := b.embs[sg.emb]
		st, ss := e.plan.steps[sg.step], &e.states[sg.step]
		dIn := b.dcs[sg.emb][st.in[0]]
		for r, id := range ss.ids {
			ga := dx[(sg.off+r)*2*d : (sg.off+r)*2*d+d]
			gh := dx[(sg.off+r)*2*d+d : (sg.off+r+1)*2*d]
			addTo(dIn.Axis[r*d:(r+1)*d], ga)
			addTo(dIn.Half[r*d:(r+1)*d], gh)
			AngleBackward(g.RelAxis[int(id)*d:int(id+1)*d], ga, ss.relAxis[r*d:(r+1)*d], R)
			AngleBackward(g.RelAperture[int(id)*d:int(id+1)*d], gh, ss.relAperture[r*d:(r+1)*d], R)
			g.RelationRows.Add(id)
		}
	}
}

// dropoutMask draws an inverted-dropout mask of size n: element i is 0 when
// DropoutKeep(seed, i, threshold) is false (probability p), else 1/(1−p), with one seed
// drawn from drop per mask (DropoutSeed). Nil when dropout is off.
//
// A mask is a pure function of its seed, so a device can make the very same mask where it
// is used (package gpumodel) instead of receiving it, and the stream drop advances by one
// value per mask, not per element. The keep test compares 32 bits of a hash with p·2³², so
// p is honoured to 2⁻³² (Bernoulli per element, as torch's dropout, with another
// generator).
func (m *Model[T]) dropoutMask(drop *rand.Rand, n int) []T {
	seed, threshold, keep, ok := m.DropoutSeed(drop)
	if !ok {
		return nil
	}
	mask := make([]T, n)
	k := T(keep)
	for i := range mask {
		if DropoutKeep(seed, uint64(i), threshold) {
			mask[i] = k
		}
	}
	return mask
}

// DropoutSeed draws the seed of one dropout mask from drop and returns it with the keep
// test's threshold (p·2³²) and the kept elements' value 1/(1−p); ok is false when
// dropout is off (drop nil or p = 0), and then nothing is drawn.
func (m *Model[T]) DropoutSeed(drop *rand.Rand) (seed uint64, threshold uint32, keep float32, ok bool) {
	p := m.Config.Drop
	if drop == nil || p == 0 {
		return 0, 0, 0, false
	}
	return drop.Uint64(), uint32(math.Min(math.Round(p*(1<<32)), math.MaxUint32)), float32(1 / (1 - p)), true
}

// DropoutKeep reports whether element i of the mask with this seed is kept: SplitMix64's
// finaliser of seed + (i+1)·φ (φ the 64-bit golden ratio), its high 32 bits at least
// threshold. The CUDA kernel dropout_mask computes the same bits.
func DropoutKeep(seed, i uint64, threshold uint32) bool {
	x := seed + (i+1)*0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	x ^= x >> 31
	return uint32(x>>32) >= threshold
}

// column returns x[r][slot] for every row r of the row-major x [*][width].
func column(x []int32, width, slot int) []int32 {
	out := make([]int32, len(x)/width)
	for r := range out {
		out[r] = x[r*width+slot]
	}
	return out
}

// gatherAngles returns the angles π·tanh(table[id]/R) of the rows ids, [len(ids)][d].
func gatherAngles[T Float](table []T, ids []int32, d int, R T) []T {
	out := make([]T, len(ids)*d)
	angleRows(out, table, ids, d, R)
	return out
}

// prefetchAhead is how many rows ahead a gather or scatter of table rows prefetches: the
// rows are scattered over the table, and each is only a few cache lines.
const prefetchAhead = 6

// angleRows sets out[r] = π·tanh(table[ids[r]]/R), [len(ids)][d].
func angleRows[T Float](out, table []T, ids []int32, d int, R T) {
	t32, is32 := any(table).([]float32)
	for r, id := range ids {
		if is32 && r+prefetchAhead < len(ids) {
			p := int(ids[r+prefetchAhead]) * d
			vmath.Prefetch(t32[p : p+d])
		}
		AngleForward(out[r*d:(r+1)*d], table[int(id)*d:int(id+1)*d], R)
	}
}

// angleRowsBackward adds to the rows ids of dTable the gradients through angleRows,
// given dOut and the angles out [len(ids)][d].
func angleRowsBackward[T Float](dTable, dOut, out []T, ids []int32, d int, R T) {
	t32, is32 := any(dTable).([]float32)
	for r, id := range ids {
		if is32 && r+prefetchAhead < len(ids) {
			p := int(ids[r+prefetchAhead]) * d
			vmath.Prefetch(t32[p : p+d])
		}
		AngleBackward(dTable[int(id)*d:int(id+1)*d], dOut[r*d:(r+1)*d], out[r*d:(r+1)*d], R)
	}
}

// gatherRows returns the rows ids of table, [len(ids)][d].
func gatherRows[T Float](table []T, ids []int32, d int) []T {
	out := make([]T, len(ids)*d)
	for r, id := range ids {
		copy(out[r*d:(r+1)*d], table[int(id)*d:int(id+1)*d])
	}
	return out
}

func addTo[T Float](dst, src []T) {
	for i, v := range src {
		dst[i] += v
	}
}
