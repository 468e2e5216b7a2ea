package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/rocone/rocone/pkg/compute"
)

// Gradient checks of every operator on its own, in float64 (see gradcheck_test.go).
// Each scalar is Σ c·output with random c, so the analytic gradient is the operator's
// backward pass with dOut = c.

var ref = compute.Reference[float64]{}

func TestAngleGrad(t *testing.T) {
	gradTest(t, 1, func(rng *rand.Rand) (func() float64, []fdParam) {
		const R = 0.7
		// Raw values up to ±3R, so that some angles come within 0.03 of ±π.
		raw := uniform(rng, 12, -3*R, 3*R)
		c := uniform(rng, 12, -1, 1)
		theta := make([]float64, 12)
		f := func() float64 { AngleForward(theta, raw, R); return dot(c, theta) }
		f()
		g := make([]float64, 12)
		AngleBackward(g, c, theta, R)
		return f, []fdParam{{"raw", raw, g}}
	})
}

func TestRotateGrad(t *testing.T) {
	// Every rotation of compute.Projections: a rule added there is checked here too.
	for _, info := range compute.Projections {
		if !info.Rotates {
			continue
		}
		proj := info.Projection
		t.Run(info.Name, func(t *testing.T) {
			gradTest(t, 2, func(rng *rand.Rand) (func() float64, []fdParam) {
				const n, d = 4, 5
				in := randCones(rng, n, d)
				// Relation angles over (−π, π): sums cross the wrap point ±π, and
				// apertures h + φ cross 0 and π (fold and clamp both ways).
				relAxis := edgeAxes(rng, n*d)
				relAperture := uniform(rng, n*d, -math.Pi, math.Pi)
				relShift := uniform(rng, n*d, -3, 3)
				ca, ch := uniform(rng, n*d, -1, 1), uniform(rng, n*d, -1, 1)
				out := NewCones[float64](n, d)
				f := func() float64 {
					RotateForward(proj, out, in, relAxis, relAperture, relShift)
					return dot(ca, out.Axis) + dot(ch, out.Half)
				}
				f()
				dIn := NewCones[float64](n, d)
				dAx, dAp, dSh := make([]float64, n*d), make([]float64, n*d), make([]float64, n*d)
				RotateBackward(proj, dIn, dAx, dAp, dSh, Cones[float64]{Axis: ca, Half: ch, N: n, Dim: d}, in, out, relAperture)
				return f, []fdParam{
					{"in.axis", in.Axis, dIn.Axis}, {"in.half", in.Half, dIn.Half},
					{"relAxis", relAxis, dAx}, {"relAperture", relAperture, dAp}, {"relShift", relShift, dSh},
				}
			})
		})
	}
}

func TestConeProjectGrad(t *testing.T) {
	gradTest(t, 3, func(rng *rand.Rand) (func() float64, []fdParam) {
		const n, d, hid = 3, 4, 6
		cfg := Config{Variant: ConE, NumEntities: 1, NumRelations: 1, Dim: d, ConeHidden: hid}
		p := NewParams[float64](cfg)
		p.Init(cfg, rng.Uint64())
		w := &p.Projection
		in := randCones(rng, n, d)
		relAxis, relAperture := edgeAxes(rng, n*d), uniform(rng, n*d, -math.Pi, math.Pi)
		ca, ch := uniform(rng, n*d, -1, 1), uniform(rng, n*d, -1, 1)
		out := NewCones[float64](n, d)
		var st *MLPState[float64]
		f := func() float64 {
			st = ConeProjectForward(ref, w, out, in, relAxis, relAperture)
			return dot(ca, out.Axis) + dot(ch, out.Half)
		}
		f()
		gw := &NewParams[float64](cfg).Projection
		dIn := NewCones[float64](n, d)
		dAx, dAp := make([]float64, n*d), make([]float64, n*d)
		ConeProjectBackward(ref, w, gw, st, dIn, dAx, dAp, Cones[float64]{Axis: ca, Half: ch, N: n, Dim: d}, out)
		return f, []fdParam{
			{"in.axis", in.Axis, dIn.Axis}, {"in.half", in.Half, dIn.Half},
			{"relAxis", relAxis, dAx}, {"relAperture", relAperture, dAp},
			{"W1", w.W1, gw.W1}, {"B1", w.B1, gw.B1}, {"W2", w.W2, gw.W2},
			{"B2", w.B2, gw.B2}, {"W3", w.W3, gw.W3}, {"B3", w.B3, gw.B3},
		}
	})
}

