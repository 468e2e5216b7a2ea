#include "textflag.h"

// AVX2 (with FMA) versions of the AVX-512 inner loops in distance_amd64.s, for CPUs
// without AVX-512. A 16-lane block is two 8-lane halves, and every lane runs the
// instruction sequence of the AVX-512 loop (VRANGEPS and the masked operations become
// VANDPS, VMINPS and VBLENDVPS with the same results; the forward sums keep 16 lanes
// and reduce them in the AVX-512 loop's order), so these kernels give the AVX-512
// kernels' bits (TestDistanceAVX2MatchesAVX512 checks it where both run). A NaN is the
// exception: where one operand of min(|st|, β) is NaN and the other a number, VMINPS
// gives β and VRANGEPS the number, so an inside sum can differ (NaN here, a number
// there, for a NaN or infinite h); the outside sums, and so the distances, are NaN in
// both ("NaN" in distance.go).

// Constants, 8 copies each (one ymm), as float32 (or int32) bit patterns.
DATA dist2c<>+0(SB)/4, $0x3f000000  // 0.5
DATA dist2c<>+4(SB)/4, $0x3f000000
DATA dist2c<>+8(SB)/4, $0x3f000000
DATA dist2c<>+12(SB)/4, $0x3f000000
DATA dist2c<>+16(SB)/4, $0x3f000000
DATA dist2c<>+20(SB)/4, $0x3f000000
DATA dist2c<>+24(SB)/4, $0x3f000000
DATA dist2c<>+28(SB)/4, $0x3f000000
DATA dist2c<>+32(SB)/4, $0x3f22f983  // 2/π
DATA dist2c<>+36(SB)/4, $0x3f22f983
DATA dist2c<>+40(SB)/4, $0x3f22f983
DATA dist2c<>+44(SB)/4, $0x3f22f983
DATA dist2c<>+48(SB)/4, $0x3f22f983
DATA dist2c<>+52(SB)/4, $0x3f22f983
DATA dist2c<>+56(SB)/4, $0x3f22f983
DATA dist2c<>+60(SB)/4, $0x3f22f983
DATA dist2c<>+64(SB)/4, $0x3fc90fdb  // p1
DATA dist2c<>+68(SB)/4, $0x3fc90fdb
DATA dist2c<>+72(SB)/4, $0x3fc90fdb
DATA dist2c<>+76(SB)/4, $0x3fc90fdb
DATA dist2c<>+80(SB)/4, $0x3fc90fdb
DATA dist2c<>+84(SB)/4, $0x3fc90fdb
DATA dist2c<>+88(SB)/4, $0x3fc90fdb
DATA dist2c<>+92(SB)/4, $0x3fc90fdb
DATA dist2c<>+96(SB)/4, $0xb33bbd2e  // p2
DATA dist2c<>+100(SB)/4, $0xb33bbd2e
DATA dist2c<>+104(SB)/4, $0xb33bbd2e
DATA dist2c<>+108(SB)/4, $0xb33bbd2e
DATA dist2c<>+112(SB)/4, $0xb33bbd2e
DATA dist2c<>+116(SB)/4, $0xb33bbd2e
DATA dist2c<>+120(SB)/4, $0xb33bbd2e
DATA dist2c<>+124(SB)/4, $0xb33bbd2e
DATA dist2c<>+128(SB)/4, $0xa6f72ced  // p3
DATA dist2c<>+132(SB)/4, $0xa6f72ced
DATA dist2c<>+136(SB)/4, $0xa6f72ced
DATA dist2c<>+140(SB)/4, $0xa6f72ced
DATA dist2c<>+144(SB)/4, $0xa6f72ced
DATA dist2c<>+148(SB)/4, $0xa6f72ced
DATA dist2c<>+152(SB)/4, $0xa6f72ced
DATA dist2c<>+156(SB)/4, $0xa6f72ced
DATA dist2c<>+160(SB)/4, $0xbe2aaaa3  // s1
DATA dist2c<>+164(SB)/4, $0xbe2aaaa3
DATA dist2c<>+168(SB)/4, $0xbe2aaaa3
DATA dist2c<>+172(SB)/4, $0xbe2aaaa3
DATA dist2c<>+176(SB)/4, $0xbe2aaaa3
DATA dist2c<>+180(SB)/4, $0xbe2aaaa3
DATA dist2c<>+184(SB)/4, $0xbe2aaaa3
DATA dist2c<>+188(SB)/4, $0xbe2aaaa3
DATA dist2c<>+192(SB)/4, $0x3c08839e  // s2
DATA dist2c<>+196(SB)/4, $0x3c08839e
DATA dist2c<>+200(SB)/4, $0x3c08839e
DATA dist2c<>+204(SB)/4, $0x3c08839e
DATA dist2c<>+208(SB)/4, $0x3c08839e
DATA dist2c<>+212(SB)/4, $0x3c08839e
DATA dist2c<>+216(SB)/4, $0x3c08839e
DATA dist2c<>+220(SB)/4, $0x3c08839e
DATA dist2c<>+224(SB)/4, $0xb94ca1f9  // s3
DATA dist2c<>+228(SB)/4, $0xb94ca1f9
DATA dist2c<>+232(SB)/4, $0xb94ca1f9
DATA dist2c<>+236(SB)/4, $0xb94ca1f9
DATA dist2c<>+240(SB)/4, $0xb94ca1f9
DATA dist2c<>+244(SB)/4, $0xb94ca1f9
DATA dist2c<>+248(SB)/4, $0xb94ca1f9
DATA dist2c<>+252(SB)/4, $0xb94ca1f9
DATA dist2c<>+256(SB)/4, $0x3d2aaaa5  // c1
DATA dist2c<>+260(SB)/4, $0x3d2aaaa5
DATA dist2c<>+264(SB)/4, $0x3d2aaaa5
DATA dist2c<>+268(SB)/4, $0x3d2aaaa5
DATA dist2c<>+272(SB)/4, $0x3d2aaaa5
DATA dist2c<>+276(SB)/4, $0x3d2aaaa5
DATA dist2c<>+280(SB)/4, $0x3d2aaaa5
DATA dist2c<>+284(SB)/4, $0x3d2aaaa5
DATA dist2c<>+288(SB)/4, $0xbab6061a  // c2
DATA dist2c<>+292(SB)/4, $0xbab6061a
DATA dist2c<>+296(SB)/4, $0xbab6061a
DATA dist2c<>+300(SB)/4, $0xbab6061a
DATA dist2c<>+304(SB)/4, $0xbab6061a
DATA dist2c<>+308(SB)/4, $0xbab6061a
DATA dist2c<>+312(SB)/4, $0xbab6061a
DATA dist2c<>+316(SB)/4, $0xbab6061a
DATA dist2c<>+320(SB)/4, $0x37ccf5ce  // c3
DATA dist2c<>+324(SB)/4, $0x37ccf5ce
DATA dist2c<>+328(SB)/4, $0x37ccf5ce
DATA dist2c<>+332(SB)/4, $0x37ccf5ce
DATA dist2c<>+336(SB)/4, $0x37ccf5ce
DATA dist2c<>+340(SB)/4, $0x37ccf5ce
DATA dist2c<>+344(SB)/4, $0x37ccf5ce
DATA dist2c<>+348(SB)/4, $0x37ccf5ce
DATA dist2c<>+352(SB)/4, $0x3f800000  // 1.0
DATA dist2c<>+356(SB)/4, $0x3f800000
DATA dist2c<>+360(SB)/4, $0x3f800000
DATA dist2c<>+364(SB)/4, $0x3f800000
DATA dist2c<>+368(SB)/4, $0x3f800000
DATA dist2c<>+372(SB)/4, $0x3f800000
DATA dist2c<>+376(SB)/4, $0x3f800000
DATA dist2c<>+380(SB)/4, $0x3f800000
DATA dist2c<>+384(SB)/4, $0x46000000  // 8192 (sincosLimit)
DATA dist2c<>+388(SB)/4, $0x46000000
DATA dist2c<>+392(SB)/4, $0x46000000
DATA dist2c<>+396(SB)/4, $0x46000000
DATA dist2c<>+400(SB)/4, $0x46000000
DATA dist2c<>+404(SB)/4, $0x46000000
DATA dist2c<>+408(SB)/4, $0x46000000
DATA dist2c<>+412(SB)/4, $0x46000000
DATA dist2c<>+416(SB)/4, $0x80000000  // sign bit
DATA dist2c<>+420(SB)/4, $0x80000000
DATA dist2c<>+424(SB)/4, $0x80000000
DATA dist2c<>+428(SB)/4, $0x80000000
DATA dist2c<>+432(SB)/4, $0x80000000
DATA dist2c<>+436(SB)/4, $0x80000000
DATA dist2c<>+440(SB)/4, $0x80000000
DATA dist2c<>+444(SB)/4, $0x80000000
DATA dist2c<>+448(SB)/4, $0x7fffffff  // all but the sign bit
DATA dist2c<>+452(SB)/4, $0x7fffffff
DATA dist2c<>+456(SB)/4, $0x7fffffff
DATA dist2c<>+460(SB)/4, $0x7fffffff
DATA dist2c<>+464(SB)/4, $0x7fffffff
DATA dist2c<>+468(SB)/4, $0x7fffffff
DATA dist2c<>+472(SB)/4, $0x7fffffff
DATA dist2c<>+476(SB)/4, $0x7fffffff
DATA dist2c<>+480(SB)/4, $0x00000001  // int32 1
DATA dist2c<>+484(SB)/4, $0x00000001
DATA dist2c<>+488(SB)/4, $0x00000001
DATA dist2c<>+492(SB)/4, $0x00000001
DATA dist2c<>+496(SB)/4, $0x00000001
DATA dist2c<>+500(SB)/4, $0x00000001
DATA dist2c<>+504(SB)/4, $0x00000001
DATA dist2c<>+508(SB)/4, $0x00000001
GLOBL dist2c<>(SB), RODATA|NOPTR, $512

