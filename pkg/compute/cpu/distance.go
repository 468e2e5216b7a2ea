package cpu

import (
	"math"
	"slices"

	"github.com/rocone/rocone/pkg/compute"
)

// The cone distance (docs/model.md §7; compute/distance.go) without transcendental calls in
// the inner loop.
//
// Per dimension, with u = θ/2 for the entity angle θ and the query's half-angles
// α = a/2, α₋ = (a−h)/2, α₊ = (a+h)/2 (a the axis, h the half-aperture), the reference
// needs three sines per (query, candidate, dimension):
//
//	t  = |sin(u − α)|,  lo = |sin(u − α₋)|,  hi = |sin(u − α₊)|,  β = |sin(h/2)|.
//
// The subtraction identity sin(u − v) = sin u·cos v − cos u·sin v turns each into two
// products of precomputed values: sin/cos of u per (entity, dimension) and of α, α₋,
// α₊ per (query, dimension); β needs no entity at all. The backward pass also needs the
// cosines, cos(u − v) = cos u·cos v + sin u·sin v. So the inner loop is multiply-adds,
// absolute values, compares and selects — 16 dimensions per AVX-512 instruction.
//
// The inside test. The reference tests t < β. In float32 that test is ill-conditioned
// where the sine is flat: for a wide-open cone (h near π, β ≈ 1) and an entity near the
// antipode of the axis, t rounds to 1 = β and the test flips on an error of 1e-8, while
// the outside distance there is not small (about 1e-4). Instead we use the identity
//
//	t² − β² = sin²x − sin²y = sin(x + y)·sin(x − y) = sin(u − α₋)·sin(u − α₊)
//
// (x = (θ − a)/2, y = h/2): θ is inside iff it lies on opposite sides of the two
// boundaries, i.e. iff the product of the two SIGNED boundary sines is negative (zero is
// the tie t = β). Those sines are small near the boundaries, where the test is decided,
// so it is well-conditioned everywhere, and costs one multiply.
//
// Accuracy: every sine and cosine in the tables is within about 1e-7 of the true value
// of its float32 argument (sincos below), so each combined sine is within a few 1e-7
// absolutely. The reference itself rounds θ − a ± h to float32 before its float64 sine,
// an error of the same size (ulp(π) ≈ 2.4e-7). The two agree to about 1e-6 relative on
// the distance; the inside test and the min(lo, hi) choice can flip only where the two
// sides are within that of each other, where the distance is continuous.
//
// Subgradients are the reference's. Ties: with a dropped-out aperture h = 0 exactly,
// α₋ = α₊ = α, so lo and hi come from the same table entries and tie exactly, and the
// gradient splits as in the reference. sign(0) = 0: the backward pass forms the three
// signed sines as differences of ROUNDED products (no FMA), so that they are exactly 0
// where the two half-angles are equal (θ = a, both tables holding sincos of the same
// float32), as the reference's sin(θ − a) is.
//
// NaN. A NaN in either operand of a min makes it NaN in the reference (math.Min, like
// torch.min) and in the Go loops (Go's min), and so the distance, which training's and
// ranking's NaN checks must see. The assembly minima do not: VMINPS (AVX2) gives its
// second operand and VRANGEPS (AVX-512) the number when one operand is a NaN and the
// other a number (Intel SDM, VRANGEPS: "Signaling of Comparison Operation of One or More
// NaN Input Values"; Bochs's f32_range agrees); both give a NaN for two NaNs. The tables
// keep the NaN instead: t is NaN only for a NaN or infinite θ or a, and β only for a NaN
// or infinite h, and each of those also makes both boundary sines NaN (θ enters every
// sine; a ± h is then NaN or infinite, whose sine is NaN). The one case left, one of
// a − h, a + h beyond float32's range and the other finite, queryTable turns into both
// NaN. So lo and hi are NaN together or not at all, their minimum is NaN in every kernel,
// the inside test counts a NaN sLo·sHi as outside, and Σ d_o, hence the distance, is NaN
// exactly where the Go loops' is. An inside sum alone (fwd4's out[2i+1]) can be a number
// where the Go loop's is NaN, but only beside an outside sum that is NaN. The backward
// pass takes no minimum: its compares and selects send a NaN on as bwdGo does
// (TestDistanceKernelsNaN, TestDistanceNaN). Against the reference: where one boundary
// overflows, the reference's t < β can still find θ inside and give a number, where the
// NaN product here makes it outside and NaN (more NaN, never less).
//
// Where the entity half-angles come from:
//   - evaluation (cand nil: every query against rows 0 … cands−1): a table of the rows,
//     computed once per call (or once for many calls, with PrepareEntities), scored in
//     tiles of evalTile rows kept in L2 while every query passes over them;
//   - training (cand set: each query against its own 1 + k rows, random): computed as
//     needed, per candidate, into a small scratch table in L1. A table of all the rows a
//     batch refers to would be read from memory at 8 bytes per (candidate, dimension),
//     where the angles are 4; recomputing a row for each candidate that refers to it
//     costs less than the extra traffic (measured; the next row is prefetched).
//
// Table layouts (16 lanes = one zmm of dimensions, padded with zeros, which contribute
// exactly 0 to every distance and gradient):
//
//	query  [queries][nblk][8][16]: sin α, cos α, sin α₋, cos α₋, sin α₊, cos α₊, β, λ·G_β
//	entity [rows][nblk][2][16]:    sin u, cos u
//
// with nblk = ⌈dim/16⌉ and G_β = sign(sin(h/2))·cos(h/2) (twice ∂β/∂h).

