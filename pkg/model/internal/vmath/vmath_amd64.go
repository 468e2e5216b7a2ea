package vmath

import "golang.org/x/sys/cpu"

var hasAVX512 = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ

// hasAVX2FMA: the AVX2 loops of tanh, sin/cos and the angle's backward, which give the
// AVX-512 loops' bits, run where AVX-512 does not.
var hasAVX2FMA = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// hasAVX2: overAVX2, Tanh's scan for the lanes that may saturate (integer AVX2 alone).
var hasAVX2 = cpu.X86.HasAVX2

// hasAsm reports whether Tanh, SinCos and AngleBackward have an assembly loop here.
var hasAsm = hasAVX512 || hasAVX2FMA

// avx512Loops picks the AVX-512 loops over the AVX2 ones (tests clear it to compare).
var avx512Loops = hasAVX512

//go:noescape
func tanhAVX2(dst, src *float32, nblk int, c *[16]float32)

//go:noescape
func overAVX2(masks *uint8, src *float32, nblk int, lim uint32)

//go:noescape
func angleBwdAVX2(dRaw, dTheta, theta *float32, nblk int, c float32)

//go:noescape
func sinCosAVX2(s, c, x *float32, nblk int) (bad int)

//go:noescape
func tanhAVX512(dst, src *float32, nblk, lastMask int, c *[16]float32)

//go:noescape
func angleBwdAVX512(dRaw, dTheta, theta *float32, nblk, lastMask int, c float32)

//go:noescape
func prefetchLines(p *float32, lines int)

//go:noescape
func sinCosAVX512(s, c, x *float32, nblk, lastMask int) (bad int)

//go:noescape
func reluAVX512(x *float32, nblk, lastMask int)

//go:noescape
func reluBwdAVX512(dx, out *float32, nblk, lastMask int)

// blocks returns the number of 16-lane blocks covering n and the lane mask of the last.
func blocks(n int) (nblk, lastMask int) {
	nblk = (n + 15) / 16
	lastMask = 0xffff
	if r := n % 16; r != 0 {
		lastMask = 1<<r - 1
	}
	return nblk, lastMask
}

// tanhAsm does all of Tanh and returns len(src) (dst has src's length).
func tanhAsm(dst, src []float32, div, mul, add float32) int {
	n := len(src)
	if n == 0 {
		return 0
	}
	_ = dst[n-1]
	c := [16]float32{div, mul, add, tanhClamp, -tanhClamp, tanhTiny,
		alpha13, alpha11, alpha9, alpha7, alpha5, alpha3, alpha1, beta6, beta4, beta2}
	if !avx512Loops {
		full := n / 8 * 8
		if full > 0 {
			tanhAVX2(&dst[0], &src[0], full/8, &c)
		}
		if full < n {
			var in, out [8]float32
			copy(in[:], src[full:])
			tanhAVX2(&out[0], &in[0], 1, &c)
			copy(dst[full:n], out[:])
		}
		return n
	}
	nblk, mask := blocks(n)
	tanhAVX512(&dst[0], &src[0], nblk, mask, &c)
	return n
}

// overAsm sets masks[b] to the lanes i of src[8b:8b+8] with |bits| > lim (bit i for
// src[8b+i]), for the whole blocks of src, and returns how many it set (0 without AVX2).
func overAsm(masks []uint8, src []float32, lim uint32) int {
	nblk := min(len(src)/8, len(masks))
	if !hasAVX2 || nblk == 0 {
		return 0
	}
	overAVX2(&masks[0], &src[0], nblk, lim)
	return nblk
}

func reluAsm(x []float32) int {
	if len(x) == 0 {
		return 0
	}
	nblk, mask := blocks(len(x))
	reluAVX512(&x[0], nblk, mask)
	return len(x)
}

func reluBwdAsm(dx, out []float32) int {
	n := len(dx)
	if n == 0 {
		return 0
	}
	_ = out[n-1]
	nblk, mask := blocks(n)
	reluBwdAVX512(&dx[0], &out[0], nblk, mask)
	return n
}

func angleBwdAsm(dRaw, dTheta, theta []float32, c float32) int {
	n := len(dTheta)
	if n == 0 {
		return 0
	}
	_, _ = dRaw[n-1], theta[n-1]
	if !avx512Loops {
		full := n / 8 * 8
		if full > 0 {
			angleBwdAVX2(&dRaw[0], &dTheta[0], &theta[0], full/8, c)
		}
		if full < n {
			var r, d, th [8]float32
			copy(r[:], dRaw[full:n])
			copy(d[:], dTheta[full:])
			copy(th[:], theta[full:n])
			angleBwdAVX2(&r[0], &d[0], &th[0], 1, c)
			copy(dRaw[full:n], r[:])
		}
		return n
	}
	nblk, mask := blocks(n)
	angleBwdAVX512(&dRaw[0], &dTheta[0], &theta[0], nblk, mask, c)
	return n
}

func prefetchAsm(x []float32) { prefetchLines(&x[0], (len(x)+15)/16) }

// sinCosAsm does SinCos, redoing it in Go when some |x| is beyond the reduction's range.
func sinCosAsm(s, c, x []float32) int {
	n := len(x)
	if n == 0 {
		return 0
	}
	_, _ = s[n-1], c[n-1]
	if !avx512Loops {
		full := n / 8 * 8
		if full > 0 && sinCosAVX2(&s[0], &c[0], &x[0], full/8) != 0 {
			return 0
		}
		if full < n {
			var in, so, co [8]float32
			copy(in[:], x[full:])
			if sinCosAVX2(&so[0], &co[0], &in[0], 1) != 0 {
				return 0
			}
			copy(s[full:n], so[:])
			copy(c[full:n], co[:])
		}
		return n
	}
	nblk, mask := blocks(n)
	if sinCosAVX512(&s[0], &c[0], &x[0], nblk, mask) != 0 {
		return 0
	}
	return n
}
