#include "textflag.h"

DATA vmc<>+0(SB)/4, $0x7fffffff  // all but the sign bit
DATA vmc<>+4(SB)/4, $0x3ba059dd  // beta0 = 4.89352518554385e-03
DATA vmc<>+8(SB)/4, $0x40490fdb  // float32(π)
DATA vmc<>+12(SB)/4, $0x3f800000 // 1
GLOBL vmc<>(SB), RODATA|NOPTR, $16

// func tanhAVX512(dst, src *float32, nblk, lastMask int, c *[16]float32)
//
// Tanh (vmath.go) on nblk blocks of 16, the last one masked by lastMask. c holds div,
// mul, add, clamp, −clamp, tiny, α13 … α1, β6, β4, β2 (β0 is a constant here). Lanes
// past the end are loaded as 0 and not stored.
TEXT ·tanhAVX512(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ nblk+16(FP), CX
	MOVQ lastMask+24(FP), DX
	MOVQ c+32(FP), AX
	VBROADCASTSS 0(AX), Z16  // div
	VBROADCASTSS 4(AX), Z17  // mul
	VBROADCASTSS 8(AX), Z18  // add
	VBROADCASTSS 12(AX), Z19 // clamp
	VBROADCASTSS 16(AX), Z20 // −clamp
	VBROADCASTSS 20(AX), Z21 // tiny
	VBROADCASTSS 24(AX), Z22 // α13
	VBROADCASTSS 28(AX), Z23 // α11
	VBROADCASTSS 32(AX), Z24 // α9
	VBROADCASTSS 36(AX), Z25 // α7
	VBROADCASTSS 40(AX), Z26 // α5
	VBROADCASTSS 44(AX), Z27 // α3
	VBROADCASTSS 48(AX), Z28 // α1
	VBROADCASTSS 52(AX), Z29 // β6
	VBROADCASTSS 56(AX), Z30 // β4
	VBROADCASTSS 60(AX), Z31 // β2
	VBROADCASTSS vmc<>+4(SB), Z15 // β0
	VPBROADCASTD vmc<>+0(SB), Z14 // abs mask
	MOVL  $0xffff, AX
	KMOVW AX, K1
	TESTQ CX, CX
	JLE   tdone

tloop:
	CMPQ  CX, $1
	JNE   tbody
	KMOVW DX, K1

tbody:
	VMOVUPS.Z (SI), K1, Z0
	VDIVPS    Z16, Z0, Z0      // a = x/div
	VPANDD    Z14, Z0, Z1      // |a|
	VCMPPS    $1, Z21, Z1, K2  // K2: |a| < tiny
	VMINPS    Z0, Z19, Z2      // clamp < a ? clamp : a (NaN stays)
	VMAXPS    Z2, Z20, Z2      // −clamp > x ? −clamp : x
	VMULPS    Z2, Z2, Z3       // x²
	VMOVAPS     Z22, Z4
	VFMADD213PS Z23, Z3, Z4    // p = α13·x² + α11
	VFMADD213PS Z24, Z3, Z4    // ·x² + α9
	VFMADD213PS Z25, Z3, Z4    // ·x² + α7
	VFMADD213PS Z26, Z3, Z4    // ·x² + α5
	VFMADD213PS Z27, Z3, Z4    // ·x² + α3
	VFMADD213PS Z28, Z3, Z4    // ·x² + α1
	VMULPS      Z2, Z4, Z4     // p·x
	VMOVAPS     Z29, Z5
	VFMADD213PS Z30, Z3, Z5    // q = β6·x² + β4
	VFMADD213PS Z31, Z3, Z5    // ·x² + β2
	VFMADD213PS Z15, Z3, Z5    // ·x² + β0
	VDIVPS      Z5, Z4, Z4     // t = p/q
	VMOVAPS     Z0, K2, Z4     // tiny: t = a
	VFMADD213PS Z18, Z17, Z4   // mul·t + add
	VMOVUPS     Z4, K1, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  tloop

tdone:
	VZEROUPPER
	RET

// func reluAVX512(x *float32, nblk, lastMask int)
//
// x = max(0, x) with MAXPS's rule (the second operand, x, when either is NaN or both are
// zeros): 0 where x < 0, x elsewhere, NaN and −0 included.
TEXT ·reluAVX512(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), DI
	MOVQ nblk+8(FP), CX
	MOVQ lastMask+16(FP), DX
	VXORPS Z31, Z31, Z31
	MOVL  $0xffff, AX
	KMOVW AX, K1
	TESTQ CX, CX
	JLE   rdone

rloop:
	CMPQ  CX, $1
	JNE   rbody
	KMOVW DX, K1

rbody:
	VMOVUPS.Z (DI), K1, Z0
	VMAXPS    Z0, Z31, Z0   // 0 > x ? 0 : x
	VMOVUPS   Z0, K1, (DI)
	ADDQ $64, DI
	DECQ CX
	JNZ  rloop

rdone:
	VZEROUPPER
	RET

// func reluBwdAVX512(dx, out *float32, nblk, lastMask int)
//
// dx = 0 where !(out > 0).
TEXT ·reluBwdAVX512(SB), NOSPLIT, $0-32
	MOVQ dx+0(FP), DI
	MOVQ out+8(FP), SI
	MOVQ nblk+16(FP), CX
	MOVQ lastMask+24(FP), DX
	VXORPS Z31, Z31, Z31
	MOVL  $0xffff, AX
	KMOVW AX, K1
	TESTQ CX, CX
	JLE   bdone

bloop:
	CMPQ  CX, $1
	JNE   bbody
	KMOVW DX, K1

bbody:
	VMOVUPS.Z (SI), K1, Z0
	VCMPPS    $0x1e, Z31, Z0, K2 // K2: out > 0 (GT_OQ: false for NaN)
	KANDW     K1, K2, K2
	VMOVUPS.Z (DI), K2, Z1
	VMOVUPS   Z1, K1, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  bloop

bdone:
	VZEROUPPER
	RET

// func angleBwdAVX512(dRaw, dTheta, theta *float32, nblk, lastMask int, c float32)
//
// dRaw += dTheta·c·(1 − t²), t = θ/π, each operation rounded (no FMA), as the Go loop.
TEXT ·angleBwdAVX512(SB), NOSPLIT, $0-44
	MOVQ dRaw+0(FP), DI
	MOVQ dTheta+8(FP), SI
	MOVQ theta+16(FP), R8
	MOVQ nblk+24(FP), CX
	MOVQ lastMask+32(FP), DX
	VBROADCASTSS c+40(FP), Z16
	VBROADCASTSS vmc<>+8(SB), Z17  // π
	VBROADCASTSS vmc<>+12(SB), Z18 // 1
	MOVL  $0xffff, AX
	KMOVW AX, K1
	TESTQ CX, CX
	JLE   adone

aloop:
	CMPQ  CX, $1
	JNE   abody
	KMOVW DX, K1

abody:
	VMOVUPS.Z (R8), K1, Z0
	VDIVPS    Z17, Z0, Z0     // t = θ/π
	VMULPS    Z0, Z0, Z0      // t²
	VSUBPS    Z0, Z18, Z0     // 1 − t²
	VMOVUPS.Z (SI), K1, Z1
	VMULPS    Z16, Z1, Z1     // dθ·c
	VMULPS    Z0, Z1, Z1      // ·(1 − t²)
	VMOVUPS.Z (DI), K1, Z2
	VADDPS    Z1, Z2, Z2
	VMOVUPS   Z2, K1, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, R8
	DECQ CX
	JNZ  aloop

adone:
	VZEROUPPER
	RET

// func prefetchLines(p *float32, lines int)
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
