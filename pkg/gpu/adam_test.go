package gpu

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/rocone/rocone/pkg/adam"
)

// stepPerTensor is Step through the per-tensor launches (the reference).
func (a *Adam) stepPerTensor(zeroGrad bool) error {
	a.step++
	return a.stepEach(a.programs(zeroGrad))
}

// testAdamMulti: the one-launch Step against the per-tensor adam_step launches, bit for
// bit (parameters, moments, gradients), over tensors of odd sizes (one empty; sizes that
// leave a partial last quad) with lags that change as tensors start (train.Adam.Lag), a
// Reset, a SetState, and more lag classes than one launch takes; through each of its
// kernels: adam_multi_vec4 (16-byte aligned tensors), adam_multi (forced, and chosen for
// tensors that are not 16-byte aligned). The angles- paths make three tensors angle
// tensors (AngleGrad): the one launch maps their angles' gradients itself, the per-tensor
// path with AngleBackward into the raw gradient first, bit for bit the same; and each
// that stepped ends with its Theta the AngleForward of its new values, bit for bit.
func testAdamMulti(h *harness) {
	for _, path := range []string{"vec4", "scalar", "misaligned", "angles-vec4", "angles-scalar", "angles-misaligned"} {
		h.t.Run(path, func(t *testing.T) {
			hh := *h
			hh.t = t
			adamMulti(&hh, path)
		})
	}
}

func adamMulti(h *harness, path string) {
	sizes := []int{301, 7, 0, 1, 1029, 64, 3, 5, 2, 9, 4}
	kernel, angled := strings.CutPrefix(path, "angles-")
	isAngle := func(i int) bool { return angled && i%4 == 0 } // tensors 0, 4 and 8
	const R = 0.75
	// Misaligned: each tensor a view one float into an allocation, the sines and cosines
	// two floats in (8-byte aligned, as their float2s need; not 16).
	off := 0
	if kernel == "misaligned" {
		off = 1
	}
	buf := func(n int) *F32 { return h.zerosAt(off, n) }
	pairs := func(n int) *F32 { return h.zerosAt(2*off, n) }
	P1, G1, A1, P2, G2, A2 := adamTwins(h, sizes, buf, pairs, isAngle)
	cfg := adam.Default(3e-2)
	one, err := NewAdamAngles(h.d, cfg, P1, G1, A1, R)
	h.ok(err)
	defer one.Free()
	one.scalarOnly = kernel == "scalar"
	if vec4 := one.all.offq != nil; vec4 != (kernel != "misaligned") {
		h.t.Fatalf("%s tensors: the 16-byte path is %v", path, vec4)
	}
	ref, err := NewAdamAngles(h.d, cfg, P2, G2, A2, R)
	h.ok(err)
	defer ref.Free()
	if angled {
		if err := one.Step(false); err == nil {
			h.t.Fatalf("Step(false) with angle tensors: no error")
		}
	}

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
			}{{"p", h.down(P2[i]), h.down(P1[i])}, {"g", h.down(G2[i]), h.down(G1[i])}, {"m", m2, m1}, {"v", v2, v1},
				{"dTheta", h.down(A2[i].DTheta), h.down(A1[i].DTheta)}, {"theta", h.down(A2[i].Theta), h.down(A1[i].Theta)},
				{"sinCos", h.down(A2[i].SinCos), h.down(A1[i].SinCos)}} {
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
			m, v := randomMoments(h, sizes)
			h.ok(one.SetState(20, m, v))
			h.ok(ref.SetState(20, m, v))
		}
		lag := lags(one.Steps()+1, step == 10 || step == 11)
		if step == 12 {
			lag = nil
		}
		h.ok(one.SetLags(lag))
		h.ok(ref.SetLags(lag))
		if oneLaunch, many := one.classKey != nil, step == 10 || step == 11; oneLaunch == many {
			h.t.Fatalf("step %d: one launch %v with %d lag classes", step, oneLaunch, len(one.classKey))
		}
		for i := range sizes {
			giveGradient(h, i, G1, A1, G2, A2)
		}
		zero := step%3 != 0 || angled
		h.ok(one.Step(zero))
		h.ok(ref.stepPerTensor(zero))
		check(step)
		for i, n := range sizes {
			if !isAngle(i) || (lag != nil && one.Steps() <= int(lag[i])) {
				continue
			}
			want := h.zeros(n)
			h.ok(h.d.AngleForward(want, P1[i], R))
			if w, g := h.down(want), h.down(A1[i].Theta); !bitsEqual(w, g) {
				h.t.Fatalf("step %d, tensor %d: Step's angles are not AngleForward's of the new values", step, i)
			}
			if A1[i].SinCos != nil {
				sc := h.zeros(2 * n)
				h.ok(h.d.EntHalfSinCos(sc, want))
				if w, g := h.down(sc), h.down(A1[i].SinCos); !bitsEqual(w, g) {
					h.t.Fatalf("step %d, tensor %d: Step's sines and cosines are not EntHalfSinCos's of the new angles", step, i)
				}
			}
		}
	}
}

