package sample_test

import (
	"context"
	"fmt"

	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/sample"
)

// Sample test queries of three types on a small KG with a fixed seed. The test split is
// grounded and answered on train+valid+test; an answer already reached on train+valid is
// easy, one that needs a test edge is hard. The output depends on the seed and the KG
// only, never on the number of workers.
func ExampleGenerate() {
	d, err := kg.Load("../../testdata/tiny", kg.FormatIDs)
	if err != nil {
		panic(err)
	}
	g, err := sample.NewGraphs(d, "test")
	if err != nil {
		panic(err)
	}
	opts := sample.Options{
		Dataset: d.Name,
		Types:   []string{"1p", "2i", "2in"},
		Counts:  map[string]int{"1p": 3, "2i": 3, "2in": 3},
		Seed:    1,
		Workers: 2,
	}
	var first []*sample.Query // the first query of each type: they come type by type
	stats, err := sample.Generate(context.Background(), g, opts, func(q *sample.Query) error {
		if len(first) == 0 || first[len(first)-1].Type != q.Type {
			first = append(first, q)
		}
		return nil
	})
	if err != nil {
		panic(err)
	}
	for _, s := range stats {
		fmt.Printf("%s: %d queries\n", s.Type, s.Queries)
	}
	for _, q := range first {
		fmt.Println(q.Type, q.Grounded, "easy answers:", len(q.Easy), "hard:", q.Hard)
	}
	// Output:
	// 1p: 3 queries
	// 2i: 3 queries
	// 2in: 3 queries
	// 1p (6,(0,)) easy answers: 2 hard: [28]
	// 2i ((50,(4,)),(24,(0,))) easy answers: 0 hard: [47]
	// 2in ((1,(0,)),(11,(6,-2))) easy answers: 22 hard: [0 37]
}

// Read a --types list: names and structure notations, split at the top level only.
func ExampleParseTypes() {
	types, err := sample.ParseTypes("1p,(('e',('r',)),('e',('r','n'))),('e',('r','r','r','r'))")
	if err != nil {
		panic(err)
	}
	fmt.Printf("%q\n", types)
	_, err = sample.ParseTypes("2in,(('e',('r',)),('e',('r','n')))")
	fmt.Println(err)
	// Output:
	// ["1p" "(('e',('r',)),('e',('r','n')))" "('e',('r','r','r','r'))"]
	// --types "2in,(('e',('r',)),('e',('r','n')))": 2in is given twice (as "2in" and "(('e',('r',)),('e',('r','n')))")
}
