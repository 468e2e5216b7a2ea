package train

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
)

// BenchmarkPoolNext is the host's sampling of one training batch at FB15k-237's size
// (14,505 entities, b=512, n=128, answer sets of 1 to 40 entities): three of these a step
// must stay below the device's step time, or the host bounds it.
func BenchmarkPoolNext(b *testing.B) {
	const entities, queries = 14505, 20000
	r := rand.New(rand.NewPCG(1, 2))
	ts := &trainSet{numEntities: entities}
	members := make([]int32, queries)
	for i := range queries {
		ans := make([]int32, 1+r.IntN(40))
		for j := range ans {
			ans[j] = int32(r.IntN(entities))
		}
		slices.Sort(ans)
		ts.queries = append(ts.queries, query.Grounded{})
		ts.answers = append(ts.answers, slices.Compact(ans))
		ts.weights = append(ts.weights, 1)
		members[i] = int32(i)
	}
	p := newPool(PoolPath, 0, members, 7)
	var batch model.Batch
	b.ResetTimer()
	for range b.N {
		p.fill(ts, 512, 128, &batch)
	}
}
