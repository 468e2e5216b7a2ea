#include "textflag.h"

// AVX2 (with FMA) versions of tanhAVX512, sinCosAVX512 and angleBwdAVX512 for CPUs without
// AVX-512: 8 lanes per block, each lane running the AVX-512 loop's instruction sequence
// (masked moves become VBLENDVPS, VPTESTMD a VPAND and VPCMPEQD), so that they give its
// bits. Whole blocks only: the Go wrappers run a partial last block through a zero-padded
// copy, as the AVX-512 loops' masked loads do.

DATA vmc2<>+0(SB)/4, $0x7fffffff  // all but the sign bit
DATA vmc2<>+4(SB)/4, $0x3ba059dd  // beta0 = 4.89352518554385e-03
DATA vmc2<>+8(SB)/4, $0x40490fdb  // float32(π)
DATA vmc2<>+12(SB)/4, $0x3f800000 // 1
GLOBL vmc2<>(SB), RODATA|NOPTR, $16

// func tanhAVX2(dst, src *float32, nblk int, c *[16]float32)
TEXT ·tanhAVX2(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         nblk+16(FP), CX
	MOVQ         c+24(FP), AX
	VBROADCASTSS 0(AX), Y6        // div
	VBROADCASTSS 12(AX), Y7       // clamp
	VBROADCASTSS 16(AX), Y8       // −clamp
	VBROADCASTSS 20(AX), Y9       // tiny
	VBROADCASTSS vmc2<>+0(SB), Y10 // abs mask
	VBROADCASTSS 24(AX), Y11      // α13
	VBROADCASTSS 28(AX), Y12      // α11
	VBROADCASTSS 32(AX), Y13      // α9
	VBROADCASTSS 36(AX), Y14      // α7
	VBROADCASTSS 40(AX), Y15      // α5
	TESTQ        CX, CX
	JLE          t2done

t2loop:
	VMOVUPS      (SI), Y0
	VDIVPS       Y6, Y0, Y0       // a = x/div
	VANDPS       Y10, Y0, Y1      // |a|
	VCMPPS       $1, Y9, Y1, Y1   // |a| < tiny
	VMINPS       Y0, Y7, Y2       // clamp < a ? clamp : a (NaN stays)
	VMAXPS       Y2, Y8, Y2       // −clamp > x ? −clamp : x
	VMULPS       Y2, Y2, Y3       // x²
	VMOVAPS      Y11, Y4
	VFMADD213PS  Y12, Y3, Y4      // p = α13·x² + α11
	VFMADD213PS  Y13, Y3, Y4      // ·x² + α9
	VFMADD213PS  Y14, Y3, Y4      // ·x² + α7
	VFMADD213PS  Y15, Y3, Y4      // ·x² + α5
	VBROADCASTSS 44(AX), Y5
	VFMADD213PS  Y5, Y3, Y4       // ·x² + α3
	VBROADCASTSS 48(AX), Y5
	VFMADD213PS  Y5, Y3, Y4       // ·x² + α1
	VMULPS       Y2, Y4, Y4       // p·x
	VBROADCASTSS 52(AX), Y5       // β6
	VBROADCASTSS 56(AX), Y2
	VFMADD213PS  Y2, Y3, Y5       // q = β6·x² + β4
	VBROADCASTSS 60(AX), Y2
	VFMADD213PS  Y2, Y3, Y5       // ·x² + β2
	VBROADCASTSS vmc2<>+4(SB), Y2
	VFMADD213PS  Y2, Y3, Y5       // ·x² + β0
	VDIVPS       Y5, Y4, Y4       // t = p/q
	VBLENDVPS    Y1, Y0, Y4, Y4   // tiny: t = a
	VBROADCASTSS 4(AX), Y2        // mul
	VBROADCASTSS 8(AX), Y3        // add
	VFMADD213PS  Y3, Y2, Y4       // mul·t + add
	VMOVUPS      Y4, (DI)
	ADDQ         $32, SI
	ADDQ         $32, DI
	DECQ         CX
	JNZ          t2loop

t2done:
	VZEROUPPER
	RET

// func overAVX2(masks *uint8, src *float32, nblk int, lim uint32)
// masks[b] = the lanes i of block b (8 floats from src+32b) whose |bits| > lim, as
// VMOVMSKPS sets them (bit i for lane i): the lanes where lim − |bits| is negative, for
// the values lim takes (tanhFixSaturated's: below 2³¹ − 1, or 2³² − 1, which is −1 and
// marks every lane). |bits| ≤ 0x7fffffff, so the signed compare serves.
TEXT ·overAVX2(SB), NOSPLIT, $0-28
	MOVQ         masks+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         nblk+16(FP), CX
	MOVL         lim+24(FP), AX
	VMOVD        AX, X1
	VPBROADCASTD X1, Y1
	VPBROADCASTD vmc2<>+0(SB), Y2 // all but the sign bit
	TESTQ        CX, CX
	JLE          o2done

o2loop:
	VPAND     (SI), Y2, Y0
	VPCMPGTD  Y1, Y0, Y0 // |bits| > lim
	VMOVMSKPS Y0, AX
	MOVB      AX, (DI)
	ADDQ      $32, SI
	INCQ      DI
	DECQ      CX
	JNZ       o2loop

o2done:
	VZEROUPPER
	RET

// func angleBwdAVX2(dRaw, dTheta, theta *float32, nblk int, c float32)
TEXT ·angleBwdAVX2(SB), NOSPLIT, $0-36
	MOVQ         dRaw+0(FP), DI
	MOVQ         dTheta+8(FP), SI
	MOVQ         theta+16(FP), R8
	MOVQ         nblk+24(FP), CX
	VBROADCASTSS c+32(FP), Y6
	VBROADCASTSS vmc2<>+8(SB), Y7  // π
	VBROADCASTSS vmc2<>+12(SB), Y8 // 1
	TESTQ        CX, CX
	JLE          a2done

a2loop:
	VMOVUPS (R8), Y0
	VDIVPS  Y7, Y0, Y0 // t = θ/π
	VMULPS  Y0, Y0, Y0 // t²
	VSUBPS  Y0, Y8, Y0 // 1 − t²
	VMOVUPS (SI), Y1
	VMULPS  Y6, Y1, Y1 // dθ·c
	VMULPS  Y0, Y1, Y1 // ·(1 − t²)
	VMOVUPS (DI), Y2
	VADDPS  Y1, Y2, Y2
	VMOVUPS Y2, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	ADDQ    $32, R8
	DECQ    CX
	JNZ     a2loop

a2done:
	VZEROUPPER
	RET

// Constants of sinCosAVX2, 8 copies each (one ymm).
DATA scc2<>+0(SB)/4, $0x3f000000  // 0.5
DATA scc2<>+4(SB)/4, $0x3f000000
DATA scc2<>+8(SB)/4, $0x3f000000
DATA scc2<>+12(SB)/4, $0x3f000000
DATA scc2<>+16(SB)/4, $0x3f000000
DATA scc2<>+20(SB)/4, $0x3f000000
DATA scc2<>+24(SB)/4, $0x3f000000
DATA scc2<>+28(SB)/4, $0x3f000000
DATA scc2<>+32(SB)/4, $0x3f22f983  // 2/π
DATA scc2<>+36(SB)/4, $0x3f22f983
DATA scc2<>+40(SB)/4, $0x3f22f983
DATA scc2<>+44(SB)/4, $0x3f22f983
DATA scc2<>+48(SB)/4, $0x3f22f983
DATA scc2<>+52(SB)/4, $0x3f22f983
DATA scc2<>+56(SB)/4, $0x3f22f983
DATA scc2<>+60(SB)/4, $0x3f22f983
DATA scc2<>+64(SB)/4, $0x3fc90fdb  // p1
DATA scc2<>+68(SB)/4, $0x3fc90fdb
DATA scc2<>+72(SB)/4, $0x3fc90fdb
DATA scc2<>+76(SB)/4, $0x3fc90fdb
DATA scc2<>+80(SB)/4, $0x3fc90fdb
DATA scc2<>+84(SB)/4, $0x3fc90fdb
DATA scc2<>+88(SB)/4, $0x3fc90fdb
DATA scc2<>+92(SB)/4, $0x3fc90fdb
DATA scc2<>+96(SB)/4, $0xb33bbd2e  // p2
DATA scc2<>+100(SB)/4, $0xb33bbd2e
DATA scc2<>+104(SB)/4, $0xb33bbd2e
DATA scc2<>+108(SB)/4, $0xb33bbd2e
DATA scc2<>+112(SB)/4, $0xb33bbd2e
DATA scc2<>+116(SB)/4, $0xb33bbd2e
DATA scc2<>+120(SB)/4, $0xb33bbd2e
DATA scc2<>+124(SB)/4, $0xb33bbd2e
DATA scc2<>+128(SB)/4, $0xa6f72ced  // p3
DATA scc2<>+132(SB)/4, $0xa6f72ced
DATA scc2<>+136(SB)/4, $0xa6f72ced
DATA scc2<>+140(SB)/4, $0xa6f72ced
DATA scc2<>+144(SB)/4, $0xa6f72ced
DATA scc2<>+148(SB)/4, $0xa6f72ced
DATA scc2<>+152(SB)/4, $0xa6f72ced
DATA scc2<>+156(SB)/4, $0xa6f72ced
DATA scc2<>+160(SB)/4, $0xbe2aaaa3  // s1
DATA scc2<>+164(SB)/4, $0xbe2aaaa3
DATA scc2<>+168(SB)/4, $0xbe2aaaa3
DATA scc2<>+172(SB)/4, $0xbe2aaaa3
DATA scc2<>+176(SB)/4, $0xbe2aaaa3
DATA scc2<>+180(SB)/4, $0xbe2aaaa3
DATA scc2<>+184(SB)/4, $0xbe2aaaa3
DATA scc2<>+188(SB)/4, $0xbe2aaaa3
DATA scc2<>+192(SB)/4, $0x3c08839e  // s2
DATA scc2<>+196(SB)/4, $0x3c08839e
DATA scc2<>+200(SB)/4, $0x3c08839e
DATA scc2<>+204(SB)/4, $0x3c08839e
DATA scc2<>+208(SB)/4, $0x3c08839e
DATA scc2<>+212(SB)/4, $0x3c08839e
DATA scc2<>+216(SB)/4, $0x3c08839e
DATA scc2<>+220(SB)/4, $0x3c08839e
DATA scc2<>+224(SB)/4, $0xb94ca1f9  // s3
DATA scc2<>+228(SB)/4, $0xb94ca1f9
DATA scc2<>+232(SB)/4, $0xb94ca1f9
DATA scc2<>+236(SB)/4, $0xb94ca1f9
DATA scc2<>+240(SB)/4, $0xb94ca1f9
DATA scc2<>+244(SB)/4, $0xb94ca1f9
DATA scc2<>+248(SB)/4, $0xb94ca1f9
DATA scc2<>+252(SB)/4, $0xb94ca1f9
DATA scc2<>+256(SB)/4, $0x3d2aaaa5  // c1
DATA scc2<>+260(SB)/4, $0x3d2aaaa5
DATA scc2<>+264(SB)/4, $0x3d2aaaa5
DATA scc2<>+268(SB)/4, $0x3d2aaaa5
DATA scc2<>+272(SB)/4, $0x3d2aaaa5
DATA scc2<>+276(SB)/4, $0x3d2aaaa5
DATA scc2<>+280(SB)/4, $0x3d2aaaa5
DATA scc2<>+284(SB)/4, $0x3d2aaaa5
DATA scc2<>+288(SB)/4, $0xbab6061a  // c2
DATA scc2<>+292(SB)/4, $0xbab6061a
DATA scc2<>+296(SB)/4, $0xbab6061a
DATA scc2<>+300(SB)/4, $0xbab6061a
DATA scc2<>+304(SB)/4, $0xbab6061a
DATA scc2<>+308(SB)/4, $0xbab6061a
DATA scc2<>+312(SB)/4, $0xbab6061a
DATA scc2<>+316(SB)/4, $0xbab6061a
DATA scc2<>+320(SB)/4, $0x37ccf5ce  // c3
DATA scc2<>+324(SB)/4, $0x37ccf5ce
DATA scc2<>+328(SB)/4, $0x37ccf5ce
DATA scc2<>+332(SB)/4, $0x37ccf5ce
DATA scc2<>+336(SB)/4, $0x37ccf5ce
DATA scc2<>+340(SB)/4, $0x37ccf5ce
DATA scc2<>+344(SB)/4, $0x37ccf5ce
DATA scc2<>+348(SB)/4, $0x37ccf5ce
DATA scc2<>+352(SB)/4, $0x3f800000  // 1.0
DATA scc2<>+356(SB)/4, $0x3f800000
DATA scc2<>+360(SB)/4, $0x3f800000
DATA scc2<>+364(SB)/4, $0x3f800000
DATA scc2<>+368(SB)/4, $0x3f800000
DATA scc2<>+372(SB)/4, $0x3f800000
DATA scc2<>+376(SB)/4, $0x3f800000
DATA scc2<>+380(SB)/4, $0x3f800000
DATA scc2<>+384(SB)/4, $0x46000000  // 8192, the range of the reduction
DATA scc2<>+388(SB)/4, $0x46000000
DATA scc2<>+392(SB)/4, $0x46000000
DATA scc2<>+396(SB)/4, $0x46000000
DATA scc2<>+400(SB)/4, $0x46000000
DATA scc2<>+404(SB)/4, $0x46000000
DATA scc2<>+408(SB)/4, $0x46000000
DATA scc2<>+412(SB)/4, $0x46000000
DATA scc2<>+416(SB)/4, $0x80000000  // sign bit
DATA scc2<>+420(SB)/4, $0x80000000
DATA scc2<>+424(SB)/4, $0x80000000
DATA scc2<>+428(SB)/4, $0x80000000
DATA scc2<>+432(SB)/4, $0x80000000
DATA scc2<>+436(SB)/4, $0x80000000
DATA scc2<>+440(SB)/4, $0x80000000
DATA scc2<>+444(SB)/4, $0x80000000
DATA scc2<>+448(SB)/4, $0x7fffffff  // all but the sign bit
DATA scc2<>+452(SB)/4, $0x7fffffff
DATA scc2<>+456(SB)/4, $0x7fffffff
DATA scc2<>+460(SB)/4, $0x7fffffff
DATA scc2<>+464(SB)/4, $0x7fffffff
DATA scc2<>+468(SB)/4, $0x7fffffff
DATA scc2<>+472(SB)/4, $0x7fffffff
DATA scc2<>+476(SB)/4, $0x7fffffff
DATA scc2<>+480(SB)/4, $0x00000001  // int32 1
DATA scc2<>+484(SB)/4, $0x00000001
DATA scc2<>+488(SB)/4, $0x00000001
DATA scc2<>+492(SB)/4, $0x00000001
DATA scc2<>+496(SB)/4, $0x00000001
DATA scc2<>+500(SB)/4, $0x00000001
DATA scc2<>+504(SB)/4, $0x00000001
DATA scc2<>+508(SB)/4, $0x00000001
GLOBL scc2<>(SB), RODATA|NOPTR, $512

// func sinCosAVX2(s, c, x *float32, nblk int) (bad int)
TEXT ·sinCosAVX2(SB), NOSPLIT, $0-40
	MOVQ    s+0(FP), DI
	MOVQ    c+8(FP), R9
	MOVQ    x+16(FP), SI
	MOVQ    nblk+24(FP), CX
	VMOVUPS scc2<>+0(SB), Y8    // 0.5
	VMOVUPS scc2<>+32(SB), Y9   // 2/π
	VMOVUPS scc2<>+64(SB), Y10  // p1
	VMOVUPS scc2<>+96(SB), Y11  // p2
	VMOVUPS scc2<>+128(SB), Y12 // p3
	VMOVUPS scc2<>+448(SB), Y13 // abs mask
	VMOVUPS scc2<>+384(SB), Y14 // limit
	VXORPS  Y15, Y15, Y15       // lanes out of range, so far none
	TESTQ   CX, CX
	JLE     sc2done

sc2loop:
	VMOVUPS      (SI), Y0              // x
	VANDPS       Y13, Y0, Y1           // |x|
	VCMPPS       $6, Y14, Y1, Y1       // !(|x| ≤ limit) (NaN too)
	VORPS        Y1, Y15, Y15
	VMULPS       Y9, Y0, Y2
	VROUNDPS     $0, Y2, Y2            // j = round-to-even(x·2/π)
	VFNMADD231PS Y10, Y2, Y0           // r = x − j·p1
	VFNMADD231PS Y11, Y2, Y0           // r −= j·p2
	VFNMADD231PS Y12, Y2, Y0           // r −= j·p3
	VCVTPS2DQ    Y2, Y3                // n = int32(j)
	VMULPS       Y0, Y0, Y4            // z = r²
	VMOVUPS      scc2<>+224(SB), Y5    // sin r = r + r·z·(s1 + z·(s2 + z·s3))
	VFMADD213PS  scc2<>+192(SB), Y4, Y5
	VFMADD213PS  scc2<>+160(SB), Y4, Y5
	VMULPS       Y4, Y5, Y5
	VFMADD213PS  Y0, Y0, Y5
	VMOVUPS      scc2<>+320(SB), Y6    // cos r = (1 − z/2) + z²·(c1 + z·(c2 + z·c3))
	VFMADD213PS  scc2<>+288(SB), Y4, Y6
	VFMADD213PS  scc2<>+256(SB), Y4, Y6
	VMULPS       Y4, Y4, Y7
	VMOVUPS      scc2<>+352(SB), Y1
	VFNMADD231PS Y8, Y4, Y1
	VFMADD213PS  Y1, Y7, Y6
	VPAND        scc2<>+480(SB), Y3, Y2 // quadrant n mod 4, as sinCosAVX512
	VPCMPEQD     scc2<>+480(SB), Y2, Y2
	VBLENDVPS    Y2, Y6, Y5, Y0
	VBLENDVPS    Y2, Y5, Y6, Y1
	VPSLLD       $30, Y3, Y4
	VPAND        scc2<>+416(SB), Y4, Y4
	VXORPS       Y4, Y0, Y0
	VPADDD       scc2<>+480(SB), Y3, Y7
	VPSLLD       $30, Y7, Y7
	VPAND        scc2<>+416(SB), Y7, Y7
	VXORPS       Y7, Y1, Y1
	VMOVUPS      Y0, (DI)
	VMOVUPS      Y1, (R9)
	ADDQ         $32, SI
	ADDQ         $32, DI
	ADDQ         $32, R9
	DECQ         CX
	JNZ          sc2loop

sc2done:
	VMOVMSKPS Y15, AX
	MOVQ      AX, bad+32(FP)
	VZEROUPPER
	RET
