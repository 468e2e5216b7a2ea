package cuda

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/compute/computetest"
	"github.com/rocone/rocone/pkg/eval"
	"github.com/rocone/rocone/pkg/model"
)

// The parity suite: every kernel, through the host code that launches it, against the
// Go CPU code it replaces (pkg/compute.Reference, pkg/model's operators), on random
// inputs with odd sizes, relative error below 1e-4 in float32 (relative to the largest
// magnitude of the reference's output). It runs on the emulator in every `go test`
// (emu_test.go) and on the real device with -tags cuda (gpu_test.go).

const tol = 1e-4

type harness struct {
	t   *testing.T
	d   *Device
	rng *rand.Rand
}

func (h *harness) up(x []float32) *F32 {
	h.t.Helper()
	if x == nil {
		return nil
	}
	b, err := FromHost(h.d, x)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { b.Free() })
	return b
}

func (h *harness) upI(x []int32) *I32 {
	h.t.Helper()
	if x == nil {
		return nil
	}
	b, err := FromHost(h.d, x)
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { b.Free() })
	return b
}

func (h *harness) zeros(n int) *F32 { return h.up(make([]float32, n)) }

func (h *harness) down(b *F32) []float32 {
	h.t.Helper()
	out, err := b.ToHost()
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

func (h *harness) ok(err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) uniform(n int, lo, hi float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(lo + (hi-lo)*h.rng.Float64())
	}
	return out
}

func (h *harness) cones(n, d int) model.Cones[float32] {
	return model.Cones[float32]{Axis: h.uniform(n*d, -math.Pi, math.Pi), Half: h.uniform(n*d, 0, math.Pi), N: n, Dim: d}
}

func (h *harness) upCones(c model.Cones[float32]) Cones {
	return Cones{Axis: h.up(c.Axis), Half: h.up(c.Half), N: c.N, Dim: c.Dim}
}

func (h *harness) downCones(c Cones) model.Cones[float32] {
	return model.Cones[float32]{Axis: h.down(c.Axis), Half: h.down(c.Half), N: c.N, Dim: c.Dim}
}

// compare fails when got differs from want by more than tol·max|want|.
func compare(t *testing.T, what string, want, got []float32) {
	t.Helper()
	compareScale(t, what, want, got, 1e-6)
}

func maxAbs(x []float32) float64 {
	var m float64
	for _, v := range x {
		m = math.Max(m, math.Abs(float64(v)))
	}
	return m
}

// compareScale is compare with a floor on the scale, for outputs that are sums which
// cancel to (almost) zero, where max|want| is rounding noise.
func compareScale(t *testing.T, what string, want, got []float32, floor float64) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	scale := math.Max(maxAbs(want), floor)
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > tol*scale || math.IsNaN(float64(got[i])) {
			t.Fatalf("%s[%d] = %.9g, reference %.9g (|Δ| = %.3g, tolerance %.3g)", what, i, got[i], want[i], d, tol*scale)
		}
	}
}

func clone(x []float32) []float32 { return append([]float32(nil), x...) }

// geometry is a launch configuration of the Device: the default one, and a tiny one
// whose capped grids make every kernel run its grid-stride loops.
type geometry struct {
	name             string
	maxBlocks, gridY int
}

var geometries = []geometry{{"default", 8192, maxGridY}, {"tiny-grid", 2, 2}}

func runParity(t *testing.T, dev *Device) {
	for _, g := range geometries {
		t.Run(g.name, func(t *testing.T) {
			saved := *dev
			dev.maxBlocks, dev.gridY = g.maxBlocks, g.gridY
			defer func() { *dev = saved }()
			for _, c := range parityCases {
				t.Run(c.name, func(t *testing.T) {
					c.fn(&harness{t: t, d: dev, rng: rand.New(rand.NewPCG(7, uint64(len(c.name))))})
				})
			}
		})
	}
}

var parityCases = []struct {
	name string
	fn   func(h *harness)
}{
	{"Backend", testBackend},
	{"BackendDeterministic", testBackendDeterministic},
	{"Prepared", testPrepared},
	{"Linear", testLinear},
	{"Distance", testDistance},
	{"DistanceAll", testDistanceAll},
	{"FilteredRanks", testFilteredRanks},
	{"Angle", testAngle},
	{"Gather", testGather},
	{"Rotate", testRotate},
	{"Negate", testNegate},
	{"Intersect", testIntersect},
	{"IntersectRagged", testIntersectRagged},
	{"DropoutRagged", testDropoutRagged},
	{"LogitUnion", testLogitUnion},
	{"Loss", testLoss},
	{"Adam", testAdam},
	{"AdamOptimiser", testAdamOptimiser},
	{"AdamMulti", testAdamMulti},
	{"Errors", testErrors},
}

