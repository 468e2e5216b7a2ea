package gpu

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/computetest"
	"github.com/rocone/rocone/pkg/compute"
)

// testLinear: the FP32 GEMMs through every kernel and tile (gemm_* and, for dX and dW on
// aligned operands, gemm_pipe_nn and gemm_pipe_tn, at 128×128 and 64×64; the
// register-staged gemm_nn and gemm_tn in their place; the first version gemm64_*; K split 3
// ways, twice 5 ways and up to 12 ways (more splits than gemm_splitk_sum loads at a time: 9
// to 12 where K is long enough), the splits added by the GEMM's own last blocks or by
// gemm_splitk_sum; the choice by shape) against the CPU reference, with the fused ReLUs
// (checkFusedReLU), at shapes over several tiles with ragged edges, K not a multiple of the
// slice, leading dimensions that are and are not multiples of 4 (the 16-byte loads and
// their scalar fallback), operands that start off a 16-byte boundary, K = 0, and aligned
// operands whose dX and dW span more than one column of tiles (in = 136: gemm_pipe_* over
// several blocks along x, the last one ragged). Unsplit, every tile's outputs are equal bit
// for bit (each output's sum runs over k in order); a split repeated gives the same bits,
// and so does its sum in a pass of its own, and so do the register-staged kernels in place
// of the pipelined ones. An aligned layer's dX and dW run gemm_pipe_nn and gemm_pipe_tn
// (its profile says so).
func testLinear(h *harness) {
	ref := compute.Reference[float32]{}
	defer func() { h.d.gemmTile, h.d.gemmSplit, h.d.regStaged, h.d.splitFixup = gemmTileAuto, 0, false, false }()
	shapes := []struct {
		rows, in, out int
		offset        bool // operands one float into their buffers
	}{{130, 37, 67, false}, {5, 131, 3, false}, {1, 0, 4, false}, {1, 1, 1, false}, {260, 64, 132, false},
		{129, 200, 136, true}, {3, 1600, 7, false}, {70, 12, 300, false}, {40, 136, 20, false}}
	type run struct {
		name         string
		tile, splits int
		reg          bool   // the register-staged kernels (regStaged), not gemm_pipe_*
		fixup        bool   // the splits added by their own last blocks (gemm_split_fixup)
		sameBits     string // the run whose bits this one must equal, if any
	}
	runs := []run{{"128", 128, 1, false, false, ""}, {"64", 64, 1, false, false, "128"},
		{"reg128", 128, 1, true, false, "128"}, {"reg64", 64, 1, true, false, "128"},
		{"first", gemmTileFirst, 1, false, false, "128"}, {"split3", 128, 3, false, false, ""},
		{"split3 fixup", 128, 3, false, true, "split3"}, {"reg split3", 128, 3, true, false, "split3"},
		{"split5", 128, 5, false, false, ""}, {"split5 again", 128, 5, false, false, "split5"},
		{"split5 64", 64, 5, false, false, ""}, {"split5 64 fixup", 64, 5, false, true, "split5 64"},
		{"split12", 128, 12, false, false, ""}, {"split12 fixup", 128, 12, false, true, "split12"},
		{"by shape", gemmTileAuto, 0, false, false, ""}}
	for _, sh := range shapes {
		h.t.Run(fmt.Sprint(sh.rows, "x", sh.in, "x", sh.out, map[bool]string{true: "+1"}[sh.offset]), func(t *testing.T) {
			x, w, b := h.uniform(sh.rows*sh.in, -1, 1), h.uniform(sh.out*sh.in, -1, 1), h.uniform(sh.out, -1, 1)
			dy := h.uniform(sh.rows*sh.out, -1, 1)
			dx0, dw0, db0 := h.uniform(len(x), -1, 1), h.uniform(len(w), -1, 1), h.uniform(len(b), -1, 1)
			y := make([]float32, sh.rows*sh.out)
			ref.LinearForward(y, x, w, b, sh.rows, sh.in, sh.out)
			dx, dw, db := append([]float32{}, dx0...), append([]float32{}, dw0...), append([]float32{}, db0...)
			ref.LinearBackward(dx, dw, db, dy, x, w, sh.rows, sh.in, sh.out)
			up := h.up
			if sh.offset {
				up = func(v []float32) *F32 { return h.up(append([]float32{7}, v...)).Slice(1, len(v)) }
			}
			results := map[string][4][]float32{}
			for _, r := range runs {
				h.d.gemmTile, h.d.gemmSplit, h.d.regStaged, h.d.splitFixup = r.tile, r.splits, r.reg, r.fixup
				X, W, B, Y := up(x), up(w), up(b), up(make([]float32, len(y)))
				h.ok(h.d.LinearForward(Y, X, W, B, sh.rows, sh.in, sh.out))
				DX, DW, DB := up(dx0), up(dw0), up(db0)
				h.ok(h.d.LinearBackward(DX, DW, DB, up(dy), X, W, sh.rows, sh.in, sh.out))
				got := [4][]float32{h.down(Y), h.down(DX), h.down(DW), h.down(DB)}
				results[r.name] = got
				checkFusedReLU(h, t, r.name, up, sh.rows, sh.in, sh.out, x, w, b, dy, dx0, dw0, db0)
				compare(t, r.name+": y", y, got[0])
				compare(t, r.name+": dx", dx, got[1])
				compare(t, r.name+": dw", dw, got[2])
				compare(t, r.name+": db", db, got[3])
				// The weight gradient alone (no dx, no db).
				dw2 := append([]float32{}, dw0...)
				DW2 := up(dw0)
				ref.LinearBackward(nil, dw2, nil, dy, x, w, sh.rows, sh.in, sh.out)
				h.ok(h.d.LinearBackward(nil, DW2, nil, up(dy), X, W, sh.rows, sh.in, sh.out))
				compare(t, r.name+": dw (no dx, db)", dw2, h.down(DW2))
				if r.sameBits == "" {
					continue
				}
				want := results[r.sameBits]
				for k, what := range []string{"y", "dx", "dw", "db"} {
					for i := range got[k] {
						if math.Float32bits(got[k][i]) != math.Float32bits(want[k][i]) {
							t.Fatalf("%s: %s[%d] = %v, %s gives %v", r.name, what, i, got[k][i], r.sameBits, want[k][i])
						}
					}
				}
			}
		})
	}
	h.d.gemmTile, h.d.gemmSplit, h.d.regStaged, h.d.splitFixup = gemmTileAuto, 0, false, false
	for _, tile := range []int{128, 64} {
		h.d.gemmTile = tile
		x, w, dy := h.uniform(40*24, -1, 1), h.uniform(36*24, -1, 1), h.uniform(40*36, -1, 1)
		launched := kernelsLaunched(h, func() {
			h.ok(h.d.LinearBackward(h.zeros(40*24), h.zeros(36*24), nil, h.up(dy), h.up(x), h.up(w), 40, 24, 36))
		})
		suffix := map[int]string{128: "", 64: "_64"}[tile]
		want := map[string]bool{"gemm_pipe_nn" + suffix: true, "gemm_pipe_tn" + suffix: true}
		for k := range launched {
			if strings.HasPrefix(k, "gemm") && !want[k] {
				h.t.Fatalf("tile %d, aligned operands: dX and dW ran %v, want %v", tile, launched, want)
			}
		}
		for k := range want {
			if !launched[k] {
				h.t.Fatalf("tile %d, aligned operands: dX and dW ran %v, want %v", tile, launched, want)
			}
		}
	}
	// db a view into a longer buffer: col_sum leaves the elements after it alone, bit for
	// bit (a −0 and a signalling NaN, which even an added +0 would change).
	{
		const rows, in, out = 5, 3, 5
		dy := h.uniform(rows*out, -1, 1)
		buf := h.up(append(make([]float32, out), math.Float32frombits(0x80000000), math.Float32frombits(0x7f800001)))
		h.ok(h.d.LinearBackward(nil, nil, buf.Slice(0, out), h.up(dy), nil, nil, rows, in, out))
		if got := h.down(buf); math.Float32bits(got[out]) != 0x80000000 || math.Float32bits(got[out+1]) != 0x7f800001 {
			h.t.Fatalf("LinearBackward wrote past db: %#08x %#08x after it", math.Float32bits(got[out]), math.Float32bits(got[out+1]))
		}
	}
	// The epilogues a layout is compiled with (gemm_end_for): others are refused.
	a, c := h.zeros(16), h.zeros(16)
	for _, bad := range []struct {
		name string
		end  gemmEnd
	}{{"gemm_nn", gemmEnd{relu: true}}, {"gemm_tn", gemmEnd{relu: true}}, {"gemm_nt", gemmEnd{mask: c}}, {"gemm_tn", gemmEnd{mask: c}}} {
		if err := h.d.gemm(bad.name, 4, 4, 4, a, 4, a, 4, c, 4, bad.end); err == nil || !strings.Contains(err.Error(), "only") {
			h.t.Fatalf("%s with %+v: %v, want a refusal", bad.name, bad.end, err)
		}
	}
}

