package cuda

import (
	"fmt"

	"github.com/rocone/rocone/pkg/compute/cuda/kernels"
)

// The operations a device-resident training step needs beyond the model's operators:
// deterministic row sums for gathered rows, the element-wise ends of ConE's projection
// MLP, a scratch arena, and the Adam state's transfer for checkpoints.

// ---------------------------------------------------------------------------------------
// Row index: the occurrences of each id in a list of gathered rows.

// RowIndex is a CSR grouping of the positions of an id list by id, built on the host
// (RowCSR): the distinct ids in order of first appearance, and for the u-th one its
// positions Pairs[Start[u]:Start[u+1]] in increasing order. It makes the sum over
// repeated rows deterministic (RowsSum), unlike an atomic scatter: each row's sum has a
// fixed order, and rows are independent of each other.
type RowIndex struct {
	Rows, Start, Pairs []int32
}

// RowCSR groups the positions of ids by id, for ids in [0, tableRows). count is scratch
// of at least tableRows zeros, returned zeroed (pass nil to allocate).
func RowCSR(ids []int32, tableRows int, count []int32) RowIndex {
	if len(count) < tableRows {
		count = make([]int32, tableRows)
	}
	var ix RowIndex
	for _, id := range ids {
		if count[id] == 0 {
			ix.Rows = append(ix.Rows, id)
		}
		count[id]++
	}
	ix.Start = make([]int32, len(ix.Rows)+1)
	for u, r := range ix.Rows {
		ix.Start[u+1] = ix.Start[u] + count[r]
		count[r] = ix.Start[u] // now the next free slot of row r
	}
	ix.Pairs = make([]int32, len(ids))
	for p, id := range ids {
		ix.Pairs[count[id]] = int32(p)
		count[id]++
	}
	for _, r := range ix.Rows {
		count[r] = 0
	}
	return ix
}

// DeviceRowIndex is a RowIndex on the device.
type DeviceRowIndex struct {
	Rows, Start, Pairs *I32
	N                  int // distinct rows
}

// RowsSum adds, for every distinct row u of ix, the sum of src's rows at its positions
// into dst's row ix.Rows[u]: dst[Rows[u]] += Σ src[Pairs[i]], rows of width dim, summed
// in increasing position (deterministic).
func (d *Device) RowsSum(dst, src *F32, ix DeviceRowIndex, dim int) error {
	c := check{op: "RowsSum"}
	c.f("src", src, ix.Pairs.Len()*dim)
	c.i("start", ix.Start, ix.N+1)
	c.i("rows", ix.Rows, ix.N)
	if c.err != nil || ix.N == 0 || dim == 0 {
		return c.err
	}
	if dst == nil {
		return fmt.Errorf("cuda: RowsSum: dst is nil")
	}
	return d.launch("rows_sum_csr", [3]int{ceilDiv(dim, rowsThreads), min(ix.N, d.gridY), 1}, [3]int{rowsThreads, 1, 1},
		ptr(dst), ptr(src), ptr(ix.Rows), ptr(ix.Start), ptr(ix.Pairs), i32(ix.N), i32(dim))
}

const rowsThreads = 128 // rows.cu ROWS_THREADS

// ---------------------------------------------------------------------------------------
// ConE's projection MLP, the element-wise ends (model.md §2).

// MLPInput writes the MLP input rows x = [a + θax ; h + θap] [n][2d] (mlp_input_fwd).
func (d *Device) MLPInput(x *F32, in Cones, relAxis, relAperture *F32) error {
	n := in.size()
	c := check{op: "MLPInput"}
	c.f("x", x, 2*n)
	c.f("in.Axis", in.Axis, n)
	c.f("in.Half", in.Half, n)
	c.f("relAxis", relAxis, n)
	c.f("relAperture", relAperture, n)
	if c.err != nil {
		return c.err
	}
	return d.each("mlp_input_fwd", n, ptr(x), ptr(in.Axis), ptr(in.Half), ptr(relAxis), ptr(relAperture), i32(in.N), i32(in.Dim))
}