func TestNegateGrad(t *testing.T) {
	gradTest(t, 4, func(rng *rand.Rand) (func() float64, []fdParam) {
		const n, d = 3, 4
		in := randCones(rng, n, d)
		ca, ch := uniform(rng, n*d, -1, 1), uniform(rng, n*d, -1, 1)
		out := NewCones[float64](n, d)
		f := func() float64 { NegateForward(out, in); return dot(ca, out.Axis) + dot(ch, out.Half) }
		f()
		dIn := NewCones[float64](n, d)
		NegateBackward(dIn, Cones[float64]{Axis: ca, Half: ch, N: n, Dim: d})
		return f, []fdParam{{"in.axis", in.Axis, dIn.Axis}, {"in.half", in.Half, dIn.Half}}
	})
}

func TestIntersectGrad(t *testing.T) {
	for _, tc := range []struct {
		name     string
		branches int
		dropout  bool
	}{{"2", 2, false}, {"3", 3, false}, {"2/dropout", 2, true}, {"3/dropout", 3, true}} {
		t.Run(tc.name, func(t *testing.T) {
			gradTest(t, 5, func(rng *rand.Rand) (func() float64, []fdParam) {
				const n, d = 3, 4
				w, gw := intersectionWeights(d, rng.Uint64())
				in := make([]Cones[float64], tc.branches)
				for j := range in {
					in[j] = randCones(rng, n, d)
				}
				var mask []float64
				if tc.dropout {
					const drop = 0.3
					mask = make([]float64, tc.branches*n*d)
					for i := range mask {
						if rng.Float64() >= drop {
							mask[i] = 1 / (1 - drop)
						}
					}
				}
				ca, ch := uniform(rng, n*d, -1, 1), uniform(rng, n*d, -1, 1)
				out := NewCones[float64](n, d)
				var st *IntersectState[float64]
				f := func() float64 {
					st = IntersectForward(ref, w, out, in, mask)
					return dot(ca, out.Axis) + dot(ch, out.Half)
				}
				f()
				dIn := make([]Cones[float64], len(in))
				for j := range dIn {
					dIn[j] = NewCones[float64](n, d)
				}
				IntersectBackward(ref, w, gw, st, dIn, Cones[float64]{Axis: ca, Half: ch, N: n, Dim: d}, in)
				ps := []fdParam{
					{"W1", w.W1, gw.W1}, {"B1", w.B1, gw.B1}, {"W2", w.W2, gw.W2}, {"B2", w.B2, gw.B2},
					{"W3", w.W3, gw.W3}, {"B3", w.B3, gw.B3}, {"W4", w.W4, gw.W4}, {"B4", w.B4, gw.B4},
				}
				for j := range in {
					ps = append(ps, fdParam{"in.axis", in[j].Axis, dIn[j].Axis}, fdParam{"in.half", in[j].Half, dIn[j].Half})
				}
				return f, ps
			})
		})
	}
}

// intersectionWeights returns the intersection's weights initialised from seed, and a
// zero set of the same shapes for their gradients.
func intersectionWeights(d int, seed uint64) (w, zero *IntersectionWeights[float64]) {
	cfg := Config{Variant: RoConE, NumEntities: 1, NumRelations: 1, Dim: d}
	p := NewParams[float64](cfg)
	p.Init(cfg, seed)
	return &p.Intersection, &NewParams[float64](cfg).Intersection
}

// TestIntersectAttentionExtremeLogits: the attention's softmax over branches neither
// overflows nor underflows, whatever the size of its logits. A bias common to all
// branches leaves the axis unchanged (softmax is shift-invariant) even at ±1000, where
// exp alone is 0 or ∞; logits scaled by 1e4 (branches thousands apart, a hard attention)
// still give an axis in [−π, π]. The attention never touches the apertures.
func TestIntersectAttentionExtremeLogits(t *testing.T) {
	const n, d, nb = 3, 4, 3
	rng := rand.New(rand.NewPCG(10, 0))
	w, _ := intersectionWeights(d, rng.Uint64())
	in := make([]Cones[float64], nb)
	for j := range in {
		in[j] = randCones(rng, n, d)
	}
	run := func(w *IntersectionWeights[float64]) Cones[float64] {
		out := NewCones[float64](n, d)
		IntersectForward(ref, w, out, in, nil)
		return out
	}
	base := run(w)
	for _, tc := range []struct {
		name     string
		edit     func(w *IntersectionWeights[float64])
		sameAxis bool
	}{
		{"bias +1000", func(w *IntersectionWeights[float64]) { addConst(w.B2, 1000) }, true},
		{"bias −1000", func(w *IntersectionWeights[float64]) { addConst(w.B2, -1000) }, true},
		{"scaled 1e4", func(w *IntersectionWeights[float64]) {
			for _, t := range [][]float64{w.W2, w.B2} {
				for i := range t {
					t[i] *= 1e4
				}
			}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			we := *w
			we.W2, we.B2 = slices.Clone(w.W2), slices.Clone(w.B2)
			tc.edit(&we)
			out := run(&we)
			for i, a := range out.Axis {
				if !(math.Abs(a) <= math.Pi) || tc.sameAxis && !(angleDiff(a, base.Axis[i]) <= 1e-9) || out.Half[i] != base.Half[i] {
					t.Errorf("element %d: axis %v half %v, want axis in [−π, π] (%v unless scaled), half %v",
						i, a, out.Half[i], base.Axis[i], base.Half[i])
				}
			}
		})
	}
}

