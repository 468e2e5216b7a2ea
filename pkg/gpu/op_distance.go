package gpu

import (
	"fmt"
)

// The candidate distances (kernels/distance.cu). Two sets of kernels compute them:
//   - the table kernels (the default): a query table of the half-angle sines and cosines
//     (distance_qtab, per call), then distance_fwd_tab, distance_bwd_q_tab and
//     distance_bwd_ent_{csr,all}_tab, which rotate the entity's half-angle by the
//     query's: one half_sincos (polynomials) per entity value, multiply-adds per
//     (pair, dimension);
//   - the first kernels (Device.distFirst, kept for the kernel bench and the parity
//     tests): two sincosf per (pair, dimension) in each of them.
//
// And distance_fwd_etab and distance_bwd_q_etab: the same, their entity half-angle sines
// from a table made once (EntHalfSinCos, 8 bytes an entity value where the angle is 4)
// instead of a half_sincos per (pair, dimension); the same bits. The training step takes
// them (DistanceForwardETab, DistanceBackwardETab: both kernels are issue-bound, and the
// table takes half the forward's instructions and a third of the backward's), with the
// table Adam writes (AngleGrad.SinCos); ranking and embedding keep the angles.
//
// Both are deterministic except the atomic entity scatter (DistanceBackward with cand and
// no index).

const (
	dtabThreads = 256 // distance.cu DTAB_THREADS
	dtabWarps   = 8   // DTAB_WARPS: warp tasks per block
	dtabCW      = 4   // DTAB_CW: candidates per warp task
)

// queryTable returns the query table of the cones axis, half [queries][dim] (four floats
// per element, distance_qtab), from scratch: the caller frees it.
func (d *Device) queryTable(axis, half *F32, n int) (*F32, error) {
	tab, err := scratch[float32](d, 4*n)
	if err != nil {
		return nil, err
	}
	// Reads the cones, writes four floats each; two multiplies and two half_sincos.
	if err := d.each("distance_qtab", n, Work{Bytes: words(2*n, 4*n), FLOPs: flops(n, 4)}, ptr(tab), ptr(axis), ptr(half), i32(n)); err != nil {
		tab.Free()
		return nil, err
	}
	return tab, nil
}

// EntHalfSinCos writes tab [n][2] = (sin θ/2, cos θ/2) of the entity angles θ = ent [n]
// by half_sincos, the function of the distance kernels: the table DistanceBackwardETab
// reads.
func (d *Device) EntHalfSinCos(tab, ent *F32) error {
	n := ent.Len()
	c := check{op: "EntHalfSinCos"}
	c.f("tab", tab, 2*n)
	c.aligned("tab", tab, 8)
	if c.err != nil {
		return c.err
	}
	// Reads the angle, writes its sine and cosine; a multiply and half_sincos's 23.
	return d.each("ent_half_sincos", n, Work{Bytes: words(3 * n), FLOPs: flops(n, 1+distHalfAngleFlops)}, ptr(tab), ptr(ent), i32(n))
}

// checkETab checks an entity half-angle table etab (nil: none) for the angles ent: two
// floats an angle, and the table kernels to read it.
func (d *Device) checkETab(c *check, etab, ent *F32) {
	c.opt("etab", etab, 2*ent.Len())
	c.aligned("etab", etab, 8)
	if c.err == nil && etab != nil && d.distFirst {
		c.err = fmt.Errorf("cuda: %s: the first kernels take no entity table", c.op)
	}
}

// etabWork is a table kernel's work w with its entity values read from the half-angle
// table: the rows' sines and cosines, twice the angles' bytes, and no half_sincos for the
// pairs' dimensions.
func etabWork(w Work, rows, pairs, dim int) Work {
	w.Bytes += words(rows * dim)
	w.FLOPs -= flops(pairs*dim, distHalfAngleFlops)
	return w
}

// DistanceForward computes dist [queries][cands] for cones axis, half [queries][dim]
// against the entity angles ent, candidate rows cand [queries][cands] (nil: rows 0 …
// cands−1 for every query).
func (d *Device) DistanceForward(dist, axis, half, ent *F32, cand *I32, queries, cands, dim int, lambda float32) error {
	return d.distanceForward(dist, axis, half, ent, nil, cand, queries, cands, dim, lambda)
}