// MLPInputBackward adds dx's halves into dIn and the relation angle gradients (nil
// skipped).
func (d *Device) MLPInputBackward(dIn Cones, dRelAxis, dRelAperture, dx *F32, n, dim int) error {
	c := check{op: "MLPInputBackward"}
	c.f("dx", dx, 2*n*dim)
	c.opt("dIn.Axis", dIn.Axis, n*dim)
	c.opt("dIn.Half", dIn.Half, n*dim)
	c.opt("dRelAxis", dRelAxis, n*dim)
	c.opt("dRelAperture", dRelAperture, n*dim)
	if c.err != nil {
		return c.err
	}
	return d.each("mlp_input_bwd", n*dim, ptr(dIn.Axis), ptr(dIn.Half), ptr(dRelAxis), ptr(dRelAperture), ptr(dx), i32(n), i32(dim))
}

// MLPOutput squashes the MLP output y [n][2d] into the cones out (mlp_output_fwd).
func (d *Device) MLPOutput(out Cones, y *F32) error {
	n := out.size()
	c := check{op: "MLPOutput"}
	c.f("y", y, 2*n)
	c.f("out.Axis", out.Axis, n)
	c.f("out.Half", out.Half, n)
	if c.err != nil {
		return c.err
	}
	return d.each("mlp_output_fwd", n, ptr(out.Axis), ptr(out.Half), ptr(y), i32(out.N), i32(out.Dim))
}

// MLPOutputBackward writes dy [n][2d], the gradient through MLPOutput given dOut, from
// its output out.
func (d *Device) MLPOutputBackward(dy *F32, dOut, out Cones) error {
	n := out.size()
	c := check{op: "MLPOutputBackward"}
	c.f("dy", dy, 2*n)
	c.f("dOut.Axis", dOut.Axis, n)
	c.f("dOut.Half", dOut.Half, n)
	c.f("out.Axis", out.Axis, n)
	c.f("out.Half", out.Half, n)
	if c.err != nil {
		return c.err
	}
	return d.each("mlp_output_bwd", n, ptr(dy), ptr(dOut.Axis), ptr(dOut.Half), ptr(out.Axis), ptr(out.Half), i32(out.N), i32(out.Dim))
}

// ---------------------------------------------------------------------------------------
// Scratch arena.

// Arena hands out zeroed views of one device allocation, all released together by
// Reset. A training step takes its temporaries from it: cuMemAlloc and cuMemFree cost
// tens of microseconds each and cuMemFree waits for the device, which would stall the
// host's work-ahead. When the arena runs out, further buffers are allocated separately
// (and freed at the next Reset), and the next Reset grows the arena to the high-water
// mark, so a steady state allocates nothing.
type Arena struct {
	d        *Device
	buf      *Buffer[float64] // 8-byte elements: every view is 8-byte aligned
	used     int              // bytes
	peak     int              // bytes asked for since the last Reset
	overflow []interface{ Free() error }
}

// arenaAlign is the alignment of every view, in bytes (the size of a float4 load and a
// cache sector's half).
const arenaAlign = 256

// NewArena creates an empty arena on d; it grows on use.
func NewArena(d *Device) *Arena { return &Arena{d: d} }

// Reset releases every view (their memory is reused) and the overflow buffers, and grows
// the arena to what the last cycle used.
func (a *Arena) Reset() error {
	err := FreeAll(a.overflow...)
	a.overflow = a.overflow[:0]
	if need := a.peak; need > a.capacity() {
		if e := a.buf.Free(); e != nil && err == nil {
			err = e
		}
		a.buf = nil
		b, e := Alloc[float64](a.d, (need+need/4)/8+1)
		if e != nil {
			return e
		}
		a.buf = b
	}
	a.used, a.peak = 0, 0
	return err
}

