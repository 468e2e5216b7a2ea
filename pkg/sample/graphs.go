// Package sample grounds BetaE query structures on a KG and answers them, following
// BetaE's create_queries.py (see the README's "Sampling" section): per-split graphs,
// backward grounding from a target answer, the rejection rules, and 1p queries written
// from the split's own links. It also imports BetaE's published query pickles.
package sample

import (
	"fmt"
	"strings"

	"github.com/rocone/rocone/pkg/kg"
)

// Graphs are the graphs one split is sampled and answered on (BetaE's 3.1):
//
//	split  Big (sampled and answered on)  Small (easy answers)  Own (1p links)
//	train  train                          empty                 train
//	valid  train+valid                    train                 valid
//	test   train+valid+test               train+valid           test
type Graphs struct {
	Split string
	Big   *kg.Graph
	Small *kg.Graph // nil for train: the empty graph
	Own   *kg.Graph
}

// NewGraphs builds the graphs of split.
func NewGraphs(d *kg.Dataset, split string) (*Graphs, error) {
	n, r := d.NumEntities, d.NumRelations
	g := &Graphs{Split: split}
	switch split {
	case "train":
		g.Big = kg.NewGraph(n, r, d.Train)
		g.Own = g.Big
	case "valid":
		g.Small = kg.NewGraph(n, r, d.Train)
		g.Big = kg.NewGraph(n, r, d.Train, d.Valid)
		g.Own = kg.NewGraph(n, r, d.Valid)
	case "test":
		g.Small = kg.NewGraph(n, r, d.Train, d.Valid)
		g.Big = kg.NewGraph(n, r, d.Train, d.Valid, d.Test)
		g.Own = kg.NewGraph(n, r, d.Test)
	default:
		return nil, fmt.Errorf("unknown split %q (want train, valid or test)", split)
	}
	return g, nil
}

// DefaultMaxAnswers is BetaE's answer cap for valid and test queries (read off the
// published NELL-995 file); train queries are uncapped, as BetaE's training sets are.
const DefaultMaxAnswers = 80

// DefaultCount is BetaE's number of queries of a type for a split: on train, one per
// distinct (head, relation) train pair for 1p and every other positive type, a tenth of
// that for negation types; on valid and test, every link pair for 1p and a fixed number
// per other type (5,000 for FB15k-237, 4,000 for NELL-995, 8,000 for FB15k, 5,000 for any
// other KG). A return of -1 means "every 1p link pair".
func DefaultCount(dataset string, g *Graphs, typeName string, negation bool) int {
	if typeName == "1p" {
		return -1
	}
	if g.Split == "train" {
		pairs := g.Own.NumRuns()
		if negation {
			return pairs / 10
		}
		return pairs
	}
	name := strings.ToLower(dataset)
	switch {
	case strings.Contains(name, "fb15k-237") || strings.Contains(name, "fb15k237"):
		return 5000
	case strings.Contains(name, "nell"):
		return 4000
	case strings.Contains(name, "fb15k"):
		return 8000
	}
	return 5000
}
