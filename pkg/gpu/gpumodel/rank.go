package gpumodel

import (
	"fmt"

	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
)

var _ eval.DeviceRanker = (*Model)(nil)

// RankBatch computes the filtered rank of every hard answer of every query of b
// (docs/queries.md §5), the whole evaluation on the device: the queries are embedded by
// the same forward pass as training's (without dropout), or their cones b.Cones gives are
// uploaded, scored against every entity from half-angle tables (gpu.DistanceAll), turned
// into logits γ − m·dist with the maximum over DNF branches, and ranked there
// (gpu.FilteredRanks). The ids (and the given cones) go up in one copy and only the ranks
// come back, plus, when b.Scores is set, the batch's scores in one copy (rank --top), so
// the host's share is small.
//
// It computes what pkg/model's Scorer and pkg/eval's Ranker compute on the CPU, up to
// the float rounding of the distance (whose order of summation differs), which can move
// a rank where two scores are within rounding of each other. The answer lists must be
// valid (ids in range, no repeats, disjoint; the caller checks: pkg/eval.RankQueries
// does); the ranks are in the order of each query's hard answers.
//
// It implements pkg/eval.BatchRanker. It waits for the device, and is not safe for
// concurrent use.
func (m *Model) RankBatch(b eval.DeviceBatch) ([][]int32, error) {
	wait, err := m.EnqueueRankBatch(b)
	if err != nil {
		return nil, err
	}
	return wait()
}

// EnqueueRankBatch is RankBatch in two halves (eval.PipelinedRanker): it lays the batch
// out, enqueues its work and the download of its ranks, and returns; wait waits for that
// download alone and returns the ranks. So the host lays out the next batch while the
// device ranks this one. Batches take turns between two scratch arenas, so a batch's
// buffers outlive the next batch's enqueueing; wait must be called before the batch
// after next is enqueued. With b.Scores, the scores are downloaded before it returns.
func (m *Model) EnqueueRankBatch(b eval.DeviceBatch) (wait func() ([][]int32, error), err error) {
	queries, easy, hard := b.Queries, b.Easy, b.Hard
	if len(easy) != len(queries) || len(hard) != len(queries) {
		return nil, fmt.Errorf("gpumodel: RankBatch: %d queries, %d easy and %d hard answer lists", len(queries), len(easy), len(hard))
	}
	B, N := len(queries), m.cfg.NumEntities
	if b.Scores != nil && len(b.Scores) != B*N {
		return nil, fmt.Errorf("gpumodel: RankBatch: room for %d scores, want %d queries × %d entities", len(b.Scores), B, N)
	}
	out := make([][]int32, len(queries))
	if len(queries) == 0 {
		return func() ([][]int32, error) { return out, nil }, nil
	}
	if err := m.flushAdam(); err != nil {
		return nil, err
	}
	groups, err := m.group(queries)
	if err != nil {
		return nil, err
	}
	m.useArena(1 + m.rankTurn)
	defer m.useArena(0)
	m.rankTurn ^= 1
	if err := m.arena.Reset(); err != nil {
		return nil, err
	}
	m.dev.UseArena(m.arena)
	defer m.dev.UseArena(nil)

	// The walk's ids (or the given cones), and the answers in CSR form, rows in group
	// order; one upload.
	var w *devWalk
	if b.Cones == nil {
		w, err = m.newWalk(groups, false)
	} else {
		w, err = m.coneTable(groups, b.Cones)
	}
	if err != nil {
		return nil, err
	}
	hardStart, ansStart := make([]int32, 1, B+1), make([]int32, 1, B+1)
	var hardIDs, ansIDs []int32
	order := make([]int32, B) // each query's row in group order
	for _, g := range groups {
		for r, q := range g.queries {
			order[q] = int32(g.off + r)
			hardIDs = append(hardIDs, hard[q]...)
			ansIDs = append(append(ansIDs, easy[q]...), hard[q]...)
			hardStart, ansStart = append(hardStart, int32(len(hardIDs))), append(ansStart, int32(len(ansIDs)))
		}
	}
	for _, id := range ansIDs {
		if id < 0 || int(id) >= N {
			return nil, fmt.Errorf("gpumodel: RankBatch: answer %d out of range [0,%d)", id, N)
		}
	}
	hsSlot, hSlot, asSlot, aSlot := w.ints.add(hardStart), w.ints.add(hardIDs), w.ints.add(ansStart), w.ints.add(ansIDs)
	orderSlot := -1
	if b.Scores != nil {
		orderSlot = w.ints.add(order)
	}
	if err := w.upload(); err != nil {
		return nil, err
	}
	iv, dev, s := w.iv, m.dev, w.s
	rh := &rankHead{}
	if b.Cones == nil {
		w.th = m.angles(s)
		if err := w.allocate(); err != nil {
			return nil, err
		}
		w.head = rh
		if err := w.walk.Forward(w); err != nil {
			return nil, err
		}
	} else {
		w.table = w.fv[w.tablePart]
		w.th = m.angles(s)
		if s.err != nil {
			return nil, s.err
		}
		if err := rh.forward(w); err != nil {
			return nil, err
		}
	}
	scores := rh.scores
	ranks := s.takeI(max(len(hardIDs), 1))
	var inOrder *gpu.F32
	if b.Scores != nil {
		inOrder = s.take(B * N)
	}
	if s.err != nil {
		return nil, s.err
	}
	if err := dev.FilteredRanks(ranks, scores, iv[hsSlot], iv[hSlot], iv[asSlot], iv[aSlot], B, N); err != nil {
		return nil, err
	}
	if b.Scores != nil {
		// The rows back in the queries' order, on the device, then one copy.
		if err := dev.GatherRows(inOrder, scores, iv[orderSlot], N); err != nil {
			return nil, err
		}
		if err := inOrder.Download(b.Scores); err != nil {
			return nil, err
		}
	}
	fetch, err := ranks.DownloadAsync(len(hardIDs))
	if err != nil {
		return nil, err
	}
	return func() ([][]int32, error) {
		all := make([]int32, len(hardIDs))
		if err := fetch(all); err != nil {
			return nil, err
		}
		for _, g := range groups {
			for _, q := range g.queries {
				out[q], all = all[:len(hard[q]):len(hard[q])], all[len(hard[q]):]
				for _, v := range out[q] {
					if v == 0 {
						return nil, fmt.Errorf("gpumodel: query %d (%s): a score is NaN", q, g.plan.Structure)
					}
				}
			}
		}
		return out, nil
	}, nil
}

