package train

import "golang.org/x/sys/cpu"

//go:noescape
func adamAVX512(pp, gp, mp, vp *float32, n int, c *adamScalars) (bad int)

//go:noescape
func adamAVX2(pp, gp, mp, vp *float32, n int, c *adamScalars) (bad int)

var (
	hasAdamAVX512 = cpu.X86.HasAVX512F
	hasAdamAVX2   = cpu.X86.HasAVX2
	// adamAVX512Loop picks the AVX-512 loop over the AVX2 one (tests clear it to compare).
	adamAVX512Loop = hasAdamAVX512
)

// updateFast runs the AVX-512 loop (or, without AVX-512, the AVX2 one: the same
// operations, the same bits) over the longest prefix that is a multiple of 16 (8)
// elements and returns its length, or 0 without either. It reports whether some updated
// parameter of the prefix is not finite.
func (c *adamScalars) updateFast(p, g, m, v []float32) (done int, bad bool) {
	switch {
	case adamAVX512Loop:
		n := len(p) &^ 15
		if n == 0 {
			return 0, false
		}
		_, _, _ = g[n-1], m[n-1], v[n-1]
		return n, adamAVX512(&p[0], &g[0], &m[0], &v[0], n, c) != 0
	case hasAdamAVX2:
		n := len(p) &^ 7
		if n == 0 {
			return 0, false
		}
		_, _, _ = g[n-1], m[n-1], v[n-1]
		return n, adamAVX2(&p[0], &g[0], &m[0], &v[0], n, c) != 0
	}
	return 0, false
}

//go:noescape
func prefetchLines(p *float32, lines int)

// prefetch hints that the cache lines of x will be read soon (sparse Adam's next rows).
func prefetch(x []float32) {
	if len(x) > 0 {
		prefetchLines(&x[0], (len(x)+15)/16)
	}
}