// testLinearTF32: the TF32 GEMMs (SetMatmul(tf32): tf32.cu) through every kernel and tile
// (the pipelined gemm_tf32_pipe_* and the register-staged gemm_tf32_* at 128×128 and
// 64×64, the first version gemm64_tf32_*, K split 3 ways and twice 5 ways, the choice by
// shape; some runs with the fused ReLUs) against the CPU reference that rounds the same
// way, at shapes over several tiles with ragged edges, K not a multiple of the MMA's 8 nor of
// the slice's 16, leading dimensions that are not multiples of 4 and operands off a
// 16-byte boundary (the scalar loads), K = 0, K long enough for the choice to split, and
// rows past the grid's y cap (tiny-grid); within the float32 accumulation error of the
// rounded products, and at TF32's distance from the FP32 products
// (computetest.CheckTF32). Unsplit, every tile of a kernel gives the same bits (each
// output is the same MMAs over k in order; the register-staged kernels', the pipelined
// ones' and the first version's are the same too); a split repeated gives the same bits, and so does its sum
// in a pass of its own (gemm_splitk_sum). The pipelined kernels run where the operands
// are aligned, which the profile of an aligned layer shows. Then FP32 again: the setting
// switches back.
func testLinearTF32(h *harness) {
	h.ok(h.d.SetMatmul(compute.MatmulTF32))
	defer func() {
		h.ok(h.d.SetMatmul(compute.MatmulFP32))
		h.d.gemmTile, h.d.gemmSplit = gemmTileAuto, 0
	}()
	type shape struct {
		rows, in, out int
		offset        bool // operands one float into their buffers
	}
	shapes := []shape{{1, 1, 1, false}, {1, 8, 8, false}, {16, 8, 8, false}, {64, 64, 64, false}, {130, 37, 67, false},
		{5, 131, 3, false}, {65, 17, 129, false}, {200, 300, 50, false}, {3, 1600, 7, false}, {1, 0, 4, false},
		{260, 64, 132, false}, {129, 200, 136, true}, {70, 12, 300, true},
		{40, 136, 20, false}} // aligned, dX and dW over two columns of tiles
	for i := 0; i < 4; i++ { // and random ones
		shapes = append(shapes, shape{1 + h.rng.IntN(150), 1 + h.rng.IntN(150), 1 + h.rng.IntN(150), false})
	}
	type run struct {
		name         string
		tile, splits int
		reg          bool   // the register-staged kernels (regStaged)
		fixup        bool   // the splits added by their own last blocks (gemm_split_fixup)
		sameBits     string // the run whose bits this one must equal, if any
	}
	runs := []run{{"128", 128, 1, false, false, ""}, {"64", 64, 1, false, false, "128"}, {"reg128", 128, 1, true, false, "128"},
		{"reg64", 64, 1, true, false, "reg128"}, {"first", gemmTileFirst, 1, false, false, "reg128"},
		{"split3", 128, 3, false, false, ""}, {"split3 fixup", 128, 3, false, true, "split3"},
		{"split5", 64, 5, false, false, ""}, {"split5 again", 64, 5, false, false, "split5"},
		{"reg split5", 64, 5, true, false, "split5"}, {"reg split5 fixup", 64, 5, true, true, "reg split5"},
		{"by shape", gemmTileAuto, 0, false, false, ""}}
	defer func() { h.d.regStaged, h.d.splitFixup = false, false }()
	for _, sh := range shapes {
		rows, in, out := sh.rows, sh.in, sh.out
		h.t.Run(fmt.Sprint(rows, "x", in, "x", out, map[bool]string{true: "+1"}[sh.offset]), func(t *testing.T) {
			l := computetest.NewLinearTF32(h.rng, rows, in, out)
			up := h.up
			if sh.offset {
				up = func(v []float32) *F32 { return h.up(append([]float32{7}, v...)).Slice(1, len(v)) }
			}
			db := make([]float32, out)
			compute.Reference[float32]{}.LinearBackward(nil, make([]float32, out*in), db, l.DY, l.X, l.W, rows, in, out)
			results := map[string][3][]float32{}
			for _, r := range runs {
				h.d.gemmTile, h.d.gemmSplit, h.d.regStaged, h.d.splitFixup = r.tile, r.splits, r.reg, r.fixup
				X, W, B, Y := up(l.X), up(l.W), up(l.B), up(make([]float32, rows*out))
				h.ok(h.d.LinearForward(Y, X, W, B, rows, in, out))
				DX, DW, DB := up(l.DX0), up(l.DW0), up(make([]float32, out))
				h.ok(h.d.LinearBackward(DX, DW, DB, up(l.DY), X, W, rows, in, out))
				got := [3][]float32{h.down(Y), h.down(DX), h.down(DW)}
				results[r.name] = got
				if r.name == "128" || r.name == "reg64" || r.name == "first" || r.name == "split3" || r.name == "reg split5 fixup" {
					checkFusedReLU(h, t, r.name, up, rows, in, out, l.X, l.W, l.B, l.DY, l.DX0, l.DW0, make([]float32, out))
				}
				for k, c := range []struct {
					name string
					e    computetest.Expect
					k    int
				}{{"y", l.Y, in}, {"dx", l.DX, out}, {"dw", l.DW, rows}} {
					if _, _, err := computetest.CheckTF32(r.name+": "+c.name, got[k], c.e, c.k); err != nil {
						t.Fatal(err)
					}
				}
				compare(t, r.name+": db (float32, not a matrix product)", db, h.down(DB))
				if r.sameBits == "" {
					continue
				}
				want := results[r.sameBits]
				for k, what := range []string{"y", "dx", "dw"} {
					for i := range got[k] {
						if math.Float32bits(got[k][i]) != math.Float32bits(want[k][i]) {
							t.Fatalf("%s: %s[%d] = %v, %s gives %v", r.name, what, i, got[k][i], r.sameBits, want[k][i])
						}
					}
				}
			}
		})
	}
	h.d.gemmTile, h.d.gemmSplit, h.d.regStaged = gemmTileAuto, 0, false
	for _, c := range []struct {
		tile int
		want []string
	}{{128, []string{"gemm_tf32_pipe_nt", "gemm_tf32_pipe_nn", "gemm_tf32_pipe_tn"}},
		{64, []string{"gemm_tf32_pipe_nt_64", "gemm_tf32_pipe_nn_64", "gemm_tf32_pipe_tn_64"}}} {
		h.d.gemmTile = c.tile
		l := computetest.NewLinearTF32(h.rng, 40, 24, 36)
		launched := kernelsLaunched(h, func() {
			X, W := h.up(l.X), h.up(l.W)
			h.ok(h.d.LinearForward(h.zeros(40*36), X, W, h.up(l.B), 40, 24, 36))
			h.ok(h.d.LinearBackward(h.up(l.DX0), h.up(l.DW0), nil, h.up(l.DY), X, W, 40, 24, 36))
		})
		for _, k := range c.want {
			if !launched[k] {
				h.t.Fatalf("tile %d, aligned operands: %s did not run (ran %v)", c.tile, k, launched)
			}
		}
	}
	h.d.gemmTile = gemmTileAuto
	testLinearTF32NaN(h)
	h.ok(h.d.SetMatmul(compute.MatmulFP32))
	l := computetest.NewLinearTF32(h.rng, 70, 90, 40)
	Y := h.zeros(70 * 40)
	h.ok(h.d.LinearForward(Y, h.up(l.X), h.up(l.W), h.up(l.B), 70, 90, 40))
	if _, _, err := computetest.CheckTF32("y", h.down(Y), l.Y, 90); err == nil {
		h.t.Fatal("after SetMatmul(fp32) the products still look like TF32's")
	}
	if err := h.d.SetMatmul("tf16"); err == nil || !strings.Contains(err.Error(), `"tf16"`) {
		h.t.Fatalf("SetMatmul(tf16): %v", err)
	}
}

