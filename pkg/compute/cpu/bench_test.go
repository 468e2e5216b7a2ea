package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rocone/rocone/pkg/compute"
)

// Benchmarks at the model's shapes (docs/training.md: d = 800, b = 512, n = 128; the
// projection MLP 2d→1600→1600→2d; FB15k-237's 14,505 entities). Each compares the fast
// backend (assembly), its pure-Go fallback and the reference in the same run.
//
//	go test -run NONE -bench . -benchtime 3x ./pkg/compute/cpu
//
// GFLOP/s counts 2·rows·in·out per forward and twice that per backward (dx and dW).

func benchBackends() []struct {
	name string
	k    compute.Backend
} {
	return []struct {
		name string
		k    compute.Backend
	}{
		{"fast", New(Options{})},
		{"purego", New(Options{PureGo: true})},
		{"reference", compute.Reference[float32]{}},
	}
}

var gemmShapes = []struct {
	name          string
	rows, in, out int
}{
	// The intersection's first layers at d = 800: rows = 512 queries · 2.3 branches.
	{"intersect_1178x1600x800", 1178, 1600, 800},
	// ConE's MLP hidden layer, 512 rows.
	{"mlp_512x1600x1600", 512, 1600, 1600},
	// A training batch is split by query structure: a group of 64 queries through the
	// MLP, and of 64 queries × 2 branches through the intersection.
	{"mlp_group_64x1600x1600", 64, 1600, 1600},
	{"intersect_group_128x1600x800", 128, 1600, 800},
	// 512×800×800, the shape gonum (≈14 GFLOP/s) and OpenBLAS (≈100) were timed at.
	{"sq_512x800x800", 512, 800, 800},
}

func BenchmarkLinear(b *testing.B) {
	for _, sh := range gemmShapes {
		rng := rand.New(rand.NewPCG(1, 1))
		x, w, bias := randF32(rng, sh.rows*sh.in, -1, 1), randF32(rng, sh.out*sh.in, -1, 1), randF32(rng, sh.out, -1, 1)
		dy := randF32(rng, sh.rows*sh.out, -1, 1)
		y, dx, dw, db := make([]float32, sh.rows*sh.out), make([]float32, sh.rows*sh.in), make([]float32, sh.out*sh.in), make([]float32, sh.out)
		flops := 2 * float64(sh.rows) * float64(sh.in) * float64(sh.out)
		for _, be := range benchBackends() {
			b.Run(fmt.Sprintf("%s/fwd/%s", sh.name, be.name), func(b *testing.B) {
				for b.Loop() {
					be.k.LinearForward(y, x, w, bias, sh.rows, sh.in, sh.out)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
			b.Run(fmt.Sprintf("%s/bwd/%s", sh.name, be.name), func(b *testing.B) {
				for b.Loop() {
					be.k.LinearBackward(dx, dw, db, dy, x, w, sh.rows, sh.in, sh.out)
				}
				b.ReportMetric(2*flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}

// distProblem is a training batch's distance: b queries, 1 positive + n negatives each,
// drawn from the entity table.
func distProblem(queries, cands, dim, rows int) (axis, half, ent []float32, cand []int32) {
	rng := rand.New(rand.NewPCG(2, 2))
	axis = randF32(rng, queries*dim, -math.Pi, math.Pi)
	half = randF32(rng, queries*dim, 0, math.Pi)
	ent = randF32(rng, rows*dim, -math.Pi, math.Pi)
	cand = make([]int32, queries*cands)
	for i := range cand {
		cand[i] = int32(rng.IntN(rows))
	}
	return
}

func BenchmarkDistanceTrain(b *testing.B) {
	const queries, cands, dim, rows, lambda = 512, 129, 800, 14505, 0.02
	axis, half, ent, cand := distProblem(queries, cands, dim, rows)
	dist, g := make([]float32, queries*cands), make([]float32, queries*cands)
	for i := range g {
		g[i] = 1e-3
	}
	da, dh, de := make([]float32, len(axis)), make([]float32, len(half)), make([]float32, len(ent))
	elems := float64(queries * cands * dim)
	for _, be := range benchBackends() {
		b.Run("fwd/"+be.name, func(b *testing.B) {
			for b.Loop() {
				be.k.DistanceForward(dist, axis, half, ent, cand, queries, cands, dim, lambda)
			}
			b.ReportMetric(elems*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
		b.Run("bwd/"+be.name, func(b *testing.B) {
			for b.Loop() {
				be.k.DistanceBackward(da, dh, de, g, axis, half, ent, cand, queries, cands, dim, lambda)
			}
			b.ReportMetric(elems*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gelem/s")
		})
	}
}

// BenchmarkEval scores query blocks against all 14,505 entities (cand = nil), as the
// rank stage does: with the prepared table (computed once, outside the loop), with the
// plain kernel (which builds the table each call), and the reference (1 query: it needs
// about a second per query). GB/s is the entity-angle table's size (rows·d·4 bytes =
// 46 MB) times the queries scored per second: the bandwidth a kernel that re-read θ for
// each query would need (the prepared table is twice that size, and each tile of it is
// read from memory once per call, then from L2 once per query).
func BenchmarkEval(b *testing.B) {
	const dim, rows, lambda = 800, 14505, 0.02
	axis, half, ent, _ := distProblem(64, 1, dim, rows)
	fast, pure := New(Options{}), New(Options{PureGo: true})
	report := func(b *testing.B, queries int) {
		qps := float64(queries) * float64(b.N) / b.Elapsed().Seconds()
		b.ReportMetric(qps, "queries/s")
		b.ReportMetric(qps*rows*dim*4/1e9, "GB/s")
	}
	for _, c := range []struct {
		name    string
		be      *Backend
		queries int
	}{{"fast", fast, 64}, {"fast", fast, 8}, {"purego", pure, 8}} {
		dist := make([]float32, c.queries*rows)
		tab := c.be.PrepareEntities(ent, rows, dim)
		b.Run(fmt.Sprintf("q%d/prepared/%s", c.queries, c.name), func(b *testing.B) {
			for b.Loop() {
				tab.DistanceForward(dist, axis, half, nil, c.queries, rows, lambda)
			}
			report(b, c.queries)
		})
		b.Run(fmt.Sprintf("q%d/plain/%s", c.queries, c.name), func(b *testing.B) {
			for b.Loop() {
				c.be.DistanceForward(dist, axis, half, ent, nil, c.queries, rows, dim, lambda)
			}
			report(b, c.queries)
		})
	}
	b.Run("q1/reference", func(b *testing.B) {
		dist := make([]float32, rows)
		for b.Loop() {
			compute.Reference[float32]{}.DistanceForward(dist, axis, half, ent, nil, 1, rows, dim, lambda)
		}
		report(b, 1)
	})
	b.Run("prepare/fast", func(b *testing.B) {
		for b.Loop() {
			fast.PrepareEntities(ent, rows, dim) // allocates the 93 MB table each time
		}
		b.ReportMetric(float64(rows*dim)*float64(b.N)/b.Elapsed().Seconds()/1e9, "Gsincos/s")
	})
}
