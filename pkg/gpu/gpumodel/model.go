// Package gpumodel is the training step with the model resident on a CUDA device: the
// parameters, their gradients and Adam's moments live in device memory, and each update
// (the loss of a batch forward and backward, then Adam) is a sequence of kernel launches
// on package gpu's operators. The host only turns a batch into index arrays, uploads
// them and, when asked, reads the loss back.
//
// It computes what pkg/model's Loss, Backward and pkg/train's Adam compute on the CPU,
// by running the same walk (model.Walk) with a device Executor (walk.go): each operator
// once per plan level for all groups of the batch, so that the CPU code is its test
// oracle: the tests run it on package emu's launch emulator against the CPU model, and
// on a real GPU with -tags cuda. The differences are in summation order only:
//   - entity and relation angles are mapped for the whole table at each update (one
//     element-wise pass, cheaper on a GPU than a gather of the touched rows), and the
//     angle gradient is taken once per row, after summing the row's occurrences;
//   - repeated rows (anchors, relations, candidates) are summed through a CSR index in
//     a fixed order (gpu.RowsSum, DistanceBackward's CSR path), never with atomics, so
//     that an update is bit-for-bit reproducible on a given GPU.
package gpumodel

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/rocone/rocone/pkg/adam"
	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/model"
	"github.com/rocone/rocone/pkg/query"
)

// Model is a model's parameters, gradients and Adam state on a device.
type Model struct {
	dev  *gpu.Device
	host *model.Model[float32] // configuration, plans and dropout; its Params are not kept in sync
	cfg  model.Config
	proj model.Projection // the variant's projection operator; the kernels take its number

	names         []string   // parameter tensors, in model.Params.Tensors order
	params, grads []*gpu.F32 // the same order; some are views of stacked
	stacked       []*gpu.F32 // the allocations that hold two tensors each (stackedTensors)
	p, g          deviceParams
	adam          *gpu.Adam
	arena         *gpu.Arena    // the scratch of the work being enqueued: arenas[0], or a rank batch's
	arenas        [3]*gpu.Arena // updates and embedding; rank batches, taking turns (EnqueueRankBatch)
	rankTurn      int
	count         []int32 // RowCSR scratch, max(entities, relations) zeros
	hostBufs      hostBufs
	// The angle tables (π·tanh(x/R) of the entity and relation tables), made on first
	// use (thetaFresh false) and then kept those of the parameters by Adam, and,
	// training, their gradients, which the backward pass accumulates and Adam maps to
	// the raw tables' and clears (gpu.AngleGrad). etab is the entity table's half-angle sines and cosines that rank
	// scores with (made on the first rank batch after the angles). entSC, training, is
	// the entity angles' half-angle sines and cosines by the distance kernels' own
	// function (gpu.EntHalfSinCos), which the loss head's backward reads: made with the
	// angles, and then written by Adam with them (gpu.AngleGrad.SinCos).
	theta, dTheta         angleTables
	etab, entSC           *gpu.F32
	thetaFresh, etabFresh bool

	stats   []*gpu.F64 // a ring of loss results, one per pending update
	nextRes int

	keepGrads bool      // tests: stop before Adam, leaving the gradients on the device
	prof      profiling // rank --profile's
}

// deviceParams names the tensors of params (or grads); absent ones are nil.
type deviceParams struct {
	entity, relAxis, relAperture, relShift, modulus *gpu.F32
	inter                                           gpu.IntersectWeights
	proj                                            [6]*gpu.F32 // W1, B1, W2, B2, W3, B3
}

// pendingRing is how many updates may be in flight before the oldest loss must be read.
const pendingRing = 8

// New uploads host's parameters to dev and creates a fresh Adam with learning rate lr.
// host supplies the configuration and the plans; its parameters are copied, not shared.
func New(dev *gpu.Device, host *model.Model[float32], lr float64) (m *Model, err error) {
	return newModel(dev, host, true, lr)
}

// NewEval uploads host's parameters to dev for evaluation only (RankBatch, EmbedBatch):
// no gradients, no optimiser, so a third of the memory of New. Update fails on it.
func NewEval(dev *gpu.Device, host *model.Model[float32]) (*Model, error) {
	return newModel(dev, host, false, 0)
}

