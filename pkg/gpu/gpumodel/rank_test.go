//go:build cgo

package gpumodel

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/gputest"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
)

// RankBatch against the CPU's evaluation (pkg/eval.RankQueries on the host model), for
// every variant and every structure: the same ranks, except where the hard answer's
// score is within float rounding of another entity's (the distance is summed in another
// order), and there by at most the number of such near-ties. The same with the scores
// downloaded (rank --top: the scores are the CPU's to rounding, the ranks unchanged),
// from the CPU's cones (rank --cones with cones embedded on the CPU) and from the
// device's own cones (EmbedBatch: rank --cones after embed on the device, the ranks of
// the device walk bit for bit).
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
	b := eval.DeviceBatch{Queries: make([]query.Grounded, len(qs)), Easy: make([][]int32, len(qs)), Hard: make([][]int32, len(qs))}
	for i, q := range qs {
		b.Queries[i], b.Easy[i], b.Hard[i] = q.Query, q.Easy, q.Hard
	}
	scores := make([]float32, len(qs)*entities)
	if err := host.NewScorer().Score(scores, b.Queries); err != nil {
		t.Fatal(err)
	}
	// near checks the device's ranks against the CPU's, up to near-ties.
	near := func(what string, got [][]int32) {
		t.Helper()
		ranked, moved := 0, 0
		for i := range qs {
			if len(got[i]) != len(want[i]) {
				t.Fatalf("%s: query %d: %d ranks, want %d", what, i, len(got[i]), len(want[i]))
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
					t.Fatalf("%s: query %d (%s), hard answer %d: rank %d on the device, %d on the CPU, with %d near-ties",
						what, i, qs[i].Type, h, got[i][j], want[i][j], near)
				}
				moved++
			}
		}
		if ranked < 200 || moved > ranked/50 {
			t.Fatalf("%s: %d ranks compared, %d moved by near-ties", what, ranked, moved)
		}
		t.Logf("%s: %d ranks, %d moved by near-ties", what, ranked, moved)
	}
	same := func(what string, got, walked [][]int32) {
		t.Helper()
		for i := range walked {
			if !slices.Equal(got[i], walked[i]) {
				t.Fatalf("%s: query %d: ranks %v, the device walk's %v", what, i, got[i], walked[i])
			}
		}
	}

	walked, err := dm.RankBatch(b)
	if err != nil {
		t.Fatal(err)
	}
	near("walk", walked)

	// With the scores downloaded (rank --top).
	withScores := b
	withScores.Scores = make([]float32, len(qs)*entities)
	got, err := dm.RankBatch(withScores)
	if err != nil {
		t.Fatal(err)
	}
	same("with the scores downloaded", got, walked)
	worst := 0.0
	for i, s := range withScores.Scores {
		d := math.Abs(float64(s-scores[i])) / math.Max(1, math.Abs(float64(scores[i])))
		if d > worst || math.IsNaN(d) {
			worst = d
		}
	}
	if worst > 1e-5 || math.IsNaN(worst) {
		t.Fatalf("the downloaded scores differ from the CPU's by %.3g (relative)", worst)
	}

	// From the CPU's cones (rank --cones, cones embedded on the CPU).
	fromCPU := b
	fromCPU.Cones = func(group []int) ([]model.Cones[float32], error) {
		var anchors, relations []int32
		for _, q := range group {
			anchors, relations = append(anchors, b.Queries[q].Anchors...), append(relations, b.Queries[q].Relations...)
		}
		emb, err := host.Embed(b.Queries[group[0]].Structure, anchors, relations, len(group), nil)
		if err != nil {
			return nil, err
		}
		return emb.Branches, nil
	}
	got, err = dm.RankBatch(fromCPU)
	if err != nil {
		t.Fatal(err)
	}
	near("the CPU's cones", got)

	// From the device's own cones (embed --device cuda, then rank --cones on the device).
	embedded, err := dm.EmbedBatch(b.Queries)
	if err != nil {
		t.Fatal(err)
	}
	groups := model.GroupByStructure(b.Queries)
	fromDevice := b
	fromDevice.Cones = func(group []int) ([]model.Cones[float32], error) {
		for gi, g := range groups {
			if slices.Equal(g, group) {
				return embedded[gi], nil
			}
		}
		t.Fatalf("cones asked for group %v, not one of %v", group, groups)
		return nil, nil
	}
	got, err = dm.RankBatch(fromDevice)
	if err != nil {
		t.Fatal(err)
	}
	same("the device's cones", got, walked)
}

// TestEmulatorEmbedMatchesCPU: EmbedBatch's cones against the CPU model's (model.Embed
// per structure group, as the embed stage does on the CPU), for every variant and every
// structure, to float32 rounding (axes compared on the circle); and a query's cones on
// the device do not depend on the batch: embedded alone, or in either half of the batch,
// they are bit for bit those of the whole batch.
func TestEmulatorEmbedMatchesCPU(t *testing.T) {
	for _, v := range model.Variants {
		t.Run(string(v), func(t *testing.T) { checkEmbedMatchesCPU(t, gputest.Emulator(t), v, 16) })
	}
}