#define C_HALF    dist2c<>+0(SB)
#define C_2PI     dist2c<>+32(SB)
#define C_P1      dist2c<>+64(SB)
#define C_P2      dist2c<>+96(SB)
#define C_P3      dist2c<>+128(SB)
#define C_S1      dist2c<>+160(SB)
#define C_S2      dist2c<>+192(SB)
#define C_S3      dist2c<>+224(SB)
#define C_C1      dist2c<>+256(SB)
#define C_C2      dist2c<>+288(SB)
#define C_C3      dist2c<>+320(SB)
#define C_ONE     dist2c<>+352(SB)
#define C_LIMIT   dist2c<>+384(SB)
#define C_SIGN    dist2c<>+416(SB)
#define C_ABS     dist2c<>+448(SB)
#define C_INT1    dist2c<>+480(SB)

// SCHALF computes the sines and cosines of half the 8 angles at off(SI) into off(DI)
// and 64+off(DI), as sincosHalfAVX512 does for 16. Y8–Y14 hold 0.5, 2/π, p1, p2, p3,
// the abs mask and the limit; Y15 collects the out-of-range lanes.
#define SCHALF(off) \
	VMULPS       off(SI), Y8, Y0 \
	VANDPS       Y13, Y0, Y1 \
	VCMPPS       $6, Y14, Y1, Y1 \
	VORPS        Y1, Y15, Y15 \
	VMULPS       Y9, Y0, Y2 \
	VROUNDPS     $0, Y2, Y2 \
	VFNMADD231PS Y10, Y2, Y0 \
	VFNMADD231PS Y11, Y2, Y0 \
	VFNMADD231PS Y12, Y2, Y0 \
	VCVTPS2DQ    Y2, Y3 \
	VMULPS       Y0, Y0, Y4 \
	VMOVUPS      C_S3, Y5 \
	VFMADD213PS  C_S2, Y4, Y5 \
	VFMADD213PS  C_S1, Y4, Y5 \
	VMULPS       Y4, Y5, Y5 \
	VFMADD213PS  Y0, Y0, Y5 \
	VMOVUPS      C_C3, Y6 \
	VFMADD213PS  C_C2, Y4, Y6 \
	VFMADD213PS  C_C1, Y4, Y6 \
	VMULPS       Y4, Y4, Y7 \
	VMOVUPS      C_ONE, Y1 \
	VFNMADD231PS Y8, Y4, Y1 \
	VFMADD213PS  Y1, Y7, Y6 \
	VPAND        C_INT1, Y3, Y2 \
	VPCMPEQD     C_INT1, Y2, Y2 \
	VBLENDVPS    Y2, Y6, Y5, Y0 \
	VBLENDVPS    Y2, Y5, Y6, Y1 \
	VPSLLD       $30, Y3, Y4 \
	VPAND        C_SIGN, Y4, Y4 \
	VXORPS       Y4, Y0, Y0 \
	VPADDD       C_INT1, Y3, Y7 \
	VPSLLD       $30, Y7, Y7 \
	VPAND        C_SIGN, Y7, Y7 \
	VXORPS       Y7, Y1, Y1 \
	VMOVUPS      Y0, off(DI) \
	VMOVUPS      Y1, 64+off(DI)