// testBackend runs package computetest's conformance check on Backend.
func testBackend(h *harness) {
	b := NewBackend(h.d)
	defer b.Close()
	computetest.CheckBackend(h.t, b)
	if err := b.Err(); err != nil {
		h.t.Fatalf("device error (results came from the CPU fallback): %v", err)
	}
}

func testBackendDeterministic(h *harness) {
	b := NewBackend(h.d)
	b.Deterministic = true
	defer b.Close()
	computetest.CheckBackend(h.t, b)
	if err := b.Err(); err != nil {
		h.t.Fatalf("device error: %v", err)
	}
}

// testPrepared: compute.PrepareEntities on Backend keeps the table on the device.
func testPrepared(h *harness) {
	b := NewBackend(h.d)
	defer b.Close()
	if _, ok := any(b).(compute.EntityPreparer[float32]); !ok {
		h.t.Fatal("Backend does not implement compute.EntityPreparer")
	}
	ref := compute.Reference[float32]{}
	const queries, cands, dim, rows, lambda = 7, 13, 45, 31, 0.02
	ent := h.uniform(rows*dim, -math.Pi, math.Pi)
	tab := compute.PrepareEntities[float32](b, ent, rows, dim)
	if _, ok := tab.(*preparedTable); !ok {
		h.t.Fatalf("PrepareEntities returned %T", tab)
	}
	axis, half := h.uniform(queries*dim, -math.Pi, math.Pi), h.uniform(queries*dim, 0, math.Pi)
	cand := make([]int32, queries*cands)
	for i := range cand {
		cand[i] = int32(h.rng.IntN(rows))
	}
	for _, c := range []struct {
		name string
		cand []int32
		k    int
	}{{"cand", cand, cands}, {"all", nil, rows - 3}} {
		want, got := make([]float32, queries*c.k), make([]float32, queries*c.k)
		ref.DistanceForward(want, axis, half, ent, c.cand, queries, c.k, dim, lambda)
		tab.DistanceForward(got, axis, half, c.cand, queries, c.k, lambda)
		compare(h.t, "prepared dist ("+c.name+")", want, got)
		dDist := h.uniform(queries*c.k, -1, 1)
		dA1, dH1, dE1 := h.uniform(queries*dim, -1, 1), h.uniform(queries*dim, -1, 1), h.uniform(rows*dim, -1, 1)
		dA2, dH2, dE2 := clone(dA1), clone(dH1), clone(dE1)
		ref.DistanceBackward(dA1, dH1, dE1, dDist, axis, half, ent, c.cand, queries, c.k, dim, lambda)
		tab.DistanceBackward(dA2, dH2, dE2, dDist, axis, half, c.cand, queries, c.k, lambda)
		compare(h.t, "prepared dAxis ("+c.name+")", dA1, dA2)
		compare(h.t, "prepared dHalf ("+c.name+")", dH1, dH2)
		compare(h.t, "prepared dEnt ("+c.name+")", dE1, dE2)
	}
	if err := b.Err(); err != nil {
		h.t.Fatal(err)
	}
	// After Free the table computes on the CPU, correctly, and the backend carries on.
	h.ok(tab.(*preparedTable).Free())
	want, got := make([]float32, queries*cands), make([]float32, queries*cands)
	ref.DistanceForward(want, axis, half, ent, cand, queries, cands, dim, lambda)
	tab.DistanceForward(got, axis, half, cand, queries, cands, lambda)
	compare(h.t, "freed table", want, got)
	if err := b.Err(); err != nil {
		h.t.Fatal(err)
	}
}