func addConst(x []float64, c float64) {
	for i := range x {
		x[i] += c
	}
}

// TestConeAxisCut: the intersection's arctangent with ConE's quadrant fix agrees with
// atan2 in every quadrant and on the cut's lower side, and puts the cut itself (x < 0,
// y = ±0) at +π, −0 included, where atan2 gives −π for y = −0.
func TestConeAxisCut(t *testing.T) {
	for _, c := range []struct{ x, y, want float64 }{
		{1, 1, math.Pi / 4},
		{-1, 1, 3 * math.Pi / 4},
		{-1, -1, -3 * math.Pi / 4},
		{1, -1, -math.Pi / 4},
		{-1, 0, math.Pi},
		{-1, math.Copysign(0, -1), math.Pi},
		{-1, -1e-9, -math.Pi + 1e-9},
		{-1, 1e-9, math.Pi - 1e-9},
	} {
		if got := coneAxis(c.x, c.y); !(math.Abs(got-c.want) <= 1e-15) {
			t.Errorf("coneAxis(%v, %v) = %v, want %v", c.x, c.y, got, c.want)
		}
	}
}

// TestDistanceGrad checks the distance kernel (docs/model.md §7) as the model uses it: with a
// candidate list that repeats rows (scatter-add), and with cand = nil (all rows).
func TestDistanceGrad(t *testing.T) {
	for _, shared := range []bool{false, true} {
		name := "candidates"
		if shared {
			name = "all-rows"
		}
		t.Run(name, func(t *testing.T) {
			gradTest(t, 6, func(rng *rand.Rand) (func() float64, []fdParam) {
				const q, k, d, rows, lambda = 3, 4, 5, 6, 0.3
				cones := randCones(rng, q, d)
				ent := edgeAxes(rng, rows*d)
				var cand []int32
				cands := rows
				if !shared {
					cands = k
					cand = make([]int32, q*k)
					for i := range cand {
						cand[i] = int32(rng.IntN(rows))
					}
				}
				// Put some entities just inside and just outside the cone's boundaries.
				for qi := 0; qi < q; qi++ {
					for j := 0; j < d; j++ {
						if rng.IntN(3) == 0 {
							side := 1.0
							if rng.IntN(2) == 0 {
								side = -1
							}
							r := rng.IntN(rows)
							ent[r*d+j] = wrap(cones.Axis[qi*d+j] + side*cones.Half[qi*d+j] + (rng.Float64()-0.5)*0.1)
						}
					}
				}
				c := uniform(rng, q*cands, -1, 1)
				dist := make([]float64, q*cands)
				f := func() float64 {
					ref.DistanceForward(dist, cones.Axis, cones.Half, ent, cand, q, cands, d, lambda)
					return dot(c, dist)
				}
				f()
				dA, dH, dE := make([]float64, q*d), make([]float64, q*d), make([]float64, rows*d)
				ref.DistanceBackward(dA, dH, dE, c, cones.Axis, cones.Half, ent, cand, q, cands, d, lambda)
				return f, []fdParam{{"axis", cones.Axis, dA}, {"half", cones.Half, dH}, {"ent", ent, dE}}
			})
		})
	}
}