func newModel(dev *gpu.Device, host *model.Model[float32], training bool, lr float64) (m *Model, err error) {
	m = &Model{dev: dev, host: host, cfg: host.Config}
	// The model's matrix-product precision becomes the device's (tf32.cu's GEMMs for TF32).
	if err := dev.SetMatmul(host.Config.Matmul); err != nil {
		return nil, err
	}
	if m.proj, err = m.cfg.Variant.Projection(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			m.Close()
			m = nil
		}
	}()
	ts := host.Params.Tensors()
	for _, t := range ts {
		m.names = append(m.names, t.Name)
	}
	if m.params, err = m.allocTensors(ts, true); err != nil {
		return nil, err
	}
	if training {
		if m.grads, err = m.allocTensors(ts, false); err != nil {
			return nil, err
		}
	}
	if m.p, err = m.named(m.params); err != nil {
		return nil, err
	}
	for i := range m.arenas {
		m.arenas[i] = gpu.NewArena(dev)
	}
	m.arena = m.arenas[0]
	m.count = make([]int32, max(m.cfg.NumEntities, m.cfg.NumRelations))
	if err := m.allocAngles(&m.theta); err != nil {
		return nil, err
	}
	if !training {
		return m, nil
	}
	if m.g, err = m.named(m.grads); err != nil {
		return nil, err
	}
	if err := m.allocAngles(&m.dTheta); err != nil {
		return nil, err
	}
	if !dev.Reverts().EntityTable {
		if m.entSC, err = gpu.Alloc[float32](dev, 2*m.p.entity.Len()); err != nil {
			return nil, fmt.Errorf("allocating the entity half-angle table: %w", err)
		}
	}
	angles := m.angleGrads()
	if m.adam, err = gpu.NewAdamAngles(dev, adam.Default(lr), m.params, m.grads, angles, float32(m.cfg.EmbeddingRange())); err != nil {
		return nil, err
	}
	// The intersection's weights get no gradient from an update without intersections
	// (a batch of paths): their steps wait, the step of an update with intersections
	// (its gradient kept in the buffer) and the zero-gradient ones after it, and are
	// taken together, three in one pass (gpu.Adam.SetDeferrable; flushed before
	// anything reads them, and before a backward pass writes their gradients).
	var inter []int
	for i, name := range m.names {
		if strings.HasPrefix(name, "intersection.") {
			inter = append(inter, i)
		}
	}
	if err := m.adam.SetDeferrable(inter); err != nil {
		return nil, err
	}
	for range pendingRing {
		s, err := gpu.Alloc[float64](dev, 4)
		if err != nil {
			return nil, err
		}
		m.stats = append(m.stats, s)
	}
	return m, nil
}

// stackedTensors are the pairs of parameter tensors allocated back to back (the second
// right after the first), here the intersection's first attention and DeepSets layers,
// which read the same features: so laid out, they run as one layer of twice the outputs
// (gpu.IntersectWeights). Their gradients are stacked the same way.
var stackedTensors = [][2]string{{"intersection.w1", "intersection.w3"}, {"intersection.b1", "intersection.b3"}}

// allocTensors allocates a device tensor for each of ts, each pair of stackedTensors as
// one allocation when both halves have the same length, a multiple of 4 (so the second
// half stays 16-byte aligned, as Adam's and the GEMMs' 16-byte paths need), and uploads
// ts's values into them (upload), or leaves them zero (the gradients).
func (m *Model) allocTensors(ts []model.Tensor[float32], upload bool) ([]*gpu.F32, error) {
	doing := "allocating the gradient of"
	if upload {
		doing = "uploading"
	}
	index := map[string]int{}
	for i, t := range ts {
		index[t.Name] = i
	}
	bufs := make([]*gpu.F32, len(ts))
	pairs := stackedTensors
	if m.dev.Reverts().Stacked {
		pairs = nil // each tensor apart, as before the stacked layout
	}
	for _, pair := range pairs {
		i, ok1 := index[pair[0]]
		j, ok2 := index[pair[1]]
		if !ok1 || !ok2 || len(ts[i].Data) != len(ts[j].Data) || len(ts[i].Data)%4 != 0 {
			continue
		}
		n := len(ts[i].Data)
		b, err := gpu.Alloc[float32](m.dev, 2*n)
		if err != nil {
			return bufs, fmt.Errorf("%s %s and %s: %w", doing, pair[0], pair[1], err)
		}
		m.stacked = append(m.stacked, b)
		bufs[i], bufs[j] = b.Slice(0, n), b.Slice(n, n)
	}
	for i, t := range ts {
		if bufs[i] == nil {
			b, err := gpu.Alloc[float32](m.dev, len(t.Data))
			if err != nil {
				return bufs, fmt.Errorf("%s %s: %w", doing, t.Name, err)
			}
			bufs[i] = b
		}
		if upload {
			if err := bufs[i].Upload(t.Data); err != nil {
				return bufs, fmt.Errorf("%s %s: %w", doing, t.Name, err)
			}
		}
	}
	return bufs, nil
}

