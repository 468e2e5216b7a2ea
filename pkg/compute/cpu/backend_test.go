package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rocone/rocone/internal/computetest"
	"github.com/rocone/rocone/pkg/compute"
)

// backends are the configurations under test: the default (assembly where supported),
// pure Go, and, on amd64, each assembly kernel this CPU can run (see kernels_amd64_test).
func backends() map[string]*Backend {
	m := map[string]*Backend{
		"default": New(Options{}),
		"purego":  New(Options{PureGo: true}),
	}
	for name, be := range extraBackends() {
		m[name] = be
	}
	return m
}

func TestConformance(t *testing.T) {
	for name, be := range backends() {
		t.Run(name, func(t *testing.T) {
			t.Logf("%s", be)
			computetest.CheckBackend(t, be)
		})
	}
}

func randF32(rng *rand.Rand, n int, lo, hi float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(lo + (hi-lo)*rng.Float64())
	}
	return out
}

// compareRel fails when got and want differ by more than eps relative to want's largest
// magnitude (the measure of computetest).
func compareRel(t *testing.T, what string, want, got []float32, eps float64) {
	t.Helper()
	var scale float64
	for _, v := range want {
		scale = math.Max(scale, math.Abs(float64(v)))
	}
	scale = math.Max(scale, 1e-6)
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); !(d <= eps*scale) {
			t.Fatalf("%s[%d] = %g, reference %g (scale %g)", what, i, got[i], want[i], scale)
		}
	}
}

// linearShapes are odd sizes around the tile sizes of every micro-kernel (4×4, 6×16,
// 12×32), the blocking (kc = 192, mc = 192, nc = 512) and the paths chosen by the
// number of rows (B in place up to 128, yᵀ = W·xᵀ up to 256), plus 1 and primes.
var linearShapes = []struct{ rows, in, out int }{
	{1, 1, 1}, {1, 7, 1}, {2, 3, 5}, {5, 1, 13}, {7, 11, 13}, {11, 17, 31}, {12, 32, 32},
	{13, 33, 47}, {25, 257, 33}, {37, 300, 65}, {128, 200, 97}, {129, 65, 33},
	{193, 97, 513}, {200, 513, 70}, {64, 1, 64}, {256, 40, 37}, {257, 193, 45},
	{389, 385, 67},
}

func TestLinearOddSizes(t *testing.T) {
	ref := compute.Reference[float32]{}
	for name, be := range backends() {
		for _, sh := range linearShapes {
			t.Run(fmt.Sprintf("%s/%dx%dx%d", name, sh.rows, sh.in, sh.out), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(uint64(sh.rows), uint64(sh.in*1000+sh.out)))
				x, w := randF32(rng, sh.rows*sh.in, -1, 1), randF32(rng, sh.out*sh.in, -1, 1)
				b, dy := randF32(rng, sh.out, -1, 1), randF32(rng, sh.rows*sh.out, -1, 1)
				// Tolerance: float32 sums of up to 513 terms in another order.
				eps := 1e-5 * math.Sqrt(float64(max(sh.in, sh.rows, sh.out)))
				for _, bias := range [][]float32{b, nil} {
					y1, y2 := make([]float32, sh.rows*sh.out), randF32(rng, sh.rows*sh.out, -9, 9)
					ref.LinearForward(y1, x, w, bias, sh.rows, sh.in, sh.out)
					be.LinearForward(y2, x, w, bias, sh.rows, sh.in, sh.out)
					compareRel(t, "y", y1, y2, eps)
				}
				dx0, dw0, db0 := randF32(rng, sh.rows*sh.in, -1, 1), randF32(rng, sh.out*sh.in, -1, 1), randF32(rng, sh.out, -1, 1)
				dx1, dw1, db1 := slices.Clone(dx0), slices.Clone(dw0), slices.Clone(db0)
				dx2, dw2, db2 := slices.Clone(dx0), slices.Clone(dw0), slices.Clone(db0)
				ref.LinearBackward(dx1, dw1, db1, dy, x, w, sh.rows, sh.in, sh.out)
				be.LinearBackward(dx2, dw2, db2, dy, x, w, sh.rows, sh.in, sh.out)
				compareRel(t, "dx", dx1, dx2, eps)
				compareRel(t, "dw", dw1, dw2, eps)
				compareRel(t, "db", db1, db2, eps)
			})
		}
	}
}

// TestLinearNoOverrun checks that the kernels touch nothing past the tensors they are
// given (slices cut from larger buffers whose tails hold sentinels).
func TestLinearNoOverrun(t *testing.T) {
	const sentinel = 12345
	for name, be := range backends() {
		for _, sh := range linearShapes {
			rng := rand.New(rand.NewPCG(5, uint64(sh.rows)))
			withTail := func(n int) []float32 {
				s := append(randF32(rng, n, -1, 1), sentinel, sentinel, sentinel, sentinel)
				return s[:n]
			}
			x, w, b, dy := withTail(sh.rows*sh.in), withTail(sh.out*sh.in), withTail(sh.out), withTail(sh.rows*sh.out)
			y, dx, dw, db := withTail(sh.rows*sh.out), withTail(sh.rows*sh.in), withTail(sh.out*sh.in), withTail(sh.out)
			be.LinearForward(y, x, w, b, sh.rows, sh.in, sh.out)
			be.LinearBackward(dx, dw, db, dy, x, w, sh.rows, sh.in, sh.out)
			for _, s := range [][]float32{y, dx, dw, db} {
				if tail := s[len(s) : len(s)+4]; !slices.Equal(tail, []float32{sentinel, sentinel, sentinel, sentinel}) {
					t.Fatalf("%s %v: wrote past the end: %v", name, sh, tail)
				}
			}
		}
	}
}

