package gpu

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
	// Reads the cones, the candidates' entity rows (gathered through cand, or the first
	// cands rows) and cand itself; writes dist. dim_distance per (query, candidate, dim).
	w := Work{Bytes: words(2*queries*dim, queries*cands), FLOPs: flops(queries*cands*dim, distFwdFlops)}
	if cand != nil {
		w.Bytes += words(queries*cands, gathered(queries*cands, tableRows(ent, dim))*dim)
	} else {
		w.Bytes += words(cands * dim)
	}
	grid := [3]int{ceilDiv(cands, distCands), min(ceilDiv(queries, distQB), d.gridY), 1}
	return d.launch("distance_fwd", w, grid, [3]int{distThreads, 1, 1},
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
		// Reads the cones, dDist, cand and the candidates' rows; reads and writes dAxis,
		// dHalf (and, atomic, the touched rows of dEnt). The gradient of dim_distance
		// and two accumulations (and the atomic add) per (query, candidate, dim).
		rows := cands
		if cand != nil {
			rows = gathered(queries*cands, tableRows(ent, dim))
		}
		w := Work{Bytes: words(2*queries*dim, queries*cands, rows*dim), FLOPs: flops(queries*cands*dim, distGradFlops+4)}
		if cand != nil {
			w.Bytes += words(queries * cands)
		}
		for _, g := range []*F32{dAxis, dHalf} {
			if g != nil {
				w.Bytes += words(2 * queries * dim)
			}
		}
		if atomic {
			w.Bytes += words(2 * rows * dim)
			w.FLOPs += flops(queries*cands*dim, 2)
		}
		if err := d.launch("distance_bwd_q", w, [3]int{gx, min(queries, d.gridY), 1}, block,
			ptr(dAxis), ptr(dHalf), ptr(dEnt), ptr(dDist), ptr(axis), ptr(half), ptr(ent), ptr(cand),
			i32(queries), i32(cands), i32(dim), f32(lambda), boolArg(atomic)); err != nil {
			return err
		}
	}
	switch {
	case dEnt == nil || atomic:
		return nil
	case cand == nil:
		// Reads dDist, the cones and the cands rows of ent; reads and writes those of dEnt.
		w := Work{Bytes: words(queries*cands, 2*queries*dim, cands*dim, 2*cands*dim),
			FLOPs: flops(queries*cands*dim, distGradFlops+2)}
		return d.launch("distance_bwd_ent_all", w, [3]int{gx, min(cands, d.gridY), 1}, block,
			ptr(dEnt), ptr(dDist), ptr(axis), ptr(half), ptr(ent), i32(queries), i32(cands), i32(dim), f32(lambda))
	default:
		if index.N == 0 {
			return nil
		}
		if index.Pairs.Len() != queries*cands {
			return fmt.Errorf("cuda: DistanceBackward: the index has %d pairs, the candidates %d", index.Pairs.Len(), queries*cands)
		}
		// Reads the index, dDist, the cones and the index's rows of ent; reads and writes
		// those of dEnt. One gradient and accumulation per (pair, dim).
		np := index.Pairs.Len()
		w := Work{Bytes: words(index.N, index.N+1, np, np, 2*queries*dim, index.N*dim, 2*index.N*dim),
			FLOPs: flops(np*dim, distGradFlops+2)}
		return d.launch("distance_bwd_ent_csr", w, [3]int{gx, min(index.N, d.gridY), 1}, block,
			ptr(dEnt), ptr(dDist), ptr(axis), ptr(half), ptr(ent), ptr(index.Rows), ptr(index.Start), ptr(index.Pairs),
			i32(index.N), i32(cands), i32(dim), f32(lambda))
	}
}

// FLOPs of distance.cu's per-dimension functions (Work): dim_distance, two sincosf (one
// each) and 19 adds, multiplies, absolute values, minima and comparisons on the outside
// path; dim_distance_grad, two sincosf and 48 more on the outside path.
const (
	distFwdFlops  = 21
	distGradFlops = 50
)
