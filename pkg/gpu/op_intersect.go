package gpu

import (
	"fmt"
)

// Branches is the layout of a ragged intersection batch (kernels/intersect.cu): N output
// cones whose branch counts may differ, so that the intersections of several queries, 2-
// and 3-branch alike, go through one operator call. The outputs are sorted by
// non-increasing branch count; Counts[j] (j < J, J the largest branch count) is the
// number of outputs with more than j branches, so Counts[0] = N and Counts is
// non-increasing; branch j of output r (r < Counts[j]) is input row Base(j) + r, Base(j)
// = Counts[0] + … + Counts[j−1], and there are Rows() = Σ Counts input rows. Counts = [n,
// n, …, n] (nb times) is the uniform layout of IntersectForward.
//
// Dev is the device copy of Counts (int32, at least J elements), which the kernels read.
// It is the caller's: typically a view into an upload the caller makes anyway, so that
// the operator itself uploads nothing (an upload is a synchronous copy). It may be nil
// only for a uniform layout (UniformBranches), which the kernels compute without it. Dev
// must hold the counts until IntersectBackward has run.
type Branches struct {
	Counts []int
	Dev    *I32
}

// UniformBranches is the layout of nb branches of n outputs each (no device copy needed).
func UniformBranches(nb, n int) Branches {
	c := make([]int, nb)
	for j := range c {
		c[j] = n
	}
	return Branches{Counts: c}
}

// NewBranches uploads counts into a new device buffer: for tests and callers without an
// upload of their own to put the counts in. Free the result's Dev after use (Free).
func NewBranches(d *Device, counts []int) (Branches, error) {
	b := Branches{Counts: append([]int(nil), counts...)}
	if _, err := b.validateCounts(); err != nil {
		return Branches{}, err
	}
	host := make([]int32, len(counts))
	for j, c := range counts {
		host[j] = int32(c)
	}
	dev, err := FromHost(d, host)
	if err != nil {
		return Branches{}, err
	}
	b.Dev = dev
	return b, nil
}

// Free releases Dev (a no-op for a nil Dev or a view).
func (b Branches) Free() error { return b.Dev.Free() }

// N is the number of outputs, Counts[0].
func (b Branches) N() int {
	if len(b.Counts) == 0 {
		return 0
	}
	return b.Counts[0]
}

// Rows is the number of input rows, Σ Counts.
func (b Branches) Rows() int {
	s := 0
	for _, c := range b.Counts {
		s += c
	}
	return s
}

// Base is the first input row of branch j: Counts[0] + … + Counts[j−1].
func (b Branches) Base(j int) int {
	s := 0
	for _, c := range b.Counts[:j] {
		s += c
	}
	return s
}

// validateCounts checks that Counts is a layout: at least one branch, non-increasing,
// non-negative, summing to less than 2^31; and says whether it is uniform.
func (b Branches) validateCounts() (uniform bool, err error) {
	if len(b.Counts) == 0 {
		return false, fmt.Errorf("cuda: Branches: no branches")
	}
	uniform, sum := true, 0
	for j, c := range b.Counts {
		if c < 0 || (j > 0 && c > b.Counts[j-1]) {
			return false, fmt.Errorf("cuda: Branches: counts %v are not non-increasing and non-negative", b.Counts)
		}
		uniform = uniform && c == b.Counts[0]
		sum += c
	}
	if sum > 1<<31-1 {
		return false, fmt.Errorf("cuda: Branches: %d input rows", sum)
	}
	return uniform, nil
}

// validate checks the counts (validateCounts) and that Dev can hold them, or that Dev is
// nil and the layout uniform.
func (b Branches) validate() error {
	uniform, err := b.validateCounts()
	if err != nil {
		return err
	}
	if b.Dev == nil && !uniform {
		return fmt.Errorf("cuda: Branches: counts %v are ragged and have no device copy", b.Counts)
	}
	if b.Dev != nil && b.Dev.Len() < len(b.Counts) {
		return fmt.Errorf("cuda: Branches: the device copy has %d elements for %d counts", b.Dev.Len(), len(b.Counts))
	}
	return nil
}

