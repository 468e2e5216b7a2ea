package gpu

import (
	"fmt"
	"github.com/rocone/rocone/pkg/adam"
	"math"
	"slices"
)

// AdamStep applies Adam step number step (1, 2, …; since the optimiser was created) to
// the parameters p with gradients g and moments m, v, all of one length: dense, every
// element moves. With zeroGrad the gradients are cleared after use.
func (d *Device) AdamStep(p, g, m, v *F32, step int, cfg adam.Config, zeroGrad bool) error {
	n := p.Len()
	c := check{op: "AdamStep"}
	c.f("g", g, n)
	c.f("m", m, n)
	c.f("v", v, n)
	if c.err == nil && step < 1 {
		c.err = fmt.Errorf("cuda: AdamStep: step %d, must be ≥ 1", step)
	}
	if c.err != nil {
		return c.err
	}
	stepSize, bc2Sqrt := adamScalars(step, cfg)
	return d.each("adam_step", n, adamWork(n, zeroGrad), ptr(p), ptr(g), ptr(m), ptr(v), i32(n), f32(float32(cfg.Beta2)),
		f32(float32(1-cfg.Beta1)), f32(float32(1-cfg.Beta2)), f32(float32(cfg.Eps)), f32(stepSize),
		f32(bc2Sqrt), boolArg(zeroGrad))
}

// Adam is a dense Adam optimiser over device-resident parameters (docs/training.md §1): each
// parameter tensor P has its gradient G (same length) and the optimiser's moments, all on
// the device; Step updates every element of every tensor, with no host round trip, in
// one launch (kernel adam_multi).
//
// For that one launch the tensors' buffers are described once, at NewAdam, by device
// tables: their addresses (tab) and element offsets (off). Their own step counts differ
// by their lags (SetLags), which change at every update while a tensor has not started;
// so rather than per-tensor step counts (an upload per update) the device holds each
// tensor's lag class (cls: tensors with equal lags share a class), uploaded only when the
// grouping changes, and each launch passes every class's step size and bias correction as
// arguments. More classes than adamClasses, or more elements than an int counts, take the
// per-tensor path (stepEach), with the same results bit for bit.
type Adam struct {
	Config adam.Config
	dev    *Device
	step   int
	slots  []adamSlot
	lags   []int64 // per slot: steps it sat out (see SetLags); nil: none

	tab, off, cls *I32 // [8·T] addresses (p, g, m, v; low, high halves), [T+1] offsets, [T] lag classes
	total         int  // elements of all tensors (off[T])
	// The 16-byte path (adam_multi_vec4), when every p, g, m, v is 16-byte aligned:
	// [T+1] offsets in quads and [T] element counts; nil otherwise.
	offq, cnt  *I32
	totalq     int
	scalarOnly bool    // the tests' and the bench's switch to adam_multi
	angleR     float32 // the angle tensors' range R (AngleGrad)
	clsHost    []int32 // the classes on the device
	classLag   []int64 // per class: its lag; nil: more classes than one launch takes
}

// adamClasses is ADAM_CLASSES in kernels/adam.cu: the lag classes one launch handles.
const adamClasses = 8

// adamPtrs is ADAM_PTRS: the buffers per tensor in the one-launch kernels' table.
const adamPtrs = 5

// launchPtrs are the slot's buffers as the one-launch kernels see them: p, g, m, v and
// theta, where an angle tensor's g is the gradient of its angles.
func (s adamSlot) launchPtrs() [adamPtrs]*F32 {
	if s.dTheta != nil {
		return [adamPtrs]*F32{s.p, s.dTheta, s.m, s.v, s.theta}
	}
	return [adamPtrs]*F32{s.p, s.g, s.m, s.v, nil}
}

// adamSlot is a parameter tensor p with its gradient g and moments m, v; an angle tensor
// (AngleGrad) has the gradient of its angles dTheta and the angles theta besides.
type adamSlot struct{ p, g, m, v, dTheta, theta *F32 }

// AngleGrad makes a parameter tensor an angle tensor of the optimiser: its values x are
// used as angles θ = π·tanh(x/R) (the entity and relation tables), the backward pass
// accumulates the gradient of θ into DTheta, and Step maps it to x's (the arithmetic of
// AngleBackward) as it reads it, then clears DTheta: one pass over the table instead of
// AngleBackward's and Adam's. Theta is the forward's θ of the same update; Step
// overwrites it with the angles of the values it has just updated (AngleForward's bits),
// so that the next update need not map the table again. The tensor's own gradient buffer
// is then only Step's scratch on its per-tensor path.
type AngleGrad struct {
	DTheta, Theta *F32
}

