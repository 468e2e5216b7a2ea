package gpu

import (
	"math"
	"testing"

	"github.com/rocone/rocone/pkg/model"
)

func testRotate(h *harness) {
	for _, c := range []struct {
		v   model.Variant
		rot Rotation
	}{{model.RoConE, RotateFold}, {model.RoConETrunc, RotateTrunc}, {model.RoConESE, RotateSE}} {
		h.t.Run(string(c.v), func(t *testing.T) {
			const n, d = 23, 29
			in := h.cones(n, d)
			in.Half[0], in.Half[1], in.Half[2] = 0, math.Pi, 1e-9 // clipped in S.E., fold/clamp edges
			relAxis := h.uniform(n*d, -math.Pi, math.Pi)
			relAperture := h.uniform(n*d, -math.Pi, math.Pi)
			relShift := h.uniform(n*d, -3, 3)
			if c.v == model.RoConESE {
				relAperture = nil
			} else {
				relShift = nil
			}
			out := model.NewCones[float32](n, d)
			proj, err := c.v.Projection()
			h.ok(err)
			model.RotateForward(proj, out, in, relAxis, relAperture, relShift)
			In, Out := h.upCones(in), h.upCones(model.NewCones[float32](n, d))
			RA, RP, RS := h.up(relAxis), h.up(relAperture), h.up(relShift)
			h.ok(h.d.RotateForward(c.rot, Out, In, RA, RP, RS))
			got := h.downCones(Out)
			compare(t, "axis", out.Axis, got.Axis)
			compare(t, "half", out.Half, got.Half)

			dOut := h.cones(n, d)
			dIn := h.cones(n, d)
			dRA, dRP, dRS := h.uniform(n*d, -1, 1), h.uniform(n*d, -1, 1), h.uniform(n*d, -1, 1)
			DIn, DRA, DRP, DRS := h.upCones(dIn), h.up(dRA), h.up(dRP), h.up(dRS)
			model.RotateBackward(proj, dIn, dRA, dRP, dRS, dOut, in, out, relAperture)
			h.ok(h.d.RotateBackward(c.rot, DIn, DRA, DRP, DRS, h.upCones(dOut), In, Out, RP))
			gotIn := h.downCones(DIn)
			compare(t, "dIn.axis", dIn.Axis, gotIn.Axis)
			compare(t, "dIn.half", dIn.Half, gotIn.Half)
			compare(t, "dRelAxis", dRA, h.down(DRA))
			compare(t, "dRelAperture", dRP, h.down(DRP))
			compare(t, "dRelShift", dRS, h.down(DRS))
		})
	}
}
