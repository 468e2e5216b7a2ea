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
		if sd := math.Sqrt(n * p * (1 - p)); !(math.Abs(float64(dropped)-n*p) <= 5*sd) {
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

// TestDropoutKeepSplitMix64: element i's bits are output i+1 of SplitMix64 from state
// seed, the generator the CUDA kernel dropout_mask reproduces; the words are SplitMix64's
// published first outputs for seed 0. Element i is kept exactly when the word's high 32
// bits reach the threshold.
func TestDropoutKeepSplitMix64(t *testing.T) {
	for i, word := range []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f} {
		hi := uint32(word >> 32)
		if !DropoutKeep(0, uint64(i), hi) || DropoutKeep(0, uint64(i), hi+1) {
			t.Errorf("element %d: kept at threshold %#x: %v, at %#x: %v; want true, false",
				i, hi, DropoutKeep(0, uint64(i), hi), hi+1, DropoutKeep(0, uint64(i), hi+1))
		}
	}
}