// testLinear: shapes over several 64×64 tiles with ragged edges and K not a multiple of
// 16, on the device buffers directly.
func testLinear(h *harness) {
	ref := compute.Reference[float32]{}
	for _, sh := range []struct{ rows, in, out int }{{130, 37, 67}, {5, 131, 3}, {1, 0, 4}} {
		h.t.Run(fmt.Sprint(sh.rows, "x", sh.in, "x", sh.out), func(t *testing.T) {
			x, w, b := h.uniform(sh.rows*sh.in, -1, 1), h.uniform(sh.out*sh.in, -1, 1), h.uniform(sh.out, -1, 1)
			y := make([]float32, sh.rows*sh.out)
			ref.LinearForward(y, x, w, b, sh.rows, sh.in, sh.out)
			X, W, B, Y := h.up(x), h.up(w), h.up(b), h.zeros(len(y))
			h.ok(h.d.LinearForward(Y, X, W, B, sh.rows, sh.in, sh.out))
			compare(t, "y", y, h.down(Y))

			dy := h.uniform(sh.rows*sh.out, -1, 1)
			dx, dw, db := h.uniform(len(x), -1, 1), h.uniform(len(w), -1, 1), h.uniform(len(b), -1, 1)
			DX, DW, DB := h.up(dx), h.up(dw), h.up(db)
			ref.LinearBackward(dx, dw, db, dy, x, w, sh.rows, sh.in, sh.out)
			h.ok(h.d.LinearBackward(DX, DW, DB, h.up(dy), X, W, sh.rows, sh.in, sh.out))
			compare(t, "dx", dx, h.down(DX))
			compare(t, "dw", dw, h.down(DW))
			compare(t, "db", db, h.down(DB))
		})
	}
}

// testDistance: dimensions over 32 lanes and 128 threads, query counts not a multiple of
// 4, both candidate modes and all three entity-gradient scatters.
func testDistance(h *harness) {
	ref := compute.Reference[float32]{}
	const queries, cands, dim, rows, lambda = 11, 21, 133, 17, 0.05
	axis, half := h.uniform(queries*dim, -math.Pi, math.Pi), h.uniform(queries*dim, 0, math.Pi)
	ent := h.uniform(rows*dim, -math.Pi, math.Pi)
	cand := make([]int32, queries*cands)
	for i := range cand {
		cand[i] = int32(h.rng.IntN(rows))
	}
	A, H, E := h.up(axis), h.up(half), h.up(ent)
	for _, mode := range []string{"atomic", "csr", "all"} {
		h.t.Run(mode, func(t *testing.T) {
			c, k, C := cand, cands, h.upI(cand)
			if mode == "all" {
				c, k, C = nil, rows, nil
			}
			dist := make([]float32, queries*k)
			ref.DistanceForward(dist, axis, half, ent, c, queries, k, dim, lambda)
			D := h.zeros(len(dist))
			h.ok(h.d.DistanceForward(D, A, H, E, C, queries, k, dim, lambda))
			compare(t, "dist", dist, h.down(D))

			dDist := h.uniform(queries*k, -1, 1)
			dDist[3] = 0 // skipped, as in the reference
			dA, dH, dE := h.uniform(len(axis), -1, 1), h.uniform(len(half), -1, 1), h.uniform(len(ent), -1, 1)
			DA, DH, DE := h.up(dA), h.up(dH), h.up(dE)
			var ix *CandIndex
			if mode == "csr" {
				var err error
				ix, err = NewCandIndex(h.d, cand, cands)
				h.ok(err)
				defer ix.Free()
			}
			ref.DistanceBackward(dA, dH, dE, dDist, axis, half, ent, c, queries, k, dim, lambda)
			h.ok(h.d.DistanceBackward(DA, DH, DE, h.up(dDist), A, H, E, C, ix, queries, k, dim, lambda))
			compare(t, "dAxis", dA, h.down(DA))
			compare(t, "dHalf", dH, h.down(DH))
			compare(t, "dEnt", dE, h.down(DE))

			// Only the entity gradient.
			dE2 := make([]float32, len(ent))
			DE2 := h.zeros(len(ent))
			ref.DistanceBackward(nil, nil, dE2, dDist, axis, half, ent, c, queries, k, dim, lambda)
			h.ok(h.d.DistanceBackward(nil, nil, DE2, h.up(dDist), A, H, E, C, ix, queries, k, dim, lambda))
			compare(t, "dEnt only", dE2, h.down(DE2))
		})
	}
}