// TestLinearShortOperand: LinearForward and LinearBackward check every operand's length
// before they touch any, and name the one that is short (a short operand read by a
// parallel job would crash the process instead of panicking in the caller).
func TestLinearShortOperand(t *testing.T) {
	const rows, in, out = 3, 5, 7
	be := New(Options{})
	names := map[string][]string{"forward": {"y", "x", "w", "b"}, "backward": {"dx", "dw", "db", "dy", "x", "w"}}
	lens := map[string]int{"y": rows * out, "x": rows * in, "w": out * in, "b": out, "dx": rows * in, "dw": out * in, "db": out, "dy": rows * out}
	rng := rand.New(rand.NewPCG(8, 8))
	for pass, ops := range names {
		for _, short := range ops {
			s := map[string][]float32{}
			for _, name := range ops {
				n := lens[name]
				if name == short {
					n--
				}
				s[name] = randF32(rng, n, -1, 1)
			}
			got := panicValue(func() {
				if pass == "forward" {
					be.LinearForward(s["y"], s["x"], s["w"], s["b"], rows, in, out)
				} else {
					be.LinearBackward(s["dx"], s["dw"], s["db"], s["dy"], s["x"], s["w"], rows, in, out)
				}
			})
			if want := "cpu: linear " + short + ": slice too short"; got != want {
				t.Errorf("%s with %s one short: panic %v, want %q", pass, short, got, want)
			}
		}
	}
}

// panicValue returns what f panics with (nil when it returns).
func panicValue(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

type distShape struct{ queries, cands, dim, rows int }

var distShapes = []distShape{
	{1, 1, 1, 1}, {1, 3, 15, 2}, {2, 5, 16, 7}, {3, 7, 17, 4}, {5, 9, 31, 11}, {4, 13, 33, 50},
	{7, 129, 47, 300}, {3, 5, 800, 9},
}

// distInputs draws a distance problem; with dupes, candidates repeat within and across
// queries (as the scatter-add of the entity gradient must handle).
func distInputs(rng *rand.Rand, sh distShape) (axis, half, ent []float32, cand []int32) {
	axis = randF32(rng, sh.queries*sh.dim, -math.Pi, math.Pi)
	half = randF32(rng, sh.queries*sh.dim, 0, math.Pi)
	ent = randF32(rng, sh.rows*sh.dim, -math.Pi, math.Pi)
	cand = make([]int32, sh.queries*sh.cands)
	for i := range cand {
		cand[i] = int32(rng.IntN(sh.rows))
	}
	return
}

func TestDistanceOddSizes(t *testing.T) {
	ref := compute.Reference[float32]{}
	for name, be := range backends() {
		for _, sh := range distShapes {
			t.Run(fmt.Sprintf("%s/%v", name, sh), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(7, uint64(sh.dim*1000+sh.cands)))
				axis, half, ent, cand := distInputs(rng, sh)
				// Apertures at the edges: closed cones, dropped out (h = 0), and full.
				for i := 0; i < len(half); i += 5 {
					half[i] = []float32{0, math.Pi, 1e-30}[i%3]
				}
				const lambda = 0.02
				tab := be.PrepareEntities(ent, sh.rows, sh.dim)
				for _, c := range []struct {
					name  string
					cand  []int32
					cands int
				}{{"cand", cand, sh.cands}, {"all", nil, sh.rows}} {
					n := sh.queries * c.cands
					d1, d2, d3 := make([]float32, n), make([]float32, n), make([]float32, n)
					ref.DistanceForward(d1, axis, half, ent, c.cand, sh.queries, c.cands, sh.dim, lambda)
					be.DistanceForward(d2, axis, half, ent, c.cand, sh.queries, c.cands, sh.dim, lambda)
					tab.DistanceForward(d3, axis, half, c.cand, sh.queries, c.cands, lambda)
					compareRel(t, c.name+" dist", d1, d2, 2e-6)
					if !slices.Equal(d2, d3) {
						t.Fatalf("%s: prepared table's distance differs", c.name)
					}
					g := randF32(rng, n, -1, 1)
					for i := 0; i < n; i += 7 {
						g[i] = 0
					}
					a0, h0, e0 := randF32(rng, len(axis), -1, 1), randF32(rng, len(half), -1, 1), randF32(rng, len(ent), -1, 1)
					a1, h1, e1 := slices.Clone(a0), slices.Clone(h0), slices.Clone(e0)
					a2, h2, e2 := slices.Clone(a0), slices.Clone(h0), slices.Clone(e0)
					a3, h3, e3 := slices.Clone(a0), slices.Clone(h0), slices.Clone(e0)
					ref.DistanceBackward(a1, h1, e1, g, axis, half, ent, c.cand, sh.queries, c.cands, sh.dim, lambda)
					be.DistanceBackward(a2, h2, e2, g, axis, half, ent, c.cand, sh.queries, c.cands, sh.dim, lambda)
					tab.DistanceBackward(a3, h3, e3, g, axis, half, c.cand, sh.queries, c.cands, lambda)
					compareRel(t, c.name+" dAxis", a1, a2, 2e-5)
					compareRel(t, c.name+" dHalf", h1, h2, 2e-5)
					compareRel(t, c.name+" dEnt", e1, e2, 2e-5)
					if !slices.Equal(a2, a3) || !slices.Equal(h2, h3) || !slices.Equal(e2, e3) {
						t.Fatalf("%s: prepared table's gradients differ", c.name)
					}
					// nil outputs are skipped, the others unchanged.
					a4, e4 := slices.Clone(a0), slices.Clone(e0)
					be.DistanceBackward(a4, nil, e4, g, axis, half, ent, c.cand, sh.queries, c.cands, sh.dim, lambda)
					if !slices.Equal(a4, a2) || !slices.Equal(e4, e2) {
						t.Fatalf("%s: gradients differ with dHalf nil", c.name)
					}
				}
			})
		}
	}
}