// testLinearTF32NaN: a NaN whose payload lies only in the 13 bits TF32 drops (0x7f800001,
// which the hardware's cvt.rna.tf32.f32 turns into +Inf) in one value of x, through every
// kernel (the pipelined ones round four values at a time, the NaN test on the four):
// y's row and dW's column of that value are NaN, and nothing else is.
func testLinearTF32NaN(h *harness) {
	const rows, in, out, r, c = 40, 24, 36, 3, 5
	defer func() { h.d.regStaged = false }()
	for _, reg := range []bool{false, true} {
		h.d.regStaged = reg
		l := computetest.NewLinearTF32(h.rng, rows, in, out)
		x := append([]float32{}, l.X...)
		x[r*in+c] = math.Float32frombits(0x7f800001)
		X, W, Y := h.up(x), h.up(l.W), h.zeros(rows*out)
		DX, DW := h.zeros(rows*in), h.zeros(out*in)
		h.ok(h.d.LinearForward(Y, X, W, h.up(l.B), rows, in, out))
		h.ok(h.d.LinearBackward(DX, DW, nil, h.up(l.DY), X, W, rows, in, out))
		y, dw, dx := h.down(Y), h.down(DW), h.down(DX)
		for i, v := range y {
			if nan := math.IsNaN(float64(v)); nan != (i/out == r) {
				h.t.Fatalf("register-staged %v: y[%d][%d] = %v with a NaN in x's row %d", reg, i/out, i%out, v, r)
			}
		}
		for i, v := range dw {
			if nan := math.IsNaN(float64(v)); nan != (i%in == c) {
				h.t.Fatalf("register-staged %v: dW[%d][%d] = %v with a NaN in x's column %d", reg, i/in, i%in, v, c)
			}
		}
		for i, v := range dx {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				h.t.Fatalf("register-staged %v: dx[%d] = %v", reg, i, v)
			}
		}
	}
}

