package gpu

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/eval"
)

// testDistanceAll: scoring every query against every row from the half-angle tables, on
// shapes with ragged query, row and dimension tiles, and on the edge cases of the inside
// test (a zero and a full half-aperture, entities on the axis and on the boundaries);
// the result does not depend on the grid.
func testDistanceAll(h *harness) {
	ref := compute.Reference[float32]{}
	for _, sh := range []struct{ queries, cands, rows, dim int }{{70, 301, 305, 45}, {1, 1, 1, 1}, {33, 129, 129, 16}, {5, 200, 260, 17}, {37, 300, 300, 50}, {40, 130, 131, 2}} {
		h.t.Run(fmt.Sprint(sh.queries, "x", sh.cands, "x", sh.dim), func(t *testing.T) {
			const lambda = 0.05
			q, k, dim := sh.queries, sh.cands, sh.dim
			axis, half := h.uniform(q*dim, -math.Pi, math.Pi), h.uniform(q*dim, 0, math.Pi)
			ent := h.uniform(sh.rows*dim, -math.Pi, math.Pi)
			for i := range half {
				switch i % 7 {
				case 1:
					half[i] = 0 // an anchor's cone, or a dropped-out aperture
				case 2:
					half[i] = math.Pi // a full cone, which Trunc produces
				}
			}
			for r := 0; r < min(sh.rows, 3*q); r++ { // some entities on an axis or a boundary
				qi, j := r%q, (r*5)%dim
				switch ax, hf := axis[qi*dim+j], half[qi*dim+j]; r % 3 {
				case 0:
					ent[r*dim+j] = ax
				case 1:
					ent[r*dim+j] = float32(math.Remainder(float64(ax+hf), 2*math.Pi))
				default:
					ent[r*dim+j] = ax - hf
				}
			}
			want := make([]float32, q*k)
			ref.DistanceForward(want, axis, half, ent, nil, q, k, dim, lambda)
			E, Qt := h.zeros(2*len(ent)), h.zeros(q*dim*QueryTableWidth)
			h.ok(h.d.EntityHalfAngles(E, h.up(ent)))
			h.ok(h.d.QueryHalfAngles(Qt, h.up(axis), h.up(half)))
			D := h.zeros(q * k)
			h.ok(h.d.DistanceAll(D, Qt, E, q, k, dim, lambda))
			got := h.down(D)
			// The tables hold sines and cosines of order 1, so a GPU's sinf/cosf leave an
			// absolute error of order 1e-7 however small the distance (an entity on the
			// axis: 3.2e-10 on an H100 where Go's math gives 0): the scale has a floor.
			compareScale(t, "dist", want, got, 1e-2)

			saved := h.d.gridY
			h.d.gridY = 1
			D1 := h.zeros(q * k)
			err := h.d.DistanceAll(D1, Qt, E, q, k, dim, lambda)
			h.d.gridY = saved
			h.ok(err)
			for i, v := range h.down(D1) {
				if v != got[i] {
					t.Fatalf("dist[%d] = %g with one row of blocks, %g with the default grid", i, v, got[i])
				}
			}
		})
	}
	h.t.Run("NaN", func(t *testing.T) { testDistanceAllNaN(&harness{t: t, d: h.d, rng: h.rng}) })
	if err := h.d.DistanceAll(h.zeros(4), h.zeros(8), h.zeros(4), 1, 4, 1, 0); err == nil {
		h.t.Fatal("DistanceAll accepted an entity table with 2 of 4 rows")
	}
}

// testDistanceAllNaN: a NaN in a (query, entity, dimension)'s terms makes the distance a
// NaN, as in the reference, in both stagings (an odd and an even dimension): NaN axes,
// apertures and entity angles, and cones whose boundary a ± h overflows float (a = ±h =
// 2e38: the other boundary is 0), so that one of lo and hi is a NaN and the other a
// number, which fminf's minimum turned into that number.
func testDistanceAllNaN(h *harness) {
	ref := compute.Reference[float32]{}
	nan := float32(math.NaN())
	for _, dim := range []int{17, 32} {
		const q, k, lambda = 9, 140, 0.05
		axis, half := h.uniform(q*dim, -math.Pi, math.Pi), h.uniform(q*dim, 0, math.Pi)
		ent := h.uniform(k*dim, -math.Pi, math.Pi)
		axis[0*dim+3], half[0*dim+3] = 2e38, 2e38  // a + h overflows: hi is a NaN, lo = |sin(θ/2)|
		axis[1*dim+5], half[1*dim+5] = -2e38, 2e38 // a − h overflows: lo is a NaN
		half[2*dim+dim-1] = nan
		axis[3*dim] = nan
		for _, r := range []int{10, 129} {
			ent[r*dim+2] = nan
		}
		want := make([]float32, q*k)
		ref.DistanceForward(want, axis, half, ent, nil, q, k, dim, lambda)
		got := distanceAll(h, axis, half, ent, q, k, dim, lambda)
		// Queries 0 to 3 NaN against every row, every query against rows 10 and 129.
		if nans := compareScaleNaN(h.t, fmt.Sprint("dist (dim ", dim, ")"), want, got, 1e-2); nans != 4*k+2*(q-4) {
			h.t.Fatalf("dim %d: %d NaN distances, want %d", dim, nans, 4*k+2*(q-4))
		}
	}
}

