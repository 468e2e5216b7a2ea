package gpu

import (
	"math"
	"testing"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/model"
)

// testRotateNaN: NaNs in the input axes and apertures and in the relation's aperture
// angles (or S.E. shifts) come out as NaNs where the CPU's do, forward and backward: the
// clamp of rocone-trunc and the clip of rocone-se keep a NaN (fmin_nan, fmax_nan), where
// fminf and fmaxf made it the bound, a number that training's and ranking's NaN checks
// would not see.
func testRotateNaN(h *harness, proj compute.Projection) {
	const n, d = 7, 19
	nan := float32(math.NaN())
	in := h.cones(n, d)
	relAxis := h.uniform(n*d, -math.Pi, math.Pi)
	rel := h.uniform(n*d, -math.Pi, math.Pi) // the aperture angles, or the S.E. shifts
	for i := 0; i < n*d; i += 5 {
		switch i / 5 % 4 {
		case 0:
			in.Half[i] = nan
		case 1:
			rel[i] = nan
		case 2:
			in.Axis[i] = nan
		default:
			in.Half[i], rel[i] = nan, nan
		}
	}
	relAperture, relShift := rel, []float32(nil)
	if proj == compute.ProjectShift {
		relAperture, relShift = nil, rel
	}
	r := runRotate(h, proj, in, relAxis, relAperture, relShift, h.cones(n, d), h.cones(n, d),
		h.uniform(n*d, -1, 1), h.uniform(n*d, -1, 1), h.uniform(n*d, -1, 1))
	compareNaN(h.t, "axis", r.out.Axis, r.gotOut.Axis)
	if compareNaN(h.t, "half", r.out.Half, r.gotOut.Half) == 0 {
		h.t.Fatal("no NaN aperture: the test's NaNs went nowhere")
	}
	compareNaN(h.t, "dIn.axis", r.dIn.Axis, r.gotDIn.Axis)
	compareNaN(h.t, "dIn.half", r.dIn.Half, r.gotDIn.Half)
	compareNaN(h.t, "dRelAxis", r.dRA, r.gotDRA)
	compareNaN(h.t, "dRelAperture", r.dRP, r.gotDRP)
	compareNaN(h.t, "dRelShift", r.dRS, r.gotDRS)
}

// rotateRun is RotateForward then RotateBackward run on the CPU (the reference) and on the
// device from the same inputs: each result beside the device's, downloaded.
type rotateRun struct {
	out, gotOut, dIn, gotDIn              model.Cones[float32]
	dRA, gotDRA, dRP, gotDRP, dRS, gotDRS []float32
}

// runRotate runs the rotation both ways; dIn, dRA, dRP and dRS are the gradients' initial
// values (the backward adds to them).
func runRotate(h *harness, proj compute.Projection, in model.Cones[float32], relAxis, relAperture, relShift []float32,
	dOut, dIn model.Cones[float32], dRA, dRP, dRS []float32) rotateRun {
	n, d := in.N, in.Dim
	out := model.NewCones[float32](n, d)
	model.RotateForward(proj, out, in, relAxis, relAperture, relShift)
	In, Out := h.upCones(in), h.upCones(model.NewCones[float32](n, d))
	RA, RP, RS := h.up(relAxis), h.up(relAperture), h.up(relShift)
	h.ok(h.d.RotateForward(proj, Out, In, RA, RP, RS))
	r := rotateRun{out: out, gotOut: h.downCones(Out)}

	DIn, DRA, DRP, DRS := h.upCones(dIn), h.up(dRA), h.up(dRP), h.up(dRS)
	model.RotateBackward(proj, dIn, dRA, dRP, dRS, dOut, in, out, relAperture)
	h.ok(h.d.RotateBackward(proj, DIn, DRA, DRP, DRS, h.upCones(dOut), In, Out, RP))
	r.dIn, r.gotDIn = dIn, h.downCones(DIn)
	r.dRA, r.gotDRA, r.dRP, r.gotDRP, r.dRS, r.gotDRS = dRA, h.down(DRA), dRP, h.down(DRP), dRS, h.down(DRS)
	return r
}

