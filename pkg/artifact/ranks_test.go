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

// TestRanksAnswerTwice: a query's answers come once each; the same answer twice in a row
// is refused, naming the file and the query (the writer and the readers check the order
// alike, by rankOrder).
func TestRanksAnswerTwice(t *testing.T) {
	meta := RanksMeta{Model: "rocone", Dataset: "tiny", Split: "test", NumEntities: 9, NumQueries: 1, Queries: "q",
		QueriesHash: "x", Checkpoint: "c", CheckpointHash: "y", Seed: "3"}
	path := filepath.Join(t.TempDir(), "r.arrow")
	w, err := CreateRanks(path, meta)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	if err := w.Write(&Rank{ID: 0, Type: "1p", Answer: 5, Rank: 2}); err != nil {
		t.Fatal(err)
	}
	err = w.Write(&Rank{ID: 0, Type: "1p", Answer: 5, Rank: 3})
	if want := path + ": query 0: answer 5 after 5: a query's answers come in ascending order, once each"; err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

// TestRanksTopChecks: ReadRanks checks a ranks file's top-K columns: tied scores are in
// order, a top entity out of range (the first included) is refused with its row.
func TestRanksTopChecks(t *testing.T) {
	meta := RanksMeta{Model: "rocone", Dataset: "tiny", Split: "test", NumEntities: 9, NumQueries: 1, Queries: "q",
		QueriesHash: "x", Checkpoint: "c", CheckpointHash: "y", Seed: "3", TopK: 2}
	for _, tc := range []struct {
		name   string
		top    []int32
		scores []float32
		want   string // "" when read
	}{
		{"tied scores", []int32{3, 4}, []float32{0.5, 0.5}, ""},
		{"first out of range", []int32{9, 4}, []float32{2, 1}, "row 0: top entity 9 out of range [0, 9)"},
		{"second out of range", []int32{3, -1}, []float32{2, 1}, "row 0: top entity -1 out of range [0, 9)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "r.arrow")
			w, err := CreateRanks(path, meta)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Abort()
			if err := w.Write(&Rank{ID: 0, Type: "1p", Answer: 5, Rank: 2, Top: tc.top, TopScores: tc.scores, TopNames: []string{"a", "b"}}); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			_, _, err = ReadRanks(path)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if want := path + ": " + tc.want; err == nil || err.Error() != want {
				t.Errorf("err = %v\nwant %s", err, want)
			}
		})
	}
}