// IntersectForwardRagged intersects the ragged batch in (br.Rows() cones, laid out as br
// says) into out (br.N() cones): output r is model.IntersectForward of its own branches.
// mask [br.Rows()][d] is the dropout on the input apertures (0 or 1/(1−p)), or nil. The
// four linear layers run once over all input rows (the gate's once over the outputs):
// 10 launches, whatever the mix of branch counts, or 9 when the weights are stacked
// (IntersectWeights). br.Dev's contents are not checked against br.Counts (they are the
// caller's upload).
func (d *Device) IntersectForwardRagged(w IntersectWeights, out, in Cones, br Branches, mask *F32) (st *IntersectState, err error) {
	if err := br.validate(); err != nil {
		return nil, fmt.Errorf("IntersectForwardRagged: %w", err)
	}
	n, rows, dim := br.N(), br.Rows(), out.Dim
	if out.N != n || in.N != rows || in.Dim != dim {
		return nil, fmt.Errorf("cuda: IntersectForwardRagged: %d input and %d output cones for branch counts %v",
			in.N, out.N, br.Counts)
	}
	nd := n * dim
	c := check{op: "IntersectForwardRagged"}
	c.cones("in", in, rows*dim)
	c.cones("out", out, nd)
	c.opt("mask", mask, rows*dim)
	if c.err != nil {
		return nil, c.err
	}
	br.Counts = append([]int(nil), br.Counts...)
	st = &IntersectState{br: br, n: n, rows: rows, d: dim, mask: mask}
	defer func() {
		if err != nil {
			st.Free()
			st = nil
		}
	}()
	bufs := []struct {
		p    **F32
		size int
	}{{&st.z, rows * 2 * dim}, {&st.attSet, rows * 2 * dim}, {&st.alpha, rows * dim}, {&st.x, nd}, {&st.y, nd},
		{&st.mean, nd}, {&st.gate, nd}, {&st.hmin, nd}}
	for _, b := range bufs {
		if *b.p, err = scratch[float32](d, b.size); err != nil {
			return nil, err
		}
	}
	if st.argmin, err = scratch[int32](d, nd); err != nil {
		return nil, err
	}
	J, counts := len(br.Counts), ptr(br.Dev)
	att, set := st.att(), st.set()
	steps := []func() error{
		func() error {
			// Reads the cones, writes z; a subtraction and an add each.
			w := Work{Bytes: words(4 * rows * dim), FLOPs: flops(rows*dim, 2)}
			return d.each("intersect_features", rows*dim, w, ptr(st.z), ptr(in.Axis), ptr(in.Half), i32(rows), i32(dim))
		},
		// The first layers of both halves, SemanticAverage's W1 and CardMin's W3, on the
		// same features: one layer of 2d outputs where the weights are stacked.
		func() error {
			z := dense(st.z, 2*dim)
			if w13, b13 := w.stacked(); w13 != nil {
				return d.linearForward("IntersectForward", dense(st.attSet, 2*dim), z, w13, b13, rows, 2*dim, 2*dim, true)
			}
			if err := d.linearForward("IntersectForward", att, z, w.W1, w.B1, rows, 2*dim, dim, true); err != nil {
				return err
			}
			return d.linearForward("IntersectForward", set, z, w.W3, w.B3, rows, 2*dim, dim, true)
		},
		// SemanticAverage.
		func() error {
			return d.linearForward("IntersectForward", dense(st.alpha, dim), att, w.W2, w.B2, rows, dim, dim, false)
		},
		func() error {
			// Reads the logits alpha and the input axes, writes alpha's softmax, x, y and the
			// output axes; per input element the max, exp, sum, normalisation, sincosf and
			// two multiply-adds (10), per output the guard, atanf and quadrant (5).
			w := Work{Bytes: words(3*rows*dim, 3*nd, J), FLOPs: flops(rows*dim, 10) + flops(nd, 5)}
			return d.each("intersect_attention_fwd", nd, w, ptr(out.Axis), ptr(st.alpha), ptr(st.x), ptr(st.y), ptr(in.Axis),
				counts, i32(J), i32(n), i32(dim))
		},
		// CardMin.
		func() error {
			// Reads set, writes the means; an add per input, a division per output.
			w := Work{Bytes: words(rows*dim, nd, J), FLOPs: flops(rows*dim, 1) + flops(nd, 1)}
			return d.each("branch_mean", nd, w, ptr(st.mean), ptr(set.b), i32(set.ld), counts, i32(J), i32(n), i32(dim))
		},
		func() error { return d.LinearForward(st.gate, st.mean, w.W4, w.B4, n, dim, dim) },
		func() error {
			// Reads the gate logits, the input apertures (and mask), writes the gate, hmin,
			// argmin and the output apertures; a sigmoid (4) and a multiply per output, a
			// masking multiply and a comparison per input.
			w := Work{Bytes: words(rows*dim, 5*nd, J), FLOPs: flops(nd, 5) + flops(rows*dim, 2)}
			if mask != nil {
				w.Bytes += words(rows * dim)
			}
			return d.each("cardmin_fwd", nd, w, ptr(out.Half), ptr(st.gate), ptr(st.hmin), ptr(st.argmin), ptr(in.Half), ptr(mask),
				counts, i32(J), i32(n), i32(dim))
		},
	}
	for _, s := range steps {
		if err = s(); err != nil {
			return nil, err
		}
	}
	return st, nil
}

