package gpu

import (
	"math"
	"testing"

	"github.com/rocone/rocone/pkg/compute"
)

// testDistance: dimensions over 32 lanes and 128 threads, query counts not a multiple of
// 4, both candidate modes and all three entity-gradient scatters.
func testDistance(h *harness) {
	ref := compute.Reference[float32]{}
	const queries, cands, dim, rows, lambda = 11, 21, 133, 17, 0.05
	axis, half := h.uniform(queries*dim, -math.Pi, math.Pi), h.uniform(queries*dim, 0, math.Pi)
	ent := h.uniform(rows*dim, -math.Pi, math.Pi)
	cand := make([]int32, queries*cands)
	for i := range cand {
		cand[i] = int32(h.rng.IntN(rows))
	}
	A, H, E := h.up(axis), h.up(half), h.up(ent)
	for _, mode := range []string{"atomic", "csr", "all"} {
		h.t.Run(mode, func(t *testing.T) {
			c, k, C := cand, cands, h.upI(cand)
			if mode == "all" {
				c, k, C = nil, rows, nil
			}
			dist := make([]float32, queries*k)
			ref.DistanceForward(dist, axis, half, ent, c, queries, k, dim, lambda)
			D := h.zeros(len(dist))
			h.ok(h.d.DistanceForward(D, A, H, E, C, queries, k, dim, lambda))
			compare(t, "dist", dist, h.down(D))

			dDist := h.uniform(queries*k, -1, 1)
			dDist[3] = 0 // skipped, as in the reference
			dA, dH, dE := h.uniform(len(axis), -1, 1), h.uniform(len(half), -1, 1), h.uniform(len(ent), -1, 1)
			DA, DH, DE := h.up(dA), h.up(dH), h.up(dE)
			var ix *DeviceRowIndex
			if mode == "csr" {
				ix = h.upIndex(RowCSR(cand, rows, nil))
			}
			ref.DistanceBackward(dA, dH, dE, dDist, axis, half, ent, c, queries, k, dim, lambda)
			h.ok(h.d.DistanceBackward(DA, DH, DE, h.up(dDist), A, H, E, C, ix, queries, k, dim, lambda))
			compare(t, "dAxis", dA, h.down(DA))
			compare(t, "dHalf", dH, h.down(DH))
			compare(t, "dEnt", dE, h.down(DE))

			// Only the entity gradient.
			dE2 := make([]float32, len(ent))
			DE2 := h.zeros(len(ent))
			ref.DistanceBackward(nil, nil, dE2, dDist, axis, half, ent, c, queries, k, dim, lambda)
			h.ok(h.d.DistanceBackward(nil, nil, DE2, h.up(dDist), A, H, E, C, ix, queries, k, dim, lambda))
			compare(t, "dEnt only", dE2, h.down(DE2))
		})
	}
}
