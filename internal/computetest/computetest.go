// Package computetest checks a compute.Backend against compute.Reference[float32] on
// random inputs, so that a fast CPU or CUDA backend is tested by one call:
//
//	func TestConformance(t *testing.T) { computetest.CheckBackend(t, myBackend) }
package computetest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/rocone/rocone/pkg/compute"
)

// CheckBackend runs both kernels of b and of the reference on random inputs of several
// shapes (odd sizes included) and fails t where they differ by more than tol relative to
// the largest magnitude of the reference's output (1e-4 when tol is 0).
func CheckBackend(t *testing.T, b compute.Backend, tol ...float64) {
	t.Helper()
	eps := 1e-4
	if len(tol) > 0 {
		eps = tol[0]
	}
	ref := compute.Reference[float32]{}
	rng := rand.New(rand.NewPCG(11, 13))
	for _, sh := range []struct{ rows, in, out int }{{1, 1, 1}, {3, 5, 7}, {17, 33, 9}, {64, 48, 80}} {
		x, w, bias := randSlice(rng, sh.rows*sh.in), randSlice(rng, sh.out*sh.in), randSlice(rng, sh.out)
		dy := randSlice(rng, sh.rows*sh.out)
		for _, withBias := range []bool{true, false} {
			bb := bias
			if !withBias {
				bb = nil
			}
			y1, y2 := make([]float32, sh.rows*sh.out), make([]float32, sh.rows*sh.out)
			ref.LinearForward(y1, x, w, bb, sh.rows, sh.in, sh.out)
			b.LinearForward(y2, x, w, bb, sh.rows, sh.in, sh.out)
			compare(t, "LinearForward y", y1, y2, eps)
		}
		// Backward accumulates: start the gradients from the same non-zero values.
		dx0, dw0, db0 := randSlice(rng, sh.rows*sh.in), randSlice(rng, sh.out*sh.in), randSlice(rng, sh.out)
		dx1, dw1, db1 := clone(dx0), clone(dw0), clone(db0)
		dx2, dw2, db2 := clone(dx0), clone(dw0), clone(db0)
		ref.LinearBackward(dx1, dw1, db1, dy, x, w, sh.rows, sh.in, sh.out)
		b.LinearBackward(dx2, dw2, db2, dy, x, w, sh.rows, sh.in, sh.out)
		compare(t, "LinearBackward dx", dx1, dx2, eps)
		compare(t, "LinearBackward dw", dw1, dw2, eps)
		compare(t, "LinearBackward db", db1, db2, eps)
		dw3, dw4 := clone(dw0), clone(dw0)
		ref.LinearBackward(nil, dw3, nil, dy, x, w, sh.rows, sh.in, sh.out)
		b.LinearBackward(nil, dw4, nil, dy, x, w, sh.rows, sh.in, sh.out)
		compare(t, "LinearBackward dw (nil dx, db)", dw3, dw4, eps)
	}
	for _, sh := range []struct{ queries, cands, dim, rows int }{{1, 1, 1, 1}, {3, 5, 7, 4}, {9, 33, 16, 50}} {
		axis := angles(rng, sh.queries*sh.dim, -math.Pi, math.Pi)
		half := angles(rng, sh.queries*sh.dim, 0, math.Pi)
		ent := angles(rng, sh.rows*sh.dim, -math.Pi, math.Pi)
		cand := make([]int32, sh.queries*sh.cands)
		for i := range cand {
			cand[i] = int32(rng.IntN(sh.rows))
		}
		dDist := randSlice(rng, sh.queries*sh.cands)
		const lambda = 0.02
		for _, c := range []struct {
			name  string
			cand  []int32
			cands int
		}{{"cand", cand, sh.cands}, {"all rows", nil, sh.rows}} {
			d1, d2 := make([]float32, sh.queries*c.cands), make([]float32, sh.queries*c.cands)
			ref.DistanceForward(d1, axis, half, ent, c.cand, sh.queries, c.cands, sh.dim, lambda)
			b.DistanceForward(d2, axis, half, ent, c.cand, sh.queries, c.cands, sh.dim, lambda)
			compare(t, "DistanceForward ("+c.name+")", d1, d2, eps)
			g := dDist
			if c.cand == nil {
				g = randSlice(rng, sh.queries*c.cands)
			}
			a1, h1, e1 := make([]float32, len(axis)), make([]float32, len(half)), make([]float32, len(ent))
			a2, h2, e2 := make([]float32, len(axis)), make([]float32, len(half)), make([]float32, len(ent))
			ref.DistanceBackward(a1, h1, e1, g, axis, half, ent, c.cand, sh.queries, c.cands, sh.dim, lambda)
			b.DistanceBackward(a2, h2, e2, g, axis, half, ent, c.cand, sh.queries, c.cands, sh.dim, lambda)
			compare(t, "DistanceBackward dAxis ("+c.name+")", a1, a2, eps)
			compare(t, "DistanceBackward dHalf ("+c.name+")", h1, h2, eps)
			compare(t, "DistanceBackward dEnt ("+c.name+")", e1, e2, eps)
		}
	}
}

func compare(t *testing.T, what string, want, got []float32, eps float64) {
	t.Helper()
	var scale float64
	for _, v := range want {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	scale = math.Max(scale, 1e-6)
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > eps*scale || math.IsNaN(float64(got[i])) {
			t.Fatalf("%s[%d] = %g, reference %g", what, i, got[i], want[i])
		}
	}
}

func randSlice(rng *rand.Rand, n int) []float32 { return angles(rng, n, -1, 1) }

func angles(rng *rand.Rand, n int, lo, hi float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(lo + (hi-lo)*rng.Float64())
	}
	return out
}

func clone(x []float32) []float32 { return append([]float32(nil), x...) }