// func sincosHalfAVX2(x *float32, nblk int, out *float32, stride int, next *float32) (bad int)
//
// sincosHalfAVX512 with 8-lane halves: the same reduction, polynomials and quadrant
// selection (VPTESTMD and VBLENDMPS become VPAND, VPCMPEQD and VBLENDVPS).
TEXT ·sincosHalfAVX2(SB), NOSPLIT, $0-48
	MOVQ         x+0(FP), SI
	MOVQ         nblk+8(FP), CX
	MOVQ         out+16(FP), DI
	MOVQ         stride+24(FP), BX
	MOVQ         next+32(FP), R8
	SHLQ         $2, BX
	VMOVUPS      C_HALF, Y8
	VMOVUPS      C_2PI, Y9
	VMOVUPS      C_P1, Y10
	VMOVUPS      C_P2, Y11
	VMOVUPS      C_P3, Y12
	VMOVUPS      C_ABS, Y13
	VMOVUPS      C_LIMIT, Y14
	VXORPS       Y15, Y15, Y15
	TESTQ        CX, CX
	JLE          sc2done

sc2loop:
	PREFETCHT0 (R8)
	SCHALF(0)
	SCHALF(32)
	ADDQ $64, SI
	ADDQ $64, R8
	ADDQ BX, DI
	DECQ CX
	JNZ  sc2loop