// DistanceForwardETab is DistanceForward from the entity half-angle table etab,
// EntHalfSinCos of ent (distance_fwd_etab): the same bits.
func (d *Device) DistanceForwardETab(dist, axis, half, ent, etab *F32, cand *I32, queries, cands, dim int, lambda float32) error {
	if etab == nil {
		return fmt.Errorf("cuda: DistanceForwardETab: no entity table")
	}
	return d.distanceForward(dist, axis, half, ent, etab, cand, queries, cands, dim, lambda)
}

// distanceForward is DistanceForward, from the entity half-angle table etab
// (EntHalfSinCos of ent) where it is not nil.
func (d *Device) distanceForward(dist, axis, half, ent, etab *F32, cand *I32, queries, cands, dim int, lambda float32) error {
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
	d.checkETab(&c, etab, ent)
	if c.err != nil || queries == 0 || cands == 0 {
		return c.err
	}
	// The candidates' entity rows (gathered through cand, or the first cands rows) and
	// cand itself are read, dist written; the cones (first) or their table are read.
	rows := cands
	if cand != nil {
		rows = gathered(queries*cands, tableRows(ent, dim))
	}
	w := Work{Bytes: words(rows*dim, queries*cands)}
	if cand != nil {
		w.Bytes += words(queries * cands)
	}
	if d.distFirst {
		// dim_distance per (query, candidate, dim).
		w.Bytes += words(2 * queries * dim)
		w.FLOPs = flops(queries*cands*dim, distFwdFlops)
		grid := [3]int{ceilDiv(cands, distCands), min(ceilDiv(queries, distQB), d.gridY), 1}
		return d.launch("distance_fwd", w, grid, [3]int{distThreads, 1, 1},
			ptr(dist), ptr(axis), ptr(half), ptr(ent), ptr(cand), i32(queries), i32(cands), i32(dim), f32(lambda))
	}
	if dim == 0 {
		return d.zero(dist.ptr, 4*queries*cands)
	}
	tab, err := d.queryTable(axis, half, queries*dim)
	if err != nil {
		return err
	}
	defer tab.Free()
	// Per (query, candidate, dim): the entity's half_sincos and the rotation.
	w.Bytes += words(4 * queries * dim)
	w.FLOPs = flops(queries*cands*dim, distHalfAngleFlops+distTabFwdFlops)
	grid := [3]int{min(ceilDiv(queries*ceilDiv(cands, dtabCW), dtabWarps), d.maxBlocks), 1, 1}
	if etab != nil {
		w = etabWork(w, rows, queries*cands, dim)
		return d.launch("distance_fwd_etab", w, grid, [3]int{dtabThreads, 1, 1},
			ptr(dist), ptr(tab), ptr(etab), ptr(cand), i32(queries), i32(cands), i32(dim), f32(lambda))
	}
	return d.launch("distance_fwd_tab", w, grid, [3]int{dtabThreads, 1, 1},
		ptr(dist), ptr(tab), ptr(ent), ptr(cand), i32(queries), i32(cands), i32(dim), f32(lambda))
}

// DistanceBackward accumulates the gradients of DistanceForward given dDist into dAxis,
// dHalf [queries][dim] and dEnt (rows of ent), any of which may be nil. With cand nil the
// entity gradient is a deterministic per-row sum; with cand and index (RowCSR of cand) it
// is the deterministic CSR gather; with cand and a nil index it is scattered with
// atomicAdd (faster, summation order not reproducible).
func (d *Device) DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, ent *F32, cand *I32, index *DeviceRowIndex,
	queries, cands, dim int, lambda float32) error {
	return d.distanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, ent, nil, cand, index, queries, cands, dim, lambda)
}

// DistanceBackwardETab is DistanceBackward with its query side (distance_bwd_q_etab,
// and with it the per-pair rows of the entity gradient) from the entity half-angle table
// etab, EntHalfSinCos of ent: the same bits.
func (d *Device) DistanceBackwardETab(dAxis, dHalf, dEnt, dDist, axis, half, ent, etab *F32, cand *I32, index *DeviceRowIndex,
	queries, cands, dim int, lambda float32) error {
	if etab == nil {
		return fmt.Errorf("cuda: DistanceBackwardETab: no entity table")
	}
	return d.distanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, ent, etab, cand, index, queries, cands, dim, lambda)
}

