package eval

import (
	"slices"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/artifact"
)

// TestQueriesFromArtifact: rows become queries with their structure parsed and their ids
// and answers checked against the model's sizes (ids 0 and n−1 are in range, −1 and n are
// not); a bad row is named by its id.
func TestQueriesFromArtifact(t *testing.T) {
	const entities, relations = 10, 4
	const p2 = "('e',('r','r'))"
	row := func(id int64, structure string, anchors, rels, easy, hard []int32) artifact.Query {
		return artifact.Query{ID: id, Type: "2p", Structure: structure, Anchors: anchors, Relations: rels, Easy: easy, Hard: hard}
	}
	good := []artifact.Query{
		row(7, p2, []int32{0}, []int32{0, 3}, []int32{0, 9}, []int32{1, 8}),
		row(8, p2, []int32{9}, []int32{1, 2}, nil, []int32{0}),
		row(9, "(('e',('r',)),('e',('r','n')))", []int32{3, 4}, []int32{2, 1}, []int32{5}, []int32{9}),
	}
	qs, err := QueriesFromArtifact(good, entities, relations)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != len(good) {
		t.Fatalf("%d queries from %d rows", len(qs), len(good))
	}
	for i, q := range qs {
		r := good[i]
		if q.Type != r.Type || q.Query.Structure.String() != r.Structure || q.Query.String() == "" ||
			!slices.Equal(q.Query.Anchors, r.Anchors) || !slices.Equal(q.Query.Relations, r.Relations) ||
			!slices.Equal(q.Easy, r.Easy) || !slices.Equal(q.Hard, r.Hard) {
			t.Errorf("row %d: %+v", r.ID, q)
		}
	}
	if qs[0].Query.Structure != qs[1].Query.Structure {
		t.Error("two rows of one structure got two parsed structures")
	}

	for _, c := range []struct {
		name string
		row  artifact.Query
		want string
	}{
		{"bad structure", row(5, "('e',('r','r')", []int32{0}, []int32{0, 0}, nil, []int32{1}), "query 5:"},
		{"anchor count", row(5, p2, []int32{0, 1}, []int32{0, 0}, nil, []int32{1}), "query 5 (2p): structure"},
		{"anchor out of range", row(5, p2, []int32{10}, []int32{0, 0}, nil, []int32{1}), "query 5 (2p): anchor entity id 10"},
		{"relation out of range", row(5, p2, []int32{0}, []int32{0, 4}, nil, []int32{1}), "query 5 (2p): relation id 4"},
		{"hard answer n", row(5, p2, []int32{0}, []int32{0, 0}, nil, []int32{1, 10}), "query 5 (2p): answer 10 out of range [0,10)"},
		{"hard answer negative", row(5, p2, []int32{0}, []int32{0, 0}, nil, []int32{-1}), "answer -1 out of range"},
		{"easy answer n", row(5, p2, []int32{0}, []int32{0, 0}, []int32{10}, []int32{1}), "answer 10 out of range"},
		{"easy answer negative", row(5, p2, []int32{0}, []int32{0, 0}, []int32{2, -1}, []int32{1}), "answer -1 out of range"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows := append(append([]artifact.Query{}, good...), c.row)
			qs, err := QueriesFromArtifact(rows, entities, relations)
			if err == nil || qs != nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %d queries, %v; want an error containing %q", len(qs), err, c.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	qs := []RankQuery{{Type: "1p"}, {Type: "2p"}, {Type: "1p"}, {Type: "2in"}}
	t.Run("by type, empty rank lists left out", func(t *testing.T) {
		ranks := [][]int32{{1, 4}, {2}, {10}, nil}
		sum, err := Summarize(qs, ranks)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range sum.Types {
			names = append(names, r.Type)
		}
		if want := []string{"1p", "2p"}; !slices.Equal(names, want) {
			t.Fatalf("types %v, want %v (2in has no ranks and must be left out)", names, want)
		}
		p1, _ := sum.Type("1p")
		// Two queries: MRR (1+1/4)/2 = 0.625 and 1/10; Hits@1 1/2 and 0; Hits@10 1 and 1.
		want := TypeResult{Type: "1p", Queries: 2, Answers: 3,
			Metrics: Metrics{MRR: (0.625 + 0.1) / 2, H1: 0.25, H3: 0.25, H10: 1}}
		if p1 != want {
			t.Errorf("1p = %+v, want %+v", p1, want)
		}
		p2, _ := sum.Type("2p")
		if p2.Queries != 1 || p2.Answers != 1 || p2.Metrics != (Metrics{MRR: 0.5, H1: 0, H3: 1, H10: 1}) {
			t.Errorf("2p = %+v", p2)
		}
	})
	for _, tc := range []struct {
		name  string
		ranks [][]int32
		want  string
	}{
		{"fewer rank lists than queries", [][]int32{{1}, {1}, {1}}, "eval: 3 rank lists for 4 queries"},
		{"more rank lists than queries", [][]int32{{1}, {1}, {1}, {1}, {1}}, "eval: 5 rank lists for 4 queries"},
		{"rank below 1", [][]int32{{1}, {0, 3}, {1}, nil}, "eval: rank 0 is below 1 (type 2p)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Summarize(qs, tc.ranks)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
