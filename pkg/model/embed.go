package model

import (
	"fmt"
	"math/rand/v2"

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
}

// stepState is the tape entry of one step.
type stepState[T Float] struct {
	ids         []int32 // per query: the entity (anchor) or relation (projection) row
	relAxis     []T     // [N][d] θax of the relations used (projection)
	relAperture []T     // [N][d] φ of the relations used (projection; nil for rocone-se)
	relShift    []T     // [N][d] S.E. shifts of the relations used (rocone-se)
	mlp         *MLPState[T]
	inter       *IntersectState[T]
	ins         []Cones[T] // intersection inputs
}

// Embed embeds n queries of structure s. anchors is [n][s.NumAnchors] and relations
// [n][s.NumRelations], the ids of each query in the structure's slot order. drop, when
// not nil and Config.Drop > 0, draws the intersection dropout masks (training); nil means
// no dropout (evaluation).
func (m *Model[T]) Embed(s *query.Structure, anchors, relations []int32, n int, drop *rand.Rand) (*Embedding[T], error) {
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
	e := &Embedding[T]{
		m: m, plan: plan, n: n,
		cones:   make([]Cones[T], plan.numCones),
		states:  make([]stepState[T], len(plan.steps)),
		anchors: anchors, relations: relations,
	}
	d, R, p := m.Config.Dim, m.embeddingRange(), m.Params
	for i, st := range plan.steps {
		out := NewCones[T](n, d)
		ss := &e.states[i]
		switch st.kind {
		case stepAnchor:
			ss.ids = column(anchors, s.NumAnchors, st.slot)
			for r, id := range ss.ids {
				AngleForward(out.Axis[r*d:(r+1)*d], p.Entity[int(id)*d:int(id+1)*d], R)
			} // half-aperture 0
		case stepProject:
			in := e.cones[st.in[0]]
			ss.ids = column(relations, s.NumRelations, st.slot)
			ss.relAxis = gatherAngles(p.RelAxis, ss.ids, d, R)
			if p.RelAperture != nil {
				ss.relAperture = gatherAngles(p.RelAperture, ss.ids, d, R)
			}
			if p.RelShift != nil {
				ss.relShift = gatherRows(p.RelShift, ss.ids, d)
			}
			if m.Config.Variant.rotates() {
				RotateForward(m.Config.Variant, out, in, ss.relAxis, ss.relAperture, ss.relShift)
			} else {
				ss.mlp = ConeProjectForward(m.Kernels, &p.Projection, out, in, ss.relAxis, ss.relAperture)
			}
		case stepNegate:
			NegateForward(out, e.cones[st.in[0]])
		case stepIntersect:
			ss.ins = make([]Cones[T], len(st.in))
			for j, c := range st.in {
				ss.ins[j] = e.cones[c]
			}
			mask := m.dropoutMask(drop, len(st.in)*n*d)
			ss.inter = IntersectForward(m.Kernels, &p.Intersection, out, ss.ins, mask)
		}
		e.cones[st.out] = out
	}
	e.Branches = make([]Cones[T], len(plan.branches))
	for b, c := range plan.branches {
		e.Branches[b] = e.cones[c]
	}
	return e, nil
}

// Backward adds to g the gradients of a loss given its gradients dBranches with respect
// to the branch cones (one batch per branch; a zero batch where a branch has none), and
// marks the entity and relation rows it writes.
func (e *Embedding[T]) Backward(dBranches []Cones[T], g *Grads[T]) {
	m, plan, n := e.m, e.plan, e.n
	d, R, p := m.Config.Dim, m.embeddingRange(), m.Params
	dc := make([]Cones[T], plan.numCones)
	for i := range dc {
		dc[i] = NewCones[T](n, d)
	}
	for b, c := range plan.branches {
		addTo(dc[c].Axis, dBranches[b].Axis)
		addTo(dc[c].Half, dBranches[b].Half)
	}
	for i := len(plan.steps) - 1; i >= 0; i-- {
		st, ss, dOut := plan.steps[i], &e.states[i], dc[plan.steps[i].out]
		switch st.kind {
		case stepAnchor:
			// The half-aperture is the constant 0: only the axis has a gradient.
			out := e.cones[st.out]
			for r, id := range ss.ids {
				AngleBackward(g.Entity[int(id)*d:int(id+1)*d], dOut.Axis[r*d:(r+1)*d], out.Axis[r*d:(r+1)*d], R)
				g.EntityRows.Add(id)
			}
		case stepProject:
			in, out := e.cones[st.in[0]], e.cones[st.out]
			dRelAxis := make([]T, n*d)
			var dRelAperture, dRelShift []T
			if ss.relAperture != nil {
				dRelAperture = make([]T, n*d)
			}
			if ss.relShift != nil {
				dRelShift = make([]T, n*d)
			}
			if m.Config.Variant.rotates() {
				RotateBackward(m.Config.Variant, dc[st.in[0]], dRelAxis, dRelAperture, dRelShift, dOut, in, out, ss.relAperture)
			} else {
				ConeProjectBackward(m.Kernels, &p.Projection, &g.Projection, ss.mlp, dc[st.in[0]], dRelAxis, dRelAperture, dOut, out)
			}
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
		case stepNegate:
			NegateBackward(dc[st.in[0]], dOut)
		case stepIntersect:
			dIns := make([]Cones[T], len(st.in))
			for j, c := range st.in {
				dIns[j] = dc[c]
			}
			IntersectBackward(m.Kernels, &p.Intersection, &g.Intersection, ss.inter, dIns, dOut, ss.ins)
		}
	}
}

// dropoutMask draws an inverted-dropout mask of size n (0 with probability p, else
// 1/(1−p)), or returns nil when there is no dropout.
func (m *Model[T]) dropoutMask(drop *rand.Rand, n int) []T {
	p := m.Config.Drop
	if drop == nil || p == 0 {
		return nil
	}
	mask := make([]T, n)
	keep := T(1 / (1 - p))
	for i := range mask {
		if drop.Float64() >= p {
			mask[i] = keep
		}
	}
	return mask
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
	for r, id := range ids {
		AngleForward(out[r*d:(r+1)*d], table[int(id)*d:int(id+1)*d], R)
	}
	return out
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
