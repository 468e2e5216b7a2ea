package gpu

import (
	"github.com/rocone/rocone/pkg/model"
)

func testAngle(h *harness) {
	const n, R = 1037, 0.0275
	raw := h.uniform(n, -3*R, 3*R)
	theta := make([]float32, n)
	model.AngleForward(theta, raw, float32(R))
	T := h.zeros(n)
	h.ok(h.d.AngleForward(T, h.up(raw), R))
	compare(h.t, "theta", theta, h.down(T))
	dTheta, dRaw := h.uniform(n, -1, 1), h.uniform(n, -1, 1)
	DR := h.up(dRaw)
	model.AngleBackward(dRaw, dTheta, theta, float32(R))
	h.ok(h.d.AngleBackward(DR, h.up(dTheta), T, R))
	compare(h.t, "dRaw", dRaw, h.down(DR))
}
