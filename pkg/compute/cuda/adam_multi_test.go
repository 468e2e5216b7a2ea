package cuda

import "math"

// stepPerTensor is Step through the per-tensor launches (the reference).
func (a *Adam) stepPerTensor(zeroGrad bool) error {
	a.step++
	return a.stepEach(zeroGrad)
}

// testAdamMulti: the one-launch Step against the per-tensor adam_step launches, bit for
// bit (parameters, moments, gradients), over tensors of odd sizes (one empty) with lags
// that change as tensors start (train.Adam.Lag), a Reset, a SetState, and more lag
// classes than one launch takes.
func testAdamMulti(h *harness) {
	sizes := []int{301, 7, 0, 1, 1029, 64, 3, 5, 2, 9, 4}
	mk := func() (P, G []*F32) {
		for _, n := range sizes {
			P, G = append(P, h.zeros(n)), append(G, h.zeros(n))
		}
		return P, G
	}
	P1, G1 := mk()
	P2, G2 := mk()
	for i, n := range sizes {
		p := h.uniform(n, -1, 1)
		h.ok(P1[i].Upload(p))
		h.ok(P2[i].Upload(p))
	}
	cfg := DefaultAdam(3e-2)
	one, err := NewAdam(h.d, cfg, P1, G1)
	h.ok(err)
	defer one.Free()
	ref, err := NewAdam(h.d, cfg, P2, G2)
	h.ok(err)
	defer ref.Free()

	// started[i]: the step at which tensor i is first reached (0: from the start).
	started := []int{0, 2, 0, 3, 0, 5, 0, 2, 1, 0, 7}
	lags := func(step int, manyClasses bool) []int64 {
		l := make([]int64, len(sizes))
		for i, s := range started {
			if step <= s {
				l[i] = int64(step) // not started: sits out every step so far, the coming one too
			} else {
				l[i] = int64(s)
			}
			if manyClasses {
				l[i] = int64(i) // 11 distinct lags: more classes than one launch takes
			}
		}
		return l
	}
	check := func(step int) {
		h.t.Helper()
		for i := range sizes {
			m1, v1 := make([]float32, sizes[i]), make([]float32, sizes[i])
			m2, v2 := make([]float32, sizes[i]), make([]float32, sizes[i])
			h.ok(one.Moments(i, m1, v1))
			h.ok(ref.Moments(i, m2, v2))
			for _, c := range []struct {
				what      string
				want, got []float32
			}{{"p", h.down(P2[i]), h.down(P1[i])}, {"g", h.down(G2[i]), h.down(G1[i])}, {"m", m2, m1}, {"v", v2, v1}} {
				for k := range c.want {
					if math.Float32bits(c.want[k]) != math.Float32bits(c.got[k]) {
						h.t.Fatalf("step %d, tensor %d: %s[%d] = %g, per-tensor launches %g", step, i, c.what, k, c.got[k], c.want[k])
					}
				}
			}
		}
	}
	for step := 1; step <= 12; step++ {
		switch step {
		case 6: // a learning-rate decay: a brand-new optimiser
			for _, a := range []*Adam{one, ref} {
				a.Config.LR /= 5
				h.ok(a.Reset())
			}
		case 9: // a resumed optimiser
			m, v := make([][]float32, len(sizes)), make([][]float32, len(sizes))
			for i, n := range sizes {
				m[i], v[i] = h.uniform(n, -0.1, 0.1), h.uniform(n, 0, 0.01)
			}
			h.ok(one.SetState(20, m, v))
			h.ok(ref.SetState(20, m, v))
		}
		lag := lags(one.Steps()+1, step == 10 || step == 11)
		if step == 12 {
			lag = nil
		}
		h.ok(one.SetLags(lag))
		h.ok(ref.SetLags(lag))
		if oneLaunch, many := one.classLag != nil, step == 10 || step == 11; oneLaunch == many {
			h.t.Fatalf("step %d: one launch %v with %d lag classes", step, oneLaunch, len(one.classLag))
		}
		for i, n := range sizes {
			g := h.uniform(n, -1, 1)
			h.ok(G1[i].Upload(g))
			h.ok(G2[i].Upload(g))
		}
		zero := step%3 != 0
		h.ok(one.Step(zero))
		h.ok(ref.stepPerTensor(zero))
		check(step)
	}
}
