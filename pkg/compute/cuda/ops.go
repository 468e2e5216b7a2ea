package cuda

import (
	"fmt"
	"sort"
)

// The device-resident building blocks: each method enqueues kernels on device buffers,
// with the semantics of the corresponding CPU code (pkg/compute.Reference, pkg/model's
// operators) and its conventions: backward operations ADD into their gradient outputs,
// and a nil gradient buffer is skipped. Sizes are checked against the buffers' lengths;
// index contents (candidate rows, gather indices) are not.

// ---------------------------------------------------------------------------------------
// Linear layer y = x·Wᵀ + b (compute.Kernels.LinearForward / LinearBackward).

// LinearForward computes y = x·Wᵀ + b with x [rows][in], w [out][in], b [out] (nil: no
// bias), y [rows][out].
func (d *Device) LinearForward(y, x, w, b *F32, rows, in, out int) error {
	c := check{op: "LinearForward"}
	c.nonneg(rows, in, out)
	c.f("y", y, rows*out)
	c.f("x", x, rows*in)
	c.f("w", w, out*in)
	c.opt("b", b, out)
	if c.err != nil || rows == 0 || out == 0 {
		return c.err
	}
	return d.gemm("gemm_nt", rows, out, in, x, in, w, in, y, out, b, false)
}

// LinearBackward accumulates dx += dy·W (dx may be nil), dw += dyᵀ·x (dw may be nil) and
// db += Σ_r dy (db may be nil).
func (d *Device) LinearBackward(dx, dw, db, dy, x, w *F32, rows, in, out int) error {
	c := check{op: "LinearBackward"}
	c.nonneg(rows, in, out)
	c.f("dy", dy, rows*out)
	c.opt("dx", dx, rows*in)
	c.opt("dw", dw, out*in)
	c.opt("db", db, out)
	if dx != nil {
		c.f("w", w, out*in)
	}
	if dw != nil {
		c.f("x", x, rows*in)
	}
	if c.err != nil || rows == 0 || out == 0 {
		return c.err
	}
	if dx != nil && in > 0 {
		if err := d.gemm("gemm_nn", rows, in, out, dy, out, w, in, dx, in, nil, true); err != nil {
			return err
		}
	}
	if dw != nil && in > 0 {
		if err := d.gemm("gemm_tn", out, in, rows, dy, out, x, in, dw, in, nil, true); err != nil {
			return err
		}
	}
	if db != nil {
		return d.launch("col_sum", [3]int{ceilDiv(out, colSumColumns), 1, 1}, [3]int{tileThreads, 1, 1},
			ptr(db), ptr(dy), i32(rows), i32(out))
	}
	return nil
}

// gemm launches one of the tiled GEMM kernels for C [M][N].
func (d *Device) gemm(name string, M, N, K int, A *F32, lda int, B *F32, ldb int, C *F32, ldc int, bias *F32, acc bool) error {
	grid := [3]int{ceilDiv(N, tileN), min(ceilDiv(M, tileM), d.gridY), 1}
	return d.launch(name, grid, [3]int{tileThreads, 1, 1},
		i32(M), i32(N), i32(K), ptr(A), i32(lda), ptr(B), i32(ldb), ptr(C), i32(ldc), ptr(bias), boolArg(acc))
}

// ---------------------------------------------------------------------------------------
// Cone distance (compute.Kernels.DistanceForward / DistanceBackward).

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

// CandIndex groups the (query, candidate) pairs of a candidate matrix by entity row, for
// the deterministic scatter of DistanceBackward's entity gradient.
type CandIndex struct {
	Rows  *I32 // [n] the distinct entity rows, increasing
	Start *I32 // [n+1] row u's pairs are Pairs[Start[u]:Start[u+1]]
	Pairs *I32 // [queries·cands] q·cands + k, increasing within a row
	N     int
}

// NewCandIndex builds the index of cand [queries][cands] on the host and uploads it.
func NewCandIndex(d *Device, cand []int32, cands int) (*CandIndex, error) {
	rows, start, pairs := candCSR(cand)
	var err error
	ix := &CandIndex{N: len(rows)}
	if ix.Rows, err = FromHost(d, rows); err == nil {
		if ix.Start, err = FromHost(d, start); err == nil {
			ix.Pairs, err = FromHost(d, pairs)
		}
	}
	if err != nil {
		ix.Free()
		return nil, err
	}
	return ix, nil
}

