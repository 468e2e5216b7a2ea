package model

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/rocone/rocone/pkg/query"
)

// Batch is one training batch (docs/model.md §9): queries of any structures, each with one
// positive and NumNegative negative entities and a subsampling weight
// w = (4 + |answers|)^(−1/2).
type Batch struct {
	Queries     []query.Grounded
	Positive    []int32   // [Q]
	Negative    []int32   // [Q][NumNegative]
	NumNegative int       // k
	Weight      []float64 // [Q]
}

// LossTape is a forward pass of the loss over a batch: the loss and its two parts, and
// what Backward needs.
type LossTape[T Float] struct {
	Loss         float64 // (L_pos + L_neg)/2
	PositiveLoss float64 // L_pos
	NegativeLoss float64 // L_neg

	m        *Model[T]
	k        int
	groups   []*lossGroup[T]
	batch    *embedBatch[T] // the groups' embeddings, computed together
	entities []int32        // the candidates' local table: row u is entity entities[u]
	angles   []T            // [U][d] their angles
	pos, neg []T            // [Q], [Q][k] the scores (union: max over branches)
	w        []T            // [Q]
	dAngles  []T            // backward: the gradient of angles
	dModulus float64        // backward: the gradient of the modulus
}

// lossGroup is the part of a batch with one structure.
type lossGroup[T Float] struct {
	queries []int // positions in the batch
	emb     *Embedding[T]
	cand    []int32 // [B][K] rows of the local table; column 0 is the positive
	dist    [][]T   // per DNF branch, [B][K]
	arg     []int32 // [B][K] the branch that gave the score
}

// Loss runs the forward pass of the loss over a batch. drop draws the intersection
// dropout masks (nil: none).
//
// Steps: group the queries by structure; map the candidates' angles once; per group,
// embed the queries (one cone batch per DNF branch), take each branch's distances to the
// candidates, its logits γ − m·dist, and the max over branches; then the loss of §9.
func (m *Model[T]) Loss(b *Batch, drop *rand.Rand) (*LossTape[T], error) {
	nq, k := len(b.Queries), b.NumNegative
	if nq == 0 || k <= 0 || len(b.Positive) != nq || len(b.Negative) != nq*k || len(b.Weight) != nq {
		return nil, fmt.Errorf("model: malformed batch: %d queries, %d positives, %d negatives (k=%d), %d weights",
			nq, len(b.Positive), len(b.Negative), k, len(b.Weight))
	}
	d, K := m.Config.Dim, k+1
	lt := &LossTape[T]{m: m, k: k, pos: make([]T, nq), neg: make([]T, nq*k), w: make([]T, nq)}
	for q, w := range b.Weight {
		lt.w[q] = T(w)
	}

	// The candidates' local table: slot[id] is 1 + the entity's row there (0: none yet).
	// The table is reused across updates and cleared through the candidates alone, so an
	// update costs the batch, not the entity count (allocating and zeroing 4 bytes per
	// entity took 5.8 ms an update at 1.5M entities; reuse, 0.13 ms).
	slotp := slotTables.Get().(*[]int32)
	if len(*slotp) != m.Config.NumEntities {
		*slotp = make([]int32, m.Config.NumEntities)
	}
	slot := *slotp
	cand := make([]int32, nq*K) // [Q][K], positive first
	for q := 0; q < nq; q++ {
		for j := 0; j < K; j++ {
			id := b.Positive[q]
			if j > 0 {
				id = b.Negative[q*k+j-1]
			}
			if id < 0 || int(id) >= m.Config.NumEntities {
				return nil, fmt.Errorf("model: candidate entity %d out of range [0,%d)", id, m.Config.NumEntities)
			}
			u := slot[id] - 1
			if u < 0 {
				u = int32(len(lt.entities))
				slot[id] = u + 1
				lt.entities = append(lt.entities, id)
			}
			cand[q*K+j] = u
		}
	}
	for _, id := range lt.entities {
		slot[id] = 0
	}
	slotTables.Put(slotp) // an error return above drops a table left dirty
	lt.angles = make([]T, len(lt.entities)*d)
	R := m.embeddingRange()
	parallelRows(len(lt.entities), func(lo, hi int) {
		angleRows(lt.angles[lo*d:hi*d], m.Params.Entity, lt.entities[lo:hi], d, R)
	})

	// Embed every group's queries, the groups together (embedBatch), the loss as the
	// walk's head.
	groups := groupByStructure(b.Queries)
	embs := make([]*Embedding[T], len(groups))
	for gi, g := range groups {
		anchors, relations := g.ids(b.Queries)
		emb, err := m.newEmbedding(b.Queries[g.queries[0]].Structure, anchors, relations, len(g.queries))
		if err != nil {
			return nil, err
		}
		embs[gi] = emb
		n := len(g.queries)
		lg := &lossGroup[T]{queries: g.queries, emb: emb, cand: make([]int32, n*K), arg: make([]int32, n*K)}
		for r, q := range g.queries {
			copy(lg.cand[r*K:(r+1)*K], cand[q*K:(q+1)*K])
		}
		lt.groups = append(lt.groups, lg)
	}
	if err := m.embedAll(embs, drop, lt); err != nil {
		return nil, err
	}
	if len(embs) > 0 {
		lt.batch = embs[0].batch
	}
	return lt, nil
}