// testDistanceAll: scoring every query against every row from the half-angle tables, on
// shapes with ragged query, row and dimension tiles, and on the edge cases of the inside
// test (a zero and a full half-aperture, entities on the axis and on the boundaries);
// the result does not depend on the grid.
func testDistanceAll(h *harness) {
	ref := compute.Reference[float32]{}
	for _, sh := range []struct{ queries, cands, rows, dim int }{{70, 301, 305, 45}, {1, 1, 1, 1}, {33, 129, 129, 16}, {5, 200, 260, 17}} {
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
			compare(t, "dist", want, got)

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
	if err := h.d.DistanceAll(h.zeros(4), h.zeros(8), h.zeros(4), 1, 4, 1, 0); err == nil {
		h.t.Fatal("DistanceAll accepted an entity table with 2 of 4 rows")
	}
}

// testFilteredRanks: the device's ranks against pkg/eval's on scores with many ties
// (−0 and +0 among them), queries without hard or easy answers, one with more hard
// answers than a block has threads, and a row holding a NaN.
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
}

func testAngle(h *harness) {
	const n, R = 1037, 0.0275
	raw := h.uniform(n, -3*R, 3*R)
	theta := make([]float32, n)
	model.AngleForward(theta, raw, float32(R))
	T := h.zeros(n)
	h.ok(h.d.AngleForward(T, h.up(raw), R))
	compare(h.t, "theta", theta, h.down(T))
	dTheta, dRaw := h.uniform(n, -1, 1), h.uniform(n, -1, 1)
	DR := h.up(dRaw)
	model.AngleBackward(dRaw, dTheta, theta, float32(R))
	h.ok(h.d.AngleBackward(DR, h.up(dTheta), T, R))
	compare(h.t, "dRaw", dRaw, h.down(DR))
}

// testGather: gathers and scatter-adds of embedding rows, with repeated indices.
func testGather(h *harness) {
	const tableRows, rows, d, R = 13, 29, 19, 0.5
	table := h.uniform(tableRows*d, -2*R, 2*R)
	idx := make([]int32, rows)
	for i := range idx {
		idx[i] = int32(h.rng.IntN(tableRows))
	}
	Tb, Ix := h.up(table), h.upI(idx)
	// angle_gather_fwd and gather_rows against model.AngleForward on gathered rows.
	gathered := make([]float32, rows*d)
	for r, id := range idx {
		copy(gathered[r*d:(r+1)*d], table[int(id)*d:int(id+1)*d])
	}
	theta := make([]float32, rows*d)
	model.AngleForward(theta, gathered, float32(R))
	T, G := h.zeros(rows*d), h.zeros(rows*d)
	h.ok(h.d.AngleGather(T, Tb, Ix, d, R))
	h.ok(h.d.GatherRows(G, Tb, Ix, d))
	compare(h.t, "angle gather", theta, h.down(T))
	compare(h.t, "gather", gathered, h.down(G))
	// angle_scatter_bwd and scatter_add_rows.
	dTheta := h.uniform(rows*d, -1, 1)
	dTable, dTable2 := h.uniform(tableRows*d, -1, 1), h.uniform(tableRows*d, -1, 1)
	DT, DT2 := h.up(dTable), h.up(dTable2)
	for r, id := range idx {
		model.AngleBackward(dTable[int(id)*d:int(id+1)*d], dTheta[r*d:(r+1)*d], theta[r*d:(r+1)*d], float32(R))
		for j := 0; j < d; j++ {
			dTable2[int(id)*d+j] += dTheta[r*d+j]
		}
	}
	DTheta := h.up(dTheta)
	h.ok(h.d.AngleScatterBackward(DT, DTheta, T, Ix, d, R))
	h.ok(h.d.ScatterAddRows(DT2, DTheta, Ix, d))
	compare(h.t, "angle scatter", dTable, h.down(DT))
	compare(h.t, "scatter add", dTable2, h.down(DT2))
	F := h.zeros(37)
	h.ok(h.d.Fill(F, 1.5))
	for i, v := range h.down(F) {
		if v != 1.5 {
			h.t.Fatalf("fill[%d] = %g", i, v)
		}
	}
}

