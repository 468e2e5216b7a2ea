#include "textflag.h"

// SGEMM micro-kernels (see gemm.go): C[mr][nr] (row stride ldc floats) += A·B over k
// steps. B(p, ·) is the nr floats at b[p*ldb] (a packed micro-panel [k][nr] has ldb =
// nr; a row-major B read in place has its row length); A is read in place, in one of
// two layouts:
//
//   ColA: A(i, p) = a[p*lda + i]: each k step is a contiguous run of mr values (a packed
//         A panel has lda = mr; dYᵀ in dW = dYᵀ·X has lda = the row length of dY).
//   RowA: A(i, p) = a[i*lda + p]: mr rows, each contiguous in k (X in Y = X·Wᵀ).
//
// The C tile lives in registers for the whole k loop. Per k step the kernel loads one row
// of B (nr floats) and broadcasts the mr values A(·, p), then does one FMA per (row,
// vector of B). Each accumulator is a running sum over p in order (FMA: one rounding per
// step), added to C at the end, so the result does not depend on where the tile lies.

// ROW512 broadcasts the A value at addr and accumulates it times the B row (Z0, Z1) into
// acc0, acc1.
#define ROW512(addr, bc, acc0, acc1) \
	VBROADCASTSS addr, bc \
	VFMADD231PS  Z0, bc, acc0 \
	VFMADD231PS  Z1, bc, acc1

// STORE512 adds acc0, acc1 into the row of C at DX, then steps DX by ldc (BX bytes).
#define STORE512(acc0, acc1) \
	VADDPS  (DX), acc0, acc0 \
	VMOVUPS acc0, (DX) \
	VADDPS  64(DX), acc1, acc1 \
	VMOVUPS acc1, 64(DX) \
	ADDQ    BX, DX

// PREFETCHC512 prefetches the 12 rows of the C tile (2 cache lines each, at DX with
// stride BX) into L1 while the k loop runs, so that the final read-modify-write does not
// wait on memory. It leaves DX unchanged (R13 walks the rows).
#define PREFETCHC512 \
	MOVQ DX, R13 \
	PREFETCHT0 (R13) \
	PREFETCHT0 64(R13) \
	ADDQ BX, R13 \
	PREFETCHT0 (R13) \
	PREFETCHT0 64(R13) \
	ADDQ BX, R13 \
	PREFETCHT0 (R13) \
	PREFETCHT0 64(R13) \
	ADDQ BX, R13 \
	PREFETCHT0 (R13) \
	PREFETCHT0 64(R13) \
	ADDQ BX, R13 \
	PREFETCHT0 (R13) \
	PREFETCHT0 64(R13) \
	ADDQ BX, R13 \
	PREFETCHT0 (R13) \
	PREFETCHT0 64(R13) \
	ADDQ BX, R13 \
	PREFETCHT0 (R13) \
	PREFETCHT0 64(R13) \
	ADDQ BX, R13 \
	PREFETCHT0 (R13) \
	PREFETCHT0 64(R13) \
	ADDQ BX, R13 \
	PREFETCHT0 (R13) \
	PREFETCHT0 64(R13) \
	ADDQ BX, R13 \
	PREFETCHT0 (R13) \
	PREFETCHT0 64(R13) \
	ADDQ BX, R13 \
	PREFETCHT0 (R13) \
	PREFETCHT0 64(R13) \
	ADDQ BX, R13 \
	PREFETCHT0 (R13) \
	PREFETCHT0 64(R13)

#define ZERO512 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11 \
	VPXORD Z12, Z12, Z12 \
	VPXORD Z13, Z13, Z13 \
	VPXORD Z14, Z14, Z14 \
	VPXORD Z15, Z15, Z15 \
	VPXORD Z16, Z16, Z16 \
	VPXORD Z17, Z17, Z17 \
	VPXORD Z18, Z18, Z18 \
	VPXORD Z19, Z19, Z19 \
	VPXORD Z20, Z20, Z20 \
	VPXORD Z21, Z21, Z21 \
	VPXORD Z22, Z22, Z22 \
	VPXORD Z23, Z23, Z23 \
	VPXORD Z24, Z24, Z24 \
	VPXORD Z25, Z25, Z25 \
	VPXORD Z26, Z26, Z26 \
	VPXORD Z27, Z27, Z27 \
	VPXORD Z28, Z28, Z28 \
	VPXORD Z29, Z29, Z29 \
	VPXORD Z30, Z30, Z30 \
	VPXORD Z31, Z31, Z31