func checkEmbedMatchesCPU(t *testing.T, dev *gpu.Device, v model.Variant, dim int) {
	cfg := testConfig(v, dim)
	rng := rand.New(rand.NewPCG(5, 6))
	host := spreadModel(t, cfg, rng)
	queries := randomBatch(rng, cfg, 3, 1).Queries
	dm, err := NewEval(dev, host)
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	all, err := dm.EmbedBatch(queries)
	if err != nil {
		t.Fatal(err)
	}
	groups := model.GroupByStructure(queries)
	if len(all) != len(groups) {
		t.Fatalf("%d groups of cones, want %d", len(all), len(groups))
	}
	compared := 0
	for gi, g := range groups {
		var anchors, relations []int32
		for _, q := range g {
			anchors, relations = append(anchors, queries[q].Anchors...), append(relations, queries[q].Relations...)
		}
		emb, err := host.Embed(queries[g[0]].Structure, anchors, relations, len(g), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(all[gi]) != len(emb.Branches) {
			t.Fatalf("%s: %d branches on the device, %d on the CPU", queries[g[0]].Structure, len(all[gi]), len(emb.Branches))
		}
		for br, c := range emb.Branches {
			d := all[gi][br]
			if d.N != c.N || d.Dim != c.Dim {
				t.Fatalf("%s branch %d: %d×%d cones on the device, %d×%d on the CPU", queries[g[0]].Structure, br, d.N, d.Dim, c.N, c.Dim)
			}
			for j := range c.Axis {
				da := math.Abs(math.Remainder(float64(d.Axis[j]-c.Axis[j]), 2*math.Pi))
				dh := math.Abs(float64(d.Half[j] - c.Half[j]))
				if da > 1e-4 || dh > 1e-4 || math.IsNaN(da) || math.IsNaN(dh) {
					t.Fatalf("%s branch %d [%d]: device (%.7g, %.7g), CPU (%.7g, %.7g)",
						queries[g[0]].Structure, br, j, d.Axis[j], d.Half[j], c.Axis[j], c.Half[j])
				}
				compared++
			}
		}
	}
	if compared < len(queries)*cfg.Dim {
		t.Fatalf("%d cone values compared for %d queries", compared, len(queries))
	}
	// Batch invariance.
	whole := conesByQuery(queries, all)
	half := len(queries) / 2
	for _, part := range [][2]int{{0, half}, {half, len(queries)}, {3, 4}, {len(queries) - 1, len(queries)}} {
		sub := queries[part[0]:part[1]]
		got, err := dm.EmbedBatch(sub)
		if err != nil {
			t.Fatal(err)
		}
		for k, cs := range conesByQuery(sub, got) {
			q := part[0] + k
			for br := range cs {
				if !slices.Equal(cs[br][0], whole[q][br][0]) || !slices.Equal(cs[br][1], whole[q][br][1]) {
					t.Fatalf("query %d (%s) branch %d: embedded in queries [%d,%d) it differs from the whole batch's",
						q, queries[q].Structure, br, part[0], part[1])
				}
			}
		}
	}
}

// conesByQuery turns EmbedBatch's groups into each query's branches: [query][branch]
// {axis, half}.
func conesByQuery(queries []query.Grounded, groups [][]model.Cones[float32]) [][][2][]float32 {
	out := make([][][2][]float32, len(queries))
	for gi, g := range model.GroupByStructure(queries) {
		for r, q := range g {
			for _, c := range groups[gi] {
				axis, half := c.Row(r)
				out[q] = append(out[q], [2][]float32{axis, half})
			}
		}
	}
	return out
}

// TestRankAfterUpdate: a training model that ranks (validation), updates and ranks again
// ranks with the updated parameters: its ranks and scores after the update are those of
// an evaluation model loaded from the updated parameters, and before it those of one
// loaded from the first (the angle and half-angle tables kept between rank batches are
// remade after an update).
func TestRankAfterUpdate(t *testing.T) {
	dev := gputest.Emulator(t)
	cfg := testConfig(model.RoConE, 16)
	rng := rand.New(rand.NewPCG(5, 6))
	host := spreadModel(t, cfg, rng)
	batch := randomBatch(rng, cfg, 4, 3)
	var db eval.DeviceBatch
	for _, g := range batch.Queries {
		db.Queries = append(db.Queries, g)
		db.Easy, db.Hard = append(db.Easy, []int32{}), append(db.Hard, []int32{int32(rng.IntN(cfg.NumEntities))})
	}
	scores := func(r eval.BatchRanker) []float32 {
		t.Helper()
		b := db
		b.Scores = make([]float32, len(db.Queries)*cfg.NumEntities)
		if _, err := r.RankBatch(b); err != nil {
			t.Fatal(err)
		}
		return b.Scores
	}
	evalOf := func(m *model.Model[float32]) []float32 {
		t.Helper()
		em, err := NewEval(dev, m)
		if err != nil {
			t.Fatal(err)
		}
		defer em.Close()
		return scores(em)
	}
	dm, err := New(dev, host, 1e-2)
	if err != nil {
		t.Fatal(err)
	}
	defer dm.Close()
	if got, want := scores(dm), evalOf(host); !slices.Equal(got, want) {
		t.Fatal("before the update: the training model's scores are not an evaluation model's")
	}
	// The angle tables, mapped for the scores above, are kept by Adam from then on: the
	// update and the scores after it map none (gpu.AngleGrad), and give the same bits.
	prof := gpu.NewProfiler(dev, false)
	dev.Profile(prof)
	p, err := dm.Update(batch, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	got := scores(dm)
	dev.Profile(nil)
	recs, err := prof.Records()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if strings.HasPrefix(r.Kernel, "angle_fwd") {
			t.Errorf("the update or the scores after it launched %s: the angles Adam wrote were not used", r.Kernel)
		}
	}
	updated, err := model.New[float32](cfg, compute.Reference[float32]{})
	if err != nil {
		t.Fatal(err)
	}
	if err := dm.Download(updated.Params, nil, nil); err != nil {
		t.Fatal(err)
	}
	want := evalOf(updated)
	if !slices.Equal(got, want) {
		t.Fatal("after the update: the training model's scores are not those of its updated parameters")
	}
	if slices.Equal(got, evalOf(host)) {
		t.Fatal("the update changed no score: the test does not exercise it")
	}
}
