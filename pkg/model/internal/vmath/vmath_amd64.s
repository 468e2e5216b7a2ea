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

DATA scc<>+0(SB)/4, $0x3f000000  // 0.5
DATA scc<>+4(SB)/4, $0x3f22f983  // 2/π
DATA scc<>+8(SB)/4, $0x3fc90fdb  // π/2 = p1 + p2 + p3 (Cody–Waite): p1 = float32(π/2)
DATA scc<>+12(SB)/4, $0xb33bbd2e // p2 = float32(π/2 − p1)
DATA scc<>+16(SB)/4, $0xa6f72ced // p3 = float32(π/2 − p1 − p2)
DATA scc<>+20(SB)/4, $0xbe2aaaa3 // sin coefficients s1, s2, s3 (Cephes sinf)
DATA scc<>+24(SB)/4, $0x3c08839e
DATA scc<>+28(SB)/4, $0xb94ca1f9
DATA scc<>+32(SB)/4, $0x3d2aaaa5 // cos coefficients c1, c2, c3 (Cephes cosf)
DATA scc<>+36(SB)/4, $0xbab6061a
DATA scc<>+40(SB)/4, $0x37ccf5ce
DATA scc<>+44(SB)/4, $0x3f800000 // 1.0
DATA scc<>+48(SB)/4, $0x46000000 // 8192, the range of the reduction
DATA scc<>+52(SB)/4, $0x80000000 // sign bit
DATA scc<>+56(SB)/4, $0x7fffffff // all but the sign bit
DATA scc<>+60(SB)/4, $0x00000001 // int32 1
GLOBL scc<>(SB), RODATA|NOPTR, $64

// func sinCosAVX512(s, c, x *float32, nblk, lastMask int) (bad int)
//
// s, c = sin x, cos x, as sincos32 but in float32 with FMA: j = round(x·2/π),
// r = x − j·(p1+p2+p3), the Cephes polynomials, then the quadrant j mod 4. bad is
// non-zero when some |x| exceeds 8192 or is NaN (the caller then redoes it in Go).
TEXT ·sinCosAVX512(SB), NOSPLIT, $0-48
	MOVQ s+0(FP), DI
	MOVQ c+8(FP), R9
	MOVQ x+16(FP), SI
	MOVQ nblk+24(FP), CX
	MOVQ lastMask+32(FP), DX
	VBROADCASTSS scc<>+0(SB), Z16  // 0.5
	VBROADCASTSS scc<>+4(SB), Z17  // 2/π
	VBROADCASTSS scc<>+8(SB), Z18  // p1
	VBROADCASTSS scc<>+12(SB), Z19 // p2
	VBROADCASTSS scc<>+16(SB), Z20 // p3
	VBROADCASTSS scc<>+20(SB), Z21 // s1
	VBROADCASTSS scc<>+24(SB), Z22 // s2
	VBROADCASTSS scc<>+28(SB), Z23 // s3
	VBROADCASTSS scc<>+32(SB), Z24 // c1
	VBROADCASTSS scc<>+36(SB), Z25 // c2
	VBROADCASTSS scc<>+40(SB), Z26 // c3
	VBROADCASTSS scc<>+44(SB), Z27 // 1
	VBROADCASTSS scc<>+48(SB), Z28 // limit
	VPBROADCASTD scc<>+52(SB), Z29 // sign bit
	VPBROADCASTD scc<>+56(SB), Z30 // abs mask
	VPBROADCASTD scc<>+60(SB), Z31 // int 1
	KXORW K3, K3, K3
	MOVL  $0xffff, AX
	KMOVW AX, K1
	TESTQ CX, CX
	JLE   scdone

scloop:
	CMPQ  CX, $1
	JNE   scbody
	KMOVW DX, K1

scbody:
	VMOVUPS.Z (SI), K1, Z0    // x
	VPANDD Z30, Z0, Z1        // |x|
	VCMPPS $6, Z28, Z1, K4    // !(|x| ≤ limit) (NaN too)
	KANDW  K1, K4, K4
	KORW   K4, K3, K3
	VMULPS Z17, Z0, Z2
	VRNDSCALEPS $0, Z2, Z2    // j = round-to-even(x·2/π)
	VFNMADD231PS Z18, Z2, Z0  // r = x − j·p1
	VFNMADD231PS Z19, Z2, Z0  // r −= j·p2
	VFNMADD231PS Z20, Z2, Z0  // r −= j·p3
	VCVTPS2DQ Z2, Z3          // n = int32(j)
	VMULPS Z0, Z0, Z4         // z = r²

	// sin r = r + r·z·(s1 + z·(s2 + z·s3))
	VMOVAPS     Z23, Z5
	VFMADD213PS Z22, Z4, Z5
	VFMADD213PS Z21, Z4, Z5
	VMULPS      Z4, Z5, Z5
	VFMADD213PS Z0, Z0, Z5

	// cos r = (1 − z/2) + z²·(c1 + z·(c2 + z·c3))
	VMOVAPS      Z26, Z6
	VFMADD213PS  Z25, Z4, Z6
	VFMADD213PS  Z24, Z4, Z6
	VMULPS       Z4, Z4, Z7
	VMOVAPS      Z27, Z8
	VFNMADD231PS Z16, Z4, Z8
	VFMADD213PS  Z8, Z7, Z6

	// Quadrant n mod 4: (sin, cos) = (s, c), (c, −s), (−s, −c), (−c, s).
	VPTESTMD  Z31, Z3, K2
	VBLENDMPS Z6, Z5, K2, Z9
	VBLENDMPS Z5, Z6, K2, Z10
	VPSLLD    $30, Z3, Z11
	VPANDD    Z29, Z11, Z11
	VPXORD    Z11, Z9, Z9
	VPADDD    Z31, Z3, Z12
	VPSLLD    $30, Z12, Z12
	VPANDD    Z29, Z12, Z12
	VPXORD    Z12, Z10, Z10
	VMOVUPS   Z9, K1, (DI)
	VMOVUPS   Z10, K1, (R9)

	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, R9
	DECQ CX
	JNZ  scloop

scdone:
	KMOVW K3, AX
	MOVQ  AX, bad+40(FP)
	VZEROUPPER
	RET
