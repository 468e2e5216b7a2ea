// Package cpu is the fast CPU implementation of compute.Backend (float32), pure Go with
// assembly micro-kernels on amd64 (AVX-512, or AVX2+FMA for the GEMM), chosen at start-up
// with golang.org/x/sys/cpu, and a portable Go fallback for everything (no cgo).
//
//	be := cpu.New(cpu.Options{})          // every core, the best kernels
//	m, _ := model.New[float32](cfg, be)
//
// The linear layers run a blocked, packed SGEMM (gemm.go); the cone distance runs without
// transcendental calls in its inner loop, from half-angle sine/cosine tables (distance.go).
// Backend also implements the optional compute.EntityPreparer: evaluation, which scores
// every query against all entities, should prepare the entity table once
// (compute.PrepareEntities) instead of having each DistanceForward rebuild it.
//
// # Parallelism and determinism
//
// Each call splits its work over Options.Workers goroutines (default GOMAXPROCS), and
// every output element is computed by exactly one goroutine, with a summation order fixed
// by the shapes alone, never by the number of workers or by scheduling:
//   - GEMM: C is cut into tiles; each tile is owned by one job and the reduction
//     dimension is walked in fixed kc-sized blocks, each block summed in order inside the
//     micro-kernel (dW = dYᵀ·X is such a GEMM, so it needs no cross-worker reduction);
//   - distance forward: one (query, candidate) pair per output, summed over the dimension
//     in 16-lane partial sums reduced in a fixed order;
//   - distance backward: work is split by DIMENSION, so a job owns columns of dAxis,
//     dHalf and dEnt and adds the (query, candidate) contributions in the reference's
//     order (query-major), with no conflicts even when candidates repeat.
//
// So results are bit-identical for any Workers or GOMAXPROCS on a given machine (the
// assembly and pure-Go kernels differ from each other in rounding, e.g. FMA).
//
// # Accuracy
//
// Results agree with compute.Reference[float32] to about 1e-6 relative to the output's
// scale (GEMM: another summation order, FMA; distance: float32 half-angle sines from a
// polynomial, combined by the subtraction identity — see distance.go).
package cpu

import (
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/rocone/rocone/pkg/compute"
)

// Options configures a Backend.
type Options struct {
	// Workers is the number of goroutines a kernel call uses; 0 means
	// runtime.GOMAXPROCS(0) at the time of the call.
	Workers int
	// PureGo disables the assembly kernels (for tests and comparisons).
	PureGo bool
}

// Backend is the fast CPU compute.Backend. It is immutable after New and safe for
// concurrent use. It also implements compute.EntityPreparer[float32].
type Backend struct {
	workers int
	gk      gemmKernel
	dk      distKernels
}

var (
	_ compute.Backend                 = (*Backend)(nil)
	_ compute.EntityPreparer[float32] = (*Backend)(nil)
)

// New returns a Backend with the best kernels this CPU supports.
func New(opt Options) *Backend {
	be := &Backend{workers: opt.Workers, gk: genericGEMM, dk: genericDist}
	if !opt.PureGo {
		if k, ok := asmGEMM(); ok {
			be.gk = k
		}
		if k, ok := asmDist(); ok {
			be.dk = k
		}
	}
	return be
}

// String describes the kernels in use, e.g. "cpu: gemm avx512 12x32, distance avx512".
func (be *Backend) String() string {
	return "cpu: gemm " + be.gk.name + ", distance " + be.dk.name
}

// nworkers is the number of goroutines for a call with the given number of independent
// jobs.
func (be *Backend) nworkers(jobs int) int {
	w := be.workers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	return max(1, min(w, jobs))
}

// parallel runs fn(job) for every job in [0, jobs) on up to nworkers goroutines, which
// claim jobs dynamically. fn must write outputs disjoint from other jobs' (then the
// assignment of jobs to goroutines cannot change any result). fn's first argument is the
// goroutine's index in [0, workers), for per-goroutine scratch.
func (be *Backend) parallel(jobs int, fn func(worker, job int)) {
	w := be.nworkers(jobs)
	if w == 1 {
		for j := 0; j < jobs; j++ {
			fn(0, j)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < w; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for {
				j := int(next.Add(1) - 1)
				if j >= jobs {
					return
				}
				fn(g, j)
			}
		}(g)
	}
	wg.Wait()
}

// Scratch buffers are pooled: a GEMM packs per goroutine, the distance builds tables of
// up to hundreds of MB per call, and allocating (zeroing) them each call would cost about
// as much as the work. Pools are per power-of-two size class.
var bufPools [64]sync.Pool

type buffer struct {
	raw []float32 // the allocation, cap 1<<class
	s   []float32 // the aligned window handed out
}

// getBuf returns a buffer whose s has length n and starts on a 64-byte boundary (so
// that packed panels and table rows start on cache lines); its contents are arbitrary.
// Give it back with putBuf once no goroutine uses it.
func getBuf(n int) *buffer {
	class := bits.Len(uint(n + 15))
	b, _ := bufPools[class].Get().(*buffer)
	if b == nil {
		b = &buffer{raw: make([]float32, 1<<class)}
	}
	b.s = align64(b.raw)[:n]
	return b
}

func putBuf(b *buffer) { bufPools[bits.Len(uint(cap(b.raw)))-1].Put(b) }

// align64 returns the suffix of s that starts on a 64-byte boundary (s must have 15
// spare elements).
func align64(s []float32) []float32 {
	off := (64 - int(uintptr(unsafe.Pointer(unsafe.SliceData(s)))%64)) % 64 / 4
	return s[off:]
}
