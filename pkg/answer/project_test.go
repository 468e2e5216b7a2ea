package answer

import (
	"runtime"
	"slices"
	"testing"

	"github.com/rocone/rocone/pkg/kg"
	"github.com/rocone/rocone/pkg/query"
)

// TestProjectRepresentation: Project returns the tails of every entity of its input, and
// holds them as the package comment says, sparse up to N/32 entities and as a bitset
// above, whichever way it got there (one entity's run, the union of several entities'
// runs, a bitset input), so that the sets it feeds to the set algebra are in the cheaper
// form. The sizes sit on both sides of N/32 = 4.
func TestProjectRepresentation(t *testing.T) {
	const n = 128
	edges := map[int32][]int32{
		0:   {10, 11, 12, 13},     // 4 tails: sparse
		1:   {10, 11, 12, 13, 14}, // 5 tails: dense
		2:   {20, 21},
		3:   {21, 22},
		4:   {23, 24},
		5:   {22, 90},
		100: {1},
	}
	var ts []kg.Triple
	for h, tails := range edges {
		for _, tl := range tails {
			ts = append(ts, kg.Triple{Head: h, Relation: 0, Tail: tl})
		}
	}
	eng := NewEngine(kg.NewGraph(n, 2, ts))
	for _, tc := range []struct {
		name string
		in   []int32
		want []int32
	}{
		{"one entity, at the limit", []int32{0}, []int32{10, 11, 12, 13}},
		{"one entity, over the limit", []int32{1}, []int32{10, 11, 12, 13, 14}},
		{"one entity, no edges", []int32{7}, nil},
		{"several, overlapping, under the limit", []int32{2, 3}, []int32{20, 21, 22}},
		{"several, at the limit", []int32{2, 5}, []int32{20, 21, 22, 90}},
		{"several, over the limit", []int32{2, 3, 4}, []int32{20, 21, 22, 23, 24}},
		{"dense input, dense output", []int32{0, 1, 2, 3, 4, 5}, []int32{10, 11, 12, 13, 14, 20, 21, 22, 23, 24, 90}},
		{"dense input, sparse output", []int32{6, 7, 8, 9, 100}, []int32{1}},
	} {
		in := FromSorted(n, slices.Clone(tc.in))
		got := eng.Project(in, 0)
		if ids := got.IDs(); !slices.Equal(ids, tc.want) {
			t.Errorf("%s: Project(%v) = %v, want %v", tc.name, tc.in, ids, tc.want)
		}
		if got.Len() != len(tc.want) {
			t.Errorf("%s: Len %d, want %d", tc.name, got.Len(), len(tc.want))
		}
		for _, e := range tc.want {
			if !got.Contains(e) {
				t.Errorf("%s: Contains(%d) = false", tc.name, e)
			}
		}
		if wantDense := len(tc.want) > sparseLimit(n); got.Dense() != wantDense {
			t.Errorf("%s: %d of %d entities held dense=%v, want %v", tc.name, got.Len(), n, got.Dense(), wantDense)
		}
	}
}

// TestNegationBuildsNoComplement: the engine answers every BetaE negation type by
// subtracting the negated branch, at the cost of the positive sets, never building the
// complement over all entities (a bitset of N bits per query, what made negation
// queries slow on large graphs). It measures the bytes a query allocates on a graph of
// 2^20 entities, whose complement would take 128 KiB.
func TestNegationBuildsNoComplement(t *testing.T) {
	const n = 1 << 20
	var ts []kg.Triple
	for e := int32(0); e < 10; e++ { // a path 0 -r0-> 1 -r0-> ... -r0-> 10, and back by r1
		ts = append(ts, kg.Triple{Head: e, Relation: 0, Tail: e + 1}, kg.Triple{Head: e + 1, Relation: 1, Tail: e})
	}
	eng := NewEngine(kg.NewGraph(n, 2, ts))
	complementBytes := uint64(words(n) * 8)
	for _, name := range query.NegationTypes {
		s, err := query.ByName(name)
		if err != nil {
			t.Fatal(err)
		}
		q := &query.Grounded{Structure: s, Anchors: make([]int32, s.NumAnchors), Relations: make([]int32, s.NumRelations)}
		for i := range q.Anchors {
			q.Anchors[i] = int32(i) // relations all r0: every branch reaches a few entities
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got := eng.Answers(q)
		runtime.ReadMemStats(&after)
		if bytes := after.TotalAlloc - before.TotalAlloc; bytes >= complementBytes/4 {
			t.Errorf("%s: answering %s allocated %d bytes; a complement over %d entities takes %d", name, q, bytes, n, complementBytes)
		}
		if got.Dense() || got.Len() > 10 {
			t.Errorf("%s: %s has %d answers (dense %v), want a few", name, q, got.Len(), got.Dense())
		}
	}
}
