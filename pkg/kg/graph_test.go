package kg

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestGraphMatchesTriples checks the CSR against a map of the triples on random graphs,
// for every (head, relation) pair, those without edges included: Out is the sorted,
// distinct tails; Runs and Run list each head's relations in order with the same tails;
// the counts, HasEdges and Bytes agree. Sparse graphs leave heads and relations without edges
// between ones with edges, where a run search that strays past its head's runs would
// find the next head's.
func TestGraphMatchesTriples(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, tc := range []struct{ entities, relations, triples int }{
		{1, 2, 0}, {1, 2, 3}, {5, 4, 3}, {6, 4, 12}, {20, 6, 60}, {50, 10, 30}, {30, 2, 400},
	} {
		for trial := 0; trial < 20; trial++ {
			var parts [][]Triple
			want := map[[2]int32][]int32{}
			for p := 0; p < 2; p++ { // two parts, as a graph of train and valid is built
				var ts []Triple
				for range tc.triples / 2 {
					tr := Triple{int32(rng.IntN(tc.entities)), int32(rng.IntN(tc.relations)), int32(rng.IntN(tc.entities))}
					ts = append(ts, tr)
					if k := [2]int32{tr.Head, tr.Relation}; !slices.Contains(want[k], tr.Tail) {
						want[k] = append(want[k], tr.Tail)
					}
				}
				parts = append(parts, ts)
			}
			g := NewGraph(tc.entities, tc.relations, parts...)
			edges := 0
			for h := int32(0); int(h) < tc.entities; h++ {
				var rels []int32
				for r := int32(0); int(r) < tc.relations; r++ {
					w := slices.Sorted(slices.Values(want[[2]int32{h, r}]))
					if got := g.Out(h, r); !slices.Equal(got, w) {
						t.Fatalf("%v: Out(%d, %d) = %v, want %v", tc, h, r, got, w)
					}
					if len(w) > 0 {
						rels = append(rels, r)
					}
					edges += len(w)
				}
				lo, hi := g.Runs(h)
				if hi-lo != len(rels) || g.HasEdges(h) != (len(rels) > 0) {
					t.Fatalf("%v: head %d has runs [%d,%d), HasEdges %v; want %d relations", tc, h, lo, hi, g.HasEdges(h), len(rels))
				}
				for i := lo; i < hi; i++ {
					rel, tails := g.Run(i)
					if rel != rels[i-lo] || !slices.Equal(tails, g.Out(h, rel)) {
						t.Fatalf("%v: head %d run %d is relation %d %v, want %d", tc, h, i, rel, tails, rels[i-lo])
					}
				}
			}
			if g.NumEdges() != edges || g.NumRuns() != len(want) {
				t.Fatalf("%v: %d edges, %d runs; want %d, %d", tc, g.NumEdges(), g.NumRuns(), edges, len(want))
			}
			// The footprint the type's comment gives: 4 bytes per edge, 8 per run, 4 per
			// entity, and a sentinel each for the entity and run offsets.
			if want := 4*edges + 8*len(want) + 4*tc.entities + 8; g.Bytes() != want {
				t.Fatalf("%v: Bytes %d, want %d", tc, g.Bytes(), want)
			}
		}
	}
}
