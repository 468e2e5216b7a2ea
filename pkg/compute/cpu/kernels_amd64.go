package cpu

import "golang.org/x/sys/cpu"

// Assembly kernels (gemm_amd64.s, distance_amd64.s, distance_avx2_amd64.s). Each takes raw pointers; the Go
// wrappers below check the slice lengths first, so the assembly never reads or writes
// outside the slices it was given.

//go:noescape
func gemm12x32ColAAVX512(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)

//go:noescape
func gemm12x32RowAAVX512(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)

//go:noescape
func gemm6x16ColAAVX2(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)

//go:noescape
func gemm6x16RowAAVX2(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)

//go:noescape
func transpose16AVX512(src *float32, lds int, dst *float32, n int)

// hasAVX512 reports the AVX-512 subsets the kernels use (F for everything, DQ for
// VRANGEPS and VANDPS on zmm), with the OS saving zmm state (x/sys/cpu checks XCR0).
var hasAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ

var hasAVX2FMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

var (
	avx512GEMM = gemmKernel{name: "avx512 12x32", mr: 12, nr: 32, fn: asmKernel(gemm12x32ColAAVX512, gemm12x32RowAAVX512, 12, 32)}
	avx2GEMM   = gemmKernel{name: "avx2 6x16", mr: 6, nr: 16, fn: asmKernel(gemm6x16ColAAVX2, gemm6x16RowAAVX2, 6, 16)}
)

func init() {
	if hasAVX512 {
		transpose16 = transpose16Asm
	}
}

// transpose16Asm is transpose16AVX512 with the bounds checks of its operands.
func transpose16Asm(src []float32, lds int, dst []float32, n int) {
	if n <= 0 {
		return
	}
	_, _ = src[15*lds+16*n-1], dst[(16*n-1)*32+15]
	transpose16AVX512(&src[0], lds, &dst[0], n)
}

func asmGEMM() (gemmKernel, bool) {
	switch {
	case hasAVX512:
		return avx512GEMM, true
	case hasAVX2FMA:
		return avx2GEMM, true
	}
	return gemmKernel{}, false
}

// asmKernel wraps the two assembly variants of a micro-kernel with the bounds checks of
// their operands.
func asmKernel(colA, rowA func(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int), mr, nr int) func(k int, a []float32, lda int, rowMajor bool, b []float32, ldb int, c []float32, ldc int) {
	return func(k int, a []float32, lda int, rowMajor bool, b []float32, ldb int, c []float32, ldc int) {
		if k <= 0 {
			return
		}
		_, _ = b[(k-1)*ldb+nr-1], c[(mr-1)*ldc+nr-1]
		if rowMajor {
			_ = a[(mr-1)*lda+k-1]
			rowA(k, &a[0], lda, &b[0], ldb, &c[0], ldc)
			return
		}
		_ = a[(k-1)*lda+mr-1]
		colA(k, &a[0], lda, &b[0], ldb, &c[0], ldc)
	}
}

//go:noescape
func sincosHalfAVX512(x *float32, nblk int, out *float32, stride int, next *float32) (bad int)

//go:noescape
func distFwd4AVX512(q, e0, e1, e2, e3 *float32, nblk int, out *[8]float32)

//go:noescape
func distBwdAVX512(q, e *float32, nblk, tailMask int, c, lambda float32, dAxis, dHalf, dEnt, next *float32)

var avx512Dist = distKernels{name: "avx512", sincos: sincosWith(sincosHalfAVX512), fwd4: fwd4AVX512, bwd: bwdAVX512}

//go:noescape
func sincosHalfAVX2(x *float32, nblk int, out *float32, stride int, next *float32) (bad int)

//go:noescape
func distFwd2AVX2(q, e0, e1 *float32, nblk int, out *[4]float32)

//go:noescape
func distBwdAVX2(q, e *float32, nblk int, c, lambda float32, dAxis, dHalf, dEnt, next *float32, tail *[16]int32)

// avx2Dist is avx512Dist for CPUs with AVX2 and FMA but not AVX-512, with its results.
var avx2Dist = distKernels{name: "avx2", sincos: sincosWith(sincosHalfAVX2), fwd4: fwd4AVX2, bwd: bwdAVX2}

