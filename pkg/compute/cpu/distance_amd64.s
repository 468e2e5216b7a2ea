#include "textflag.h"

// AVX-512 inner loops of the cone distance (see distance.go for the maths and the table
// layouts). 16 dimensions per instruction; every lane runs the same instruction sequence,
// so a dimension's result does not depend on which block or call it falls in.

// Constants, as float32 (or int32) bit patterns.
DATA distc<>+0(SB)/4, $0x3f000000  // 0.5
DATA distc<>+4(SB)/4, $0x3f22f983  // 2/π
DATA distc<>+8(SB)/4, $0x3fc90fdb  // π/2 = p1 + p2 + p3 (Cody–Waite): p1 = float32(π/2)
DATA distc<>+12(SB)/4, $0xb33bbd2e // p2 = float32(π/2 − p1)
DATA distc<>+16(SB)/4, $0xa6f72ced // p3 = float32(π/2 − p1 − p2)
DATA distc<>+20(SB)/4, $0xbe2aaaa3 // sin coefficients s1, s2, s3 (Cephes sinf)
DATA distc<>+24(SB)/4, $0x3c08839e
DATA distc<>+28(SB)/4, $0xb94ca1f9
DATA distc<>+32(SB)/4, $0x3d2aaaa5 // cos coefficients c1, c2, c3 (Cephes cosf)
DATA distc<>+36(SB)/4, $0xbab6061a
DATA distc<>+40(SB)/4, $0x37ccf5ce
DATA distc<>+44(SB)/4, $0x3f800000 // 1.0
DATA distc<>+48(SB)/4, $0x46000000 // 8192, the range of the reduction (sincosLimit)
DATA distc<>+52(SB)/4, $0x80000000 // sign bit
DATA distc<>+56(SB)/4, $0x7fffffff // all but the sign bit
DATA distc<>+60(SB)/4, $0x00000001 // int32 1
GLOBL distc<>(SB), RODATA|NOPTR, $64

