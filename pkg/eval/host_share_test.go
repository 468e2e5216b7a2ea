package eval_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rocone/rocone/internal/gputest"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/gpu/gpumodel"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
)

// BenchmarkRankHostShare is the host's work per query when rank runs on CUDA, at
// FB15k-237 sizes (14,505 entities, d=1600, batches of 512 as `rank --device cuda`),
// measured with a driver that executes nothing; every variant ranks on the device
// (gpumodel.Model.RankBatch):
//   - device: `rank --device cuda`: grouping, id and answer arrays, enqueueing the
//     launches; only the ranks come back;
//   - top: `rank --device cuda --top 10`: also each batch's scores downloaded and the top
//     10 picked on the host (eval.TopEntities, in every core, overlapping the next batch);
//   - cones: `rank --device cuda --cones`: the given cones gathered per structure group
//     and uploaded instead of embedded.
//
// launches/batch counts the kernel launches of a batch of 512 (14 structures). The
// device's part is TestGPUThroughput's DistanceAll.
func BenchmarkRankHostShare(b *testing.B) {
	for _, mode := range []string{"device", "top", "cones"} {
		b.Run(mode, func(b *testing.B) { benchmarkRankHostShare(b, mode) })
	}
}

func benchmarkRankHostShare(b *testing.B, mode string) {
	const entities, answers = 14505, 20
	cfg := model.Config{Variant: model.RoConE, NumEntities: entities, NumRelations: 474, Dim: 1600, Gamma: 30, CenterReg: 0.1}
	null := &gputest.NullDriver{Fill: 1}
	dev := gpu.NewDevice(null)
	m, err := model.New[float32](cfg, compute.Reference[float32]{})
	if err != nil {
		b.Fatal(err)
	}
	dm, err := gpumodel.NewEval(dev, m)
	if err != nil {
		b.Fatal(err)
	}
	defer dm.Close()
	opts := eval.RankOptions{Batch: 512, Device: dm}
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
	switch mode {
	case "top":
		tops := make([][]int32, len(qs))
		opts.Scores = func(i int, scores []float32) { tops[i], _ = eval.TopEntities(scores, 10, nil) }
	case "cones":
		// Each query's stored cones, one row per DNF branch, as the rank stage holds them.
		d := cfg.Dim
		stored := make([][][2][]float32, len(qs))
		for i, q := range qs {
			dnf, err := q.Query.Structure.DNF()
			if err != nil {
				b.Fatal(err)
			}
			for range dnf {
				stored[i] = append(stored[i], [2][]float32{make([]float32, d), make([]float32, d)})
			}
		}
		opts.Cones = func(group []int) ([]model.Cones[float32], error) {
			branches := make([]model.Cones[float32], len(stored[group[0]]))
			for br := range branches {
				branches[br] = model.NewCones[float32](len(group), d)
				for r, i := range group {
					copy(branches[br].Axis[r*d:(r+1)*d], stored[i][br][0])
					copy(branches[br].Half[r*d:(r+1)*d], stored[i][br][1])
				}
			}
			return branches, nil
		}
	}
	b.ResetTimer()
	start := null.Launches()
	for i := 0; i < b.N; i++ {
		if _, err := eval.RankQueries(context.Background(), m, qs, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(qs)), "µs/query")
	batches := (len(qs) + opts.Batch - 1) / opts.Batch
	b.ReportMetric(float64(null.Launches()-start)/float64(b.N*batches), "launches/batch")
}
