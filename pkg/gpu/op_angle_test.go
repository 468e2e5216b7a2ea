package gpu

import (
	"math"

	"github.com/rocone/rocone/pkg/model"
)

// testAngle runs the angle map at a length of odd size (angle_fwd) and a multiple of four
// (angle_fwd4, whose bits must be angle_fwd's), forward and backward.
func testAngle(h *harness) {
	for _, n := range []int{1037, 1036} {
		testAngleN(h, n)
	}
}

func testAngleN(h *harness, n int) {
	const R = 0.0275
	raw := h.uniform(n, -3*R, 3*R)
	theta := make([]float32, n)
	model.AngleForward(theta, raw, float32(R))
	T := h.zeros(n)
	h.ok(h.d.AngleForward(T, h.up(raw), R))
	compare(h.t, "theta", theta, h.down(T))
	h.d.noFloat4 = true
	T1 := h.zeros(n)
	h.ok(h.d.AngleForward(T1, h.up(raw), R))
	h.d.noFloat4 = false
	t4 := h.down(T)
	for i, v := range h.down(T1) {
		if math.Float32bits(v) != math.Float32bits(t4[i]) {
			h.t.Fatalf("n=%d: theta[%d] %g by angle_fwd, %g by angle_fwd4", n, i, v, t4[i])
		}
	}
	dTheta, dRaw := h.uniform(n, -1, 1), h.uniform(n, -1, 1)
	DR := h.up(dRaw)
	model.AngleBackward(dRaw, dTheta, theta, float32(R))
	h.ok(h.d.AngleBackward(DR, h.up(dTheta), T, R))
	compare(h.t, "dRaw", dRaw, h.down(DR))
}
