package eval_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rocone/rocone/internal/gputest"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/gpu/gpumodel"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
)

// BenchmarkRankHostShare is the host's work per query when rank runs on CUDA, at
// FB15k-237 sizes (14,505 entities, d=1600, batches of 512 as `rank --device cuda`),
// measured with a driver that executes nothing:
//   - device: the whole ranking on the device (gpumodel.Model.RankBatch, what `rank
//     --device cuda` does): grouping, id and answer arrays, enqueueing the launches;
//   - backend: the per-call backend (with --cones or --top): embedding the queries on
//     the CPU, the logits and union maximum, and the filtered ranking on the host, with
//     only the distance on the device. A GPU host's cores share it.
//
// The device's part is TestGPUThroughput's DistanceAll.
func BenchmarkRankHostShare(b *testing.B) {
	for _, onDevice := range []bool{true, false} {
		b.Run(map[bool]string{true: "device", false: "backend"}[onDevice], func(b *testing.B) { benchmarkRankHostShare(b, onDevice) })
	}
}

func benchmarkRankHostShare(b *testing.B, onDevice bool) {
	const entities, answers = 14505, 20
	cfg := model.Config{Variant: model.RoConE, NumEntities: entities, NumRelations: 474, Dim: 1600, Gamma: 30, CenterReg: 0.1}
	dev := gpu.NewDevice(&gputest.NullDriver{Fill: 1})
	be := gpu.NewBackend(dev)
	m, err := model.New[float32](cfg, be)
	if err != nil {
		b.Fatal(err)
	}
	opts := eval.RankOptions{Batch: 512}
	if onDevice {
		dm, err := gpumodel.NewEval(dev, m)
		if err != nil {
			b.Fatal(err)
		}
		defer dm.Close()
		opts.Device = dm
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var qs []eval.RankQuery
	for len(qs) < 1024 {
		for _, ty := range query.Types {
			s := query.MustParse(ty.Notation)
			q := eval.RankQuery{Type: ty.Name, Query: query.Grounded{Structure: s}}
			for range s.NumAnchors {
				q.Query.Anchors = append(q.Query.Anchors, int32(rng.IntN(entities)))
			}
			for range s.NumRelations {
				q.Query.Relations = append(q.Query.Relations, int32(rng.IntN(cfg.NumRelations)))
			}
			perm := rng.Perm(entities)[:2*answers]
			for i, e := range perm {
				if i < answers {
					q.Hard = append(q.Hard, int32(e))
				} else {
					q.Easy = append(q.Easy, int32(e))
				}
			}
			slices.Sort(q.Easy)
			qs = append(qs, q)
		}
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := eval.RankQueries(context.Background(), m, qs, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(qs)), "µs/query")
	if err := be.Err(); err != nil {
		b.Fatal(err)
	}
}
