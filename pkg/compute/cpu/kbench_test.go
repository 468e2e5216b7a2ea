package cpu

import (
	"math/rand/v2"
	"testing"
)

func BenchmarkMicroKernel(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, kern := range []gemmKernel{avx512GEMM, avx2GEMM, genericGEMM} {
		const k = 256
		a, bb := randF32(rng, kern.mr*k, -1, 1), randF32(rng, kern.nr*k, -1, 1)
		c := randF32(rng, kern.mr*kern.nr, -1, 1)
		b.Run(kern.name, func(b *testing.B) {
			for b.Loop() {
				kern.fn(k, a, kern.mr, false, bb, c, kern.nr)
			}
			b.ReportMetric(2*float64(kern.mr*kern.nr*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

func BenchmarkBwdParts(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	const rows, in, out = 512, 1600, 1600
	x, w, dy := randF32(rng, rows*in, -1, 1), randF32(rng, out*in, -1, 1), randF32(rng, rows*out, -1, 1)
	dx, dw := make([]float32, rows*in), make([]float32, out*in)
	be := New(Options{Workers: benchWorkers})
	flops := 2.0 * rows * in * out
	b.Run("dx", func(b *testing.B) {
		for b.Loop() {
			be.gemm(rows, in, out, mat{dy, out, false}, mat{w, in, false}, dx, in)
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("dw", func(b *testing.B) {
		for b.Loop() {
			be.gemm(out, in, rows, mat{dy, out, true}, mat{x, in, false}, dw, in)
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
	b.Run("fwd", func(b *testing.B) {
		for b.Loop() {
			be.gemm(rows, out, in, mat{x, in, false}, mat{w, in, true}, dy, out)
		}
		b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
	})
}

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

var benchWorkers = 0

func BenchmarkW1(b *testing.B) {
	benchWorkers = 1
	defer func() { benchWorkers = 0 }()
	b.Run("mk", BenchmarkMicroKernel)
	b.Run("parts", BenchmarkBwdParts)
}

func BenchmarkDistKernels(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	const dim = 800
	nb := dim / lanes
	be := New(Options{})
	axis, half, ent := randF32(rng, dim, -3, 3), randF32(rng, dim, 0, 3), randF32(rng, 4*dim, -3, 3)
	qt := be.queryTable(axis, half, 1, dim, 0.02)
	et := make([]float32, 4*nb*eBlock)
	be.entityRows(et, ent, nil, 4, dim)
	var e [4][]float32
	for i := range e {
		e[i] = et[i*nb*eBlock : (i+1)*nb*eBlock]
	}
	for _, k := range []distKernels{avx512Dist, genericDist} {
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
				k.bwd(qt.s, e[0], nb, lanes, 0.1, 0.02, da, dh, de)
			}
			b.ReportMetric(dim*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
		b.Run("sincos/"+k.name, func(b *testing.B) {
			for b.Loop() {
				k.sincos(ent, 4*nb, et, eBlock)
			}
			b.ReportMetric(4*dim*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
	}
}