// distNaNCases put a NaN or an infinity into one element of the inputs, or make a − h or
// a + h overflow float32 while a and h are finite (one boundary's sine NaN, the other's a
// number): at dimension j of query q's cone or of entity row r.
var distNaNCases = []struct {
	name string
	set  func(axis, half, ent []float32, q, r, j, dim int)
}{
	{"θ NaN", func(_, _, ent []float32, _, r, j, dim int) { ent[r*dim+j] = float32(math.NaN()) }},
	{"θ +Inf", func(_, _, ent []float32, _, r, j, dim int) { ent[r*dim+j] = float32(math.Inf(1)) }},
	{"a NaN", func(axis, _, _ []float32, q, _, j, dim int) { axis[q*dim+j] = float32(math.NaN()) }},
	{"a −Inf", func(axis, _, _ []float32, q, _, j, dim int) { axis[q*dim+j] = float32(math.Inf(-1)) }},
	{"h NaN", func(_, half, _ []float32, q, _, j, dim int) { half[q*dim+j] = float32(math.NaN()) }},
	{"h +Inf", func(_, half, _ []float32, q, _, j, dim int) { half[q*dim+j] = float32(math.Inf(1)) }},
	{"a − h overflows", func(axis, half, _ []float32, q, _, j, dim int) { axis[q*dim+j], half[q*dim+j] = -3e38, 3e38 }},
	{"a + h overflows", func(axis, half, _ []float32, q, _, j, dim int) { axis[q*dim+j], half[q*dim+j] = 3e38, 3e38 }},
}

// TestDistanceNaN: a NaN or an infinity in one input element, or a boundary a ± h beyond
// float32's range, gives NaN distances and gradients on every backend exactly where the
// reference has them (never a number where the reference has NaN, so that training's
// and ranking's NaN checks see it), with candidates, without, and through a prepared
// table; the other outputs stay close to the reference's.
func TestDistanceNaN(t *testing.T) {
	ref := compute.Reference[float32]{}
	sh := distShape{3, 5, 37, 8}
	const lambda = 0.02
	for name, be := range backends() {
		for _, c := range distNaNCases {
			for _, j := range []int{0, 17, sh.dim - 1} {
				what := fmt.Sprintf("%s: %s at %d", name, c.name, j)
				rng := rand.New(rand.NewPCG(11, uint64(j)))
				axis, half, ent, cand := distInputs(rng, sh)
				c.set(axis, half, ent, 1, int(cand[1*sh.cands+3]), j, sh.dim) // g of (1, 3) is not 0
				tab := be.PrepareEntities(ent, sh.rows, sh.dim)
				for _, cc := range []struct {
					name  string
					cand  []int32
					cands int
				}{{"cand", cand, sh.cands}, {"all", nil, sh.rows}} {
					n := sh.queries * cc.cands
					d1, d2, d3 := make([]float32, n), make([]float32, n), make([]float32, n)
					ref.DistanceForward(d1, axis, half, ent, cc.cand, sh.queries, cc.cands, sh.dim, lambda)
					be.DistanceForward(d2, axis, half, ent, cc.cand, sh.queries, cc.cands, sh.dim, lambda)
					tab.DistanceForward(d3, axis, half, cc.cand, sh.queries, cc.cands, lambda)
					sameNaN(t, what+" "+cc.name+" dist", d1, d2, 2e-6)
					sameNaN(t, what+" "+cc.name+" dist (prepared)", d1, d3, 2e-6)
					g := randF32(rng, n, -1, 1)
					for i := 0; i < n; i += 7 {
						g[i] = 0
					}
					a1, h1, e1 := make([]float32, len(axis)), make([]float32, len(half)), make([]float32, len(ent))
					a2, h2, e2 := make([]float32, len(axis)), make([]float32, len(half)), make([]float32, len(ent))
					a3, h3, e3 := make([]float32, len(axis)), make([]float32, len(half)), make([]float32, len(ent))
					ref.DistanceBackward(a1, h1, e1, g, axis, half, ent, cc.cand, sh.queries, cc.cands, sh.dim, lambda)
					be.DistanceBackward(a2, h2, e2, g, axis, half, ent, cc.cand, sh.queries, cc.cands, sh.dim, lambda)
					tab.DistanceBackward(a3, h3, e3, g, axis, half, cc.cand, sh.queries, cc.cands, lambda)
					for _, o := range []struct {
						name      string
						want, got []float32
					}{{"dAxis", a1, a2}, {"dHalf", h1, h2}, {"dEnt", e1, e2}, {"dAxis (prepared)", a1, a3}, {"dHalf (prepared)", h1, h3}, {"dEnt (prepared)", e1, e3}} {
						sameNaN(t, what+" "+cc.name+" "+o.name, o.want, o.got, 2e-5)
					}
				}
			}
		}
	}
}

// TestQueryTableNaN pins what the kernels' minima rely on ("NaN" in distance.go): in the
// query table, a lane's two boundary sines are NaN together or not at all, and they are
// NaN wherever sin α or β is; finite a, h and a ± h give no NaN.
func TestQueryTableNaN(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	pairs := [][2]float32{
		{1, 2}, {nan, 1}, {inf, 1}, {-inf, 0}, {1, nan}, {1, inf}, {1, -inf}, {nan, nan},
		{-3e38, 3e38}, {3e38, 3e38}, {3e38, -3e38}, {-3e38, -3e38}, {3e38, 0}, {3e38, 1e38},
		{-inf, inf}, {inf, inf}, {2e38, 2e38}, {-2e38, 2e38}, {0, 3.4e38},
	}
	dim := len(pairs)
	axis, half := make([]float32, dim), make([]float32, dim)
	for j, p := range pairs {
		axis[j], half[j] = p[0], p[1]
	}
	for name, be := range backends() {
		qt := be.queryTable(axis, half, 1, dim, 0.02)
		for j, p := range pairs {
			b, l := j/lanes, j%lanes
			q := qt.s[b*qBlock : (b+1)*qBlock]
			at := func(slot int) bool { return q[slot+l] != q[slot+l] }
			lo := at(qSinLo)
			if at(qCosLo) != lo || at(qSinHi) != lo || at(qCosHi) != lo {
				t.Errorf("%s: a, h = %g, %g: boundary sines NaN %v %v %v %v", name, p[0], p[1], at(qSinLo), at(qCosLo), at(qSinHi), at(qCosHi))
			}
			if (at(qSinA) || at(qCosA) || at(qBeta) || at(qLamGBeta)) && !lo {
				t.Errorf("%s: a, h = %g, %g: sin α or β NaN, the boundary sines not", name, p[0], p[1])
			}
			a, h := p[0], p[1]
			finite := func(x float32) bool { return math.Abs(float64(x)) <= math.MaxFloat32 }
			if fin := finite(a) && finite(h) && finite(a-h) && finite(a+h); fin == lo {
				t.Errorf("%s: a, h = %g, %g: boundary sines NaN: %v", name, a, h, lo)
			}
		}
		putBuf(qt)
	}
}