// allocAngles allocates zero tables the size of the entity and relation angle tables:
// the model's angles (Model.theta) and, for training, their gradients (Model.dTheta).
func (m *Model) allocAngles(t *angleTables) error {
	nR, d := m.cfg.NumRelations, m.cfg.Dim
	t.nRel = 1
	if m.p.relAperture != nil {
		t.nRel = 2
	}
	var err error
	if t.ent, err = gpu.Alloc[float32](m.dev, m.p.entity.Len()); err != nil {
		return fmt.Errorf("allocating the entity angles: %w", err)
	}
	if t.rel, err = gpu.Alloc[float32](m.dev, t.nRel*nR*d); err != nil {
		return fmt.Errorf("allocating the relation angles: %w", err)
	}
	return nil
}

// angleGrads are Adam's angle gradients, per parameter tensor: the entity table, the
// relation axes and (all but rocone-se) the relation aperture offsets.
func (m *Model) angleGrads() []gpu.AngleGrad {
	nR, d := m.cfg.NumRelations, m.cfg.Dim
	angles := make([]gpu.AngleGrad, len(m.params))
	for i, p := range m.params {
		switch p {
		case m.p.entity:
			angles[i] = gpu.AngleGrad{DTheta: m.dTheta.ent, Theta: m.theta.ent, SinCos: m.entSC}
		case m.p.relAxis:
			angles[i] = gpu.AngleGrad{DTheta: m.dTheta.rel.Slice(0, nR*d), Theta: m.theta.rel.Slice(0, nR*d)}
		case m.p.relAperture:
			angles[i] = gpu.AngleGrad{DTheta: m.dTheta.rel.Slice(nR*d, nR*d), Theta: m.theta.rel.Slice(nR*d, nR*d)}
		}
	}
	return angles
}

// useArena makes arenas[i] the scratch of the work enqueued next.
func (m *Model) useArena(i int) { m.arena = m.arenas[i] }

// named sorts the tensors bufs (in m.names order) into their roles; a tensor the device
// step does not know is an error, not a silent gap.
func (m *Model) named(bufs []*gpu.F32) (deviceParams, error) {
	var dp deviceParams
	slot := map[string]**gpu.F32{
		"entity": &dp.entity, "relation.axis": &dp.relAxis, "relation.aperture": &dp.relAperture,
		"relation.shift": &dp.relShift, "modulus": &dp.modulus,
		"intersection.w1": &dp.inter.W1, "intersection.b1": &dp.inter.B1,
		"intersection.w2": &dp.inter.W2, "intersection.b2": &dp.inter.B2,
		"intersection.w3": &dp.inter.W3, "intersection.b3": &dp.inter.B3,
		"intersection.w4": &dp.inter.W4, "intersection.b4": &dp.inter.B4,
		"projection.w1": &dp.proj[0], "projection.b1": &dp.proj[1],
		"projection.w2": &dp.proj[2], "projection.b2": &dp.proj[3],
		"projection.w3": &dp.proj[4], "projection.b3": &dp.proj[5],
	}
	for i, name := range m.names {
		p, ok := slot[name]
		if !ok {
			return dp, fmt.Errorf("gpumodel: no device role for parameter tensor %q", name)
		}
		*p = bufs[i]
	}
	return dp, nil
}

// Close releases the device memory (not the device).
func (m *Model) Close() error {
	var all []interface{ Free() error }
	for _, b := range slices.Concat(m.params, m.grads, m.stacked) {
		all = append(all, b)
	}
	for _, s := range m.stats {
		all = append(all, s)
	}
	all = append(all, m.theta.ent, m.theta.rel, m.dTheta.ent, m.dTheta.rel, m.etab, m.entSC)
	err := gpu.FreeAll(all...)
	if m.adam != nil {
		if e := m.adam.Free(); e != nil && err == nil {
			err = e
		}
	}
	for i, a := range m.arenas {
		if a != nil {
			if e := a.Free(); e != nil && err == nil {
				err = e
			}
		}
		m.arenas[i] = nil
	}
	m.params, m.grads, m.stacked, m.stats, m.adam, m.arena = nil, nil, nil, nil, nil, nil
	m.theta, m.dTheta, m.etab, m.entSC = angleTables{}, angleTables{}, nil, nil
	return err
}