// candCSR groups the positions p of cand by value: a counting sort, stable, so each
// row's pairs stay in increasing p.
func candCSR(cand []int32) (rows, start, pairs []int32) {
	count := map[int32]int32{}
	for _, c := range cand {
		count[c]++
	}
	rows = make([]int32, 0, len(count))
	for r := range count {
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i] < rows[j] })
	start = make([]int32, len(rows)+1)
	pos := make(map[int32]int32, len(rows))
	for u, r := range rows {
		pos[r] = start[u]
		start[u+1] = start[u] + count[r]
	}
	pairs = make([]int32, len(cand))
	for p, c := range cand {
		pairs[pos[c]] = int32(p)
		pos[c]++
	}
	return rows, start, pairs
}

// Free releases the index.
func (ix *CandIndex) Free() error {
	if ix == nil {
		return nil
	}
	return FreeAll(ix.Rows, ix.Start, ix.Pairs)
}

// DistanceBackward accumulates the gradients of DistanceForward given dDist into dAxis,
// dHalf [queries][dim] and dEnt (rows of ent), any of which may be nil. With cand nil the
// entity gradient is a deterministic per-row sum; with cand and index (from
// NewCandIndex(cand)) it is the deterministic CSR gather; with cand and a nil index it is
// scattered with atomicAdd (faster, summation order not reproducible).
func (d *Device) DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, ent *F32, cand *I32, index *CandIndex,
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

// ---------------------------------------------------------------------------------------
// Angle mapping and embedding rows (model.md §1.3).

// AngleForward sets theta = π·tanh(raw/R), element-wise over len(raw).
func (d *Device) AngleForward(theta, raw *F32, R float32) error {
	c := check{op: "AngleForward"}
	c.f("theta", theta, raw.Len())
	if c.err != nil {
		return c.err
	}
	return d.each("angle_fwd", raw.Len(), ptr(theta), ptr(raw), i32(raw.Len()), f32(R))
}

// AngleBackward adds to dRaw the gradient through AngleForward, from its output theta.
func (d *Device) AngleBackward(dRaw, dTheta, theta *F32, R float32) error {
	n := dTheta.Len()
	c := check{op: "AngleBackward"}
	c.f("dRaw", dRaw, n)
	c.f("theta", theta, n)
	if c.err != nil {
		return c.err
	}
	return d.each("angle_bwd", n, ptr(dRaw), ptr(dTheta), ptr(theta), i32(n), f32(R))
}

// AngleGather sets theta[r] = π·tanh(table[idx[r]]/R) for rows r < len(idx) of width dim.
func (d *Device) AngleGather(theta, table *F32, idx *I32, dim int, R float32) error {
	rows := idx.Len()
	c := check{op: "AngleGather"}
	c.f("theta", theta, rows*dim)
	if c.err != nil {
		return c.err
	}
	return d.each("angle_gather_fwd", rows*dim, ptr(theta), ptr(table), ptr(idx), i32(rows), i32(dim), f32(R))
}

// AngleScatterBackward adds the gradient through AngleGather into the table's rows
// (atomically: indices may repeat).
func (d *Device) AngleScatterBackward(dTable, dTheta, theta *F32, idx *I32, dim int, R float32) error {
	rows := idx.Len()
	c := check{op: "AngleScatterBackward"}
	c.f("dTheta", dTheta, rows*dim)
	c.f("theta", theta, rows*dim)
	if c.err != nil {
		return c.err
	}
	return d.each("angle_scatter_bwd", rows*dim, ptr(dTable), ptr(dTheta), ptr(theta), ptr(idx), i32(rows), i32(dim), f32(R))
}

// GatherRows sets out[r] = table[idx[r]] for rows of width dim.
func (d *Device) GatherRows(out, table *F32, idx *I32, dim int) error {
	rows := idx.Len()
	c := check{op: "GatherRows"}
	c.f("out", out, rows*dim)
	if c.err != nil {
		return c.err
	}
	return d.each("gather_rows", rows*dim, ptr(out), ptr(table), ptr(idx), i32(rows), i32(dim))
}