func TestLogitGrad(t *testing.T) {
	gradTest(t, 7, func(rng *rand.Rand) (func() float64, []fdParam) {
		dist := uniform(rng, 10, 0, 5)
		mod := []float64{0.3}
		c := uniform(rng, 10, -1, 1)
		logit := make([]float64, 10)
		f := func() float64 { LogitForward(logit, dist, 2.5, mod[0]); return dot(c, logit) }
		f()
		dDist := make([]float64, 10)
		dm := LogitBackward(dDist, c, dist, mod[0])
		return f, []fdParam{{"dist", dist, dDist}, {"modulus", mod, []float64{dm}}}
	})
}

func TestUnionMaxGrad(t *testing.T) {
	gradTest(t, 8, func(rng *rand.Rand) (func() float64, []fdParam) {
		const n, nb = 8, 3
		branches := make([][]float64, nb)
		for b := range branches {
			branches[b] = uniform(rng, n, -2, 2)
		}
		c := uniform(rng, n, -1, 1)
		score, arg := make([]float64, n), make([]int32, n)
		f := func() float64 { UnionMaxForward(score, arg, branches); return dot(c, score) }
		f()
		var ps []fdParam
		dB := make([][]float64, nb)
		for b := range dB {
			dB[b] = make([]float64, n)
		}
		UnionMaxBackward(dB, c, arg)
		for b := range branches {
			ps = append(ps, fdParam{"branch", branches[b], dB[b]})
		}
		return f, ps
	})
}

// TestUnionMaxNaN: a NaN in any branch makes the union's score NaN, its arg the first NaN
// branch, whichever branch it is in and whatever the others hold; elsewhere the max.
func TestUnionMaxNaN(t *testing.T) {
	nan := float32(math.NaN())
	branches := [][]float32{
		{nan, 1, 1, 5, 2, nan},
		{3, nan, 1, 4, 2, 0},
		{2, 9, nan, 6, 2, nan},
	}
	wantScore := []float32{nan, nan, nan, 6, 2, nan}
	wantArg := []int32{0, 1, 2, 2, 0, 0}
	score, arg := make([]float32, 6), make([]int32, 6)
	UnionMaxForward(score, arg, branches)
	for i := range score {
		if math.Float32bits(score[i]) != math.Float32bits(wantScore[i]) && !(score[i] != score[i] && wantScore[i] != wantScore[i]) || arg[i] != wantArg[i] {
			t.Errorf("element %d: score %v arg %d, want %v arg %d", i, score[i], arg[i], wantScore[i], wantArg[i])
		}
	}
}

// TestIntersectMinNaN: a NaN in any branch's dropped-out aperture makes the intersection's
// minimum NaN, its index the first NaN branch (PyTorch's min(dim)), whether the NaN is in
// the aperture, comes from dropping an infinite one (0·∞) or is in the mask; the backward
// pass sends the gradient to that branch. The weights are zero but for B3 = −1, so that
// the gate is σ(0) everywhere, its gradient stops at the DeepSets' ReLU, and dIn.Half is
// the minimum's route alone.
func TestIntersectMinNaN(t *testing.T) {
	nan := float32(math.NaN())
	branches := [][]float32{
		{nan, 1, 1, 5, 2, nan},
		{3, nan, 1, 4, 2, 0},
		{2, 0.5, nan, 6, 2, nan},
	}
	wantMin := []float32{nan, nan, nan, 4, 2, nan}
	wantArg := []int32{0, 1, 2, 1, 0, 0}
	const d = 6
	ref32 := compute.Reference[float32]{}
	zeros := func() *IntersectionWeights[float32] {
		return &IntersectionWeights[float32]{
			W1: make([]float32, d*2*d), B1: make([]float32, d), W2: make([]float32, d*d), B2: make([]float32, d),
			W3: make([]float32, d*2*d), B3: make([]float32, d), W4: make([]float32, d*d), B4: make([]float32, d),
		}
	}
	w := zeros()
	for i := range w.B3 {
		w.B3[i] = -1
	}
	for _, form := range []string{"nan", "dropped inf", "nan mask"} {
		t.Run(form, func(t *testing.T) {
			in := make([]Cones[float32], len(branches))
			var mask []float32
			if form != "nan" {
				mask = make([]float32, len(branches)*d)
			}
			for j, b := range branches {
				in[j] = NewCones[float32](1, d)
				for i, h := range b {
					in[j].Axis[i] = 0.1 * float32(i+j)
					in[j].Half[i] = h
					switch {
					case mask == nil:
					case h == h:
						mask[j*d+i] = 1
					case form == "dropped inf":
						in[j].Half[i], mask[j*d+i] = float32(math.Inf(1)), 0
					default:
						in[j].Half[i], mask[j*d+i] = 7, nan
					}
				}
			}
			out := NewCones[float32](1, d)
			st := IntersectForward(ref32, w, out, in, mask)
			for i := range wantMin {
				wn := wantMin[i] != wantMin[i]
				if gn := st.hmin[i] != st.hmin[i]; gn != wn || !wn && st.hmin[i] != wantMin[i] || st.argmin[i] != wantArg[i] {
					t.Errorf("element %d: min %v arg %d, want %v arg %d", i, st.hmin[i], st.argmin[i], wantMin[i], wantArg[i])
				}
			}
			if form != "nan mask" { // elsewhere the inputs' NaN or ∞ reaches the features too
				return
			}
			dIn := make([]Cones[float32], len(in))
			for j := range dIn {
				dIn[j] = NewCones[float32](1, d)
			}
			dOut := NewCones[float32](1, d)
			for i := range dOut.Half {
				dOut.Half[i] = 1
			}
			IntersectBackward(ref32, w, zeros(), st, dIn, dOut, in)
			for i := range wantMin {
				wn := wantMin[i] != wantMin[i]
				if (out.Half[i] != out.Half[i]) != wn {
					t.Errorf("out.Half[%d] = %v, want a NaN: %v", i, out.Half[i], wn)
				}
				for j := range dIn {
					g := dIn[j].Half[i]
					want := float32(0)
					if int32(j) == wantArg[i] {
						want = 0.5 * mask[j*d+i] // dOut·gate·mask, gate = σ(0)
					}
					if g != want && !(g != g && want != want) {
						t.Errorf("dIn[%d].Half[%d] = %v, want %v", j, i, g, want)
					}
				}
			}
		})
	}
}