// flushAdam takes Adam's deferred steps (gpu.Adam.SetDeferrable), if it is training:
// before the parameters are read.
func (m *Model) flushAdam() error {
	if m.adam == nil {
		return nil
	}
	return m.adam.Flush()
}

// ResetAdam makes the optimiser brand-new with learning rate lr (docs/training.md §1).
func (m *Model) ResetAdam(lr float64) error {
	m.adam.Config.LR = lr
	return m.adam.Reset()
}

// SetAdam sets the optimiser's learning rate, step count and moments (per tensor, in
// model.Params.Tensors order): a resumed run.
func (m *Model) SetAdam(lr float64, step int, mo, v [][]float32) error {
	m.adam.Config.LR = lr
	return m.adam.SetState(step, mo, v)
}

// SetAdamLags sets the parameters' Adam lags for the coming update (gpu.Adam.SetLags;
// train.Adam.Lag after its count of that update), in model.Params.Tensors order.
func (m *Model) SetAdamLags(lags []int64) error { return m.adam.SetLags(lags) }

// AdamSteps is the optimiser's step count since it was created or reset.
func (m *Model) AdamSteps() int { return m.adam.Steps() }

// Download copies the parameters into p (same configuration) and, if mo and v are not
// nil, Adam's moments into them (per tensor, in model.Params.Tensors order). It waits
// for every pending update (and takes Adam's deferred steps).
func (m *Model) Download(p *model.Params[float32], mo, v [][]float32) error {
	ts := p.Tensors()
	if len(ts) != len(m.params) {
		return fmt.Errorf("gpumodel: %d parameter tensors on the host, %d on the device", len(ts), len(m.params))
	}
	if err := m.flushAdam(); err != nil {
		return err
	}
	for i, t := range ts {
		if t.Name != m.names[i] || len(t.Data) != m.params[i].Len() {
			return fmt.Errorf("gpumodel: host tensor %s [%d] against device tensor %s [%d]", t.Name, len(t.Data), m.names[i], m.params[i].Len())
		}
		if err := m.params[i].Download(t.Data); err != nil {
			return fmt.Errorf("downloading %s: %w", t.Name, err)
		}
		if mo != nil {
			if err := m.adam.Moments(i, mo[i], v[i]); err != nil {
				return fmt.Errorf("downloading Adam's moments of %s: %w", t.Name, err)
			}
		}
	}
	return nil
}

// Pending is an update enqueued on the device; Wait returns its loss.
type Pending struct {
	m     *Model
	fetch func([]float64) error // the update's loss statistics, downloaded behind it
	gen   int
}

// Wait waits for the update and returns its loss (L_pos + L_neg)/2 and the two parts. It
// waits for that update alone, not for those enqueued after it, so that reading a step's
// losses late leaves the device the next step's work (a synchronous read would drain the
// queue, and the device would idle while the host enqueued more). It must be called
// once, before pendingRing further updates are enqueued.
func (p Pending) Wait() (loss, lossPos, lossNeg float64, err error) {
	if p.m.nextRes-p.gen > pendingRing {
		return 0, 0, 0, fmt.Errorf("gpumodel: the loss of an update was read after %d more updates", p.m.nextRes-p.gen)
	}
	s := make([]float64, 4)
	if err := p.fetch(s); err != nil {
		return 0, 0, 0, err
	}
	return s[0], s[1], s[2], nil
}

// group is the part of a batch with one structure, as the device step sees it.
type group struct {
	plan    *model.Plan
	queries []int     // the group's positions in the batch, in order
	n, off  int       // queries, and the first's position in group order
	anchors [][]int32 // per anchor slot, [n]
	rels    [][]int32 // per relation slot, [n]
	cand    []int32   // [n][K] entity ids, the positive first
	masks   []mask    // per step (intersections only)
}

// mask is an intersection's dropout mask, made on the device from its seed.
type mask struct {
	seed      uint64
	threshold uint32
	keep      float32
	on        bool
}

