package model

// A Walk runs the plans of a batch (one plan per group of queries of one structure)
// through an Executor, level by level: a step's level is 0 for an anchor and one more than
// its inputs' highest level otherwise, so the steps of one level depend only on lower
// levels. All groups' steps of one level and one operator go to the backend in one call
// (level-batched): the CPU runs ConE's projections of a level as one MLP batch, and the
// device runs each operator as a few kernel launches per level, not per group.
//
// This is the only walk over plans: the CPU model (Embedding) and the device model
// (package gpumodel) implement Executor, whose methods are called per operator, so
// neither dispatches on a step's kind while walking. Before the walk, each lays out what
// it needs in one pass over the Ops: the CPU draws the intersections' dropout masks in
// plan order (the reference's order of random draws), the device its index tables.
type Walk struct {
	forward  [][numOps][]Op // per level and operator: groups ascending, each group's steps ascending
	backward [][numOps][]Op // the same ops, each group's steps descending
}

// Operator is what a plan step computes.
type Operator uint8

const (
	OpAnchor    Operator = iota // an anchor entity: axis θ_e, half-aperture 0
	OpProject                   // a relation projection (the variant's: rotation or ConE's MLP)
	OpNegate                    // negation
	OpIntersect                 // intersection of two or more cones
	numOps
)

// NumOperators is the number of Operators: the length of LevelOps.
const NumOperators = int(numOps)

var opNames = [numOps]string{"anchor", "project", "negate", "intersect"}

func (o Operator) String() string { return opNames[o] }

// An Op is one step of one group's plan, as an Executor receives it.
type Op struct {
	Group int   // the group (plan) in the walk
	Step  int   // the step in the group's plan
	Slot  int   // OpAnchor: the anchor slot; OpProject: the relation slot
	In    []int // the group's input cones: one (project, negate) or the branches (intersect)
	Out   int   // the group's cone the step writes
}

// An Executor runs a walk's operators on one backend. Each method gets every op of its
// operator at one level, in the walk's order (groups ascending; forward: each group's
// steps ascending; backward: descending), and may run them as one batch.
//
// The forward methods write their ops' output cones from their input cones; the backward
// methods add the gradients of their ops' outputs into their inputs' gradients and the
// parameters' gradients.
type Executor interface {
	Anchor(level int, ops []Op) error
	Project(level int, ops []Op) error
	Negate(level int, ops []Op) error
	Intersect(level int, ops []Op) error

	AnchorBackward(level int, ops []Op) error
	ProjectBackward(level int, ops []Op) error
	NegateBackward(level int, ops []Op) error
	IntersectBackward(level int, ops []Op) error
}

// A Head is an Executor with an end: after the last level, Head reads the DNF branches'
// root cones (training: scores them against the candidates and takes the loss;
// evaluation: scores every entity); before the first level backward, HeadBackward writes
// the roots' gradients. The walk calls it when implemented.
type Head interface {
	Head() error
	HeadBackward() error
}

// A Stager is an Executor that moves a level's inputs together before its operators run
// and their gradients back after (the device gathers every input cone of a level in one
// launch and scatters their gradients in one). The walk calls it when implemented.
type Stager interface {
	// StageForward is called before level's forward operators with all of its ops.
	StageForward(level int, ops *[numOps][]Op) error
	// StageBackward is called after level's backward operators with all of its ops.
	StageBackward(level int, ops *[numOps][]Op) error
}

// LevelOps is every op of one level, indexed by Operator.
type LevelOps = [numOps][]Op

// NewWalk lays out the steps of plans by level.
func NewWalk(plans []*Plan) *Walk {
	w := &Walk{}
	for g, p := range plans {
		coneLevel := make([]int, p.numCones)
		stepLevel := make([]int, len(p.steps))
		for i, st := range p.steps {
			l := 0
			for _, c := range st.in {
				l = max(l, coneLevel[c]+1)
			}
			coneLevel[st.out], stepLevel[i] = l, l
			for len(w.forward) <= l {
				w.forward = append(w.forward, LevelOps{})
				w.backward = append(w.backward, LevelOps{})
			}
			op := Op{Group: g, Step: i, Slot: st.slot, In: st.in, Out: st.out}
			w.forward[l][st.kind] = append(w.forward[l][st.kind], op)
		}
		for i := len(p.steps) - 1; i >= 0; i-- {
			st := p.steps[i]
			op := Op{Group: g, Step: i, Slot: st.slot, In: st.in, Out: st.out}
			w.backward[stepLevel[i]][st.kind] = append(w.backward[stepLevel[i]][st.kind], op)
		}
	}
	return w
}

// NumLevels is the number of levels.
func (w *Walk) NumLevels() int { return len(w.forward) }

// Ops returns the ops of one operator at one level, in forward order.
func (w *Walk) Ops(level int, o Operator) []Op { return w.forward[level][o] }

// Forward runs every level in increasing order, each level's operators in the order
// anchor, project, negate, intersect (a level's steps are independent of each other),
// then the head.
func (w *Walk) Forward(x Executor) error {
	run := [numOps]func(int, []Op) error{x.Anchor, x.Project, x.Negate, x.Intersect}
	st, staged := x.(Stager)
	for l := range w.forward {
		if staged {
			if err := st.StageForward(l, &w.forward[l]); err != nil {
				return err
			}
		}
		for o, ops := range w.forward[l] {
			if len(ops) > 0 {
				if err := run[o](l, ops); err != nil {
					return err
				}
			}
		}
	}
	if h, ok := x.(Head); ok {
		return h.Head()
	}
	return nil
}

// Backward runs the head's backward, then every level in decreasing order, each level's
// operators in the order intersect, negate, project, anchor, each operator's ops in
// backward order.
func (w *Walk) Backward(x Executor) error {
	run := [numOps]func(int, []Op) error{x.AnchorBackward, x.ProjectBackward, x.NegateBackward, x.IntersectBackward}
	if h, ok := x.(Head); ok {
		if err := h.HeadBackward(); err != nil {
			return err
		}
	}
	st, staged := x.(Stager)
	for l := len(w.backward) - 1; l >= 0; l-- {
		for o := numOps - 1; ; o-- {
			if ops := w.backward[l][o]; len(ops) > 0 {
				if err := run[o](l, ops); err != nil {
					return err
				}
			}
			if o == 0 {
				break
			}
		}
		if staged {
			if err := st.StageBackward(l, &w.backward[l]); err != nil {
				return err
			}
		}
	}
	return nil
}
