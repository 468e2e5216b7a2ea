package cpu

// SGEMM, the Goto / BLIS way: C += A·B by a register-blocked micro-kernel.
//
//   - B is packed once per call into micro-panels of nr columns, k-major ([kb][nr]) per
//     kc-block of the reduction dimension, zero-padded past n. Packing absorbs B's
//     layout: x·Wᵀ needs Wᵀ (a transpose: 16×16 blocks in registers with AVX-512),
//     dY·W and dYᵀ·X read rows of W and X. With few rows of C (a training batch is
//     split by query structure, so tens to a few hundred rows), packing a large W
//     costs as much as the multiply: a row-major B is then read in place instead, and
//     the forward computes yᵀ = W·xᵀ (W, row-major, is then A, read in place; the
//     small xᵀ is packed; the tiles of yᵀ are added to y transposed).
//   - A is read in place by the micro-kernel when row-major (X, dY: mr rows, each
//     contiguous in k); only an edge panel of fewer than mr rows is copied into a
//     zero-padded scratch panel. Stored transposed (dYᵀ), it is packed like B, into
//     micro-panels [kb][mr]: read in place, each k step would touch a new page.
//   - The micro-kernel keeps an mr×nr tile of C in registers (12×32 with AVX-512: 24 zmm
//     accumulators; 6×16 with AVX2: 12 ymm) for a whole kc-block: per k step it loads nr
//     values of B and broadcasts mr values of A, mr·nr multiply-adds.
//   - Loops, innermost first: the micro-panels of A in the job's rows (one B micro-panel,
//     kc·nr·4 = 24 KB, stays in L1 while they stream through it from L2), the B
//     micro-panels of the job's columns, then the kc-blocks. A job is a block of C (at
//     most gemmMC × gemmNC); jobs are the parallel unit, packing jobs before them.
//     (For yᵀ = W·xᵀ there is one k-block, and A panels are outer: each W row is read
//     from memory once, the packed xᵀ stays in L2.)
//
// Determinism: a job owns its C tiles, and each C element is C + Σ over kc-blocks (in
// order) of the micro-kernel's in-order sum over the block, whatever the worker count.
// (Which of the paths above a call takes depends on its shape only.)

const (
	gemmKC  = 192 // reduction block: a B micro-panel is kc·nr·4 = 24 KB, half of L1
	gemmMC  = 192 // max rows of C per job (the job's A rows, 192·kc·4 = 144 KB, stay in L2)
	gemmNC  = 512 // max columns of C per job
	gemmMin = 1 << 15

	packPanels = 8 // micro-panels per packing job
	// gemmInPlaceM is the most rows of C for which a row-major B is read in place.
	gemmInPlaceM = 128
	// gemmSmallForward is the most rows for which LinearForward computes yᵀ = W·xᵀ
	// (measured: faster up to 256 rows, even at 512).
	gemmSmallForward = 256
)

// gemmKernel is a micro-kernel: c[i*ldc+j] += Σ_p A(i,p)·b[p*ldb+j] for i < mr,
// j < nr, p < k, with A(i,p) = a[i*lda+p] when rowA, else a[p*lda+i] (b is a packed
// micro-panel when ldb = nr).
type gemmKernel struct {
	name   string
	mr, nr int
	fn     func(k int, a []float32, lda int, rowA bool, b []float32, ldb int, c []float32, ldc int)
}

// mat is a matrix operand: element (i, j) is p[i*ld+j], or p[j*ld+i] when t (stored
// transposed).
type mat struct {
	p  []float32
	ld int
	t  bool
}

