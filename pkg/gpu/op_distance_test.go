package gpu

import (
	"math"
	"slices"
	"testing"

	"github.com/rocone/rocone/pkg/compute"
)

// distVersions are the sets of distance kernels (op_distance.go): the table kernels with
// the entity gradient as per-pair rows summed by RowsSum, the default; the same with
// distance_bwd_ent_csr_tab for the entity gradient (distCSR); and the first ones, kept for
// the kernel bench.
var distVersions = []struct {
	name       string
	first, csr bool
}{{"table", false, false}, {"table-csr", false, true}, {"first", true, false}}

// testSgnMul: the kernels' sgn_mul(s, y) (sgn_mul_f32) against sgnf(s)·y, float32's
// product, bit for bit, over every pair of signed zeros, subnormals, normals, the largest
// float, infinities and (for s) NaNs, and random pairs; y a NaN is left out (sgn_mul
// keeps its payload where a product may not). A NaN that the product makes (0·∞) is any
// NaN: its bits are the platform's, 0x7fffffff on the device, 0xffc00000 on amd64.
func testSgnMul(h *harness) {
	nan := float32(math.NaN())
	s, y := specialPairs(h, append(slices.Clone(specialFloats), nan, -nan), specialFloats)
	n := len(s)
	out := h.zeros(n)
	h.ok(h.d.each("sgn_mul_f32", n, Work{Bytes: words(3 * n), FLOPs: flops(n, 1)}, ptr(out), ptr(h.up(s)), ptr(h.up(y)), i32(n)))
	got := h.down(out)
	for i := range s {
		var sgn float32
		switch {
		case s[i] > 0:
			sgn = 1
		case s[i] < 0:
			sgn = -1
		}
		want := sgn * y[i]
		if math.IsNaN(float64(want)) && math.IsNaN(float64(got[i])) {
			continue
		}
		if math.Float32bits(got[i]) != math.Float32bits(want) {
			h.t.Fatalf("sgn_mul(%g, %g) = %g (%#08x), sgnf·y %g (%#08x)", s[i], y[i], got[i], math.Float32bits(got[i]), want, math.Float32bits(want))
		}
	}
}

// specialFloats are the values whose bits a kernel's float rule must get right: signed
// zeros, subnormals, ordinary values, the largest float and the infinities.
var specialFloats = []float32{0, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, 1e-39, -1e-39,
	1, -1, 0.5, -3.25, math.MaxFloat32, -math.MaxFloat32, float32(math.Inf(1)), float32(math.Inf(-1))}

// specialPairs is every pair (a, b) of as and bs, then 4096 random normal pairs.
func specialPairs(h *harness, as, bs []float32) (x, y []float32) {
	for _, a := range as {
		for _, b := range bs {
			x, y = append(x, a), append(y, b)
		}
	}
	for range 4096 {
		x = append(x, float32(h.rng.NormFloat64()))
		y = append(y, float32(h.rng.NormFloat64()))
	}
	return x, y
}

// testMinMaxNaN: the kernels' fmin_nan and fmax_nan (minmax_nan_f32) against Go's min and
// max, the CPU reference's, bit for bit, over every pair of signed zeros, subnormals,
// normals, the largest float, infinities and NaNs, and random pairs: a NaN in either
// operand gives a NaN (fminf and fmaxf would give the other operand), and −0 < +0. A NaN
// is any NaN: the device's is the canonical 0x7fffffff.
func testMinMaxNaN(h *harness) {
	nan := float32(math.NaN())
	special := append(slices.Clone(specialFloats), nan, -nan)
	x, y := specialPairs(h, special, special)
	n := len(x)
	mn, mx := h.zeros(n), h.zeros(n)
	h.ok(h.d.each("minmax_nan_f32", n, Work{Bytes: words(4 * n), FLOPs: flops(n, 2)}, ptr(mn), ptr(mx), ptr(h.up(x)), ptr(h.up(y)), i32(n)))
	for _, o := range []struct {
		what string
		got  []float32
		ref  func(a, b float32) float32
	}{{"fmin_nan", h.down(mn), func(a, b float32) float32 { return min(a, b) }}, {"fmax_nan", h.down(mx), func(a, b float32) float32 { return max(a, b) }}} {
		for i, g := range o.got {
			want := o.ref(x[i], y[i])
			if math.IsNaN(float64(want)) && math.IsNaN(float64(g)) {
				continue
			}
			if math.Float32bits(g) != math.Float32bits(want) {
				h.t.Fatalf("%s(%g, %g) = %g (%#08x), Go's %g (%#08x)", o.what, x[i], y[i], g, math.Float32bits(g), want, math.Float32bits(want))
			}
		}
	}
}

