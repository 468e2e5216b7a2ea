package cpu

import (
	"math/rand/v2"
	"testing"
)

// Benchmarks of the inner kernels alone, on operands that stay in L1: the ceiling the
// whole GEMM and distance calls are measured against (one core).

func BenchmarkMicroKernel(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	kernels := []gemmKernel{genericGEMM}
	if hasAVX2FMA {
		kernels = append(kernels, avx2GEMM)
	}
	if hasAVX512 {
		kernels = append(kernels, avx512GEMM)
	}
	for _, kern := range kernels {
		const k = 256
		a, bb := randF32(rng, kern.mr*k, -1, 1), randF32(rng, kern.nr*k, -1, 1)
		c := randF32(rng, kern.mr*kern.nr, -1, 1)
		b.Run(kern.name, func(b *testing.B) {
			for b.Loop() {
				kern.fn(k, a, kern.mr, false, bb, kern.nr, c, kern.nr)
			}
			b.ReportMetric(2*float64(kern.mr*kern.nr*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkPack times the packing routines (B-trans uses the AVX-512 transpose when
// available), in ns per element packed.
func BenchmarkPack(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	const rows, k = 384, 1600
	x := randF32(rng, rows*k, -1, 1)
	dst := make([]float32, rows*256+4096)
	for _, c := range []struct {
		name string
		t    bool
		a    bool
	}{{"A-normal", false, true}, {"A-trans", true, true}, {"B-normal", false, false}, {"B-trans", true, false}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if c.a {
					ld := k
					if c.t {
						ld = rows
					}
					for i := 0; i < rows; i += 12 {
						packA(dst[i*256:], mat{x, ld, c.t}, i, 12, 0, 256, 12)
					}
				} else {
					ld := rows
					if c.t {
						ld = k
					}
					packB(dst, mat{x, ld, c.t}, 0, rows, 0, 256, 32)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(rows*256), "ns/elem")
		})
	}
}

func BenchmarkDistKernels(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	const dim = 800
	nb := dim / lanes
	be := New(Options{})
	axis, half, ent := randF32(rng, dim, -3, 3), randF32(rng, dim, 0, 3), randF32(rng, 4*dim, -3, 3)
	qt := be.queryTable(axis, half, 1, dim, 0.02)
	et := make([]float32, 4*nb*eBlock)
	be.entityTable(et, ent, 4, dim)
	var e [4][]float32
	for i := range e {
		e[i] = et[i*nb*eBlock : (i+1)*nb*eBlock]
	}
	kernels := []distKernels{genericDist}
	for _, k := range asmDistKernels() {
		kernels = append(kernels, k.k)
	}
	for _, k := range kernels {
		b.Run("fwd4/"+k.name, func(b *testing.B) {
			var out [8]float32
			for b.Loop() {
				k.fwd4(qt.s, &e, nb, &out)
			}
			b.ReportMetric(4*dim*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
		b.Run("bwd/"+k.name, func(b *testing.B) {
			da, dh, de := make([]float32, dim), make([]float32, dim), make([]float32, dim)
			for b.Loop() {
				k.bwd(qt.s, e[0], nb, lanes, 0.1, 0.02, da, dh, de, nil)
			}
			b.ReportMetric(dim*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
		b.Run("sincos/"+k.name, func(b *testing.B) {
			for b.Loop() {
				k.sincos(ent, 4*nb, et, eBlock, nil)
			}
			b.ReportMetric(4*dim*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
	}
}