// ScatterAddRows adds src[r] into table[idx[r]] (atomically).
func (d *Device) ScatterAddRows(table, src *F32, idx *I32, dim int) error {
	rows := idx.Len()
	c := check{op: "ScatterAddRows"}
	c.f("src", src, rows*dim)
	if c.err != nil {
		return c.err
	}
	return d.each("scatter_add_rows", rows*dim, ptr(table), ptr(src), ptr(idx), i32(rows), i32(dim))
}

// Fill sets every element of x to v.
func (d *Device) Fill(x *F32, v float32) error {
	return d.each("fill_f32", x.Len(), ptr(x), f32(v), i32(x.Len()))
}

// ---------------------------------------------------------------------------------------
// Cones: rotation, negation, intersection.

// Cones is a batch of N cones in Dim dimensions on the device, row-major like
// model.Cones.
type Cones struct {
	Axis, Half *F32
	N, Dim     int
}

// NewCones allocates a zero batch.
func NewCones(d *Device, n, dim int) (Cones, error) {
	a, err := Alloc[float32](d, n*dim)
	if err != nil {
		return Cones{}, err
	}
	h, err := Alloc[float32](d, n*dim)
	if err != nil {
		a.Free()
		return Cones{}, err
	}
	return Cones{Axis: a, Half: h, N: n, Dim: dim}, nil
}

// Free releases both buffers.
func (c Cones) Free() error { return FreeAll(c.Axis, c.Half) }

func (c Cones) size() int { return c.N * c.Dim }

// Rotation selects RoConE's aperture rule (model.md §3.2).
type Rotation int

const (
	RotateFold  Rotation = 0 // rocone: h' = |wrap(h + φ)|
	RotateTrunc Rotation = 1 // rocone-trunc: h' = clamp(h + φ, 0, π)
	RotateSE    Rotation = 2 // rocone-se: h' = π·σ(logit(clip(h/π)) + s)
)

// RotateForward applies the rotation projection to in, with per-row (gathered and mapped)
// relation angles relAxis, relAperture (not RotateSE) and raw shifts relShift (RotateSE
// only), all [N][d], writing out.
func (d *Device) RotateForward(v Rotation, out, in Cones, relAxis, relAperture, relShift *F32) error {
	n := in.size()
	c := check{op: "RotateForward"}
	c.f("out.Axis", out.Axis, n)
	c.f("out.Half", out.Half, n)
	c.f("in.Axis", in.Axis, n)
	c.f("in.Half", in.Half, n)
	c.f("relAxis", relAxis, n)
	if v == RotateSE {
		c.f("relShift", relShift, n)
	} else {
		c.f("relAperture", relAperture, n)
	}
	if c.err != nil {
		return c.err
	}
	return d.each("rotate_fwd", n, i32(int(v)), ptr(out.Axis), ptr(out.Half), ptr(in.Axis), ptr(in.Half),
		ptr(relAxis), ptr(relAperture), ptr(relShift), i32(n))
}

// RotateBackward adds the gradients of RotateForward given dOut into dIn, dRelAxis,
// dRelAperture and dRelShift (each may be nil / zero). out is RotateForward's output.
func (d *Device) RotateBackward(v Rotation, dIn Cones, dRelAxis, dRelAperture, dRelShift *F32, dOut, in, out Cones, relAperture *F32) error {
	n := dOut.size()
	c := check{op: "RotateBackward"}
	c.f("dOut.Axis", dOut.Axis, n)
	c.f("dOut.Half", dOut.Half, n)
	c.opt("dIn.Axis", dIn.Axis, n)
	c.opt("dIn.Half", dIn.Half, n)
	c.opt("dRelAxis", dRelAxis, n)
	c.opt("dRelAperture", dRelAperture, n)
	c.opt("dRelShift", dRelShift, n)
	c.f("in.Half", in.Half, n)
	if v == RotateSE {
		c.f("out.Half", out.Half, n)
	} else {
		c.f("relAperture", relAperture, n)
	}
	if c.err != nil {
		return c.err
	}
	return d.each("rotate_bwd", n, i32(int(v)), ptr(dIn.Axis), ptr(dIn.Half), ptr(dRelAxis), ptr(dRelAperture), ptr(dRelShift),
		ptr(dOut.Axis), ptr(dOut.Half), ptr(in.Half), ptr(out.Half), ptr(relAperture), i32(n))
}

