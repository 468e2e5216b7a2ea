package model

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDropoutMask: the masks drop a fraction p of the elements (within 5 standard
// deviations over 10⁶ draws), keep the rest at 1/(1−p), advance the stream by one value
// per mask, and are a pure function of that value.
func TestDropoutMask(t *testing.T) {
	for _, p := range []float64{0.1, 0.2, 0.5} {
		m := &Model[float32]{Config: Config{Drop: p}}
		const n = 1_000_000
		a := m.dropoutMask(rand.New(rand.NewPCG(1, 2)), n)
		dropped, keep := 0, float32(1/(1-p))
		for _, x := range a {
			switch x {
			case 0:
				dropped++
			case keep:
			default:
				t.Fatalf("p=%g: mask value %g", p, x)
			}
		}
		if sd := math.Sqrt(n * p * (1 - p)); math.Abs(float64(dropped)-n*p) > 5*sd {
			t.Errorf("p=%g: dropped %d of %d", p, dropped, n)
		}
		src := rand.New(rand.NewPCG(1, 2))
		seed, threshold, _, ok := m.DropoutSeed(src)
		if !ok {
			t.Fatal("dropout off")
		}
		for i := 0; i < 1000; i++ {
			if DropoutKeep(seed, uint64(i), threshold) != (a[i] != 0) {
				t.Fatalf("p=%g: element %d differs from DropoutKeep", p, i)
			}
		}
		if next := rand.New(rand.NewPCG(1, 2)); next.Uint64() != seed {
			t.Fatal("the seed is not the stream's first value")
		}
	}
	off := &Model[float32]{Config: Config{Drop: 0}}
	if off.dropoutMask(rand.New(rand.NewPCG(1, 2)), 10) != nil {
		t.Error("a mask with dropout off")
	}
}