// NewAdam allocates zero moments for the parameters params[i] with gradients grads[i].
func NewAdam(d *Device, cfg adam.Config, params, grads []*F32) (*Adam, error) {
	return NewAdamAngles(d, cfg, params, grads, nil, 0)
}

// NewAdamAngles is NewAdam with angle tensors: angles[i], where its buffers are not nil,
// makes parameter i one (AngleGrad), all with the angle map's range R.
func NewAdamAngles(d *Device, cfg adam.Config, params, grads []*F32, angles []AngleGrad, R float32) (*Adam, error) {
	if len(params) != len(grads) || (angles != nil && len(angles) != len(params)) {
		return nil, fmt.Errorf("cuda: NewAdam: %d parameters, %d gradients, %d angle gradients", len(params), len(grads), len(angles))
	}
	a := &Adam{Config: cfg, dev: d, angleR: R}
	for i, p := range params {
		if grads[i].Len() != p.Len() {
			return nil, fmt.Errorf("cuda: NewAdam: parameter %d has %d elements, its gradient %d", i, p.Len(), grads[i].Len())
		}
		var ag AngleGrad
		if angles != nil {
			ag = angles[i]
		}
		if (ag.DTheta == nil) != (ag.Theta == nil) ||
			(ag.DTheta != nil && (ag.DTheta.Len() != p.Len() || ag.Theta.Len() != p.Len())) {
			return nil, fmt.Errorf("cuda: NewAdam: parameter %d has %d elements, its angle gradient %d and angles %d",
				i, p.Len(), ag.DTheta.Len(), ag.Theta.Len())
		}
		m, err := Alloc[float32](d, p.Len())
		if err != nil {
			a.Free()
			return nil, err
		}
		v, err := Alloc[float32](d, p.Len())
		if err != nil {
			m.Free()
			a.Free()
			return nil, err
		}
		a.slots = append(a.slots, adamSlot{p: p, g: grads[i], m: m, v: v, dTheta: ag.DTheta, theta: ag.Theta})
	}
	if err := a.upload(); err != nil {
		a.Free()
		return nil, err
	}
	return a, nil
}

// upload builds the device tables of the one-launch Step (the lags' classes all 0: no
// lag).
func (a *Adam) upload() (err error) {
	T := len(a.slots)
	tab, off := make([]int32, 0, 2*adamPtrs*T), make([]int32, 0, T+1)
	total := 0
	for _, s := range a.slots {
		off = append(off, int32(total))
		total += s.p.Len()
		if total > math.MaxInt32 {
			return nil // too many elements for one launch's int indices: Step goes per tensor
		}
		for _, b := range s.launchPtrs() {
			x := b.Ptr() // 0 for nil
			tab = append(tab, int32(uint32(x)), int32(uint32(x>>32)))
		}
	}
	off = append(off, int32(total))
	if T == 0 {
		return nil
	}
	// Quads: each tensor's elements in fours, its last quad partial.
	aligned := true
	offq, cnt := make([]int32, 0, T+1), make([]int32, 0, T)
	totalq := 0
	for _, s := range a.slots {
		offq, cnt = append(offq, int32(totalq)), append(cnt, int32(s.p.Len()))
		totalq += (s.p.Len() + 3) / 4
		for _, b := range s.launchPtrs() {
			aligned = aligned && b.Ptr()%16 == 0
		}
	}
	offq = append(offq, int32(totalq))
	if aligned {
		if a.offq, err = FromHost(a.dev, offq); err != nil {
			return err
		}
		if a.cnt, err = FromHost(a.dev, cnt); err != nil {
			return err
		}
		a.totalq = totalq
	}
	if a.tab, err = FromHost(a.dev, tab); err != nil {
		return err
	}
	if a.off, err = FromHost(a.dev, off); err != nil {
		return err
	}
	if a.cls, err = Alloc[int32](a.dev, T); err != nil {
		return err
	}
	a.total, a.clsHost, a.classLag = total, make([]int32, T), []int64{0}
	return nil
}

// Steps is the number of steps taken since creation or the last Reset.
func (a *Adam) Steps() int { return a.step }

