package gpu

// MLPInput writes the MLP input rows x = [a + θax ; h + θap] [n][2d] (mlp_input_fwd).
func (d *Device) MLPInput(x *F32, in Cones, relAxis, relAperture *F32) error {
	n := in.size()
	c := check{op: "MLPInput"}
	c.f("x", x, 2*n)
	c.cones("in", in, n)
	c.f("relAxis", relAxis, n)
	c.f("relAperture", relAperture, n)
	if c.err != nil {
		return c.err
	}
	// Reads the cones and the relation angles, writes x; an add each.
	return d.each("mlp_input_fwd", n, Work{Bytes: words(4*n, 2*n), FLOPs: flops(n, 2)}, ptr(x), ptr(in.Axis), ptr(in.Half), ptr(relAxis), ptr(relAperture), i32(in.N), i32(in.Dim))
}

// MLPInputBackward adds dx's halves into dIn and the relation angle gradients (nil
// skipped).
func (d *Device) MLPInputBackward(dIn Cones, dRelAxis, dRelAperture, dx *F32, n, dim int) error {
	c := check{op: "MLPInputBackward"}
	c.f("dx", dx, 2*n*dim)
	c.optCones("dIn", dIn, n*dim)
	c.opt("dRelAxis", dRelAxis, n*dim)
	c.opt("dRelAperture", dRelAperture, n*dim)
	if c.err != nil {
		return c.err
	}
	// Reads dx, reads and writes each gradient given; an add each.
	w := Work{Bytes: words(2 * n * dim)}
	for _, g := range []*F32{dIn.Axis, dIn.Half, dRelAxis, dRelAperture} {
		if g != nil {
			w.Bytes += words(2 * n * dim)
			w.FLOPs += flops(n*dim, 1)
		}
	}
	return d.each("mlp_input_bwd", n*dim, w, ptr(dIn.Axis), ptr(dIn.Half), ptr(dRelAxis), ptr(dRelAperture), ptr(dx), i32(n), i32(dim))
}

// MLPOutput squashes the MLP output y [n][2d] into the cones out (mlp_output_fwd).
func (d *Device) MLPOutput(out Cones, y *F32) error {
	n := out.size()
	c := check{op: "MLPOutput"}
	c.f("y", y, 2*n)
	c.cones("out", out, n)
	if c.err != nil {
		return c.err
	}
	// Reads y, writes the cones; a tanhf and 2 (axis) or 4 (aperture) more each.
	return d.each("mlp_output_fwd", n, Work{Bytes: words(4 * n), FLOPs: flops(n, 3+5)}, ptr(out.Axis), ptr(out.Half), ptr(y), i32(out.N), i32(out.Dim))
}

// MLPOutputBackward writes dy [n][2d], the gradient through MLPOutput given dOut, from
// its output out.
func (d *Device) MLPOutputBackward(dy *F32, dOut, out Cones) error {
	n := out.size()
	c := check{op: "MLPOutputBackward"}
	c.f("dy", dy, 2*n)
	c.cones("dOut", dOut, n)
	c.cones("out", out, n)
	if c.err != nil {
		return c.err
	}
	// Reads dOut and out, writes dy; 5 (axis) and 7 (aperture) FLOPs each.
	return d.each("mlp_output_bwd", n, Work{Bytes: words(6 * n), FLOPs: flops(n, 12)}, ptr(dy), ptr(dOut.Axis), ptr(dOut.Half), ptr(out.Axis), ptr(out.Half), i32(out.N), i32(out.Dim))
}