const (
	lanes     = 16
	qBlock    = 8 * lanes // floats per query block
	eBlock    = 2 * lanes // floats per entity block
	qSinA     = 0
	qCosA     = 16
	qSinLo    = 32
	qCosLo    = 48
	qSinHi    = 64
	qCosHi    = 80
	qBeta     = 96
	qLamGBeta = 112
	// evalTile is the number of entity rows per evaluation job: their table, 64·6.4 KB
	// at d = 800, stays in L2 while every query of the call is scored against it.
	evalTile = 64
	// serialWork is the size (queries·candidates·blocks) below which a call runs on
	// the calling goroutine.
	serialWork = 1 << 10
)

// distKernels are the inner loops of the distance, over tables in the layouts above.
type distKernels struct {
	name string
	// sincos sets out[b*stride+i] = sin(x[b*16+i]/2) and out[b*stride+16+i] =
	// cos(x[b*16+i]/2) for b < nblk, i < 16. If next is not nil, it is the input of a
	// later call: the kernel may prefetch it (rows of a gathered table are scattered in
	// memory, and each row is short enough that the hardware prefetcher barely starts).
	sincos func(x []float32, nblk int, out []float32, stride int, next []float32)
	// fwd4 sets out[2i] = Σ d_o and out[2i+1] = Σ d_i over nblk blocks of the query
	// table q against entity rows e[i], i < 4. Where a NaN meets a number in a min,
	// out[2i+1] may be a number, out[2i] then being NaN (see "NaN" above).
	fwd4 func(q []float32, e *[4][]float32, nblk int, out *[8]float32)
	// bwd adds, for the blocks of query table q and entity row e, with c = ∂L/∂dist / 2:
	// dEnt += c·G_θ, dAxis −= c·G_θ, dHalf += c·G_h (G the gradients times 2), over nblk
	// blocks of 16 dimensions of which the last has only tail (1 … 16) valid. next (or
	// nil) is the dEnt of a later call, to prefetch.
	bwd func(q, e []float32, nblk, tail int, c, lambda float32, dAxis, dHalf, dEnt, next []float32)
}

