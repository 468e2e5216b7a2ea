//go:build cgo

package gpumodel

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rocone/rocone/internal/gputest"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
)

// RankBatch against the CPU's evaluation (pkg/eval.RankQueries on the host model), for
// every variant and every structure: the same ranks, except where the hard answer's
// score is within float rounding of another entity's (the distance is summed in another
// order), and there by at most the number of such near-ties.
func TestEmulatorRankMatchesCPU(t *testing.T) {
	for _, v := range model.Variants {
		t.Run(string(v), func(t *testing.T) { checkRankMatchesCPU(t, gputest.Emulator(t), v, 300, 20) })
	}
}

func checkRankMatchesCPU(t *testing.T, dev *gpu.Device, v model.Variant, entities, dim int) {
	cfg := testConfig(v, dim)
	cfg.NumEntities = entities
	rng := rand.New(rand.NewPCG(3, 4))
	host := spreadModel(t, cfg, rng)
	var qs []eval.RankQuery
	batch := randomBatch(rng, cfg, 3, 1)
	for i, g := range batch.Queries {
		perm := rng.Perm(entities)
		nh, ne := rng.IntN(7), rng.IntN(9)
		if i == 0 {
			nh = 100 // more than a block's threads
		}
		q := eval.RankQuery{Type: g.Structure.String(), Query: g}
		for j := 0; j < nh+ne; j++ {
			if j < nh {
				q.Hard = append(q.Hard, int32(perm[j]))
			} else {
				q.Easy = append(q.Easy, int32(perm[j]))
			}
		}
		qs = append(qs, q)
	}
	want, err := eval.RankQueries(context.Background(), host, qs, eval.RankOptions{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	dm, err := NewEval(dev, host)
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	grounded, easy, hard := make([]query.Grounded, len(qs)), make([][]int32, len(qs)), make([][]int32, len(qs))
	for i, q := range qs {
		grounded[i], easy[i], hard[i] = q.Query, q.Easy, q.Hard
	}
	got, err := dm.RankBatch(grounded, easy, hard)
	if err != nil {
		t.Fatal(err)
	}

	scores := make([]float32, len(qs)*entities)
	if err := host.NewScorer().Score(scores, grounded); err != nil {
		t.Fatal(err)
	}
	ranked, moved := 0, 0
	for i := range qs {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("query %d: %d ranks, want %d", i, len(got[i]), len(want[i]))
		}
		row := scores[i*entities : (i+1)*entities]
		for j, h := range qs[i].Hard {
			ranked++
			if got[i][j] == want[i][j] {
				continue
			}
			near := 0
			for e, s := range row {
				if int32(e) != h && math.Abs(float64(s-row[h])) <= 1e-5*math.Max(1, math.Abs(float64(row[h]))) {
					near++
				}
			}
			if d := int(got[i][j] - want[i][j]); d > near || -d > near {
				t.Fatalf("query %d (%s), hard answer %d: rank %d on the device, %d on the CPU, with %d near-ties",
					i, qs[i].Type, h, got[i][j], want[i][j], near)
			}
			moved++
		}
	}
	if ranked < 200 || moved > ranked/50 {
		t.Fatalf("%d ranks compared, %d moved by near-ties", ranked, moved)
	}
	t.Logf("%d ranks, %d moved by near-ties", ranked, moved)
}