// testRotate checks every rotation of compute.Projections (the kernel's rule numbers come
// from the header generated from that table) against the CPU's, then that a rule the
// kernels do not know is refused by the wrappers and answered with NaNs by the kernel.
func testRotate(h *harness) {
	rotations := 0
	for _, info := range compute.Projections {
		if !info.Rotates {
			continue
		}
		rotations++
		proj := info.Projection
		h.t.Run(info.Name, func(t *testing.T) {
			const n, d = 23, 29
			in := h.cones(n, d)
			in.Half[0], in.Half[1], in.Half[2] = 0, math.Pi, 1e-9 // clipped in S.E., fold/clamp edges
			relAxis := h.uniform(n*d, -math.Pi, math.Pi)
			relAperture := h.uniform(n*d, -math.Pi, math.Pi)
			relShift := h.uniform(n*d, -3, 3)
			if proj == compute.ProjectShift {
				relAperture = nil
			} else {
				relShift = nil
			}
			out := model.NewCones[float32](n, d)
			model.RotateForward(proj, out, in, relAxis, relAperture, relShift)
			In, Out := h.upCones(in), h.upCones(model.NewCones[float32](n, d))
			RA, RP, RS := h.up(relAxis), h.up(relAperture), h.up(relShift)
			h.ok(h.d.RotateForward(proj, Out, In, RA, RP, RS))
			got := h.downCones(Out)
			compare(t, "axis", out.Axis, got.Axis)
			compare(t, "half", out.Half, got.Half)

			dOut := h.cones(n, d)
			dIn := h.cones(n, d)
			dRA, dRP, dRS := h.uniform(n*d, -1, 1), h.uniform(n*d, -1, 1), h.uniform(n*d, -1, 1)
			DIn, DRA, DRP, DRS := h.upCones(dIn), h.up(dRA), h.up(dRP), h.up(dRS)
			model.RotateBackward(proj, dIn, dRA, dRP, dRS, dOut, in, out, relAperture)
			h.ok(h.d.RotateBackward(proj, DIn, DRA, DRP, DRS, h.upCones(dOut), In, Out, RP))
			gotIn := h.downCones(DIn)
			compare(t, "dIn.axis", dIn.Axis, gotIn.Axis)
			compare(t, "dIn.half", dIn.Half, gotIn.Half)
			compare(t, "dRelAxis", dRA, h.down(DRA))
			compare(t, "dRelAperture", dRP, h.down(DRP))
			compare(t, "dRelShift", dRS, h.down(DRS))

			t.Run("NaN", func(t *testing.T) { testRotateNaN(&harness{t: t, d: h.d, rng: h.rng}, proj) })
			t.Run("edges", func(t *testing.T) { testRotateEdges(&harness{t: t, d: h.d, rng: h.rng}, proj) })
		})
	}
	if rotations == 0 {
		h.t.Error("compute.Projections has no rotation")
	}
	h.t.Run("unknown", func(t *testing.T) {
		const n = 5
		in, out := h.upCones(h.cones(n, 1)), h.upCones(h.cones(n, 1))
		rel := h.up(h.uniform(n, -1, 1))
		for _, v := range []compute.Projection{compute.ProjectMLP, compute.Projection(200)} {
			if err := h.d.RotateForward(v, out, in, rel, rel, rel); err == nil {
				t.Errorf("RotateForward(%v): no error", v)
			}
			if err := h.d.RotateBackward(v, in, rel, rel, rel, out, in, out, rel); err == nil {
				t.Errorf("RotateBackward(%v): no error", v)
			}
		}
		// The kernel itself, given a rule number projection.h does not define.
		h.ok(h.d.each("rotate_fwd", n, Work{Bytes: words(6 * n)}, i32(200), ptr(out.Axis), ptr(out.Half), ptr(in.Axis), ptr(in.Half),
			ptr(rel), ptr(rel), ptr(rel), i32(n)))
		for i, x := range h.downCones(out).Half {
			if !math.IsNaN(float64(x)) {
				t.Fatalf("rotate_fwd with rule 200: half[%d] = %v, want NaN", i, x)
			}
		}
	})
}

// onQuotient is the float32 h nearest float32(p·π) whose quotient h/π (in float32) is
// exactly p, the S.E. clip's bounds.
func onQuotient(t *testing.T, p float32) float32 {
	t.Helper()
	pi := float32(math.Pi)
	h := float32(float64(p) * math.Pi)
	for _, dir := range []float32{float32(math.Inf(1)), float32(math.Inf(-1))} {
		x := h
		for range 64 {
			if x/pi == p {
				return x
			}
			x = math.Nextafter32(x, dir)
		}
	}
	t.Fatalf("no float32 h with h/π = %v", p)
	return 0
}

// testRotateEdges: apertures on the bounds of the backward's closed intervals pass the
// gradient, as on the CPU: h + φ exactly 0 and π for rocone-trunc's clamp, h/π exactly ε
// and 1−ε for rocone-se's clip (a strict comparison would drop the gradient there).
func testRotateEdges(h *harness, proj compute.Projection) {
	pi := float32(math.Pi)
	half := []float32{0, pi, 1, 2, 0.25, pi / 2, 3, 1e-3}
	rel := []float32{0, 0, -1, pi - 2, 0.5, -0.25, -0.5, 2} // h + φ = 0, π, 0, π exactly, then inside
	var relAperture, relShift []float32
	if proj == compute.ProjectShift {
		half[0], half[1] = onQuotient(h.t, 1e-6), onQuotient(h.t, 1-1e-6) // h/π = ε, 1 − ε exactly
		// Shifts that put σ(z) away from 0 and 1, where 1 − q would have few bits.
		rel[0], rel[1] = 13, -13
		relShift = rel
	} else {
		relAperture = rel
	}
	n, d := 1, len(half)
	in := model.Cones[float32]{Axis: h.uniform(n*d, -math.Pi, math.Pi), Half: half, N: n, Dim: d}
	relAxis := h.uniform(n*d, -math.Pi, math.Pi)
	dOut := model.Cones[float32]{Axis: h.uniform(n*d, -1, 1), Half: h.uniform(n*d, 0.5, 1), N: n, Dim: d}
	r := runRotate(h, proj, in, relAxis, relAperture, relShift, dOut, model.NewCones[float32](n, d),
		make([]float32, n*d), make([]float32, n*d), make([]float32, n*d))
	compare(h.t, "axis", r.out.Axis, r.gotOut.Axis)
	compare(h.t, "half", r.out.Half, r.gotOut.Half)
	compare(h.t, "dIn.half", r.dIn.Half, r.gotDIn.Half)
	compare(h.t, "dRelAperture", r.dRP, r.gotDRP)
	compare(h.t, "dRelShift", r.dRS, r.gotDRS)
}
