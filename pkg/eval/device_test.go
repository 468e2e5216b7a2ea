package eval

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
)

// hostRanker is a BatchRanker that scores on the host (from the batch's cones when it
// has them), recording its batches; fail, if not nil, is returned from the batch it names.
type hostRanker struct {
	m       *model.Model[float32]
	batches []int
	fail    error
	failAt  int
}

func (h *hostRanker) RankBatch(b DeviceBatch) ([][]int32, error) {
	h.batches = append(h.batches, len(b.Queries))
	if h.fail != nil && len(h.batches) == h.failAt {
		return nil, h.fail
	}
	n := h.m.Config.NumEntities
	scores := make([]float32, len(b.Queries)*n)
	if err := h.m.NewScorer().ScoreFrom(scores, b.Queries, b.Cones); err != nil {
		return nil, err
	}
	if b.Scores != nil {
		copy(b.Scores, scores)
	}
	out := make([][]int32, len(b.Queries))
	for i := range b.Queries {
		r, err := FilteredRanks(scores[i*n:(i+1)*n], b.Easy[i], b.Hard[i], nil)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

func deviceTestQueries(t *testing.T) (*model.Model[float32], []RankQuery) {
	t.Helper()
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
	return m, qs
}

// scoreAll is every query's scores on the host, [len(qs)][entities].
func scoreAll(t *testing.T, m *model.Model[float32], qs []RankQuery) []float32 {
	t.Helper()
	all := make([]float32, len(qs)*m.Config.NumEntities)
	grounded := make([]query.Grounded, len(qs))
	for i, q := range qs {
		grounded[i] = q.Query
	}
	if err := m.NewScorer().Score(all, grounded); err != nil {
		t.Fatal(err)
	}
	return all
}

// embedGroups is an opts.Cones that embeds each group of qs (indices into qs, one
// structure) with the host model; a group that mixes structures is an error.
func embedGroups(m *model.Model[float32], qs []RankQuery) func([]int) ([]model.Cones[float32], error) {
	return func(group []int) ([]model.Cones[float32], error) {
		var anchors, relations []int32
		for _, i := range group {
			if qs[i].Query.Structure.String() != qs[group[0]].Query.Structure.String() {
				return nil, fmt.Errorf("group %v mixes structures", group)
			}
			anchors, relations = append(anchors, qs[i].Query.Anchors...), append(relations, qs[i].Query.Relations...)
		}
		emb, err := m.Embed(qs[group[0]].Query.Structure, anchors, relations, len(group), nil)
		if err != nil {
			return nil, err
		}
		return emb.Branches, nil
	}
}

// RankQueries through a Device: the batches in order, the ranks in the queries' order,
// progress counted, bad answer lists rejected before the device sees them, and a device
// error returned (wrapped, naming the batch) with no ranks.
func TestRankQueriesDevice(t *testing.T) {
	m, qs := deviceTestQueries(t)
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

	lost := errors.New("fake device: lost")
	dev = &hostRanker{m: m, fail: lost, failAt: 3}
	ranks, err := RankQueries(context.Background(), m, qs, RankOptions{Batch: 5, Device: dev})
	if !errors.Is(err, lost) || !strings.Contains(err.Error(), "queries 10 to 14") || ranks != nil {
		t.Fatalf("device error in the third batch: ranks %v, error %v", ranks, err)
	}

	bad := slices.Clone(qs)
	bad[7].Easy = append(slices.Clone(bad[7].Easy), bad[7].Hard[0])
	dev = &hostRanker{m: m}
	_, err = RankQueries(context.Background(), m, bad, RankOptions{Batch: 5, Device: dev})
	if err == nil || !strings.Contains(err.Error(), "query 7") || !strings.Contains(err.Error(), "both an easy and a hard answer") {
		t.Fatalf("overlapping answers: %v", err)
	}
	if len(dev.batches) != 1 {
		t.Fatalf("the device ranked %d batches before the bad one was found", len(dev.batches))
	}
}

// TestRankQueriesDeviceScoresCones: through a Device, opts.Scores sees every query's
// scores (the host's, here) once, with the query's own index, whatever the workers; and
// opts.Cones is asked for each structure group with the queries' indices in qs, so that
// ranks from stored cones equal the ranks from the queries.
func TestRankQueriesDeviceScoresCones(t *testing.T) {
	m, qs := deviceTestQueries(t)
	n := m.Config.NumEntities
	all := scoreAll(t, m, qs)
	want, err := RankQueries(context.Background(), m, qs, RankOptions{Batch: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 3} {
		var mu sync.Mutex
		seen := make([]int, len(qs))
		scores := func(i int, s []float32) {
			mu.Lock()
			defer mu.Unlock()
			seen[i]++
			if !slices.Equal(s, all[i*n:(i+1)*n]) {
				t.Errorf("workers %d: query %d: the scores passed are not the query's", workers, i)
			}
		}
		var asked [][]int
		embed := embedGroups(m, qs)
		cones := func(group []int) ([]model.Cones[float32], error) {
			asked = append(asked, group)
			return embed(group)
		}
		got, err := RankQueries(context.Background(), m, qs, RankOptions{Batch: 5, Workers: workers, Device: &hostRanker{m: m}, Scores: scores, Cones: cones})
		if err != nil {
			t.Fatal(err)
		}
		for i := range qs {
			if seen[i] != 1 {
				t.Fatalf("workers %d: query %d's scores seen %d times", workers, i, seen[i])
			}
			if !slices.Equal(got[i], want[i]) {
				t.Fatalf("workers %d: query %d: ranks %v from the cones, %v from the queries", workers, i, got[i], want[i])
			}
		}
		covered := 0
		for _, g := range asked {
			covered += len(g)
		}
		if covered != len(qs) {
			t.Fatalf("the cones of %d queries asked for, want %d", covered, len(qs))
		}
	}
}

// pipelinedRanker is a PipelinedRanker on the host: a hostRanker whose batches are ranked
// at EnqueueRankBatch and handed over by wait. It logs "e<k>" at each enqueue and "w<k>"
// at each wait (k counts from 1), and returns waitErr from the wait of batch waitFailAt.
type pipelinedRanker struct {
	hostRanker
	log        []string
	waitErr    error
	waitFailAt int
}

func (p *pipelinedRanker) EnqueueRankBatch(b DeviceBatch) (func() ([][]int32, error), error) {
	r, err := p.RankBatch(b)
	if err != nil {
		return nil, err
	}
	k := len(p.batches)
	p.log = append(p.log, fmt.Sprint("e", k))
	return func() ([][]int32, error) {
		p.log = append(p.log, fmt.Sprint("w", k))
		if p.waitErr != nil && k == p.waitFailAt {
			return nil, p.waitErr
		}
		return r, nil
	}, nil
}

// TestRankQueriesPipelined: through a PipelinedRanker each batch is enqueued before the
// last one's ranks are read, the ranks equal the host's, progress is counted, and an
// error in the enqueue or the wait of a batch is returned, naming that batch, with no
// ranks.
func TestRankQueriesPipelined(t *testing.T) {
	m, qs := deviceTestQueries(t)
	want, err := RankQueries(context.Background(), m, qs, RankOptions{Batch: 5})
	if err != nil {
		t.Fatal(err)
	}
	dev := &pipelinedRanker{hostRanker: hostRanker{m: m}}
	done := 0
	got, err := RankQueries(context.Background(), m, qs, RankOptions{Batch: 5, Device: dev, Progress: func(n int) { done += n }})
	if err != nil {
		t.Fatal(err)
	}
	if log := strings.Join(dev.log, " "); log != "e1 e2 w1 e3 w2 e4 w3 e5 w4 w5" || done != len(qs) {
		t.Errorf("calls %s, progress %d", log, done)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("query %d: ranks %v pipelined, %v on the host", i, got[i], want[i])
		}
	}

	lost := errors.New("fake device: lost")
	for _, c := range []struct {
		name string
		dev  *pipelinedRanker
		want string
	}{
		{"enqueue", &pipelinedRanker{hostRanker: hostRanker{m: m, fail: lost, failAt: 3}}, "queries 10 to 14"},
		{"wait", &pipelinedRanker{hostRanker: hostRanker{m: m}, waitErr: lost, waitFailAt: 2}, "queries 5 to 9"},
		{"wait of the last batch", &pipelinedRanker{hostRanker: hostRanker{m: m}, waitErr: lost, waitFailAt: 5}, "queries 20 to 22"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ranks, err := RankQueries(context.Background(), m, qs, RankOptions{Batch: 5, Device: c.dev})
			if !errors.Is(err, lost) || !strings.Contains(err.Error(), c.want) || ranks != nil {
				t.Errorf("ranks %v, error %v; want an error naming %s", ranks, err, c.want)
			}
		})
	}
}

// TestRankQueriesHost: on the host, the ranks are each query's FilteredRanks of its full
// scores whatever the batch and workers; opts.Scores sees each query's scores once with its
// index, opts.Cones is asked for the queries' indices in qs, and Progress counts every
// query once. A cancelled context, a failing Cones and a bad answer list each stop the
// ranking with their error, the last naming the query.
func TestRankQueriesHost(t *testing.T) {
	m, qs := deviceTestQueries(t)
	n := m.Config.NumEntities
	all := scoreAll(t, m, qs)
	want := make([][]int32, len(qs))
	for i, q := range qs {
		r, err := FilteredRanks(all[i*n:(i+1)*n], q.Easy, q.Hard, nil)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = r
	}
	cones := embedGroups(m, qs)
	for _, c := range []struct{ batch, workers int }{{1, 1}, {5, 1}, {5, 3}, {100, 2}, {0, 0}} {
		for _, withCones := range []bool{false, true} {
			name := fmt.Sprintf("batch %d workers %d cones %v", c.batch, c.workers, withCones)
			var mu sync.Mutex
			seen := make([]int, len(qs))
			done := 0
			opts := RankOptions{Batch: c.batch, Workers: c.workers,
				Scores: func(i int, s []float32) {
					mu.Lock()
					defer mu.Unlock()
					seen[i]++
					if !slices.Equal(s, all[i*n:(i+1)*n]) {
						t.Errorf("%s: query %d: the scores passed are not the query's", name, i)
					}
				},
				Progress: func(k int) { done += k },
			}
			if withCones {
				opts.Cones = cones
			}
			got, err := RankQueries(context.Background(), m, qs, opts)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if done != len(qs) {
				t.Errorf("%s: progress counted %d queries, want %d", name, done, len(qs))
			}
			for i := range qs {
				if seen[i] != 1 {
					t.Errorf("%s: query %d's scores seen %d times", name, i, seen[i])
				}
				if !slices.Equal(got[i], want[i]) {
					t.Errorf("%s: query %d: ranks %v, want %v", name, i, got[i], want[i])
				}
			}
		}
	}

	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := RankQueries(ctx, m, qs, RankOptions{Batch: 5}); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("cones fail", func(t *testing.T) {
		boom := errors.New("boom")
		_, err := RankQueries(context.Background(), m, qs, RankOptions{Batch: 5, Workers: 2,
			Cones: func([]int) ([]model.Cones[float32], error) { return nil, boom }})
		if !errors.Is(err, boom) {
			t.Fatalf("err = %v, want boom", err)
		}
	})
	t.Run("bad answers", func(t *testing.T) {
		bad := slices.Clone(qs)
		bad[7].Hard = []int32{int32(n)}
		_, err := RankQueries(context.Background(), m, bad, RankOptions{Batch: 5, Workers: 2})
		want := fmt.Sprintf("query 7 (%s): eval: hard answer %d out of range [0,%d)", bad[7].Type, n, n)
		if err == nil || err.Error() != want {
			t.Fatalf("err = %v, want %q", err, want)
		}
	})
}
