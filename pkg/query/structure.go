// Package query holds query structures as data: a small tree parsed from, and printed to,
// BetaE's nested-tuple notation, the named BetaE types, and grounded queries (a structure
// plus its anchor and relation ids in depth-first order).
//
// Every other package walks the same tree: the sampler grounds it, the answer engine
// evaluates it, the model embeds it. Adding a structure touches none of them.
package query

import (
	"fmt"
	"strings"
)

// Kind is the kind of a node in a structure tree.
type Kind uint8

const (
	// Anchor is BetaE's 'e': a given entity. It only appears as the base of a Chain.
	Anchor Kind = iota
	// Chain is (X, (op, op, ...)): the ops, each 'r' or 'n', applied left to right to X.
	Chain
	// And is (A, B, ...): the intersection of two or more branches.
	And
	// Or is (A, B, ..., ('u',)): the union of two or more branches (BetaE's DNF form).
	Or
)

func (k Kind) String() string {
	switch k {
	case Anchor:
		return "anchor"
	case Chain:
		return "chain"
	case And:
		return "and"
	case Or:
		return "or"
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// OpKind is the kind of one step of a chain.
type OpKind uint8

const (
	// Project is BetaE's 'r': follow a relation.
	Project OpKind = iota
	// Negate is BetaE's 'n': the complement.
	Negate
)

// Op is one step of a chain. For a projection, Slot is the index of its relation id in the
// grounded query's relation list.
type Op struct {
	Kind OpKind
	Slot int
}

// Node is a node of a structure tree. Slots index the grounded query's id lists, so one
// tree serves every query of its structure.
type Node struct {
	Kind     Kind
	Slot     int     // Anchor: index into the anchor list
	Base     *Node   // Chain: the node the ops apply to
	Ops      []Op    // Chain
	Branches []*Node // And, Or
}

// Structure is a parsed query structure: the root of its tree and its sizes.
type Structure struct {
	Root         *Node
	NumAnchors   int
	NumRelations int
	notation     string
}

// New indexes a tree built by hand (slots in depth-first order) and returns its Structure.
func New(root *Node) (*Structure, error) {
	s := &Structure{Root: root}
	if err := s.index(root, true); err != nil {
		return nil, err
	}
	var b strings.Builder
	writeNode(&b, root)
	s.notation = b.String()
	return s, nil
}

func (s *Structure) index(n *Node, top bool) error {
	switch n.Kind {
	case Anchor:
		if top {
			return fmt.Errorf("a structure cannot be a bare anchor")
		}
		n.Slot = s.NumAnchors
		s.NumAnchors++
	case Chain:
		if n.Base == nil {
			return fmt.Errorf("chain without a base")
		}
		if len(n.Ops) == 0 {
			return fmt.Errorf("chain without operations")
		}
		if err := s.index(n.Base, false); err != nil {
			return err
		}
		for i := range n.Ops {
			if n.Ops[i].Kind == Project {
				n.Ops[i].Slot = s.NumRelations
				s.NumRelations++
			}
		}
	case And, Or:
		if len(n.Branches) < 2 {
			return fmt.Errorf("%s with %d branch(es); need at least 2", n.Kind, len(n.Branches))
		}
		for _, b := range n.Branches {
			if b.Kind == Anchor {
				return fmt.Errorf("a bare anchor cannot be a branch of %s", n.Kind)
			}
			if err := s.index(b, false); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("unknown node kind %d", n.Kind)
	}
	return nil
}

// String returns the compact nested-tuple notation, e.g. (('e',('r',)),('e',('r','n'))).
func (s *Structure) String() string { return s.notation }

// Name is the BetaE type name of the structure (see Types), or "custom".
func (s *Structure) Name() string {
	if name, ok := nameOf[s.notation]; ok {
		return name
	}
	return Custom
}

// HasNegation reports whether any chain of the structure contains 'n'.
func (s *Structure) HasNegation() bool { return hasOp(s.Root, Negate) }

// HasUnion reports whether the structure contains a DNF union.
func (s *Structure) HasUnion() bool { return hasUnion(s.Root) }

func hasOp(n *Node, k OpKind) bool {
	switch n.Kind {
	case Chain:
		for _, op := range n.Ops {
			if op.Kind == k {
				return true
			}
		}
		return hasOp(n.Base, k)
	case And, Or:
		for _, b := range n.Branches {
			if hasOp(b, k) {
				return true
			}
		}
	}
	return false
}

func hasUnion(n *Node) bool {
	switch n.Kind {
	case Chain:
		return hasUnion(n.Base)
	case Or:
		return true
	case And:
		for _, b := range n.Branches {
			if hasUnion(b) {
				return true
			}
		}
	}
	return false
}

// NodeString is the notation of the subtree at n.
func NodeString(n *Node) string {
	var b strings.Builder
	writeNode(&b, n)
	return b.String()
}

func writeNode(b *strings.Builder, n *Node) {
	writeTuple(b, n, tupleSpelling{
		anchor:   func(int) string { return "'e'" },
		relation: func(int) string { return "'r'" },
		negation: "'n'", union: "('u',)",
	})
}

// tupleSpelling is how a printer of BetaE's tuple notation writes the leaves: the
// structure notation writes 'e', 'r', 'n' and ('u',), a grounded query ids, -2 and (-1,), an
// asked query names. The tree around them is written by writeTuple alone.
type tupleSpelling struct {
	anchor, relation func(slot int) string
	negation, union  string
}

// writeTuple writes n in BetaE's nested-tuple notation with the leaves spelled by sp.
func writeTuple(b *strings.Builder, n *Node, sp tupleSpelling) {
	switch n.Kind {
	case Anchor:
		b.WriteString(sp.anchor(n.Slot))
	case Chain:
		b.WriteByte('(')
		writeTuple(b, n.Base, sp)
		b.WriteString(",(")
		for i, op := range n.Ops {
			if i > 0 {
				b.WriteByte(',')
			}
			if op.Kind == Project {
				b.WriteString(sp.relation(op.Slot))
			} else {
				b.WriteString(sp.negation)
			}
		}
		if len(n.Ops) == 1 {
			b.WriteByte(',')
		}
		b.WriteString("))")
	case And, Or:
		b.WriteByte('(')
		for i, br := range n.Branches {
			if i > 0 {
				b.WriteByte(',')
			}
			writeTuple(b, br, sp)
		}
		if n.Kind == Or {
			b.WriteString("," + sp.union)
		}
		b.WriteByte(')')
	}
}