// Update enqueues one optimiser update on batch b: the loss forward and backward and the
// Adam step. drop draws the intersection dropout masks exactly as the CPU model does
// (nil: none). The update runs asynchronously; the returned Pending gives its loss.
//
// Errors are of the batch (a malformed batch, an id out of range: nothing is enqueued)
// or of the device (the state on the device is then unknown and the run must stop).
func (m *Model) Update(b *model.Batch, drop *rand.Rand) (Pending, error) {
	if m.adam == nil {
		return Pending{}, fmt.Errorf("gpumodel: Update on a model made for evaluation (NewEval)")
	}
	groups, err := m.prepare(b, drop)
	if err != nil {
		return Pending{}, err
	}
	if err := m.arena.Reset(); err != nil {
		return Pending{}, err
	}
	m.dev.UseArena(m.arena)
	defer m.dev.UseArena(nil)
	stats := m.stats[m.nextRes%pendingRing]
	if err := m.step(b, groups, stats); err != nil {
		return Pending{}, err
	}
	fetch, err := stats.DownloadAsync(stats.Len())
	if err != nil {
		return Pending{}, err
	}
	m.nextRes++
	return Pending{m: m, fetch: fetch, gen: m.nextRes}, nil
}

// prepare checks the batch, groups it by structure (model.GroupByStructure, the CPU's
// order), gathers each group's candidates and draws the dropout masks' seeds in the
// CPU's order.
func (m *Model) prepare(b *model.Batch, drop *rand.Rand) ([]*group, error) {
	nq, k := len(b.Queries), b.NumNegative
	if nq == 0 || k <= 0 || len(b.Positive) != nq || len(b.Negative) != nq*k || len(b.Weight) != nq {
		return nil, fmt.Errorf("gpumodel: malformed batch: %d queries, %d positives, %d negatives (k=%d), %d weights",
			nq, len(b.Positive), len(b.Negative), k, len(b.Weight))
	}
	groups, err := m.group(b.Queries)
	if err != nil {
		return nil, err
	}
	nE, K := int32(m.cfg.NumEntities), k+1
	for _, g := range groups {
		g.cand = make([]int32, 0, g.n*K)
		for _, q := range g.queries {
			g.cand = append(g.cand, b.Positive[q])
			g.cand = append(g.cand, b.Negative[q*k:(q+1)*k]...)
		}
		for _, id := range g.cand {
			if id < 0 || id >= nE {
				return nil, fmt.Errorf("gpumodel: candidate entity %d out of range [0,%d)", id, nE)
			}
		}
	}
	// The masks' seeds, group by group and step by step: the CPU's order (model.embedAll).
	for _, g := range groups {
		for _, i := range g.plan.Intersections() {
			mk := &g.masks[i]
			mk.seed, mk.threshold, mk.keep, mk.on = m.host.DropoutSeed(drop)
		}
	}
	return groups, nil
}

// group splits queries by structure (model.GroupByStructure, the CPU's order) and lays
// out each group's anchor and relation ids by slot, checking them.
func (m *Model) group(queries []query.Grounded) ([]*group, error) {
	nE, nR := int32(m.cfg.NumEntities), int32(m.cfg.NumRelations)
	var groups []*group
	off := 0
	for _, idx := range model.GroupByStructure(queries) {
		s := queries[idx[0]].Structure
		plan, err := m.host.Plan(s)
		if err != nil {
			return nil, err
		}
		n := len(idx)
		g := &group{plan: plan, queries: idx, n: n, off: off, masks: make([]mask, plan.NumSteps())}
		off += n
		g.anchors = make([][]int32, s.NumAnchors)
		for a := range g.anchors {
			g.anchors[a] = make([]int32, n)
		}
		g.rels = make([][]int32, s.NumRelations)
		for r := range g.rels {
			g.rels[r] = make([]int32, n)
		}
		for r, q := range idx {
			gq := &queries[q]
			if len(gq.Anchors) != s.NumAnchors || len(gq.Relations) != s.NumRelations {
				return nil, fmt.Errorf("gpumodel: query %d of structure %s has %d anchors and %d relations", q, s, len(gq.Anchors), len(gq.Relations))
			}
			for a, id := range gq.Anchors {
				if id < 0 || id >= nE {
					return nil, fmt.Errorf("gpumodel: anchor entity %d out of range [0,%d)", id, nE)
				}
				g.anchors[a][r] = id
			}
			for j, id := range gq.Relations {
				if id < 0 || id >= nR {
					return nil, fmt.Errorf("gpumodel: relation %d out of range [0,%d)", id, nR)
				}
				g.rels[j][r] = id
			}
		}
		groups = append(groups, g)
	}
	return groups, nil
}