#define STOREALL512 \
	STORE512(Z8, Z9) \
	STORE512(Z10, Z11) \
	STORE512(Z12, Z13) \
	STORE512(Z14, Z15) \
	STORE512(Z16, Z17) \
	STORE512(Z18, Z19) \
	STORE512(Z20, Z21) \
	STORE512(Z22, Z23) \
	STORE512(Z24, Z25) \
	STORE512(Z26, Z27) \
	STORE512(Z28, Z29) \
	STORE512(Z30, Z31)

// func gemm12x32ColAAVX512(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)
//
// mr = 12, nr = 32: 24 zmm accumulators (Z8–Z31), the B row in Z0–Z1, broadcasts in
// Z2–Z3. Per k step: 2 loads and 12 broadcasts, 24 FMAs (768 flops), so the two FMA
// ports, not the loads, are the limit.
TEXT ·gemm12x32ColAAVX512(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R9
	MOVQ c+40(FP), DX
	MOVQ ldc+48(FP), BX
	SHLQ $2, R8 // strides in bytes
	SHLQ $2, R9
	SHLQ $2, BX
	PREFETCHC512
	ZERO512
	TESTQ CX, CX
	JLE   colstore512

colloop512:
	VMOVUPS (DI), Z0
	VMOVUPS 64(DI), Z1
	ROW512(0(SI), Z2, Z8, Z9)
	ROW512(4(SI), Z3, Z10, Z11)
	ROW512(8(SI), Z2, Z12, Z13)
	ROW512(12(SI), Z3, Z14, Z15)
	ROW512(16(SI), Z2, Z16, Z17)
	ROW512(20(SI), Z3, Z18, Z19)
	ROW512(24(SI), Z2, Z20, Z21)
	ROW512(28(SI), Z3, Z22, Z23)
	ROW512(32(SI), Z2, Z24, Z25)
	ROW512(36(SI), Z3, Z26, Z27)
	ROW512(40(SI), Z2, Z28, Z29)
	ROW512(44(SI), Z3, Z30, Z31)
	ADDQ R8, SI
	ADDQ R9, DI
	DECQ CX
	JNZ  colloop512

colstore512:
	STOREALL512
	VZEROUPPER
	RET

// func gemm12x32RowAAVX512(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)
//
// As ColA, with the 12 rows of A addressed from three bases (rows 0, 5, 10) plus 0, 1,
// 2, 3 or 4 row strides (R10 = lda bytes, R11 = 3·lda bytes); the bases step 4 bytes per
// k step.
TEXT ·gemm12x32RowAAVX512(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R10
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R8
	MOVQ c+40(FP), DX
	MOVQ ldc+48(FP), BX
	SHLQ $2, R10
	SHLQ $2, R8
	SHLQ $2, BX
	LEAQ (R10)(R10*2), R11 // 3 rows
	LEAQ (R11)(R10*2), R9  // 5 rows
	ADDQ SI, R9            // row 5
	LEAQ (R9)(R10*4), R12
	ADDQ R10, R12          // row 10
	PREFETCHC512
	ZERO512
	TESTQ CX, CX
	JLE   rowstore512

rowloop512:
	VMOVUPS (DI), Z0
	VMOVUPS 64(DI), Z1
	ROW512((SI), Z2, Z8, Z9)
	ROW512((SI)(R10*1), Z3, Z10, Z11)
	ROW512((SI)(R10*2), Z2, Z12, Z13)
	ROW512((SI)(R11*1), Z3, Z14, Z15)
	ROW512((SI)(R10*4), Z2, Z16, Z17)
	ROW512((R9), Z3, Z18, Z19)
	ROW512((R9)(R10*1), Z2, Z20, Z21)
	ROW512((R9)(R10*2), Z3, Z22, Z23)
	ROW512((R9)(R11*1), Z2, Z24, Z25)
	ROW512((R9)(R10*4), Z3, Z26, Z27)
	ROW512((R12), Z2, Z28, Z29)
	ROW512((R12)(R10*1), Z3, Z30, Z31)
	ADDQ $4, SI
	ADDQ $4, R9
	ADDQ $4, R12
	ADDQ R8, DI
	DECQ CX
	JNZ  rowloop512

rowstore512:
	STOREALL512
	VZEROUPPER
	RET

// The AVX2 kernels: mr = 6, nr = 16, 12 ymm accumulators (Y4–Y15), the B row in Y0–Y1,
// broadcasts in Y2–Y3.

#define ROW256(addr, bc, acc0, acc1) \
	VBROADCASTSS addr, bc \
	VFMADD231PS  Y0, bc, acc0 \
	VFMADD231PS  Y1, bc, acc1

#define STORE256(acc0, acc1) \
	VADDPS  (DX), acc0, acc0 \
	VMOVUPS acc0, (DX) \
	VADDPS  32(DX), acc1, acc1 \
	VMOVUPS acc1, 32(DX) \
	ADDQ    BX, DX

#define ZERO256 \
	VXORPS Y4, Y4, Y4 \
	VXORPS Y5, Y5, Y5 \
	VXORPS Y6, Y6, Y6 \
	VXORPS Y7, Y7, Y7 \
	VXORPS Y8, Y8, Y8 \
	VXORPS Y9, Y9, Y9 \
	VXORPS Y10, Y10, Y10 \
	VXORPS Y11, Y11, Y11 \
	VXORPS Y12, Y12, Y12 \
	VXORPS Y13, Y13, Y13 \
	VXORPS Y14, Y14, Y14 \
	VXORPS Y15, Y15, Y15

#define STOREALL256 \
	STORE256(Y4, Y5) \
	STORE256(Y6, Y7) \
	STORE256(Y8, Y9) \
	STORE256(Y10, Y11) \
	STORE256(Y12, Y13) \
	STORE256(Y14, Y15)

// func gemm6x16ColAAVX2(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)
TEXT ·gemm6x16ColAAVX2(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R9
	MOVQ c+40(FP), DX
	MOVQ ldc+48(FP), BX
	SHLQ $2, R8
	SHLQ $2, R9
	SHLQ $2, BX
	ZERO256
	TESTQ CX, CX
	JLE   colstore256

colloop256:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	ROW256(0(SI), Y2, Y4, Y5)
	ROW256(4(SI), Y3, Y6, Y7)
	ROW256(8(SI), Y2, Y8, Y9)
	ROW256(12(SI), Y3, Y10, Y11)
	ROW256(16(SI), Y2, Y12, Y13)
	ROW256(20(SI), Y3, Y14, Y15)
	ADDQ R8, SI
	ADDQ R9, DI
	DECQ CX
	JNZ  colloop256

colstore256:
	STOREALL256
	VZEROUPPER
	RET

// func gemm6x16RowAAVX2(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)
TEXT ·gemm6x16RowAAVX2(SB), NOSPLIT, $0-56
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R10
	MOVQ b+24(FP), DI
	MOVQ ldb+32(FP), R8
	MOVQ c+40(FP), DX
	MOVQ ldc+48(FP), BX
	SHLQ $2, R10
	SHLQ $2, R8
	SHLQ $2, BX
	LEAQ (R10)(R10*2), R11 // 3 rows
	LEAQ (R11)(R10*2), R9  // 5 rows
	ADDQ SI, R9            // row 5
	ZERO256
	TESTQ CX, CX
	JLE   rowstore256

rowloop256:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	ROW256((SI), Y2, Y4, Y5)
	ROW256((SI)(R10*1), Y3, Y6, Y7)
	ROW256((SI)(R10*2), Y2, Y8, Y9)
	ROW256((SI)(R11*1), Y3, Y10, Y11)
	ROW256((SI)(R10*4), Y2, Y12, Y13)
	ROW256((R9), Y3, Y14, Y15)
	ADDQ $4, SI
	ADDQ $4, R9
	ADDQ R8, DI
	DECQ CX
	JNZ  rowloop256

rowstore256:
	STOREALL256
	VZEROUPPER
	RET

// TRCOL finishes the transpose for one c (see transpose16AVX512): a, b, x, y are Z(c),
// Z(4+c), Z(8+c), Z(12+c); off is c·128, the byte offset of k step c in the panel.
#define TRCOL(a, b, x, y, off) \
	VSHUFF32X4 $0x88, b, a, Z16 \
	VSHUFF32X4 $0xdd, b, a, Z17 \
	VSHUFF32X4 $0x88, y, x, Z18 \
	VSHUFF32X4 $0xdd, y, x, Z19 \
	VSHUFF32X4 $0x88, Z18, Z16, Z20 \
	VSHUFF32X4 $0xdd, Z18, Z16, Z21 \
	VSHUFF32X4 $0x88, Z19, Z17, Z22 \
	VSHUFF32X4 $0xdd, Z19, Z17, Z23 \
	VMOVUPS    Z20, off(DI) \
	VMOVUPS    Z22, 512+off(DI) \
	VMOVUPS    Z21, 1024+off(DI) \
	VMOVUPS    Z23, 1536+off(DI)

// func transpose16AVX512(src *float32, lds int, dst *float32, n int)
//
// Packs the transpose of n 16×16 blocks into the AVX-512 kernel's B panel layout
// (32 floats per k step): for c < n, dst[(16c+p)*32 + j] = src[j*lds + 16c + p] for j, p
// < 16, i.e. 16 rows of W (B stored transposed in Y = X·Wᵀ), 16 k-columns at a time.
// The in-register transpose is the usual three stages: interleave 32-bit pairs of rows,
// then 64-bit pairs, then 128-bit chunks across the four groups of four rows.
TEXT ·transpose16AVX512(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), R8
	MOVQ lds+8(FP), R9
	MOVQ dst+16(FP), DI
	MOVQ n+24(FP), CX
	SHLQ $2, R9               // row stride in bytes
	LEAQ (R9)(R9*2), R10      // 3 rows
	LEAQ (R10)(R9*2), R11     // 5 rows
	ADDQ R8, R11              // row 5
	LEAQ (R11)(R9*4), R12
	ADDQ R9, R12              // row 10
	LEAQ (R12)(R9*4), R13
	ADDQ R9, R13              // row 15
	TESTQ CX, CX
	JLE   trdone

trloop:
	VMOVUPS (R8), Z0
	VMOVUPS (R8)(R9*1), Z1
	VMOVUPS (R8)(R9*2), Z2
	VMOVUPS (R8)(R10*1), Z3
	VMOVUPS (R8)(R9*4), Z4
	VMOVUPS (R11), Z5
	VMOVUPS (R11)(R9*1), Z6
	VMOVUPS (R11)(R9*2), Z7
	VMOVUPS (R11)(R10*1), Z8
	VMOVUPS (R11)(R9*4), Z9
	VMOVUPS (R12), Z10
	VMOVUPS (R12)(R9*1), Z11
	VMOVUPS (R12)(R9*2), Z12
	VMOVUPS (R12)(R10*1), Z13
	VMOVUPS (R12)(R9*4), Z14
	VMOVUPS (R13), Z15

	// Stage 1: rows (2i, 2i+1) → per 128-bit lane L: [r2i, r2i+1] at columns 4L, 4L+1
	// (unpack low) and 4L+2, 4L+3 (unpack high).
	VUNPCKLPS Z1, Z0, Z16
	VUNPCKHPS Z1, Z0, Z17
	VUNPCKLPS Z3, Z2, Z18
	VUNPCKHPS Z3, Z2, Z19
	VUNPCKLPS Z5, Z4, Z20
	VUNPCKHPS Z5, Z4, Z21
	VUNPCKLPS Z7, Z6, Z22
	VUNPCKHPS Z7, Z6, Z23
	VUNPCKLPS Z9, Z8, Z24
	VUNPCKHPS Z9, Z8, Z25
	VUNPCKLPS Z11, Z10, Z26
	VUNPCKHPS Z11, Z10, Z27
	VUNPCKLPS Z13, Z12, Z28
	VUNPCKHPS Z13, Z12, Z29
	VUNPCKLPS Z15, Z14, Z30
	VUNPCKHPS Z15, Z14, Z31

	// Stage 2: Z(4g+c), for the rows 4g … 4g+3, holds in lane L column 4L+c.
	VUNPCKLPD Z18, Z16, Z0
	VUNPCKHPD Z18, Z16, Z1
	VUNPCKLPD Z19, Z17, Z2
	VUNPCKHPD Z19, Z17, Z3
	VUNPCKLPD Z22, Z20, Z4
	VUNPCKHPD Z22, Z20, Z5
	VUNPCKLPD Z23, Z21, Z6
	VUNPCKHPD Z23, Z21, Z7
	VUNPCKLPD Z26, Z24, Z8
	VUNPCKHPD Z26, Z24, Z9
	VUNPCKLPD Z27, Z25, Z10
	VUNPCKHPD Z27, Z25, Z11
	VUNPCKLPD Z30, Z28, Z12
	VUNPCKHPD Z30, Z28, Z13
	VUNPCKLPD Z31, Z29, Z14
	VUNPCKHPD Z31, Z29, Z15

	// Stage 3, per c: gather lane L of Z(c), Z(4+c), Z(8+c), Z(12+c) = column 4L+c of
	// all 16 rows, and store it as k step 16·block + 4L + c.
	TRCOL(Z0, Z4, Z8, Z12, 0)
	TRCOL(Z1, Z5, Z9, Z13, 128)
	TRCOL(Z2, Z6, Z10, Z14, 256)
	TRCOL(Z3, Z7, Z11, Z15, 384)

	ADDQ $64, R8
	ADDQ $64, R11
	ADDQ $64, R12
	ADDQ $64, R13
	ADDQ $2048, DI
	DECQ CX
	JNZ  trloop

trdone:
	VZEROUPPER
	RET
