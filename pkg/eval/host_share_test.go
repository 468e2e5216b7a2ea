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
		opts.Scores = func(i int, scores []float32) { tops[i], _, _ = eval.TopEntities(scores, 10, nil) }
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

// TestRankWaitsOncePerBatch: ranking on a device waits for it once per batch (the fetch
// of the batch's ranks, which waits for that download alone), after the arenas have grown:
// the uploads are staged, and every batch is enqueued before the last one is read: at
// the fetch of batch k, the asynchronous copies of k+2 batches (uploads and the ranks'
// download) have been made.
func TestRankWaitsOncePerBatch(t *testing.T) {
	cfg := model.Config{Variant: model.RoConE, NumEntities: 500, NumRelations: 20, Dim: 8, Gamma: 30, CenterReg: 0.1}
	null := &gputest.NullDriver{Fill: 1}
	m, err := model.New[float32](cfg, compute.Reference[float32]{})
	if err != nil {
		t.Fatal(err)
	}
	dm, err := gpumodel.NewEval(gpu.NewDevice(null), m)
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	var qs []eval.RankQuery
	for len(qs) < 160 {
		for _, ty := range query.Types {
			s := query.MustParse(ty.Notation)
			q := eval.RankQuery{Type: ty.Name, Query: query.Grounded{Structure: s}, Hard: []int32{int32(rng.IntN(cfg.NumEntities))}}
			for range s.NumAnchors {
				q.Query.Anchors = append(q.Query.Anchors, int32(rng.IntN(cfg.NumEntities)))
			}
			for range s.NumRelations {
				q.Query.Relations = append(q.Query.Relations, int32(rng.IntN(cfg.NumRelations)))
			}
			qs = append(qs, q)
		}
	}
	opts := eval.RankOptions{Batch: 16, Device: dm}
	var asyncAtWait []int64
	null.OnWait = func() { asyncAtWait = append(asyncAtWait, null.AsyncCopies()) }
	for run := range 2 { // the first run grows the arenas (cuMemFree waits)
		waits, async := null.Waits(), null.AsyncCopies()
		asyncAtWait = asyncAtWait[:0]
		if _, err := eval.RankQueries(context.Background(), m, qs, opts); err != nil {
			t.Fatal(err)
		}
		if run == 0 {
			continue
		}
		batches := int64((len(qs) + 15) / 16)
		if got := null.Waits() - waits; got != batches {
			t.Errorf("%d batches waited %d times", batches, got)
		}
		per := (null.AsyncCopies() - async) / batches
		for k, a := range asyncAtWait[:batches-1] {
			if want := per * (int64(k) + 2); a-async != want {
				t.Errorf("at the fetch of batch %d, %d asynchronous copies made, want %d (batch %d enqueued)", k, a-async, want, k+1)
			}
		}
	}
}
