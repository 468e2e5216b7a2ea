package cuda

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