// testHalfSincos: the table kernels' sines and cosines (half_sincos, common.h), read back
// through the query table (distance_qtab: sin, cos of axis/2, then of half/2), against
// float64's: within 1.1e-7 absolute on the polynomials' interval |x| ≤ 1.5708 (every
// half angle of a model's cone), sin odd and exact at 0, cos(0) = 1; and, beyond it
// (sincosf's own path), within 2.5e-7 of float64 at the float argument.
func testHalfSincos(h *harness) {
	var x []float32 // the half angles
	const steps = 1 << 16
	for i := 0; i <= steps; i++ {
		x = append(x, float32(-1.5708+3.1416*float64(i)/steps))
	}
	x = append(x, 0, float32(math.Pi/2), -float32(math.Pi/2), 1.5708, -1.5708, 1e-30, -1e-30, 1.5709, -1.6, 2.5, -3.1, 40, 1e5)
	n := len(x)
	axis, half := make([]float32, n), make([]float32, n)
	for i, v := range x {
		axis[i], half[i] = 2*v, -2*v // doubling is exact, so the kernel halves back to v
	}
	tab, err := h.d.queryTable(h.up(axis), h.up(half), n)
	h.ok(err)
	defer tab.Free()
	got := h.down(tab)
	for i, v := range x {
		ws, wc := math.Sincos(float64(v))
		tol := 1.1e-7
		if !(math.Abs(float64(v)) <= 1.5708) {
			tol = 2.5e-7
		}
		for k, c := range []struct {
			what      string
			got, want float64
		}{
			{"sin", float64(got[4*i]), ws}, {"cos", float64(got[4*i+1]), wc},
			{"sin of −x", float64(got[4*i+2]), -ws}, {"cos of −x", float64(got[4*i+3]), wc},
		} {
			if !(math.Abs(c.got-c.want) <= tol) {
				h.t.Fatalf("x = %g (%d): %s = %.9g, float64 %.9g, error %.3g > %.3g", v, k, c.what, c.got, c.want, math.Abs(c.got-c.want), tol)
			}
		}
		if got[4*i] != -got[4*i+2] || got[4*i+1] != got[4*i+3] {
			h.t.Fatalf("x = %g: sin(−x) = %g, −sin x = %g; cos(−x) = %g, cos x = %g", v, got[4*i+2], -got[4*i], got[4*i+3], got[4*i+1])
		}
		if v == 0 && (got[4*i] != 0 || got[4*i+1] != 1) {
			h.t.Fatalf("sin 0 = %g, cos 0 = %g; want 0 and 1 exactly", got[4*i], got[4*i+1])
		}
	}
}

