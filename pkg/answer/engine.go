package answer

import (
	"math/bits"
	"slices"

	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/query"
)

// Engine evaluates grounded queries on one graph. It keeps scratch space, so an Engine
// must not be used by two goroutines at once; make one per worker.
type Engine struct {
	g       *kg.Graph
	scratch []uint64
}

// NewEngine returns an engine over g.
func NewEngine(g *kg.Graph) *Engine {
	return &Engine{g: g, scratch: make([]uint64, words(g.NumEntities))}
}

// Answers returns the answer set of q.
func (e *Engine) Answers(q *query.Grounded) *Set {
	return e.eval(q, q.Structure.Root)
}

func (e *Engine) eval(q *query.Grounded, n *query.Node) *Set {
	switch n.Kind {
	case query.Anchor:
		return Single(e.g.NumEntities, q.Anchors[n.Slot])
	case query.Chain:
		return e.chain(q, n, len(n.Ops))
	case query.And:
		// A branch that ends in a negation is subtracted, s ∩ ¬b = s \ b, after the
		// positive branches: that costs the size of s, where materialising ¬b would cost
		// a bitset of every entity (every BetaE negation type, 2in to pni, is of this
		// form). Only an intersection of negations alone builds a complement.
		var s *Set
		var negated []*query.Node
		for _, b := range n.Branches {
			if b.Kind == query.Chain && len(b.Ops) > 0 && b.Ops[len(b.Ops)-1].Kind == query.Negate {
				negated = append(negated, b)
				continue
			}
			if s != nil && s.Len() == 0 {
				return s
			}
			if s == nil {
				s = e.eval(q, b)
			} else {
				s = Intersect(s, e.eval(q, b))
			}
		}
		for _, b := range negated {
			inner := e.chain(q, b, len(b.Ops)-1)
			if s == nil {
				s = Complement(inner)
				continue
			}
			if s.Len() == 0 {
				return s
			}
			s = Difference(s, inner)
		}
		return s
	case query.Or:
		s := e.eval(q, n.Branches[0])
		for _, b := range n.Branches[1:] {
			s = Union(s, e.eval(q, b))
		}
		return s
	}
	panic("answer: unknown node kind " + n.Kind.String())
}

// chain evaluates a chain node's base and its first ops operations.
func (e *Engine) chain(q *query.Grounded, n *query.Node, ops int) *Set {
	s := e.eval(q, n.Base)
	for _, op := range n.Ops[:ops] {
		if op.Kind == query.Negate {
			s = Complement(s)
		} else {
			s = e.Project(s, q.Relations[op.Slot])
		}
	}
	return s
}

// Project returns the set of tails of r-edges leaving any entity of s.
func (e *Engine) Project(s *Set, r int32) *Set {
	n := e.g.NumEntities
	if s.bits == nil && len(s.sparse) == 1 { // the common case: one entity's neighbours
		return FromSorted(n, slices.Clone(e.g.Out(s.sparse[0], r)))
	}
	acc := e.scratch
	clear(acc)
	count := 0
	add := func(h int32) {
		for _, t := range e.g.Out(h, r) {
			w, bit := t>>6, uint64(1)<<(uint(t)&63)
			if acc[w]&bit == 0 {
				acc[w] |= bit
				count++
			}
		}
	}
	if s.bits == nil {
		for _, h := range s.sparse {
			add(h)
		}
	} else {
		for w, word := range s.bits {
			for word != 0 {
				add(int32(w<<6 + bits.TrailingZeros64(word)))
				word &= word - 1
			}
		}
	}
	if count > sparseLimit(n) {
		return &Set{n: n, bits: slices.Clone(acc), count: count}
	}
	out := &Set{n: n, count: count}
	out.sparse = appendBits(acc, make([]int32, 0, count))
	return out
}
