package kg_test

import (
	"errors"
	"fmt"

	"github.com/rocone/rocone/pkg/kg"
)

// Load a dataset folder of BetaE ids (the format is detected from the first train line)
// and build the train graph in CSR form.
func ExampleLoad() {
	d, err := kg.Load("../../testdata/tiny", kg.FormatAuto)
	if err != nil {
		panic(err)
	}
	fmt.Println(d.Name, d.NumEntities, "entities,", d.NumRelations, "relation ids")
	fmt.Println("train/valid/test rows:", len(d.Train), len(d.Valid), len(d.Test))
	fmt.Println(d.FormatNote)
	for _, w := range d.Warnings { // valid and test facts of entities unseen in train are dropped
		fmt.Println("warning:", w)
	}

	g := kg.NewGraph(d.NumEntities, d.NumRelations, d.Train)
	fmt.Println("edges:", g.NumEdges(), "(head, relation) runs:", g.NumRuns())
	// Output:
	// tiny 82 entities, 10 relation ids
	// train/valid/test rows: 680 80 80
	// ../../testdata/tiny/train.tsv: format ids (line 1 is three integers; --format ids or names to choose)
	// warning: ../../testdata/tiny: dropped 2 valid rows whose entity does not occur in train
	// warning: ../../testdata/tiny: dropped 2 test rows whose entity does not occur in train
	// edges: 680 (head, relation) runs: 392
}

// A dataset of raw names gets BetaE's ids: entities and relations numbered in order of
// first appearance, relation k becoming 2k (forward) and 2k+1 (its inverse).
func ExampleLoad_names() {
	d, err := kg.Load("../../testdata/tiny-names", kg.FormatNames)
	if err != nil {
		panic(err)
	}
	fmt.Println(d.NumEntities, "entities,", d.NumRelations, "relation ids")
	fmt.Println(d.EntityNames[:3], d.RelationNames[:2])
	fmt.Println(d.Train[:2]) // ent72 rel4 ent2, both directions
	// Output:
	// 80 entities, 10 relation ids
	// [ent72 ent2 ent63] [+rel4 -rel4]
	// [{0 0 1} {1 1 0}]
}

// Follow edges: Out lists the sorted tails of (head, relation); the inverse relation
// r^1 leads back.
func ExampleGraph_Out() {
	d, err := kg.Load("../../testdata/tiny", kg.FormatIDs)
	if err != nil {
		panic(err)
	}
	g := kg.NewGraph(d.NumEntities, d.NumRelations, d.Train)
	tails := g.Out(2, 0)
	fmt.Println("2 --0-->", tails)
	fmt.Println(tails[0], "--1-->", g.Out(tails[0], 1))
	lo, hi := g.Runs(2) // one run per relation leaving entity 2
	for i := lo; i < lo+3; i++ {
		rel, tails := g.Run(i)
		fmt.Println("relation", rel, "tails", tails)
	}
	fmt.Println(hi-lo, "relations leave entity 2")
	// Output:
	// 2 --0--> [5 10 22 50 51 63 71 76 77]
	// 5 --1--> [2 53]
	// relation 0 tails [5 10 22 50 51 63 71 76 77]
	// relation 1 tails [5]
	// relation 2 tails [15 46 47 57 58]
	// 10 relations leave entity 2
}

// Find entities and relations by the names people write; an unknown name is a
// *LookupError offering the closest names.
func ExampleLookup() {
	d, err := kg.Load("../../testdata/tiny", kg.FormatIDs)
	if err != nil {
		panic(err)
	}
	l := kg.NewLookup(d)
	e, _ := l.Entity("ent2")
	loose, _ := l.Entity("ENT2") // no exact match: case is ignored
	fwd, _ := l.Relation("rel1") // a bare name is the forward relation, +rel1
	inv, _ := l.Relation("-rel1")
	fmt.Println(e, loose, fwd, inv)

	_, err = l.Entity("ent1000")
	var le *kg.LookupError
	if errors.As(err, &le) {
		fmt.Println(le.What, le.Name, "closest:", le.Candidates[:2])
	}
	// Output:
	// 2 2 2 3
	// entity ent1000 closest: [id 10 name "ent10" id 0 name "ent0"]
}
