package gpu

// NegateForward writes the complement of each cone of in to out (docs/model.md §5).
func (d *Device) NegateForward(out, in Cones) error {
	n := in.size()
	c := check{op: "NegateForward"}
	c.cones("out", out, n)
	c.cones("in", in, n)
	if c.err != nil {
		return c.err
	}
	// Reads in, writes out; a comparison and an add (axis), a subtraction (aperture).
	return d.each("negate_fwd", n, Work{Bytes: words(4 * n), FLOPs: flops(n, 3)}, ptr(out.Axis), ptr(out.Half), ptr(in.Axis), ptr(in.Half), i32(n))
}

// NegateBackward adds the gradient of NegateForward given dOut into dIn.
func (d *Device) NegateBackward(dIn, dOut Cones) error {
	n := dOut.size()
	c := check{op: "NegateBackward"}
	c.cones("dOut", dOut, n)
	c.optCones("dIn", dIn, n)
	if c.err != nil {
		return c.err
	}
	// Reads dOut, reads and writes each of dIn's members given; an add each.
	w := Work{Bytes: words(2 * n)}
	for _, g := range []*F32{dIn.Axis, dIn.Half} {
		if g != nil {
			w.Bytes += words(2 * n)
			w.FLOPs += flops(n, 1)
		}
	}
	return d.each("negate_bwd", n, w, ptr(dIn.Axis), ptr(dIn.Half), ptr(dOut.Axis), ptr(dOut.Half), i32(n))
}
