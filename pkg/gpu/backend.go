package gpu

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/rocone/rocone/pkg/compute"
)

// Backend implements compute.Backend (float32) on a Device.
//
// It copies every call's inputs to the device and its outputs back (into reused device
// and host scratch buffers), so it is a drop-in replacement for compute.Reference[float32]
// wherever a Backend is taken: `embed --device cuda` and the CPU model's GEMMs and
// distances. Training and ranking on the device do not go through it: package gpumodel
// keeps parameters, moments and activations resident and calls the Device operations.
//
// compute.Backend's methods cannot return errors. A device error (a failed launch, out
// of memory, a lost device) is recorded, the call is computed by compute.Reference
// instead, so its result is still correct, and every later call goes to the CPU too
// (the CUDA context may be unusable). Err reports it (compute.DeferredErrors): the stages
// check it through compute.Err after each batch and before committing an artifact, and
// stop with the error. Length errors in the arguments panic, as in Reference.
//
// Backend is safe for concurrent use; calls are serialised.
type Backend struct {
	// Deterministic makes DistanceBackward's entity gradient reproducible when
	// candidates are given (a CSR gather instead of atomicAdd scatter).
	Deterministic bool

	dev       *Device
	mu        sync.Mutex
	err       error
	fallbacks int
	dbuf      [10]*F32
	ibuf      *I32
	hbuf      [3][]float32
}

var (
	_ compute.Backend        = (*Backend)(nil)
	_ compute.DeferredErrors = (*Backend)(nil) // every stage checks it through compute.Err
)

// NewBackend returns a Backend on dev.
func NewBackend(dev *Device) *Backend { return &Backend{dev: dev} }

// Device returns the backend's device.
func (b *Backend) Device() *Device { return b.dev }

// Err returns the first device error, or nil.
func (b *Backend) Err() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// Fallbacks counts the calls computed on the CPU after a device error.
func (b *Backend) Fallbacks() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fallbacks
}

// Close frees the scratch buffers (not the device).
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var first error
	for i, d := range b.dbuf {
		if err := d.Free(); err != nil && first == nil {
			first = err
		}
		b.dbuf[i] = nil
	}
	if err := b.ibuf.Free(); err != nil && first == nil {
		first = err
	}
	b.ibuf = nil
	return first
}

func (b *Backend) run(op string, gpu func() error, cpu func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		err := gpu()
		if err == nil {
			return
		}
		b.err = fmt.Errorf("cuda backend: %s: %w", op, err)
	}
	b.fallbacks++
	cpu()
}

// scratch returns device slot i with room for n float32s.
func (b *Backend) scratch(i, n int) (*F32, error) {
	if b.dbuf[i].Len() < n {
		if err := b.dbuf[i].Free(); err != nil {
			return nil, err
		}
		b.dbuf[i] = nil
		buf, err := Alloc[float32](b.dev, grow(n))
		if err != nil {
			return nil, err
		}
		b.dbuf[i] = buf
	}
	return b.dbuf[i].Slice(0, n), nil
}

func grow(n int) int {
	c := 1024
	for c < n {
		c *= 2
	}
	return c
}

// upload copies src into device slot i; a nil src gives a nil buffer.
func (b *Backend) upload(i int, src []float32) (*F32, error) {
	if src == nil {
		return nil, nil
	}
	buf, err := b.scratch(i, len(src))
	if err != nil {
		return nil, err
	}
	return buf, buf.Upload(src)
}

// zeroed returns device slot i cleared to n zeros, or nil when want is false.
func (b *Backend) zeroed(i, n int, want bool) (*F32, error) {
	if !want {
		return nil, nil
	}
	buf, err := b.scratch(i, n)
	if err != nil {
		return nil, err
	}
	return buf, buf.Zero()
}

func (b *Backend) uploadIdx(src []int32) (*I32, error) {
	if src == nil {
		return nil, nil
	}
	if b.ibuf.Len() < len(src) {
		if err := b.ibuf.Free(); err != nil {
			return nil, err
		}
		b.ibuf = nil
		buf, err := Alloc[int32](b.dev, grow(len(src)))
		if err != nil {
			return nil, err
		}
		b.ibuf = buf
	}
	buf := b.ibuf.Slice(0, len(src))
	return buf, buf.Upload(src)
}

// hostTmp returns host slot i with room for n float32s.
func (b *Backend) hostTmp(i, n int) []float32 {
	if cap(b.hbuf[i]) < n {
		b.hbuf[i] = make([]float32, n)
	}
	return b.hbuf[i][:n]
}

