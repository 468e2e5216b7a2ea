//go:build cuda

package gpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/rocone/rocone/pkg/compute"
)

// The GPU tests (go test -tags cuda, on a machine with an NVIDIA GPU; see
// scripts/cuda/gpu-check.sh): the parity suite on the real device, error paths, and
// timings for information.

func gpuDevice(t testing.TB) *Device {
	t.Helper()
	d, err := Open(0)
	if err != nil {
		t.Fatalf("Open(0): %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return d
}

// TestGPUInfo prints the device (run with -v).
func TestGPUInfo(t *testing.T) {
	d := gpuDevice(t)
	info, err := DeviceInfo(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(info)
	fmt.Println("GPU:", info)
}

// TestGPUParity runs every kernel on the device against the CPU reference.
func TestGPUParity(t *testing.T) { runParity(t, gpuDevice(t)) }

// TestGPUErrors: out of memory, a bad ordinal and a bad launch come back as errors, and
// the device still works after a launch-configuration error.
func TestGPUErrors(t *testing.T) {
	d := gpuDevice(t)
	if _, err := Open(1 << 20); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Open(1<<20): %v", err)
	}
	if _, err := Alloc[float32](d, 1<<45); err == nil || !strings.Contains(err.Error(), "allocating") {
		t.Errorf("huge Alloc: %v", err)
	} else {
		t.Log(err)
	}
	x, err := Alloc[float32](d, 10)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Free()
	err = d.launch("fill_f32", Work{Bytes: 40}, [3]int{1, 1, 1}, [3]int{4096, 1, 1}, ptr(x), f32(1), i32(10))
	if err == nil || !strings.Contains(err.Error(), "launching fill_f32") {
		t.Errorf("oversized block: %v", err)
	} else {
		t.Log(err)
	}
	if err := d.Fill(x, 3); err != nil {
		t.Fatal(err)
	}
	got, err := x.ToHost()
	if err != nil || got[9] != 3 {
		t.Fatalf("after a failed launch: %v %v", got, err)
	}
}

// TestGPUDeterministic: with the CSR index the entity gradient is bitwise reproducible.
func TestGPUDeterministic(t *testing.T) {
	d := gpuDevice(t)
	h := &harness{t: t, d: d, rng: rand.New(rand.NewPCG(1, 2))}
	const q, k, dim, rows = 64, 129, 256, 40
	cand := make([]int32, q*k)
	for i := range cand {
		cand[i] = int32(h.rng.IntN(rows))
	}
	A, H, E := h.up(h.uniform(q*dim, -3, 3)), h.up(h.uniform(q*dim, 0, 3)), h.up(h.uniform(rows*dim, -3, 3))
	C, G := h.upI(cand), h.up(h.uniform(q*k, -1, 1))
	ix := h.upIndex(RowCSR(cand, rows, nil))
	var first []float32
	for run := 0; run < 3; run++ {
		DE := h.zeros(rows * dim)
		h.ok(d.DistanceBackward(nil, nil, DE, G, A, H, E, C, ix, q, k, dim, 0.02))
		got := h.down(DE)
		if first == nil {
			first = got
			continue
		}
		for i := range got {
			if got[i] != first[i] {
				t.Fatalf("run %d: dEnt[%d] = %g, first run %g", run, i, got[i], first[i])
			}
		}
	}
}

// TestGPUGEMMDeterministic: the GEMMs give the same bits run after run, forward and
// backward, FP32 and TF32 (tensor cores), at a ConE projection layer's shape and at the
// attention layer of an intersection level (587 rows: K split, the splits added by
// gemm_splitk_sum); and a split's sums by the GEMMs' own last blocks are the same bits.
func TestGPUGEMMDeterministic(t *testing.T) {
	d := gpuDevice(t)
	h := &harness{t: t, d: d, rng: rand.New(rand.NewPCG(3, 4))}
	defer func() { d.splitFixup = false; h.ok(d.SetMatmul(compute.MatmulFP32)) }()
	for _, m := range []compute.Matmul{compute.MatmulFP32, compute.MatmulTF32} {
		for _, rows := range []int{1000, 587} {
			const in, out = 3200, 1600
			h.ok(d.SetMatmul(m))
			X, W, B, DY := h.up(h.uniform(rows*in, -1, 1)), h.up(h.uniform(out*in, -0.02, 0.02)), h.up(h.uniform(out, -1, 1)), h.up(h.uniform(rows*out, -1, 1))
			var first [3][]float32
			for run := 0; run < 4; run++ {
				d.splitFixup = run == 3
				Y, DX, DW := h.zeros(rows*out), h.zeros(rows*in), h.zeros(out*in)
				h.ok(d.LinearForward(Y, X, W, B, rows, in, out))
				h.ok(d.LinearBackward(DX, DW, nil, DY, X, W, rows, in, out))
				got := [3][]float32{h.down(Y), h.down(DX), h.down(DW)}
				if run == 0 {
					first = got
					continue
				}
				for k, name := range []string{"y", "dx", "dw"} {
					for i := range got[k] {
						if math.Float32bits(got[k][i]) != math.Float32bits(first[k][i]) {
							t.Fatalf("%s, %d rows, run %d (fixup %v): %s[%d] = %g, first run %g", m, rows, run, d.splitFixup, name, i, got[k][i], first[k][i])
						}
					}
				}
			}
		}
	}
}

// TestGPUThroughput logs the speed of the hot kernels at FB15k-237 sizes.
func TestGPUThroughput(t *testing.T) {
	if testing.Short() {
		t.Skip("timings skipped in -short mode")
	}
	d := gpuDevice(t)
	h := &harness{t: t, d: d, rng: rand.New(rand.NewPCG(3, 4))}
	const rows, in, out = 2048, 3200, 1600 // an intersection layer, 2d → d at d = 1600
	X, W, B, Y := h.up(h.uniform(rows*in, -1, 1)), h.up(h.uniform(out*in, -1, 1)), h.up(h.uniform(out, -1, 1)), h.zeros(rows*out)
	timeIt := func(name string, flops float64, f func() error) time.Duration {
		h.ok(f())
		h.ok(d.Sync())
		const reps = 10
		start := time.Now()
		for i := 0; i < reps; i++ {
			h.ok(f())
		}
		h.ok(d.Sync())
		el := time.Since(start) / reps
		t.Logf("%-40s %9.3f ms  %8.1f GFLOP/s", name, float64(el.Microseconds())/1e3, flops/el.Seconds()/1e9)
		return el
	}
	timeIt(fmt.Sprintf("LinearForward %dx%dx%d", rows, in, out), 2*rows*in*out, func() error {
		return d.LinearForward(Y, X, W, B, rows, in, out)
	})
	DX, DW := h.zeros(rows*in), h.zeros(out*in)
	timeIt("LinearBackward (dx, dW, db)", 4*rows*in*out, func() error {
		return d.LinearBackward(DX, DW, nil, Y, X, W, rows, in, out)
	})
	const q, ents, dim = 64, 14505, 1600 // evaluation: queries × every entity
	A, Hf, E := h.up(h.uniform(q*dim, -3, 3)), h.up(h.uniform(q*dim, 0, 3)), h.up(h.uniform(ents*dim, -3, 3))
	Dist := h.zeros(q * ents)
	timeIt(fmt.Sprintf("DistanceForward %dx%dx%d", q, ents, dim), 20*q*ents*dim, func() error {
		return d.DistanceForward(Dist, A, Hf, E, nil, q, ents, dim, 0.02)
	})

	// rank's path: the query table, then every query against every entity from the
	// half-angle tables; against the bound of reading the entity angles once per query.
	const rq = 512
	RA, RH := h.up(h.uniform(rq*dim, -3, 3)), h.up(h.uniform(rq*dim, 0, 3))
	ET, QT, RD := h.zeros(2*ents*dim), h.zeros(rq*dim*QueryTableWidth), h.zeros(rq*ents)
	h.ok(d.EntityHalfAngles(ET, E))
	el := timeIt(fmt.Sprintf("DistanceAll %dx%dx%d (+ query table)", rq, ents, dim), 20*rq*ents*dim, func() error {
		if err := d.QueryHalfAngles(QT, RA, RH); err != nil {
			return err
		}
		return d.DistanceAll(RD, QT, ET, rq, ents, dim, 0.02)
	})
	info, err := DeviceInfo(d)
	h.ok(err)
	bound := info.Bandwidth() / float64(ents*dim*4)
	t.Logf("DistanceAll: %.0f queries/s; bound %.0f queries/s (%.0f GB/s, the entity angles read once per query): %.2f of it",
		rq/el.Seconds(), bound, info.Bandwidth()/1e9, rq/el.Seconds()/bound)
}
