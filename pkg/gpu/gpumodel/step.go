package gpumodel

import (
	"fmt"
	"slices"

	"github.com/rocone/rocone/pkg/gpu"
	"github.com/rocone/rocone/pkg/model"
)

// slab packs the host arrays of an update into one upload.
type slab[T int32 | float32] struct {
	data []T
	offs [][2]int // offset, length of each part
}

func (s *slab[T]) add(x []T) int {
	s.offs = append(s.offs, [2]int{len(s.data), len(x)})
	s.data = append(s.data, x...)
	return len(s.offs) - 1
}

// reserve appends a part of n elements for the caller to fill in place (a large table:
// RankBatch's given cones, copied once) and returns its number and the part, which is
// valid until the next add or reserve.
func (s *slab[T]) reserve(n int) (int, []T) {
	at := len(s.data)
	s.offs = append(s.offs, [2]int{at, n})
	s.data = slices.Grow(s.data, n)[:at+n]
	clear(s.data[at:])
	return len(s.offs) - 1, s.data[at:]
}

// hostBufs are the host-side arrays a walk lays out, kept by the Model between walks so
// that a steady state allocates and regrows nothing (they were a third of the host's
// share of an update): the slabs' storage, a CSR index's, and the loss head's lists. A
// walk takes them in newWalk and gives them back once uploaded (devWalk.upload): the
// uploads copy them (Buffer.UploadAsync stages them), so the next walk may refill them.
type hostBufs struct {
	ints             []int32
	floats           []float32
	intOffs, fltOffs [][2]int
	csr              gpu.RowIndex
	rows, cand       []int32
	classes          []int32 // the loss head's class table
	weight           []float32
}

// upload copies the slab into an arena buffer (in stream order, without waiting for the
// device: Buffer.UploadAsync) and returns a view per part.
func upload[T int32 | float32](a *gpu.Arena, s *slab[T]) ([]*gpu.Buffer[T], error) {
	buf, err := gpu.Take[T](a, max(len(s.data), 1))
	if err != nil {
		return nil, err
	}
	if err := buf.UploadAsync(s.data); err != nil {
		return nil, err
	}
	views := make([]*gpu.Buffer[T], len(s.offs))
	for i, o := range s.offs {
		views[i] = buf.Slice(o[0], o[1])
	}
	return views, nil
}

// rowIndex is where a CSR index (gpu.RowCSR) lives in the int slab.
type rowIndex struct{ rows, start, pairs, n int }

func addIndex(s *slab[int32], ix gpu.RowIndex) rowIndex {
	return rowIndex{rows: s.add(ix.Rows), start: s.add(ix.Start), pairs: s.add(ix.Pairs), n: len(ix.Rows)}
}

// addCSR adds the CSR index of ids (gpu.RowCSRInto, on the Model's reused index) to the
// walk's int slab.
func (w *devWalk) addCSR(ids []int32, tableRows int) rowIndex {
	m := w.m
	gpu.RowCSRInto(&m.hostBufs.csr, ids, tableRows, m.counts(tableRows))
	return addIndex(&w.ints, m.hostBufs.csr)
}

func (r rowIndex) on(v []*gpu.I32) gpu.DeviceRowIndex {
	return gpu.DeviceRowIndex{Rows: v[r.rows], Start: v[r.start], Pairs: v[r.pairs], N: r.n}
}

// scratch hands out an update's temporaries from the arena and keeps the first error, so
// that a sequence of enqueues reads straight and is checked once.
type scratch struct {
	a   *gpu.Arena
	dim int
	err error
}

func (s *scratch) take(n int) *gpu.F32 {
	if s.err != nil {
		return nil
	}
	buf, err := gpu.Take[float32](s.a, n)
	s.err = err
	return buf
}

func (s *scratch) takeI(n int) *gpu.I32 {
	if s.err != nil {
		return nil
	}
	buf, err := gpu.Take[int32](s.a, n)
	s.err = err
	return buf
}

func (s *scratch) ok(e error) {
	if s.err == nil && e != nil {
		s.err = e
	}
}

// angleTables are the parameter tables mapped to angles (π·tanh(x/R)) for one update.
type angleTables struct {
	ent *gpu.F32
	// rel is [1 or 2][relations][d]: the relation axes, then (all but rocone-se) the
	// aperture offsets, so that one gather fetches both for a projection.
	rel  *gpu.F32
	nRel int // 1 or 2
}

