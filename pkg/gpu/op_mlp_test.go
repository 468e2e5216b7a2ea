package gpu

import (
	"math"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/model"
)

// testMLP: ConE's projection on the device, its two ends (MLPInput, MLPOutput) around the
// three linear layers and ReLUs, forward and backward, against model.ConeProjectForward
// and ConeProjectBackward.
func testMLP(h *harness) {
	const n, d, hid = 11, 9, 24
	lin := func(in, out int) ([]float32, []float32) {
		bw, bb := math.Sqrt(6/float64(in+out)), 1/math.Sqrt(float64(in))
		return h.uniform(out*in, -bw, bw), h.uniform(out, -bb, bb)
	}
	w := &model.ProjectionMLP[float32]{}
	w.W1, w.B1 = lin(2*d, hid)
	w.W2, w.B2 = lin(hid, hid)
	w.W3, w.B3 = lin(hid, 2*d)
	in := h.cones(n, d)
	relAxis, relAperture := h.uniform(n*d, -math.Pi, math.Pi), h.uniform(n*d, -math.Pi, math.Pi)

	ref := compute.Reference[float32]{}
	out := model.NewCones[float32](n, d)
	st := model.ConeProjectForward(ref, w, out, in, relAxis, relAperture)

	W1, B1, W2, B2, W3, B3 := h.up(w.W1), h.up(w.B1), h.up(w.W2), h.up(w.B2), h.up(w.W3), h.up(w.B3)
	In, RA, RP := h.upCones(in), h.up(relAxis), h.up(relAperture)
	X, H1, H2, Y := h.zeros(n*2*d), h.zeros(n*hid), h.zeros(n*hid), h.zeros(n*2*d)
	Out := h.upCones(model.NewCones[float32](n, d))
	h.ok(h.d.MLPInput(X, In, RA, RP))
	h.ok(h.d.LinearForward(H1, X, W1, B1, n, 2*d, hid))
	h.ok(h.d.ReLUForward(H1))
	h.ok(h.d.LinearForward(H2, H1, W2, B2, n, hid, hid))
	h.ok(h.d.ReLUForward(H2))
	h.ok(h.d.LinearForward(Y, H2, W3, B3, n, hid, 2*d))
	h.ok(h.d.MLPOutput(Out, Y))
	got := h.downCones(Out)
	compare(h.t, "axis", out.Axis, got.Axis)
	compare(h.t, "half", out.Half, got.Half)

	dOut := h.cones(n, d)
	dIn, dRA, dRP := model.NewCones[float32](n, d), make([]float32, n*d), make([]float32, n*d)
	gw := &model.ProjectionMLP[float32]{W1: make([]float32, len(w.W1)), B1: make([]float32, hid),
		W2: make([]float32, len(w.W2)), B2: make([]float32, hid), W3: make([]float32, len(w.W3)), B3: make([]float32, 2*d)}
	model.ConeProjectBackward(ref, w, gw, st, dIn, dRA, dRP, dOut, out)

	GW1, GB1, GW2, GB2 := h.zeros(len(w.W1)), h.zeros(hid), h.zeros(len(w.W2)), h.zeros(hid)
	GW3, GB3 := h.zeros(len(w.W3)), h.zeros(2*d)
	DY, DH2, DH1, DX := h.zeros(n*2*d), h.zeros(n*hid), h.zeros(n*hid), h.zeros(n*2*d)
	DIn, DRA, DRP := h.upCones(model.NewCones[float32](n, d)), h.zeros(n*d), h.zeros(n*d)
	h.ok(h.d.MLPOutputBackward(DY, h.upCones(dOut), Out))
	h.ok(h.d.LinearBackward(DH2, GW3, GB3, DY, H2, W3, n, hid, 2*d))
	h.ok(h.d.ReLUBackward(DH2, H2))
	h.ok(h.d.LinearBackward(DH1, GW2, GB2, DH2, H1, W2, n, hid, hid))
	h.ok(h.d.ReLUBackward(DH1, H1))
	h.ok(h.d.LinearBackward(DX, GW1, GB1, DH1, X, W1, n, 2*d, hid))
	h.ok(h.d.MLPInputBackward(DIn, DRA, DRP, DX, n, d))
	gotIn := h.downCones(DIn)
	compare(h.t, "dIn.axis", dIn.Axis, gotIn.Axis)
	compare(h.t, "dIn.half", dIn.Half, gotIn.Half)
	compare(h.t, "dRelAxis", dRA, h.down(DRA))
	compare(h.t, "dRelAperture", dRP, h.down(DRP))
	for _, p := range []struct {
		name string
		want []float32
		got  *F32
	}{{"W1", gw.W1, GW1}, {"B1", gw.B1, GB1}, {"W2", gw.W2, GW2}, {"B2", gw.B2, GB2}, {"W3", gw.W3, GW3}, {"B3", gw.B3, GB3}} {
		compare(h.t, "d"+p.name, p.want, h.down(p.got))
	}
}