// sameNaN fails unless got is NaN exactly where want is and elsewhere within eps of want,
// relative to want's largest finite magnitude; and unless want has a NaN (the case
// reaches the output).
func sameNaN(t *testing.T, what string, want, got []float32, eps float64) {
	t.Helper()
	var scale float64
	nans := 0
	for _, v := range want {
		if v != v {
			nans++
		} else {
			scale = math.Max(scale, math.Abs(float64(v)))
		}
	}
	if nans == 0 {
		t.Fatalf("%s: no NaN in the reference's output", what)
	}
	scale = math.Max(scale, 1e-6)
	for i := range want {
		if (want[i] != want[i]) != (got[i] != got[i]) {
			t.Errorf("%s[%d] = %g, reference %g", what, i, got[i], want[i])
		} else if d := math.Abs(float64(got[i] - want[i])); want[i] == want[i] && !(d <= eps*scale) { // NaN and NaN agree
			t.Errorf("%s[%d] = %g, reference %g (scale %g)", what, i, got[i], want[i], scale)
		}
	}
}

// TestDistanceTies pins the subgradient conventions where the fast path could differ:
// h = 0 exactly (lo and hi tie: the gradient splits, ∂/∂h of the outside term is 0),
// and θ = a exactly (sign(0) = 0: no gradient from the axis distance).
func TestDistanceTies(t *testing.T) {
	ref := compute.Reference[float32]{}
	rng := rand.New(rand.NewPCG(9, 9))
	const q, k, d = 3, 5, 37
	axis, _, ent, cand := distInputs(rng, distShape{q, k, d, 8})
	half := make([]float32, q*d) // all dropped out
	for i := 0; i < q; i++ {
		for j := 0; j < d; j += 4 {
			ent[int(cand[i*k])*d+j] = axis[i*d+j] // θ = a
		}
	}
	g := randF32(rng, q*k, -1, 1)
	for name, be := range backends() {
		a1, h1, e1 := make([]float32, q*d), make([]float32, q*d), make([]float32, len(ent))
		a2, h2, e2 := make([]float32, q*d), make([]float32, q*d), make([]float32, len(ent))
		ref.DistanceBackward(a1, h1, e1, g, axis, half, ent, cand, q, k, d, 0.02)
		be.DistanceBackward(a2, h2, e2, g, axis, half, ent, cand, q, k, d, 0.02)
		compareRel(t, name+" dAxis", a1, a2, 2e-5)
		compareRel(t, name+" dEnt", e1, e2, 2e-5)
		compareRel(t, name+" dHalf", h1, h2, 2e-5) // λ·∂β/∂h only: cos(0)/2 ≠ 0 … times sign(0) = 0
		for i, v := range h2 {
			if v != 0 {
				t.Fatalf("%s: dHalf[%d] = %g at h = 0, want 0", name, i, v)
			}
		}
		// θ = a inside open cones: t = 0 < β, the gradient is λ·sign(0)·… = 0.
		open := randF32(rng, q*d, 0.1, 3)
		clear(a1)
		clear(a2)
		clear(e1)
		clear(e2)
		ref.DistanceBackward(a1, nil, e1, g, axis, open, ent, cand, q, k, d, 0.02)
		be.DistanceBackward(a2, nil, e2, g, axis, open, ent, cand, q, k, d, 0.02)
		compareRel(t, name+" dAxis (open)", a1, a2, 2e-5)
		compareRel(t, name+" dEnt (open)", e1, e2, 2e-5)
	}
}