// IntersectWeights are the intersection's four linear layers on the device, shaped as
// model.IntersectionWeights: W1, W3 [d][2d], W2, W4 [d][d], biases [d].
//
// W1 and W3 (attention and DeepSets) read the same features, so where W3 directly follows
// W1 in device memory, and B3 B1, they are one layer of 2d outputs, [W1; W3] [2d][2d]:
// the intersection runs it as one GEMM each way (forward, dX, dW) and one bias sum,
// with twice the tiles of each half, where the halves take two apiece (and dX's
// second adds into the first's). Allocate them so (gpumodel does) for the speed; the
// results are the same either way up to the order of dX's additions.
type IntersectWeights struct {
	W1, B1, W2, B2, W3, B3, W4, B4 *F32
}

// Stacked reports whether W1 and W3, and B1 and B3, are stacked (see IntersectWeights).
func (w IntersectWeights) Stacked() bool {
	w13, _ := w.stacked()
	return w13 != nil
}

// stacked returns [W1; W3] and [B1; B3] as single tensors where each pair lies back to
// back in device memory with halves of one size, else nils.
func (w IntersectWeights) stacked() (w13, b13 *F32) {
	pair := func(a, b *F32) *F32 {
		if a == nil || b == nil || a.Len() == 0 || a.Len() != b.Len() || b.Ptr() != a.Ptr()+uint64(4*a.Len()) {
			return nil
		}
		return &Buffer[float32]{dev: a.dev, ptr: a.ptr, n: 2 * a.n}
	}
	if w13, b13 = pair(w.W1, w.W3), pair(w.B1, w.B3); w13 == nil || b13 == nil {
		return nil, nil
	}
	return w13, b13
}

// IntersectState is what IntersectBackward needs from IntersectForward or
// IntersectForwardRagged; Free it after.
type IntersectState struct {
	br                                       Branches // the layout; br.Dev not owned
	n, rows, d                               int      // outputs, input rows (Σ counts), dimensions
	z, attSet, alpha, x, y, mean, gate, hmin *F32
	argmin                                   *I32
	mask                                     *F32 // not owned
}

// att and set are the first layers' ReLU outputs, the two halves of attSet's rows
// [rows][2d]: attention features in the first d columns, DeepSets elements in the last.
func (s *IntersectState) att() mat { return mat{s.attSet, 2 * s.d} }
func (s *IntersectState) set() mat { return columnsFrom(s.attSet, s.d, 2*s.d) }

