package artifact_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rocone/rocone/pkg/artifact"
)

// Write a queries artifact row by row and read it back a row at a time. The writer
// checks every row against the metadata and leaves nothing at the path until Close
// succeeds; the reader checks the kind, version, columns, checksum and rows.
func ExampleCreateQueries() {
	dir, err := os.MkdirTemp("", "artifact-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "test-queries.arrow")

	meta := artifact.QueriesMeta{Split: "test", Dataset: "toy", NumEntities: 10, NumRelations: 4}
	w, err := artifact.CreateQueries(path, meta)
	if err != nil {
		panic(err)
	}
	defer w.Abort() // a no-op after a successful Close
	rows := []artifact.Query{
		{ID: 0, Type: "1p", Structure: "('e',('r',))", Anchors: []int32{3}, Relations: []int32{0}, Easy: []int32{1}, Hard: []int32{4, 7}},
		{ID: 1, Type: "2in", Structure: "(('e',('r',)),('e',('r','n')))", Anchors: []int32{3, 5}, Relations: []int32{0, 2}, Hard: []int32{9}},
	}
	for i := range rows {
		if err := w.Write(&rows[i]); err != nil {
			panic(err)
		}
	}
	if err := w.Close(); err != nil {
		panic(err)
	}

	r, err := artifact.OpenQueries(path)
	if err != nil {
		panic(err)
	}
	defer r.Close()
	m := r.Meta()
	fmt.Println(m.Split, m.Dataset, m.NumEntities, m.NumRelations)
	for r.Next() {
		q := r.Query()
		fmt.Println(q.ID, q.Type, q.Anchors, q.Relations, q.Easy, q.Hard)
	}
	if err := r.Err(); err != nil {
		panic(err)
	}
	// Output:
	// test toy 10 4
	// 0 1p [3] [0] [1] [4 7]
	// 1 2in [3 5] [0 2] [] [9]
}

// A row that breaks the contract is refused when written, naming the path and the row,
// and the artifact is not created.
func ExampleWriteQueries_invalid() {
	dir, err := os.MkdirTemp("", "artifact-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "q.arrow")

	meta := artifact.QueriesMeta{Split: "valid", Dataset: "toy", NumEntities: 10, NumRelations: 4}
	bad := []artifact.Query{
		{ID: 0, Type: "2p", Structure: "('e',('r',))", Anchors: []int32{3}, Relations: []int32{0}, Hard: []int32{4}},
	}
	err = artifact.WriteQueries(path, meta, bad)
	fmt.Println(strings.TrimPrefix(err.Error(), dir+string(filepath.Separator)))
	_, statErr := os.Stat(path)
	fmt.Println("created:", !os.IsNotExist(statErr))
	// Output:
	// q.arrow: row 0 (id 0): type "2p", but its structure ('e',('r',)) is 1p
	// created: false
}
