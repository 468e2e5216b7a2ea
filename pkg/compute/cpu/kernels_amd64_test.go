package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// extraBackends adds a backend per assembly kernel this CPU can run besides the default.
func extraBackends() map[string]*Backend {
	m := map[string]*Backend{}
	if hasAVX512 && hasAVX2FMA {
		be := New(Options{})
		be.gk, be.dk = avx2GEMM, avx2Dist
		m["avx2"] = be
	}
	return m
}

// TestGEMMMicroKernels checks each assembly micro-kernel, in both A layouts, against a
// plain loop on random operands, for odd k (including 0 and 1) and strides wider than
// the tile.
func TestGEMMMicroKernels(t *testing.T) {
	var kernels []gemmKernel
	if hasAVX512 {
		kernels = append(kernels, avx512GEMM)
	}
	if hasAVX2FMA {
		kernels = append(kernels, avx2GEMM)
	}
	kernels = append(kernels, genericGEMM)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, kern := range kernels {
		mr, nr := kern.mr, kern.nr
		for _, k := range []int{0, 1, 2, 3, 7, 17, 255, 256} {
			for _, layout := range []struct{ rowA, packedB bool }{{false, true}, {true, true}, {false, false}, {true, false}} {
				rowA := layout.rowA
				ldc, lda, ldb := nr+5, mr+3, nr
				if rowA {
					lda = k + 3
				}
				if !layout.packedB {
					ldb = nr + 7
				}
				a := randF32(rng, mr*lda+k*lda, -1, 1)
				at := func(i, p int) float32 {
					if rowA {
						return a[i*lda+p]
					}
					return a[p*lda+i]
				}
				b := randF32(rng, ldb*k, -1, 1)
				c0 := randF32(rng, (mr-1)*ldc+nr, -1, 1)
				want := slices.Clone(c0)
				for i := 0; i < mr; i++ {
					for j := 0; j < nr; j++ {
						var s float64
						for p := 0; p < k; p++ {
							s += float64(at(i, p)) * float64(b[p*ldb+j])
						}
						want[i*ldc+j] = float32(float64(c0[i*ldc+j]) + s)
					}
				}
				got := slices.Clone(c0)
				kern.fn(k, a, lda, rowA, b, ldb, got, ldc)
				for i := range want {
					if d := math.Abs(float64(got[i] - want[i])); !(d <= 1e-5*math.Sqrt(float64(k+1))) {
						t.Fatalf("%s k=%d %+v: c[%d] = %g, want %g", kern.name, k, layout, i, got[i], want[i])
					}
				}
			}
		}
	}
}

// asmDistKernel is an assembly distance kernel with its raw sine/cosine loop (which
// reports out-of-range lanes instead of falling back to Go).
type asmDistKernel struct {
	k      distKernels
	sincos func(x *float32, nblk int, out *float32, stride int, next *float32) int
}

// asmDistKernels are the assembly distance kernels this CPU can run.
func asmDistKernels() []asmDistKernel {
	var ks []asmDistKernel
	if hasAVX512 {
		ks = append(ks, asmDistKernel{avx512Dist, sincosHalfAVX512})
	}
	if hasAVX2FMA {
		ks = append(ks, asmDistKernel{avx2Dist, sincosHalfAVX2})
	}
	return ks
}

// TestDistanceKernelsAsm checks each assembly distance kernel against the Go loops on
// the real tables: sin/cos half-angles (in range, so that the assembly path is taken),
// one query against four entities, and the backward pass with every tail length,
// including exact ties (h = 0, θ = a) and zeros.
func TestDistanceKernelsAsm(t *testing.T) {
	ks := asmDistKernels()
	if len(ks) == 0 {
		t.Skip("no AVX-512 and no AVX2+FMA")
	}
	for _, kk := range ks {
		t.Run(kk.k.name, func(t *testing.T) { testDistanceKernel(t, kk.k, kk.sincos) })
	}
}