// NegateForward writes the complement of each cone of in to out (model.md §5).
func (d *Device) NegateForward(out, in Cones) error {
	n := in.size()
	c := check{op: "NegateForward"}
	c.f("out.Axis", out.Axis, n)
	c.f("out.Half", out.Half, n)
	c.f("in.Axis", in.Axis, n)
	c.f("in.Half", in.Half, n)
	if c.err != nil {
		return c.err
	}
	return d.each("negate_fwd", n, ptr(out.Axis), ptr(out.Half), ptr(in.Axis), ptr(in.Half), i32(n))
}

// NegateBackward adds the gradient of NegateForward given dOut into dIn.
func (d *Device) NegateBackward(dIn, dOut Cones) error {
	n := dOut.size()
	c := check{op: "NegateBackward"}
	c.f("dOut.Axis", dOut.Axis, n)
	c.f("dOut.Half", dOut.Half, n)
	c.opt("dIn.Axis", dIn.Axis, n)
	c.opt("dIn.Half", dIn.Half, n)
	if c.err != nil {
		return c.err
	}
	return d.each("negate_bwd", n, ptr(dIn.Axis), ptr(dIn.Half), ptr(dOut.Axis), ptr(dOut.Half), i32(n))
}

// IntersectWeights are the intersection's four linear layers on the device, shaped as
// model.IntersectionWeights: W1, W3 [d][2d], W2, W4 [d][d], biases [d].
type IntersectWeights struct {
	W1, B1, W2, B2, W3, B3, W4, B4 *F32
}

// IntersectState is what IntersectBackward needs from IntersectForward or
// IntersectForwardRagged; Free it after.
type IntersectState struct {
	br                                         Branches // the layout; br.Dev not owned
	n, rows, d                                 int      // outputs, input rows (Σ counts), dimensions
	z, att, alpha, x, y, set, mean, gate, hmin *F32
	argmin                                     *I32
	mask                                       *F32 // not owned
}

// Free releases the state's buffers.
func (s *IntersectState) Free() error {
	if s == nil {
		return nil
	}
	return FreeAll(s.z, s.att, s.alpha, s.x, s.y, s.set, s.mean, s.gate, s.hmin, s.argmin)
}

// IntersectForward intersects nb batches of n cones (in holds them back to back: branch
// j is rows j·n … (j+1)·n − 1, so in.N = nb·n) into out (n cones), as
// model.IntersectForward. mask [nb·n][d] is the dropout on the input apertures (0 or
// 1/(1−p)), or nil. It is IntersectForwardRagged with UniformBranches(nb, n).
func (d *Device) IntersectForward(w IntersectWeights, out, in Cones, nb int, mask *F32) (*IntersectState, error) {
	if nb < 1 || in.N != nb*out.N || in.Dim != out.Dim {
		return nil, fmt.Errorf("cuda: IntersectForward: %d input cones for %d branches of %d cones", in.N, nb, out.N)
	}
	return d.IntersectForwardRagged(w, out, in, UniformBranches(nb, out.N), mask)
}

