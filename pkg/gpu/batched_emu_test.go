//go:build cgo

package gpu

import (
	"math/rand/v2"
	"testing"

	"github.com/rocone/rocone/pkg/adam"
	"github.com/rocone/rocone/pkg/model"
)

// countingDriver counts the kernel launches.
type countingDriver struct {
	Driver
	launches map[string]int
}

func (c *countingDriver) Launch(kernel string, grid, block [3]int, args []uint64) error {
	c.launches[kernel]++
	return c.Driver.Launch(kernel, grid, block, args)
}

func (c *countingDriver) take() (n int, names map[string]int) {
	names = c.launches
	for _, k := range names {
		n += k
	}
	c.launches = map[string]int{}
	return n, names
}

// TestBatchedLaunches: the level-batched operators' launch counts, whatever the mix of
// branch counts or the number of tensors and their lags: the ragged intersection's 8
// forward and 16 backward launches (4 and 12 of them the linear layers', the two ReLUs
// and the one ReLU backward in their GEMMs' epilogues), one for the
// segmented dropout mask, one for an Adam step over all tensors.
func TestBatchedLaunches(t *testing.T) {
	var cd *countingDriver
	d := emuDevice(t, func(e Driver) Driver {
		cd = &countingDriver{Driver: e, launches: map[string]int{}}
		return cd
	})
	h := &harness{t: t, d: d, rng: rand.New(rand.NewPCG(1, 2))}
	want := func(what string, n int) {
		t.Helper()
		if got, names := cd.take(); got != n {
			t.Errorf("%s: %d launches (%v), want %d", what, got, names, n)
		}
	}

	const d0 = 6
	counts, _ := raggedCounts([]raggedGroup{{3, 2}, {2, 3}, {1, 1}})
	br, err := NewBranches(d, counts)
	h.ok(err)
	defer br.Free()
	w := upIntersectWeights(h, randomIntersectWeights(h, d0))
	gw := upIntersectWeights(h, zeroIntersectWeights(randomIntersectWeights(h, d0)))
	in, out := h.upCones(h.cones(br.Rows(), d0)), h.upCones(model.NewCones[float32](br.N(), d0))
	dIn, dOut := h.upCones(model.NewCones[float32](br.Rows(), d0)), h.upCones(h.cones(br.N(), d0))
	mask := h.zeros(br.Rows() * d0)
	segOff, seeds := h.upI([]int32{0, 1, 2, 5, 6}), h.upI([]int32{1, 2, 3, 4, 5, 6, 7, 8})
	cd.take()

	h.ok(d.DropoutMaskRagged(mask, br, segOff, seeds, d0, 1<<30, 2))
	want("DropoutMaskRagged", 1)
	st, err := d.IntersectForwardRagged(w, out, in, br, mask)
	h.ok(err)
	defer st.Free()
	want("IntersectForwardRagged", 8)
	h.ok(d.IntersectBackward(w, gw, st, dIn, dOut, in))
	want("IntersectBackward", 16)

	var P, G []*F32
	for i := 0; i < 19; i++ {
		P, G = append(P, h.zeros(3+i)), append(G, h.zeros(3+i))
	}
	opt, err := NewAdam(d, adam.Default(1e-3), P, G)
	h.ok(err)
	defer opt.Free()
	lags := make([]int64, len(P))
	for i := range lags {
		lags[i] = int64(i % 4)
	}
	h.ok(opt.SetLags(lags))
	cd.take()
	for step := 0; step < 3; step++ {
		h.ok(opt.Step(true))
		want("Adam.Step", 1)
	}
}
