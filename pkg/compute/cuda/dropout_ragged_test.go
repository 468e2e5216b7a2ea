package cuda

import (
	"math"
	"slices"

	"github.com/rocone/rocone/pkg/model"
)

// testDropoutRagged: DropoutMaskRagged against each segment's mask drawn on the host with
// model.DropoutKeep and placed at its rows of the ragged layout; and, for one segment of
// a uniform layout, against DropoutMask.
func testDropoutRagged(h *harness) {
	const d = 11
	threshold, keep := uint32(math.Round(0.3*(1<<32))), float32(1/0.7)
	// Segments (branch count, outputs), by non-increasing branch count: the 3-branch and
	// 2-branch groups are each split into steps.
	segs := []raggedGroup{{4, 3}, {3, 3}, {3, 2}, {2, 4}, {2, 1}, {2, 2}, {1, 2}}
	counts, first := raggedCounts(segs)
	br, err := NewBranches(h.d, counts)
	h.ok(err)
	defer br.Free()
	segOff := append([]int32(nil), 0)
	seeds := make([]int32, 0, 2*len(segs))
	seed64 := make([]uint64, len(segs))
	for s, g := range segs {
		segOff = append(segOff, int32(first[s]+g.n))
		seed64[s] = h.rng.Uint64()
		seeds = append(seeds, int32(uint32(seed64[s])), int32(uint32(seed64[s]>>32)))
	}
	want := make([]float32, br.Rows()*d)
	for s, g := range segs {
		for j := 0; j < g.nb; j++ {
			for r := 0; r < g.n; r++ {
				for k := 0; k < d; k++ {
					if model.DropoutKeep(seed64[s], uint64((j*g.n+r)*d+k), threshold) {
						want[(br.Base(j)+first[s]+r)*d+k] = keep
					}
				}
			}
		}
	}
	mask := h.up(h.uniform(br.Rows()*d, -1, 1)) // every element is written
	h.ok(h.d.DropoutMaskRagged(mask, br, h.upI(segOff), h.upI(seeds), d, threshold, keep))
	if got := h.down(mask); !slices.Equal(got, want) {
		h.t.Fatalf("ragged mask differs from the segments' masks")
	}

	const nb, n = 3, 5
	one, err := NewBranches(h.d, UniformBranches(nb, n).Counts)
	h.ok(err)
	defer one.Free()
	a, b := h.zeros(nb*n*d), h.zeros(nb*n*d)
	h.ok(h.d.DropoutMaskRagged(a, one, h.upI([]int32{0, n}), h.upI(seeds[:2]), d, threshold, keep))
	h.ok(h.d.DropoutMask(b, seed64[0], threshold, keep))
	if !slices.Equal(h.down(a), h.down(b)) {
		h.t.Fatalf("one uniform segment: DropoutMaskRagged differs from DropoutMask")
	}

	for _, c := range []struct {
		name         string
		segOff, seed *I32
	}{{"no segments", h.upI([]int32{0}), h.upI([]int32{1, 2})}, {"short seeds", h.upI([]int32{0, 5}), h.upI([]int32{1})}} {
		if err := h.d.DropoutMaskRagged(a, one, c.segOff, c.seed, d, threshold, keep); err == nil {
			h.t.Errorf("%s: no error", c.name)
		}
	}
}