// distanceBackward is DistanceBackward, its query side from the entity half-angle table
// etab where it is not nil.
func (d *Device) distanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, ent, etab *F32, cand *I32, index *DeviceRowIndex,
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
	d.checkETab(&c, etab, ent)
	if c.err != nil || queries == 0 || cands == 0 || dim == 0 {
		return c.err
	}
	atomic := dEnt != nil && cand != nil && index == nil
	csr := dEnt != nil && cand != nil && index != nil
	if csr && index.N > 0 && index.Pairs.Len() != queries*cands {
		return fmt.Errorf("cuda: DistanceBackward: the index has %d pairs, the candidates %d", index.Pairs.Len(), queries*cands)
	}
	if d.distFirst {
		return d.distanceBackwardFirst(dAxis, dHalf, dEnt, dDist, axis, half, ent, cand, index, queries, cands, dim, lambda)
	}
	// pairs: the entity gradient as each pair's row, written by distance_bwd_q_tab, then
	// summed per entity by RowsSum; distance_bwd_ent_csr_tab instead (distCSR) reads the
	// table again per pair, 0.80 ms against 0.64 for the two on an H200 (kernel bench,
	// distance_bwd at FB15k-237's shape).
	pairs := csr && !d.distCSR && index.N > 0
	q := dAxis != nil || dHalf != nil || atomic || pairs
	if !q && (dEnt == nil || csr && index.N == 0) {
		return nil
	}
	tab, err := d.queryTable(axis, half, queries*dim)
	if err != nil {
		return err
	}
	defer tab.Free()
	block := [3]int{distBwdThreads, 1, 1}
	gx := ceilDiv(dim, distBwdThreads)
	rows := cands
	if cand != nil {
		rows = gathered(queries*cands, tableRows(ent, dim))
	}
	// Per (query, candidate, dim) that a kernel visits: the entity's half_sincos
	// (once per (row, dim) in the entity-side sums), the rotation and the gradient.
	per := distHalfAngleFlops + distTabGradFlops
	var dPair *F32
	if pairs {
		if dPair, err = d.workspace(workPairs, queries*cands*dim); err != nil {
			return err
		}
	}
	if q {
		// The table's four floats per (query, dim); two accumulations (and the atomic add's
		// 3) per (query, candidate, dim); with pairs, each pair's row written.
		w := distBwdQWork(4, queries, cands, dim, rows, cand, dAxis, dHalf, atomic, per+4, 3)
		if pairs {
			w.Bytes += words(queries * cands * dim)
		}
		kernel, entArg := "distance_bwd_q_tab", ptr(ent)
		if etab != nil {
			kernel, entArg, w = "distance_bwd_q_etab", ptr(etab), etabWork(w, rows, queries*cands, dim)
		}
		if err := d.launch(kernel, w, [3]int{gx, min(queries, d.gridY), 1}, block,
			ptr(dAxis), ptr(dHalf), ptr(dEnt), ptr(dPair), ptr(dDist), ptr(tab), entArg, ptr(cand),
			i32(queries), i32(cands), i32(dim), f32(lambda), boolArg(atomic)); err != nil {
			return err
		}
	}
	switch {
	case dEnt == nil || atomic:
		return nil
	case pairs:
		return d.RowsSum(dEnt, dPair, *index, dim)
	case cand == nil:
		// Reads dDist, the table and the cands rows of ent; reads and writes those of
		// dEnt. A half-angle per (row, dim); a gradient and an accumulation per (query,
		// row, dim).
		w := Work{Bytes: words(queries*cands, 4*queries*dim, cands*dim, 2*cands*dim),
			FLOPs: flops(cands*dim, distHalfAngleFlops) + flops(queries*cands*dim, distTabGradFlops+2)}
		return d.launch("distance_bwd_ent_all_tab", w, [3]int{gx, min(cands, d.gridY), 1}, block,
			ptr(dEnt), ptr(dDist), ptr(tab), ptr(ent), i32(queries), i32(cands), i32(dim), f32(lambda))
	default:
		if index.N == 0 {
			return nil
		}
		// Reads the index, dDist, the table and the index's rows of ent; reads and writes
		// those of dEnt. A half-angle per (row, dim); a gradient and an accumulation per
		// (pair, dim).
		np := index.Pairs.Len()
		w := Work{Bytes: words(index.N, index.N+1, np, np, 4*queries*dim, index.N*dim, 2*index.N*dim),
			FLOPs: flops(index.N*dim, distHalfAngleFlops) + flops(np*dim, distTabGradFlops+2)}
		return d.launch("distance_bwd_ent_csr_tab", w, [3]int{gx, min(index.N, d.gridY), 1}, block,
			ptr(dEnt), ptr(dDist), ptr(tab), ptr(ent), ptr(index.Rows), ptr(index.Start), ptr(index.Pairs),
			i32(index.N), i32(cands), i32(dim), f32(lambda))
	}
}