func testDistanceKernel(t *testing.T, k distKernels, rawSincos func(x *float32, nblk int, out *float32, stride int, next *float32) int) {
	rng := rand.New(rand.NewPCG(4, 4))
	const nblk = 5
	xs := randF32(rng, nblk*lanes, -20, 20)
	s1, s2 := make([]float32, nblk*48), make([]float32, nblk*48)
	if rawSincos(&xs[0], nblk, &s1[0], 48, &xs[0]) != 0 {
		t.Fatal("in-range input flagged")
	}
	sincosGo(xs, nblk, s2, 48, nil)
	for b := 0; b < nblk; b++ {
		for i := 0; i < 32; i++ {
			if d := math.Abs(float64(s1[b*48+i] - s2[b*48+i])); !(d <= 2e-7) {
				t.Fatalf("sincos block %d lane %d: %g vs %g", b, i, s1[b*48+i], s2[b*48+i])
			}
		}
	}
	for i := range s1 { // the gap between blocks is not written
		if i%48 >= 32 && s1[i] != 0 {
			t.Fatalf("sincos wrote the gap at %d", i)
		}
	}
	bad := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 3e4}
	if rawSincos(&bad[0], 1, &s1[0], 48, &bad[0]) == 0 {
		t.Fatal("|x/2| = 15000 not flagged")
	}
	bad[15] = float32(math.NaN())
	if rawSincos(&bad[0], 1, &s1[0], 48, &bad[0]) == 0 {
		t.Fatal("NaN not flagged")
	}

	be := New(Options{PureGo: true})
	for trial := 0; trial < 20; trial++ {
		dim := 1 + rng.IntN(90)
		axis := randF32(rng, dim, -math.Pi, math.Pi)
		half := randF32(rng, dim, 0, math.Pi)
		ent := randF32(rng, 4*dim, -math.Pi, math.Pi)
		for j := 0; j < dim; j += 3 {
			half[j] = 0 // dropped out: lo and hi tie
		}
		for j := 1; j < dim; j += 7 {
			ent[j] = axis[j] // θ = a: st = 0
		}
		qt := be.queryTable(axis, half, 1, dim, 0.02)
		e, nb := fourEntityTables(be, ent, dim)
		var o1, o2 [8]float32
		k.fwd4(qt.s, &e, nb, &o1)
		fwd4Go(qt.s, &e, nb, &o2)
		for i := range o1 {
			if d := math.Abs(float64(o1[i] - o2[i])); !(d <= 1e-5*float64(dim)) {
				t.Fatalf("dim %d: fwd4 out[%d] = %g, Go %g", dim, i, o1[i], o2[i])
			}
		}
		tail := dim - (nb-1)*lanes
		for i := range e {
			da1, dh1, de1 := randF32(rng, dim, -1, 1), randF32(rng, dim, -1, 1), randF32(rng, dim, -1, 1)
			da2, dh2, de2 := slices.Clone(da1), slices.Clone(dh1), slices.Clone(de1)
			// One past the end of each gradient: must stay untouched.
			da1, dh1, de1 = append(da1, 7)[:dim], append(dh1, 7)[:dim], append(de1, 7)[:dim]
			k.bwd(qt.s, e[i], nb, tail, 0.37, 0.02, da1, dh1, de1, nil)
			bwdGo(qt.s, e[i], nb, tail, 0.37, 0.02, da2, dh2, de2, nil)
			for j := 0; j < dim; j++ {
				for _, p := range [][2]float32{{da1[j], da2[j]}, {dh1[j], dh2[j]}, {de1[j], de2[j]}} {
					if d := math.Abs(float64(p[0] - p[1])); !(d <= 1e-6) {
						t.Fatalf("dim %d entity %d lane %d: bwd %g, Go %g", dim, i, j, p[0], p[1])
					}
				}
			}
			if da1[:dim+1][dim] != 7 || dh1[:dim+1][dim] != 7 || de1[:dim+1][dim] != 7 {
				t.Fatalf("dim %d: bwd wrote past the tail", dim)
			}
		}
		putBuf(qt)
	}
}

