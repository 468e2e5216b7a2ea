package vmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTanhSaturationIsTorchs: for |x| ≥ 7, Tanh gives PyTorch's float32 tanh (Sleef's):
// ±1 beyond ±8.664339742 (PyTorch 1.13: tanh(8.66434) = 0.99999994, tanh(8.664341) = 1),
// the exactly rounded tanh below; in place (dst == src) too, on both loops. tanhTorch is
// checked at every float32 of [7, 8.7] (3.5 million), so that no cell of its table is
// wrong at a single point.
func TestTanhSaturationIsTorchs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for b := math.Float32bits(7); b <= math.Float32bits(8.7); b++ {
		x := math.Float32frombits(b)
		want := float32(math.Tanh(float64(x)))
		if x > sleefTanhSat {
			want = 1
		}
		if got := tanhTorch(x); got != want {
			t.Fatalf("tanhTorch(%v) = %v, want %v", x, got, want)
		}
		if got := tanhTorch(-x); got != -want {
			t.Fatalf("tanhTorch(%v) = %v, want %v", -x, got, -want)
		}
	}
	for _, c := range []struct{ x, want float32 }{
		{8.66434, 0.99999994}, {8.664341, 1}, {-8.664341, -1}, {9.5, 1}, {7, float32(math.Tanh(7))},
	} {
		if got := tanhTorch(c.x); got != c.want {
			t.Errorf("tanhTorch(%v) = %v, want %v", c.x, got, c.want)
		}
	}
	defer func(p bool) { PureGo = p }(PureGo)
	for _, pure := range []bool{false, true} {
		PureGo = pure
		src := make([]float32, 1500)
		for i := range src {
			src[i] = (2*r.Float32() - 1) * 20 // every regime, in chunks of 512 and a tail
		}
		const div, mul, add = 2, float32(math.Pi), 0.5
		dst := make([]float32, len(src))
		Tanh(dst, src, div, mul, add)
		inPlace := append([]float32(nil), src...)
		Tanh(inPlace, inPlace, div, mul, add)
		for i, s := range src {
			x := s / div
			if x < 7 && x > -7 {
				continue
			}
			want := mul*tanhTorch(x) + add
			if dst[i] != want || inPlace[i] != want {
				t.Fatalf("pure %v: Tanh at x = %v: %v (in place %v), want %v", pure, x, dst[i], inPlace[i], want)
			}
		}
	}
}