// gemm computes C += A·B, C(i, j) = c[i*ldc+j], or c[j*ldc+i] when cT (C stored
// transposed), for i < m, j < n, p < k.
func (be *Backend) gemm(m, n, k int, a, b mat, c []float32, ldc int, cT bool) {
	if m == 0 || n == 0 || k == 0 {
		return
	}
	kern := be.gk
	mr, nr := kern.mr, kern.nr
	parallel := m*n*k >= gemmMin
	run := func(jobs int, fn func(worker, job int)) {
		if parallel {
			be.parallel(jobs, fn)
			return
		}
		for j := 0; j < jobs; j++ {
			fn(0, j)
		}
	}
	// A transposed C goes through the scratch tile, added to C transposed; with one
	// block of the whole reduction dimension that costs one pass over each tile.
	kc := gemmKC
	if cT {
		kc = k
	}

	// Pack B: k-block k0 starts at k0·npad, its micro-panel jp/nr at k0·npad + jp·kb.
	// With few rows of C (m ≤ gemmInPlaceM), each B micro-panel serves only a few A
	// panels, and packing would cost as much as the multiply: a row-major B (W in
	// dX = dY·W) is then read in place, all but its last, partial micro-panel.
	// Pack A, likewise, when it is stored transposed (dYᵀ): read in place, each k step
	// would touch a new page (rows of dY are out·4 bytes apart), a TLB miss per step.
	npad, mpad := roundUp(n, nr), roundUp(m, mr)
	bInPlace := !b.t && m <= gemmInPlaceM
	packFrom := 0 // the first column of B to pack
	if bInPlace {
		packFrom = n / nr * nr
	}
	kBlocks, bJobs, aJobs := ceilDiv(k, kc), ceilDiv((npad-packFrom)/nr, packPanels), 0
	bbuf := getBuf(k * npad)
	defer putBuf(bbuf)
	var apack []float32
	if a.t {
		abuf := getBuf(k * mpad)
		defer putBuf(abuf)
		apack, aJobs = abuf.s, ceilDiv(mpad/mr, packPanels)
	}
	run(kBlocks*(bJobs+aJobs), func(_, job int) {
		k0 := (job / (bJobs + aJobs)) * kc
		kb := min(kc, k-k0)
		if job %= bJobs + aJobs; job < bJobs {
			j0 := packFrom + job*packPanels*nr
			packB(bbuf.s[k0*npad+j0*kb:], b, j0, min(packPanels*nr, n-j0), k0, kb, nr)
			return
		}
		i0 := (job - bJobs) * packPanels * mr
		for ip := i0; ip < min(m, i0+packPanels*mr); ip += mr {
			packA(apack[k0*mpad+ip*kb:], a, ip, min(mr, m-ip), k0, kb, mr)
		}
	})

	// Split C into near-equal blocks, multiples of mr and nr, at most gemmMC × gemmNC;
	// with too few blocks for the workers, cut m finer. Any split gives the same results.
	mBlocks, nBlocks := ceilDiv(m, gemmMC), ceilDiv(n, gemmNC)
	if parallel {
		for w := be.nworkers(1 << 30); mBlocks*nBlocks < 2*w && mBlocks < ceilDiv(m, mr); {
			mBlocks++
		}
	}
	mc := roundUp(ceilDiv(m, mBlocks), mr)
	nc := roundUp(ceilDiv(n, nBlocks), nr)
	mBlocks, nBlocks = ceilDiv(m, mc), ceilDiv(n, nc)

	run(mBlocks*nBlocks, func(_, job int) {
		i0, j0 := (job/nBlocks)*mc, (job%nBlocks)*nc
		mb, nb := min(mc, m-i0), min(nc, n-j0)
		edgeRows := mb % mr // rows of the last, partial A panel (0: none)
		if a.t {
			edgeRows = 0 // packed with zero padding
		}
		var ebuf, tbuf *buffer
		if edgeRows != 0 {
			ebuf = getBuf(mr * kc)
			defer putBuf(ebuf)
		}
		if cT || mb%mr != 0 || nb%nr != 0 {
			tbuf = getBuf(mr * nr)
			defer putBuf(tbuf)
		}
		ni, nj := ceilDiv(mb, mr), ceilDiv(nb, nr)
		for k0 := 0; k0 < k; k0 += kc {
			kb := min(kc, k-k0)
			if edgeRows != 0 {
				packA(ebuf.s, a, i0+mb-edgeRows, edgeRows, k0, kb, mr)
			}
			// Tiles, B micro-panels outer (one stays in L1 while the A panels stream
			// through it); with cT, whose single k-block is too long for L1, A panels
			// outer instead, so that each A row is read from memory once.
			for t := 0; t < ni*nj; t++ {
				ip, jp := (t%ni)*mr, (t/ni)*nr
				if cT {
					ip, jp = (t/nj)*mr, (t%nj)*nr
				}
				bp, ldb := bbuf.s[k0*npad+(j0+jp)*kb:k0*npad+(j0+jp+nr)*kb], nr
				if j0+jp < packFrom {
					bp, ldb = b.p[k0*b.ld+j0+jp:], b.ld
				}
				cols := min(nr, nb-jp)
				rows := min(mr, mb-ip)
				// The A panel: in place, or packed.
				var ap []float32
				lda, rowA := mr, false
				switch {
				case a.t:
					ap = apack[k0*mpad+(i0+ip)*kb : k0*mpad+(i0+ip+mr)*kb]
				case rows < mr:
					ap = ebuf.s[:kb*mr]
				default:
					ap, lda, rowA = a.p[(i0+ip)*a.ld+k0:], a.ld, true
				}
				if !cT && rows == mr && cols == nr {
					kern.fn(kb, ap, lda, rowA, bp, ldb, c[(i0+ip)*ldc+j0+jp:], ldc)
					continue
				}
				// Edge or transposed tile: compute into a zeroed scratch tile, then add
				// the valid part. The sum is the same as in place: C + (0 + Σ) = C + Σ.
				tmp := tbuf.s
				clear(tmp)
				kern.fn(kb, ap, lda, rowA, bp, ldb, tmp, nr)
				for i := 0; i < rows; i++ {
					ti := tmp[i*nr : i*nr+cols]
					if cT {
						for j, v := range ti {
							c[(j0+jp+j)*ldc+i0+ip+i] += v
						}
						continue
					}
					ci := c[(i0+ip+i)*ldc+j0+jp : (i0+ip+i)*ldc+j0+jp+cols]
					for j, v := range ti {
						ci[j] += v
					}
				}
			}
		}
	})
}

