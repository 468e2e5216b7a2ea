package cuda

import (
	"fmt"
)

// DistanceForward computes dist [queries][cands] for cones axis, half [queries][dim]
// against the entity angles ent, candidate rows cand [queries][cands] (nil: rows 0 …
// cands−1 for every query).
func (d *Device) DistanceForward(dist, axis, half, ent *F32, cand *I32, queries, cands, dim int, lambda float32) error {
	c := check{op: "DistanceForward"}
	c.nonneg(queries, cands, dim)
	c.f("dist", dist, queries*cands)
	c.f("axis", axis, queries*dim)
	c.f("half", half, queries*dim)
	if cand != nil {
		c.i("cand", cand, queries*cands)
		c.f("ent", ent, dim)
	} else {
		c.f("ent", ent, cands*dim)
	}
	if c.err != nil || queries == 0 || cands == 0 {
		return c.err
	}
	grid := [3]int{ceilDiv(cands, distCands), min(ceilDiv(queries, distQB), d.gridY), 1}
	return d.launch("distance_fwd", grid, [3]int{distThreads, 1, 1},
		ptr(dist), ptr(axis), ptr(half), ptr(ent), ptr(cand), i32(queries), i32(cands), i32(dim), f32(lambda))
}

// DistanceBackward accumulates the gradients of DistanceForward given dDist into dAxis,
// dHalf [queries][dim] and dEnt (rows of ent), any of which may be nil. With cand nil the
// entity gradient is a deterministic per-row sum; with cand and index (RowCSR of cand) it is the deterministic CSR gather; with cand and a nil index it is
// scattered with atomicAdd (faster, summation order not reproducible).
func (d *Device) DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, ent *F32, cand *I32, index *DeviceRowIndex,
	queries, cands, dim int, lambda float32) error {
	c := check{op: "DistanceBackward"}
	c.nonneg(queries, cands, dim)
	c.f("dDist", dDist, queries*cands)
	c.f("axis", axis, queries*dim)
	c.f("half", half, queries*dim)
	c.opt("dAxis", dAxis, queries*dim)
	c.opt("dHalf", dHalf, queries*dim)
	if cand != nil {
		c.i("cand", cand, queries*cands)
	} else {
		c.f("ent", ent, cands*dim)
		c.opt("dEnt", dEnt, cands*dim)
	}
	if c.err != nil || queries == 0 || cands == 0 || dim == 0 {
		return c.err
	}
	block := [3]int{distBwdThreads, 1, 1}
	gx := ceilDiv(dim, distBwdThreads)
	atomic := dEnt != nil && cand != nil && index == nil
	if dAxis != nil || dHalf != nil || atomic {
		if err := d.launch("distance_bwd_q", [3]int{gx, min(queries, d.gridY), 1}, block,
			ptr(dAxis), ptr(dHalf), ptr(dEnt), ptr(dDist), ptr(axis), ptr(half), ptr(ent), ptr(cand),
			i32(queries), i32(cands), i32(dim), f32(lambda), boolArg(atomic)); err != nil {
			return err
		}
	}
	switch {
	case dEnt == nil || atomic:
		return nil
	case cand == nil:
		return d.launch("distance_bwd_ent_all", [3]int{gx, min(cands, d.gridY), 1}, block,
			ptr(dEnt), ptr(dDist), ptr(axis), ptr(half), ptr(ent), i32(queries), i32(cands), i32(dim), f32(lambda))
	default:
		if index.N == 0 {
			return nil
		}
		if index.Pairs.Len() != queries*cands {
			return fmt.Errorf("cuda: DistanceBackward: the index has %d pairs, the candidates %d", index.Pairs.Len(), queries*cands)
		}
		return d.launch("distance_bwd_ent_csr", [3]int{gx, min(index.N, d.gridY), 1}, block,
			ptr(dEnt), ptr(dDist), ptr(axis), ptr(half), ptr(ent), ptr(index.Rows), ptr(index.Start), ptr(index.Pairs),
			i32(index.N), i32(cands), i32(dim), f32(lambda))
	}
}
