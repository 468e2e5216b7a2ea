package compute_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/rocone/rocone/internal/computetest"
	"github.com/rocone/rocone/pkg/compute"
	"github.com/rocone/rocone/pkg/compute/cpu"
)

// TestRoundTF32Cases: the hand-picked bit patterns (ties, carries, subnormals, Inf, NaN),
// bit for bit.
func TestRoundTF32Cases(t *testing.T) {
	for _, c := range computetest.TF32Cases {
		got := math.Float32bits(compute.RoundTF32(math.Float32frombits(c.In)))
		if got != c.Out {
			t.Errorf("%s: RoundTF32(%#08x) = %#08x, want %#08x", c.Name, c.In, got, c.Out)
		}
	}
}

// TestRoundTF32Random: random bit patterns against the float64 reference (finite values),
// and the properties of a rounding: idempotent, symmetric, 13 low bits clear, within half
// a TF32 spacing.
func TestRoundTF32Random(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for i := 0; i < 1<<20; i++ {
		u := rng.Uint32()
		if i&1 == 0 { // half of them near a tie, where the rounding direction matters
			u = u&^0x1fff | uint32(0x0fff+rng.IntN(3)) // 0x0fff, 0x1000 (a tie) or 0x1001
		}
		x := math.Float32frombits(u)
		got := compute.RoundTF32(x)
		gb := math.Float32bits(got)
		if math.IsNaN(float64(x)) {
			if !math.IsNaN(float64(got)) || gb&0x1fff != 0 || gb>>31 != u>>31 {
				t.Fatalf("RoundTF32(%#08x) = %#08x, want a NaN of the same sign with the 13 low bits clear", u, gb)
			}
			continue
		}
		if want := computetest.RoundTF32Ref(x); gb != math.Float32bits(want) {
			t.Fatalf("RoundTF32(%#08x = %g) = %#08x, reference %#08x", u, x, gb, math.Float32bits(want))
		}
		if gb&0x1fff != 0 || compute.RoundTF32(got) != got || compute.RoundTF32(-x) != -got {
			t.Fatalf("RoundTF32(%#08x) = %#08x: not a TF32 value, not idempotent or not symmetric", u, gb)
		}
	}
}

func TestParseMatmul(t *testing.T) {
	for _, c := range []struct {
		in   string
		want compute.Matmul
		err  string
	}{
		{"", compute.MatmulFP32, ""}, {"fp32", compute.MatmulFP32, ""}, {"tf32", compute.MatmulTF32, ""},
		{"TF32", "", `matmul "TF32": want fp32 or tf32`}, {"fp16", "", "want fp32 or tf32"},
	} {
		got, err := compute.ParseMatmul(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseMatmul(%q): error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseMatmul(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

// TestWithMatmul: FP32 leaves the kernels alone; TF32 wraps them once.
func TestWithMatmul(t *testing.T) {
	ref := compute.Reference[float32]{}
	for _, m := range []compute.Matmul{"", compute.MatmulFP32} {
		if k := compute.WithMatmul[float32](ref, m); k != compute.Kernels[float32](ref) {
			t.Errorf("WithMatmul(%q) = %#v, want the kernels themselves", m, k)
		}
	}
	k := compute.WithMatmul[float32](ref, compute.MatmulTF32)
	if k != compute.Kernels[float32](compute.TF32Kernels[float32]{Inner: ref}) {
		t.Fatalf("WithMatmul(tf32) = %#v", k)
	}
	if k2 := compute.WithMatmul(k, compute.MatmulTF32); k2 != k {
		t.Fatalf("WithMatmul(tf32) twice = %#v", k2)
	}
}

// TestTF32Kernels: the CPU reference of TF32 (TF32Kernels over the plain reference and
// over the fast CPU backend) against the float64 products of the rounded factors, at
// shapes with ragged sizes; and far enough from the FP32 products to be TF32's rounding.
// The bias gradient is float32 (the unrounded dy), like the FP32 kernels'.
func TestTF32Kernels(t *testing.T) {
	for _, inner := range []struct {
		name string
		k    compute.Backend
	}{{"reference", compute.Reference[float32]{}}, {"cpu", cpu.New(cpu.Options{Workers: 2})}, {"cpu-purego", cpu.New(cpu.Options{Workers: 1, PureGo: true})}} {
		k := compute.WithMatmul(inner.k, compute.MatmulTF32)
		rng := rand.New(rand.NewPCG(9, 1))
		for _, sh := range [][3]int{{1, 1, 1}, {3, 5, 7}, {17, 33, 9}, {64, 48, 80}, {130, 37, 67}, {5, 131, 3}, {200, 300, 50}} {
			rows, in, out := sh[0], sh[1], sh[2]
			t.Run(fmt.Sprintf("%s/%dx%dx%d", inner.name, rows, in, out), func(t *testing.T) {
				l := computetest.NewLinearTF32(rng, rows, in, out)
				y := make([]float32, rows*out)
				k.LinearForward(y, l.X, l.W, l.B, rows, in, out)
				dx, dw, db := append([]float32(nil), l.DX0...), append([]float32(nil), l.DW0...), make([]float32, out)
				k.LinearBackward(dx, dw, db, l.DY, l.X, l.W, rows, in, out)
				for _, c := range []struct {
					name string
					got  []float32
					e    computetest.Expect
					k    int
				}{{"y", y, l.Y, in}, {"dx", dx, l.DX, out}, {"dw", dw, l.DW, rows}} {
					e1, e2, err := computetest.CheckTF32(c.name, c.got, c.e, c.k)
					if err != nil {
						t.Fatal(err)
					}
					t.Logf("%s: largest error %.2g of the scale from the TF32 reference, %.2g from FP32", c.name, e1, e2)
				}
				wantDB := make([]float32, out)
				for r := 0; r < rows; r++ {
					for o := 0; o < out; o++ {
						wantDB[o] += l.DY[r*out+o]
					}
				}
				for o := range db {
					if db[o] != wantDB[o] {
						t.Fatalf("db[%d] = %g, want the float32 column sum %g", o, db[o], wantDB[o])
					}
				}
			})
		}
	}
}

// TestTF32KernelsUnroundedFails: the check itself can fail: FP32 products given as TF32
// ones are refused, and so are products whose factors were rounded to fewer bits.
func TestTF32KernelsUnroundedFails(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	l := computetest.NewLinearTF32(rng, 40, 64, 30)
	y := make([]float32, 40*30)
	compute.Reference[float32]{}.LinearForward(y, l.X, l.W, l.B, 40, 64, 30)
	if _, _, err := computetest.CheckTF32("y", y, l.Y, 64); err == nil {
		t.Fatal("FP32 products pass as TF32")
	}
	bf16 := func(x []float32) []float32 { // 7 mantissa bits, truncated
		out := make([]float32, len(x))
		for i, v := range x {
			out[i] = math.Float32frombits(math.Float32bits(v) &^ 0xffff)
		}
		return out
	}
	compute.Reference[float32]{}.LinearForward(y, bf16(l.X), bf16(l.W), l.B, 40, 64, 30)
	if _, _, err := computetest.CheckTF32("y", y, l.Y, 64); err == nil {
		t.Fatal("bfloat16 products pass as TF32")
	}
}