// queryTable builds the query table of axis, half [queries][dim].
func (be *Backend) queryTable(axis, half []float32, queries, dim int, lambda float32) *buffer {
	nblk := ceilDiv(dim, lanes)
	tab := getBuf(queries * nblk * qBlock)
	const chunk = 16
	run := func(_, job int) {
		xb := getBuf(4 * nblk * lanes)
		defer putBuf(xb)
		n := nblk * lanes
		xa, xlo, xhi, xh := xb.s[:n], xb.s[n:2*n], xb.s[2*n:3*n], xb.s[3*n:4*n]
		clear(xb.s) // zero padding: sin 0 = 0, cos 0 = 1, β = 0, λ·G_β = 0
		for q := job * chunk; q < min(queries, (job+1)*chunk); q++ {
			a, h := axis[q*dim:(q+1)*dim], half[q*dim:(q+1)*dim]
			for j := range a {
				// A boundary beyond float32's range (or NaN) makes the other NaN too,
				// so that the kernels' minimum of lo and hi is NaN (see "NaN"):
				// x − x is +0 for a finite x, NaN otherwise, and y − (+0) is y, −0
				// included. (A test and branch instead cost three times as much.)
				lo, hi := a[j]-h[j], a[j]+h[j]
				lo, hi = lo-(hi-hi), hi-(lo-lo)
				xa[j], xlo[j], xhi[j], xh[j] = a[j], lo, hi, h[j]
			}
			t := tab.s[q*nblk*qBlock : (q+1)*nblk*qBlock]
			be.dk.sincos(xa, nblk, t[qSinA:], qBlock, nil)
			be.dk.sincos(xlo, nblk, t[qSinLo:], qBlock, nil)
			be.dk.sincos(xhi, nblk, t[qSinHi:], qBlock, nil)
			// sin(h/2), cos(h/2) into the β and λ·G_β slots, then transformed.
			be.dk.sincos(xh, nblk, t[qBeta:], qBlock, nil)
			for b := 0; b < nblk; b++ {
				blk := t[b*qBlock : (b+1)*qBlock]
				for i := 0; i < lanes; i++ {
					s, c := blk[qBeta+i], blk[qLamGBeta+i]
					blk[qBeta+i] = abs32(s)
					blk[qLamGBeta+i] = lambda * sign32(s) * c
				}
			}
		}
	}
	if queries*dim < 1<<14 {
		for j := 0; j < ceilDiv(queries, chunk); j++ {
			run(0, j)
		}
	} else {
		be.parallel(ceilDiv(queries, chunk), run)
	}
	return tab
}

// entityTable fills dst [rows][nblk][2][16] with the half-angle sin/cos of ent [rows][dim].
func (be *Backend) entityTable(dst, ent []float32, rows, dim int) {
	stride := ceilDiv(dim, lanes) * eBlock
	const chunk = 64
	run := func(_, job int) {
		for r := job * chunk; r < min(rows, (job+1)*chunk); r++ {
			be.halfAngles(dst[r*stride:(r+1)*stride], ent[r*dim:(r+1)*dim], nil)
		}
	}
	if rows*dim < 1<<14 {
		for j := 0; j < ceilDiv(rows, chunk); j++ {
			run(0, j)
		}
	} else {
		be.parallel(ceilDiv(rows, chunk), run)
	}
}

// halfAngles fills dst [nblk][2][16] with the sin and cos of θ/2 for the angles src;
// next (or nil) is the row that will be done later, to prefetch.
func (be *Backend) halfAngles(dst, src, next []float32) {
	full := len(src) / lanes
	if full > 0 {
		be.dk.sincos(src, full, dst, eBlock, next)
	}
	if rem := len(src) - full*lanes; rem > 0 {
		// The last, partial block: pad with zeros, then zero the padded lanes of both
		// sin and cos, so that they contribute nothing whatever the query.
		var tail [lanes]float32
		copy(tail[:], src[full*lanes:])
		blk := dst[full*eBlock : (full+1)*eBlock]
		be.dk.sincos(tail[:], 1, blk, eBlock, nil)
		clear(blk[rem:lanes])
		clear(blk[lanes+rem : 2*lanes])
	}
}

// entities is where a call's entity half-angles come from: a table [rows][nblk][2][16],
// or, with tab nil, the angles ent [rows][dim] themselves, converted as needed.
type entities struct {
	tab  []float32
	ent  []float32
	rows int
	dim  int
}

