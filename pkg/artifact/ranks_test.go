package artifact

import (
	"path/filepath"
	"reflect"
	"testing"
)

// TestRanksBounds: answers 0 and num_entities−1, and ranks 1 and num_entities, are in
// range: written and read back as they were.
func TestRanksBounds(t *testing.T) {
	meta := RanksMeta{Model: "rocone", Dataset: "tiny", Split: "test", NumEntities: 9, NumQueries: 2, Queries: "q",
		QueriesHash: "x", Checkpoint: "c", CheckpointHash: "y", Seed: "3"}
	rows := []Rank{
		{ID: 0, Type: "1p", Answer: 0, Rank: 9},
		{ID: 0, Type: "1p", Answer: 8, Rank: 1},
		{ID: 1, Type: "2in", Answer: 0, Rank: 1},
	}
	path := filepath.Join(t.TempDir(), "r.arrow")
	w, err := CreateRanks(path, meta)
	if err != nil {
		t.Fatal(err)
	}
	for i := range rows {
		if err := w.Write(&rows[i]); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	gotMeta, got, err := ReadRanks(path)
	if err != nil {
		t.Fatal(err)
	}
	if gotMeta != meta || !reflect.DeepEqual(got, rows) {
		t.Errorf("read back %+v %+v\nwant %+v %+v", gotMeta, got, meta, rows)
	}
}
