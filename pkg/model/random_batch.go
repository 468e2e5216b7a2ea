package model

import (
	"math/rand/v2"

	"github.com/rocone/rocone/pkg/query"
)

// RandomBatch draws a synthetic training batch for tests and benchmarks of the model's
// backends: perQuery queries of each structure over cfg's entities and relations, with
// distinct anchors within a query, k negatives each and weights in [0.1, 0.5]. Over a
// small KG, anchors, relations and candidates repeat within the batch, which is what the
// backends' gradient sums must get right.
func RandomBatch(rng *rand.Rand, cfg Config, structures []*query.Structure, perQuery, k int) *Batch {
	b := &Batch{NumNegative: k}
	for _, s := range structures {
		for i := 0; i < perQuery; i++ {
			perm := rng.Perm(cfg.NumEntities)
			g := query.Grounded{Structure: s}
			for a := 0; a < s.NumAnchors; a++ {
				g.Anchors = append(g.Anchors, int32(perm[a]))
			}
			for r := 0; r < s.NumRelations; r++ {
				g.Relations = append(g.Relations, int32(rng.IntN(cfg.NumRelations)))
			}
			b.Queries = append(b.Queries, g)
			b.Positive = append(b.Positive, int32(rng.IntN(cfg.NumEntities)))
			for j := 0; j < k; j++ {
				b.Negative = append(b.Negative, int32(rng.IntN(cfg.NumEntities)))
			}
			b.Weight = append(b.Weight, 0.1+0.4*rng.Float64())
		}
	}
	return b
}