// coneTable lays out the given branch cones of each group (cones(g.queries)) as a
// walk's cone table, [2][rows][d], copied once into the float slab (part tablePart): each
// group's DNF branch br at the row of the plan's branch cone, so that rankHead reads them
// as it reads the walk's.
func (m *Model) coneTable(groups []*group, cones func(group []int) ([]model.Cones[float32], error)) (*devWalk, error) {
	d := m.cfg.Dim
	w := &devWalk{m: m, s: &scratch{a: m.arena, dim: d}, groups: groups, at: make([][]int, len(groups))}
	for _, g := range groups {
		w.rows += g.n * len(g.plan.Branches())
	}
	var table []float32 // axes, then half-apertures
	w.tablePart, table = w.floats.reserve(2 * w.rows * d)
	row := 0
	for gi, g := range groups {
		bs, err := cones(g.queries)
		if err != nil {
			return nil, err
		}
		branches := g.plan.Branches()
		if len(bs) != len(branches) {
			return nil, fmt.Errorf("gpumodel: %d branch cones given for queries of structure %s, which has %d DNF branches", len(bs), g.plan.Structure, len(branches))
		}
		w.at[gi] = make([]int, g.plan.NumCones())
		for br, c := range bs {
			if c.N != g.n || c.Dim != d || len(c.Axis) < g.n*d || len(c.Half) < g.n*d {
				return nil, fmt.Errorf("gpumodel: branch %d of structure %s: %d cones of dimension %d given (%d axis and %d aperture values), want %d of %d",
					br, g.plan.Structure, c.N, c.Dim, len(c.Axis), len(c.Half), g.n, d)
			}
			w.at[gi][branches[br]] = row
			copy(table[row*d:], c.Axis[:g.n*d])
			copy(table[(w.rows+row)*d:], c.Half[:g.n*d])
			row += g.n
		}
	}
	return w, nil
}