// Head is the loss over the embedded groups: per group and DNF branch the distances to
// the candidates and the logits γ − m·dist, the max over branches, then the loss of §9.
func (lt *LossTape[T]) Head() error {
	m, k := lt.m, lt.k
	d, K := m.Config.Dim, k+1
	gamma, modulus, lambda := T(m.Config.Gamma), m.Params.Modulus[0], T(m.Config.CenterReg)
	for _, lg := range lt.groups {
		emb := lg.emb
		n := len(lg.queries)
		logits := make([][]T, len(emb.Branches))
		for br, c := range emb.Branches {
			dist := make([]T, n*K)
			m.Kernels.DistanceForward(dist, c.Axis, c.Half, lt.angles, lg.cand, n, K, d, lambda)
			lg.dist = append(lg.dist, dist)
			logits[br] = make([]T, n*K)
			LogitForward(logits[br], dist, gamma, modulus)
		}
		score := make([]T, n*K)
		UnionMaxForward(score, lg.arg, logits)
		for r, q := range lg.queries {
			lt.pos[q] = score[r*K]
			copy(lt.neg[q*k:(q+1)*k], score[r*K+1:(r+1)*K])
		}
	}
	lt.Loss, lt.PositiveLoss, lt.NegativeLoss = LossForward(lt.pos, lt.neg, lt.w, k)
	return nil
}

// HeadBackward is the loss's gradient with respect to every group's branch cones; it
// keeps the gradients of the candidates' angles and of the modulus for Backward.
func (lt *LossTape[T]) HeadBackward() ([][]Cones[T], error) {
	m, k, K, d := lt.m, lt.k, lt.k+1, lt.m.Config.Dim
	dPos, dNeg := make([]T, len(lt.pos)), make([]T, len(lt.neg))
	LossBackward(dPos, dNeg, lt.pos, lt.neg, lt.w, k, 1)

	modulus, lambda := m.Params.Modulus[0], T(m.Config.CenterReg)
	lt.dAngles, lt.dModulus = make([]T, len(lt.angles)), 0
	dAll := make([][]Cones[T], len(lt.groups))
	for gi, lg := range lt.groups {
		n := len(lg.queries)
		dScore := make([]T, n*K)
		for r, q := range lg.queries {
			dScore[r*K] = dPos[q]
			copy(dScore[r*K+1:(r+1)*K], dNeg[q*k:(q+1)*k])
		}
		dLogits := make([][]T, len(lg.dist))
		for br := range dLogits {
			dLogits[br] = make([]T, n*K)
		}
		UnionMaxBackward(dLogits, dScore, lg.arg)
		dBranches := make([]Cones[T], len(lg.dist))
		for br, dist := range lg.dist {
			dDist := make([]T, n*K)
			lt.dModulus += LogitBackward(dDist, dLogits[br], dist, modulus)
			c := lg.emb.Branches[br]
			dBranches[br] = NewCones[T](n, d)
			m.Kernels.DistanceBackward(dBranches[br].Axis, dBranches[br].Half, lt.dAngles, dDist,
				c.Axis, c.Half, lt.angles, lg.cand, n, K, d, lambda)
		}
		dAll[gi] = dBranches
	}
	return dAll, nil
}