// testTF32Round: the kernels' tf32_round (tf32_round_f32) against compute.RoundTF32 on the
// hand-picked patterns and random bits, bit for bit; a NaN must stay a NaN of the same
// sign (the emulator's NaN bits are compared exactly by TestEmulatorTF32RoundNaN; the
// device's cvt.rna.tf32.f32 need not give the same NaN).
func testTF32Round(h *harness) {
	var in []uint32
	for _, c := range computetest.TF32Cases {
		in = append(in, c.In)
	}
	for i := 0; i < 1<<14; i++ {
		u := h.rng.Uint32()
		if i&1 == 0 {
			u = u&^0x1fff | uint32(0x0fff+h.rng.IntN(3))
		}
		in = append(in, u)
	}
	got := roundOnDevice(h, in)
	for i, u := range in {
		want := math.Float32bits(compute.RoundTF32(math.Float32frombits(u)))
		g := math.Float32bits(got[i])
		if math.IsNaN(float64(got[i])) && want&0x7fffffff > 0x7f800000 && g>>31 == want>>31 {
			continue
		}
		if g != want {
			h.t.Fatalf("tf32_round(%#08x) = %#08x, compute.RoundTF32 %#08x", u, g, want)
		}
	}
}

// roundOnDevice runs tf32_round_f32 over the bit patterns in.
func roundOnDevice(h *harness, in []uint32) []float32 {
	x := make([]float32, len(in))
	for i, u := range in {
		x[i] = math.Float32frombits(u)
	}
	X, Y := h.up(x), h.zeros(len(x))
	h.ok(h.d.each("tf32_round_f32", len(x), Work{Bytes: 8 * int64(len(x)), FLOPs: int64(len(x))}, ptr(Y), ptr(X), i32(len(x))))
	return h.down(Y)
}