// columnsFrom is b [rows][ld] from column off on (nil when b has no element there).
func columnsFrom(b *F32, off, ld int) mat {
	if b.Len() <= off {
		return mat{nil, ld}
	}
	return mat{b.Slice(off, b.Len()-off), ld}
}

// Free releases the state's buffers.
func (s *IntersectState) Free() error {
	if s == nil {
		return nil
	}
	return FreeAll(s.z, s.attSet, s.alpha, s.x, s.y, s.mean, s.gate, s.hmin, s.argmin)
}

// IntersectForward intersects nb batches of n cones (in holds them back to back: branch
// j is rows j·n … (j+1)·n − 1, so in.N = nb·n) into out (n cones), as
// model.IntersectForward. mask [nb·n][d] is the dropout on the input apertures (0 or
// 1/(1−p)), or nil. It is IntersectForwardRagged with UniformBranches(nb, n).
func (d *Device) IntersectForward(w IntersectWeights, out, in Cones, nb int, mask *F32) (*IntersectState, error) {
	if nb < 1 || in.N != nb*out.N || in.Dim != out.Dim {
		return nil, fmt.Errorf("cuda: IntersectForward: %d input cones for %d branches of %d cones", in.N, nb, out.N)
	}
	return d.IntersectForwardRagged(w, out, in, UniformBranches(nb, out.N), mask)
}