func bitsEqual(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// testAdamDefer: deferred steps (SetDeferrable, SetIdle) against dense steps with zero
// gradients, bit for bit once flushed, through each path (adam_multi_vec4, adam_multi,
// stepEach): an angle tensor and plain ones step as usual, three deferrable ones sit out
// idle steps (at most two waiting: a third idle step in a row takes all three), through a
// Flush, a Moments (which flushes), a Reset (a learning-rate decay: the waiting steps
// keep their rate) and a SetState; and an angle tensor cannot be deferred.
func testAdamDefer(h *harness) {
	for _, path := range []string{"vec4", "scalar", "each"} {
		h.t.Run(path, func(t *testing.T) {
			hh := *h
			hh.t = t
			adamDefer(&hh, path)
		})
	}
}

func adamDefer(h *harness, path string) {
	sizes := []int{301, 7, 1029, 64, 5, 9}
	deferrable := []int{1, 2, 3}
	const R = 0.75
	P1, G1, A1, P2, G2, A2 := adamTwins(h, sizes, h.zeros, h.zeros, func(i int) bool { return i == 0 })
	cfg := adam.Default(3e-2)
	def, err := NewAdamAngles(h.d, cfg, P1, G1, A1, R)
	h.ok(err)
	defer def.Free()
	dense, err := NewAdamAngles(h.d, cfg, P2, G2, A2, R)
	h.ok(err)
	defer dense.Free()
	if err := def.SetDeferrable([]int{0}); err == nil {
		h.t.Fatalf("SetDeferrable of an angle tensor: no error")
	}
	h.ok(def.SetDeferrable(deferrable))
	for _, a := range []*Adam{def, dense} {
		a.scalarOnly, a.perTensor = path == "scalar", path == "each"
	}
	isDef := func(i int) bool { return slices.Contains(deferrable, i) }
	same := func(step int, what string, i int, want, got []float32) {
		h.t.Helper()
		for k := range want {
			if math.Float32bits(want[k]) != math.Float32bits(got[k]) {
				h.t.Fatalf("step %d, tensor %d: %s[%d] = %g, dense %g", step, i, what, k, got[k], want[k])
			}
		}
	}
	checkAll := func(step int) {
		h.t.Helper()
		for i, n := range sizes {
			m1, v1, m2, v2 := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
			h.ok(def.Moments(i, m1, v1)) // flushes
			h.ok(dense.Moments(i, m2, v2))
			same(step, "p", i, h.down(P2[i]), h.down(P1[i]))
			same(step, "m", i, m2, m1)
			same(step, "v", i, v2, v1)
		}
	}
	idle := []bool{false, true, true, false, true, false, true, true, true, true, false, true, true, false, true, true, false}
	waiting, refused, flushed, moved := 0, false, false, false
	for step, id := range idle {
		switch step {
		case 7: // a learning-rate decay: a brand-new optimiser; the waiting steps keep their rate
			for _, a := range []*Adam{def, dense} {
				a.Config.LR /= 5
				h.ok(a.Reset())
			}
			waiting = 0
		case 12: // a resumed optimiser
			m, v := randomMoments(h, sizes)
			h.ok(def.SetState(30, m, v))
			h.ok(dense.SetState(30, m, v))
			waiting = 0
		}
		if !id && waiting > 0 {
			// A backward pass is to write the deferrable tensors' gradients, where the first
			// waiting step's still is: Step refuses it, a Flush first takes it (as gpumodel
			// flushes before a forward pass with intersections).
			if !refused {
				before := def.Steps()
				if err := def.Step(true); err == nil || def.Steps() != before || def.Pending(deferrable[0]) != waiting {
					h.t.Fatalf("step %d: Step with a gradient waiting: err %v, %d steps (was %d), %d waiting", step, err, def.Steps(), before, def.Pending(deferrable[0]))
				}
				refused = true
			}
			h.ok(def.Flush())
			waiting = 0
		}
		for i := range sizes {
			if !(id && isDef(i)) { // else no backward pass wrote it: zero, or a waiting step's
				giveGradient(h, i, G1, A1, G2, A2)
			}
		}
		def.SetIdle(id)
		h.ok(def.Step(true))
		h.ok(dense.Step(true))
		switch {
		case !id: // the gradient's step waits, the gradient in the buffer
			waiting = 1
		case waiting < adamSteps-1:
			waiting++
		default: // taken with the two that waited
			waiting = 0
		}
		for _, i := range deferrable {
			if got := def.Pending(i); got != waiting {
				h.t.Fatalf("step %d: tensor %d has %d steps waiting, want %d", step, i, got, waiting)
			}
		}
		for i := range sizes { // the others step as usual
			if !isDef(i) {
				same(step, "p", i, h.down(P2[i]), h.down(P1[i]))
			}
		}
		if waiting > 0 && !moved {
			if slices.Equal(h.down(P1[1]), h.down(P2[1])) {
				h.t.Fatalf("step %d: a deferred tensor moved", step)
			}
			moved = true
		}
		if waiting == adamSteps-1 && path == "vec4" && !flushed { // one launch over the deferrable tensors
			if n := launches(h, func() { h.ok(def.Flush()) }); len(n) != 1 || n["adam_multi_vec4"] != 1 {
				h.t.Fatalf("Flush launched %v, want adam_multi_vec4 once", n)
			}
			waiting, flushed = 0, true
		}
		if step == 2 || step == 5 || step == 9 {
			checkAll(step)
			waiting = 0
		}
	}
	if !refused || !moved || (path == "vec4" && !flushed) {
		h.t.Fatalf("the sequence never refused (%v), moved (%v) or flushed (%v)", refused, moved, flushed)
	}
	h.ok(def.Flush())
	checkAll(len(idle))
}

// adamTwins allocates two like sets of an optimiser's tensors of the given sizes (their
// buffers by buf, an angle tensor's sines and cosines by pairs; tensor i an angle tensor
// where isAngle(i)), the parameters random and the same in both, the rest zero.
func adamTwins(h *harness, sizes []int, buf, pairs func(int) *F32, isAngle func(int) bool) (P1, G1 []*F32, A1 []AngleGrad, P2, G2 []*F32, A2 []AngleGrad) {
	mk := func() (P, G []*F32, A []AngleGrad) {
		for i, n := range sizes {
			P, G = append(P, buf(n)), append(G, buf(n))
			var ag AngleGrad
			if isAngle(i) {
				ag = AngleGrad{DTheta: buf(n), Theta: buf(n)}
				if i%8 == 0 { // the entity table's case: its sines and cosines too
					ag.SinCos = pairs(2 * n)
				}
			}
			A = append(A, ag)
		}
		return P, G, A
	}
	P1, G1, A1 = mk()
	P2, G2, A2 = mk()
	for i, n := range sizes {
		p := h.uniform(n, -1, 1)
		h.ok(P1[i].Upload(p))
		h.ok(P2[i].Upload(p))
	}
	return P1, G1, A1, P2, G2, A2
}

// randomMoments are an optimiser's moments for tensors of the given sizes, as a resumed
// run's.
func randomMoments(h *harness, sizes []int) (m, v [][]float32) {
	m, v = make([][]float32, len(sizes)), make([][]float32, len(sizes))
	for i, n := range sizes {
		m[i], v[i] = h.uniform(n, -0.1, 0.1), h.uniform(n, 0, 0.01)
	}
	return m, v
}

// giveGradient uploads a random gradient of tensor i into both twins (adamTwins): an angle
// tensor's as the gradient of its angles, with random forward angles.
func giveGradient(h *harness, i int, G1 []*F32, A1 []AngleGrad, G2 []*F32, A2 []AngleGrad) {
	n := G1[i].Len()
	g := h.uniform(n, -1, 1)
	if A1[i].DTheta != nil {
		th := h.uniform(n, -3, 3)
		for _, b := range []*F32{A1[i].DTheta, A2[i].DTheta} {
			h.ok(b.Upload(g))
		}
		for _, b := range []*F32{A1[i].Theta, A2[i].Theta} {
			h.ok(b.Upload(th))
		}
		return
	}
	h.ok(G1[i].Upload(g))
	h.ok(G2[i].Upload(g))
}

// adamReference is the textbook Adam (Kingma & Ba, as torch.optim.Adam computes it), in
// float64: m̂ = m/(1−β1^t), v̂ = v/(1−β2^t), p −= lr·m̂/(√v̂ + ε).
func adamReference(p, g, m, v []float64, t int, c adam.Config) {
	for i := range p {
		m[i] = c.Beta1*m[i] + (1-c.Beta1)*g[i]
		v[i] = c.Beta2*v[i] + (1-c.Beta2)*g[i]*g[i]
		mh := m[i] / (1 - math.Pow(c.Beta1, float64(t)))
		vh := v[i] / (1 - math.Pow(c.Beta2, float64(t)))
		p[i] -= c.LR * mh / (math.Sqrt(vh) + c.Eps)
	}
}

func testAdam(h *harness) {
	const n, steps = 1234, 4
	cfg := adam.Default(1e-2)
	p32 := h.uniform(n, -1, 1)
	P, G, M, V := h.up(p32), h.zeros(n), h.zeros(n), h.zeros(n)
	p, m, v := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range p {
		p[i] = float64(p32[i])
	}
	prev := clone(p32)
	for t := 1; t <= steps; t++ {
		g32 := h.uniform(n, -1, 1)
		for i := 0; i < n; i += 7 {
			g32[i] = 0 // dense: rows with zero gradient still move once m ≠ 0
		}
		g := make([]float64, n)
		for i := range g {
			g[i] = float64(g32[i])
		}
		h.ok(G.Upload(g32))
		adamReference(p, g, m, v, t, cfg)
		h.ok(h.d.AdamStep(P, G, M, V, t, cfg, t%2 == 0))
		got := h.down(P)
		// Compare the updates (the parameters move by about lr per step).
		wantD, gotD := make([]float32, n), make([]float32, n)
		for i := range p {
			wantD[i] = float32(p[i] - float64(prev[i]))
			gotD[i] = got[i] - prev[i]
		}
		compare(h.t, fmt.Sprint("update ", t), wantD, gotD)
		for i := range p {
			p[i] = float64(got[i]) // follow the device, so errors do not compound
		}
		prev = got
		gm, gv := h.down(M), h.down(V)
		m32, v32 := make([]float32, n), make([]float32, n)
		for i := range m {
			m32[i], v32[i] = float32(m[i]), float32(v[i])
		}
		compare(h.t, fmt.Sprint("m ", t), m32, gm)
		compare(h.t, fmt.Sprint("v ", t), v32, gv)
		gg := h.down(G)
		for i, x := range gg {
			if want := map[bool]float32{true: 0, false: g32[i]}[t%2 == 0]; x != want {
				h.t.Fatalf("step %d: g[%d] = %g after the step, want %g", t, i, x, want)
			}
		}
	}
}

// testAdamOptimiser: two tensors over steps, a learning-rate decay with Reset, against
// the float64 reference.
func testAdamOptimiser(h *harness) {
	sizes := []int{301, 7}
	var P, G []*F32
	ps, ms, vs := make([][]float64, 2), make([][]float64, 2), make([][]float64, 2)
	for i, n := range sizes {
		p := h.uniform(n, -1, 1)
		P, G = append(P, h.up(p)), append(G, h.zeros(n))
		ps[i], ms[i], vs[i] = make([]float64, n), make([]float64, n), make([]float64, n)
		for j, x := range p {
			ps[i][j] = float64(x)
		}
	}
	cfg := adam.Default(5e-2)
	opt, err := NewAdam(h.d, cfg, P, G)
	h.ok(err)
	defer opt.Free()
	t := 0
	for step := 1; step <= 5; step++ {
		if step == 4 { // decay: lr/5 and a brand-new optimiser
			opt.Config.LR /= 5
			h.ok(opt.Reset())
			for i := range ms {
				clear(ms[i])
				clear(vs[i])
			}
			t = 0
		}
		t++
		for i, n := range sizes {
			g := h.uniform(n, -1, 1)
			h.ok(G[i].Upload(g))
			g64 := make([]float64, n)
			for j, x := range g {
				g64[j] = float64(x)
			}
			adamReference(ps[i], g64, ms[i], vs[i], t, opt.Config)
		}
		h.ok(opt.Step(true))
		if opt.Steps() != t {
			h.t.Fatalf("Steps() = %d, want %d", opt.Steps(), t)
		}
		for i := range sizes {
			got := h.down(P[i])
			want := make([]float32, len(got))
			for j := range want {
				want[j] = float32(ps[i][j])
			}
			compare(h.t, fmt.Sprint("step ", step, " param ", i), want, got)
			for j := range ps[i] {
				ps[i][j] = float64(got[j])
			}
		}
	}
}