// TestDistanceBoundaryTies: θ exactly on a boundary of an open cone, θ = a + h or
// θ = a − h (exact in float32: multiples of 1/64), is the tie t = β. The reference then
// splits the inside term's gradient between θ and h (½ each), and the outside term's
// gradient is 0 (sign(0) at the boundary). The fast path sees the tie as a boundary sine
// of exactly 0 (the same table entries), and must split the same way.
func TestDistanceBoundaryTies(t *testing.T) {
	ref := compute.Reference[float32]{}
	rng := rand.New(rand.NewPCG(9, 10))
	const q, k, d, lambda = 3, 4, 37, 0.5
	axis, half, ent := make([]float32, q*d), make([]float32, q*d), randF32(rng, q*k*d, -math.Pi, math.Pi)
	cand := make([]int32, q*k)
	for i := range cand {
		cand[i] = int32(i) // distinct rows: each query sets its own candidates' angles
	}
	for i := range axis {
		axis[i] = float32(rng.IntN(256)-128) / 64 // [−2, 2)
		half[i] = float32(1+rng.IntN(128)) / 64   // (0, 2]
	}
	ties := 0
	for i := 0; i < q; i++ {
		for c := 0; c < k; c++ {
			for j := c % 2; j < d; j += 2 {
				a, h := axis[i*d+j], half[i*d+j]
				if (j/2+c)%2 == 0 {
					ent[(i*k+c)*d+j] = a + h
				} else {
					ent[(i*k+c)*d+j] = a - h
				}
				ties++
			}
		}
	}
	g := randF32(rng, q*k, 0.5, 1)
	for name, be := range backends() {
		a1, h1, e1 := make([]float32, q*d), make([]float32, q*d), make([]float32, len(ent))
		a2, h2, e2 := make([]float32, q*d), make([]float32, q*d), make([]float32, len(ent))
		ref.DistanceBackward(a1, h1, e1, g, axis, half, ent, cand, q, k, d, lambda)
		be.DistanceBackward(a2, h2, e2, g, axis, half, ent, cand, q, k, d, lambda)
		compareRel(t, name+" dAxis", a1, a2, 2e-5)
		compareRel(t, name+" dHalf", h1, h2, 2e-5)
		compareRel(t, name+" dEnt", e1, e2, 2e-5)
		d1, d2 := make([]float32, q*k), make([]float32, q*k)
		ref.DistanceForward(d1, axis, half, ent, cand, q, k, d, lambda)
		be.DistanceForward(d2, axis, half, ent, cand, q, k, d, lambda)
		compareRel(t, name+" dist", d1, d2, 2e-6)
	}
	if ties == 0 {
		t.Fatal("no θ on a boundary")
	}
}

// TestDeterminism: bit-identical results for any number of workers.
func TestDeterminism(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type lin struct {
		rows, in, out int
		x, w, b, dy   []float32
	}
	// Many rows (B packed, y = x·Wᵀ) and few (B in place, yᵀ = W·xᵀ); odd sizes.
	var lins []*lin
	for _, sh := range [][3]int{{301, 330, 170}, {100, 333, 250}} {
		l := &lin{rows: sh[0], in: sh[1], out: sh[2]}
		l.x, l.w = randF32(rng, l.rows*l.in, -1, 1), randF32(rng, l.out*l.in, -1, 1)
		l.b, l.dy = randF32(rng, l.out, -1, 1), randF32(rng, l.rows*l.out, -1, 1)
		lins = append(lins, l)
	}
	// dim = 530: 34 blocks, so the backward splits the dimension over several jobs.
	sh := distShape{23, 65, 530, 300}
	axis, half, ent, cand := distInputs(rng, sh)
	g := randF32(rng, sh.queries*sh.cands, -1, 1)
	gAll := randF32(rng, sh.queries*sh.rows, -1, 1)

	run := func(be *Backend) [][]float32 {
		var outs [][]float32
		for _, l := range lins {
			y := make([]float32, l.rows*l.out)
			be.LinearForward(y, l.x, l.w, l.b, l.rows, l.in, l.out)
			dx, dw, db := make([]float32, l.rows*l.in), make([]float32, l.out*l.in), make([]float32, l.out)
			be.LinearBackward(dx, dw, db, l.dy, l.x, l.w, l.rows, l.in, l.out)
			outs = append(outs, y, dx, dw, db)
		}
		dist := make([]float32, sh.queries*sh.cands)
		be.DistanceForward(dist, axis, half, ent, cand, sh.queries, sh.cands, sh.dim, 0.02)
		distAll := make([]float32, sh.queries*sh.rows)
		be.DistanceForward(distAll, axis, half, ent, nil, sh.queries, sh.rows, sh.dim, 0.02)
		da, dh, de := make([]float32, len(axis)), make([]float32, len(half)), make([]float32, len(ent))
		be.DistanceBackward(da, dh, de, g, axis, half, ent, cand, sh.queries, sh.cands, sh.dim, 0.02)
		be.DistanceBackward(da, dh, de, gAll, axis, half, ent, nil, sh.queries, sh.rows, sh.dim, 0.02)
		return append(outs, dist, distAll, da, dh, de)
	}
	for _, pure := range []bool{false, true} {
		want := run(New(Options{Workers: 1, PureGo: pure}))
		check := func(what string, got [][]float32) {
			for i := range want {
				if !slices.Equal(math32bits(want[i]), math32bits(got[i])) {
					t.Fatalf("purego=%v %s: output %d differs from 1 worker", pure, what, i)
				}
			}
		}
		for _, workers := range []int{2, 3, 4, 7, 16} {
			check(fmt.Sprintf("workers=%d", workers), run(New(Options{Workers: workers, PureGo: pure})))
		}
		// The default, GOMAXPROCS workers.
		for _, procs := range []int{1, 3, 8} {
			old := runtime.GOMAXPROCS(procs)
			got := run(New(Options{PureGo: pure}))
			runtime.GOMAXPROCS(old)
			check(fmt.Sprintf("GOMAXPROCS=%d", procs), got)
		}
	}
}

func math32bits(x []float32) []uint32 {
	out := make([]uint32, len(x))
	for i, v := range x {
		out[i] = math.Float32bits(v)
	}
	return out
}

func TestSincos(t *testing.T) {
	var inRange []float32
	for x := -40.0; x <= 40; x += 0.0007 {
		inRange = append(inRange, float32(x))
	}
	inRange = append(inRange, 0, float32(math.Copysign(0, -1)), 1e-30, 3000, -4000.5, 16000, -16383, math.Pi, -math.Pi, 2*math.Pi)
	outOfRange := append(slices.Clone(inRange[:100]), 16386, -1e6, 1e20, float32(math.Inf(1)))
	for name, be := range backends() {
		for _, xs := range [][]float32{inRange, outOfRange} {
			for len(xs)%lanes != 0 {
				xs = append(xs, 0)
			}
			nblk := len(xs) / lanes
			out := make([]float32, nblk*eBlock)
			be.dk.sincos(xs, nblk, out, eBlock, nil)
			var worst float64
			for i, x := range xs {
				s, c := math.Sincos(float64(x) / 2)
				b, l := i/lanes, i%lanes
				gs, gc := float64(out[b*eBlock+l]), float64(out[b*eBlock+lanes+l])
				if math.IsInf(float64(x), 0) {
					if !math.IsNaN(gs) || !math.IsNaN(gc) {
						t.Fatalf("%s: sincos(%g) = %g, %g, want NaN", name, x, gs, gc)
					}
					continue
				}
				worst = math.Max(worst, math.Max(math.Abs(gs-s), math.Abs(gc-c)))
			}
			if !(worst <= 2e-7) {
				t.Fatalf("%s: sincos error %g", name, worst)
			}
			t.Logf("%s (%s): worst sincos error %.3g over %d values", name, be.dk.name, worst, len(xs))
		}
	}
}

