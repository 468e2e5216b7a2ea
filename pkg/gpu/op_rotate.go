package gpu

import (
	"fmt"

	"github.com/rocone/rocone/pkg/compute"
)

// checkRule refuses a projection that is not a rotation (compute.Projections): the
// kernel would answer it with NaNs.
func checkRule(op string, v compute.Projection) error {
	if !v.Rotates() {
		return fmt.Errorf("cuda: %s: %v is not a rotation", op, v)
	}
	return nil
}

// RotateForward applies the rotation projection v to in, with per-row (gathered and
// mapped) relation angles relAxis, relAperture (not ProjectShift) and raw shifts relShift
// (ProjectShift only), all [N][d], writing out.
func (d *Device) RotateForward(v compute.Projection, out, in Cones, relAxis, relAperture, relShift *F32) error {
	if err := checkRule("RotateForward", v); err != nil {
		return err
	}
	n := in.size()
	c := check{op: "RotateForward"}
	c.cones("out", out, n)
	c.cones("in", in, n)
	c.f("relAxis", relAxis, n)
	if v == compute.ProjectShift {
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
	if v == compute.ProjectShift {
		w.FLOPs = flops(n, 16)
	}
	return d.each("rotate_fwd", n, w, i32(int(v)), ptr(out.Axis), ptr(out.Half), ptr(in.Axis), ptr(in.Half),
		ptr(relAxis), ptr(relAperture), ptr(relShift), i32(n))
}

// RotateBackward adds the gradients of RotateForward given dOut into dIn, dRelAxis,
// dRelAperture and dRelShift (each may be nil / zero). out is RotateForward's output.
func (d *Device) RotateBackward(v compute.Projection, dIn Cones, dRelAxis, dRelAperture, dRelShift *F32, dOut, in, out Cones, relAperture *F32) error {
	if err := checkRule("RotateBackward", v); err != nil {
		return err
	}
	n := dOut.size()
	c := check{op: "RotateBackward"}
	c.cones("dOut", dOut, n)
	c.optCones("dIn", dIn, n)
	c.opt("dRelAxis", dRelAxis, n)
	c.opt("dRelAperture", dRelAperture, n)
	c.opt("dRelShift", dRelShift, n)
	c.f("in.Half", in.Half, n)
	if v == compute.ProjectShift {
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
	if v == compute.ProjectShift {
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