// table returns the half-angle table of ent's first rows rows, from the pool.
func (be *Backend) table(ent []float32, rows, dim int) (entities, *buffer) {
	checkLen("distance ent", ent, rows*dim)
	buf := getBuf(rows * ceilDiv(dim, lanes) * eBlock)
	be.entityTable(buf.s, ent, rows, dim)
	return entities{tab: buf.s, rows: rows, dim: dim}, buf
}

// DistanceForward implements compute.Kernels.DistanceForward.
func (be *Backend) DistanceForward(dist, axis, half, ent []float32, cand []int32, queries, cands, dim int, lambda float32) {
	checkDistance(dist, axis, half, cand, queries, cands, dim)
	if queries == 0 || cands == 0 {
		return
	}
	if dim == 0 {
		clear(dist[:queries*cands])
		return
	}
	qt := be.queryTable(axis, half, queries, dim, lambda)
	defer putBuf(qt)
	if cand != nil {
		src := entities{ent: ent, rows: len(ent) / dim, dim: dim}
		be.forward(dist, qt.s, src, checkCand(cand[:queries*cands], src.rows), queries, cands, lambda)
		return
	}
	src, buf := be.table(ent, cands, dim)
	defer putBuf(buf)
	be.forward(dist, qt.s, src, nil, queries, cands, lambda)
}

// forward scores the query table against the entities: cand nil (rows 0 … cands−1,
// src a table) or not.
func (be *Backend) forward(dist, qt []float32, src entities, cand []int32, queries, cands int, lambda float32) {
	nblk := ceilDiv(src.dim, lanes)
	qs, es := nblk*qBlock, nblk*eBlock
	run := func(jobs int, job func(worker, job int)) {
		if queries*cands*nblk < serialWork {
			for j := 0; j < jobs; j++ {
				job(0, j)
			}
			return
		}
		be.parallel(jobs, job)
	}
	row := func(r int) []float32 { return src.tab[r*es : (r+1)*es] }

	if cand == nil {
		// Evaluation: every query against a tile of rows, the tile kept in cache.
		run(ceilDiv(cands, evalTile), func(_, tile int) {
			e0, e1 := tile*evalTile, min(cands, (tile+1)*evalTile)
			var e [4][]float32
			var out [8]float32
			for q := 0; q < queries; q++ {
				qtab := qt[q*qs : (q+1)*qs]
				for k := e0; k < e1; k += 4 {
					n := min(4, e1-k)
					for i := range e {
						e[i] = row(k + min(i, n-1)) // past the end: repeat the last row
					}
					be.dk.fwd4(qtab, &e, nblk, &out)
					for i := 0; i < n; i++ {
						dist[q*cands+k+i] = out[2*i] + lambda*out[2*i+1]
					}
				}
			}
		})
		return
	}

	// Training: each query against its own candidates, four at a time.
	run(queries, func(_, q int) {
		var scratch *buffer
		if src.tab == nil {
			scratch = getBuf(4 * es)
			defer putBuf(scratch)
		}
		c := cand[q*cands : (q+1)*cands]
		qtab := qt[q*qs : (q+1)*qs]
		var e [4][]float32
		var out [8]float32
		for k := 0; k < cands; k += 4 {
			n := min(4, cands-k)
			for i := 0; i < n; i++ {
				r := int(c[k+i])
				if src.tab != nil {
					e[i] = row(r)
					continue
				}
				// The row's half-angles into the scratch table, prefetching the row
				// the same slot will take next.
				var next []float32
				if k+4+i < cands {
					nr := int(c[k+4+i])
					next = src.ent[nr*src.dim : (nr+1)*src.dim]
				}
				e[i] = scratch.s[i*es : (i+1)*es]
				be.halfAngles(e[i], src.ent[r*src.dim:(r+1)*src.dim], next)
			}
			for i := n; i < 4; i++ {
				e[i] = e[n-1]
			}
			be.dk.fwd4(qtab, &e, nblk, &out)
			for i := 0; i < n; i++ {
				dist[q*cands+k+i] = out[2*i] + lambda*out[2*i+1]
			}
		}
	})
}