// TestNWorkers: Options.Workers caps the goroutines of a call, 0 (or less) meaning
// GOMAXPROCS, and a call never has more goroutines than jobs, nor fewer than one.
func TestNWorkers(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	for _, c := range []struct{ workers, jobs, want int }{
		{0, 1 << 30, procs}, {-3, 1 << 30, procs}, {0, 1, 1}, {1, 100, 1}, {5, 100, 5},
		{5, 3, 3}, {5, 5, 5}, {5, 0, 1}, {7, 1, 1},
	} {
		if got := New(Options{Workers: c.workers}).nworkers(c.jobs); got != c.want {
			t.Errorf("Workers %d, %d jobs: %d goroutines, want %d", c.workers, c.jobs, got, c.want)
		}
	}
}

// TestParallel: every job runs exactly once, on a goroutine index in [0, workers).
func TestParallel(t *testing.T) {
	for _, c := range []struct{ workers, jobs int }{{1, 5}, {3, 0}, {3, 1}, {3, 2}, {3, 3}, {4, 37}, {16, 5}, {2, 2000}} {
		be := New(Options{Workers: c.workers})
		runs := make([]int32, c.jobs)
		bad := make(chan int, c.jobs)
		be.parallel(c.jobs, func(worker, job int) {
			if worker < 0 || worker >= be.nworkers(c.jobs) {
				bad <- worker
			}
			atomic.AddInt32(&runs[job], 1)
		})
		close(bad)
		for w := range bad {
			t.Errorf("workers %d, jobs %d: goroutine index %d", c.workers, c.jobs, w)
		}
		for j, n := range runs {
			if n != 1 {
				t.Errorf("workers %d, jobs %d: job %d ran %d times", c.workers, c.jobs, j, n)
			}
		}
	}
}

// TestGetBuf: a pooled buffer has the length asked for, starts on a 64-byte boundary,
// and comes back from the pool with the same guarantees, whatever size was put back
// before.
func TestGetBuf(t *testing.T) {
	sizes := []int{0, 1, 15, 16, 17, 31, 48, 49, 63, 64, 65, 1000, 1 << 12, 1<<12 + 1}
	for round := 0; round < 3; round++ {
		var bufs []*buffer
		for _, n := range sizes {
			b := getBuf(n)
			if len(b.s) != n {
				t.Fatalf("getBuf(%d): len %d", n, len(b.s))
			}
			if n > 0 {
				if p := uintptr(unsafe.Pointer(&b.s[0])); p%64 != 0 {
					t.Fatalf("getBuf(%d): starts at %#x, not on 64 bytes", n, p)
				}
				b.s[n-1] = 1 // writable to the end
			}
			bufs = append(bufs, b)
		}
		for _, b := range bufs {
			putBuf(b)
		}
	}
	base := align64(make([]float32, 128))
	for off := 0; off < 16; off++ {
		got := align64(base[off:])
		if want := (16 - off) % 16; len(base[off:])-len(got) != want {
			t.Errorf("align64 at offset %d floats: skipped %d, want %d", off, len(base[off:])-len(got), want)
		}
	}
}

// TestParallelConcurrent: with two workers, two jobs run at the same time (each waits
// for the other to start), whatever GOMAXPROCS.
func TestParallelConcurrent(t *testing.T) {
	be := New(Options{Workers: 2})
	started := make(chan struct{}, 2)
	var timedOut atomic.Bool
	be.parallel(2, func(_, _ int) {
		started <- struct{}{}
		deadline := time.After(10 * time.Second)
		for len(started) < 2 {
			select {
			case <-deadline:
				timedOut.Store(true)
				return
			case <-time.After(time.Millisecond):
			}
		}
	})
	if timedOut.Load() {
		t.Fatal("two jobs on two workers did not run concurrently")
	}
}

// TestDistanceBackwardNilOutputs: any of dAxis, dHalf, dEnt may be nil, in the Backend's
// DistanceBackward and in a prepared table's; the others get the same bits as with all
// three, on every backend, with and without candidates.
func TestDistanceBackwardNilOutputs(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 12))
	sh := distShape{3, 5, 37, 8}
	axis, half, ent, cand := distInputs(rng, sh)
	g := randF32(rng, sh.queries*sh.rows, -1, 1)
	for name, be := range backends() {
		for _, c := range []struct {
			name  string
			cand  []int32
			cands int
		}{{"cand", cand, sh.cands}, {"all", nil, sh.rows}} {
			gc := g[:sh.queries*c.cands]
			full := [3][]float32{make([]float32, len(axis)), make([]float32, len(half)), make([]float32, len(ent))}
			be.DistanceBackward(full[0], full[1], full[2], gc, axis, half, ent, c.cand, sh.queries, c.cands, sh.dim, 0.02)
			tab := be.PrepareEntities(ent, sh.rows, sh.dim)
			for mask := 0; mask < 8; mask++ {
				for call, bwd := range map[string]func(dAxis, dHalf, dEnt []float32){
					"backend": func(dAxis, dHalf, dEnt []float32) {
						be.DistanceBackward(dAxis, dHalf, dEnt, gc, axis, half, ent, c.cand, sh.queries, c.cands, sh.dim, 0.02)
					},
					"prepared": func(dAxis, dHalf, dEnt []float32) {
						tab.DistanceBackward(dAxis, dHalf, dEnt, gc, axis, half, c.cand, sh.queries, c.cands, 0.02)
					},
				} {
					var outs [3][]float32
					for i := range outs {
						if mask&(1<<i) != 0 {
							outs[i] = make([]float32, len(full[i]))
						}
					}
					bwd(outs[0], outs[1], outs[2])
					for i, o := range outs {
						if o != nil && !slices.Equal(math32bits(o), math32bits(full[i])) {
							t.Errorf("%s %s %s: outputs %03b: output %d differs from the call with all three", name, call, c.name, mask, i)
						}
					}
				}
			}
		}
	}
}