// distanceBackwardFirst is DistanceBackward with the first kernels (Device.distFirst),
// whose arguments DistanceBackward has checked.
func (d *Device) distanceBackwardFirst(dAxis, dHalf, dEnt, dDist, axis, half, ent *F32, cand *I32, index *DeviceRowIndex,
	queries, cands, dim int, lambda float32) error {
	block := [3]int{distBwdThreads, 1, 1}
	gx := ceilDiv(dim, distBwdThreads)
	atomic := dEnt != nil && cand != nil && index == nil
	if dAxis != nil || dHalf != nil || atomic {
		// The cones' two floats per (query, dim); the gradient of dim_distance and two
		// accumulations (and the atomic add's 2) per (query, candidate, dim).
		rows := cands
		if cand != nil {
			rows = gathered(queries*cands, tableRows(ent, dim))
		}
		w := distBwdQWork(2, queries, cands, dim, rows, cand, dAxis, dHalf, atomic, distGradFlops+4, 2)
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

// distBwdQWork is the work of a query-side distance backward (distance_bwd_q and
// distance_bwd_q_tab): it reads coneWords per (query, dim) (the cones, or their table),
// dDist, cand (if any) and the candidates' rows (rows of them distinct), and reads and
// writes dAxis and dHalf where given and, atomic, the touched rows of dEnt; per (query,
// candidate, dim) it computes perFlops, and atomicFlops more when atomic.
func distBwdQWork(coneWords, queries, cands, dim, rows int, cand *I32, dAxis, dHalf *F32, atomic bool, perFlops, atomicFlops int) Work {
	w := Work{Bytes: words(coneWords*queries*dim, queries*cands, rows*dim), FLOPs: flops(queries*cands*dim, perFlops)}
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
		w.FLOPs += flops(queries*cands*dim, atomicFlops)
	}
	return w
}

// FLOPs of distance.cu's per-dimension functions (Work).
//
// The first kernels: dim_distance, two sincosf (one each) and 19 adds, multiplies,
// absolute values, minima and comparisons on the outside path; dim_distance_grad, two
// sincosf and 48 more on the outside path.
//
// The table kernels: the entity's half angle and half_sincos on the polynomials'
// interval (a multiply, t = x², x·t and 10 multiply-adds of 2 FLOPs: 23); then
// dim_distance_tab, the rotation (st and ct: 2 products and a sum each; sl and sh: 2
// products, a sum and a difference: 10) and 10 more (the inside test's product and
// comparison, 4 absolute values, 2 minima, 2 sums); dim_grad_tab, the rotation, the
// inside test's product and comparison (12), on the outside path the boundary cosines
// (2 products, a sum and a difference), 2 signs and their products, 2 absolute values
// and 2 comparisons (12), then the inside term (a sign, 2 products and a sum; λ·sign·cos
// of the half-aperture, 3) and the tie's comparison (8).
const (
	distFwdFlops       = 21
	distGradFlops      = 50
	distHalfAngleFlops = 23
	distTabFwdFlops    = 20
	distTabGradFlops   = 32
)