// DistanceBackward implements compute.Kernels.DistanceBackward.
func (be *Backend) DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, ent []float32, cand []int32, queries, cands, dim int, lambda float32) {
	checkDistance(dDist, axis, half, cand, queries, cands, dim)
	if queries == 0 || cands == 0 || dim == 0 || (dAxis == nil && dHalf == nil && dEnt == nil) {
		return
	}
	qt := be.queryTable(axis, half, queries, dim, lambda)
	defer putBuf(qt)
	if cand != nil {
		src := entities{ent: ent, rows: len(ent) / dim, dim: dim}
		be.backward(dAxis, dHalf, dEnt, dDist, qt.s, src, checkCand(cand[:queries*cands], src.rows), queries, cands, lambda)
		return
	}
	src, buf := be.table(ent, cands, dim)
	defer putBuf(buf)
	be.backward(dAxis, dHalf, dEnt, dDist, qt.s, src, nil, queries, cands, lambda)
}

// backward accumulates the gradients. The work is split by dimension: a job owns the
// blocks b0 … b1−1 of every row of dAxis, dHalf and dEnt, and adds the contributions of
// the (query, candidate) pairs in the reference's order, so no two goroutines write the
// same element and the result does not depend on the split.
func (be *Backend) backward(dAxis, dHalf, dEnt, dDist, qt []float32, src entities, cand []int32, queries, cands int, lambda float32) {
	dim := src.dim
	nblk := ceilDiv(dim, lanes)
	qs, es := nblk*qBlock, nblk*eBlock
	if dAxis != nil {
		checkLen("distance dAxis", dAxis, queries*dim)
	}
	if dHalf != nil {
		checkLen("distance dHalf", dHalf, queries*dim)
	}
	if dEnt != nil {
		rows := cands // the rows the call refers to
		if cand != nil {
			rows = int(slices.Max(cand)) + 1
		}
		checkLen("distance dEnt", dEnt, rows*dim)
	}
	// Two ranges per worker, claimed dynamically, so that a worker slowed down (by a
	// busy core) holds up the others less; at least 8 blocks per range, to amortise the
	// per-pair overhead.
	jobs := min(2*be.nworkers(1<<30), max(1, nblk/8))
	if queries*cands*nblk < serialWork {
		jobs = 1
	}
	job := func(_, job int) {
		b0, b1 := job*nblk/jobs, (job+1)*nblk/jobs
		if b0 == b1 {
			return
		}
		j0, j1 := b0*lanes, min(dim, b1*lanes)
		tail := j1 - (b1-1)*lanes
		var scratch, rowBuf *buffer
		if dAxis == nil || dHalf == nil || dEnt == nil {
			scratch = getBuf(j1 - j0)
			defer putBuf(scratch)
		}
		if src.tab == nil {
			rowBuf = getBuf((b1 - b0) * eBlock)
			defer putBuf(rowBuf)
		}
		// cols returns the job's columns of row r of d (or the scratch when d is nil).
		cols := func(d []float32, r int) []float32 {
			if d == nil {
				return scratch.s
			}
			return d[r*dim+j0 : r*dim+j1]
		}
		for q := 0; q < queries; q++ {
			qtab := qt[q*qs+b0*qBlock : q*qs+b1*qBlock]
			da, dh := cols(dAxis, q), cols(dHalf, q)
			for k := 0; k < cands; k++ {
				g := dDist[q*cands+k]
				if g == 0 {
					continue
				}
				r, next := k, -1 // this pair's row, and the next pair's (to prefetch)
				if cand != nil {
					r = int(cand[q*cands+k])
					if i := q*cands + k + 1; i < len(cand) {
						next = int(cand[i])
					}
				}
				var etab []float32
				if src.tab != nil {
					etab = src.tab[r*es+b0*eBlock : r*es+b1*eBlock]
				} else {
					var pf []float32
					if next >= 0 {
						pf = src.ent[next*dim+j0 : next*dim+j1]
					}
					etab = rowBuf.s
					be.halfAngles(etab, src.ent[r*dim+j0:r*dim+j1], pf)
				}
				var pf []float32
				if next >= 0 && dEnt != nil {
					pf = dEnt[next*dim+j0 : next*dim+j1]
				}
				be.dk.bwd(qtab, etab, b1-b0, tail, g/2, lambda, da, dh, cols(dEnt, r), pf)
			}
		}
	}
	if jobs == 1 {
		job(0, 0)
		return
	}
	be.parallel(jobs, job)
}