// TestDistanceAVX2MatchesAVX512: the AVX2 kernels run the AVX-512 kernels' lane
// arithmetic, so their outputs are the same bits (on a CPU with both) for finite inputs.
// (With NaNs an inside sum can differ, the distance not: TestDistanceKernelsNaN.)
func TestDistanceAVX2MatchesAVX512(t *testing.T) {
	if !hasAVX512 || !hasAVX2FMA {
		t.Skip("needs AVX-512 and AVX2+FMA")
	}
	rng := rand.New(rand.NewPCG(9, 9))
	be := New(Options{PureGo: true})
	for trial := 0; trial < 50; trial++ {
		dim := 1 + rng.IntN(200)
		nb := ceilDiv(dim, lanes)
		xs := randF32(rng, nb*lanes, -7, 7)
		s1, s2 := make([]float32, nb*eBlock), make([]float32, nb*eBlock)
		avx512Dist.sincos(xs, nb, s1, eBlock, nil)
		avx2Dist.sincos(xs, nb, s2, eBlock, nil)
		sameBits(t, "sincos", s1, s2)
		axis, half := randF32(rng, dim, -math.Pi, math.Pi), randF32(rng, dim, 0, math.Pi)
		ent := randF32(rng, 4*dim, -math.Pi, math.Pi)
		for j := 0; j < dim; j += 5 {
			half[j], ent[j] = 0, axis[j]
		}
		qt := be.queryTable(axis, half, 1, dim, 0.02)
		e, _ := fourEntityTables(be, ent, dim)
		var o1, o2 [8]float32
		avx512Dist.fwd4(qt.s, &e, nb, &o1)
		avx2Dist.fwd4(qt.s, &e, nb, &o2)
		sameBits(t, "fwd4", o1[:], o2[:])
		tail := dim - (nb-1)*lanes
		g := randF32(rng, 3*dim, -1, 1)
		g1, g2 := slices.Clone(g), slices.Clone(g)
		avx512Dist.bwd(qt.s, e[1], nb, tail, 0.37, 0.02, g1[:dim], g1[dim:2*dim], g1[2*dim:], nil)
		avx2Dist.bwd(qt.s, e[1], nb, tail, 0.37, 0.02, g2[:dim], g2[dim:2*dim], g2[2*dim:], nil)
		sameBits(t, "bwd", g1, g2)
		putBuf(qt)
	}
}

// fourEntityTables returns the half-angle tables of the 4 entity rows in ent (dim each),
// as fwd4 takes them, and their number of blocks.
func fourEntityTables(be *Backend, ent []float32, dim int) (e [4][]float32, nb int) {
	nb = ceilDiv(dim, lanes)
	et := make([]float32, 4*nb*eBlock)
	be.entityTable(et, ent, 4, dim)
	for i := range e {
		e[i] = et[i*nb*eBlock : (i+1)*nb*eBlock]
	}
	return e, nb
}

func sameBits(t *testing.T, what string, a, b []float32) {
	t.Helper()
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			t.Fatalf("%s[%d]: AVX-512 %g, AVX2 %g", what, i, a[i], b[i])
		}
	}
}

func TestTranspose16(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512")
	}
	rng := rand.New(rand.NewPCG(8, 8))
	for _, n := range []int{1, 2, 5} {
		lds := 16*n + 9
		src := randF32(rng, 16*lds, -1, 1)
		dst := make([]float32, 16*n*32+7)
		for i := range dst {
			dst[i] = 99
		}
		transpose16Asm(src, lds, dst, n)
		for p := 0; p < 16*n; p++ {
			for j := 0; j < 32; j++ {
				want := float32(99)
				if j < 16 {
					want = src[j*lds+p]
				}
				if got := dst[p*32+j]; got != want {
					t.Fatalf("n=%d: dst[%d][%d] = %g, want %g", n, p, j, got, want)
				}
			}
		}
		for _, v := range dst[16*n*32:] {
			if v != 99 {
				t.Fatal("wrote past the end")
			}
		}
	}
}

// TestDistanceKernelsNaN: NaN and infinite inputs, and a boundary a ± h beyond
// float32's range, through the tables and each assembly kernel, against the Go loops
// (whose min, like math.Min and torch.min, is NaN when either operand is). The outside
// sums, the distances Σ d_o + λ·Σ d_i and every gradient are NaN exactly where the Go
// loop's are, and the other values close to them. An inside sum may be a number where the
// Go loop's is NaN, but only where the outside sum is NaN too: VMINPS and VRANGEPS can
// give the number of a (number, NaN) pair, and the table carries a NaN of t or β into
// both boundary sines (distance.go, "NaN"), so that the distance is NaN all the same.
func TestDistanceKernelsNaN(t *testing.T) {
	ks := asmDistKernels()
	if len(ks) == 0 {
		t.Skip("no AVX-512 and no AVX2+FMA")
	}
	for _, kk := range ks {
		t.Run(kk.k.name, func(t *testing.T) { testDistanceKernelNaN(t, kk.k) })
	}
}