// testDistance: dimensions over 32 lanes and 128 threads, query counts not a multiple of
// 4, both candidate modes and all three entity-gradient scatters, for every kernel set
// (the CSR entity gradient by per-pair rows with the bits of the table kernels'); then
// the cone boundaries (testDistanceBoundary).
func testDistance(h *harness) {
	ref := compute.Reference[float32]{}
	const queries, cands, dim, rows, lambda = tdQueries, tdCands, tdDim, tdRows, 0.05
	axis, half, ent, cand := distInputs(h)
	A, H, E := h.up(axis), h.up(half), h.up(ent)
	csrEnt := map[string][]float32{} // per version, the CSR mode's dEnt
	// Each mode's upstream gradient and initial gradients, the same for every version.
	type grads struct{ dDist, dA, dH, dE []float32 }
	inputs := map[string]grads{}
	for _, mode := range []string{"atomic", "csr", "all"} {
		k := map[bool]int{true: rows, false: cands}[mode == "all"]
		g := grads{h.uniform(queries*k, -1, 1), h.uniform(len(axis), -1, 1), h.uniform(len(half), -1, 1), h.uniform(len(ent), -1, 1)}
		g.dDist[3] = 0 // skipped, as in the reference
		inputs[mode] = g
	}
	for _, v := range distVersions {
		h.t.Run(v.name, func(t *testing.T) {
			h.d.distFirst, h.d.distCSR = v.first, v.csr
			defer func() { h.d.distFirst, h.d.distCSR = false, false }()
			for _, mode := range []string{"atomic", "csr", "all"} {
				t.Run(mode, func(t *testing.T) {
					h := &harness{t: t, d: h.d, rng: h.rng}
					c, k, C := cand, cands, h.upI(cand)
					if mode == "all" {
						c, k, C = nil, rows, nil
					}
					dist := make([]float32, queries*k)
					ref.DistanceForward(dist, axis, half, ent, c, queries, k, dim, lambda)
					D := h.zeros(len(dist))
					h.ok(h.d.DistanceForward(D, A, H, E, C, queries, k, dim, lambda))
					compare(t, "dist", dist, h.down(D))

					in := inputs[mode]
					dDist, dA, dH, dE := in.dDist, clone(in.dA), clone(in.dH), clone(in.dE)
					DA, DH, DE := h.up(dA), h.up(dH), h.up(dE)
					var ix *DeviceRowIndex
					if mode == "csr" {
						ix = h.upIndex(RowCSR(cand, rows, nil))
					}
					ref.DistanceBackward(dA, dH, dE, dDist, axis, half, ent, c, queries, k, dim, lambda)
					h.ok(h.d.DistanceBackward(DA, DH, DE, h.up(dDist), A, H, E, C, ix, queries, k, dim, lambda))
					compare(t, "dAxis", dA, h.down(DA))
					compare(t, "dHalf", dH, h.down(DH))
					compare(t, "dEnt", dE, h.down(DE))
					if mode == "csr" {
						csrEnt[v.name] = h.down(DE)
					}

					// Only the entity gradient.
					dE2 := make([]float32, len(ent))
					DE2 := h.zeros(len(ent))
					ref.DistanceBackward(nil, nil, dE2, dDist, axis, half, ent, c, queries, k, dim, lambda)
					h.ok(h.d.DistanceBackward(nil, nil, DE2, h.up(dDist), A, H, E, C, ix, queries, k, dim, lambda))
					compare(t, "dEnt only", dE2, h.down(DE2))
				})
			}
		})
	}
	want, got := csrEnt["table-csr"], csrEnt["table"]
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			h.t.Fatalf("csr dEnt[%d]: %v by per-pair rows, %v by distance_bwd_ent_csr_tab", i, got[i], want[i])
		}
	}
	h.t.Run("boundary", func(t *testing.T) { testDistanceBoundary(&harness{t: t, d: h.d, rng: h.rng}) })
	h.t.Run("NaN", func(t *testing.T) { testDistanceNaN(&harness{t: t, d: h.d, rng: h.rng}) })
	h.t.Run("many candidates", func(t *testing.T) { testDistanceManyCands(&harness{t: t, d: h.d, rng: h.rng}) })
}

