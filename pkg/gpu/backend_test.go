package gpu

import (
	"math"

	"github.com/rocone/rocone/internal/computetest"
	"github.com/rocone/rocone/pkg/compute"
)

// testBackend runs package computetest's conformance check on Backend.
func testBackend(h *harness) {
	b := NewBackend(h.d)
	defer b.Close()
	computetest.CheckBackend(h.t, b)
	if err := b.Err(); err != nil {
		h.t.Fatalf("device error (results came from the CPU fallback): %v", err)
	}
}

func testBackendDeterministic(h *harness) {
	b := NewBackend(h.d)
	b.Deterministic = true
	defer b.Close()
	computetest.CheckBackend(h.t, b)
	if err := b.Err(); err != nil {
		h.t.Fatalf("device error: %v", err)
	}
}

// testPrepared: compute.PrepareEntities on Backend keeps the table on the device.
func testPrepared(h *harness) {
	b := NewBackend(h.d)
	defer b.Close()
	if _, ok := any(b).(compute.EntityPreparer[float32]); !ok {
		h.t.Fatal("Backend does not implement compute.EntityPreparer")
	}
	ref := compute.Reference[float32]{}
	const queries, cands, dim, rows, lambda = 7, 13, 45, 31, 0.02
	ent := h.uniform(rows*dim, -math.Pi, math.Pi)
	tab := compute.PrepareEntities[float32](b, ent, rows, dim)
	if _, ok := tab.(*preparedTable); !ok {
		h.t.Fatalf("PrepareEntities returned %T", tab)
	}
	axis, half := h.uniform(queries*dim, -math.Pi, math.Pi), h.uniform(queries*dim, 0, math.Pi)
	cand := make([]int32, queries*cands)
	for i := range cand {
		cand[i] = int32(h.rng.IntN(rows))
	}
	for _, c := range []struct {
		name string
		cand []int32
		k    int
	}{{"cand", cand, cands}, {"all", nil, rows - 3}} {
		want, got := make([]float32, queries*c.k), make([]float32, queries*c.k)
		ref.DistanceForward(want, axis, half, ent, c.cand, queries, c.k, dim, lambda)
		tab.DistanceForward(got, axis, half, c.cand, queries, c.k, lambda)
		compare(h.t, "prepared dist ("+c.name+")", want, got)
		dDist := h.uniform(queries*c.k, -1, 1)
		dA1, dH1, dE1 := h.uniform(queries*dim, -1, 1), h.uniform(queries*dim, -1, 1), h.uniform(rows*dim, -1, 1)
		dA2, dH2, dE2 := clone(dA1), clone(dH1), clone(dE1)
		ref.DistanceBackward(dA1, dH1, dE1, dDist, axis, half, ent, c.cand, queries, c.k, dim, lambda)
		tab.DistanceBackward(dA2, dH2, dE2, dDist, axis, half, c.cand, queries, c.k, lambda)
		compare(h.t, "prepared dAxis ("+c.name+")", dA1, dA2)
		compare(h.t, "prepared dHalf ("+c.name+")", dH1, dH2)
		compare(h.t, "prepared dEnt ("+c.name+")", dE1, dE2)
	}
	if err := b.Err(); err != nil {
		h.t.Fatal(err)
	}
	// After Free the table computes on the CPU, correctly, and the backend carries on.
	h.ok(tab.(*preparedTable).Free())
	want, got := make([]float32, queries*cands), make([]float32, queries*cands)
	ref.DistanceForward(want, axis, half, ent, cand, queries, cands, dim, lambda)
	tab.DistanceForward(got, axis, half, cand, queries, cands, lambda)
	compare(h.t, "freed table", want, got)
	if err := b.Err(); err != nil {
		h.t.Fatal(err)
	}
}
