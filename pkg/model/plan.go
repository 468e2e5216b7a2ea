package model

import (
	"fmt"

	"github.com/rocone/rocone/pkg/query"
)

// A Plan is a query structure compiled into a straight-line program over cone batches
// (docs/model.md §8): its DNF branches (docs/model.md §6) are walked depth first, each node becoming
// one step that writes one cone batch. Nodes shared between DNF branches (the DNF of an
// intersection of unions reuses sub-trees) are computed once.
//
// The plan is the only place a structure is looked at; forward runs the steps in order,
// backward in reverse. Nothing anywhere depends on the query type's name.
type Plan struct {
	Structure *query.Structure
	steps     []step
	numCones  int
	branches  []int // the cone of each DNF branch's root
}

type stepKind uint8

const (
	stepAnchor    stepKind = iota // an anchor entity: axis θ_e, half-aperture 0
	stepProject                   // a relation projection (rotation or ConE's MLP)
	stepNegate                    // negation
	stepIntersect                 // intersection of two or more cones
)

// step writes cone out from the cones in.
type step struct {
	kind stepKind
	slot int   // stepAnchor: anchor slot; stepProject: relation slot
	in   []int // stepProject, stepNegate: one cone; stepIntersect: the branches
	out  int
}

// Compile turns a structure into a plan.
func Compile(s *query.Structure) (*Plan, error) {
	trees, err := s.DNF()
	if err != nil {
		return nil, err
	}
	p := &Plan{Structure: s}
	memo := map[*query.Node]int{}
	for _, t := range trees {
		c, err := p.emit(t, memo)
		if err != nil {
			return nil, err
		}
		p.branches = append(p.branches, c)
	}
	return p, nil
}

func (p *Plan) add(st step) int {
	st.out = p.numCones
	p.numCones++
	p.steps = append(p.steps, st)
	return st.out
}

func (p *Plan) emit(n *query.Node, memo map[*query.Node]int) (int, error) {
	if c, ok := memo[n]; ok {
		return c, nil
	}
	var c int
	switch n.Kind {
	case query.Anchor:
		c = p.add(step{kind: stepAnchor, slot: n.Slot})
	case query.Chain:
		var err error
		if c, err = p.emit(n.Base, memo); err != nil {
			return 0, err
		}
		for _, op := range n.Ops {
			switch op.Kind {
			case query.Project:
				c = p.add(step{kind: stepProject, slot: op.Slot, in: []int{c}})
			case query.Negate:
				c = p.add(step{kind: stepNegate, in: []int{c}})
			default:
				return 0, fmt.Errorf("model: unknown chain operation %d", op.Kind)
			}
		}
	case query.And:
		in := make([]int, len(n.Branches))
		for i, b := range n.Branches {
			var err error
			if in[i], err = p.emit(b, memo); err != nil {
				return 0, err
			}
		}
		c = p.add(step{kind: stepIntersect, in: in})
	default:
		return 0, fmt.Errorf("model: node kind %s left in a DNF branch", n.Kind)
	}
	memo[n] = c
	return c, nil
}

// Intersections returns the indices of the plan's intersection steps, in order: a
// backend draws their dropout masks in this order, group after group, as the CPU does.
func (p *Plan) Intersections() []int {
	var out []int
	for i, st := range p.steps {
		if st.kind == stepIntersect {
			out = append(out, i)
		}
	}
	return out
}

// NumCones is the number of cones the plan computes (one per step).
func (p *Plan) NumCones() int { return p.numCones }

// NumSteps is the number of steps.
func (p *Plan) NumSteps() int { return len(p.steps) }

// Branches returns the cone of each DNF branch's root (a copy).
func (p *Plan) Branches() []int { return append([]int(nil), p.branches...) }
