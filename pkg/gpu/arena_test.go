//go:build cgo

package gpu

import (
	"math/rand/v2"
	"testing"
)

// zeroCounter counts a driver's memsets.
type zeroCounter struct {
	Driver
	zeros, bytes int
}

func (z *zeroCounter) Zero(dst uint64, bytes int) error {
	z.zeros++
	z.bytes += bytes
	return z.Driver.Zero(dst, bytes)
}

// TestArenaZeroesInBulk: every view the arena hands out reads as zeros, even where the
// last cycle wrote, over cycles that use less, the same and more than the last (growing
// the arena, and overflowing it); and a cycle that fits in what the last one cleared costs
// one memset at Reset, whatever the number of views.
func TestArenaZeroesInBulk(t *testing.T) {
	var zc *zeroCounter
	d := emuDevice(t, func(e Driver) Driver { zc = &zeroCounter{Driver: e}; return zc })
	a := NewArena(d)
	defer a.Free()
	rng := rand.New(rand.NewPCG(3, 4))
	h := &harness{t: t, d: d, rng: rng}
	for cycle, sizes := range [][]int{
		{100, 7, 3000},        // the first: everything overflows, then the arena grows
		{100, 7, 3000},        // the same again: fits
		{50, 1, 1, 1, 1, 999}, // less, in more views
		{4000, 4000},          // more than was cleared: the rest cleared at Take
		{10, 10, 10, 10, 10, 10, 10, 10, 10, 10},
	} {
		zc.zeros = 0
		h.ok(a.Reset())
		if cycle == 2 && zc.zeros != 1 {
			t.Errorf("cycle 2: Reset made %d memsets, want 1 (the last cycle's region)", zc.zeros)
		}
		zc.zeros = 0
		var views []*F32
		for _, n := range sizes {
			v, err := Take[float32](a, n)
			h.ok(err)
			views = append(views, v)
		}
		for i, v := range views {
			for j, x := range h.down(v) {
				if x != 0 {
					t.Fatalf("cycle %d, view %d: element %d is %v, want 0", cycle, i, j, x)
				}
			}
			// Dirty it for the next cycle.
			dirty := make([]float32, v.Len())
			for j := range dirty {
				dirty[j] = rng.Float32() + 1
			}
			h.ok(v.Upload(dirty))
		}
		if cycle == 1 || cycle == 2 || cycle == 4 {
			if zc.zeros != 0 {
				t.Errorf("cycle %d: %d memsets for %d views, want none after Reset's", cycle, zc.zeros, len(sizes))
			}
		}
	}
}
