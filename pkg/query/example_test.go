package query_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rocone/rocone/pkg/query"
)

// Parse a structure in BetaE's nested-tuple notation (Python's repr parses too), recognise
// its named type and walk its tree.
func ExampleParse() {
	s, err := query.Parse(`(("e", ("r",)), ("e", ("r", "n")))`)
	if err != nil {
		panic(err)
	}
	fmt.Println(s.Name(), s)
	fmt.Println("anchors:", s.NumAnchors, "relations:", s.NumRelations, "negation:", s.HasNegation())

	// The root intersects two chains; each chain applies its ops to an anchor. Slots
	// index a grounded query's id lists, in depth-first order.
	fmt.Println("root:", s.Root.Kind)
	for _, b := range s.Root.Branches {
		ops := []string{}
		for _, op := range b.Ops {
			if op.Kind == query.Project {
				ops = append(ops, fmt.Sprintf("project(relation %d)", op.Slot))
			} else {
				ops = append(ops, "negate")
			}
		}
		fmt.Printf("  %s: anchor %d, then %s\n", b.Kind, b.Base.Slot, strings.Join(ops, ", "))
	}
	// Output:
	// 2in (('e',('r',)),('e',('r','n')))
	// anchors: 2 relations: 2 negation: true
	// root: and
	//   chain: anchor 0, then project(relation 0)
	//   chain: anchor 1, then project(relation 1), negate
}

// A malformed structure is a *SyntaxError with the byte offset of the fault.
func ExampleParse_error() {
	_, err := query.Parse("(('e',('r',)),('e',('q',)))")
	var se *query.SyntaxError
	if errors.As(err, &se) {
		fmt.Println("offset", se.Offset, "-", se.Msg)
	}
	// Output:
	// offset 20 - unknown symbol "q" (want 'e', 'r', 'n' or 'u')
}

// Look up BetaE's named types; an unknown name lists the known ones.
func ExampleByName() {
	for _, name := range []string{"1p", "pi", "up"} {
		s, err := query.ByName(name)
		if err != nil {
			panic(err)
		}
		fmt.Println(name, s, "union:", s.HasUnion())
	}
	// Output:
	// 1p ('e',('r',)) union: false
	// pi (('e',('r','r')),('e',('r',))) union: false
	// up ((('e',('r',)),('e',('r',)),('u',)),('r',)) union: true
}

// Read a grounded query by ids: entity ids in place of 'e', relation ids in place of 'r',
// -2 for a negation. Validate checks it against a KG's sizes.
func ExampleParseGrounded() {
	g, err := query.ParseGrounded("((17,(5,)),(903,(12,-2)))")
	if err != nil {
		panic(err)
	}
	fmt.Println(g.Structure.Name(), g.Anchors, g.Relations)
	fmt.Println(g)
	fmt.Println(g.Validate(1000, 20))
	fmt.Println(g.Validate(500, 20))
	// Output:
	// 2in [17 903] [5 12]
	// ((17,(5,)),(903,(12,-2)))
	// <nil>
	// anchor entity id 903 out of range [0,500)
}

// Rewrite a union into disjunctive normal form: up's projection after the union
// distributes over it, giving two 2p chains that share the last relation's slot.
func ExampleStructure_DNF() {
	g, err := query.ParseGrounded("(((1,(10,)),(2,(11,)),(-1,)),(12,))")
	if err != nil {
		panic(err)
	}
	branches, err := g.Structure.DNF()
	if err != nil {
		panic(err)
	}
	for _, b := range branches {
		fmt.Println(query.NodeString(b), "=", g.NodeString(b))
	}
	// Output:
	// ('e',('r','r')) = (1,(10,12))
	// ('e',('r','r')) = (2,(11,12))
}

// table resolves names from two small tables, as kg.Lookup resolves a dataset's names.
type table struct{ entities, relations map[string]int32 }

func (t table) Entity(r query.Ref) (int32, error) { return t.find(r, t.entities, "entity") }

func (t table) Relation(r query.Ref) (int32, error) { return t.find(r, t.relations, "relation") }

func (t table) find(r query.Ref, m map[string]int32, what string) (int32, error) {
	if r.IsID {
		return r.ID, nil
	}
	if id, ok := m[r.Name]; ok {
		return id, nil
	}
	return 0, fmt.Errorf("unknown %s %q", what, r.Name)
}

// Parse a question written by names (rank --ask) and resolve it to ids with a Resolver.
// Names may be bare words or quoted; 'n' is a negation; ids may be mixed in.
func ExampleParseAsk() {
	ask, err := query.ParseAsk(`((Paris,(capital_of,)),("Peter O'Toole",(born_in,n)))`)
	if err != nil {
		panic(err)
	}
	fmt.Println(ask.Structure.Name(), ask)

	names := table{
		entities:  map[string]int32{"Paris": 3, "Peter O'Toole": 7},
		relations: map[string]int32{"capital_of": 4, "born_in": 10},
	}
	g, err := ask.Resolve(names)
	if err != nil {
		panic(err)
	}
	fmt.Println(g)

	// An unknown name is a *SyntaxError at its offset, wrapping the resolver's error.
	bad, _ := query.ParseAsk("(Lyon,(capital_of,))")
	_, err = bad.Resolve(names)
	fmt.Println(err)
	// Output:
	// 2in (('Paris',('capital_of',)),('Peter O\'Toole',('born_in','n')))
	// ((3,(4,)),(7,(10,-2)))
	// query "(Lyon,(capital_of,))": at offset 1: unknown entity "Lyon"
}
