#include "textflag.h"

// SGEMM micro-kernels (see gemm.go): C[mr][nr] (row stride ldc floats) += A·B over k
// steps. B is a packed micro-panel [k][nr]; A is read in place, in one of two layouts:
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

// func gemm12x32ColAAVX512(k int, a *float32, lda int, b, c *float32, ldc int)
//
// mr = 12, nr = 32: 24 zmm accumulators (Z8–Z31), the B row in Z0–Z1, broadcasts in
// Z2–Z3. Per k step: 2 loads and 12 broadcasts, 24 FMAs (768 flops... per 2 vectors ×
// 16 lanes × 12 rows × 2 = 768).
TEXT ·gemm12x32ColAAVX512(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	MOVQ b+24(FP), DI
	MOVQ c+32(FP), DX
	MOVQ ldc+40(FP), BX
	SHLQ $2, R8 // strides in bytes
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
	ADDQ $128, DI
	DECQ CX
	JNZ  colloop512

colstore512:
	STOREALL512
	VZEROUPPER
	RET

// func gemm12x32RowAAVX512(k int, a *float32, lda int, b, c *float32, ldc int)
//
// As ColA, with the 12 rows of A addressed from three bases (rows 0, 5, 10) plus 0, 1,
// 2, 3 or 4 row strides (R10 = lda bytes, R11 = 3·lda bytes); the bases step 4 bytes per
// k step.
TEXT ·gemm12x32RowAAVX512(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R10
	MOVQ b+24(FP), DI
	MOVQ c+32(FP), DX
	MOVQ ldc+40(FP), BX
	SHLQ $2, R10
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
	ADDQ $128, DI
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

// func gemm6x16ColAAVX2(k int, a *float32, lda int, b, c *float32, ldc int)
TEXT ·gemm6x16ColAAVX2(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R8
	MOVQ b+24(FP), DI
	MOVQ c+32(FP), DX
	MOVQ ldc+40(FP), BX
	SHLQ $2, R8
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
	ADDQ $64, DI
	DECQ CX
	JNZ  colloop256

colstore256:
	STOREALL256
	VZEROUPPER
	RET

// func gemm6x16RowAAVX2(k int, a *float32, lda int, b, c *float32, ldc int)
TEXT ·gemm6x16RowAAVX2(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), R10
	MOVQ b+24(FP), DI
	MOVQ c+32(FP), DX
	MOVQ ldc+40(FP), BX
	SHLQ $2, R10
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
	ADDQ $64, DI
	DECQ CX
	JNZ  rowloop256

rowstore256:
	STOREALL256
	VZEROUPPER
	RET
