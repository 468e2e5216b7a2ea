package gpu

// Rotation selects RoConE's aperture rule (docs/model.md §3.2).
type Rotation int

const (
	RotateFold  Rotation = 0 // rocone: h' = |wrap(h + φ)|
	RotateTrunc Rotation = 1 // rocone-trunc: h' = clamp(h + φ, 0, π)
	RotateSE    Rotation = 2 // rocone-se: h' = π·σ(logit(clip(h/π)) + s)
)

// RotateForward applies the rotation projection to in, with per-row (gathered and mapped)
// relation angles relAxis, relAperture (not RotateSE) and raw shifts relShift (RotateSE
// only), all [N][d], writing out.
func (d *Device) RotateForward(v Rotation, out, in Cones, relAxis, relAperture, relShift *F32) error {
	n := in.size()
	c := check{op: "RotateForward"}
	c.f("out.Axis", out.Axis, n)
	c.f("out.Half", out.Half, n)
	c.f("in.Axis", in.Axis, n)
	c.f("in.Half", in.Half, n)
	c.f("relAxis", relAxis, n)
	if v == RotateSE {
		c.f("relShift", relShift, n)
	} else {
		c.f("relAperture", relAperture, n)
	}
	if c.err != nil {
		return c.err
	}
	// Reads the cones and two relation tensors, writes out; the axis's add and wrap (4),
	// the aperture's rule (5; rocone-se: a logit and a sigmoid, 12).
	w := Work{Bytes: words(6 * n), FLOPs: flops(n, 9)}
	if v == RotateSE {
		w.FLOPs = flops(n, 16)
	}
	return d.each("rotate_fwd", n, w, i32(int(v)), ptr(out.Axis), ptr(out.Half), ptr(in.Axis), ptr(in.Half),
		ptr(relAxis), ptr(relAperture), ptr(relShift), i32(n))
}

// RotateBackward adds the gradients of RotateForward given dOut into dIn, dRelAxis,
// dRelAperture and dRelShift (each may be nil / zero). out is RotateForward's output.
func (d *Device) RotateBackward(v Rotation, dIn Cones, dRelAxis, dRelAperture, dRelShift *F32, dOut, in, out Cones, relAperture *F32) error {
	n := dOut.size()
	c := check{op: "RotateBackward"}
	c.f("dOut.Axis", dOut.Axis, n)
	c.f("dOut.Half", dOut.Half, n)
	c.opt("dIn.Axis", dIn.Axis, n)
	c.opt("dIn.Half", dIn.Half, n)
	c.opt("dRelAxis", dRelAxis, n)
	c.opt("dRelAperture", dRelAperture, n)
	c.opt("dRelShift", dRelShift, n)
	c.f("in.Half", in.Half, n)
	if v == RotateSE {
		c.f("out.Half", out.Half, n)
	} else {
		c.f("relAperture", relAperture, n)
	}
	if c.err != nil {
		return c.err
	}
	// Reads dOut, in.Half and relAperture (rocone-se: out.Half), reads and writes each
	// gradient given (an add each); the aperture's rule: 4 FLOPs (rocone-se: 10).
	w := Work{Bytes: words(4 * n), FLOPs: flops(n, 4)}
	if v == RotateSE {
		w.FLOPs = flops(n, 10)
	}
	for _, g := range []*F32{dIn.Axis, dIn.Half, dRelAxis, dRelAperture, dRelShift} {
		if g != nil {
			w.Bytes += words(2 * n)
			w.FLOPs += flops(n, 1)
		}
	}
	return d.each("rotate_bwd", n, w, i32(int(v)), ptr(dIn.Axis), ptr(dIn.Half), ptr(dRelAxis), ptr(dRelAperture), ptr(dRelShift),
		ptr(dOut.Axis), ptr(dOut.Half), ptr(in.Half), ptr(out.Half), ptr(relAperture), i32(n))
}