// PrepareEntities implements compute.EntityPreparer: it computes the half-angle table of
// ent [rows][dim] once (8·dim bytes per row), for any number of distance calls. It pays
// for evaluation, where every call scores all rows; for a training batch's random
// candidates the plain kernels, which read the angles themselves, are as fast.
func (be *Backend) PrepareEntities(ent []float32, rows, dim int) compute.PreparedEntities[float32] {
	checkLen("prepare ent", ent, rows*dim)
	n := rows * ceilDiv(dim, lanes) * eBlock
	p := &prepared{be: be, src: entities{tab: align64(make([]float32, n+lanes))[:n], rows: rows, dim: dim}}
	if dim > 0 {
		be.entityTable(p.src.tab, ent, rows, dim)
	}
	return p
}

// prepared is the Backend's compute.PreparedEntities.
type prepared struct {
	be  *Backend
	src entities
}

func (p *prepared) Rows() int { return p.src.rows }
func (p *prepared) Dim() int  { return p.src.dim }

// DistanceForward is Backend.DistanceForward against the prepared table.
func (p *prepared) DistanceForward(dist, axis, half []float32, cand []int32, queries, cands int, lambda float32) {
	checkDistance(dist, axis, half, cand, queries, cands, p.src.dim)
	if queries == 0 || cands == 0 {
		return
	}
	if p.src.dim == 0 {
		clear(dist[:queries*cands])
		return
	}
	if cand == nil && cands > p.src.rows {
		panic("cpu: prepared distance: cands exceeds the table's rows")
	}
	if cand != nil {
		cand = checkCand(cand[:queries*cands], p.src.rows)
	}
	qt := p.be.queryTable(axis, half, queries, p.src.dim, lambda)
	defer putBuf(qt)
	p.be.forward(dist, qt.s, p.src, cand, queries, cands, lambda)
}

// DistanceBackward is Backend.DistanceBackward against the prepared table; dEnt is
// [Rows()][Dim()].
func (p *prepared) DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half []float32, cand []int32, queries, cands int, lambda float32) {
	checkDistance(dDist, axis, half, cand, queries, cands, p.src.dim)
	if queries == 0 || cands == 0 || p.src.dim == 0 || (dAxis == nil && dHalf == nil && dEnt == nil) {
		return
	}
	if cand == nil && cands > p.src.rows {
		panic("cpu: prepared distance: cands exceeds the table's rows")
	}
	if cand != nil {
		cand = checkCand(cand[:queries*cands], p.src.rows)
	}
	qt := p.be.queryTable(axis, half, queries, p.src.dim, lambda)
	defer putBuf(qt)
	p.be.backward(dAxis, dHalf, dEnt, dDist, qt.s, p.src, cand, queries, cands, lambda)
}

func checkDistance(dist, axis, half []float32, cand []int32, queries, cands, dim int) {
	checkLen("distance dist", dist, queries*cands)
	checkLen("distance axis", axis, queries*dim)
	checkLen("distance half", half, queries*dim)
	if cand != nil {
		checkLen("distance cand", cand, queries*cands)
	}
}

// checkCand panics unless every candidate is a row in [0, rows); it returns cand.
func checkCand(cand []int32, rows int) []int32 {
	for _, c := range cand {
		if c < 0 || int(c) >= rows {
			panic("cpu: distance: candidate row out of range")
		}
	}
	return cand
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// sign32 is sign(x) with sign(0) = 0 (and sign(NaN) = 0).
func sign32(x float32) float32 {
	switch {
	case x > 0:
		return 1
	case x < 0:
		return -1
	}
	return 0
}