// testDistanceManyCands: more candidates per query than the query-side backward stages
// at a time (DIST_BWD_THREADS = 128, a training batch's 129th and on), so that its
// second slice is read, in every mode and for every kernel set, against the reference.
func testDistanceManyCands(h *harness) {
	ref := compute.Reference[float32]{}
	const queries, cands, dim, rows, lambda = 3, 131, 5, 131, 0.05
	axis, half := h.uniform(queries*dim, -math.Pi, math.Pi), h.uniform(queries*dim, 0, math.Pi)
	ent := h.uniform(rows*dim, -math.Pi, math.Pi)
	cand := make([]int32, queries*cands)
	for i := range cand {
		cand[i] = int32(h.rng.IntN(rows))
	}
	dDist := h.uniform(queries*cands, -1, 1)
	A, H, E, DD := h.up(axis), h.up(half), h.up(ent), h.up(dDist)
	for _, v := range distVersions {
		h.t.Run(v.name, func(t *testing.T) {
			h := &harness{t: t, d: h.d, rng: h.rng}
			h.d.distFirst, h.d.distCSR = v.first, v.csr
			defer func() { h.d.distFirst, h.d.distCSR = false, false }()
			for _, mode := range []string{"atomic", "csr", "all"} {
				c, C := cand, h.upI(cand)
				if mode == "all" {
					c, C = nil, nil
				}
				dist := make([]float32, queries*cands)
				ref.DistanceForward(dist, axis, half, ent, c, queries, cands, dim, lambda)
				D := h.zeros(len(dist))
				h.ok(h.d.DistanceForward(D, A, H, E, C, queries, cands, dim, lambda))
				compare(t, mode+" dist", dist, h.down(D))
				var ix *DeviceRowIndex
				if mode == "csr" {
					ix = h.upIndex(RowCSR(cand, rows, nil))
				}
				dA, dH, dE := make([]float32, len(axis)), make([]float32, len(half)), make([]float32, len(ent))
				ref.DistanceBackward(dA, dH, dE, dDist, axis, half, ent, c, queries, cands, dim, lambda)
				DA, DH, DE := h.zeros(len(axis)), h.zeros(len(half)), h.zeros(len(ent))
				h.ok(h.d.DistanceBackward(DA, DH, DE, DD, A, H, E, C, ix, queries, cands, dim, lambda))
				compare(t, mode+" dAxis", dA, h.down(DA))
				compare(t, mode+" dHalf", dH, h.down(DH))
				compare(t, mode+" dEnt", dE, h.down(DE))
			}
		})
	}
}

// testDistanceNaN: a NaN axis, aperture or entity angle makes the pair's distance and its
// gradients NaN where the reference's are, for every kernel set (one dimension a pair,
// as testDistanceBoundary). Here every term of a (pair, dimension) comes from the same
// sines, so a NaN reaches both operands of each min (fmin_nan) and the sum whichever way
// the min takes it: this pins that down, where DistanceAll's NaN case (testDistanceAllNaN)
// has a boundary alone go NaN.
func testDistanceNaN(h *harness) {
	ref := compute.Reference[float32]{}
	const n, lambda = 40, 0.05
	nan := float32(math.NaN())
	axis, half, ent := h.uniform(n, -math.Pi, math.Pi), h.uniform(n, 0, math.Pi), h.uniform(n, -math.Pi, math.Pi)
	for i := 0; i < n; i += 3 {
		switch i / 3 % 3 {
		case 0:
			axis[i] = nan
		case 1:
			half[i] = nan
		default:
			ent[i] = nan
		}
	}
	cand := make([]int32, n)
	for i := range cand {
		cand[i] = int32(i)
	}
	dDist := h.uniform(n, 0.5, 1)
	for _, v := range distVersions {
		h.t.Run(v.name, func(t *testing.T) {
			h := &harness{t: t, d: h.d, rng: h.rng}
			h.d.distFirst, h.d.distCSR = v.first, v.csr
			defer func() { h.d.distFirst, h.d.distCSR = false, false }()
			A, H, E, C := h.up(axis), h.up(half), h.up(ent), h.upI(cand)
			dist := make([]float32, n)
			ref.DistanceForward(dist, axis, half, ent, cand, n, 1, 1, lambda)
			D := h.zeros(n)
			h.ok(h.d.DistanceForward(D, A, H, E, C, n, 1, 1, lambda))
			if compareScaleNaN(t, "dist", dist, h.down(D), 0.5) == 0 {
				t.Fatal("no NaN distance: the test's NaNs went nowhere")
			}
			dA, dH, dE := make([]float32, n), make([]float32, n), make([]float32, n)
			ref.DistanceBackward(dA, dH, dE, dDist, axis, half, ent, cand, n, 1, 1, lambda)
			ix := h.upIndex(RowCSR(cand, n, nil))
			DA, DH, DE := h.zeros(n), h.zeros(n), h.zeros(n)
			h.ok(h.d.DistanceBackward(DA, DH, DE, h.up(dDist), A, H, E, C, ix, n, 1, 1, lambda))
			compareScaleNaN(t, "dAxis", dA, h.down(DA), 0.5)
			compareScaleNaN(t, "dHalf", dH, h.down(DH), 0.5)
			compareScaleNaN(t, "dEnt", dE, h.down(DE), 0.5)
		})
	}
}

