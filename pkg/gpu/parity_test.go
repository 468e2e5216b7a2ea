package gpu

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/adam"
	"github.com/rocone/rocone/pkg/model"
)

const tol = 1e-4

type harness struct {
	t   *testing.T
	d   *Device
	rng *rand.Rand
}

func (h *harness) up(x []float32) *F32 { h.t.Helper(); return upload(h, x) }

func (h *harness) upI(x []int32) *I32 { h.t.Helper(); return upload(h, x) }

// upload copies x to the device, freed when the test ends; nil stays nil.
func upload[T Elem](h *harness, x []T) *Buffer[T] {
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

// zerosAt is n zeros as a view off floats into an allocation: off·4 bytes past its
// alignment (1: 4-byte aligned; 2: 8-byte, not 16), for the alignment checks; off 0 is
// zeros(n) itself.
func (h *harness) zerosAt(off, n int) *F32 {
	if off == 0 {
		return h.zeros(n)
	}
	return h.zeros(off+n).Slice(off, n)
}

// upIndex uploads a CSR row index (the device's own users lay theirs out in a slab:
// gpumodel).
func (h *harness) upIndex(ix RowIndex) *DeviceRowIndex {
	return &DeviceRowIndex{Rows: h.upI(ix.Rows), Start: h.upI(ix.Start), Pairs: h.upI(ix.Pairs), N: len(ix.Rows)}
}

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

// compareNaN is compare for outputs that may hold NaNs: got must be a NaN exactly where
// want is (the kernels keep a NaN where the CPU's min, max and clamps do), and within
// compare's tolerance elsewhere. It returns the number of NaNs, so that a test can tell
// that it put some there.
func compareNaN(t *testing.T, what string, want, got []float32) int {
	t.Helper()
	return compareScaleNaN(t, what, want, got, 1e-6)
}

// compareScaleNaN is compareNaN with compareScale's floor on the scale.
func compareScaleNaN(t *testing.T, what string, want, got []float32, floor float64) int {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	w, g := clone(want), clone(got)
	nans := 0
	for i := range w {
		wn, gn := math.IsNaN(float64(w[i])), math.IsNaN(float64(g[i]))
		if wn != gn {
			t.Fatalf("%s[%d] = %.9g, reference %.9g: a NaN on one side only", what, i, got[i], want[i])
		}
		if wn {
			w[i], g[i] = 0, 0
			nans++
		}
	}
	compareScale(t, what, w, g, floor)
	return nans
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
			savedBlocks, savedY := dev.maxBlocks, dev.gridY
			dev.maxBlocks, dev.gridY = g.maxBlocks, g.gridY
			defer func() { dev.maxBlocks, dev.gridY = savedBlocks, savedY }()
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
	{"Linear", testLinear},
	{"Tiles64", testTiles64},
	{"GemmByCost", testGemmByCost},
	{"LinearTF32", testLinearTF32},
	{"TF32Round", testTF32Round},
	{"HalfSincos", testHalfSincos},
	{"SgnMul", testSgnMul},
	{"MinMaxNaN", testMinMaxNaN},
	{"Distance", testDistance},
	{"DistanceAll", testDistanceAll},
	{"DistanceETab", testDistanceETab},
	{"FilteredRanks", testFilteredRanks},
	{"Angle", testAngle},
	{"Gather", testGather},
	{"RowsQuads", testRowsQuads},
	{"Rotate", testRotate},
	{"Negate", testNegate},
	{"MLP", testMLP},
	{"Intersect", testIntersect},
	{"IntersectRagged", testIntersectRagged},
	{"IntersectNaN", testIntersectNaN},
	{"IntersectClamp", testIntersectClamp},
	{"IntersectLogits", testIntersectLogits},
	{"DropoutRagged", testDropoutRagged},
	{"LogitUnion", testLogitUnion},
	{"LossHead", testLossHead},
	{"LossHeadErrors", testLossHeadErrors},
	{"Adam", testAdam},
	{"AdamDefer", testAdamDefer},
	{"AdamOptimiser", testAdamOptimiser},
	{"AdamMulti", testAdamMulti},
	{"UploadAsync", testUploadAsync},
	{"DownloadAsync", testDownloadAsync},
	{"Errors", testErrors},
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
		{"adam step 0", h.d.AdamStep(big, big, big, big, 0, adam.Default(1), false), "step 0"},
		{"intersect shapes", func() error {
			_, err := h.d.IntersectForward(IntersectWeights{}, Cones{N: 2, Dim: 3}, Cones{N: 5, Dim: 3}, 2, nil)
			return err
		}(), "input cones"},
		{"unknown kernel", h.d.launch("nope", Work{Bytes: 4}, [3]int{1, 1, 1}, [3]int{1, 1, 1}), "no kernel"},
		{"argument kind", h.d.launch("fill_f32", Work{Bytes: 4}, [3]int{1, 1, 1}, [3]int{1, 1, 1}, ptr(big), i32(1), i32(1)), "passing i for a f parameter"},
		{"argument count", h.d.launch("fill_f32", Work{Bytes: 4}, [3]int{1, 1, 1}, [3]int{1, 1, 1}, ptr(big)), "takes 3 arguments"},
		{"int range", h.d.launch("fill_f32", Work{Bytes: 4}, [3]int{1, 1, 1}, [3]int{1, 1, 1}, ptr(big), f32(0), i32(1<<40)), "does not fit"},
		{"upload", small.Upload(make([]float32, 4)), "upload of 4 elements"},
		// A float2 or float4 table that is a view off its alignment: refused by name
		// before the launch, which would fault on the device and lose the context.
		{"sin cos table misaligned", h.d.EntHalfSinCos(h.zerosAt(1, 8), h.zeros(4)), "tab at 0x"},
		{"etab misaligned", h.d.DistanceForwardETab(big, big, big, h.zeros(4), h.zerosAt(1, 8), h.upI([]int32{0}), 1, 1, 2, 0.5), "etab at 0x"},
		{"score qtab misaligned", h.d.DistanceAll(big, h.zerosAt(2, 16), big, 1, 1, 2, 0.5), "qtab at 0x"},
		{"score etab misaligned", h.d.DistanceAll(big, big, h.zerosAt(2, 4), 1, 1, 2, 0.5), "etab at 0x"},
		{"adam sin cos misaligned", func() error {
			a, err := NewAdamAngles(h.d, adam.Default(1), []*F32{small}, []*F32{h.zeros(3)},
				[]AngleGrad{{DTheta: h.zeros(3), Theta: h.zeros(3), SinCos: h.zerosAt(1, 6)}}, 1)
			if err == nil {
				a.Free()
			}
			return err
		}(), "parameter 0's sines and cosines at 0x"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			h.t.Errorf("%s: error %v, want one containing %q", c.name, c.err, c.want)
		}
	}
}