// IntersectBackward adds the gradients of IntersectForward or IntersectForwardRagged
// given dOut into dIn (laid out like in) and the weight gradients gw (nil members
// skipped). The layout comes from the state (so a ragged layout's Branches.Dev must still
// hold the counts).
func (d *Device) IntersectBackward(w, gw IntersectWeights, st *IntersectState, dIn, dOut, in Cones) (err error) {
	n, rows, dim := st.n, st.rows, st.d
	nd := n * dim
	c := check{op: "IntersectBackward"}
	c.f("dOut.Axis", dOut.Axis, nd)
	c.f("dOut.Half", dOut.Half, nd)
	c.opt("dIn.Axis", dIn.Axis, rows*dim)
	c.opt("dIn.Half", dIn.Half, rows*dim)
	c.f("in.Axis", in.Axis, rows*dim)
	if c.err != nil {
		return c.err
	}
	var dz, dg, dAtt, dPre, dMean, dSet *F32
	defer func() {
		if e := FreeAll(dz, dg, dAtt, dPre, dMean, dSet); err == nil {
			err = e
		}
	}()
	for _, b := range []struct {
		p    **F32
		size int
	}{{&dz, rows * 2 * dim}, {&dg, rows * dim}, {&dAtt, rows * dim}, {&dPre, nd}, {&dMean, nd}, {&dSet, rows * dim}} {
		if *b.p, err = scratch[float32](d, b.size); err != nil {
			return err
		}
	}
	J, counts := len(st.br.Counts), ptr(st.br.Dev)
	steps := []func() error{
		// SemanticAverage: the arctangent and the softmax, then the two attention layers.
		func() error {
			return d.each("intersect_attention_bwd", nd, ptr(dg), ptr(dIn.Axis), ptr(dOut.Axis), ptr(st.alpha), ptr(st.x),
				ptr(st.y), ptr(in.Axis), counts, i32(J), i32(n), i32(dim))
		},
		func() error { return d.LinearBackward(dAtt, gw.W2, gw.B2, dg, st.att, w.W2, rows, dim, dim) },
		func() error { return d.each("relu_bwd", rows*dim, ptr(dAtt), ptr(st.att), i32(rows*dim)) },
		func() error { return d.LinearBackward(dz, gw.W1, gw.B1, dAtt, st.z, w.W1, rows, 2*dim, dim) },
		// CardMin: the min and the gate, then the DeepSets layers.
		func() error {
			return d.each("cardmin_bwd", nd, ptr(dIn.Half), ptr(dPre), ptr(dOut.Half), ptr(st.gate), ptr(st.hmin), ptr(st.argmin),
				ptr(st.mask), counts, i32(n), i32(dim))
		},
		func() error { return d.LinearBackward(dMean, gw.W4, gw.B4, dPre, st.mean, w.W4, n, dim, dim) },
		func() error {
			return d.each("branch_mean_bwd", nd, ptr(dSet), ptr(dMean), ptr(st.set), counts, i32(J), i32(n), i32(dim))
		},
		func() error { return d.LinearBackward(dz, gw.W3, gw.B3, dSet, st.z, w.W3, rows, 2*dim, dim) },
		// The boundary features.
		func() error {
			return d.each("intersect_features_bwd", rows*dim, ptr(dIn.Axis), ptr(dIn.Half), ptr(dz), i32(rows), i32(dim))
		},
	}
	for _, s := range steps {
		if err = s(); err != nil {
			return err
		}
	}
	return nil
}

// ---------------------------------------------------------------------------------------
// Scores and loss (model.md §6, §7, §9).

// LogitForward sets logit = γ − m·dist with the modulus m = modulus[0] on the device.
func (d *Device) LogitForward(logit, dist, modulus *F32, gamma float32) error {
	n := dist.Len()
	c := check{op: "LogitForward"}
	c.f("logit", logit, n)
	c.f("modulus", modulus, 1)
	if c.err != nil {
		return c.err
	}
	return d.each("logit_fwd", n, ptr(logit), ptr(dist), ptr(modulus), f32(gamma), i32(n))
}

// LogitBackward adds −m·dLogit into dDist (if not nil) and −Σ dLogit·dist into
// dModulus[0] (if not nil; summed in double in one block, deterministic).
func (d *Device) LogitBackward(dDist, dModulus, dLogit, dist, modulus *F32) error {
	n := dLogit.Len()
	c := check{op: "LogitBackward"}
	c.opt("dDist", dDist, n)
	c.opt("dModulus", dModulus, 1)
	c.f("dist", dist, n)
	c.f("modulus", modulus, 1)
	if c.err != nil {
		return c.err
	}
	if dDist != nil {
		if err := d.each("logit_bwd", n, ptr(dDist), ptr(dLogit), ptr(modulus), i32(n)); err != nil {
			return err
		}
	}
	if dModulus != nil && n > 0 {
		return d.launch("logit_bwd_modulus", [3]int{1, 1, 1}, [3]int{reduceThreads, 1, 1}, ptr(dModulus), ptr(dLogit), ptr(dist), i32(n))
	}
	return nil
}

// UnionMaxForward sets score[i] = max_b branches[b][i] and arg[i] the first b attaining
// it, for branches [nb][n] back to back.
func (d *Device) UnionMaxForward(score *F32, arg *I32, branches *F32, nb int) error {
	n := score.Len()
	c := check{op: "UnionMaxForward"}
	c.i("arg", arg, n)
	c.f("branches", branches, nb*n)
	if c.err != nil {
		return c.err
	}
	return d.each("union_max_fwd", n, ptr(score), ptr(arg), ptr(branches), i32(nb), i32(n))
}