func testDistanceKernelNaN(t *testing.T, k distKernels) {
	be := New(Options{PureGo: true})
	const dim, lambda = 37, 0.02 // three blocks, the last with 5 lanes
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, c := range []struct {
		name string
		a, h float32 // 0: unchanged
		u    []int   // the entity rows whose angle becomes θ
		θ    float32
	}{
		{name: "θ NaN", u: []int{1}, θ: nan},
		{name: "θ −Inf", u: []int{2}, θ: -inf},
		{name: "θ NaN, every row", u: []int{0, 1, 2, 3}, θ: nan},
		{name: "a NaN", a: nan},
		{name: "a +Inf", a: inf},
		{name: "h NaN", h: nan},
		{name: "h +Inf", h: inf},
		{name: "a − h overflows", a: -3e38, h: 3e38},
		{name: "a + h overflows", a: 3e38, h: 3e38},
		{name: "h NaN, θ NaN", h: nan, u: []int{3}, θ: nan},
	} {
		for _, j := range []int{0, 7, 16, 31, 32, dim - 1} {
			what := fmt.Sprintf("%s at %d", c.name, j)
			rng := rand.New(rand.NewPCG(5, uint64(j)))
			axis := randF32(rng, dim, -math.Pi, math.Pi)
			half := randF32(rng, dim, 0, math.Pi)
			ent := randF32(rng, 4*dim, -math.Pi, math.Pi)
			if c.a != 0 {
				axis[j] = c.a
			}
			if c.h != 0 {
				half[j] = c.h
			}
			for _, r := range c.u {
				ent[r*dim+j] = c.θ
			}
			qt := be.queryTable(axis, half, 1, dim, lambda)
			e, nb := fourEntityTables(be, ent, dim)
			tail := dim - (nb-1)*lanes

			var got, want [8]float32
			k.fwd4(qt.s, &e, nb, &got)
			fwd4Go(qt.s, &e, nb, &want)
			nans := 0
			for i := 0; i < 4; i++ {
				o, in := 2*i, 2*i+1
				if isNaN32(want[in]) && !isNaN32(want[o]) {
					t.Fatalf("%s: entity %d: the Go loop's inside sum is NaN, its outside sum %g is not", what, i, want[o])
				}
				d1, d2 := want[o]+lambda*want[in], got[o]+lambda*got[in]
				for _, p := range []struct {
					what      string
					want, got float32
				}{{"outside sum", want[o], got[o]}, {"distance", d1, d2}, {"inside sum", want[in], got[in]}} {
					if isNaN32(p.want) {
						nans++
						if !isNaN32(p.got) && p.what != "inside sum" {
							t.Errorf("%s: entity %d: %s %g, Go NaN", what, i, p.what, p.got)
						}
					} else if d := math.Abs(float64(p.got - p.want)); !(d <= 1e-5*dim) {
						t.Errorf("%s: entity %d: %s %g, Go %g", what, i, p.what, p.got, p.want)
					}
				}
			}
			for i := range e {
				g0 := randF32(rng, 3*dim, -1, 1)
				g1, g2 := slices.Clone(g0), slices.Clone(g0)
				k.bwd(qt.s, e[i], nb, tail, 0.37, lambda, g1[:dim], g1[dim:2*dim], g1[2*dim:], nil)
				bwdGo(qt.s, e[i], nb, tail, 0.37, lambda, g2[:dim], g2[dim:2*dim], g2[2*dim:], nil)
				for p := range g2 {
					if isNaN32(g2[p]) {
						nans++
					}
					if isNaN32(g1[p]) != isNaN32(g2[p]) {
						t.Errorf("%s: entity %d: bwd [%d] = %g, Go %g", what, i, p, g1[p], g2[p])
					} else if d := math.Abs(float64(g1[p] - g2[p])); !isNaN32(g2[p]) && !(d <= 1e-6) { // NaN and NaN agree
						t.Errorf("%s: entity %d: bwd [%d] = %g, Go %g", what, i, p, g1[p], g2[p])
					}
				}
			}
			if nans == 0 {
				t.Fatalf("%s: nothing of the Go loop's is NaN: the case is wrong", what)
			}
			putBuf(qt)
		}
	}
}

func isNaN32(x float32) bool { return x != x }