// outOfRange is the distance calls' panic for a candidate past the entity table.
const outOfRange = "cpu: distance: candidate row out of range"

// withCandidate returns a copy of cand whose slot i holds row.
func withCandidate(cand []int32, i, row int) []int32 {
	c := slices.Clone(cand)
	c[i] = int32(row)
	return c
}

// TestDistanceBadOperands: DistanceForward refuses, with its own message and before
// scoring, an entity table one element short (cand nil) and a candidate past the last
// row of ent (len(ent)/dim rows), also in the last query's last slot.
func TestDistanceBadOperands(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 13))
	sh := distShape{3, 5, 37, 8}
	axis, half, ent, cand := distInputs(rng, sh)
	last, first := withCandidate(cand, len(cand)-1, sh.rows), withCandidate(cand, 0, sh.rows)
	for _, c := range []struct {
		name  string
		ent   []float32
		cand  []int32
		cands int
		want  string
	}{
		{"ent short", ent[:len(ent)-1], nil, sh.rows, "cpu: distance ent: slice too short"},
		{"first candidate past the rows", ent, first, sh.cands, outOfRange},
		{"last candidate past the rows", ent, last, sh.cands, outOfRange},
	} {
		for name, be := range backends() {
			dist := make([]float32, sh.queries*c.cands)
			got := panicValue(func() {
				be.DistanceForward(dist, axis, half, c.ent, c.cand, sh.queries, c.cands, sh.dim, 0.02)
			})
			if got != c.want {
				t.Errorf("%s %s: panic %v, want %q", name, c.name, got, c.want)
			}
		}
	}
}

// TestDistanceBackwardBadOperands: DistanceBackward refuses, with its own message and
// before accumulating, an output one element short (dEnt covering the rows up to the
// largest candidate, or the first cands rows without candidates) and a candidate past the
// last row of ent (len(ent)/dim rows).
func TestDistanceBackwardBadOperands(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 14))
	sh := distShape{3, 5, 37, 8}
	axis, half, ent, cand := distInputs(rng, sh)
	top := int(slices.Max(cand)) + 1 // the rows dEnt must hold with cand
	past := withCandidate(cand, len(cand)-1, sh.rows)
	qd := sh.queries * sh.dim
	for _, c := range []struct {
		name               string
		nAxis, nHalf, nEnt int
		cand               []int32
		cands              int
		want               string
	}{
		{"dAxis short", qd - 1, qd, top * sh.dim, cand, sh.cands, "cpu: distance dAxis: slice too short"},
		{"dHalf short", qd, qd - 1, top * sh.dim, cand, sh.cands, "cpu: distance dHalf: slice too short"},
		{"dEnt short of the largest candidate", qd, qd, top*sh.dim - 1, cand, sh.cands, "cpu: distance dEnt: slice too short"},
		{"dEnt short without candidates", qd, qd, sh.rows*sh.dim - 1, nil, sh.rows, "cpu: distance dEnt: slice too short"},
		{"candidate past the rows", qd, qd, len(ent), past, sh.cands, outOfRange},
	} {
		g := randF32(rng, sh.queries*c.cands, -1, 1)
		for name, be := range backends() {
			dAxis, dHalf, dEnt := make([]float32, c.nAxis), make([]float32, c.nHalf), make([]float32, c.nEnt)
			got := panicValue(func() {
				be.DistanceBackward(dAxis, dHalf, dEnt, g, axis, half, ent, c.cand, sh.queries, c.cands, sh.dim, 0.02)
			})
			if got != c.want {
				t.Errorf("%s %s: panic %v, want %q", name, c.name, got, c.want)
			}
		}
	}
}

