package cpu

import (
	"math"

	"github.com/rocone/rocone/pkg/compute"
)

// The cone distance (model.md §7; compute/distance.go) without transcendental calls in
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
// Ties: with a dropped-out aperture h = 0 exactly, α₋ = α₊ = α, so lo and hi come from
// the same table entries and tie exactly, and the gradient splits as in the reference.
//
// Table layouts (16 lanes = one zmm of dimensions, padded with zeros, which contribute
// exactly 0 to every distance and gradient):
//
//	query  [queries][nblk][8][16]: sin α, cos α, sin α₋, cos α₋, sin α₊, cos α₊, β, λ·G_β
//	entity [rows][nblk][2][16]:    sin u, cos u
//
// with nblk = ⌈dim/16⌉ and G_β = sign(sin(h/2))·cos(h/2) (twice ∂β/∂h).

var evalTile, evalChunk = 64, 16

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
)

// distKernels are the inner loops of the distance, over tables in the layouts above.
type distKernels struct {
	name string
	// sincos sets out[b*stride+i] = sin(x[b*16+i]/2) and out[b*stride+16+i] =
	// cos(x[b*16+i]/2) for b < nblk, i < 16.
	sincos func(x []float32, nblk int, out []float32, stride int)
	// fwd4 sets out[2i] = Σ d_o and out[2i+1] = Σ d_i over nblk blocks of the query
	// table q against entity rows e[i], i < 4.
	fwd4 func(q []float32, e *[4][]float32, nblk int, out *[8]float32)
	// bwd adds, for the blocks of query table q and entity row e, with c = ∂L/∂dist / 2:
	// dEnt += c·G_θ, dAxis −= c·G_θ, dHalf += c·G_h (G the gradients times 2), over nblk
	// blocks of 16 dimensions of which the last has only tail (1 … 16) valid.
	bwd func(q, e []float32, nblk, tail int, c, lambda float32, dAxis, dHalf, dEnt []float32)
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
		clear(xb.s) // zero padding: sin 0 = 0, cos 0 = 1, β = 0, G_β·λ = 0
		for q := job * chunk; q < min(queries, (job+1)*chunk); q++ {
			a, h := axis[q*dim:(q+1)*dim], half[q*dim:(q+1)*dim]
			for j := range a {
				xa[j], xlo[j], xhi[j], xh[j] = a[j], a[j]-h[j], a[j]+h[j], h[j]
			}
			t := tab.s[q*nblk*qBlock : (q+1)*nblk*qBlock]
			be.dk.sincos(xa, nblk, t[qSinA:], qBlock)
			be.dk.sincos(xlo, nblk, t[qSinLo:], qBlock)
			be.dk.sincos(xhi, nblk, t[qSinHi:], qBlock)
			// sin(h/2), cos(h/2) into the β and λG_β slots, then transformed.
			be.dk.sincos(xh, nblk, t[qBeta:], qBlock)
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

// entityRows fills dst [len(rows)][nblk][2][16] with the half-angle sin/cos of
// ent[rows[i]] (rows nil: rows 0 … n−1).
func (be *Backend) entityRows(dst, ent []float32, rows []int32, n, dim int) {
	nblk := ceilDiv(dim, lanes)
	stride := nblk * eBlock
	const chunk = 64
	run := func(_, job int) {
		var tail *buffer
		if dim%lanes != 0 {
			tail = getBuf(lanes)
			defer putBuf(tail)
		}
		full := dim / lanes
		for i := job * chunk; i < min(n, (job+1)*chunk); i++ {
			r := i
			if rows != nil {
				r = int(rows[i])
			}
			src := ent[r*dim : (r+1)*dim]
			d := dst[i*stride : (i+1)*stride]
			if full > 0 {
				be.dk.sincos(src, full, d, eBlock)
			}
			if tail != nil {
				// The last, partial block: pad with zeros, then zero the padded lanes of
				// both sin and cos, so that they contribute nothing whatever the query.
				rem := dim - full*lanes
				copy(tail.s, src[full*lanes:])
				clear(tail.s[rem:])
				blk := d[full*eBlock:]
				be.dk.sincos(tail.s, 1, blk, eBlock)
				clear(blk[rem:lanes])
				clear(blk[lanes+rem : 2*lanes])
			}
		}
	}
	if n*dim < 1<<14 {
		for j := 0; j < ceilDiv(n, chunk); j++ {
			run(0, j)
		}
	} else {
		be.parallel(ceilDiv(n, chunk), run)
	}
}

// entityTable is a half-angle table and how candidates map to its rows.
type entityTable struct {
	tab  []float32
	nblk int
	// cand is the call's cand mapped to table rows; nil when the call's cand is nil
	// (candidate k is table row k).
	cand []int32
}

// tableFor builds the table of the entity rows a call refers to: rows 0 … cands−1 when
// cand is nil, else the distinct rows of cand, in order of first appearance (a training
// batch refers to each row several times, and to few of a large table).
func (be *Backend) tableFor(ent []float32, cand []int32, cands, dim int) (entityTable, *buffer) {
	nblk := ceilDiv(dim, lanes)
	if cand == nil {
		checkLen("distance ent", ent, cands*dim)
		buf := getBuf(cands * nblk * eBlock)
		be.entityRows(buf.s, ent, nil, cands, dim)
		return entityTable{tab: buf.s, nblk: nblk}, buf
	}
	rows := len(ent) / dim
	slot := make([]int32, rows)
	for i := range slot {
		slot[i] = -1
	}
	var uniq []int32
	remapped := make([]int32, len(cand))
	for i, c := range cand {
		if c < 0 || int(c) >= rows {
			panic("cpu: distance: candidate row out of range")
		}
		if slot[c] < 0 {
			slot[c] = int32(len(uniq))
			uniq = append(uniq, c)
		}
		remapped[i] = slot[c]
	}
	buf := getBuf(len(uniq) * nblk * eBlock)
	be.entityRows(buf.s, ent, uniq, len(uniq), dim)
	return entityTable{tab: buf.s, nblk: nblk, cand: remapped}, buf
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
	if cand != nil {
		cand = cand[:queries*cands]
	}
	et, buf := be.tableFor(ent, cand, cands, dim)
	defer putBuf(buf)
	qt := be.queryTable(axis, half, queries, dim, lambda)
	defer putBuf(qt)
	be.forward(dist, qt.s, et, queries, cands, lambda)
}

// forward scores the query table against the entity table.
func (be *Backend) forward(dist, qt []float32, et entityTable, queries, cands int, lambda float32) {
	nblk := et.nblk
	qs, es := nblk*qBlock, nblk*eBlock
	erow := func(r int32) []float32 { return et.tab[int(r)*es : int(r+1)*es] }
	// score writes dist[q][k0 … k0+n−1] (n ≤ 4) for table rows rows[0 … n−1].
	score := func(q, k0, n int, rows *[4]int32) {
		var e [4][]float32
		for i := range e {
			e[i] = erow(rows[min(i, n-1)])
		}
		var out [8]float32
		be.dk.fwd4(qt[q*qs:(q+1)*qs], &e, nblk, &out)
		for i := 0; i < n; i++ {
			dist[q*cands+k0+i] = out[2*i] + lambda*out[2*i+1]
		}
	}
	if et.cand == nil {
		// Evaluation: every query against a tile of rows, the tile kept in cache.
		tiles := ceilDiv(cands, evalTile)
		job := func(_, tile int) {
			e0, e1 := tile*evalTile, min(cands, (tile+1)*evalTile)
			nt := e1 - e0
			pb := getBuf(queries * nt * 2)
			defer putBuf(pb)
			part := pb.s
			clear(part)
			var e [4][]float32
			var out [8]float32
			for c0 := 0; c0 < nblk; c0 += evalChunk {
				nc := min(evalChunk, nblk-c0)
				for q := 0; q < queries; q++ {
					qtab := qt[q*qs+c0*qBlock : q*qs+(c0+nc)*qBlock]
					pq := part[q*nt*2 : (q+1)*nt*2]
					for k := e0; k < e1; k += 4 {
						n := min(4, e1-k)
						for i := range e {
							r := k + min(i, n-1)
							e[i] = et.tab[r*es+c0*eBlock : r*es+(c0+nc)*eBlock]
						}
						be.dk.fwd4(qtab, &e, nc, &out)
						for i := 0; i < n; i++ {
							pq[2*(k-e0+i)] += out[2*i]
							pq[2*(k-e0+i)+1] += out[2*i+1]
						}
					}
				}
			}
			for q := 0; q < queries; q++ {
				for i := 0; i < nt; i++ {
					dist[q*cands+e0+i] = part[(q*nt+i)*2] + lambda*part[(q*nt+i)*2+1]
				}
			}
		}
		if queries*cands*nblk < 1<<10 {
			for t := 0; t < tiles; t++ {
				job(0, t)
			}
			return
		}
		be.parallel(tiles, job)
		return
	}
	job := func(_, q int) {
		c := et.cand[q*cands : (q+1)*cands]
		for k := 0; k < cands; k += 4 {
			var rows [4]int32
			n := copy(rows[:], c[k:])
			score(q, k, n, &rows)
		}
	}
	if queries*cands*nblk < 1<<10 {
		for q := 0; q < queries; q++ {
			job(0, q)
		}
		return
	}
	be.parallel(queries, job)
}

// DistanceBackward implements compute.Kernels.DistanceBackward.
func (be *Backend) DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half, ent []float32, cand []int32, queries, cands, dim int, lambda float32) {
	checkDistance(dDist, axis, half, cand, queries, cands, dim)
	if queries == 0 || cands == 0 || dim == 0 || (dAxis == nil && dHalf == nil && dEnt == nil) {
		return
	}
	if cand != nil {
		cand = cand[:queries*cands]
	}
	et, buf := be.tableFor(ent, cand, cands, dim)
	defer putBuf(buf)
	qt := be.queryTable(axis, half, queries, dim, lambda)
	defer putBuf(qt)
	be.backward(dAxis, dHalf, dEnt, dDist, qt.s, et, cand, queries, cands, dim, lambda)
}

// backward accumulates the gradients. The work is split by dimension: a job owns the
// blocks b0 … b1−1 of every row of dAxis, dHalf and dEnt, and adds the contributions of
// the (query, candidate) pairs in the reference's order, so no two goroutines write the
// same element and the result does not depend on the split.
func (be *Backend) backward(dAxis, dHalf, dEnt, dDist, qt []float32, et entityTable, cand []int32, queries, cands, dim int, lambda float32) {
	nblk := et.nblk
	qs, es := nblk*qBlock, nblk*eBlock
	if dAxis != nil {
		checkLen("distance dAxis", dAxis, queries*dim)
	}
	if dHalf != nil {
		checkLen("distance dHalf", dHalf, queries*dim)
	}
	jobs := be.nworkers(nblk)
	if queries*cands*nblk < 1<<10 {
		jobs = 1
	}
	job := func(_, job int) {
		b0, b1 := job*nblk/jobs, (job+1)*nblk/jobs
		if b0 == b1 {
			return
		}
		j0, j1 := b0*lanes, min(dim, b1*lanes)
		tail := j1 - (b1-1)*lanes
		var scratch *buffer
		if dAxis == nil || dHalf == nil || dEnt == nil {
			scratch = getBuf(j1 - j0)
			defer putBuf(scratch)
		}
		pick := func(d []float32, row int) []float32 {
			if d == nil {
				return scratch.s
			}
			return d[row*dim+j0 : row*dim+j1]
		}
		for q := 0; q < queries; q++ {
			qtab := qt[q*qs+b0*qBlock : q*qs+b1*qBlock]
			da, dh := pick(dAxis, q), pick(dHalf, q)
			for k := 0; k < cands; k++ {
				g := dDist[q*cands+k]
				if g == 0 {
					continue
				}
				row, trow := k, k
				if cand != nil {
					row, trow = int(cand[q*cands+k]), int(et.cand[q*cands+k])
				}
				if dEnt != nil {
					checkLen("distance dEnt", dEnt, (row+1)*dim)
				}
				etab := et.tab[trow*es+b0*eBlock : trow*es+b1*eBlock]
				be.dk.bwd(qtab, etab, b1-b0, tail, g/2, lambda, da, dh, pick(dEnt, row))
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
// ent [rows][dim] once, for any number of distance calls.
func (be *Backend) PrepareEntities(ent []float32, rows, dim int) compute.PreparedEntities[float32] {
	checkLen("prepare ent", ent, rows*dim)
	nblk := ceilDiv(dim, lanes)
	p := &prepared{be: be, rows: rows, dim: dim, tab: make([]float32, rows*nblk*eBlock+lanes)}
	p.tab = align64(p.tab)[:rows*nblk*eBlock]
	if dim > 0 {
		be.entityRows(p.tab, ent, nil, rows, dim)
	}
	return p
}

// prepared is the Backend's compute.PreparedEntities.
type prepared struct {
	be        *Backend
	rows, dim int
	tab       []float32
}

func (p *prepared) Rows() int { return p.rows }
func (p *prepared) Dim() int  { return p.dim }

func (p *prepared) table(cand []int32, queries, cands int) entityTable {
	if cand == nil {
		if cands > p.rows {
			panic("cpu: prepared distance: cands exceeds the table's rows")
		}
		return entityTable{tab: p.tab, nblk: ceilDiv(p.dim, lanes)}
	}
	cand = cand[:queries*cands]
	for _, c := range cand {
		if c < 0 || int(c) >= p.rows {
			panic("cpu: prepared distance: candidate row out of range")
		}
	}
	return entityTable{tab: p.tab, nblk: ceilDiv(p.dim, lanes), cand: cand}
}

// DistanceForward is Backend.DistanceForward against the prepared table.
func (p *prepared) DistanceForward(dist, axis, half []float32, cand []int32, queries, cands int, lambda float32) {
	checkDistance(dist, axis, half, cand, queries, cands, p.dim)
	if queries == 0 || cands == 0 {
		return
	}
	if p.dim == 0 {
		clear(dist[:queries*cands])
		return
	}
	et := p.table(cand, queries, cands)
	qt := p.be.queryTable(axis, half, queries, p.dim, lambda)
	defer putBuf(qt)
	p.be.forward(dist, qt.s, et, queries, cands, lambda)
}

// DistanceBackward is Backend.DistanceBackward against the prepared table; dEnt is
// [Rows()][Dim()].
func (p *prepared) DistanceBackward(dAxis, dHalf, dEnt, dDist, axis, half []float32, cand []int32, queries, cands int, lambda float32) {
	checkDistance(dDist, axis, half, cand, queries, cands, p.dim)
	if queries == 0 || cands == 0 || p.dim == 0 || (dAxis == nil && dHalf == nil && dEnt == nil) {
		return
	}
	et := p.table(cand, queries, cands)
	qt := p.be.queryTable(axis, half, queries, p.dim, lambda)
	defer putBuf(qt)
	p.be.backward(dAxis, dHalf, dEnt, dDist, qt.s, et, et.cand, queries, cands, p.dim, lambda)
}

func checkDistance(dist, axis, half []float32, cand []int32, queries, cands, dim int) {
	checkLen("distance dist", dist, queries*cands)
	checkLen("distance axis", axis, queries*dim)
	checkLen("distance half", half, queries*dim)
	if cand != nil {
		checkLen("distance cand", cand, queries*cands)
	}
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