func (a *Arena) capacity() int { return a.buf.Len() * 8 }

// Free releases the arena's memory.
func (a *Arena) Free() error {
	err := FreeAll(a.overflow...)
	a.overflow = nil
	if e := a.buf.Free(); e != nil && err == nil {
		err = e
	}
	a.buf = nil
	return err
}

// Take returns a zeroed buffer of n elements of T, valid until the next Reset.
func Take[T Elem](a *Arena, n int) (*Buffer[T], error) {
	bytes := n * sizeOf[T]()
	size := (bytes + arenaAlign - 1) / arenaAlign * arenaAlign
	a.peak += size
	if a.used+size > a.capacity() {
		b, err := Alloc[T](a.d, n)
		if err != nil {
			return nil, err
		}
		a.overflow = append(a.overflow, b)
		return b.Slice(0, n), nil // a view: freeing it is a no-op, Reset frees b
	}
	v := &Buffer[T]{dev: a.d, ptr: a.buf.ptr + uint64(a.used), n: n}
	a.used += size
	if bytes > 0 {
		if err := a.d.drv.Zero(v.ptr, bytes); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// scratch is where the operators' temporaries come from: the device's arena if one is
// set (UseArena), otherwise separate allocations (to be freed by the caller; freeing an
// arena view is a no-op).
func scratch[T Elem](d *Device, n int) (*Buffer[T], error) {
	if d.arena != nil {
		return Take[T](d.arena, n)
	}
	return Alloc[T](d, n)
}

// UseArena makes the device's operators take their temporaries from a (nil: allocate
// them separately, the default).
func (d *Device) UseArena(a *Arena) { d.arena = a }

// ---------------------------------------------------------------------------------------
// Adam state transfer.

// Moments downloads the first and second moments of parameter i.
func (a *Adam) Moments(i int, m, v []float32) error {
	if i < 0 || i >= len(a.slots) {
		return fmt.Errorf("cuda: Adam has %d parameters, asked for %d", len(a.slots), i)
	}
	if err := a.slots[i].m.Download(m); err != nil {
		return err
	}
	return a.slots[i].v.Download(v)
}

// SetState sets the step count and uploads the moments of every parameter (m[i], v[i]
// each as long as parameter i): a resumed optimiser.
func (a *Adam) SetState(step int, m, v [][]float32) error {
	if len(m) != len(a.slots) || len(v) != len(a.slots) {
		return fmt.Errorf("cuda: Adam has %d parameters; state for %d and %d given", len(a.slots), len(m), len(v))
	}
	for i, s := range a.slots {
		if len(m[i]) != s.p.Len() || len(v[i]) != s.p.Len() {
			return fmt.Errorf("cuda: Adam parameter %d has %d elements; moments of %d and %d given", i, s.p.Len(), len(m[i]), len(v[i]))
		}
		if err := s.m.Upload(m[i]); err != nil {
			return err
		}
		if err := s.v.Upload(v[i]); err != nil {
			return err
		}
	}
	a.step = step
	return nil
}

// ---------------------------------------------------------------------------------------
// Small element-wise pieces.

// ReLUForward applies x ← max(x, 0) in place.
func (d *Device) ReLUForward(x *F32) error { return d.each("relu_fwd", x.Len(), ptr(x), i32(x.Len())) }

// ReLUBackward zeroes dx where the ReLU's output out is not positive (in place).
func (d *Device) ReLUBackward(dx, out *F32) error {
	c := check{op: "ReLUBackward"}
	c.f("out", out, dx.Len())
	if c.err != nil {
		return c.err
	}
	return d.each("relu_bwd", dx.Len(), ptr(dx), ptr(out), i32(dx.Len()))
}

// Add sets dst += src (same length).
func (d *Device) Add(dst, src *F32) error {
	c := check{op: "Add"}
	c.f("dst", dst, src.Len())
	if c.err != nil {
		return c.err
	}
	return d.each("add_f32", src.Len(), ptr(dst), ptr(src), i32(src.Len()))
}

// SplitScores splits score [n][K] (positive first) into pos [n] and neg [n][K−1].
func (d *Device) SplitScores(pos, neg, score *F32, n, K int) error {
	c := check{op: "SplitScores"}
	c.f("score", score, n*K)
	c.f("pos", pos, n)
	c.f("neg", neg, n*(K-1))
	if c.err != nil {
		return c.err
	}
	return d.each("split_scores", n*K, ptr(pos), ptr(neg), ptr(score), i32(n), i32(K))
}

// SplitScoresBackward writes dScore [n][K] from dPos [n] and dNeg [n][K−1].
func (d *Device) SplitScoresBackward(dScore, dPos, dNeg *F32, n, K int) error {
	c := check{op: "SplitScoresBackward"}
	c.f("dScore", dScore, n*K)
	c.f("dPos", dPos, n)
	c.f("dNeg", dNeg, n*(K-1))
	if c.err != nil {
		return c.err
	}
	return d.each("split_scores_bwd", n*K, ptr(dScore), ptr(dPos), ptr(dNeg), i32(n), i32(K))
}

// DropoutMask fills mask with the inverted-dropout mask of this seed (model.DropoutKeep):
// keep where kept, else 0.
func (d *Device) DropoutMask(mask *F32, seed uint64, threshold uint32, keep float32) error {
	return d.each("dropout_mask", mask.Len(), ptr(mask), i32(mask.Len()), u32(uint32(seed)), u32(uint32(seed>>32)),
		u32(threshold), f32(keep))
}

// u32 passes an unsigned 32-bit value (a PTX .u32 parameter, packed like an int).
func u32(x uint32) arg { return arg{v: uint64(x), kind: kernels.ParamI32} }

// DropoutMaskRagged writes, in one launch, the dropout masks of the S intersection steps
// batched into one ragged intersection with layout br (IntersectForwardRagged), as one
// mask [br.Rows()][dim] over its input rows. Step s owns the outputs segOff[s] … segOff[s+1]
// − 1 (segOff [S+1] on the device, from 0 to br.N(), non-decreasing; all of a step's
// outputs have the same branch count) and draws with its own seed, seeds[2s] (low 32 bits)
// and seeds[2s+1] (high): its mask is the one model.DropoutKeep gives the step on the CPU,
// [nb_s][n_s][dim] with element (j, r', k) kept iff DropoutKeep(seed_s, (j·n_s + r')·dim + k,
// threshold), placed at input row br.Base(j) + segOff[s] + r'. Kept elements get keep,
// the others 0. br.Dev must be set (a uniform layout too); segOff and seeds are the
// caller's device buffers (their contents are not checked).
func (d *Device) DropoutMaskRagged(mask *F32, br Branches, segOff, seeds *I32, dim int, threshold uint32, keep float32) error {
	if err := br.validate(); err != nil {
		return fmt.Errorf("DropoutMaskRagged: %w", err)
	}
	S := segOff.Len() - 1
	rows := br.Rows()
	c := check{op: "DropoutMaskRagged"}
	c.nonneg(dim, S)
	c.f("mask", mask, rows*dim)
	c.i("seeds", seeds, 2*S)
	if c.err == nil && br.Dev == nil {
		c.err = fmt.Errorf("cuda: DropoutMaskRagged: the branch counts have no device copy")
	}
	if c.err == nil && S < 1 && rows > 0 {
		c.err = fmt.Errorf("cuda: DropoutMaskRagged: no segments for %d rows", rows)
	}
	if c.err != nil {
		return c.err
	}
	return d.each("dropout_mask_ragged", rows*dim, ptr(mask), ptr(br.Dev), i32(len(br.Counts)), ptr(segOff), i32(S), ptr(seeds),
		i32(rows), i32(dim), u32(threshold), f32(keep))
}