// addOut downloads the device gradients and adds them into the host ones, but only after
// all of them downloaded, so that a failure leaves the host gradients untouched.
func (b *Backend) addOut(pairs ...struct {
	host []float32
	dev  *F32
}) error {
	var tmps [][]float32
	for i, p := range pairs {
		if p.host == nil {
			tmps = append(tmps, nil)
			continue
		}
		t := b.hostTmp(i, len(p.host))
		if err := p.dev.Download(t); err != nil {
			return err
		}
		tmps = append(tmps, t)
	}
	for i, p := range pairs {
		for j, v := range tmps[i] {
			p.host[j] += v
		}
	}
	return nil
}

type outPair = struct {
	host []float32
	dev  *F32
}

func need[T any](op, name string, s []T, n int) []T {
	if len(s) < n {
		panic("cuda backend: " + op + " " + name + ": slice too short")
	}
	return s[:n]
}

// LinearForward implements compute.Kernels.LinearForward on the device.
func (b *Backend) LinearForward(y, x, w, bias []float32, rows, in, out int) {
	y, x, w = need("linear", "y", y, rows*out), need("linear", "x", x, rows*in), need("linear", "w", w, out*in)
	if bias != nil {
		bias = need("linear", "b", bias, out)
	}
	b.run("LinearForward", func() error {
		X, err := b.upload(0, x)
		if err != nil {
			return err
		}
		W, err := b.upload(1, w)
		if err != nil {
			return err
		}
		B, err := b.upload(2, bias)
		if err != nil {
			return err
		}
		Y, err := b.scratch(3, len(y))
		if err != nil {
			return err
		}
		if err := b.dev.LinearForward(Y, X, W, B, rows, in, out); err != nil {
			return err
		}
		return Y.Download(y)
	}, func() { b.cpuLinear().LinearForward(y, x, w, bias, rows, in, out) })
}

// LinearBackward implements compute.Kernels.LinearBackward on the device.
func (b *Backend) LinearBackward(dx, dw, db, dy, x, w []float32, rows, in, out int) {
	dy, x, w = need("linear", "dy", dy, rows*out), need("linear", "x", x, rows*in), need("linear", "w", w, out*in)
	dw = need("linear", "dw", dw, out*in)
	if dx != nil {
		dx = need("linear", "dx", dx, rows*in)
	}
	if db != nil {
		db = need("linear", "db", db, out)
	}
	b.run("LinearBackward", func() error {
		DY, err := b.upload(0, dy)
		if err != nil {
			return err
		}
		X, err := b.upload(1, x)
		if err != nil {
			return err
		}
		var W *F32
		if dx != nil {
			if W, err = b.upload(2, w); err != nil {
				return err
			}
		}
		DX, err := b.zeroed(3, len(dx), dx != nil)
		if err != nil {
			return err
		}
		DW, err := b.zeroed(4, len(dw), true)
		if err != nil {
			return err
		}
		DB, err := b.zeroed(5, len(db), db != nil)
		if err != nil {
			return err
		}
		if err := b.dev.LinearBackward(DX, DW, DB, DY, X, W, rows, in, out); err != nil {
			return err
		}
		return b.addOut(outPair{dx, DX}, outPair{dw, DW}, outPair{db, DB})
	}, func() { b.cpuLinear().LinearBackward(dx, dw, db, dy, x, w, rows, in, out) })
}

// cpuLinear is the reference the linear layers fall back to after a device error: in the
// device's matrix-product precision (Device.SetMatmul), so that a fallback computes what
// the device would have.
func (b *Backend) cpuLinear() compute.Kernels[float32] {
	return compute.WithMatmul[float32](compute.Reference[float32]{}, b.dev.Matmul())
}

// entRows checks the candidate rows against ent and returns how many rows to upload.
func entRows(ent []float32, cand []int32, cands, dim int) int {
	if cand == nil {
		need("distance", "ent", ent, cands*dim)
		return cands
	}
	if dim == 0 {
		return 0
	}
	rows := len(ent) / dim
	maxRow := -1
	for _, c := range cand {
		if c < 0 || int(c) >= rows {
			panic(fmt.Sprintf("cuda backend: distance: candidate row %d outside ent's %d rows", c, rows))
		}
		maxRow = max(maxRow, int(c))
	}
	return maxRow + 1
}