// testFilteredRanks: the device's ranks against pkg/eval's on scores with many ties
// (−0 and +0 among them), queries without hard or easy answers, one with more hard
// answers than a block has threads, and a row holding a NaN; and the first queries alone
// from the same lists, which leave the last query's ranks untouched.
func testFilteredRanks(h *harness) {
	const queries, cands = 9, 157
	scores := make([]float32, queries*cands)
	for i := range scores {
		scores[i] = float32(h.rng.IntN(7)-3) / 2 // ties everywhere
		if scores[i] == 0 && h.rng.IntN(2) == 0 {
			scores[i] = float32(math.Copysign(0, -1))
		}
	}
	const nanRow = 4
	scores[nanRow*cands+100] = float32(math.NaN())
	var hardStart, ansStart, hard, ans []int32
	hardStart, ansStart = append(hardStart, 0), append(ansStart, 0)
	var want []int32
	for q := 0; q < queries; q++ {
		perm := h.rng.Perm(cands)
		nh, ne := h.rng.IntN(6), h.rng.IntN(9)
		switch q {
		case 2:
			nh = 0
		case 3:
			ne = 0
		case nanRow:
			nh = 3
		case 5:
			nh = 130 // more than a block's threads
		case queries - 1:
			nh = max(nh, 2) // left out below, where its ranks must stay as they were
		}
		qh, qe := make([]int32, nh), make([]int32, ne)
		for i := range qh {
			qh[i] = int32(perm[i])
		}
		for i := range qe {
			qe[i] = int32(perm[nh+i])
		}
		hard = append(hard, qh...)
		ans = append(append(ans, qe...), qh...)
		hardStart, ansStart = append(hardStart, int32(len(hard))), append(ansStart, int32(len(ans)))
		r, err := eval.FilteredRanks(scores[q*cands:(q+1)*cands], qe, qh, nil)
		if q == nanRow && nh > 0 {
			if err == nil {
				h.t.Fatal("eval.FilteredRanks accepted a NaN")
			}
			r = make([]int32, nh) // the device's mark: 0
		} else if err != nil {
			h.t.Fatal(err)
		}
		want = append(want, r...)
	}
	R := h.upI(make([]int32, len(hard)))
	h.ok(h.d.FilteredRanks(R, h.up(scores), h.upI(hardStart), h.upI(hard), h.upI(ansStart), h.upI(ans), queries, cands))
	got, err := R.ToHost()
	h.ok(err)
	for i := range want {
		if got[i] != want[i] {
			h.t.Fatalf("rank of hard answer %d (%d) = %d, want %d", i, hard[i], got[i], want[i])
		}
	}

	// The first queries−1 queries of the same lists (a batch's lists may be longer than
	// the queries ranked): the last query's ranks are left as they were.
	const sentinel = -7
	R = h.upI(slices.Repeat([]int32{sentinel}, len(hard)))
	h.ok(h.d.FilteredRanks(R, h.up(scores), h.upI(hardStart), h.upI(hard), h.upI(ansStart), h.upI(ans), queries-1, cands))
	got, err = R.ToHost()
	h.ok(err)
	for i := range want {
		w := want[i]
		if i >= int(hardStart[queries-1]) {
			w = sentinel
		}
		if got[i] != w {
			h.t.Fatalf("ranking %d of %d queries: rank of hard answer %d (%d) = %d, want %d", queries-1, queries, i, hard[i], got[i], w)
		}
	}
}

// distanceAll is the device's distances of q queries to k entity rows through the tables,
// as rank computes them: the entities' and the queries' half-angle tables, then
// DistanceAll.
func distanceAll(h *harness, axis, half, ent []float32, q, k, dim int, lambda float32) []float32 {
	E, Qt := h.zeros(2*len(ent)), h.zeros(q*dim*QueryTableWidth)
	h.ok(h.d.EntityHalfAngles(E, h.up(ent)))
	h.ok(h.d.QueryHalfAngles(Qt, h.up(axis), h.up(half)))
	D := h.zeros(q * k)
	h.ok(h.d.DistanceAll(D, Qt, E, q, k, dim, lambda))
	return h.down(D)
}
