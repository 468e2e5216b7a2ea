#include "textflag.h"

// func adamAVX512(pp, gp, mp, vp *float32, n int, c *adamScalars) (bad int)
//
// The Adam update of adamScalars.update on n elements (n a multiple of 16), 16 per
// instruction, with the same float32 operations in the same order: every product and
// quotient rounded on its own (no FMA), VSQRTPS (correctly rounded, as float32 of the
// float64 square root is). bad is non-zero when some updated parameter is NaN or ±Inf.
// c points to the scalars b1, b2, c1, c2, stepSize, bc2sqrt, eps (float32, in order).
TEXT ·adamAVX512(SB), NOSPLIT, $0-56
	MOVQ pp+0(FP), DI
	MOVQ gp+8(FP), SI
	MOVQ mp+16(FP), R8
	MOVQ vp+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ c+40(FP), AX
	VBROADCASTSS 0(AX), Z16  // b1
	VBROADCASTSS 4(AX), Z17  // b2
	VBROADCASTSS 8(AX), Z18  // c1
	VBROADCASTSS 12(AX), Z19 // c2
	VBROADCASTSS 16(AX), Z20 // stepSize
	VBROADCASTSS 20(AX), Z21 // bc2sqrt
	VBROADCASTSS 24(AX), Z22 // eps
	VXORPS Z23, Z23, Z23     // zero
	KXORW K3, K3, K3         // non-finite lanes so far
	XORQ BX, BX
	TESTQ CX, CX
	JLE  done

loop:
	VMOVUPS (SI)(BX*4), Z0       // g
	VMULPS  (R8)(BX*4), Z16, Z1  // b1·m
	VMULPS  Z0, Z18, Z2          // c1·g
	VADDPS  Z2, Z1, Z1           // m' = b1·m + c1·g
	VMULPS  (R9)(BX*4), Z17, Z3  // b2·v
	VMULPS  Z0, Z19, Z4          // c2·g
	VMULPS  Z0, Z4, Z4           // (c2·g)·g
	VADDPS  Z4, Z3, Z3           // v' = b2·v + c2·g·g
	VMOVUPS Z1, (R8)(BX*4)
	VMOVUPS Z3, (R9)(BX*4)
	VSQRTPS Z3, Z5               // √v'
	VDIVPS  Z21, Z5, Z5          // √v' / bc2sqrt
	VADDPS  Z22, Z5, Z5          // + eps
	VDIVPS  Z5, Z1, Z6           // m' / denom
	VMULPS  Z6, Z20, Z6          // stepSize · (m'/denom)
	VMOVUPS (DI)(BX*4), Z7
	VSUBPS  Z6, Z7, Z7           // p − …
	VMOVUPS Z7, (DI)(BX*4)
	VSUBPS  Z7, Z7, Z8           // x − x: 0, or NaN for NaN and ±Inf
	VCMPPS  $4, Z23, Z8, K1      // NEQ_UQ: x − x ≠ 0 (NaN compares unequal)
	KORW    K1, K3, K3
	ADDQ    $16, BX
	CMPQ    BX, CX
	JLT     loop

done:
	KMOVW K3, AX
	MOVQ  AX, bad+48(FP)
	VZEROUPPER
	RET

// func adamAVX2(pp, gp, mp, vp *float32, n int, c *adamScalars) (bad int)
//
// adamAVX512 with 8 elements per instruction (n a multiple of 8): the same operations,
// each correctly rounded, so the same bits.
TEXT ·adamAVX2(SB), NOSPLIT, $0-56
	MOVQ pp+0(FP), DI
	MOVQ gp+8(FP), SI
	MOVQ mp+16(FP), R8
	MOVQ vp+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ c+40(FP), AX
	VBROADCASTSS 0(AX), Y8   // b1
	VBROADCASTSS 4(AX), Y9   // b2
	VBROADCASTSS 8(AX), Y10  // c1
	VBROADCASTSS 12(AX), Y11 // c2
	VBROADCASTSS 16(AX), Y12 // stepSize
	VBROADCASTSS 20(AX), Y13 // bc2sqrt
	VBROADCASTSS 24(AX), Y14 // eps
	VXORPS Y15, Y15, Y15     // non-finite lanes so far
	XORQ BX, BX
	TESTQ CX, CX
	JLE  done2

loop2:
	VMOVUPS (SI)(BX*4), Y0       // g
	VMULPS  (R8)(BX*4), Y8, Y1   // b1·m
	VMULPS  Y0, Y10, Y2          // c1·g
	VADDPS  Y2, Y1, Y1           // m' = b1·m + c1·g
	VMULPS  (R9)(BX*4), Y9, Y3   // b2·v
	VMULPS  Y0, Y11, Y4          // c2·g
	VMULPS  Y0, Y4, Y4           // (c2·g)·g
	VADDPS  Y4, Y3, Y3           // v' = b2·v + c2·g·g
	VMOVUPS Y1, (R8)(BX*4)
	VMOVUPS Y3, (R9)(BX*4)
	VSQRTPS Y3, Y5               // √v'
	VDIVPS  Y13, Y5, Y5          // √v' / bc2sqrt
	VADDPS  Y14, Y5, Y5          // + eps
	VDIVPS  Y5, Y1, Y6           // m' / denom
	VMULPS  Y6, Y12, Y6          // stepSize · (m'/denom)
	VMOVUPS (DI)(BX*4), Y7
	VSUBPS  Y6, Y7, Y7           // p − …
	VMOVUPS Y7, (DI)(BX*4)
	VSUBPS  Y7, Y7, Y0           // x − x: 0, or NaN for NaN and ±Inf
	VXORPS  Y2, Y2, Y2
	VCMPPS  $4, Y2, Y0, Y0       // NEQ_UQ: x − x ≠ 0 (NaN compares unequal)
	VORPS   Y0, Y15, Y15
	ADDQ    $8, BX
	CMPQ    BX, CX
	JLT     loop2

done2:
	VMOVMSKPS Y15, AX
	MOVQ      AX, bad+48(FP)
	VZEROUPPER
	RET

// func prefetchLines(p *float32, lines int)
//
// PREFETCHT0 of lines consecutive 64-byte cache lines from p: a hint, it never faults.
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ lines+8(FP), CX
	TESTQ CX, CX
	JLE  pdone

ploop:
	PREFETCHT0 (SI)
	ADDQ $64, SI
	DECQ CX
	JNZ  ploop

pdone:
	RET
