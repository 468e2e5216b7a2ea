package query

import (
	"fmt"
	"strconv"
	"strings"
)

// Custom is the type name of any structure outside the named BetaE types.
const Custom = "custom"

// Type is a named BetaE query structure.
type Type struct {
	Name     string
	Notation string
}

// Types lists the named structures: BetaE's 14 (unions in DNF form, named 2u and up as in
// BetaE's query_name_dict) and the De Morgan union forms.
var Types = []Type{
	{"1p", "('e',('r',))"},
	{"2p", "('e',('r','r'))"},
	{"3p", "('e',('r','r','r'))"},
	{"2i", "(('e',('r',)),('e',('r',)))"},
	{"3i", "(('e',('r',)),('e',('r',)),('e',('r',)))"},
	{"ip", "((('e',('r',)),('e',('r',))),('r',))"},
	{"pi", "(('e',('r','r')),('e',('r',)))"},
	{"2u", "(('e',('r',)),('e',('r',)),('u',))"},
	{"up", "((('e',('r',)),('e',('r',)),('u',)),('r',))"},
	{"2in", "(('e',('r',)),('e',('r','n')))"},
	{"3in", "(('e',('r',)),('e',('r',)),('e',('r','n')))"},
	{"inp", "((('e',('r',)),('e',('r','n'))),('r',))"},
	{"pin", "(('e',('r','r')),('e',('r','n')))"},
	{"pni", "(('e',('r','r','n')),('e',('r',)))"},
	{"2u-DM", "((('e',('r','n')),('e',('r','n'))),('n',))"},
	{"up-DM", "((('e',('r','n')),('e',('r','n'))),('n','r'))"},
}

// TrainTypes are the structures BetaE trains on; EPFOTypes and NegationTypes are the two
// groups the papers average over.
var (
	TrainTypes    = []string{"1p", "2p", "3p", "2i", "3i", "2in", "3in", "inp", "pin", "pni"}
	EPFOTypes     = []string{"1p", "2p", "3p", "2i", "3i", "pi", "ip", "2u", "up"}
	NegationTypes = []string{"2in", "3in", "inp", "pin", "pni"}
	// EvalTypes are the 14 types of the papers' tables, in their column order.
	EvalTypes = append(append([]string{}, EPFOTypes...), NegationTypes...)
)

var (
	nameOf   = map[string]string{}
	byName   = map[string]*Structure{}
	typeRank = map[string]int{}
)

func init() {
	for i, t := range Types {
		s := MustParse(t.Notation)
		if s.String() != t.Notation {
			panic("query: notation of " + t.Name + " is not canonical")
		}
		nameOf[t.Notation] = t.Name
		byName[t.Name] = s
		typeRank[t.Name] = i
	}
}

// ByName returns the named structure, or an error listing the known names.
func ByName(name string) (*Structure, error) {
	if s, ok := byName[name]; ok {
		return s, nil
	}
	names := make([]string, len(Types))
	for i, t := range Types {
		names[i] = t.Name
	}
	return nil, fmt.Errorf("unknown query type %q (known: %s)", name, strings.Join(names, " "))
}

// TypeOrder sorts type names in the order of Types, custom structures last.
func TypeOrder(name string) int {
	if r, ok := typeRank[name]; ok {
		return r
	}
	return len(Types)
}

// Grounded is a query: a structure with its anchor entity ids and relation ids, both in
// depth-first order (BetaE's flatten order).
type Grounded struct {
	Structure *Structure
	Anchors   []int32
	Relations []int32
}

// Validate checks the id counts against the structure and the ids against the KG's sizes.
func (g *Grounded) Validate(numEntities, numRelations int) error {
	s := g.Structure
	if len(g.Anchors) != s.NumAnchors {
		return fmt.Errorf("structure %s needs %d anchors, got %d", s, s.NumAnchors, len(g.Anchors))
	}
	if len(g.Relations) != s.NumRelations {
		return fmt.Errorf("structure %s needs %d relations, got %d", s, s.NumRelations, len(g.Relations))
	}
	for _, a := range g.Anchors {
		if a < 0 || int(a) >= numEntities {
			return fmt.Errorf("anchor entity id %d out of range [0,%d)", a, numEntities)
		}
	}
	for _, r := range g.Relations {
		if r < 0 || int(r) >= numRelations {
			return fmt.Errorf("relation id %d out of range [0,%d)", r, numRelations)
		}
	}
	return nil
}

// String prints the grounded tuple, e.g. ((17,(5,)),(903,(12,-2))).
func (g *Grounded) String() string {
	var b strings.Builder
	g.write(&b, g.Structure.Root)
	return b.String()
}

// NodeString prints the grounded subtree at n, a node of g's structure.
func (g *Grounded) NodeString(n *Node) string {
	var b strings.Builder
	g.write(&b, n)
	return b.String()
}

// Key is a compact, unique text key of the grounded query (structure and ids), used to
// detect repeats.
func (g *Grounded) Key() string { return g.String() }

func (g *Grounded) write(b *strings.Builder, n *Node) {
	writeTuple(b, n, tupleSpelling{
		anchor:   func(slot int) string { return strconv.Itoa(int(g.Anchors[slot])) },
		relation: func(slot int) string { return strconv.Itoa(int(g.Relations[slot])) },
		negation: "-2", union: "(-1,)",
	})
}
