// Command exportqueries writes a queries artifact as JSON for
// scripts/reference/make_fixtures.py (which runs QE-ConE, where there is no Arrow reader):
//
//	go run ./scripts/reference/exportqueries QUERIES.arrow OUT.json
//
// {"num_entities", "num_relations", "queries": [{"type", "structure", "anchors",
// "relations", "answers"}]}, answers being the hard answers (a train file's answers).
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/rocone/rocone/pkg/artifact"
)

type out struct {
	NumEntities  int     `json:"num_entities"`
	NumRelations int     `json:"num_relations"`
	Queries      []query `json:"queries"`
}

type query struct {
	Type      string  `json:"type"`
	Structure string  `json:"structure"`
	Anchors   []int32 `json:"anchors"`
	Relations []int32 `json:"relations"`
	Answers   []int32 `json:"answers"`
}

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "exportqueries:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("usage: exportqueries QUERIES.arrow OUT.json")
	}
	meta, qs, err := artifact.ReadQueries(args[0])
	if err != nil {
		return err
	}
	o := out{NumEntities: meta.NumEntities, NumRelations: meta.NumRelations}
	for _, q := range qs {
		o.Queries = append(o.Queries, query{Type: q.Type, Structure: q.Structure, Anchors: q.Anchors, Relations: q.Relations, Answers: q.Hard})
	}
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	tmp := args[1] + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, args[1])
}