// IntersectBackward adds the gradients of IntersectForward or IntersectForwardRagged
// given dOut into dIn (laid out like in) and the weight gradients gw (nil members
// skipped). The layout comes from the state (so a ragged layout's Branches.Dev must still
// hold the counts).
func (d *Device) IntersectBackward(w, gw IntersectWeights, st *IntersectState, dIn, dOut, in Cones) (err error) {
	n, rows, dim := st.n, st.rows, st.d
	nd := n * dim
	c := check{op: "IntersectBackward"}
	c.cones("dOut", dOut, nd)
	c.optCones("dIn", dIn, rows*dim)
	c.f("in.Axis", in.Axis, rows*dim)
	if c.err != nil {
		return c.err
	}
	// dAttSet holds the gradients of the first layers' outputs as attSet holds them.
	var dz, dg, dAttSet, dPre, dMean *F32
	defer func() {
		if e := FreeAll(dz, dg, dAttSet, dPre, dMean); err == nil {
			err = e
		}
	}()
	for _, b := range []struct {
		p    **F32
		size int
	}{{&dz, rows * 2 * dim}, {&dg, rows * dim}, {&dAttSet, rows * 2 * dim}, {&dPre, nd}, {&dMean, nd}} {
		if *b.p, err = scratch[float32](d, b.size); err != nil {
			return err
		}
	}
	J, counts := len(st.br.Counts), ptr(st.br.Dev)
	att, set := st.att(), st.set()
	dAtt, dSet := mat{dAttSet, 2 * dim}, columnsFrom(dAttSet, dim, 2*dim)
	z, dZ := dense(st.z, 2*dim), dense(dz, 2*dim)
	steps := []func() error{
		// SemanticAverage: the arctangent and the softmax, then the second attention layer.
		func() error {
			// Reads x, y, dOut.Axis, alpha and the input axes, writes dg (and reads and writes
			// dIn.Axis); per output 8 FLOPs, per input a sincosf and 13 more.
			w := Work{Bytes: words(3*nd, 3*rows*dim, J), FLOPs: flops(nd, 8) + flops(rows*dim, 14)}
			if dIn.Axis != nil {
				w.Bytes += words(2 * rows * dim)
			}
			return d.each("intersect_attention_bwd", nd, w, ptr(dg), ptr(dIn.Axis), ptr(dOut.Axis), ptr(st.alpha), ptr(st.x),
				ptr(st.y), ptr(in.Axis), counts, i32(J), i32(n), i32(dim))
		},
		func() error {
			return d.linearBackward("IntersectBackward", dAtt, gw.W2, gw.B2, dense(dg, dim), att, w.W2, rows, dim, dim, true)
		},
		// CardMin: the min and the gate, then the DeepSets layers down to the mean.
		func() error {
			// Reads dOut.Half, the gate, hmin and argmin, writes dPre, reads and writes the
			// chosen element of dIn.Half (and reads the mask's); 7 FLOPs each.
			w := Work{Bytes: words(5*nd, J), FLOPs: flops(nd, 7)}
			if dIn.Half != nil {
				w.Bytes += words(2 * nd)
			}
			if st.mask != nil {
				w.Bytes += words(nd)
			}
			return d.each("cardmin_bwd", nd, w, ptr(dIn.Half), ptr(dPre), ptr(dOut.Half), ptr(st.gate), ptr(st.hmin), ptr(st.argmin),
				ptr(st.mask), counts, i32(n), i32(dim))
		},
		func() error { return d.LinearBackward(dMean, gw.W4, gw.B4, dPre, st.mean, w.W4, n, dim, dim) },
		func() error {
			// Reads dMean and set, writes dSet; a division per output, a comparison per input.
			w := Work{Bytes: words(nd, 2*rows*dim, J), FLOPs: flops(nd, 1) + flops(rows*dim, 1)}
			return d.each("branch_mean_bwd", nd, w, ptr(dSet.b), ptr(dMean), ptr(set.b), i32(set.ld), counts, i32(J), i32(n), i32(dim))
		},
		// The first layers: one of 2d outputs where the weights (and the gradients asked
		// for) are stacked, else W1's and W3's each.
		func() error {
			w13, _ := w.stacked()
			gw13, gb13 := gw.stacked()
			if w13 != nil && (gw13 != nil || gw.W1 == nil && gw.W3 == nil && gw.B1 == nil && gw.B3 == nil) {
				return d.linearBackward("IntersectBackward", dZ, gw13, gb13, dense(dAttSet, 2*dim), z, w13, rows, 2*dim, 2*dim, false)
			}
			if err := d.linearBackward("IntersectBackward", dZ, gw.W1, gw.B1, dAtt, z, w.W1, rows, 2*dim, dim, false); err != nil {
				return err
			}
			return d.linearBackward("IntersectBackward", dZ, gw.W3, gw.B3, dSet, z, w.W3, rows, 2*dim, dim, false)
		},
		// The boundary features.
		func() error {
			// Reads dz, reads and writes each of dIn's members given; an add each.
			w := Work{Bytes: words(2 * rows * dim)}
			for _, g := range []*F32{dIn.Axis, dIn.Half} {
				if g != nil {
					w.Bytes += words(2 * rows * dim)
					w.FLOPs += flops(rows*dim, 2)
				}
			}
			return d.each("intersect_features_bwd", rows*dim, w, ptr(dIn.Axis), ptr(dIn.Half), ptr(dz), i32(rows), i32(dim))
		},
	}
	for _, s := range steps {
		if err = s(); err != nil {
			return err
		}
	}
	return nil
}

// DropoutMask fills mask with the inverted-dropout mask of this seed (model.DropoutKeep):
// keep where kept, else 0.
func (d *Device) DropoutMask(mask *F32, seed uint64, threshold uint32, keep float32) error {
	// Writes the mask; the hash is integer arithmetic (no FLOPs).
	return d.each("dropout_mask", mask.Len(), Work{Bytes: words(mask.Len())}, ptr(mask), i32(mask.Len()), u32(uint32(seed)), u32(uint32(seed>>32)),
		u32(threshold), f32(keep))
}

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
	// Reads the layout (counts, segOff, seeds), writes the mask; integer arithmetic.
	w := Work{Bytes: words(len(br.Counts), S+1, 2*S, rows*dim)}
	return d.each("dropout_mask_ragged", rows*dim, w, ptr(mask), ptr(br.Dev), i32(len(br.Counts)), ptr(segOff), i32(S), ptr(seeds),
		i32(rows), i32(dim), u32(threshold), f32(keep))
}
