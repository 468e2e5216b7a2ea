package gpu

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/computetest"
	"github.com/rocone/rocone/pkg/compute"
)

// testLinear: shapes over several 64×64 tiles with ragged edges and K not a multiple of
// 16, on the device buffers directly.
func testLinear(h *harness) {
	ref := compute.Reference[float32]{}
	for _, sh := range []struct{ rows, in, out int }{{130, 37, 67}, {5, 131, 3}, {1, 0, 4}, {1, 1, 1}} {
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

			// The weight gradient alone (no dx, no db).
			dw2 := h.uniform(len(w), -1, 1)
			DW2 := h.up(dw2)
			ref.LinearBackward(nil, dw2, nil, dy, x, w, sh.rows, sh.in, sh.out)
			h.ok(h.d.LinearBackward(nil, DW2, nil, h.up(dy), X, W, sh.rows, sh.in, sh.out))
			compare(t, "dw (no dx, db)", dw2, h.down(DW2))
		})
	}
}

// testLinearTF32: the TF32 GEMMs (SetMatmul(tf32): tf32.cu) against the CPU reference that
// rounds the same way, at shapes over several tiles with ragged edges, K not a multiple of
// the MMA's 8 nor of the tile's 16, and rows past the grid's y cap (tiny-grid); within the
// float32 accumulation error of the rounded products, and at TF32's distance from the
// FP32 products (computetest.CheckTF32). Then FP32 again: the setting switches back.
func testLinearTF32(h *harness) {
	h.ok(h.d.SetMatmul(compute.MatmulTF32))
	defer func() { h.ok(h.d.SetMatmul(compute.MatmulFP32)) }()
	shapes := [][3]int{{1, 1, 1}, {1, 8, 8}, {16, 8, 8}, {64, 64, 64}, {130, 37, 67}, {5, 131, 3}, {65, 17, 129}, {200, 300, 50}, {3, 1600, 7}}
	for i := 0; i < 6; i++ { // and random ones
		shapes = append(shapes, [3]int{1 + h.rng.IntN(150), 1 + h.rng.IntN(150), 1 + h.rng.IntN(150)})
	}
	for _, sh := range shapes {
		rows, in, out := sh[0], sh[1], sh[2]
		h.t.Run(fmt.Sprint(rows, "x", in, "x", out), func(t *testing.T) {
			l := computetest.NewLinearTF32(h.rng, rows, in, out)
			X, W, B, Y := h.up(l.X), h.up(l.W), h.up(l.B), h.zeros(rows*out)
			h.ok(h.d.LinearForward(Y, X, W, B, rows, in, out))
			DX, DW, DB := h.up(l.DX0), h.up(l.DW0), h.zeros(out)
			h.ok(h.d.LinearBackward(DX, DW, DB, h.up(l.DY), X, W, rows, in, out))
			for _, c := range []struct {
				name string
				got  []float32
				e    computetest.Expect
				k    int
			}{{"y", h.down(Y), l.Y, in}, {"dx", h.down(DX), l.DX, out}, {"dw", h.down(DW), l.DW, rows}} {
				if _, _, err := computetest.CheckTF32(c.name, c.got, c.e, c.k); err != nil {
					t.Fatal(err)
				}
			}
			db := make([]float32, out)
			compute.Reference[float32]{}.LinearBackward(nil, make([]float32, out*in), db, l.DY, l.X, l.W, rows, in, out)
			compare(t, "db (float32, not a matrix product)", db, h.down(DB))
		})
	}
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
