package train

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rocone/rocone/pkg/model"
)

// TestAdamVectorMatchesScalar checks that the vector updates (adam_amd64.s: AVX-512, and
// AVX2 where it runs) give the scalar loop's results bit for bit, over several updates, on
// gradients of every scale, exact zeros (the untouched table rows of a dense update) and
// subnormals, and at lengths that leave scalar tails.
func TestAdamVectorMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sizes := []int{16*1000 + 7, 3, 16, 33}
	mk := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			switch rng.IntN(6) {
			case 0:
				x[i] = 0
			case 1:
				x[i] = float32(rng.NormFloat64() * 1e-40) // subnormal
			case 2:
				x[i] = float32(rng.NormFloat64() * 1e6)
			default:
				x[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(12)-8)))
			}
		}
		return x
	}
	var base, gs [][]float32
	for _, n := range sizes {
		base = append(base, mk(n))
		gs = append(gs, mk(n))
	}
	run := func(scalar bool) []float32 {
		adamScalarOnly = scalar
		defer func() { adamScalarOnly = false }()
		var params, grads []model.Tensor[float32]
		for i, n := range sizes {
			params = append(params, model.Tensor[float32]{Name: "t", Data: slices.Clone(base[i]), Rows: 1, Cols: n})
			grads = append(grads, model.Tensor[float32]{Name: "t", Data: slices.Clone(gs[i]), Rows: 1, Cols: n})
		}
		a := NewAdam(params, 3e-3)
		var all []float32
		for k := 0; k < 4; k++ {
			if err := a.Update(params, grads, 1); err != nil {
				t.Fatal(err)
			}
			for i := range grads {
				for j := range grads[i].Data {
					if j%3 == k%3 {
						grads[i].Data[j] = 0
					}
				}
			}
		}
		for i := range params {
			all = append(all, params[i].Data...)
			all = append(all, a.M[i]...)
			all = append(all, a.V[i]...)
		}
		return all
	}
	want := run(true)
	loops := map[string]bool{"default": true}
	if hasAdamAVX512 && hasAdamAVX2 {
		loops["avx2"] = false // the AVX2 loop too, where the default is AVX-512's
	}
	for name, avx512 := range loops {
		adamAVX512Loop = avx512 && hasAdamAVX512
		got := run(false)
		adamAVX512Loop = hasAdamAVX512
		for j := range want {
			if math.Float32bits(want[j]) != math.Float32bits(got[j]) {
				t.Fatalf("%s: element %d: vector %v, scalar %v", name, j, got[j], want[j])
			}
		}
	}
}

// TestAdamNonFiniteVector checks that a non-finite parameter inside the vector part is
// reported at its first index.
func TestAdamNonFiniteVector(t *testing.T) {
	n := 100
	params := []model.Tensor[float32]{{Name: "a", Data: make([]float32, n), Rows: 1, Cols: n}}
	g := make([]float32, n)
	for i := range g {
		g[i] = 1
	}
	g[37], g[70] = float32(math.NaN()), float32(math.Inf(-1))
	grads := []model.Tensor[float32]{{Name: "a", Data: g, Rows: 1, Cols: n}}
	err := NewAdam(params, 1e-3).Update(params, grads, 1)
	var nf *NonFiniteError
	if !errors.As(err, &nf) || nf.Tensor != "a" || nf.Index != 37 {
		t.Fatalf("error %v", err)
	}
}