// UnionMaxBackward adds dScore[i] into dBranches[arg[i]][i].
func (d *Device) UnionMaxBackward(dBranches, dScore *F32, arg *I32) error {
	n := dScore.Len()
	c := check{op: "UnionMaxBackward"}
	c.i("arg", arg, n)
	if c.err != nil {
		return c.err
	}
	return d.each("union_max_bwd", n, ptr(dBranches), ptr(dScore), ptr(arg), i32(n))
}

// LossForward computes model.LossForward on the device for logits pos [Q], neg [Q][k] and
// weights w [Q] into stats [4] (float64): L, L_pos, L_neg, Σw. Read them with
// ReadLoss; LossBackward reads Σw from stats on the device.
func (d *Device) LossForward(stats *F64, pos, neg, w *F32, Q, k int) error {
	c := check{op: "LossForward"}
	c.len("stats", stats.Len(), 4, false, stats != nil)
	c.f("pos", pos, Q)
	c.f("neg", neg, Q*k)
	c.f("w", w, Q)
	if c.err == nil && (Q < 1 || k < 1) {
		c.err = fmt.Errorf("cuda: LossForward: %d queries, %d negatives", Q, k)
	}
	if c.err != nil {
		return c.err
	}
	return d.launch("loss_fwd", [3]int{1, 1, 1}, [3]int{reduceThreads, 1, 1}, ptr(stats), ptr(pos), ptr(neg), ptr(w), i32(Q), i32(k))
}

// ReadLoss downloads LossForward's result: L, L_pos, L_neg.
func ReadLoss(stats *F64) (loss, lossPos, lossNeg float64, err error) {
	s := make([]float64, 4)
	if err := stats.Download(s); err != nil {
		return 0, 0, 0, err
	}
	return s[0], s[1], s[2], nil
}

// LossBackward adds the gradient of L (times dLoss) into dPos [Q] and dNeg [Q][k], as
// model.LossBackward; stats is LossForward's output.
func (d *Device) LossBackward(dPos, dNeg, pos, neg, w *F32, stats *F64, Q, k int, dLoss float64) error {
	c := check{op: "LossBackward"}
	c.len("stats", stats.Len(), 4, false, stats != nil)
	c.f("dPos", dPos, Q)
	c.f("dNeg", dNeg, Q*k)
	c.f("pos", pos, Q)
	c.f("neg", neg, Q*k)
	c.f("w", w, Q)
	if c.err != nil {
		return c.err
	}
	return d.each("loss_bwd", Q*(k+1), ptr(dPos), ptr(dNeg), ptr(pos), ptr(neg), ptr(w), ptr(stats), i32(Q), i32(k), f64(dLoss))
}

// ---------------------------------------------------------------------------------------
// Adam.

// AdamConfig is torch.optim.Adam's configuration (no weight decay, no amsgrad).
type AdamConfig struct {
	LR, Beta1, Beta2, Eps float64
}

// DefaultAdam is PyTorch's default Adam with learning rate lr (training.md §1).
func DefaultAdam(lr float64) AdamConfig {
	return AdamConfig{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-8}
}

// AdamStep applies Adam step number step (1, 2, …; since the optimiser was created) to
// the parameters p with gradients g and moments m, v, all of one length: dense, every
// element moves. With zeroGrad the gradients are cleared after use.
func (d *Device) AdamStep(p, g, m, v *F32, step int, cfg AdamConfig, zeroGrad bool) error {
	n := p.Len()
	c := check{op: "AdamStep"}
	c.f("g", g, n)
	c.f("m", m, n)
	c.f("v", v, n)
	if c.err == nil && step < 1 {
		c.err = fmt.Errorf("cuda: AdamStep: step %d, must be ≥ 1", step)
	}
	if c.err != nil {
		return c.err
	}
	stepSize, bc2Sqrt := adamScalars(step, cfg)
	return d.each("adam_step", n, ptr(p), ptr(g), ptr(m), ptr(v), i32(n), f32(float32(cfg.Beta2)),
		f32(float32(1-cfg.Beta1)), f32(float32(1-cfg.Beta2)), f32(float32(cfg.Eps)), f32(stepSize),
		f32(bc2Sqrt), boolArg(zeroGrad))
}