// SetLags sets, per parameter, how many of the optimiser's steps it sat out because no
// backward pass had reached it yet (train.Adam.Lag, torch.optim.Adam's skipping of
// parameters whose .grad is None), counting the coming step: parameter i takes step
// number Steps()+1−lags[i] at the next Step, and none when that is not positive. Nil
// means no lag.
func (a *Adam) SetLags(lags []int64) error {
	if lags != nil && len(lags) != len(a.slots) {
		return fmt.Errorf("cuda: Adam.SetLags: %d lags for %d parameters", len(lags), len(a.slots))
	}
	a.lags = append(a.lags[:0], lags...)
	if lags == nil {
		a.lags = nil
	}
	if a.cls == nil {
		return nil // Step goes per tensor anyway
	}
	// Group the tensors by lag, the classes numbered in order of first appearance.
	cls := make([]int32, len(a.slots))
	var classLag []int64
	for i := range cls {
		var lag int64
		if lags != nil {
			lag = lags[i]
		}
		c := slices.Index(classLag, lag)
		if c < 0 {
			c = len(classLag)
			classLag = append(classLag, lag)
		}
		cls[i] = int32(c)
	}
	if len(classLag) > adamClasses {
		a.classLag = nil // per tensor until the lags regroup
		return nil
	}
	if !slices.Equal(cls, a.clsHost) {
		if err := a.cls.Upload(cls); err != nil {
			a.classLag, a.clsHost = nil, nil // the device's classes are unknown: upload next time
			return err
		}
		a.clsHost = cls
	}
	a.classLag = classLag
	return nil
}

// Step applies one Adam step to every parameter, in one launch (see Adam); with zeroGrad
// the gradients are cleared afterwards, ready for the next accumulation. A parameter whose own step count (see
// SetLags) is not positive is left as it is (its gradient is zero: no backward pass
// reached it). An angle tensor's Theta then holds the angles of its values
// (AngleForward), updated or not.
func (a *Adam) Step(zeroGrad bool) error {
	if !zeroGrad && a.hasAngles() {
		return fmt.Errorf("cuda: Adam.Step: an optimiser with angle tensors clears their gradients (zeroGrad)")
	}
	a.step++
	if a.cls == nil || a.classLag == nil {
		return a.stepEach(zeroGrad)
	}
	cfg := a.Config
	kernel, n := "adam_multi", a.total
	args := []arg{ptr(a.tab), ptr(a.off), ptr(a.cls), i32(len(a.slots)), i32(a.total)}
	if a.offq != nil && !a.scalarOnly {
		kernel, n = "adam_multi_vec4", a.totalq
		args = []arg{ptr(a.tab), ptr(a.offq), ptr(a.cnt), ptr(a.cls), i32(len(a.slots)), i32(a.totalq)}
	}
	args = append(args, f32(float32(cfg.Beta2)), f32(float32(1-cfg.Beta1)), f32(float32(1-cfg.Beta2)), f32(float32(cfg.Eps)))
	active := 0
	for c := 0; c < adamClasses; c++ {
		var stepSize, bc2Sqrt float32
		if c < len(a.classLag) {
			if t := a.step - int(a.classLag[c]); t > 0 {
				stepSize, bc2Sqrt = adamScalars(t, cfg)
				active |= 1 << c
			}
		}
		args = append(args, f32(stepSize), f32(bc2Sqrt))
	}
	args = append(args, i32(active), boolArg(zeroGrad), f32(a.angleR))
	// The tables, then per tensor Adam's work (an angle tensor's also reads θ, maps the
	// gradient, angle_grad's 6 FLOPs, and writes the new θ, angle_of's ~20, tanhf
	// counted as 18), or only the gradient's clear when its class takes no step.
	T := len(a.slots)
	w := Work{Bytes: words(2*adamPtrs*T, T+1, T)}
	if kernel == "adam_multi_vec4" {
		w.Bytes += words(T)
	}
	for i, s := range a.slots {
		switch {
		case active>>a.clsHost[i]&1 == 1:
			w = w.Add(adamWork(s.p.Len(), zeroGrad))
			if s.dTheta != nil {
				w = w.Add(Work{Bytes: words(2 * s.p.Len()), FLOPs: flops(s.p.Len(), 6+20)})
			}
		case zeroGrad:
			w.Bytes += words(s.p.Len())
		}
	}
	return a.dev.each(kernel, n, w, args...)
}

