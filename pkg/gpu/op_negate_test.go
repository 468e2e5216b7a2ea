package gpu

import (
	"github.com/rocone/rocone/pkg/model"
)

func testNegate(h *harness) {
	const n, d = 7, 33
	in := h.cones(n, d)
	in.Axis[0] = 0
	out := model.NewCones[float32](n, d)
	model.NegateForward(out, in)
	Out := h.upCones(model.NewCones[float32](n, d))
	h.ok(h.d.NegateForward(Out, h.upCones(in)))
	got := h.downCones(Out)
	compare(h.t, "axis", out.Axis, got.Axis)
	compare(h.t, "half", out.Half, got.Half)
	dOut, dIn := h.cones(n, d), h.cones(n, d)
	DIn := h.upCones(dIn)
	model.NegateBackward(dIn, dOut)
	h.ok(h.d.NegateBackward(DIn, h.upCones(dOut)))
	gotIn := h.downCones(DIn)
	compare(h.t, "dIn.axis", dIn.Axis, gotIn.Axis)
	compare(h.t, "dIn.half", dIn.Half, gotIn.Half)
}