// DistanceForward implements compute.Kernels.DistanceForward on the device.
func (b *Backend) DistanceForward(dist, axis, half, ent []float32, cand []int32, queries, cands, dim int, lambda float32) {
	dist = need("distance", "dist", dist, queries*cands)
	axis, half = need("distance", "axis", axis, queries*dim), need("distance", "half", half, queries*dim)
	if cand != nil {
		cand = need("distance", "cand", cand, queries*cands)
	}
	nrows := entRows(ent, cand, cands, dim)
	b.run("DistanceForward", func() error {
		A, err := b.upload(0, axis)
		if err != nil {
			return err
		}
		H, err := b.upload(1, half)
		if err != nil {
			return err
		}
		E, err := b.upload(2, ent[:nrows*dim])
		if err != nil {
			return err
		}
		C, err := b.uploadIdx(cand)
		if err != nil {
			return err
		}
		D, err := b.scratch(3, len(dist))
		if err != nil {
			return err
		}
		if err := b.dev.DistanceForward(D, A, H, E, C, queries, cands, dim, lambda); err != nil {
			return err
		}
		return D.Download(dist)
	}, func() {
		compute.Reference[float32]{}.DistanceForward(dist, axis, half, ent, cand, queries, cands, dim, lambda)
	})
}

// DistanceBackward implements compute.Kernels.DistanceBackward on the device.
func (b *Backend) DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, ent []float32, cand []int32, queries, cands, dim int, lambda float32) {
	dDist = need("distance", "dDist", dDist, queries*cands)
	axis, half = need("distance", "axis", axis, queries*dim), need("distance", "half", half, queries*dim)
	if cand != nil {
		cand = need("distance", "cand", cand, queries*cands)
	}
	if dAxis != nil {
		dAxis = need("distance", "dAxis", dAxis, queries*dim)
	}
	if dHalf != nil {
		dHalf = need("distance", "dHalf", dHalf, queries*dim)
	}
	nrows := entRows(ent, cand, cands, dim)
	var dEntUsed []float32
	if dEnt != nil {
		dEntUsed = need("distance", "dEnt", dEnt, nrows*dim)
	}
	b.run("DistanceBackward", func() error {
		DD, err := b.upload(0, dDist)
		if err != nil {
			return err
		}
		A, err := b.upload(1, axis)
		if err != nil {
			return err
		}
		H, err := b.upload(2, half)
		if err != nil {
			return err
		}
		E, err := b.upload(3, ent[:nrows*dim])
		if err != nil {
			return err
		}
		return b.distanceBackward(dAxis, dHalf, dEntUsed, DD, A, H, E, cand, queries, cands, dim, lambda)
	}, func() {
		compute.Reference[float32]{}.DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, ent, cand, queries, cands, dim, lambda)
	})
}

// ---------------------------------------------------------------------------------------
// compute.EntityPreparer: the entity table resident on the device.

// PrepareEntities implements compute.EntityPreparer: it uploads ent [rows][dim] once, so
// that the table's distance calls (evaluation scores every query group against it, a
// training step every group and branch) copy only the queries, candidates and results.
// The device copy is a snapshot. It is freed by the table's Free method, or when the
// table is garbage collected. After a device error the table computes on the CPU from
// ent itself (which the caller keeps unchanged while it uses the table, as
// compute.PrepareEntities requires).
func (b *Backend) PrepareEntities(ent []float32, rows, dim int) compute.PreparedEntities[float32] {
	ent = need("prepare", "ent", ent, rows*dim)
	t := &preparedTable{b: b, ent: ent, rows: rows, dim: dim}
	b.run("PrepareEntities", func() error {
		buf, err := FromHost(b.dev, ent)
		if err != nil {
			return err
		}
		half, err := Alloc[float32](b.dev, 2*len(ent))
		if err == nil {
			if err = b.dev.EntityHalfAngles(half, buf); err != nil {
				half.Free()
			}
		}
		if err != nil {
			buf.Free()
			return err
		}
		t.dev, t.half = buf, half
		runtime.AddCleanup(t, func(bufs [2]*F32) { FreeAll(bufs[0], bufs[1]) }, [2]*F32{buf, half})
		return nil
	}, func() {})
	return t
}

// preparedTable is an entity table on the device: the angles, for the distance with
// candidates and the backward pass, and their half-angle sines and cosines, for scoring
// every query against every row (DistanceAll: evaluation's hot loop).
type preparedTable struct {
	b         *Backend
	ent       []float32
	dev       *F32 // nil when the upload failed
	half      *F32 // [rows][dim][2]; nil with dev
	rows, dim int
}

var _ compute.PreparedEntities[float32] = (*preparedTable)(nil)

func (t *preparedTable) Rows() int { return t.rows }
func (t *preparedTable) Dim() int  { return t.dim }

// Free releases the device copy now; the table then computes on the CPU.
func (t *preparedTable) Free() error {
	t.b.mu.Lock()
	defer t.b.mu.Unlock()
	bufs := []interface{ Free() error }{t.dev, t.half}
	t.dev, t.half = nil, nil
	return FreeAll(bufs...)
}