func testRotate(h *harness) {
	for _, c := range []struct {
		v   model.Variant
		rot Rotation
	}{{model.RoConE, RotateFold}, {model.RoConETrunc, RotateTrunc}, {model.RoConESE, RotateSE}} {
		h.t.Run(string(c.v), func(t *testing.T) {
			const n, d = 23, 29
			in := h.cones(n, d)
			in.Half[0], in.Half[1], in.Half[2] = 0, math.Pi, 1e-9 // clipped in S.E., fold/clamp edges
			relAxis := h.uniform(n*d, -math.Pi, math.Pi)
			relAperture := h.uniform(n*d, -math.Pi, math.Pi)
			relShift := h.uniform(n*d, -3, 3)
			if c.v == model.RoConESE {
				relAperture = nil
			} else {
				relShift = nil
			}
			out := model.NewCones[float32](n, d)
			proj, err := c.v.Projection()
			h.ok(err)
			model.RotateForward(proj, out, in, relAxis, relAperture, relShift)
			In, Out := h.upCones(in), h.upCones(model.NewCones[float32](n, d))
			RA, RP, RS := h.up(relAxis), h.up(relAperture), h.up(relShift)
			h.ok(h.d.RotateForward(c.rot, Out, In, RA, RP, RS))
			got := h.downCones(Out)
			compare(t, "axis", out.Axis, got.Axis)
			compare(t, "half", out.Half, got.Half)

			dOut := h.cones(n, d)
			dIn := h.cones(n, d)
			dRA, dRP, dRS := h.uniform(n*d, -1, 1), h.uniform(n*d, -1, 1), h.uniform(n*d, -1, 1)
			DIn, DRA, DRP, DRS := h.upCones(dIn), h.up(dRA), h.up(dRP), h.up(dRS)
			model.RotateBackward(proj, dIn, dRA, dRP, dRS, dOut, in, out, relAperture)
			h.ok(h.d.RotateBackward(c.rot, DIn, DRA, DRP, DRS, h.upCones(dOut), In, Out, RP))
			gotIn := h.downCones(DIn)
			compare(t, "dIn.axis", dIn.Axis, gotIn.Axis)
			compare(t, "dIn.half", dIn.Half, gotIn.Half)
			compare(t, "dRelAxis", dRA, h.down(DRA))
			compare(t, "dRelAperture", dRP, h.down(DRP))
			compare(t, "dRelShift", dRS, h.down(DRS))
		})
	}
}

func testNegate(h *harness) {
	const n, d = 7, 33
	in := h.cones(n, d)
	in.Axis[0] = 0
	out := model.NewCones[float32](n, d)
	model.NegateForward(out, in)
	Out := h.upCones(model.NewCones[float32](n, d))
	h.ok(h.d.NegateForward(Out, h.upCones(in)))
	got := h.downCones(Out)
	compare(h.t, "axis", out.Axis, got.Axis)
	compare(h.t, "half", out.Half, got.Half)
	dOut, dIn := h.cones(n, d), h.cones(n, d)
	DIn := h.upCones(dIn)
	model.NegateBackward(dIn, dOut)
	h.ok(h.d.NegateBackward(DIn, h.upCones(dOut)))
	gotIn := h.downCones(DIn)
	compare(h.t, "dIn.axis", dIn.Axis, gotIn.Axis)
	compare(h.t, "dIn.half", dIn.Half, gotIn.Half)
}

