package gpu

// NegateForward writes the complement of each cone of in to out (docs/model.md §5).
func (d *Device) NegateForward(out, in Cones) error {
	n := in.size()
	c := check{op: "NegateForward"}
	c.f("out.Axis", out.Axis, n)
	c.f("out.Half", out.Half, n)
	c.f("in.Axis", in.Axis, n)
	c.f("in.Half", in.Half, n)
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
	c.f("dOut.Axis", dOut.Axis, n)
	c.f("dOut.Half", dOut.Half, n)
	c.opt("dIn.Axis", dIn.Axis, n)
	c.opt("dIn.Half", dIn.Half, n)
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