// EmbedBatch returns the branch cones of queries, computed by the device walk's forward
// pass (training's, without dropout): for each group of model.GroupByStructure(queries),
// in that order, one model.Cones per DNF branch (the plan's order), row r the group's
// r-th query. The ids go up in one copy, the branch cones are gathered into one block on
// the device and come back in one copy. It implements pkg/eval.DeviceRanker's EmbedBatch
// (embed --device cuda). It waits for the device, and is not safe for concurrent use.
//
// A query's cones do not depend on the batch it is embedded in: every kernel of the
// forward pass computes a row from that row's inputs alone, in a fixed order.
func (m *Model) EmbedBatch(queries []query.Grounded) ([][]model.Cones[float32], error) {
	if len(queries) == 0 {
		return nil, nil
	}
	if err := m.flushAdam(); err != nil {
		return nil, err
	}
	groups, err := m.group(queries)
	if err != nil {
		return nil, err
	}
	if err := m.arena.Reset(); err != nil {
		return nil, err
	}
	m.dev.UseArena(m.arena)
	defer m.dev.UseArena(nil)
	w, err := m.newWalk(groups, false)
	if err != nil {
		return nil, err
	}
	// The table rows of the branch cones, group by group and branch by branch: the axes,
	// then the half-apertures (their rows in the table's second half).
	var rows []int32
	for gi, g := range groups {
		for _, c := range g.plan.Branches() {
			for r := range g.n {
				rows = append(rows, int32(w.at[gi][c]+r))
			}
		}
	}
	R := len(rows)
	for i := range R {
		rows = append(rows, rows[i]+int32(w.rows))
	}
	eh := &embedHead{rows: w.ints.add(rows)}
	if err := w.upload(); err != nil {
		return nil, err
	}
	w.th = m.angles(w.s)
	if err := w.allocate(); err != nil {
		return nil, err
	}
	w.head = eh
	if err := w.walk.Forward(w); err != nil {
		return nil, err
	}
	d := m.cfg.Dim
	host := make([]float32, 2*R*d)
	if err := eh.out.Download(host); err != nil {
		return nil, err
	}
	axes, halves := host[:R*d], host[R*d:]
	out := make([][]model.Cones[float32], len(groups))
	at := 0
	for gi, g := range groups {
		for range g.plan.Branches() {
			n := g.n * d
			out[gi] = append(out[gi], model.Cones[float32]{Axis: axes[at : at+n : at+n], Half: halves[at : at+n : at+n], N: g.n, Dim: d})
			at += n
		}
	}
	return out, nil
}

// embedHead ends an embedding walk: it gathers the branch cones' rows of the table
// (ints part rows) into one block, out [2][R][d].
type embedHead struct {
	rows int
	out  *gpu.F32
}

func (h *embedHead) forward(w *devWalk) error {
	idx := w.iv[h.rows]
	h.out = w.s.take(idx.Len() * w.m.cfg.Dim)
	if w.s.err != nil {
		return w.s.err
	}
	if err := w.m.dev.GatherRows(h.out, w.table, idx, w.m.cfg.Dim); err != nil {
		return fmt.Errorf("gathering the branch cones: %w", err)
	}
	return nil
}

func (h *embedHead) backward(*devWalk) error {
	return fmt.Errorf("gpumodel: embedding has no backward pass")
}

// rankHead scores every query against every entity: per group and DNF branch the
// distances from half-angle tables (gpu.DistanceAll), the logits γ − m·dist, and the max
// over branches, into scores [queries][entities] in group order.
type rankHead struct{ scores *gpu.F32 }

func (h *rankHead) forward(w *devWalk) error {
	m, s := w.m, w.s
	dev, d, N := m.dev, m.cfg.Dim, m.cfg.NumEntities
	lambda, gamma := float32(m.cfg.CenterReg), float32(m.cfg.Gamma)
	B := 0
	for _, g := range w.groups {
		B += g.n
	}
	etab := m.entHalfAngles(s)
	h.scores = s.take(B * N)
	if s.err != nil {
		return s.err
	}
	for gi, g := range w.groups {
		branches, n := g.plan.Branches(), g.n
		nb := len(branches)
		rows := h.scores.Slice(g.off*N, n*N)
		logits := rows // one branch: the logits are the scores
		var arg *gpu.I32
		if nb > 1 {
			logits, arg = s.take(nb*n*N), s.takeI(n*N)
		}
		qtab := s.take(n * d * gpu.QueryTableWidth)
		for br, c := range branches {
			dist := logits.Slice(br*n*N, n*N) // γ − m·dist is computed in place
			if s.err != nil {
				return s.err
			}
			cone := w.cone(gi, c)
			s.ok(dev.QueryHalfAngles(qtab, cone.Axis, cone.Half))
			s.ok(dev.DistanceAll(dist, qtab, etab, n, N, d, lambda))
			s.ok(dev.LogitForward(dist, dist, m.p.modulus, gamma))
		}
		if nb > 1 {
			s.ok(dev.UnionMaxForward(rows, arg, logits, nb))
		}
		if s.err != nil {
			return fmt.Errorf("scoring %s: %w", g.plan.Structure, s.err)
		}
	}
	return nil
}

func (h *rankHead) backward(*devWalk) error {
	return fmt.Errorf("gpumodel: ranking has no backward pass")
}