// testIntersect: the whole intersection (features, four linear layers, attention
// softmax + atan2, CardMin with dropout mask) against model.IntersectForward/Backward.
func testIntersect(h *harness) {
	for _, c := range []struct {
		nb   int
		drop bool
	}{{2, false}, {3, true}} {
		h.t.Run(fmt.Sprintf("%d-branches-mask=%v", c.nb, c.drop), func(t *testing.T) {
			const n, d = 9, 13
			lin := func(in, out int) ([]float32, []float32) {
				bw, bb := math.Sqrt(6/float64(in+out)), 1/math.Sqrt(float64(in))
				return h.uniform(out*in, -bw, bw), h.uniform(out, -bb, bb)
			}
			w := &model.IntersectionWeights[float32]{}
			w.W1, w.B1 = lin(2*d, d)
			w.W2, w.B2 = lin(d, d)
			w.W3, w.B3 = lin(2*d, d)
			w.W4, w.B4 = lin(d, d)
			in := make([]model.Cones[float32], c.nb)
			all := model.NewCones[float32](c.nb*n, d)
			for j := range in {
				in[j] = h.cones(n, d)
				copy(all.Axis[j*n*d:], in[j].Axis)
				copy(all.Half[j*n*d:], in[j].Half)
			}
			var mask []float32
			if c.drop {
				mask = make([]float32, c.nb*n*d)
				for i := range mask {
					if h.rng.Float64() > 0.3 {
						mask[i] = 1 / 0.7
					}
				}
			}
			ref := compute.Reference[float32]{}
			out := model.NewCones[float32](n, d)
			st := model.IntersectForward(ref, w, out, in, mask)

			W := IntersectWeights{h.up(w.W1), h.up(w.B1), h.up(w.W2), h.up(w.B2), h.up(w.W3), h.up(w.B3), h.up(w.W4), h.up(w.B4)}
			In, Out := h.upCones(all), h.upCones(model.NewCones[float32](n, d))
			dst, err := h.d.IntersectForward(W, Out, In, c.nb, h.up(mask))
			h.ok(err)
			defer dst.Free()
			got := h.downCones(Out)
			compare(t, "axis", out.Axis, got.Axis)
			compare(t, "half", out.Half, got.Half)

			dOut := h.cones(n, d)
			dIn := make([]model.Cones[float32], c.nb)
			for j := range dIn {
				dIn[j] = model.NewCones[float32](n, d)
			}
			gw := &model.IntersectionWeights[float32]{
				W1: make([]float32, len(w.W1)), B1: make([]float32, d), W2: make([]float32, len(w.W2)), B2: make([]float32, d),
				W3: make([]float32, len(w.W3)), B3: make([]float32, d), W4: make([]float32, len(w.W4)), B4: make([]float32, d),
			}
			model.IntersectBackward(ref, w, gw, st, dIn, dOut, in)
			GW := IntersectWeights{h.zeros(len(w.W1)), h.zeros(d), h.zeros(len(w.W2)), h.zeros(d),
				h.zeros(len(w.W3)), h.zeros(d), h.zeros(len(w.W4)), h.zeros(d)}
			DIn := h.upCones(model.NewCones[float32](c.nb*n, d))
			h.ok(h.d.IntersectBackward(W, GW, dst, DIn, h.upCones(dOut), In))
			gotIn := h.downCones(DIn)
			for j := range dIn {
				compare(t, fmt.Sprint("dIn[", j, "].axis"), dIn[j].Axis, gotIn.Axis[j*n*d:(j+1)*n*d])
				compare(t, fmt.Sprint("dIn[", j, "].half"), dIn[j].Half, gotIn.Half[j*n*d:(j+1)*n*d])
			}
			for _, p := range []struct {
				name string
				want []float32
				got  *F32
			}{{"W1", gw.W1, GW.W1}, {"B1", gw.B1, GW.B1}, {"W2", gw.W2, GW.W2}, {"B2", gw.B2, GW.B2},
				{"W3", gw.W3, GW.W3}, {"B3", gw.B3, GW.B3}, {"W4", gw.W4, GW.W4}, {"B4", gw.B4, GW.B4}} {
				// dB2 is 0 up to rounding: the softmax over branches is invariant to a
				// bias shared by all branches. Measure it on the scale of dW2.
				compareScale(t, "d"+p.name, p.want, h.down(p.got), maxAbs(gw.W2))
			}
		})
	}
}

func testLogitUnion(h *harness) {
	const n, nb = 1000, 3
	const gamma = 20
	dist := h.uniform(n, 0, 40)
	modulus := []float32{0.0137}
	logit := make([]float32, n)
	model.LogitForward(logit, dist, gamma, modulus[0])
	L, D, M := h.zeros(n), h.up(dist), h.up(modulus)
	h.ok(h.d.LogitForward(L, D, M, gamma))
	compare(h.t, "logit", logit, h.down(L))
	dLogit, dDist := h.uniform(n, -1, 1), h.uniform(n, -1, 1)
	DD, DM := h.up(dDist), h.up([]float32{0.25})
	dm := model.LogitBackward(dDist, dLogit, dist, modulus[0])
	h.ok(h.d.LogitBackward(DD, DM, h.up(dLogit), D, M))
	compare(h.t, "dDist", dDist, h.down(DD))
	compare(h.t, "dModulus", []float32{float32(0.25 + dm)}, h.down(DM))

	branches := make([][]float32, nb)
	flat := make([]float32, 0, nb*n)
	for b := range branches {
		branches[b] = h.uniform(n, -5, 5)
		flat = append(flat, branches[b]...)
	}
	score, arg := make([]float32, n), make([]int32, n)
	model.UnionMaxForward(score, arg, branches)
	S, Arg := h.zeros(n), h.upI(make([]int32, n))
	h.ok(h.d.UnionMaxForward(S, Arg, h.up(flat), nb))
	compare(h.t, "score", score, h.down(S))
	gotArg, err := Arg.ToHost()
	h.ok(err)
	for i := range arg {
		if arg[i] != gotArg[i] {
			h.t.Fatalf("arg[%d] = %d, want %d", i, gotArg[i], arg[i])
		}
	}
	dScore := h.uniform(n, -1, 1)
	dBr := make([][]float32, nb)
	dFlat := h.uniform(nb*n, -1, 1)
	for b := range dBr {
		dBr[b] = clone(dFlat[b*n : (b+1)*n])
	}
	DB := h.up(dFlat)
	model.UnionMaxBackward(dBr, dScore, arg)
	h.ok(h.d.UnionMaxBackward(DB, h.up(dScore), Arg))
	gotB := h.down(DB)
	for b := range dBr {
		compare(h.t, fmt.Sprint("dBranch", b), dBr[b], gotB[b*n:(b+1)*n])
	}
}