// The distance tests' shape: a dimension that is no multiple of the warp, a candidate
// count that leaves a warp task short, fewer entity rows than candidates (repeats).
const tdQueries, tdCands, tdDim, tdRows = 11, 21, 133, 17

// distInputs are random cones, entity angles and candidates at the tests' shape.
func distInputs(h *harness) (axis, half, ent []float32, cand []int32) {
	axis, half = h.uniform(tdQueries*tdDim, -math.Pi, math.Pi), h.uniform(tdQueries*tdDim, 0, math.Pi)
	ent = h.uniform(tdRows*tdDim, -math.Pi, math.Pi)
	cand = make([]int32, tdQueries*tdCands)
	for i := range cand {
		cand[i] = int32(h.rng.IntN(tdRows))
	}
	return axis, half, ent, cand
}

// testDistanceETab: the table kernels from the entity half-angle table (EntHalfSinCos;
// distance_fwd_etab, distance_bwd_q_etab) give the bits of those from the angles, forward
// and backward (the per-pair rows, and the query side alone), with candidates and
// without, at a dimension that is no multiple of the warp (the last round reloads its
// own) and a candidate count that leaves a short task; and a short or missing table is
// refused.
func testDistanceETab(h *harness) {
	const queries, cands, dim, rows, lambda = tdQueries, tdCands, tdDim, tdRows, 0.05
	axis, half, ent, cand := distInputs(h)
	A, H, E, C := h.up(axis), h.up(half), h.up(ent), h.upI(cand)
	ET := h.zeros(2 * rows * dim)
	h.ok(h.d.EntHalfSinCos(ET, E))
	same := func(what string, a, b *F32) {
		h.t.Helper()
		if !bitsEqual(h.down(a), h.down(b)) {
			h.t.Fatalf("%s: from the entity table, not the angles' bits", what)
		}
	}
	for _, c := range []struct {
		C *I32
		k int
	}{{C, cands}, {nil, rows}} {
		D1, D2 := h.zeros(queries*c.k), h.zeros(queries*c.k)
		h.ok(h.d.distanceForward(D1, A, H, E, nil, c.C, queries, c.k, dim, lambda))
		h.ok(h.d.DistanceForwardETab(D2, A, H, E, ET, c.C, queries, c.k, dim, lambda))
		same("dist", D1, D2)
	}
	dDist := h.uniform(queries*cands, -1, 1)
	dDist[5] = 0
	DD := h.up(dDist)
	ix := h.upIndex(RowCSR(cand, rows, nil))
	var got [2][3]*F32
	for i, et := range []*F32{nil, ET} {
		got[i] = [3]*F32{h.zeros(queries * dim), h.zeros(queries * dim), h.zeros(rows * dim)}
		h.ok(h.d.distanceBackward(got[i][0], got[i][1], got[i][2], DD, A, H, E, et, C, ix, queries, cands, dim, lambda))
	}
	for j, what := range []string{"dAxis", "dHalf", "dEnt"} {
		same(what, got[0][j], got[1][j])
	}
	if err := h.d.DistanceForwardETab(h.zeros(queries*cands), A, H, E, h.zeros(rows*dim), C, queries, cands, dim, lambda); err == nil {
		h.t.Fatalf("a short entity table: no error")
	}
	if err := h.d.DistanceForwardETab(h.zeros(queries*cands), A, H, E, nil, C, queries, cands, dim, lambda); err == nil {
		h.t.Fatalf("DistanceForwardETab without a table: no error")
	}
}