// kernelsLaunched runs f with a profiler of its own attached to the device (the one
// attached before is put back) and returns the names of the kernels f launched.
func kernelsLaunched(h *harness, f func()) map[string]bool {
	h.t.Helper()
	names := map[string]bool{}
	for k := range launches(h, f) {
		names[k] = true
	}
	return names
}

// launches is kernelsLaunched with each kernel's count of launches (copies from and to
// the host left out).
func launches(h *harness, f func()) map[string]int {
	h.t.Helper()
	before := h.d.prof.Load()
	p := NewProfiler(h.d, false)
	h.d.Profile(p)
	f()
	h.d.Profile(before)
	recs, err := p.Records()
	h.ok(err)
	return Launches(recs)
}

// checkFusedReLU: LinearReLUForward gives the bits of LinearForward then ReLUForward, and
// LinearBackwardAfterReLU those of LinearBackward then ReLUBackward(dx, x), x here a
// ReLU's output (x with its negative values zeroed: a third of them), through the
// device's present GEMM settings; and with dw and db nil (x needed for dx alone).
func checkFusedReLU(h *harness, t *testing.T, name string, up func([]float32) *F32, rows, in, out int, x, w, b, dy, dx0, dw0, db0 []float32) {
	t.Helper()
	same := func(what string, want, got *F32) {
		t.Helper()
		wv, gv := h.down(want), h.down(got)
		for i := range wv {
			if math.Float32bits(wv[i]) != math.Float32bits(gv[i]) {
				t.Fatalf("%s: fused %s[%d] = %v, unfused %v", name, what, i, gv[i], wv[i])
			}
		}
	}
	X, W, B := up(x), up(w), up(b)
	Y, YF := up(make([]float32, rows*out)), up(make([]float32, rows*out))
	h.ok(h.d.LinearForward(Y, X, W, B, rows, in, out))
	h.ok(h.d.ReLUForward(Y))
	h.ok(h.d.LinearReLUForward(YF, X, W, B, rows, in, out))
	same("ReLU(x·Wᵀ + b)", Y, YF)

	xr := make([]float32, len(x))
	for i, v := range x {
		xr[i] = max(v, 0)
	}
	XR, DY := up(xr), up(dy)
	DX, DW, DB := up(dx0), up(dw0), up(db0)
	h.ok(h.d.LinearBackward(DX, DW, DB, DY, XR, W, rows, in, out))
	h.ok(h.d.ReLUBackward(DX, XR))
	DXF, DWF, DBF := up(dx0), up(dw0), up(db0)
	h.ok(h.d.LinearBackwardAfterReLU(DXF, DWF, DBF, DY, XR, W, rows, in, out))
	same("dx", DX, DXF)
	same("dw", DW, DWF)
	same("db", DB, DBF)
	DXF = up(dx0)
	h.ok(h.d.LinearBackwardAfterReLU(DXF, nil, nil, DY, XR, W, rows, in, out))
	same("dx (no dw, db)", DX, DXF)
}

