package cuda

import "fmt"

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
// 10 launches, whatever the mix of branch counts. br.Dev's contents are not checked
// against br.Counts (they are the caller's upload).
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
	c.f("in.Axis", in.Axis, rows*dim)
	c.f("in.Half", in.Half, rows*dim)
	c.f("out.Axis", out.Axis, nd)
	c.f("out.Half", out.Half, nd)
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
	}{{&st.z, rows * 2 * dim}, {&st.att, rows * dim}, {&st.alpha, rows * dim}, {&st.x, nd}, {&st.y, nd},
		{&st.set, rows * dim}, {&st.mean, nd}, {&st.gate, nd}, {&st.hmin, nd}}
	for _, b := range bufs {
		if *b.p, err = scratch[float32](d, b.size); err != nil {
			return nil, err
		}
	}
	if st.argmin, err = scratch[int32](d, nd); err != nil {
		return nil, err
	}
	J, counts := len(br.Counts), ptr(br.Dev)
	steps := []func() error{
		func() error {
			return d.each("intersect_features", rows*dim, ptr(st.z), ptr(in.Axis), ptr(in.Half), i32(rows), i32(dim))
		},
		// SemanticAverage.
		func() error { return d.LinearForward(st.att, st.z, w.W1, w.B1, rows, 2*dim, dim) },
		func() error { return d.each("relu_fwd", rows*dim, ptr(st.att), i32(rows*dim)) },
		func() error { return d.LinearForward(st.alpha, st.att, w.W2, w.B2, rows, dim, dim) },
		func() error {
			return d.each("intersect_attention_fwd", nd, ptr(out.Axis), ptr(st.alpha), ptr(st.x), ptr(st.y), ptr(in.Axis),
				counts, i32(J), i32(n), i32(dim))
		},
		// CardMin.
		func() error { return d.LinearForward(st.set, st.z, w.W3, w.B3, rows, 2*dim, dim) },
		func() error { return d.each("relu_fwd", rows*dim, ptr(st.set), i32(rows*dim)) },
		func() error {
			return d.each("branch_mean", nd, ptr(st.mean), ptr(st.set), counts, i32(J), i32(n), i32(dim))
		},
		func() error { return d.LinearForward(st.gate, st.mean, w.W4, w.B4, n, dim, dim) },
		func() error {
			return d.each("cardmin_fwd", nd, ptr(out.Half), ptr(st.gate), ptr(st.hmin), ptr(st.argmin), ptr(in.Half), ptr(mask),
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