func testLoss(h *harness) {
	const Q, k = 37, 19
	pos, neg := h.uniform(Q, -30, 30), h.uniform(Q*k, -30, 30)
	w := h.uniform(Q, 0.05, 0.5)
	L, Lp, Ln := model.LossForward(pos, neg, w, k)
	P, N, W := h.up(pos), h.up(neg), h.up(w)
	stats, err := Alloc[float64](h.d, 4)
	h.ok(err)
	defer stats.Free()
	h.ok(h.d.LossForward(stats, P, N, W, Q, k))
	gl, glp, gln, err := ReadLoss(stats)
	h.ok(err)
	for _, c := range []struct {
		name      string
		want, got float64
	}{{"L", L, gl}, {"L_pos", Lp, glp}, {"L_neg", Ln, gln}} {
		if math.Abs(c.got-c.want) > 1e-6*math.Abs(c.want) {
			h.t.Fatalf("%s = %.12g, reference %.12g", c.name, c.got, c.want)
		}
	}
	dPos, dNeg := h.uniform(Q, -1, 1), h.uniform(Q*k, -1, 1)
	DP, DN := h.up(dPos), h.up(dNeg)
	model.LossBackward(dPos, dNeg, pos, neg, w, k, 0.75)
	h.ok(h.d.LossBackward(DP, DN, P, N, W, stats, Q, k, 0.75))
	compare(h.t, "dPos", dPos, h.down(DP))
	compare(h.t, "dNeg", dNeg, h.down(DN))
}

// adamReference is the textbook Adam (Kingma & Ba, as torch.optim.Adam computes it), in
// float64: m̂ = m/(1−β1^t), v̂ = v/(1−β2^t), p −= lr·m̂/(√v̂ + ε).
func adamReference(p, g, m, v []float64, t int, c AdamConfig) {
	for i := range p {
		m[i] = c.Beta1*m[i] + (1-c.Beta1)*g[i]
		v[i] = c.Beta2*v[i] + (1-c.Beta2)*g[i]*g[i]
		mh := m[i] / (1 - math.Pow(c.Beta1, float64(t)))
		vh := v[i] / (1 - math.Pow(c.Beta2, float64(t)))
		p[i] -= c.LR * mh / (math.Sqrt(vh) + c.Eps)
	}
}

func testAdam(h *harness) {
	const n, steps = 1234, 4
	cfg := DefaultAdam(1e-2)
	p32 := h.uniform(n, -1, 1)
	P, G, M, V := h.up(p32), h.zeros(n), h.zeros(n), h.zeros(n)
	p, m, v := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range p {
		p[i] = float64(p32[i])
	}
	prev := clone(p32)
	for t := 1; t <= steps; t++ {
		g32 := h.uniform(n, -1, 1)
		for i := 0; i < n; i += 7 {
			g32[i] = 0 // dense: rows with zero gradient still move once m ≠ 0
		}
		g := make([]float64, n)
		for i := range g {
			g[i] = float64(g32[i])
		}
		h.ok(G.Upload(g32))
		adamReference(p, g, m, v, t, cfg)
		h.ok(h.d.AdamStep(P, G, M, V, t, cfg, t%2 == 0))
		got := h.down(P)
		// Compare the updates (the parameters move by about lr per step).
		wantD, gotD := make([]float32, n), make([]float32, n)
		for i := range p {
			wantD[i] = float32(p[i] - float64(prev[i]))
			gotD[i] = got[i] - prev[i]
		}
		compare(h.t, fmt.Sprint("update ", t), wantD, gotD)
		for i := range p {
			p[i] = float64(got[i]) // follow the device, so errors do not compound
		}
		prev = got
		gm, gv := h.down(M), h.down(V)
		m32, v32 := make([]float32, n), make([]float32, n)
		for i := range m {
			m32[i], v32[i] = float32(m[i]), float32(v[i])
		}
		compare(h.t, fmt.Sprint("m ", t), m32, gm)
		compare(h.t, fmt.Sprint("v ", t), v32, gv)
		gg := h.down(G)
		for i, x := range gg {
			if want := map[bool]float32{true: 0, false: g32[i]}[t%2 == 0]; x != want {
				h.t.Fatalf("step %d: g[%d] = %g after the step, want %g", t, i, x, want)
			}
		}
	}
}