func asmDist() (distKernels, bool) {
	switch {
	case hasAVX512:
		return avx512Dist, true
	case hasAVX2FMA:
		return avx2Dist, true
	}
	return distKernels{}, false
}

// sincosWith wraps an assembly sine/cosine loop with the bounds checks of its operands.
func sincosWith(loop func(x *float32, nblk int, out *float32, stride int, next *float32) (bad int)) func(x []float32, nblk int, out []float32, stride int, next []float32) {
	return func(x []float32, nblk int, out []float32, stride int, next []float32) {
		if nblk <= 0 {
			return
		}
		_, _ = x[nblk*lanes-1], out[(nblk-1)*stride+2*lanes-1]
		pf := &x[0] // prefetching is only a hint: it never faults, even past next's end
		if len(next) > 0 {
			pf = &next[0]
		}
		if loop(&x[0], nblk, &out[0], stride, pf) != 0 {
			// Some |x/2| is beyond the reduction's range (never for model angles), or NaN:
			// redo the call in Go, which uses math.Sincos there.
			sincosGo(x, nblk, out, stride, nil)
		}
	}
}

// checkFwd4 checks the operands of a forward kernel; false: no block to score.
func checkFwd4(q []float32, e *[4][]float32, nblk int, out *[8]float32) bool {
	if nblk <= 0 {
		*out = [8]float32{}
		return false
	}
	_ = q[nblk*qBlock-1]
	for _, r := range e {
		_ = r[nblk*eBlock-1]
	}
	return true
}

func fwd4AVX512(q []float32, e *[4][]float32, nblk int, out *[8]float32) {
	if checkFwd4(q, e, nblk, out) {
		distFwd4AVX512(&q[0], &e[0][0], &e[1][0], &e[2][0], &e[3][0], nblk, out)
	}
}

func fwd4AVX2(q []float32, e *[4][]float32, nblk int, out *[8]float32) {
	if !checkFwd4(q, e, nblk, out) {
		return
	}
	var o [2][4]float32
	distFwd2AVX2(&q[0], &e[0][0], &e[1][0], nblk, &o[0])
	distFwd2AVX2(&q[0], &e[2][0], &e[3][0], nblk, &o[1])
	copy(out[:4], o[0][:])
	copy(out[4:], o[1][:])
}

// checkBwd checks the operands of a backward kernel and returns what to prefetch; nil: no
// block.
func checkBwd(q, e []float32, nblk, tail int, dAxis, dHalf, dEnt, next []float32) *float32 {
	if nblk <= 0 {
		return nil
	}
	if tail < 1 || tail > lanes {
		panic("cpu: distance backward: bad tail")
	}
	n := (nblk-1)*lanes + tail
	_, _ = q[nblk*qBlock-1], e[nblk*eBlock-1]
	_, _, _ = dAxis[n-1], dHalf[n-1], dEnt[n-1]
	if len(next) > 0 {
		return &next[0]
	}
	return &dEnt[0] // a prefetch never faults, even past next's end
}

func bwdAVX512(q, e []float32, nblk, tail int, c, lambda float32, dAxis, dHalf, dEnt, next []float32) {
	if pf := checkBwd(q, e, nblk, tail, dAxis, dHalf, dEnt, next); pf != nil {
		distBwdAVX512(&q[0], &e[0], nblk, 1<<tail-1, c, lambda, &dAxis[0], &dHalf[0], &dEnt[0], pf)
	}
}

func bwdAVX2(q, e []float32, nblk, tail int, c, lambda float32, dAxis, dHalf, dEnt, next []float32) {
	pf := checkBwd(q, e, nblk, tail, dAxis, dHalf, dEnt, next)
	if pf == nil {
		return
	}
	var mask [16]int32 // the last block's lanes to read and write: −1
	for i := range tail {
		mask[i] = -1
	}
	distBwdAVX2(&q[0], &e[0], nblk, c, lambda, &dAxis[0], &dHalf[0], &dEnt[0], pf, &mask)
}