// testTiles64: policyTiles64 (unsplit 64×64 tiles where the 128×128 ones are too
// few and the 64×64 ones fill the device) launches the _64 kernels unsplit and gives the
// bits of unsplit 128×128 tiles (each output summed over k in order); dX and dW, whose
// 64×64 tiles are too few too, stay split as by default, with the same bits. And the
// policy's choices, which are off by default.
func testTiles64(h *harness) {
	// 11 columns of 64×64 tiles and enough rows of them for every SM (132: 12 rows, 36
	// tiles of 128); dX and dW have K = 40 columns of tiles, too few either way.
	sms := h.d.multiprocessors()
	rows, in, out := 64*ceilDiv(sms, 11), 40, 11*64
	x, w, b, dy := h.uniform(rows*in, -1, 1), h.uniform(out*in, -0.5, 0.5), h.uniform(out, -1, 1), h.uniform(rows*out, -1, 1)
	X, W, B, DY := h.up(x), h.up(w), h.up(b), h.up(dy)
	run := func() (y, dx, dw []float32, names map[string]bool) {
		Y, DX, DW := h.zeros(rows*out), h.zeros(rows*in), h.zeros(out*in)
		names = kernelsLaunched(h, func() { h.ok(h.d.LinearForward(Y, X, W, B, rows, in, out)) })
		h.ok(h.d.LinearBackward(DX, DW, nil, DY, X, W, rows, in, out))
		return h.down(Y), h.down(DX), h.down(DW), names
	}
	defer func() { h.d.gemmPolicy, h.d.gemmTile, h.d.gemmSplit = policyCost, gemmTileAuto, 0 }()
	h.d.gemmPolicy = policyTiles64
	y64, dx64, dw64, names := run()
	if !names["gemm_nt_64"] || names["gemm_splitk_sum"] {
		h.t.Fatalf("tiles64: the forward launched %v, want gemm_nt_64 and no split", names)
	}
	h.d.gemmPolicy, h.d.gemmTile, h.d.gemmSplit = policyWaves, 128, 1
	y, _, _, _ := run()
	h.d.gemmTile, h.d.gemmSplit = gemmTileAuto, 0
	_, dx, dw, _ := run() // dX and dW: too few 64×64 tiles too, split as by default
	for _, c := range []struct {
		what      string
		want, got []float32
	}{{"y", y, y64}, {"dx", dx, dx64}, {"dw", dw, dw64}} {
		if !bitsEqual(c.want, c.got) {
			h.t.Fatalf("tiles64: %s differs", c.what)
		}
	}
	// The policy itself, at a K long enough to split: by default 128×128 tiles split 2
	// ways, with tiles64 64×64 unsplit; and 128×128 wherever those fill the device.
	for _, c := range []struct {
		tiles64           bool
		M, N, K           int
		wantTile, wantSpl int
	}{{false, rows, out, 520, 128, 2}, {true, rows, out, 520, 64, 1}, {true, 64, out, 520, 128, 2},
		{true, 2 * rows, 2 * out, 520, 128, 1}} {
		h.d.gemmPolicy = map[bool]gemmPolicy{false: policyWaves, true: policyTiles64}[c.tiles64]
		if tile, spl := h.d.gemmShape(c.M, c.N, c.K); tile != c.wantTile || spl != c.wantSpl {
			h.t.Errorf("tiles64 %v, %d×%d×%d: tile %d split %d, want %d and %d", c.tiles64, c.M, c.N, c.K, tile, spl, c.wantTile, c.wantSpl)
		}
	}
}