// packA packs rows i0 … i0+mb−1 (mb ≤ mr), columns k0 … k0+kb−1 of A into one
// micro-panel [kb][mr], rows past mb zero.
func packA(dst []float32, a mat, i0, mb, k0, kb, mr int) {
	d := dst[:kb*mr]
	if a.t {
		// A(i, p) = a.p[p*ld+i]: each k step is a contiguous run of rows.
		if mb == 12 && mr == 12 { // the AVX-512 kernel's full panels: fixed-size copies
			for p := 0; p < kb; p++ {
				o := (k0+p)*a.ld + i0
				*(*[12]float32)(d[p*12 : p*12+12]) = [12]float32(a.p[o : o+12])
			}
			return
		}
		for p := 0; p < kb; p++ {
			dp := d[p*mr : p*mr+mr]
			copy(dp, a.p[(k0+p)*a.ld+i0:(k0+p)*a.ld+i0+mb])
			clear(dp[mb:])
		}
		return
	}
	clear(d)
	for i := 0; i < mb; i++ {
		for p, v := range a.p[(i0+i)*a.ld+k0 : (i0+i)*a.ld+k0+kb] {
			d[p*mr+i] = v
		}
	}
}

// transpose16, when not nil, packs the transpose of n 16×16 blocks into a 32-wide B
// panel: dst[(16c+p)*32 + j] = src[j*lds + 16c + p] for c < n, j, p < 16.
var transpose16 func(src []float32, lds int, dst []float32, n int)

// packB packs rows k0 … k0+kb−1, columns j0 … j0+nb−1 of B into micro-panels of nr
// columns, each [kb][nr], columns past nb zero.
func packB(dst []float32, b mat, j0, nb, k0, kb, nr int) {
	for jp := 0; jp < nb; jp += nr {
		d := dst[jp*kb : (jp+nr)*kb]
		cols := min(nr, nb-jp)
		if !b.t {
			if cols == 32 && nr == 32 { // the AVX-512 kernel's full panels
				for p := 0; p < kb; p++ {
					o := (k0+p)*b.ld + j0 + jp
					*(*[32]float32)(d[p*32 : p*32+32]) = [32]float32(b.p[o : o+32])
				}
				continue
			}
			for p := 0; p < kb; p++ {
				src := b.p[(k0+p)*b.ld+j0+jp:]
				dp := d[p*nr : p*nr+nr]
				copy(dp, src[:cols])
				clear(dp[cols:])
			}
			continue
		}
		// B(p, j) = b.p[j*ld+p]: each column is a contiguous run of k. With AVX-512,
		// 16×16 blocks are transposed in registers; the rest four columns at a time, so
		// that each k step writes four adjacent values.
		j := 0
		if nr == 32 && transpose16 != nil {
			n16 := kb / 16
			for ; j+16 <= cols; j += 16 {
				o := (j0+jp+j)*b.ld + k0
				transpose16(b.p[o:], b.ld, d[j:], n16)
				for p := 16 * n16; p < kb; p++ {
					for jj := 0; jj < 16; jj++ {
						d[p*nr+j+jj] = b.p[o+jj*b.ld+p]
					}
				}
			}
		}
		for ; j+4 <= cols; j += 4 {
			o := (j0+jp+j)*b.ld + k0
			s0 := b.p[o : o+kb]
			s1 := b.p[o+b.ld : o+b.ld+kb][:len(s0)]
			s2 := b.p[o+2*b.ld : o+2*b.ld+kb][:len(s0)]
			s3 := b.p[o+3*b.ld : o+3*b.ld+kb][:len(s0)]
			for p := range s0 {
				dp := d[p*nr+j : p*nr+j+4 : p*nr+j+4]
				dp[0], dp[1], dp[2], dp[3] = s0[p], s1[p], s2[p], s3[p]
			}
		}
		for ; j < cols; j++ {
			src := b.p[(j0+jp+j)*b.ld+k0 : (j0+jp+j)*b.ld+k0+kb]
			for p, v := range src {
				d[p*nr+j] = v
			}
		}
		for j := cols; j < nr; j++ {
			for p := 0; p < kb; p++ {
				d[p*nr+j] = 0
			}
		}
	}
}