func TestLossGrad(t *testing.T) {
	gradTest(t, 9, func(rng *rand.Rand) (func() float64, []fdParam) {
		const q, k = 5, 3
		pos, neg := uniform(rng, q, -6, 6), uniform(rng, q*k, -6, 6)
		w := uniform(rng, q, 0.1, 0.5)
		f := func() float64 { l, _, _ := LossForward(pos, neg, w, k); return l }
		dPos, dNeg := make([]float64, q), make([]float64, q*k)
		LossBackward(dPos, dNeg, pos, neg, w, k, 1)
		return f, []fdParam{{"pos", pos, dPos}, {"neg", neg, dNeg}}
	})
}

// TestLossValue checks the loss against a direct transcription of docs/model.md §9.
func TestLossValue(t *testing.T) {
	pos := []float64{1.5, -0.5}
	neg := []float64{0.2, -1, 3, 0}
	w := []float64{0.25, 0.5}
	ls := func(x float64) float64 { return math.Log(1 / (1 + math.Exp(-x))) }
	wantPos := -(0.25*ls(1.5) + 0.5*ls(-0.5)) / 0.75
	wantNeg := -(0.25*(ls(-0.2)+ls(1))/2 + 0.5*(ls(-3)+ls(0))/2) / 0.75
	l, lp, ln := LossForward(pos, neg, w, 2)
	if !(math.Abs(lp-wantPos) <= 1e-12) || !(math.Abs(ln-wantNeg) <= 1e-12) || !(math.Abs(l-(wantPos+wantNeg)/2) <= 1e-12) {
		t.Fatalf("loss = %g (%g, %g), want %g (%g, %g)", l, lp, ln, (wantPos+wantNeg)/2, wantPos, wantNeg)
	}
}

// TestRotateShiftClip: the S.E. projection clips a half-aperture to [ε, 1−ε]·π before its
// logit, so that a closed or full cone stays finite and shifts off its bound.
func TestRotateShiftClip(t *testing.T) {
	for _, c := range []struct{ half, shift float64 }{{pi, -5}, {0, 5}, {pi, 0}, {0, 0}} {
		in := NewCones[float64](1, 1)
		out := NewCones[float64](1, 1)
		in.Half[0] = c.half
		RotateForward(ProjectShift, out, in, []float64{0}, []float64{0}, []float64{c.shift})
		p := min(max(c.half/pi, seClip), 1-seClip)
		want := pi / (1 + math.Exp(-(math.Log(p/(1-p)) + c.shift)))
		if !(math.Abs(out.Half[0]-want) <= 1e-12) || out.Half[0] <= 0 || out.Half[0] >= pi {
			t.Errorf("half %v shift %v: %v, want %v, inside (0, π)", c.half, c.shift, out.Half[0], want)
		}
	}
}
