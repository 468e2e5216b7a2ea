package gpu

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/compute"
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

	// A threshold equal to an element's draw keeps the element (the comparison is ≥, as
	// model.DropoutKeep's): the draw of a random element of seed64[0], found by bisecting
	// the threshold with DropoutKeep, as the threshold of both kernels.
	at := uint64(h.rng.IntN(nb * n * d))
	lo, hi := uint64(0), uint64(1)<<32 // DropoutKeep(lo) holds, DropoutKeep(hi) would not
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; model.DropoutKeep(seed64[0], at, uint32(mid)) {
			lo = mid
		} else {
			hi = mid
		}
	}
	draw := uint32(lo)
	wantEq := make([]float32, nb*n*d)
	for i := range wantEq {
		if model.DropoutKeep(seed64[0], uint64(i), draw) {
			wantEq[i] = keep
		}
	}
	if wantEq[at] != keep {
		h.t.Fatalf("element %d: not kept at a threshold equal to its draw %d", at, draw)
	}
	h.ok(h.d.DropoutMaskRagged(a, one, h.upI([]int32{0, n}), h.upI(seeds[:2]), d, draw, keep))
	h.ok(h.d.DropoutMask(b, seed64[0], draw, keep))
	for _, c := range []struct {
		name string
		got  []float32
	}{{"DropoutMaskRagged", h.down(a)}, {"DropoutMask", h.down(b)}} {
		if !slices.Equal(c.got, wantEq) {
			h.t.Fatalf("%s, threshold %d = element %d's draw: mask differs from model.DropoutKeep's (element %d: %v)", c.name, draw, at, at, c.got[at])
		}
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

// raggedGroup is a run of outputs with the same branch count in a ragged batch.
type raggedGroup struct{ nb, n int }

// raggedCounts is the Branches.Counts of groups listed by non-increasing branch count, and
// each group's first output row.
func raggedCounts(groups []raggedGroup) (counts, first []int) {
	counts = make([]int, groups[0].nb)
	o := 0
	for _, g := range groups {
		first = append(first, o)
		o += g.n
		for j := 0; j < g.nb; j++ {
			counts[j] += g.n
		}
	}
	return counts, first
}

// testIntersectRagged: one ragged intersection of 4-, 3-, 2- and 1-branch outputs against
// model.IntersectForward / IntersectBackward on each group separately (outputs, dIn and
// the weight gradients, summed over the groups), with and without a dropout mask.
func testIntersectRagged(h *harness) {
	groups := []raggedGroup{{4, 3}, {3, 5}, {2, 7}, {1, 2}}
	counts, _ := raggedCounts(groups)
	for _, c := range []struct {
		drop   bool
		layout int
	}{{false, 0}, {true, 0}, {false, 1}, {true, 1}} {
		drop, layout := c.drop, intersectLayouts[c.layout]
		h.t.Run(fmt.Sprintf("mask=%v/%s", drop, layout.name), func(t *testing.T) {
			h := &harness{t: t, d: h.d, rng: h.rng}
			const d = 13
			br, err := NewBranches(h.d, counts)
			h.ok(err)
			t.Cleanup(func() { br.Free() })
			n, rows := br.N(), br.Rows()
			w := randomIntersectWeights(h, d)
			all := h.cones(rows, d)
			var mask []float32
			if drop {
				mask = make([]float32, rows*d)
				for i := range mask {
					if h.rng.Float64() > 0.3 {
						mask[i] = 1 / 0.7
					}
				}
			}
			dOut := h.cones(n, d)

			out, dIn, gw := intersectRaggedRef(groups, br, w, all, mask, dOut)

			W := layout.up(h, w)
			In, Out := h.upCones(all), h.upCones(model.NewCones[float32](n, d))
			var st *IntersectState
			GW := layout.up(h, zeroIntersectWeights(w))
			DIn := h.upCones(model.NewCones[float32](rows, d))
			checkIntersectLaunches(h, t, launches(h, func() {
				st, err = h.d.IntersectForwardRagged(W, Out, In, br, h.up(mask))
				h.ok(err)
				h.ok(h.d.IntersectBackward(W, GW, st, DIn, h.upCones(dOut), In))
			}), layout.gemms, layout.sums)
			defer st.Free()
			got := h.downCones(Out)
			compare(t, "axis", out.Axis, got.Axis)
			compare(t, "half", out.Half, got.Half)
			gotIn := h.downCones(DIn)
			compare(t, "dIn.axis", dIn.Axis, gotIn.Axis)
			compare(t, "dIn.half", dIn.Half, gotIn.Half)
			compareIntersectGrads(h, t, gw, GW)
		})
	}

	// The uniform layout computes the same bits with the counts spelled out on the device
	// as without them (IntersectForward's path).
	h.t.Run("uniform-bits", func(t *testing.T) {
		h := &harness{t: t, d: h.d, rng: h.rng}
		const nb, n, d = 3, 5, 7
		w := upIntersectWeights(h, randomIntersectWeights(h, d))
		in, dOut := h.upCones(h.cones(nb*n, d)), h.upCones(h.cones(n, d))
		br, err := NewBranches(h.d, UniformBranches(nb, n).Counts)
		h.ok(err)
		defer br.Free()
		uniform := intersectPass(h, w, in, dOut, n, nb*n, d, func(out Cones) (*IntersectState, error) {
			return h.d.IntersectForward(w, out, in, nb, nil)
		})
		ragged := intersectPass(h, w, in, dOut, n, nb*n, d, func(out Cones) (*IntersectState, error) {
			return h.d.IntersectForwardRagged(w, out, in, br, nil)
		})
		sameConeBits(t, "the counts on the device change the bits", uniform, ragged)
	})

	// Device counts that are a view into a larger buffer (a slab) followed by counts that
	// exceed every output row: the kernels read counts[j] for j < J only, so the bits are
	// those of NewBranches' own copy.
	h.t.Run("counts-view", func(t *testing.T) {
		h := &harness{t: t, d: h.d, rng: h.rng}
		const d = 5
		br, err := NewBranches(h.d, counts)
		h.ok(err)
		defer br.Free()
		slab := make([]int32, 2*len(counts))
		for j := range slab {
			slab[j] = 1 << 20
			if j < len(counts) {
				slab[j] = int32(counts[j])
			}
		}
		view := Branches{Counts: counts, Dev: h.upI(slab).Slice(0, len(counts))}
		w := upIntersectWeights(h, randomIntersectWeights(h, d))
		in, dOut := h.upCones(h.cones(br.Rows(), d)), h.upCones(h.cones(br.N(), d))
		var passes [2][2]model.Cones[float32]
		for i, b := range []Branches{br, view} {
			passes[i] = intersectPass(h, w, in, dOut, br.N(), br.Rows(), d, func(out Cones) (*IntersectState, error) {
				return h.d.IntersectForwardRagged(w, out, in, b, nil)
			})
		}
		sameConeBits(t, "counts read past J through a view", passes[0], passes[1])
	})

	h.t.Run("errors", func(t *testing.T) {
		h := &harness{t: t, d: h.d, rng: h.rng}
		w := IntersectWeights{}
		for _, c := range []struct {
			name   string
			br     Branches
			in, ot int
			want   string
		}{
			{"ragged without a device copy", Branches{Counts: []int{3, 2}}, 5, 3, "no device copy"},
			{"increasing", Branches{Counts: []int{2, 3}, Dev: h.upI([]int32{2, 3})}, 5, 2, "non-increasing"},
			{"short device copy", Branches{Counts: []int{3, 2}, Dev: h.upI([]int32{3})}, 5, 3, "device copy has 1"},
			{"wrong input count", Branches{Counts: []int{3, 2}, Dev: h.upI([]int32{3, 2})}, 6, 3, "6 input"},
		} {
			_, err := h.d.IntersectForwardRagged(w, Cones{N: c.ot, Dim: 2}, Cones{N: c.in, Dim: 2}, c.br, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
			}
		}
	})
}

// intersectRaggedRef is a ragged intersection's reference: model.IntersectForward and
// IntersectBackward on each group of groups (br's layout) on its own, its branches (and
// mask, nil for none) gathered from the ragged rows of all, given dOut; the outputs, dIn
// in all's layout and the weight gradients, summed over the groups.
func intersectRaggedRef(groups []raggedGroup, br Branches, w *model.IntersectionWeights[float32], all model.Cones[float32],
	mask []float32, dOut model.Cones[float32]) (out, dIn model.Cones[float32], gw *model.IntersectionWeights[float32]) {
	d := all.Dim
	ref := compute.Reference[float32]{}
	out, dIn, gw = model.NewCones[float32](br.N(), d), model.NewCones[float32](br.Rows(), d), zeroIntersectWeights(w)
	_, first := raggedCounts(groups)
	for gi, g := range groups {
		row := func(j, r int) int { return br.Base(j) + first[gi] + r }
		in, dInG := make([]model.Cones[float32], g.nb), make([]model.Cones[float32], g.nb)
		var maskG []float32
		if mask != nil {
			maskG = make([]float32, g.nb*g.n*d)
		}
		for j := range in {
			in[j], dInG[j] = model.NewCones[float32](g.n, d), model.NewCones[float32](g.n, d)
			for r := 0; r < g.n; r++ {
				src := row(j, r) * d
				copy(in[j].Axis[r*d:(r+1)*d], all.Axis[src:src+d])
				copy(in[j].Half[r*d:(r+1)*d], all.Half[src:src+d])
				if mask != nil {
					copy(maskG[(j*g.n+r)*d:(j*g.n+r+1)*d], mask[src:src+d])
				}
			}
		}
		o := first[gi] * d
		outG := model.Cones[float32]{Axis: out.Axis[o : o+g.n*d], Half: out.Half[o : o+g.n*d], N: g.n, Dim: d}
		dOutG := model.Cones[float32]{Axis: dOut.Axis[o : o+g.n*d], Half: dOut.Half[o : o+g.n*d], N: g.n, Dim: d}
		st := model.IntersectForward(ref, w, outG, in, maskG)
		model.IntersectBackward(ref, w, gw, st, dInG, dOutG, in)
		for j := range dInG {
			for r := 0; r < g.n; r++ {
				dst := row(j, r) * d
				copy(dIn.Axis[dst:dst+d], dInG[j].Axis[r*d:(r+1)*d])
				copy(dIn.Half[dst:dst+d], dInG[j].Half[r*d:(r+1)*d])
			}
		}
	}
	return out, dIn, gw
}

// testIntersectNaN: a NaN in any branch's dropped-out aperture makes the intersection's
// minimum NaN, its index the first NaN branch (PyTorch's min(dim)), on the device as in
// model.IntersectForward, and the backward pass sends the gradient to that branch; before,
// both kept an earlier branch's number over a later NaN. The NaNs are in the dropout
// mask, which the minimum reads and the features do not (a NaN aperture would make the
// whole row NaN through the linear layers and hide the minimum's choice), in branch 0 of
// some elements, a later branch of others, two branches of some. W3 = 0 and B3 = −1 make
// the DeepSets features 0, so the gate's NaN gradient stops at their ReLU and dIn.Half
// is NaN exactly where the minimum sends a NaN minimum's gradient. Uniform layouts
// (IntersectForward: no counts on the device) and a ragged one.
func testIntersectNaN(h *harness) {
	for _, c := range []struct {
		name   string
		groups []raggedGroup
		layout int
	}{{"2-branches", []raggedGroup{{2, 9}}, 0}, {"3-branches", []raggedGroup{{3, 9}}, 1},
		{"ragged", []raggedGroup{{4, 3}, {3, 5}, {2, 7}, {1, 2}}, 0}} {
		layout := intersectLayouts[c.layout]
		h.t.Run(c.name+"/"+layout.name, func(t *testing.T) {
			h := &harness{t: t, d: h.d, rng: h.rng}
			const d = 13
			counts, first := raggedCounts(c.groups)
			br, err := NewBranches(h.d, counts)
			h.ok(err)
			t.Cleanup(func() { br.Free() })
			n, rows := br.N(), br.Rows()
			w := randomIntersectWeights(h, d)
			clear(w.W3)
			for i := range w.B3 {
				w.B3[i] = -1
			}
			all, dOut := h.cones(rows, d), h.cones(n, d)
			mask := make([]float32, rows*d)
			for i := range mask {
				if h.rng.Float64() > 0.3 {
					mask[i] = 1 / 0.7
				}
			}
			for j := range counts {
				for r := range counts[j] {
					for k := range d {
						if (r*d+k)%7 == j+1 || (r*d+k)%11 == 2*j {
							mask[(br.Base(j)+r)*d+k] = float32(math.NaN())
						}
					}
				}
			}
			// The rule: per output element, the first branch whose half·mask is a NaN, else the
			// first minimal one.
			wantNaN, wantArg := make([]bool, n*d), make([]int32, n*d)
			nans := 0
			for gi, g := range c.groups {
				for r := first[gi]; r < first[gi]+g.n; r++ {
					for k := range d {
						p := r*d + k
						best := all.Half[r*d+k] * mask[r*d+k]
						for j := 1; j < g.nb && best == best; j++ {
							q := (br.Base(j)+r)*d + k
							if v := all.Half[q] * mask[q]; v != v || v < best {
								best, wantArg[p] = v, int32(j)
							}
						}
						if wantNaN[p] = best != best; wantNaN[p] {
							nans++
						}
					}
				}
			}
			if nans == 0 || nans == n*d {
				t.Fatalf("%d NaN minima of %d: the case tests nothing", nans, n*d)
			}
			out, dIn, gw := intersectRaggedRef(c.groups, br, w, all, mask, dOut)

			W, GW := layout.up(h, w), layout.up(h, zeroIntersectWeights(w))
			In, Out, DIn := h.upCones(all), h.upCones(model.NewCones[float32](n, d)), h.upCones(model.NewCones[float32](rows, d))
			var st *IntersectState
			if len(c.groups) == 1 {
				st, err = h.d.IntersectForward(W, Out, In, c.groups[0].nb, h.up(mask))
			} else {
				st, err = h.d.IntersectForwardRagged(W, Out, In, br, h.up(mask))
			}
			h.ok(err)
			defer st.Free()
			h.ok(h.d.IntersectBackward(W, GW, st, DIn, h.upCones(dOut), In))

			gotArg, err := st.argmin.ToHost()
			h.ok(err)
			hmin, got, gotIn := h.down(st.hmin), h.downCones(Out), h.downCones(DIn)
			for p := range wantNaN {
				if gotArg[p] != wantArg[p] || (hmin[p] != hmin[p]) != wantNaN[p] || (out.Half[p] != out.Half[p]) != wantNaN[p] {
					t.Fatalf("element %d: device min %v at branch %d, CPU output %v; want branch %d, a NaN: %v", p, hmin[p], gotArg[p],
						out.Half[p], wantArg[p], wantNaN[p])
				}
			}
			// dIn.Half is a NaN exactly at each NaN minimum's branch, on the CPU (and so, by
			// compareNaN, on the device).
			for gi, g := range c.groups {
				for r := first[gi]; r < first[gi]+g.n; r++ {
					for j := range g.nb {
						for k := range d {
							p, q := r*d+k, (br.Base(j)+r)*d+k
							if want := wantNaN[p] && wantArg[p] == int32(j); (dIn.Half[q] != dIn.Half[q]) != want {
								t.Fatalf("CPU dIn.Half of element %d, branch %d = %v; want a NaN: %v", p, j, dIn.Half[q], want)
							}
						}
					}
				}
			}
			compare(t, "axis", out.Axis, got.Axis)
			compareNaN(t, "half", out.Half, got.Half)
			compare(t, "dIn.axis", dIn.Axis, gotIn.Axis)
			compareNaN(t, "dIn.half", dIn.Half, gotIn.Half)
			for _, p := range []struct {
				name string
				want []float32
				got  *F32
			}{{"W1", gw.W1, GW.W1}, {"B1", gw.B1, GW.B1}, {"W2", gw.W2, GW.W2}, {"B2", gw.B2, GW.B2},
				{"W3", gw.W3, GW.W3}, {"B3", gw.B3, GW.B3}, {"W4", gw.W4, GW.W4}, {"B4", gw.B4, GW.B4}} {
				compareScaleNaN(t, "d"+p.name, p.want, h.down(p.got), maxAbs(gw.W2))
			}
		})
	}
}

// testIntersectClamp: the SemanticAverage's arctangent where the weighted mean direction
// x = Σ α_j cos a_j is clamped (|x| < 1e-3: x = 1e-3, and no gradient through x) and where
// x < 0 with y = Σ α_j sin a_j exactly 0 (+ π, not − π), against model.IntersectForward /
// IntersectBackward. W2 = 0 makes the attention uniform (α_j = 1/2 for both branches), so
// the axes alone place x and y: a pair (a, π − a) cancels x, (a, −a) cancels y exactly.
func testIntersectClamp(h *harness) {
	const n = 2
	pairs := [][2]float32{
		{1, math.Pi - 1}, {-1, 1 - math.Pi}, // x ≈ 0 (clamped), y > 0 and y < 0
		{1.5715, 1.5715}, {-1.5715, -1.5715}, // x ≈ −7e-4 (clamped to +1e-3)
		{1.5695, 1.5695},              // x ≈ 1.3e-3 (not clamped)
		{2.5, -2.5}, {-2, 2}, {3, -3}, // x < 0, y = 0
		{2, 2.5}, {-2, -2.5}, // x < 0, y ≠ 0
	}
	d := len(pairs)
	w := randomIntersectWeights(h, d)
	clear(w.W2)
	in := []model.Cones[float32]{h.cones(n, d), h.cones(n, d)}
	for r := range n {
		for k, p := range pairs {
			in[0].Axis[r*d+k], in[1].Axis[r*d+k] = p[r], p[1-r] // row 1 has the branches swapped
		}
	}
	r := intersectBoth(h, w, in)
	defer r.dst.Free()
	x, y := h.down(r.dst.x), h.down(r.dst.y)
	for r := range n {
		for k, p := range pairs {
			c0, c1 := math.Cos(float64(p[0])), math.Cos(float64(p[1]))
			if mean := (c0 + c1) / 2; math.Abs(mean) < 1e-3 && x[r*d+k] != 1e-3 {
				h.t.Fatalf("axes %v: x = %g, want the clamp 1e-3", p, x[r*d+k])
			}
			if p[0] == -p[1] && y[r*d+k] != 0 {
				h.t.Fatalf("axes %v: y = %g, want 0", p, y[r*d+k])
			}
		}
	}
	r.compareForward(h)
	gw, GW := r.backward(h, h.cones(n, d))
	compareIntersectGrads(h, h.t, gw, GW)
}

// testIntersectLogits: attention logits hundreds apart between branches (W2 scaled up),
// where the softmax overflows unless it subtracts each element's maximum over its own
// branches, against model.IntersectForward / IntersectBackward.
func testIntersectLogits(h *harness) {
	const nb, n, d = 3, 4, 7
	w := randomIntersectWeights(h, d)
	for i := range w.W2 {
		w.W2[i] *= 500
	}
	in := make([]model.Cones[float32], nb)
	for j := range in {
		in[j] = h.cones(n, d)
	}
	r := intersectBoth(h, w, in)
	defer r.dst.Free()
	r.compareForward(h)
	r.backward(h, h.cones(n, d))
	// Not the weight gradients: W2's scale amplifies the rounding of dW1 past the tolerance
	// (testIntersect compares them; the softmax's maximum does not enter the backward pass).
}

func randomIntersectWeights(h *harness, d int) *model.IntersectionWeights[float32] {
	lin := func(in, out int) ([]float32, []float32) {
		bw, bb := math.Sqrt(6/float64(in+out)), 1/math.Sqrt(float64(in))
		return h.uniform(out*in, -bw, bw), h.uniform(out, -bb, bb)
	}
	w := &model.IntersectionWeights[float32]{}
	w.W1, w.B1 = lin(2*d, d)
	w.W2, w.B2 = lin(d, d)
	w.W3, w.B3 = lin(2*d, d)
	w.W4, w.B4 = lin(d, d)
	return w
}

func zeroIntersectWeights(w *model.IntersectionWeights[float32]) *model.IntersectionWeights[float32] {
	return &model.IntersectionWeights[float32]{
		W1: make([]float32, len(w.W1)), B1: make([]float32, len(w.B1)), W2: make([]float32, len(w.W2)), B2: make([]float32, len(w.B2)),
		W3: make([]float32, len(w.W3)), B3: make([]float32, len(w.B3)), W4: make([]float32, len(w.W4)), B4: make([]float32, len(w.B4)),
	}
}

func upIntersectWeights(h *harness, w *model.IntersectionWeights[float32]) IntersectWeights {
	return IntersectWeights{h.up(w.W1), h.up(w.B1), h.up(w.W2), h.up(w.B2), h.up(w.W3), h.up(w.B3), h.up(w.W4), h.up(w.B4)}
}

// upIntersectWeightsStacked uploads w with W3 right after W1 and B3 right after B1, as
// gpumodel allocates them: the layout the intersection runs as one layer of 2d outputs.
func upIntersectWeightsStacked(h *harness, w *model.IntersectionWeights[float32]) IntersectWeights {
	W13, B13 := h.up(slices.Concat(w.W1, w.W3)), h.up(slices.Concat(w.B1, w.B3))
	nw, nb := len(w.W1), len(w.B1)
	return IntersectWeights{W13.Slice(0, nw), B13.Slice(0, nb), h.up(w.W2), h.up(w.B2), W13.Slice(nw, nw), B13.Slice(nb, nb),
		h.up(w.W4), h.up(w.B4)}
}

// intersectLayouts are the ways to upload the weights the intersection tests run:
// separate tensors, and W1 and W3 (B1 and B3) back to back, which the intersection
// runs as one layer: its forward, dX and dW GEMMs then launch 3 times where separate
// weights take 4 (gemmLaunches).
var intersectLayouts = []struct {
	name        string
	up          func(*harness, *model.IntersectionWeights[float32]) IntersectWeights
	gemms, sums int
}{{"separate", upIntersectWeights, 4, 4}, {"stacked", upIntersectWeightsStacked, 3, 3}}

// checkIntersectLaunches fails unless f launched gemms GEMMs of each kind (the forward
// product, dX's and dW's; a kind split into two kernels counts both) and sums col_sums.
func checkIntersectLaunches(h *harness, t *testing.T, n map[string]int, gemms, sums int) {
	t.Helper()
	kinds := map[string]int{}
	for k, c := range n {
		for _, kind := range []string{"_nt", "_nn", "_tn"} {
			if strings.HasPrefix(k, "gemm") && strings.Contains(k, kind) {
				kinds[kind] += c
			}
		}
	}
	for _, kind := range []string{"_nt", "_nn", "_tn"} {
		if kinds[kind] != gemms {
			t.Errorf("%d GEMM%s launches, want %d (launches: %v)", kinds[kind], kind, gemms, n)
		}
	}
	if n["col_sum"] != sums {
		t.Errorf("%d col_sum launches, want %d", n["col_sum"], sums)
	}
}

// compareIntersectGrads compares the eight weight gradients, on the scale of dW2 (dB2 is
// 0 up to rounding: the softmax over branches is invariant to a bias shared by all
// branches).
func compareIntersectGrads(h *harness, t *testing.T, want *model.IntersectionWeights[float32], got IntersectWeights) {
	t.Helper()
	for _, p := range []struct {
		name string
		want []float32
		got  *F32
	}{{"W1", want.W1, got.W1}, {"B1", want.B1, got.B1}, {"W2", want.W2, got.W2}, {"B2", want.B2, got.B2},
		{"W3", want.W3, got.W3}, {"B3", want.B3, got.B3}, {"W4", want.W4, got.W4}, {"B4", want.B4, got.B4}} {
		compareScale(t, "d"+p.name, p.want, h.down(p.got), maxAbs(want.W2))
	}
}

// testIntersect: the whole intersection (features, four linear layers, attention
// softmax + atan2, CardMin with dropout mask) against model.IntersectForward/Backward.
func testIntersect(h *harness) {
	for _, c := range []struct {
		nb     int
		drop   bool
		layout int
	}{{2, false, 0}, {3, true, 0}, {2, true, 1}, {3, false, 1}} {
		layout := intersectLayouts[c.layout]
		h.t.Run(fmt.Sprintf("%d-branches-mask=%v/%s", c.nb, c.drop, layout.name), func(t *testing.T) {
			const n, d = 9, 13
			w := randomIntersectWeights(h, d)
			in := make([]model.Cones[float32], c.nb)
			all := model.NewCones[float32](c.nb*n, d)
			for j := range in {
				in[j] = h.cones(n, d)
				copy(all.Axis[j*n*d:], in[j].Axis)
				copy(all.Half[j*n*d:], in[j].Half)
			}
			var mask []float32
			if c.drop {
				mask = make([]float32, c.nb*n*d)
				for i := range mask {
					if h.rng.Float64() > 0.3 {
						mask[i] = 1 / 0.7
					}
				}
			}
			ref := compute.Reference[float32]{}
			out := model.NewCones[float32](n, d)
			st := model.IntersectForward(ref, w, out, in, mask)

			W := layout.up(h, w)
			In, Out := h.upCones(all), h.upCones(model.NewCones[float32](n, d))
			dst, err := h.d.IntersectForward(W, Out, In, c.nb, h.up(mask))
			h.ok(err)
			defer dst.Free()
			got := h.downCones(Out)
			compare(t, "axis", out.Axis, got.Axis)
			compare(t, "half", out.Half, got.Half)

			dOut := h.cones(n, d)
			dIn := make([]model.Cones[float32], c.nb)
			for j := range dIn {
				dIn[j] = model.NewCones[float32](n, d)
			}
			gw := zeroIntersectWeights(w)
			GW := layout.up(h, gw)
			model.IntersectBackward(ref, w, gw, st, dIn, dOut, in)
			DIn := h.upCones(model.NewCones[float32](c.nb*n, d))
			h.ok(h.d.IntersectBackward(W, GW, dst, DIn, h.upCones(dOut), In))
			gotIn := h.downCones(DIn)
			for j := range dIn {
				compare(t, fmt.Sprint("dIn[", j, "].axis"), dIn[j].Axis, gotIn.Axis[j*n*d:(j+1)*n*d])
				compare(t, fmt.Sprint("dIn[", j, "].half"), dIn[j].Half, gotIn.Half[j*n*d:(j+1)*n*d])
			}
			compareIntersectGrads(h, t, gw, GW)
		})
	}
}

// intersectPass runs the intersection forward (by fwd, into a fresh output of n rows) and
// backward (into a fresh dIn of rows rows) and returns the output and dIn, downloaded.
func intersectPass(h *harness, w IntersectWeights, in, dOut Cones, n, rows, d int, fwd func(out Cones) (*IntersectState, error)) [2]model.Cones[float32] {
	out, dIn := h.upCones(model.NewCones[float32](n, d)), h.upCones(model.NewCones[float32](rows, d))
	st, err := fwd(out)
	h.ok(err)
	h.ok(h.d.IntersectBackward(w, IntersectWeights{}, st, dIn, dOut, in))
	h.ok(st.Free())
	return [2]model.Cones[float32]{h.downCones(out), h.downCones(dIn)}
}

// sameConeBits fails unless two intersectPass results, output and dIn, are bit for bit
// the same.
func sameConeBits(t *testing.T, what string, a, b [2]model.Cones[float32]) {
	t.Helper()
	for _, c := range []struct {
		what      string
		want, got []float32
	}{{"axis", a[0].Axis, b[0].Axis}, {"half", a[0].Half, b[0].Half},
		{"dIn.axis", a[1].Axis, b[1].Axis}, {"dIn.half", a[1].Half, b[1].Half}} {
		if !slices.Equal(c.want, c.got) {
			t.Fatalf("%s: %s", c.what, what)
		}
	}
}

// intersectRun is IntersectForward run on the CPU reference and on the device for the
// same branches (each of n rows, stacked in one device buffer), kept for the backward.
type intersectRun struct {
	w   *model.IntersectionWeights[float32]
	in  []model.Cones[float32]
	out model.Cones[float32]
	st  *model.IntersectState[float32]
	W   IntersectWeights
	In  Cones
	Out Cones
	dst *IntersectState
}

func intersectBoth(h *harness, w *model.IntersectionWeights[float32], in []model.Cones[float32]) intersectRun {
	nb, n, d := len(in), in[0].N, in[0].Dim
	all := model.NewCones[float32](nb*n, d)
	for j := range in {
		copy(all.Axis[j*n*d:], in[j].Axis)
		copy(all.Half[j*n*d:], in[j].Half)
	}
	r := intersectRun{w: w, in: in, out: model.NewCones[float32](n, d)}
	r.st = model.IntersectForward(compute.Reference[float32]{}, w, r.out, in, nil)
	r.W, r.In, r.Out = upIntersectWeights(h, w), h.upCones(all), h.upCones(model.NewCones[float32](n, d))
	var err error
	r.dst, err = h.d.IntersectForward(r.W, r.Out, r.In, nb, nil)
	h.ok(err)
	return r
}

// compareForward compares the device's output with the reference's.
func (r intersectRun) compareForward(h *harness) {
	got := h.downCones(r.Out)
	compare(h.t, "axis", r.out.Axis, got.Axis)
	compare(h.t, "half", r.out.Half, got.Half)
}

// backward runs IntersectBackward both ways from dOut, compares each branch's dIn, and
// returns the weight gradients, the reference's and the device's.
func (r intersectRun) backward(h *harness, dOut model.Cones[float32]) (*model.IntersectionWeights[float32], IntersectWeights) {
	nb, n, d := len(r.in), r.out.N, r.out.Dim
	dIn := make([]model.Cones[float32], nb)
	for j := range dIn {
		dIn[j] = model.NewCones[float32](n, d)
	}
	gw := zeroIntersectWeights(r.w)
	model.IntersectBackward(compute.Reference[float32]{}, r.w, gw, r.st, dIn, dOut, r.in)
	DIn, GW := h.upCones(model.NewCones[float32](nb*n, d)), upIntersectWeights(h, zeroIntersectWeights(r.w))
	h.ok(h.d.IntersectBackward(r.W, GW, r.dst, DIn, h.upCones(dOut), r.In))
	gotIn := h.downCones(DIn)
	for j := range dIn {
		compare(h.t, fmt.Sprint("dIn[", j, "].axis"), dIn[j].Axis, gotIn.Axis[j*n*d:(j+1)*n*d])
		compare(h.t, fmt.Sprint("dIn[", j, "].half"), dIn[j].Half, gotIn.Half[j*n*d:(j+1)*n*d])
	}
	return gw, GW
}