// LinearForward implements compute.Kernels.LinearForward: y = x·Wᵀ + b.
func (be *Backend) LinearForward(y, x, w, b []float32, rows, in, out int) {
	checkLen("linear y", y, rows*out)
	checkLen("linear x", x, rows*in)
	checkLen("linear w", w, out*in)
	if b != nil {
		checkLen("linear b", b, out)
	}
	y = y[:rows*out]
	if b == nil {
		clear(y)
	} else {
		for r := 0; r < rows; r++ {
			copy(y[r*out:(r+1)*out], b[:out])
		}
	}
	if rows <= gemmSmallForward {
		// Few rows: packing the (large) Wᵀ would cost more than the multiply. Compute
		// yᵀ = W·xᵀ instead: A = W read in place, B(i, r) = x[r][i] packed (small),
		// C(o, r) = y[r][o] stored transposed.
		be.gemm(out, rows, in, mat{w, in, false}, mat{x, in, true}, y, out, true)
		return
	}
	// C = y [rows][out], A = x [rows][in], B(i, o) = w[o][i]: W stored transposed.
	be.gemm(rows, out, in, mat{x, in, false}, mat{w, in, true}, y, out, false)
}

// LinearBackward implements compute.Kernels.LinearBackward:
// dx += dy·W, dw += dyᵀ·x, db += Σ_r dy[r].
func (be *Backend) LinearBackward(dx, dw, db, dy, x, w []float32, rows, in, out int) {
	checkLen("linear dy", dy, rows*out)
	checkLen("linear x", x, rows*in)
	checkLen("linear w", w, out*in)
	checkLen("linear dw", dw, out*in)
	if dx != nil {
		checkLen("linear dx", dx, rows*in)
		// C = dx [rows][in], A = dy [rows][out], B = w [out][in].
		be.gemm(rows, in, out, mat{dy, out, false}, mat{w, in, false}, dx, in, false)
	}
	// C = dw [out][in], A(o, r) = dy[r][o]: dy stored transposed, B = x [rows][in].
	be.gemm(out, in, rows, mat{dy, out, true}, mat{x, in, false}, dw, in, false)
	if db != nil {
		checkLen("linear db", db, out)
		// Columns of db are independent: split them, and sum each over rows in order.
		const chunk = 256
		body := func(_, job int) {
			o0, o1 := job*chunk, min(out, (job+1)*chunk)
			for r := 0; r < rows; r++ {
				src := dy[r*out+o0 : r*out+o1]
				d := db[o0:o1]
				for o, g := range src {
					d[o] += g
				}
			}
		}
		if rows*out < gemmMin {
			for j := 0; j < ceilDiv(out, chunk); j++ {
				body(0, j)
			}
		} else {
			be.parallel(ceilDiv(out, chunk), body)
		}
	}
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
func roundUp(a, b int) int { return ceilDiv(a, b) * b }

func checkLen[T any](name string, s []T, n int) {
	if len(s) < n {
		panic("cpu: " + name + ": slice too short")
	}
}