sc2done:
	VMOVMSKPS Y15, AX
	MOVQ      AX, bad+40(FP)
	VZEROUPPER
	RET

// FWD2HALF scores one entity's half block (at off within its block at base + AX) against
// the query block at SI, as FWDENT does, into the accumulators acco and acci. Y4 holds
// zero and Y5 the abs mask; Y0–Y3 are scratch. VMINPS x, y (Intel's order: here |st|, β
// and lo, hi) gives y where either is NaN: min(lo, hi) is NaN wherever lo or hi is, as
// the tables make them NaN together ("NaN" in distance.go).
#define FWD2HALF(base, off, acco, acci) \
	VMOVUPS     off(base)(AX*1), Y0 \
	VMOVUPS     64+off(base)(AX*1), Y1 \
	VMULPS      off(SI), Y1, Y2 \
	VFMSUB231PS 64+off(SI), Y0, Y2 \
	VANDPS      Y5, Y2, Y2 \
	VMINPS      384+off(SI), Y2, Y2 \
	VADDPS      Y2, acci, acci \
	VMULPS      128+off(SI), Y1, Y2 \
	VFMSUB231PS 192+off(SI), Y0, Y2 \
	VMULPS      256+off(SI), Y1, Y3 \
	VFMSUB231PS 320+off(SI), Y0, Y3 \
	VMULPS      Y3, Y2, Y1 \
	VCMPPS      $5, Y4, Y1, Y1 \
	VANDPS      Y5, Y2, Y2 \
	VANDPS      Y5, Y3, Y3 \
	VMINPS      Y3, Y2, Y2 \
	VANDPS      Y1, Y2, Y2 \
	VADDPS      Y2, acco, acco

// HSUM2 adds the two halves lo and hi of a 16-lane sum and reduces it in HSUM's order
// (halves, quarters, pairs), storing lane 0 at off(DI). Uses Y0/X0.
#define HSUM2(lo, hi, X, off) \
	VADDPS       hi, lo, lo \
	VEXTRACTF128 $1, lo, X0 \
	VADDPS       X0, X, X \
	VPERMILPS    $0x4e, X, X0 \
	VADDPS       X0, X, X \
	VPERMILPS    $0xb1, X, X0 \
	VADDPS       X0, X, X \
	VMOVSS       X, off(DI)

