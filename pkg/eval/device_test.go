package eval

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
)

// hostRanker is a BatchRanker that scores on the host, recording its batches.
type hostRanker struct {
	m       *model.Model[float32]
	batches []int
}

func (h *hostRanker) RankBatch(queries []query.Grounded, easy, hard [][]int32) ([][]int32, error) {
	h.batches = append(h.batches, len(queries))
	n := h.m.Config.NumEntities
	scores := make([]float32, len(queries)*n)
	if err := h.m.NewScorer().Score(scores, queries); err != nil {
		return nil, err
	}
	out := make([][]int32, len(queries))
	for i := range queries {
		r, err := FilteredRanks(scores[i*n:(i+1)*n], easy[i], hard[i], nil)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// RankQueries through a Device: the batches in order, the ranks in the queries' order,
// progress counted, and bad answer lists rejected before the device sees them.
func TestRankQueriesDevice(t *testing.T) {
	cfg := model.Config{Variant: model.RoConE, NumEntities: 50, NumRelations: 5, Dim: 8, Gamma: 2, CenterReg: 0.2, Seed: 1}
	m, err := model.New[float32](cfg, compute.Reference[float32]{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var qs []RankQuery
	for i := 0; i < 23; i++ {
		ty := query.Types[i%len(query.Types)]
		s := query.MustParse(ty.Notation)
		q := RankQuery{Type: ty.Name, Query: query.Grounded{Structure: s}}
		for range s.NumAnchors {
			q.Query.Anchors = append(q.Query.Anchors, int32(rng.IntN(cfg.NumEntities)))
		}
		for range s.NumRelations {
			q.Query.Relations = append(q.Query.Relations, int32(rng.IntN(cfg.NumRelations)))
		}
		perm := rng.Perm(cfg.NumEntities)
		for j := range 2 + i%4 {
			q.Hard = append(q.Hard, int32(perm[j]))
		}
		q.Easy = append(q.Easy, int32(perm[10]), int32(perm[11]))
		qs = append(qs, q)
	}
	want, err := RankQueries(context.Background(), m, qs, RankOptions{Batch: 5})
	if err != nil {
		t.Fatal(err)
	}
	dev := &hostRanker{m: m}
	done := 0
	got, err := RankQueries(context.Background(), m, qs, RankOptions{Batch: 5, Device: dev, Progress: func(n int) { done += n }})
	if err != nil {
		t.Fatal(err)
	}
	if len(dev.batches) != 5 || dev.batches[4] != 3 || done != len(qs) {
		t.Fatalf("batches %v, progress %d", dev.batches, done)
	}
	for i := range want {
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Fatalf("query %d answer %d: rank %d through the device, %d on the host", i, j, got[i][j], want[i][j])
			}
		}
	}

	qs[7].Easy = append(qs[7].Easy, qs[7].Hard[0])
	dev.batches = nil
	_, err = RankQueries(context.Background(), m, qs, RankOptions{Batch: 5, Device: dev})
	if err == nil || !strings.Contains(err.Error(), "query 7") || !strings.Contains(err.Error(), "both an easy and a hard answer") {
		t.Fatalf("overlapping answers: %v", err)
	}
	if len(dev.batches) != 1 {
		t.Fatalf("the device ranked %d batches before the bad one was found", len(dev.batches))
	}
}