// angles returns the entity and relation tables mapped to angles (Model.theta), mapping
// them first unless they already hold the parameters' angles: ranking and embedding
// batches share one mapping, an update makes its own.
func (m *Model) angles(s *scratch) angleTables {
	if m.thetaFresh || s.err != nil {
		return m.theta
	}
	R := float32(m.cfg.EmbeddingRange())
	nR, d := m.cfg.NumRelations, m.cfg.Dim
	th := m.theta
	s.ok(m.dev.AngleForward(th.ent, m.p.entity, R))
	if m.entSC != nil {
		s.ok(m.dev.EntHalfSinCos(m.entSC, th.ent))
	}
	s.ok(m.dev.AngleForward(th.rel.Slice(0, nR*d), m.p.relAxis, R))
	if th.nRel == 2 {
		s.ok(m.dev.AngleForward(th.rel.Slice(nR*d, nR*d), m.p.relAperture, R))
	}
	m.thetaFresh = s.err == nil
	return th
}

// entHalfAngles returns the entity table's half-angle table (sin, cos of θ/2, the scoring
// kernel's), made first unless it is that of the current angles.
func (m *Model) entHalfAngles(s *scratch) *gpu.F32 {
	th := m.angles(s)
	if s.err != nil || (m.etabFresh && m.thetaFresh) {
		return m.etab
	}
	if m.etab == nil {
		var err error
		if m.etab, err = gpu.Alloc[float32](m.dev, 2*th.ent.Len()); err != nil {
			s.ok(fmt.Errorf("allocating the entity half-angle table: %w", err))
			return nil
		}
	}
	s.ok(m.dev.EntityHalfAngles(m.etab, th.ent))
	m.etabFresh = s.err == nil
	return m.etab
}

// adamStep enqueues Adam's step, the only change to the parameters after their upload.
// It leaves the angle tables and entSC those of the new parameters (gpu.AngleGrad: Adam
// writes them), rank's half-angle table stale.
func (m *Model) adamStep() error {
	err := m.adam.Step(true)
	m.thetaFresh, m.etabFresh = err == nil, false
	return err
}

// step enqueues the update: uploads, the walk forward, the loss head, the walk backward,
// Adam.
func (m *Model) step(b *model.Batch, groups []*group, stats *gpu.F64) error {
	w, err := m.newWalk(groups, true)
	if err != nil {
		return err
	}
	w.head = w.layoutLoss(b, stats)
	if err := w.upload(); err != nil {
		return err
	}
	dev, cfg, s := m.dev, m.cfg, w.s
	R := float32(cfg.EmbeddingRange())
	w.th = m.angles(s) // mapped by the last update's Adam, or here the first time
	intersects := w.intersects()
	if intersects {
		// The intersection's weights take the steps that waited (gpu.Adam.SetDeferrable)
		// before the forward pass reads them and the backward pass writes their gradients.
		s.ok(m.adam.Flush())
	}
	if err := w.allocate(); err != nil {
		return err
	}
	if err := w.walk.Forward(w); err != nil {
		return err
	}
	if err := w.walk.Backward(w); err != nil {
		return err
	}

	if s.err != nil {
		return s.err
	}
	if m.keepGrads {
		// The tests' stop before Adam: the raw tables' gradients, through the angle maps,
		// and the angles' gradients cleared for the next update (Adam's part).
		nR, d := cfg.NumRelations, cfg.Dim
		s.ok(dev.AngleBackward(m.g.entity, w.dThEnt, w.th.ent, R))
		s.ok(dev.AngleBackward(m.g.relAxis, w.dThRel.Slice(0, nR*d), w.th.rel.Slice(0, nR*d), R))
		if w.th.nRel == 2 {
			s.ok(dev.AngleBackward(m.g.relAperture, w.dThRel.Slice(nR*d, nR*d), w.th.rel.Slice(nR*d, nR*d), R))
		}
		s.ok(w.dThEnt.Zero())
		s.ok(w.dThRel.Zero())
		return s.err
	}
	// Adam maps the angles' gradients to the raw tables' as it reads them, clears every
	// gradient and maps the new values to angles (gpu.AngleGrad); the intersection's
	// weights' steps wait (SetDeferrable), without intersections with a zero gradient
	// (SetIdle).
	m.adam.SetIdle(!intersects)
	return m.adamStep()
}