// func distFwd2AVX2(q, e0, e1 *float32, nblk int, out *[4]float32)
//
// distFwd4AVX512 for two entities: out[2i] = Σ outside distance, out[2i+1] = Σ inside
// distance of entity row ei, summed in 16 lanes (two ymm per sum) over nblk blocks.
TEXT ·distFwd2AVX2(SB), NOSPLIT, $0-40
	MOVQ    q+0(FP), SI
	MOVQ    e0+8(FP), R8
	MOVQ    e1+16(FP), R9
	MOVQ    nblk+24(FP), CX
	MOVQ    out+32(FP), DI
	XORQ    AX, AX
	VXORPS  Y4, Y4, Y4
	VMOVUPS C_ABS, Y5
	VXORPS  Y8, Y8, Y8
	VXORPS  Y9, Y9, Y9
	VXORPS  Y10, Y10, Y10
	VXORPS  Y11, Y11, Y11
	VXORPS  Y12, Y12, Y12
	VXORPS  Y13, Y13, Y13
	VXORPS  Y14, Y14, Y14
	VXORPS  Y15, Y15, Y15
	TESTQ   CX, CX
	JLE     fwd2reduce

fwd2loop:
	FWD2HALF(R8, 0, Y8, Y10)
	FWD2HALF(R8, 32, Y9, Y11)
	FWD2HALF(R9, 0, Y12, Y14)
	FWD2HALF(R9, 32, Y13, Y15)
	ADDQ $512, SI
	ADDQ $128, AX
	DECQ CX
	JNZ  fwd2loop

fwd2reduce:
	HSUM2(Y8, Y9, X8, 0)
	HSUM2(Y10, Y11, X10, 4)
	HSUM2(Y12, Y13, X12, 8)
	HSUM2(Y14, Y15, X14, 12)
	VZEROUPPER
	RET

// BWDCORE computes, for the half block at off (bytes within each 16-lane vector) of the
// entity block at R8 and the query block at SI, twice the gradients of the distance wrt θ
// (into Y5) and h (into Y7), as distBwdAVX512 does lane by lane: its masks K2–K6 are
// compare results here (inside p < 0 in Y2, outside p > 0 in Y3, the tie p = 0 in Y4;
// lo < hi and lo > hi), its masked moves VBLENDVPS. Y10 holds zero, Y11 0.5, Y12 the abs
// mask, Y13 the sign bit, Y14 λ.
#define BWDCORE(off) \
	VMOVUPS      off(R8), Y0 \
	VMOVUPS      64+off(R8), Y1 \
	VMULPS       off(SI), Y1, Y2 \
	VMULPS       64+off(SI), Y0, Y3 \
	VSUBPS       Y2, Y3, Y2 \
	VMULPS       off(SI), Y0, Y3 \
	VFMADD231PS  64+off(SI), Y1, Y3 \
	VMULPS       128+off(SI), Y1, Y4 \
	VMULPS       192+off(SI), Y0, Y5 \
	VSUBPS       Y4, Y5, Y4 \
	VMULPS       128+off(SI), Y0, Y5 \
	VFMADD231PS  192+off(SI), Y1, Y5 \
	VMULPS       256+off(SI), Y1, Y6 \
	VMULPS       320+off(SI), Y0, Y7 \
	VSUBPS       Y6, Y7, Y6 \
	VMULPS       256+off(SI), Y0, Y7 \
	VFMADD231PS  320+off(SI), Y1, Y7 \
	VMULPS       Y6, Y4, Y8 \
	VCMPPS       $4, Y10, Y2, Y0 \
	VANDPS       Y13, Y2, Y2 \
	VXORPS       Y3, Y2, Y2 \
	VANDPS       Y0, Y2, Y9 \
	VANDPS       Y12, Y4, Y0 \
	VANDPS       Y12, Y6, Y1 \
	VCMPPS       $4, Y10, Y4, Y2 \
	VANDPS       Y13, Y4, Y4 \
	VXORPS       Y5, Y4, Y4 \
	VANDPS       Y2, Y4, Y4 \
	VCMPPS       $4, Y10, Y6, Y2 \
	VANDPS       Y13, Y6, Y6 \
	VXORPS       Y7, Y6, Y6 \
	VANDPS       Y2, Y6, Y6 \
	VCMPPS       $1, Y1, Y0, Y2 \
	VCMPPS       $0x1e, Y1, Y0, Y3 \
	VADDPS       Y6, Y4, Y5 \
	VMULPS       Y11, Y5, Y5 \
	VSUBPS       Y6, Y4, Y7 \
	VMULPS       Y11, Y7, Y7 \
	VBLENDVPS    Y2, Y4, Y5, Y5 \
	VBLENDVPS    Y2, Y4, Y7, Y7 \
	VBLENDVPS    Y3, Y6, Y5, Y5 \
	VSUBPS       Y6, Y10, Y0 \
	VBLENDVPS    Y3, Y0, Y7, Y7 \
	VCMPPS       $1, Y10, Y8, Y2 \
	VCMPPS       $0x1e, Y10, Y8, Y3 \
	VCMPPS       $8, Y10, Y8, Y4 \
	VMULPS       Y14, Y9, Y6 \
	VMOVAPS      Y5, Y0 \
	VFMADD231PS  Y11, Y6, Y0 \
	VBLENDVPS    Y4, Y0, Y5, Y5 \
	VBLENDVPS    Y2, Y6, Y5, Y5 \
	VMOVUPS      448+off(SI), Y1 \
	VADDPS       Y1, Y7, Y0 \
	VBLENDVPS    Y3, Y0, Y7, Y7 \
	VMOVAPS      Y7, Y0 \
	VFMADD231PS  Y11, Y1, Y0 \
	VBLENDVPS    Y4, Y0, Y7, Y7 \
	VBLENDVPS    Y2, Y10, Y7, Y7

