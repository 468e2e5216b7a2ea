package query

import "fmt"

// DNF rewrites a structure as a union of conjunctive trees (no Or node), pushing every
// union to the top: a projection distributes over a union, and an intersection of unions
// becomes the union of the intersections of every combination. The trees it returns keep
// the slots of the original structure, so each indexes the original query's id lists;
// up = ((e,r1),(e,r2),u),(r3) gives (e,(r1,r3)) and (e,(r2,r3)), both sharing r3's slot.
//
// A structure without a union gives itself. A negation applied to a union has no DNF
// without rewriting it by De Morgan; it is an error, and so is a DNF of more than
// MaxBranches trees.
func (s *Structure) DNF() ([]*Node, error) {
	if dnfSize(s.Root) > MaxBranches {
		return nil, fmt.Errorf("its DNF has more than %d branches (an intersection of unions has the product of their branches): too many to embed", MaxBranches)
	}
	return dnf(s.Root)
}

// MaxBranches bounds the trees of a DNF. An intersection of k two-branch unions has 2^k
// of them, so without a bound a query of a few hundred bytes asks for gigabytes; and a
// cones artifact numbers a query's branches in an int8, 0 to 127. BetaE's unions have 2.
const MaxBranches = 128

// dnfSize is the number of trees DNF makes of n, counted up to MaxBranches+1.
func dnfSize(n *Node) int {
	switch n.Kind {
	case Chain:
		return dnfSize(n.Base)
	case Or, And:
		size := 0
		if n.Kind == And {
			size = 1
		}
		for _, b := range n.Branches {
			if n.Kind == Or {
				size += dnfSize(b)
			} else {
				size *= dnfSize(b)
			}
			size = min(size, MaxBranches+1)
		}
		return size
	}
	return 1
}

func dnf(n *Node) ([]*Node, error) {
	switch n.Kind {
	case Anchor:
		return []*Node{n}, nil
	case Chain:
		bases, err := dnf(n.Base)
		if err != nil {
			return nil, err
		}
		if len(bases) == 1 {
			if bases[0] == n.Base {
				return []*Node{n}, nil
			}
			return []*Node{{Kind: Chain, Base: bases[0], Ops: n.Ops}}, nil
		}
		for _, op := range n.Ops {
			if op.Kind == Negate {
				return nil, fmt.Errorf("negation of a union has no DNF form; write it in De Morgan form")
			}
		}
		out := make([]*Node, len(bases))
		for i, b := range bases {
			out[i] = &Node{Kind: Chain, Base: b, Ops: n.Ops}
			if b.Kind == Chain { // (X,(r1,)) then (r3,) is (X,(r1,r3))
				out[i] = &Node{Kind: Chain, Base: b.Base, Ops: append(append([]Op{}, b.Ops...), n.Ops...)}
			}
		}
		return out, nil
	case Or:
		var out []*Node
		for _, b := range n.Branches {
			bs, err := dnf(b)
			if err != nil {
				return nil, err
			}
			out = append(out, bs...)
		}
		return out, nil
	case And:
		combos := [][]*Node{nil}
		changed := false
		for _, b := range n.Branches {
			bs, err := dnf(b)
			if err != nil {
				return nil, err
			}
			if len(bs) != 1 || bs[0] != b {
				changed = true
			}
			next := make([][]*Node, 0, len(combos)*len(bs))
			for _, c := range combos {
				for _, x := range bs {
					next = append(next, append(append([]*Node{}, c...), x))
				}
			}
			combos = next
		}
		if !changed {
			return []*Node{n}, nil
		}
		out := make([]*Node, len(combos))
		for i, c := range combos {
			out[i] = &Node{Kind: And, Branches: c}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown node kind %d", n.Kind)
}