// func sincosHalfAVX512(x *float32, nblk int, out *float32, stride int, next *float32) (bad int)
//
// For b < nblk: out[b*stride + i] = sin(x[16b+i]/2), out[b*stride + 16 + i] =
// cos(x[16b+i]/2). As sincosf in distance_generic.go, in float32 with FMA: j = round(x·2/π),
// r = x − j·(p1+p2+p3) (each step one FMA, so r is accurate to a few ulp for |x| ≤ 8192),
// the Cephes polynomials on [−π/4, π/4], then the quadrant j mod 4 swaps sin and cos
// (j odd) and flips signs (sin: bit 1 of j; cos: bit 1 of j+1). bad is non-zero when some
// |x/2| exceeds 8192 or is NaN; the caller then recomputes in Go. Each block also
// prefetches the matching 64 bytes of next (the input of a later call).
TEXT ·sincosHalfAVX512(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ nblk+8(FP), CX
	MOVQ out+16(FP), DI
	MOVQ stride+24(FP), BX
	MOVQ next+32(FP), R8
	SHLQ $2, BX
	VBROADCASTSS distc<>+0(SB), Z16  // 0.5
	VBROADCASTSS distc<>+4(SB), Z17  // 2/π
	VBROADCASTSS distc<>+8(SB), Z18  // p1
	VBROADCASTSS distc<>+12(SB), Z19 // p2
	VBROADCASTSS distc<>+16(SB), Z20 // p3
	VBROADCASTSS distc<>+20(SB), Z21 // s1
	VBROADCASTSS distc<>+24(SB), Z22 // s2
	VBROADCASTSS distc<>+28(SB), Z23 // s3
	VBROADCASTSS distc<>+32(SB), Z24 // c1
	VBROADCASTSS distc<>+36(SB), Z25 // c2
	VBROADCASTSS distc<>+40(SB), Z26 // c3
	VBROADCASTSS distc<>+44(SB), Z27 // 1
	VBROADCASTSS distc<>+48(SB), Z28 // limit
	VPBROADCASTD distc<>+52(SB), Z29 // sign bit
	VPBROADCASTD distc<>+56(SB), Z30 // abs mask
	VPBROADCASTD distc<>+60(SB), Z31 // int 1
	KXORW K3, K3, K3                 // lanes out of range, so far none
	TESTQ CX, CX
	JLE   scdone

scloop:
	PREFETCHT0 (R8)
	VMULPS (SI), Z16, Z0      // x/2
	VPANDD Z30, Z0, Z1        // |x/2|
	VCMPPS $6, Z28, Z1, K1    // K1 = !(|x/2| ≤ limit) (NLE_US: NaN too)
	KORW   K1, K3, K3
	VMULPS Z17, Z0, Z2
	VRNDSCALEPS $0, Z2, Z2    // j = round-to-even(x·2/π)
	VFNMADD231PS Z18, Z2, Z0  // r = x − j·p1
	VFNMADD231PS Z19, Z2, Z0  // r −= j·p2
	VFNMADD231PS Z20, Z2, Z0  // r −= j·p3
	VCVTPS2DQ Z2, Z3          // n = int32(j)
	VMULPS Z0, Z0, Z4         // z = r²

	// sin r = r + r·z·(s1 + z·(s2 + z·s3))
	VMOVAPS     Z23, Z5
	VFMADD213PS Z22, Z4, Z5 // s3·z + s2
	VFMADD213PS Z21, Z4, Z5 // ·z + s1
	VMULPS      Z4, Z5, Z5  // ·z
	VFMADD213PS Z0, Z0, Z5  // ·r + r

	// cos r = (1 − z/2) + z²·(c1 + z·(c2 + z·c3))
	VMOVAPS      Z26, Z6
	VFMADD213PS  Z25, Z4, Z6 // c3·z + c2
	VFMADD213PS  Z24, Z4, Z6 // ·z + c1
	VMULPS       Z4, Z4, Z7  // z²
	VMOVAPS      Z27, Z8
	VFNMADD231PS Z16, Z4, Z8 // 1 − z/2
	VFMADD213PS  Z8, Z7, Z6  // ·z² + (1 − z/2)

	// Quadrant n mod 4: (sin, cos) = (s, c), (c, −s), (−s, −c), (−c, s).
	VPTESTMD  Z31, Z3, K2      // n odd
	VBLENDMPS Z6, Z5, K2, Z9   // sin: n odd ? c : s
	VBLENDMPS Z5, Z6, K2, Z10  // cos: n odd ? s : c
	VPSLLD    $30, Z3, Z11     // bit 1 of n into the sign bit
	VPANDD    Z29, Z11, Z11
	VPXORD    Z11, Z9, Z9
	VPADDD    Z31, Z3, Z12     // bit 1 of n+1 into the sign bit
	VPSLLD    $30, Z12, Z12
	VPANDD    Z29, Z12, Z12
	VPXORD    Z12, Z10, Z10
	VMOVUPS   Z9, (DI)
	VMOVUPS   Z10, 64(DI)

	ADDQ $64, SI
	ADDQ $64, R8
	ADDQ BX, DI
	DECQ CX
	JNZ  scloop

scdone:
	KMOVW K3, AX
	MOVQ  AX, bad+40(FP)
	VZEROUPPER
	RET

// FWDENT scores one entity (its block at base + AX) against the query block in Z0–Z6
// (sin α, cos α, sin α₋, cos α₋, sin α₊, cos α₊, β), with S, C, T, U scratch and K a
// scratch mask:
//
//	st  = sin u·cos α − cos u·sin α            (sin of (θ − a)/2, signed)
//	acci += min(|st|, β)                        (VRANGEPS $10: the smaller magnitude, sign cleared)
//	sLo, sHi likewise with α₋, α₊
//	acco += min(|sLo|, |sHi|) where sLo·sHi ≥ 0 (outside: see insideTest in distance.go)
//
// VRANGEPS gives the number where one operand is a quiet NaN and the other a number, a
// NaN for two: min(|sLo|, |sHi|) is NaN wherever sLo or sHi is, as the tables make them
// NaN together, and where sLo·sHi is NaN (not < 0) it is added ("NaN" in distance.go).
#define FWDENT(base, S, C, T, U, K, acco, acci) \
	VMOVUPS      (base)(AX*1), S \
	VMOVUPS      64(base)(AX*1), C \
	VMULPS       C, Z0, T \
	VFMSUB231PS  Z1, S, T \
	VRANGEPS     $10, Z6, T, T \
	VADDPS       T, acci, acci \
	VMULPS       C, Z2, T \
	VFMSUB231PS  Z3, S, T \
	VMULPS       C, Z4, U \
	VFMSUB231PS  Z5, S, U \
	VMULPS       U, T, C \
	VCMPPS       $5, Z7, C, K \
	VRANGEPS     $10, U, T, T \
	VADDPS       T, acco, K, acco

// HSUM reduces the 16 lanes of the zmm whose ymm/xmm names are Y, X into lane 0 (in a
// fixed order: halves, quarters, pairs) and stores it at off(DI). Uses Y0/X0.
#define HSUM(Z, Y, X, off) \
	VEXTRACTF64X4 $1, Z, Y0 \
	VADDPS        Y0, Y, Y \
	VEXTRACTF128  $1, Y, X0 \
	VADDPS        X0, X, X \
	VPERMILPS     $0x4e, X, X0 \
	VADDPS        X0, X, X \
	VPERMILPS     $0xb1, X, X0 \
	VADDPS        X0, X, X \
	VMOVSS        X, off(DI)

// func distFwd4AVX512(q, e0, e1, e2, e3 *float32, nblk int, out *[8]float32)
//
// One query against four entities: out[2i] = Σ outside distance, out[2i+1] = Σ inside
// distance over nblk blocks, for entity rows e0 … e3. Per block: 7 query loads shared by
// the four entities, 2 loads and 12 arithmetic instructions per entity.
TEXT ·distFwd4AVX512(SB), NOSPLIT, $0-56
	MOVQ q+0(FP), SI
	MOVQ e0+8(FP), R8
	MOVQ e1+16(FP), R9
	MOVQ e2+24(FP), R10
	MOVQ e3+32(FP), R11
	MOVQ nblk+40(FP), CX
	MOVQ out+48(FP), DI
	XORQ AX, AX // byte offset into the entity rows
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	TESTQ  CX, CX
	JLE    fwdreduce

fwdloop:
	VMOVUPS 0(SI), Z0
	VMOVUPS 64(SI), Z1
	VMOVUPS 128(SI), Z2
	VMOVUPS 192(SI), Z3
	VMOVUPS 256(SI), Z4
	VMOVUPS 320(SI), Z5
	VMOVUPS 384(SI), Z6
	FWDENT(R8, Z16, Z17, Z18, Z19, K1, Z8, Z9)
	FWDENT(R9, Z20, Z21, Z22, Z23, K2, Z10, Z11)
	FWDENT(R10, Z24, Z25, Z26, Z27, K3, Z12, Z13)
	FWDENT(R11, Z28, Z29, Z30, Z31, K4, Z14, Z15)
	ADDQ $512, SI
	ADDQ $128, AX
	DECQ CX
	JNZ  fwdloop

fwdreduce:
	HSUM(Z8, Y8, X8, 0)
	HSUM(Z9, Y9, X9, 4)
	HSUM(Z10, Y10, X10, 8)
	HSUM(Z11, Y11, X11, 12)
	HSUM(Z12, Y12, X12, 16)
	HSUM(Z13, Y13, X13, 20)
	HSUM(Z14, Y14, X14, 24)
	HSUM(Z15, Y15, X15, 28)
	VZEROUPPER
	RET

// SGNMUL sets G = sign(s)·c with sign(0) = 0: c with its sign flipped where s is
// negative, zeroed where s is zero (K scratch). Z28 holds the sign bit, Z31 zero.
#define SGNMUL(s, c, G, K) \
	VCMPPS   $4, Z31, s, K \
	VPANDD   Z28, s, G \
	VPXORD.Z c, G, K, G

// func distBwdAVX512(q, e *float32, nblk, tailMask int, c, lambda float32, dAxis, dHalf, dEnt, next *float32)
//
// One (query, candidate) pair over nblk blocks: with G_θ, G_h twice the gradients of the
// distance wrt θ and h (bwdGo in distance_generic.go has the same logic, lane by lane),
//
//	dEnt += c·G_θ,  dAxis −= c·G_θ,  dHalf += c·G_h,
//
// where in the last block only the lanes set in tailMask are read or written. Each block
// also prefetches the matching line of next (the dEnt of a later call).
TEXT ·distBwdAVX512(SB), NOSPLIT, $0-72
	MOVQ         q+0(FP), SI
	MOVQ         e+8(FP), R8
	MOVQ         nblk+16(FP), CX
	MOVQ         tailMask+24(FP), DX
	VBROADCASTSS c+32(FP), Z26
	VBROADCASTSS lambda+36(FP), Z27
	MOVQ         dAxis+40(FP), R9
	MOVQ         dHalf+48(FP), R10
	MOVQ         dEnt+56(FP), R11
	MOVQ         next+64(FP), R12
	VPBROADCASTD distc<>+52(SB), Z28 // sign bit
	VPBROADCASTD distc<>+56(SB), Z29 // abs mask
	VBROADCASTSS distc<>+0(SB), Z30  // 0.5
	VPXORD       Z31, Z31, Z31       // 0
	MOVL         $0xffff, AX
	KMOVW        AX, K1              // lanes to write: all but in the last block
	TESTQ        CX, CX
	JLE          bwddone

bwdloop:
	CMPQ  CX, $1
	JNE   bwdbody
	KMOVW DX, K1

bwdbody:
	PREFETCHT0 (R12)
	VMOVUPS (R8), Z0   // sin u
	VMOVUPS 64(R8), Z1 // cos u

	// Sines and cosines of u − α, u − α₋, u − α₊ by the subtraction identities. The
	// sines are rounded products subtracted (no FMA), so that they are exactly 0 where
	// the two half-angles are equal (θ = a): their sign picks the subgradient, and
	// sign(0) = 0 as in the reference.
	VMULPS      0(SI), Z1, Z2
	VMULPS      64(SI), Z0, Z16
	VSUBPS      Z2, Z16, Z2      // st  = su·cos α − cu·sin α
	VMULPS      0(SI), Z0, Z3
	VFMADD231PS 64(SI), Z1, Z3   // ct  = cu·cos α + su·sin α
	VMULPS      128(SI), Z1, Z4
	VMULPS      192(SI), Z0, Z17
	VSUBPS      Z4, Z17, Z4      // sLo
	VMULPS      128(SI), Z0, Z5
	VFMADD231PS 192(SI), Z1, Z5  // cLo
	VMULPS      256(SI), Z1, Z6
	VMULPS      320(SI), Z0, Z18
	VSUBPS      Z6, Z18, Z6      // sHi
	VMULPS      256(SI), Z0, Z7
	VFMADD231PS 320(SI), Z1, Z7  // cHi

	// Inside test: sign of sLo·sHi = sign of t − β.
	VMULPS Z6, Z4, Z8
	VCMPPS $1, Z31, Z8, K2    // K2: t < β (inside)
	VCMPPS $0x1e, Z31, Z8, K3 // K3: t > β
	KORW   K2, K3, K4
	KNOTW  K4, K4             // K4: t = β (tie)

	SGNMUL(Z2, Z3, Z9, K5)  // Gt = sign(st)·ct
	SGNMUL(Z4, Z5, Z10, K5) // Gl = sign(sLo)·cLo
	SGNMUL(Z6, Z7, Z11, K5) // Gh = sign(sHi)·cHi

	// Outside term, min(lo, hi): A = ∂/∂θ, B = ∂/∂h (times 2); half each on a tie.
	VPANDD  Z29, Z4, Z12       // lo
	VPANDD  Z29, Z6, Z13       // hi
	VCMPPS  $1, Z13, Z12, K5   // K5: lo < hi
	VCMPPS  $0x1e, Z13, Z12, K6 // K6: lo > hi
	VADDPS  Z11, Z10, Z14
	VMULPS  Z30, Z14, Z14      // A = (Gl + Gh)/2
	VSUBPS  Z11, Z10, Z15
	VMULPS  Z30, Z15, Z15      // B = (Gl − Gh)/2
	VMOVAPS Z10, K5, Z14       // lo < hi: A = Gl
	VMOVAPS Z10, K5, Z15       //          B = Gl
	VMOVAPS Z11, K6, Z14       // lo > hi: A = Gh
	VSUBPS  Z11, Z31, K6, Z15  //          B = −Gh

	// With the inside term λ·min(t, β): G_θ in Z14, G_h in Z15.
	VMULPS      Z27, Z9, Z16       // L = λ·Gt
	VFMADD231PS Z30, Z16, K4, Z14  // tie:    G_θ = A + L/2
	VMOVAPS     Z16, K2, Z14       // inside: G_θ = L
	VMOVUPS     448(SI), Z17       // λ·G_β
	VADDPS      Z17, Z15, K3, Z15  // t > β:  G_h = B + λG_β
	VFMADD231PS Z30, Z17, K4, Z15  // tie:    G_h = B + λG_β/2
	VMOVAPS     Z31, K2, Z15       // inside: G_h = 0

	VMOVUPS.Z    (R11), K1, Z18
	VFMADD231PS  Z26, Z14, Z18 // dEnt += c·G_θ
	VMOVUPS      Z18, K1, (R11)
	VMOVUPS.Z    (R9), K1, Z19
	VFNMADD231PS Z26, Z14, Z19 // dAxis −= c·G_θ
	VMOVUPS      Z19, K1, (R9)
	VMOVUPS.Z    (R10), K1, Z20
	VFMADD231PS  Z26, Z15, Z20 // dHalf += c·G_h
	VMOVUPS      Z20, K1, (R10)

	ADDQ $512, SI
	ADDQ $128, R8
	ADDQ $64, R9
	ADDQ $64, R10
	ADDQ $64, R11
	ADDQ $64, R12
	DECQ CX
	JNZ  bwdloop

bwddone:
	VZEROUPPER
	RET