// TestDistanceEmpty: with no queries, no candidates or dimension 0, DistanceForward (of
// the Backend and of a prepared table) leaves dist as the reference does (every
// distance 0 when only dim is 0, dist untouched otherwise) and DistanceBackward leaves
// the gradients as the reference does; dist is longer than the call's distances, whose
// tail no call may touch.
func TestDistanceEmpty(t *testing.T) {
	ref := compute.Reference[float32]{}
	rng := rand.New(rand.NewPCG(15, 15))
	for _, sh := range []distShape{{3, 5, 0, 7}, {0, 5, 4, 7}, {3, 0, 4, 7}, {1, 7, 0, 7}} {
		axis, half, ent, cand := distInputs(rng, sh)
		for _, c := range []struct {
			name  string
			cand  []int32
			cands int
		}{{"cand", cand, sh.cands}, {"all", nil, sh.cands}} {
			n := sh.queries*c.cands + 3
			d0 := randF32(rng, n, 1, 2)
			want := slices.Clone(d0)
			ref.DistanceForward(want, axis, half, ent, c.cand, sh.queries, c.cands, sh.dim, 0.02)
			g := randF32(rng, n, -1, 1)
			g0 := [3][]float32{randF32(rng, len(axis), -1, 1), randF32(rng, len(half), -1, 1), randF32(rng, len(ent), -1, 1)}
			wantG := [3][]float32{slices.Clone(g0[0]), slices.Clone(g0[1]), slices.Clone(g0[2])}
			ref.DistanceBackward(wantG[0], wantG[1], wantG[2], g, axis, half, ent, c.cand, sh.queries, c.cands, sh.dim, 0.02)
			for name, be := range backends() {
				tab := be.PrepareEntities(ent, sh.rows, sh.dim)
				for _, call := range []struct {
					name string
					fwd  func(dist []float32)
					bwd  func(dAxis, dHalf, dEnt []float32)
				}{
					{"backend", func(dist []float32) {
						be.DistanceForward(dist, axis, half, ent, c.cand, sh.queries, c.cands, sh.dim, 0.02)
					}, func(dAxis, dHalf, dEnt []float32) {
						be.DistanceBackward(dAxis, dHalf, dEnt, g, axis, half, ent, c.cand, sh.queries, c.cands, sh.dim, 0.02)
					}},
					{"prepared", func(dist []float32) {
						tab.DistanceForward(dist, axis, half, c.cand, sh.queries, c.cands, 0.02)
					}, func(dAxis, dHalf, dEnt []float32) {
						tab.DistanceBackward(dAxis, dHalf, dEnt, g, axis, half, c.cand, sh.queries, c.cands, 0.02)
					}},
				} {
					got := slices.Clone(d0)
					call.fwd(got)
					if !slices.Equal(got, want) {
						t.Errorf("%s %s %v %s: dist %v, reference %v", name, call.name, sh, c.name, got, want)
					}
					gotG := [3][]float32{slices.Clone(g0[0]), slices.Clone(g0[1]), slices.Clone(g0[2])}
					call.bwd(gotG[0], gotG[1], gotG[2])
					for i := range gotG {
						if !slices.Equal(gotG[i], wantG[i]) {
							t.Errorf("%s %s %v %s: gradient %d differs from the reference's", name, call.name, sh, c.name, i)
						}
					}
				}
			}
		}
	}
}

// TestPreparedBadOperands: PrepareEntities refuses an entity table one element short,
// and a prepared table's DistanceForward and DistanceBackward refuse, with their own
// messages, a candidate past the table's last row (also in the last query's last slot)
// and, without candidates, more candidates than rows.
func TestPreparedBadOperands(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 16))
	sh := distShape{3, 5, 37, 8}
	axis, half, ent, cand := distInputs(rng, sh)
	last := withCandidate(cand, len(cand)-1, sh.rows)
	const tooMany = "cpu: prepared distance: cands exceeds the table's rows"
	for name, be := range backends() {
		tab := be.PrepareEntities(ent, sh.rows, sh.dim)
		fwd := func(cand []int32, cands int) func() {
			return func() {
				tab.DistanceForward(make([]float32, sh.queries*cands), axis, half, cand, sh.queries, cands, 0.02)
			}
		}
		bwd := func(cand []int32, cands int) func() {
			return func() {
				g := randF32(rng, sh.queries*cands, -1, 1)
				dAxis, dHalf, dEnt := make([]float32, len(axis)), make([]float32, len(half)), make([]float32, len(ent))
				tab.DistanceBackward(dAxis, dHalf, dEnt, g, axis, half, cand, sh.queries, cands, 0.02)
			}
		}
		for _, c := range []struct {
			name string
			call func()
			want string
		}{
			{"prepare ent short", func() { be.PrepareEntities(ent[:len(ent)-1], sh.rows, sh.dim) }, "cpu: prepare ent: slice too short"},
			{"forward: last candidate past the rows", fwd(last, sh.cands), outOfRange},
			{"backward: last candidate past the rows", bwd(last, sh.cands), outOfRange},
			{"forward: more candidates than rows", fwd(nil, sh.rows+1), tooMany},
			{"backward: more candidates than rows", bwd(nil, sh.rows+1), tooMany},
		} {
			if got := panicValue(c.call); got != c.want {
				t.Errorf("%s %s: panic %v, want %q", name, c.name, got, c.want)
			}
		}
	}
}

// TestDistanceShortInputs: the distance calls of the Backend and of a prepared table
// refuse an axis, half or cand one element short, naming it, before any work.
func TestDistanceShortInputs(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 17))
	sh := distShape{3, 5, 37, 8}
	axis, half, ent, cand := distInputs(rng, sh)
	n := sh.queries * sh.cands
	for _, c := range []struct {
		name       string
		axis, half []float32
		cand       []int32
	}{
		{"axis", axis[:len(axis)-1], half, cand},
		{"half", axis, half[:len(half)-1], cand},
		{"cand", axis, half, cand[:len(cand)-1]},
	} {
		want := "cpu: distance " + c.name + ": slice too short"
		for name, be := range backends() {
			tab := be.PrepareEntities(ent, sh.rows, sh.dim)
			g := randF32(rng, n, -1, 1)
			dAxis, dHalf, dEnt := make([]float32, len(axis)), make([]float32, len(half)), make([]float32, len(ent))
			for call, f := range map[string]func(){
				"forward": func() {
					be.DistanceForward(make([]float32, n), c.axis, c.half, ent, c.cand, sh.queries, sh.cands, sh.dim, 0.02)
				},
				"backward": func() {
					be.DistanceBackward(dAxis, dHalf, dEnt, g, c.axis, c.half, ent, c.cand, sh.queries, sh.cands, sh.dim, 0.02)
				},
				"prepared forward": func() {
					tab.DistanceForward(make([]float32, n), c.axis, c.half, c.cand, sh.queries, sh.cands, 0.02)
				},
				"prepared backward": func() {
					tab.DistanceBackward(dAxis, dHalf, dEnt, g, c.axis, c.half, c.cand, sh.queries, sh.cands, 0.02)
				},
			} {
				if got := panicValue(f); got != want {
					t.Errorf("%s %s, %s short: panic %v, want %q", name, call, c.name, got, want)
				}
			}
		}
	}
}