// testGemmByCost: policyCost's choices at the step's shapes (d=1600: the stacked
// intersection layer, W2's dW, linear's forward), their constraints over many shapes
// (splits of at least 256 of K, no more than maxCostSplits, never costlier than the
// default's choice where that is one of its candidates), and a layer run by its choices
// against fixed tiles: the unsplit ones give the same bits as unsplit 128×128 tiles.
func testGemmByCost(h *harness) {
	d := h.d
	defer func() { d.gemmPolicy = policyCost }()
	const sms = 132
	for _, c := range []struct {
		M, N, K, tile, splits int
	}{
		{3200, 3200, 587, 128, 1},  // the stacked layer's dW: 625 tiles, 4.7 a SM
		{1600, 1600, 587, 64, 1},   // W2's dW: 169 tiles of 128 (2 on some SMs), 625 of 64
		{1024, 1600, 3200, 128, 5}, // linear's forward: 104 tiles; split 5 ways, 4 blocks on the busiest SM
		{587, 3200, 3200, 128, 1},  // 125 tiles: a split gains nothing
		{8, 8, 8, 128, 1},          // one lone block either way: 8 warps of 128×128 against 2 of 64×64
		// cone's 800-wide layers: 65 lone 64×64 blocks of 2 warps (a quarter of the rate),
		// or 21 tiles of 128 split 3 ways.
		{285, 800, 800, 128, 3},
	} {
		if tile, s := d.gemmShapeByCost(c.M, c.N, c.K, sms); tile != c.tile || s != c.splits {
			h.t.Errorf("%d×%d×%d: by cost tile %d split %d, want %d and %d", c.M, c.N, c.K, tile, s, c.tile, c.splits)
		}
	}
	// Without the warps' scale (Reverts.GemmWarps) the lone 64×64 blocks cost the least.
	d.SetReverts(Reverts{GemmWarps: true})
	if tile, s := d.gemmShapeByCost(285, 800, 800, sms); tile != 64 || s != 1 {
		h.t.Errorf("285×800×800 without the warps: by cost tile %d split %d, want 64 and 1", tile, s)
	}
	d.SetReverts(Reverts{})
	for range 300 {
		M, N, K := 1+h.rng.IntN(4000), 1+h.rng.IntN(4000), 1+h.rng.IntN(4000)
		tile, s := d.gemmShapeByCost(M, N, K, sms)
		if (tile != 128 && tile != 64) || s < 1 || s > maxCostSplits || (s > 1 && (tile != 128 || K/s < 256)) {
			h.t.Fatalf("%d×%d×%d: by cost tile %d split %d", M, N, K, tile, s)
		}
		d.gemmPolicy = policyWaves
		wt, ws := d.gemmShape(M, N, K)
		if ws <= maxCostSplits && d.gemmCost(M, N, K, sms, tile, s) > d.gemmCost(M, N, K, sms, wt, ws) {
			h.t.Fatalf("%d×%d×%d: by cost tile %d split %d costs more than the default's %d and %d", M, N, K, tile, s, wt, ws)
		}
	}
	rows, in, out := 200, 300, 70
	x, w, b, dy := h.uniform(rows*in, -1, 1), h.uniform(out*in, -0.5, 0.5), h.uniform(out, -1, 1), h.uniform(rows*out, -1, 1)
	X, W, B, DY := h.up(x), h.up(w), h.up(b), h.up(dy)
	run := func() (y, dx, dw []float32) {
		Y, DX, DW := h.zeros(rows*out), h.zeros(rows*in), h.zeros(out*in)
		h.ok(d.LinearForward(Y, X, W, B, rows, in, out))
		h.ok(d.LinearBackward(DX, DW, nil, DY, X, W, rows, in, out))
		return h.down(Y), h.down(DX), h.down(DW)
	}
	d.gemmPolicy = policyCost
	y, dx, dw := run()
	d.gemmPolicy = policyWaves
	d.gemmTile, d.gemmSplit = 128, 1
	y1, dx1, dw1 := run()
	d.gemmTile, d.gemmSplit = gemmTileAuto, 0
	for _, c := range []struct {
		what      string
		M, N, K   int
		want, got []float32
	}{{"y", rows, out, in, y1, y}, {"dx", rows, in, out, dx1, dx}, {"dw", out, in, rows, dw1, dw}} {
		if _, s := d.gemmShapeByCost(c.M, c.N, c.K, d.multiprocessors()); s == 1 && !bitsEqual(c.want, c.got) {
			h.t.Errorf("by cost: %s differs from unsplit 128×128 tiles", c.what)
		} else if s > 1 {
			compare(h.t, "by cost: "+c.what, c.want, c.got)
		}
	}
}