// testAdamOptimiser: two tensors over steps, a learning-rate decay with Reset, against
// the float64 reference.
func testAdamOptimiser(h *harness) {
	sizes := []int{301, 7}
	var P, G []*F32
	ps, ms, vs := make([][]float64, 2), make([][]float64, 2), make([][]float64, 2)
	for i, n := range sizes {
		p := h.uniform(n, -1, 1)
		P, G = append(P, h.up(p)), append(G, h.zeros(n))
		ps[i], ms[i], vs[i] = make([]float64, n), make([]float64, n), make([]float64, n)
		for j, x := range p {
			ps[i][j] = float64(x)
		}
	}
	cfg := DefaultAdam(5e-2)
	opt, err := NewAdam(h.d, cfg, P, G)
	h.ok(err)
	defer opt.Free()
	t := 0
	for step := 1; step <= 5; step++ {
		if step == 4 { // decay: lr/5 and a brand-new optimiser
			opt.Config.LR /= 5
			h.ok(opt.Reset())
			for i := range ms {
				clear(ms[i])
				clear(vs[i])
			}
			t = 0
		}
		t++
		for i, n := range sizes {
			g := h.uniform(n, -1, 1)
			h.ok(G[i].Upload(g))
			g64 := make([]float64, n)
			for j, x := range g {
				g64[j] = float64(x)
			}
			adamReference(ps[i], g64, ms[i], vs[i], t, opt.Config)
		}
		h.ok(opt.Step(true))
		if opt.Steps() != t {
			h.t.Fatalf("Steps() = %d, want %d", opt.Steps(), t)
		}
		for i := range sizes {
			got := h.down(P[i])
			want := make([]float32, len(got))
			for j := range want {
				want[j] = float32(ps[i][j])
			}
			compare(h.t, fmt.Sprint("step ", step, " param ", i), want, got)
			for j := range ps[i] {
				ps[i][j] = float64(got[j])
			}
		}
	}
}

// testErrors: bad sizes and arguments come back as errors, not crashes.
func testErrors(h *harness) {
	small, big := h.zeros(3), h.zeros(100)
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"short y", h.d.LinearForward(small, big, big, nil, 2, 5, 5), "y has 3 elements, needs 10"},
		{"nil x", h.d.LinearForward(big, nil, big, nil, 2, 5, 5), "x is nil"},
		{"negative", h.d.LinearForward(big, big, big, nil, -1, 5, 5), "negative size"},
		{"adam step 0", h.d.AdamStep(big, big, big, big, 0, DefaultAdam(1), false), "step 0"},
		{"intersect shapes", func() error {
			_, err := h.d.IntersectForward(IntersectWeights{}, Cones{N: 2, Dim: 3}, Cones{N: 5, Dim: 3}, 2, nil)
			return err
		}(), "input cones"},
		{"unknown kernel", h.d.launch("nope", [3]int{1, 1, 1}, [3]int{1, 1, 1}), "no kernel"},
		{"argument kind", h.d.launch("fill_f32", [3]int{1, 1, 1}, [3]int{1, 1, 1}, ptr(big), i32(1), i32(1)), "passing i for a f parameter"},
		{"argument count", h.d.launch("fill_f32", [3]int{1, 1, 1}, [3]int{1, 1, 1}, ptr(big)), "takes 3 arguments"},
		{"int range", h.d.launch("fill_f32", [3]int{1, 1, 1}, [3]int{1, 1, 1}, ptr(big), f32(0), i32(1<<40)), "does not fit"},
		{"upload", small.Upload(make([]float32, 4)), "upload of 4 elements"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			h.t.Errorf("%s: error %v, want one containing %q", c.name, c.err, c.want)
		}
	}
}