// Backward adds the gradient of the loss with respect to every parameter to g: the walk
// backward from the head, then the candidates' angles and the modulus.
func (lt *LossTape[T]) Backward(g *Grads[T]) {
	m, d := lt.m, lt.m.Config.Dim
	if lt.batch != nil {
		lt.batch.backward(nil, g)
	}
	g.Modulus[0] += T(lt.dModulus)
	// The candidates are distinct entities: their rows of g.Entity can be written in
	// parallel.
	R := m.embeddingRange()
	parallelRows(len(lt.entities), func(lo, hi int) {
		angleRowsBackward(g.Entity, lt.dAngles[lo*d:hi*d], lt.angles[lo*d:hi*d], lt.entities[lo:hi], d, R)
	})
	for _, id := range lt.entities {
		g.EntityRows.Add(id)
	}
}

// parallelJobs calls fn(j) for every j in [0, n) on up to GOMAXPROCS goroutines, which
// claim jobs in turn; it returns when all are done. Jobs must write disjoint outputs.
func parallelJobs(n int, fn func(j int)) {
	w := min(runtime.GOMAXPROCS(0), n)
	if w <= 1 {
		for j := 0; j < n; j++ {
			fn(j)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	claim := func() {
		for j := int(next.Add(1) - 1); j < n; j = int(next.Add(1) - 1) {
			fn(j)
		}
	}
	for i := 1; i < w; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); claim() }()
	}
	claim()
	wg.Wait()
}

// parallelMinRows is the fewest rows per goroutine in parallelRows.
const parallelMinRows = 512

// parallelRows calls fn on consecutive ranges covering [0, n), on up to GOMAXPROCS
// goroutines, and returns when all are done. fn must write disjoint outputs per range.
func parallelRows(n int, fn func(lo, hi int)) {
	w := min(runtime.GOMAXPROCS(0), n/parallelMinRows)
	if w <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for i := 1; i < w; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); fn(n*i/w, n*(i+1)/w) }()
	}
	fn(0, n/w)
	wg.Wait()
}

// structureGroup is the positions of the queries of one structure, in batch order.
type structureGroup struct{ queries []int }

// groupByStructure groups query positions by structure notation, groups in order of
// first appearance.
func groupByStructure(qs []query.Grounded) []structureGroup {
	var groups []structureGroup
	index := map[string]int{}
	for i := range qs {
		key := qs[i].Structure.String()
		gi, ok := index[key]
		if !ok {
			gi = len(groups)
			index[key] = gi
			groups = append(groups, structureGroup{})
		}
		groups[gi].queries = append(groups[gi].queries, i)
	}
	return groups
}

// ids concatenates the group's anchor and relation ids into [n][nA] and [n][nR].
func (g structureGroup) ids(qs []query.Grounded) (anchors, relations []int32) {
	for _, q := range g.queries {
		anchors = append(anchors, qs[q].Anchors...)
		relations = append(relations, qs[q].Relations...)
	}
	return anchors, relations
}

// slotTables holds Loss's candidate tables (all zero) for reuse.
var slotTables = sync.Pool{New: func() any { return new([]int32) }}