func (t *preparedTable) check(cand []int32, queries, cands int) {
	if cand == nil {
		if cands > t.rows {
			panic("cuda backend: prepared distance: cands exceeds the table's rows")
		}
		return
	}
	need("prepared distance", "cand", cand, queries*cands)
	for _, c := range cand {
		if c < 0 || int(c) >= t.rows {
			panic(fmt.Sprintf("cuda backend: prepared distance: candidate row %d outside the table's %d rows", c, t.rows))
		}
	}
}

func (t *preparedTable) DistanceForward(dist, axis, half []float32, cand []int32, queries, cands int, lambda float32) {
	dim := t.dim
	dist = need("distance", "dist", dist, queries*cands)
	axis, half = need("distance", "axis", axis, queries*dim), need("distance", "half", half, queries*dim)
	t.check(cand, queries, cands)
	b := t.b
	cpu := func() {
		compute.Reference[float32]{}.DistanceForward(dist, axis, half, t.ent, cand, queries, cands, dim, lambda)
	}
	b.run("prepared DistanceForward", func() error {
		if t.dev == nil { // freed: not a device error
			cpu()
			return nil
		}
		A, err := b.upload(0, axis)
		if err != nil {
			return err
		}
		H, err := b.upload(1, half)
		if err != nil {
			return err
		}
		D, err := b.scratch(3, len(dist))
		if err != nil {
			return err
		}
		if cand == nil {
			// Every query against every row: from the half-angle tables.
			Q, err := b.scratch(7, queries*dim*QueryTableWidth)
			if err != nil {
				return err
			}
			if err := b.dev.QueryHalfAngles(Q, A, H); err != nil {
				return err
			}
			if err := b.dev.DistanceAll(D, Q, t.half, queries, cands, dim, lambda); err != nil {
				return err
			}
			return D.Download(dist)
		}
		C, err := b.uploadIdx(cand)
		if err != nil {
			return err
		}
		if err := b.dev.DistanceForward(D, A, H, t.dev, C, queries, cands, dim, lambda); err != nil {
			return err
		}
		return D.Download(dist)
	}, cpu)
}

func (t *preparedTable) DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half []float32, cand []int32, queries, cands int, lambda float32) {
	dim := t.dim
	dDist = need("distance", "dDist", dDist, queries*cands)
	axis, half = need("distance", "axis", axis, queries*dim), need("distance", "half", half, queries*dim)
	t.check(cand, queries, cands)
	if dAxis != nil {
		dAxis = need("distance", "dAxis", dAxis, queries*dim)
	}
	if dHalf != nil {
		dHalf = need("distance", "dHalf", dHalf, queries*dim)
	}
	var dEntUsed []float32
	if dEnt != nil {
		dEntUsed = need("distance", "dEnt", dEnt, t.rows*dim)[:entRows(t.ent, cand, cands, dim)*dim]
	}
	b := t.b
	cpu := func() {
		compute.Reference[float32]{}.DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, t.ent, cand, queries, cands, dim, lambda)
	}
	b.run("prepared DistanceBackward", func() error {
		if t.dev == nil { // freed: not a device error
			cpu()
			return nil
		}
		DD, err := b.upload(0, dDist)
		if err != nil {
			return err
		}
		A, err := b.upload(1, axis)
		if err != nil {
			return err
		}
		H, err := b.upload(2, half)
		if err != nil {
			return err
		}
		return b.distanceBackward(dAxis, dHalf, dEntUsed, DD, A, H, t.dev, cand, queries, cands, dim, lambda)
	}, cpu)
}

// distanceBackward runs the distance backward on the device, given the uploaded upstream
// gradient, query cones and entity table, and adds the gradients into the host outputs
// (a nil output is skipped; dEnt holds the entity rows the candidates use).
func (b *Backend) distanceBackward(dAxis, dHalf, dEnt []float32, DD, A, H, E *F32, cand []int32, queries, cands, dim int, lambda float32) error {
	C, err := b.uploadIdx(cand)
	if err != nil {
		return err
	}
	DA, err := b.zeroed(4, len(dAxis), dAxis != nil)
	if err != nil {
		return err
	}
	DH, err := b.zeroed(5, len(dHalf), dHalf != nil)
	if err != nil {
		return err
	}
	DE, err := b.zeroed(6, len(dEnt), dEnt != nil)
	if err != nil {
		return err
	}
	var ix *DeviceRowIndex
	if b.Deterministic && cand != nil && dEnt != nil {
		if ix, err = NewDeviceRowIndex(b.dev, RowCSR(cand, E.Len()/dim, nil)); err != nil {
			return err
		}
		defer ix.Free()
	}
	if err := b.dev.DistanceBackward(DA, DH, DE, DD, A, H, E, C, ix, queries, cands, dim, lambda); err != nil {
		return err
	}
	return b.addOut(outPair{dAxis, DA}, outPair{dHalf, DH}, outPair{dEnt, DE})
}
