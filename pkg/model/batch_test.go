package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rocone/rocone/pkg/query"
)

// TestEmbedTogetherMatchesAlone checks that embedding the groups of a mixed batch
// together (embedBatch: steps level by level, ConE's projections of a level as one MLP
// batch, dropout masks drawn up front) gives each group exactly the cones that embedding
// it alone gives, with the same dropout masks.
func TestEmbedTogetherMatchesAlone(t *testing.T) {
	var ss []*query.Structure
	for _, ty := range query.Types {
		ss = append(ss, query.MustParse(ty.Notation))
	}
	for _, n := range customStructures {
		ss = append(ss, query.MustParse(n))
	}
	for vi, v := range Variants {
		t.Run(string(v), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(vi), 77))
			cfg := testConfig(v)
			m, err := New[float64](cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			spreadParams(m.Params, cfg, rng)
			batch := RandomBatch(rng, cfg, ss, 3, 2)
			groups := groupByStructure(batch.Queries)
			var embs []*Embedding[float64]
			for _, g := range groups {
				a, r := g.ids(batch.Queries)
				e, err := m.newEmbedding(batch.Queries[g.queries[0]].Structure, a, r, len(g.queries))
				if err != nil {
					t.Fatal(err)
				}
				embs = append(embs, e)
			}
			m.embedAll(embs, rand.New(rand.NewPCG(5, 5)), nil)
			alone := rand.New(rand.NewPCG(5, 5))
			for gi, g := range groups {
				a, r := g.ids(batch.Queries)
				e, err := m.Embed(batch.Queries[g.queries[0]].Structure, a, r, len(g.queries), alone)
				if err != nil {
					t.Fatal(err)
				}
				for br := range e.Branches {
					for i, x := range e.Branches[br].Axis {
						y := embs[gi].Branches[br].Axis[i]
						h, hy := e.Branches[br].Half[i], embs[gi].Branches[br].Half[i]
						if math.Float64bits(x) != math.Float64bits(y) || math.Float64bits(h) != math.Float64bits(hy) {
							t.Fatalf("group %d branch %d [%d]: together (%v, %v), alone (%v, %v)", gi, br, i, y, hy, x, h)
						}
					}
				}
			}
		})
	}
}