// testDistanceBoundary: the subgradient conventions and the inside test where they
// decide, against the float64 reference, element by element (one dimension, so that no
// sum hides a wrong element): entities exactly on the axis (sign(0) = 0), cones of
// aperture 0 (lo and hi tie) and π (Trunc's; β rounds to 1 in float, where t < β cannot
// tell inside from outside for entities within 5e-4 of the antipode), and entities just
// inside and just outside either boundary of random cones and of the full cone. The
// offsets, 2e-5 and more, are well above the float rounding of the angles (about 2e-7),
// where the reference's and the device's decisions may differ.
func testDistanceBoundary(h *harness) {
	ref := compute.Reference[float32]{}
	const lambda = 0.05
	type pair struct{ a, h, th float64 }
	var pairs []pair
	wrap := func(x float64) float64 { return math.Remainder(x, 2*math.Pi) }
	for i := 0; i < 6; i++ {
		a, hf := -math.Pi+2*math.Pi*h.rng.Float64(), math.Pi*h.rng.Float64()
		a32, h32 := float64(float32(a)), float64(float32(hf))
		pairs = append(pairs, pair{a32, h32, a32}, pair{a32, 0, a32}, pair{a32, math.Pi, a32})
		for _, d := range []float64{2e-5, 1e-3, 0.3} {
			for _, s := range []float64{-1, 1} {
				pairs = append(pairs,
					pair{a32, h32, wrap(a32 + h32 + s*d)}, pair{a32, h32, wrap(a32 - h32 + s*d)},
					pair{a32, 0, wrap(a32 + s*d)},
					pair{a32, math.Pi, wrap(a32 + math.Pi + s*d)}, pair{a32, math.Pi, wrap(a32 - math.Pi + s*d)})
			}
		}
	}
	n := len(pairs)
	axis, half, ent := make([]float32, n), make([]float32, n), make([]float32, n)
	for i, p := range pairs {
		axis[i], half[i], ent[i] = float32(p.a), float32(p.h), float32(p.th)
	}
	// Query i against entity row i alone: cand = i, one candidate, dim 1.
	cand := make([]int32, n)
	for i := range cand {
		cand[i] = int32(i)
	}
	dDist := h.uniform(n, 0.5, 1)
	for _, v := range distVersions {
		h.t.Run(v.name, func(t *testing.T) {
			h := &harness{t: t, d: h.d, rng: h.rng}
			h.d.distFirst = v.first
			defer func() { h.d.distFirst = false }()
			A, H, E, C := h.up(axis), h.up(half), h.up(ent), h.upI(cand)
			dist := make([]float32, n)
			ref.DistanceForward(dist, axis, half, ent, cand, n, 1, 1, lambda)
			D := h.zeros(n)
			h.ok(h.d.DistanceForward(D, A, H, E, C, n, 1, 1, lambda))
			dA, dH, dE := make([]float32, n), make([]float32, n), make([]float32, n)
			ref.DistanceBackward(dA, dH, dE, dDist, axis, half, ent, cand, n, 1, 1, lambda)
			ix := h.upIndex(RowCSR(cand, n, nil))
			DA, DH, DE := h.zeros(n), h.zeros(n), h.zeros(n)
			h.ok(h.d.DistanceBackward(DA, DH, DE, h.up(dDist), A, H, E, C, ix, n, 1, 1, lambda))
			for _, o := range []struct {
				name      string
				want, got []float32
			}{{"dist", dist, h.down(D)}, {"dAxis", dA, h.down(DA)}, {"dHalf", dH, h.down(DH)}, {"dEnt", dE, h.down(DE)}} {
				for i := range o.want {
					// Each element on its own scale: 1e-4 of the largest gradient a
					// pair can have (½(1 + λ)), or of the element.
					if d := math.Abs(float64(o.got[i] - o.want[i])); !(d <= tol*math.Max(0.5, math.Abs(float64(o.want[i])))) {
						t.Errorf("%s[%d] (a %.9g, h %.9g, θ %.9g) = %.9g, reference %.9g", o.name, i, axis[i], half[i], ent[i], o.got[i], o.want[i])
					}
				}
			}
		})
	}
}