// BWDSTORE adds c·G_θ to dEnt, subtracts it from dAxis and adds c·G_h to dHalf, for the
// 8 lanes at off (Y15 holds c).
#define BWDSTORE(off) \
	VMOVUPS      off(R11), Y0 \
	VFMADD231PS  Y15, Y5, Y0 \
	VMOVUPS      Y0, off(R11) \
	VMOVUPS      off(R9), Y0 \
	VFNMADD231PS Y15, Y5, Y0 \
	VMOVUPS      Y0, off(R9) \
	VMOVUPS      off(R10), Y0 \
	VFMADD231PS  Y15, Y7, Y0 \
	VMOVUPS      Y0, off(R10)

// BWDSTOREMASK is BWDSTORE for the lanes set in the mask at off(R13) alone (the last
// block): the others are neither read nor written.
#define BWDSTOREMASK(off) \
	VMOVUPS      off(R13), Y1 \
	VMASKMOVPS   off(R11), Y1, Y0 \
	VFMADD231PS  Y15, Y5, Y0 \
	VMASKMOVPS   Y0, Y1, off(R11) \
	VMASKMOVPS   off(R9), Y1, Y0 \
	VFNMADD231PS Y15, Y5, Y0 \
	VMASKMOVPS   Y0, Y1, off(R9) \
	VMASKMOVPS   off(R10), Y1, Y0 \
	VFMADD231PS  Y15, Y7, Y0 \
	VMASKMOVPS   Y0, Y1, off(R10)

// func distBwdAVX2(q, e *float32, nblk int, c, lambda float32, dAxis, dHalf, dEnt, next *float32, tail *[16]int32)
//
// distBwdAVX512 with 8-lane halves; in the last block only the lanes whose tail entry is
// −1 are read or written.
TEXT ·distBwdAVX2(SB), NOSPLIT, $0-72
	MOVQ         q+0(FP), SI
	MOVQ         e+8(FP), R8
	MOVQ         nblk+16(FP), CX
	VBROADCASTSS c+24(FP), Y15
	VBROADCASTSS lambda+28(FP), Y14
	MOVQ         dAxis+32(FP), R9
	MOVQ         dHalf+40(FP), R10
	MOVQ         dEnt+48(FP), R11
	MOVQ         next+56(FP), R12
	MOVQ         tail+64(FP), R13
	VMOVUPS      C_SIGN, Y13
	VMOVUPS      C_ABS, Y12
	VMOVUPS      C_HALF, Y11
	VXORPS       Y10, Y10, Y10
	DECQ         CX
	JL           bwd2done
	JZ           bwd2last

bwd2loop:
	PREFETCHT0 (R12)
	BWDCORE(0)
	BWDSTORE(0)
	BWDCORE(32)
	BWDSTORE(32)
	ADDQ $512, SI
	ADDQ $128, R8
	ADDQ $64, R9
	ADDQ $64, R10
	ADDQ $64, R11
	ADDQ $64, R12
	DECQ CX
	JNZ  bwd2loop

bwd2last:
	BWDCORE(0)
	BWDSTOREMASK(0)
	BWDCORE(32)
	BWDSTOREMASK(32)

bwd2done:
	VZEROUPPER
	RET