// stepEach is Step as one adam_step launch per tensor (and a clear of the gradient of a
// tensor that takes no step): the path for more lag classes than one launch handles, and
// the reference the one-launch Step is tested against.
func (a *Adam) stepEach(zeroGrad bool) error {
	for i, s := range a.slots {
		step := a.step
		if a.lags != nil {
			step -= int(a.lags[i])
		}
		if s.dTheta != nil {
			// The raw gradient from the angles' (AngleBackward into the cleared g), then
			// the angles' cleared: what the one-launch kernels do in one pass.
			if step > 0 {
				if err := a.dev.AngleBackward(s.g, s.dTheta, s.theta, a.angleR); err != nil {
					return fmt.Errorf("parameter %d: %w", i, err)
				}
			}
			if err := s.dTheta.Zero(); err != nil {
				return fmt.Errorf("parameter %d: %w", i, err)
			}
		}
		if step <= 0 {
			if zeroGrad {
				if err := s.g.Zero(); err != nil {
					return fmt.Errorf("parameter %d: %w", i, err)
				}
			}
			continue
		}
		if err := a.dev.AdamStep(s.p, s.g, s.m, s.v, step, a.Config, zeroGrad); err != nil {
			return fmt.Errorf("parameter %d: %w", i, err)
		}
		if s.theta != nil {
			if err := a.dev.AngleForward(s.theta, s.p, a.angleR); err != nil {
				return fmt.Errorf("parameter %d: %w", i, err)
			}
		}
	}
	return nil
}

func (a *Adam) hasAngles() bool {
	for _, s := range a.slots {
		if s.dTheta != nil {
			return true
		}
	}
	return false
}

// Reset zeroes the moments and the step count: the "brand-new Adam optimiser" ConE's
// schedule creates at each learning-rate decay (docs/training.md §1). Set Config.LR as well.
func (a *Adam) Reset() error {
	a.step = 0
	for _, s := range a.slots {
		if err := s.m.Zero(); err != nil {
			return err
		}
		if err := s.v.Zero(); err != nil {
			return err
		}
	}
	return nil
}

// Free releases the moments and the tables (not the parameters or gradients).
func (a *Adam) Free() error {
	first := FreeAll(a.tab, a.off, a.cls, a.offq, a.cnt)
	a.tab, a.off, a.cls, a.offq, a.cnt, a.classLag = nil, nil, nil, nil, nil, nil
	for _, s := range a.slots {
		if err := FreeAll(s.m, s.v); err != nil && first == nil {
			first = err
		}
	}
	a.slots = nil
	return first
}

// adamScalars are Adam's step size lr/(1 − β1^t) and bias correction sqrt(1 − β2^t) for
// step t: package adam's, the host's own.
func adamScalars(t int, cfg adam.Config) (stepSize, bc2Sqrt float32) {
	f := cfg.At(int64(t))
	return f.StepSize, f.BC2Sqrt
}

// Moments downloads the first and second moments of parameter i.
func (a *Adam) Moments(i int, m, v []float32) error {
	if i < 0 || i >= len(a.slots) {
		return fmt.Errorf("cuda: Adam has %d parameters, asked for %d", len(a.slots), i)
	}
	if err := a.slots[i].m.Download(m); err != nil {
		return err
	}
	return a.slots[i].v.Download(v)
}

// SetState sets the step count and uploads the moments of every parameter (m[i], v[i]
// each as long as parameter i): a resumed optimiser.
func (a *Adam) SetState(step int, m, v [][]float32) error {
	if len(m) != len(a.slots) || len(v) != len(a.slots) {
		return fmt.Errorf("cuda: Adam has %d parameters; state for %d and %d given", len(a.slots), len(m), len(v))
	}
	for i, s := range a.slots {
		if len(m[i]) != s.p.Len() || len(v[i]) != s.p.Len() {
			return fmt.Errorf("cuda: Adam parameter %d has %d elements; moments of %d and %d given", i, s.p.Len(), len(m[i]), len(v[i]))
		}
		if err := s.m.Upload(m[i]); err != nil {
			return err
		}
		if err := s.v.Upload(v[i]); err != nil {
			return err
		}
	}
	a.step = step
	return nil
}

// adamWork is Adam's work on n elements: the parameter and both moments read and
// written, the gradient read (and cleared with zeroGrad); 13 FLOPs each (the two moment
// updates, a square root, the bias correction, the division and the step).
func adamWork(n int, zeroGrad bool) Work {
	w := Work{Bytes: words(7 * n), FLOPs: flops(n, 13)}
	if zeroGrad {
		w.Bytes += words(n)
	}
	return w
}
